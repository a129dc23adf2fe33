"""torch.nn.functional's names for the graph's ops."""

import math

from .. import _random, _trace
from .._tensor import Tensor, matmul
from .parameter import Parameter


def _tensor(x):
    return x._traced() if isinstance(x, Parameter) else x


def linear(x, weight, bias=None):
    """``x W^T + b`` over the last axis (weight is (out, in))."""
    x = _tensor(x)
    shape = x.shape
    rows = x if len(shape) == 2 else x.reshape(-1, shape[-1])
    y = Tensor._apply("matmul", [rows, weight], transpose_rhs=True)
    if bias is not None:
        y = Tensor._apply("bias_add", [y, bias])
    return y if len(shape) == 2 else y.reshape(*shape[:-1], y.shape[-1])


def relu(x):
    return Tensor._apply("relu", [x])


def gelu(x, approximate="tanh"):
    """GELU, tanh form (GPT-2's): 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))."""
    if approximate != "tanh":
        raise NotImplementedError(
            "gelu: only approximate='tanh' is an nn op (GPT-2's form); the "
            "erf form is not available")
    return Tensor._apply("gelu", [x])


def tanh(x):
    return Tensor._apply("tanh", [x])


def softmax(x, dim=-1, causal=False):
    """Softmax over `dim`; with `causal`, entries above the diagonal of the
    last two axes are masked out first (attention scores)."""
    return Tensor._apply("softmax", [x], axis=dim, causal=causal)


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None):
    """torch.nn.functional.scaled_dot_product_attention without a mask
    tensor or dropout: ``softmax(q k^T * scale) v`` over the last two axes,
    with ``is_causal`` masking key j > i for query i and ``scale`` defaulting
    to 1/sqrt(head_dim). The graph holds the scores, softmax and values ops,
    which zero-fuse-attention makes one flash-attention op (no seq x seq
    tensor in the plan) unless the config sets fuse_attention off."""
    if attn_mask is not None:
        raise NotImplementedError(
            "scaled_dot_product_attention: attn_mask is not supported; use "
            "is_causal=True for a causal mask")
    if dropout_p:
        raise NotImplementedError(
            "scaled_dot_product_attention: dropout_p must be 0 (attention "
            "dropout is not supported)")
    q, k, v = _tensor(query), _tensor(key), _tensor(value)
    for name, t in (("query", q), ("key", k), ("value", v)):
        if len(t.shape) < 3:
            raise ValueError(
                f"scaled_dot_product_attention: {name} must have at least 3 "
                f"dims (batch..., seq, dim), got shape {tuple(t.shape)}")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    scores = Tensor._apply("batch_matmul", [q, k], transpose_rhs=True)
    return softmax(scores * float(scale), dim=-1, causal=is_causal) @ v


def layer_norm(x, normalized_shape, weight, bias, eps=1e-5):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    if tuple(normalized_shape) != tuple(_tensor(x).shape[-1:]):
        raise ValueError(
            f"layer_norm normalizes the last axis only: normalized_shape "
            f"{tuple(normalized_shape)} does not match input shape "
            f"{_tensor(x).shape}")
    return Tensor._apply("layer_norm", [x, weight, bias], scalar=float(eps))


def embedding(ids, weight):
    return Tensor._apply("embedding", [weight, ids])


def cross_entropy(logits, labels, reduction="mean"):
    """Mean cross-entropy over every sample (token) of the global batch;
    logits (..., classes), labels (...)."""
    if reduction != "mean":
        raise NotImplementedError("cross_entropy: only reduction='mean'")
    logits = _tensor(logits)
    labels = _tensor(labels)
    if isinstance(labels, Tensor) and labels.dtype not in ("i64", "i32"):
        what = f"graph input '{labels._input_name}'" \
            if labels._input_name else "a tensor"
        raise TypeError(
            f"cross_entropy: labels must be integer class indices, but "
            f"{what} is {labels.dtype}: pass the labels as an integer array")
    if logits.ndim != 2:
        logits = logits.reshape(-1, logits.shape[-1])
    if labels.ndim != 1:
        labels = labels.reshape(-1)
    return Tensor._apply("cross_entropy", [logits, labels])


def _check_dropout_p(p):
    if not 0 <= p < 1:
        raise ValueError(f"dropout probability has to lie in [0, 1), got {p}")


def dropout(x, p=0.5, training=True):
    """Zeroes each element with probability p and scales the rest by
    1/(1-p), as torch's dropout. The mask is a function of the seed last
    given to zs.manual_seed, the step, the op's place in the trace and the
    element's index in the global tensor, so it is the same at every ZeRO
    stage and rank count (docs/compiler.md, "Dropout"). With p = 0 or
    training=False it is the identity and adds no op."""
    _check_dropout_p(p)
    if p == 0 or not training:
        return x
    trace = _trace.current()
    seed = _random.initial_seed()
    return Tensor._apply("dropout", [x], scalar=float(p),
                         ints=[seed & 0xFFFFFFFF, seed >> 32,
                               trace.dropout_stream()])


__all__ = ["linear", "relu", "gelu", "tanh", "softmax", "layer_norm",
           "embedding", "cross_entropy", "dropout", "matmul"]
