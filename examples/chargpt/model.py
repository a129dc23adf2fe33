"""GPT-2 for the character-level demo, written with the zerosbp API.

Parameter names and layouts are Hugging Face's GPT2LMHeadModel with
torch.nn.Linear weights (out, in); the LM head is tied to ``wte``.
"""

import numpy as np

from zerosbp import nn


class Block(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed)
        self.attn = nn.CausalSelfAttention(embed, heads)
        self.ln_2 = nn.LayerNorm(embed)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(embed, 4 * embed)
        self.mlp.act = nn.GELU()
        self.mlp.c_proj = nn.Linear(4 * embed, embed)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp.c_proj(self.mlp.act(self.mlp.c_fc(self.ln_2(x))))


class Gpt2(nn.Module):
    def __init__(self, vocab, seq, embed, heads, layers, seed=0):
        super().__init__()
        self.heads = heads
        self.wte = nn.Embedding(vocab, embed)
        self.wpe = nn.Embedding(seq, embed)
        self.h = nn.ModuleList(Block(embed, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(embed)
        # GPT-2's initialization of the embeddings.
        rng = np.random.default_rng(seed)
        self.wte.weight.copy_(rng.normal(0, 0.02, self.wte.weight.shape))
        self.wpe.weight.copy_(rng.normal(0, 0.01, self.wpe.weight.shape))

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe.weight
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.T
