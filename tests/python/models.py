"""Models written with the zerosbp Python API, shared by the tests."""

import numpy as np

import zerosbp as zs
from zerosbp import nn


class Mlp(nn.Module):
    """The OneFlow ZeRO tutorial's MLP (256 -> 128 -> 10), PyTorch names
    fc1 / fc2 as in examples/mlp/mlp.mlir."""

    def __init__(self, hidden=128):
        super().__init__()
        self.fc1 = nn.Linear(256, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class SmallMlp(nn.Module):
    """tests/integration/tensor_parallel.py's MLP: 6 -> 8 -> 4, GELU."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))

    def parallel(self, placement):
        """Megatron's layout on a [dp, tp] placement: fc1 column-parallel
        (weight and bias split on the output dim), fc2 row-parallel (weight
        split on the input dim, bias replicated)."""
        B, S = zs.sbp.broadcast, zs.sbp.split
        self.fc1.to_global(placement, sbp=[B, S(0)])
        self.fc2.weight.to_global(placement, sbp=[B, S(1)])
        return self


class TwoStageMlp(nn.Module):
    """6 -> 8 -> 8 -> 4: `first` (linear, GELU, linear) and `second`
    (linear), two pipeline stages once pipelined()."""

    def __init__(self):
        super().__init__()
        self.first = nn.Sequential(nn.Linear(6, 8), nn.GELU(),
                                   nn.Linear(8, 8))
        self.second = nn.Linear(8, 4)

    def forward(self, x):
        return self.second(self.first(x))

    def pipelined(self, first=0, second=1):
        """Marks `first` and `second` as these pipeline stages."""
        zs.pipeline_stage(self.first, first)
        zs.pipeline_stage(self.second, second)
        return self


def pipeline_graph(model, optimizer, stages=2, micro=2, world=4):
    """An nn.Graph training `model` on `world` flat ranks cut into `stages`
    pipeline stages, with `micro` micro-batches."""
    def configure(graph):
        graph.config.set_pipeline_parallel_size(stages)
        graph.config.set_gradient_accumulation_steps(micro)

    return train_graph(model, optimizer, world=world, configure=configure)


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
        h = self.mlp.act(self.mlp.c_fc(self.ln_2(x)))
        return x + self.mlp.c_proj(h)


class Gpt2(nn.Module):
    """GPT-2 with a tied embedding, PyTorch / Hugging Face names (wte, wpe,
    h.N.attn.c_attn, ..., ln_f), as examples/gpt2 builds it in C++."""

    def __init__(self, vocab, seq, embed, heads, layers):
        super().__init__()
        self.wte = nn.Embedding(vocab, embed)
        self.wpe = nn.Embedding(seq, embed)
        self.h = nn.ModuleList(Block(embed, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(embed)
        # GPT-2's initialization.
        rng = np.random.default_rng(7)
        self.wte.weight.copy_(rng.normal(0, 0.02, self.wte.weight.shape))
        self.wpe.weight.copy_(rng.normal(0, 0.01, self.wpe.weight.shape))

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe.weight
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.T


def train_graph(model, optimizer, stage=None, world=1, loss_fn=None,
                configure=None, device="cpu"):
    """An nn.Graph training `model` with `optimizer` at ZeRO `stage`
    (None: no ZeRO) on `world` ranks of `device`, every parameter
    partitioned."""
    loss_fn = loss_fn or nn.CrossEntropyLoss()

    class TrainGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)
            if stage:
                self.config.enable_zero(True, stage=stage, shard_min_size=1)
                self.config.set_pipeline_options(
                    "stage3-param-persistence-threshold=0")
            if configure:
                configure(self)

        def build(self, x, y):
            loss = loss_fn(self.model(x), y)
            loss.backward()
            return loss

    return TrainGraph().to(zs.placement(device, ranks=range(world)))


def mlp_batches(steps, batch=16, seed=3):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((batch, 256)).astype(np.float32),
             rng.integers(0, 10, batch)) for _ in range(steps)]


def small_mlp_batches(steps, batch=8, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1, 1, (batch, 6)).astype(np.float32),
             rng.integers(0, 4, batch)) for _ in range(steps)]


def gpt2_batches(steps, batch, seq, vocab, seed=5):
    rng = np.random.default_rng(seed)
    return [(rng.integers(0, vocab, (batch, seq)),
             rng.integers(0, vocab, (batch, seq))) for _ in range(steps)]
