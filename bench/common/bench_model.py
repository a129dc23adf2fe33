"""The GPT-2 the runtime benchmarks train: 4 layers, hidden 256, 4 heads,
sequence 128, vocabulary 8192, a global batch of 8 sequences (1,024 tokens
a step); 5,289,472 parameters, every tensor's size a multiple of 4.

Imported by bench/*/..._bench.py; not run on its own.
"""

GPT2_FLAGS = ["--num-layers=4", "--hidden-size=256",
              "--num-attention-heads=4", "--seq-length=128",
              "--vocab-size=8192", "--batch-size=8"]
GPT2_DESCRIPTION = ("GPT-2: 4 layers, hidden 256, 4 heads, sequence 128, "
                    "vocabulary 8192, global batch 8 sequences")
