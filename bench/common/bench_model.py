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

# The Python API benchmarks (bench/eval, bench/remat): every tensor
# partitioned, both thresholds 0, `overlap_comm` on, 500K-element buckets.
PYTHON_PIPELINE = ("overlap-comm=true stage3-param-persistence-threshold=0 "
                   "reduce-bucket-size=500000 allgather-bucket-size=500000 "
                   "stage3-prefetch-bucket-size=500000")


def configure_zero(graph, stage):
    """ZeRO `stage` (0: plain data parallelism) with PYTHON_PIPELINE."""
    graph.config.enable_zero(stage > 0, stage=max(stage, 1),
                             shard_min_size=1)
    graph.config.set_pipeline_options(PYTHON_PIPELINE)


def train_graph(model, vocab, stage, ranks, lr=1e-3):
    """An nn.Graph training the GPT-2 `model` (logits over `vocab`) with
    Adam at ZeRO `stage` on `ranks` in-process CPU ranks."""
    import zerosbp as zs
    from zerosbp import nn

    optimizer = zs.optim.Adam(model.parameters(), lr=lr)

    class Train(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model, self.loss_fn = model, nn.CrossEntropyLoss()
            self.add_optimizer(optimizer)
            configure_zero(self, stage)

        def build(self, tokens, labels):
            loss = self.loss_fn(self.model(tokens).reshape(-1, vocab),
                                labels.reshape(-1))
            loss.backward()
            return loss

    return Train().to(zs.placement("cpu", ranks=range(ranks)))


def compile_plans(zero_compile, worlds, stages, pipeline, work):
    """This GPT-2 compiled for each N in `worlds` and stage in `stages` with
    `pipeline`, into `work`: {(N, stage): plan path}."""
    import os
    import bench_report

    plans = {}
    for world in worlds:
        for stage in stages:
            plan = os.path.join(work, "n%d_s%d.zplan" % (world, stage))
            bench_report.run([zero_compile] + GPT2_FLAGS + [
                "--world=%d" % world, "--stage=%d" % stage,
                "--pipeline=" + pipeline, "--report=none", "-o", plan])
            plans[(world, stage)] = plan
    return plans
