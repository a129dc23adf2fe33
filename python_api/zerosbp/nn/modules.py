"""The layers: PyTorch's names, parameter layouts and default inits."""

import math

import numpy as np

from .. import _random
from . import functional as F
from .module import Module
from .parameter import Parameter


def _uniform(shape, bound):
    return _random.generator().uniform(-bound, bound, size=shape)


class Linear(Module):
    """torch.nn.Linear: weight (out, in), bias (out), both
    U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features)
        self.weight = Parameter(_uniform((out_features, in_features), bound))
        self.bias = Parameter(_uniform((out_features,), bound)) if bias \
            else None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, "
                f"out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class ReLU(Module):
    def forward(self, x):
        return F.relu(x)


class GELU(Module):
    """GELU, tanh form (the default here; torch's default erf form is not
    an nn op)."""

    def __init__(self, approximate="tanh"):
        super().__init__()
        if approximate != "tanh":
            F.gelu(None, approximate)
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class LayerNorm(Module):
    """torch.nn.LayerNorm over the last axis: weight ones, bias zeros."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        if len(normalized_shape) != 1 or not elementwise_affine:
            raise NotImplementedError(
                "LayerNorm: one normalized axis with an affine transform")
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.weight = Parameter(np.ones(self.normalized_shape))
        self.bias = Parameter(np.zeros(self.normalized_shape))

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias,
                            self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}"


class Embedding(Module):
    """torch.nn.Embedding: weight (num, dim) ~ N(0, 1)."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(_random.generator().standard_normal(
            (num_embeddings, embedding_dim)))

    def forward(self, ids):
        return F.embedding(ids, self.weight)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}"


class Dropout(Module):
    """torch.nn.Dropout: active in train() mode (the default), the identity
    after eval(); see functional.dropout for the mask."""

    def __init__(self, p=0.5):
        super().__init__()
        F._check_dropout_p(p)
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class Sequential(Module):
    def __init__(self, *modules):
        super().__init__()
        for index, module in enumerate(modules):
            self.add_module(str(index), module)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def __len__(self):
        return len(self._modules)


class ModuleList(Module):
    def __init__(self, modules=()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def __iter__(self):
        return iter(self._modules.values())

    def __len__(self):
        return len(self._modules)


class CrossEntropyLoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction != "mean":
            F.cross_entropy(None, None, reduction)
        self.reduction = reduction

    def forward(self, logits, labels):
        return F.cross_entropy(logits, labels, self.reduction)


class CausalSelfAttention(Module):
    """GPT-2's attention: ``c_attn`` (E -> 3E) makes q, k, v; heads attend
    causally with scores scaled by 1/sqrt(head_dim); ``c_proj`` (E -> E).
    Input and output (batch, seq, E)."""

    def __init__(self, embed_dim, num_heads, bias=True):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(
                f"embed_dim {embed_dim} is not divisible by num_heads "
                f"{num_heads}")
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.c_attn = Linear(embed_dim, 3 * embed_dim, bias)
        self.c_proj = Linear(embed_dim, embed_dim, bias)

    def forward(self, x):
        batch, seq, embed = x.shape
        heads, head_dim = self.num_heads, embed // self.num_heads
        rows = x.reshape(batch * seq, embed)
        q, k, v = self.c_attn(rows).split(embed, dim=1)

        def to_heads(t):
            return t.reshape(batch, seq, heads, head_dim).permute(0, 2, 1, 3)

        y = F.scaled_dot_product_attention(to_heads(q), to_heads(k),
                                           to_heads(v), is_causal=True)
        y = y.permute(0, 2, 1, 3).reshape(batch * seq, embed)
        return self.c_proj(y).reshape(batch, seq, embed)
