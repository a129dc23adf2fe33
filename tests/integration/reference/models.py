"""Float64 NumPy reference of the models ZeroSBP trains: forward and backward.

Two models, each defined exactly as the graph builder emits it:

* the MLP of examples/mlp (Mlp.cpp, mlp.mlir):
      logits = relu(x W1^T + b1) W2^T + b2,  loss = mean cross-entropy;
* GPT-2 as examples/gpt2/Gpt2.cpp builds it (Hugging Face GPT2LMHeadModel
  names, torch.nn.Linear layouts, LM head tied to `wte.weight`).

Parameters are a dict `name -> np.ndarray` in PyTorch layout (Linear weights
are (out, in)). Every backward is written by hand; `check_reference.py`
compares it with central finite differences. Numerics follow
docs/design.md#numerics: GELU in its tanh form, LayerNorm with biased
variance and eps 1e-5, cross-entropy averaged over every sample (token) of the
global batch.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Dict, List, Optional, Tuple

import numpy as np

Params = Dict[str, np.ndarray]
Batch = Dict[str, np.ndarray]

LAYER_NORM_EPS = 1e-5
GELU_C = math.sqrt(2.0 / math.pi)


# ---------------------------------------------------------------------------
# Parameter and input specifications
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One `nn.variable`: name, shape and initializer as the graph declares it.

    `init` is one of "uniform" (U(-scale, scale)), "normal" (N(0, scale^2)),
    "ones" or "zeros", the same names as `nn.variable ... init = kind(scale)`.
    """

    name: str
    shape: Tuple[int, ...]
    init: str
    scale: float = 0.0


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One `nn.input`: name, global shape and NumPy dtype."""

    name: str
    shape: Tuple[int, ...]
    dtype: str


def linear_specs(prefix: str, in_features: int, out_features: int) -> List[ParamSpec]:
    """GraphBuilder::linear: torch.nn.Linear's U(-1/sqrt(in), 1/sqrt(in))."""
    bound = 1.0 / math.sqrt(in_features)
    return [
        ParamSpec(prefix + ".weight", (out_features, in_features), "uniform", bound),
        ParamSpec(prefix + ".bias", (out_features,), "uniform", bound),
    ]


def qkv_specs(prefix: str, e: int) -> List[ParamSpec]:
    """Gpt2Emitter::queryKeyValue: q, k and v as three (e, e) Linears, one
    (3, e, e) weight and (3, e) bias, torch.nn.Linear's init."""
    bound = 1.0 / math.sqrt(e)
    return [
        ParamSpec(prefix + ".weight", (3, e, e), "uniform", bound),
        ParamSpec(prefix + ".bias", (3, e), "uniform", bound),
    ]


def layer_norm_specs(prefix: str, dim: int) -> List[ParamSpec]:
    """GraphBuilder::layerNormLayer: weight ones, bias zeros."""
    return [
        ParamSpec(prefix + ".weight", (dim,), "ones"),
        ParamSpec(prefix + ".bias", (dim,), "zeros"),
    ]


# ---------------------------------------------------------------------------
# Shared layers: forward returns (output, cache), backward takes the cache
# ---------------------------------------------------------------------------


def linear_forward(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """y = x W^T + b with W of shape (out, in)."""
    return x @ weight.T + bias


def linear_backward(dy: np.ndarray, x: np.ndarray, weight: np.ndarray):
    """Returns (dx, dW, db) of y = x W^T + b for a 2-D x."""
    return dy @ weight, dy.T @ x, dy.sum(axis=0)


def relu_backward(dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    return dy * (x > 0)


def gelu_forward(x: np.ndarray) -> np.ndarray:
    """PyTorch's GELU(approximate='tanh')."""
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x**3)))


def gelu_backward(dy: np.ndarray, x: np.ndarray) -> np.ndarray:
    t = np.tanh(GELU_C * (x + 0.044715 * x**3))
    du_dx = GELU_C * (1.0 + 3.0 * 0.044715 * x**2)
    return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du_dx)


def layer_norm_forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray):
    """torch.nn.LayerNorm over the last axis (biased variance, eps 1e-5)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + LAYER_NORM_EPS)
    xhat = (x - mean) * rstd
    return xhat * gamma + beta, (xhat, rstd, gamma)


def layer_norm_backward(dy: np.ndarray, cache):
    """Returns (dx, dgamma, dbeta) for a 2-D input."""
    xhat, rstd, gamma = cache
    dgamma = (dy * xhat).sum(axis=0)
    dbeta = dy.sum(axis=0)
    dxhat = dy * gamma
    dx = rstd * (
        dxhat
        - dxhat.mean(axis=-1, keepdims=True)
        - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True)
    )
    return dx, dgamma, dbeta


def causal_mask(seq_len: int) -> np.ndarray:
    """True where key j may be attended by query i (j <= i)."""
    return np.tril(np.ones((seq_len, seq_len), dtype=bool))


def softmax_forward(x: np.ndarray, causal: bool = False) -> np.ndarray:
    """Softmax over the last axis; with `causal` key j > query i is excluded
    (its probability is exactly 0), as `nn.softmax {causal}`."""
    if causal:
        x = np.where(causal_mask(x.shape[-1]), x, -np.inf)
    shifted = x - x.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_backward(dy: np.ndarray, y: np.ndarray) -> np.ndarray:
    """y (dy - sum(dy y)); masked entries have y = 0 and get 0."""
    return y * (dy - (dy * y).sum(axis=-1, keepdims=True))


def cross_entropy_forward(logits: np.ndarray, labels: np.ndarray):
    """Mean softmax cross-entropy of 2-D logits over every row."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_z = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    log_probs = shifted - log_z
    rows = np.arange(logits.shape[0])
    loss = -log_probs[rows, labels].mean()
    return float(loss), np.exp(log_probs)


def cross_entropy_backward(probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """d mean-loss / d logits = (softmax - onehot) / rows."""
    dlogits = probs.copy()
    dlogits[np.arange(probs.shape[0]), labels] -= 1.0
    return dlogits / probs.shape[0]


# ---------------------------------------------------------------------------
# MLP (examples/mlp)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MlpConfig:
    batch: int = 12
    in_features: int = 16
    hidden: int = 32
    classes: int = 8


def mlp_param_specs(cfg: MlpConfig) -> List[ParamSpec]:
    """In graph order: fc1.weight, fc1.bias, fc2.weight, fc2.bias."""
    return linear_specs("fc1", cfg.in_features, cfg.hidden) + linear_specs(
        "fc2", cfg.hidden, cfg.classes
    )


def mlp_input_specs(cfg: MlpConfig) -> List[InputSpec]:
    return [
        InputSpec("x", (cfg.batch, cfg.in_features), "float32"),
        InputSpec("labels", (cfg.batch,), "int64"),
    ]


def mlp_loss_and_grads(params: Params, batch: Batch) -> Tuple[float, Params]:
    """Loss of one global batch and the gradient of every parameter."""
    x = batch["x"].astype(params["fc1.weight"].dtype)  # float32 data, upcast
    labels = batch["labels"]
    pre = linear_forward(x, params["fc1.weight"], params["fc1.bias"])
    hidden = np.maximum(pre, 0.0)
    logits = linear_forward(hidden, params["fc2.weight"], params["fc2.bias"])
    loss, probs = cross_entropy_forward(logits, labels)

    grads: Params = {}
    dlogits = cross_entropy_backward(probs, labels)
    dhidden, grads["fc2.weight"], grads["fc2.bias"] = linear_backward(
        dlogits, hidden, params["fc2.weight"]
    )
    dpre = relu_backward(dhidden, pre)
    _, grads["fc1.weight"], grads["fc1.bias"] = linear_backward(
        dpre, x, params["fc1.weight"]
    )
    return loss, grads


def mlp_loss(params: Params, batch: Batch) -> float:
    return mlp_loss_and_grads(params, batch)[0]


# ---------------------------------------------------------------------------
# GPT-2 (examples/gpt2/Gpt2.cpp)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Gpt2Config:
    """Sizes with zero-compile's flag meanings: --num-layers, --hidden-size,
    --num-attention-heads, --seq-length, --vocab-size, --batch-size."""

    num_layers: int = 2
    hidden_size: int = 32
    num_attention_heads: int = 4
    seq_length: int = 16
    vocab_size: int = 64
    batch_size: int = 12

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def rows(self) -> int:
        return self.batch_size * self.seq_length

    def validate(self) -> None:
        if min(dataclasses.astuple(self)) < 1:
            raise ValueError("GPT-2 sizes must be positive")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError("hidden size must divide by the head count")


def gpt2_param_specs(cfg: Gpt2Config) -> List[ParamSpec]:
    """In the order Gpt2.cpp creates the variables."""
    e = cfg.hidden_size
    specs = [
        ParamSpec("wte.weight", (cfg.vocab_size, e), "normal", 0.02),
        ParamSpec("wpe.weight", (cfg.seq_length, e), "normal", 0.01),
    ]
    for i in range(cfg.num_layers):
        p = "h.%d." % i
        specs += layer_norm_specs(p + "ln_1", e)
        specs += qkv_specs(p + "attn.c_attn", e)
        specs += linear_specs(p + "attn.c_proj", e, e)
        specs += layer_norm_specs(p + "ln_2", e)
        specs += linear_specs(p + "mlp.c_fc", e, 4 * e)
        specs += linear_specs(p + "mlp.c_proj", 4 * e, e)
    specs += layer_norm_specs("ln_f", e)
    return specs


def gpt2_input_specs(cfg: Gpt2Config) -> List[InputSpec]:
    shape = (cfg.batch_size, cfg.seq_length)
    return [InputSpec("tokens", shape, "int64"), InputSpec("labels", shape, "int64")]


def to_heads(x: np.ndarray, cfg: Gpt2Config) -> np.ndarray:
    """(rows, embed) -> (batch, heads, seq, head_dim): reshape then
    transpose(0, 2, 1, 3), as Gpt2Emitter::toHeads."""
    x = x.reshape(cfg.batch_size, cfg.seq_length, cfg.num_attention_heads, cfg.head_dim)
    return x.transpose(0, 2, 1, 3)


def from_heads(x: np.ndarray, cfg: Gpt2Config) -> np.ndarray:
    """Inverse of to_heads: transpose(0, 2, 1, 3) then reshape (rows, embed)."""
    return x.transpose(0, 2, 1, 3).reshape(cfg.rows, cfg.hidden_size)


# Named layers: read `<prefix>.weight` / `<prefix>.bias` from params and, going
# back, store their gradients in `grads`.


def named_linear(params: Params, prefix: str, x: np.ndarray) -> np.ndarray:
    return linear_forward(x, params[prefix + ".weight"], params[prefix + ".bias"])


def named_linear_backward(params: Params, prefix: str, dy: np.ndarray, x: np.ndarray,
                          grads: Params) -> np.ndarray:
    dx, grads[prefix + ".weight"], grads[prefix + ".bias"] = linear_backward(
        dy, x, params[prefix + ".weight"])
    return dx


def named_layer_norm(params: Params, prefix: str, x: np.ndarray):
    return layer_norm_forward(x, params[prefix + ".weight"], params[prefix + ".bias"])


def named_layer_norm_backward(prefix: str, dy: np.ndarray, cache, grads: Params) -> np.ndarray:
    dx, grads[prefix + ".weight"], grads[prefix + ".bias"] = layer_norm_backward(dy, cache)
    return dx


def attention_forward(params: Params, prefix: str, x: np.ndarray, cfg: Gpt2Config):
    """Causal multi-head self-attention of Gpt2Emitter::attention."""
    e = cfg.hidden_size
    # The (3, e, e) weight is the (3e, e) Linear of q, k and v stacked.
    qkv = linear_forward(x, params[prefix + ".c_attn.weight"].reshape(3 * e, e),
                         params[prefix + ".c_attn.bias"].reshape(3 * e))
    # nn.split along axis 1 into (embed, embed, embed): q, k, v in that order.
    q, k, v = (to_heads(qkv[:, i * e:(i + 1) * e], cfg) for i in range(3))
    scale = 1.0 / math.sqrt(cfg.head_dim)
    scores = (q @ k.transpose(0, 1, 3, 2)) * scale
    probs = softmax_forward(scores, causal=True)
    y = from_heads(probs @ v, cfg)
    out = named_linear(params, prefix + ".c_proj", y)
    return out, (x, q, k, v, probs, y, scale)


def attention_backward(params: Params, prefix: str, dout: np.ndarray, cache,
                       cfg: Gpt2Config, grads: Params) -> np.ndarray:
    x, q, k, v, probs, y, scale = cache
    dy = named_linear_backward(params, prefix + ".c_proj", dout, y, grads)
    dctx = to_heads(dy, cfg)  # d(probs @ v) in head layout
    dprobs = dctx @ v.transpose(0, 1, 3, 2)
    dv = probs.transpose(0, 1, 3, 2) @ dctx
    dscores = softmax_backward(dprobs, probs) * scale
    dq = dscores @ k
    dk = dscores.transpose(0, 1, 3, 2) @ q
    dqkv = np.concatenate([from_heads(d, cfg) for d in (dq, dk, dv)], axis=1)
    e = cfg.hidden_size
    name = prefix + ".c_attn"
    dx, dw, db = linear_backward(dqkv, x, params[name + ".weight"].reshape(3 * e, e))
    grads[name + ".weight"] = dw.reshape(3, e, e)
    grads[name + ".bias"] = db.reshape(3, e)
    return dx


def block_forward(params: Params, prefix: str, x: np.ndarray, cfg: Gpt2Config):
    """Pre-norm transformer block of Gpt2Emitter::block:
    x += attn(ln_1(x)); x += c_proj(gelu(c_fc(ln_2(x))))."""
    h1, ln1 = named_layer_norm(params, prefix + ".ln_1", x)
    attn, attn_cache = attention_forward(params, prefix + ".attn", h1, cfg)
    x = x + attn
    h2, ln2 = named_layer_norm(params, prefix + ".ln_2", x)
    fc = named_linear(params, prefix + ".mlp.c_fc", h2)
    act = gelu_forward(fc)
    mlp = named_linear(params, prefix + ".mlp.c_proj", act)
    return x + mlp, (ln1, attn_cache, ln2, h2, fc, act)


def block_backward(params: Params, prefix: str, dout: np.ndarray, cache,
                   cfg: Gpt2Config, grads: Params) -> np.ndarray:
    ln1, attn_cache, ln2, h2, fc, act = cache
    # x_out = x_mid + mlp(ln_2(x_mid))
    dact = named_linear_backward(params, prefix + ".mlp.c_proj", dout, act, grads)
    dfc = gelu_backward(dact, fc)
    dh2 = named_linear_backward(params, prefix + ".mlp.c_fc", dfc, h2, grads)
    dmid = dout + named_layer_norm_backward(prefix + ".ln_2", dh2, ln2, grads)
    # x_mid = x_in + attn(ln_1(x_in))
    dh1 = attention_backward(params, prefix + ".attn", dmid, attn_cache, cfg, grads)
    return dmid + named_layer_norm_backward(prefix + ".ln_1", dh1, ln1, grads)


def gpt2_loss_and_grad_parts(params: Params, batch: Batch, cfg: Gpt2Config):
    """Forward and backward with the two uses of `wte.weight` kept apart.

    Returns (loss, grads, dwte_embedding, dwte_head) where `grads` holds every
    parameter but `wte.weight`. The tied LM head is `logits = x wte^T` (no
    bias).
    """
    tokens = batch["tokens"]
    labels = batch["labels"].reshape(cfg.rows)
    wte, wpe = params["wte.weight"], params["wpe.weight"]

    # Embeddings: (batch, seq, embed) + (seq, embed) broadcast over batch.
    x = (wte[tokens] + wpe).reshape(cfg.rows, cfg.hidden_size)
    caches = []
    for i in range(cfg.num_layers):
        x, cache = block_forward(params, "h.%d" % i, x, cfg)
        caches.append(cache)
    xf, lnf = named_layer_norm(params, "ln_f", x)
    logits = xf @ wte.T
    loss, probs = cross_entropy_forward(logits, labels)

    grads: Params = {}
    dlogits = cross_entropy_backward(probs, labels)
    dwte_head = dlogits.T @ xf
    dxf = dlogits @ wte
    dx = named_layer_norm_backward("ln_f", dxf, lnf, grads)
    for i in reversed(range(cfg.num_layers)):
        dx = block_backward(params, "h.%d" % i, dx, caches[i], cfg, grads)
    demb = dx.reshape(cfg.batch_size, cfg.seq_length, cfg.hidden_size)
    grads["wpe.weight"] = demb.sum(axis=0)
    dwte_embedding = np.zeros_like(wte)
    np.add.at(dwte_embedding, tokens.reshape(-1), demb.reshape(cfg.rows, cfg.hidden_size))
    return loss, grads, dwte_embedding, dwte_head


def gpt2_loss_and_grads(params: Params, batch: Batch,
                        cfg: Gpt2Config) -> Tuple[float, Params]:
    """Mean next-token loss over all batch*seq tokens and every gradient;
    `wte.weight`'s is the sum of its embedding and LM-head uses."""
    loss, grads, dwte_embedding, dwte_head = gpt2_loss_and_grad_parts(params, batch, cfg)
    grads["wte.weight"] = dwte_embedding + dwte_head
    return loss, grads


def gpt2_loss(params: Params, batch: Batch, cfg: Gpt2Config) -> float:
    return gpt2_loss_and_grads(params, batch, cfg)[0]


# ---------------------------------------------------------------------------
# Loss-invariant parameter entries
# ---------------------------------------------------------------------------

_KEY_BIAS = re.compile(r"^h\.\d+\.attn\.c_attn\.bias$")


def loss_invariant_slice(name: str, shape) -> Optional[slice]:
    """The flat entries of parameter `name` the loss does not depend on.

    GPT-2's key bias, the middle row of `h.<i>.attn.c_attn.bias`, adds
    q.b_k to every score of a query row and softmax ignores a per-row shift:
    its exact gradient is zero, so in floating point it is rounding noise.
    Adam divides that noise by its own running RMS, and a float32 run may move
    these entries by up to about lr per step while the float64 reference does
    not move them. Comparisons only bound their drift.
    """
    count = int(np.prod(shape))
    if _KEY_BIAS.match(name) and count % 3 == 0:
        return slice(count // 3, 2 * count // 3)
    return None


# ---------------------------------------------------------------------------
# Model registry used by make_case.py and check_reference.py
# ---------------------------------------------------------------------------


def param_specs(model: str, cfg) -> List[ParamSpec]:
    return mlp_param_specs(cfg) if model == "mlp" else gpt2_param_specs(cfg)


def input_specs(model: str, cfg) -> List[InputSpec]:
    return mlp_input_specs(cfg) if model == "mlp" else gpt2_input_specs(cfg)


def loss_and_grads(model: str, cfg, params: Params, batch: Batch) -> Tuple[float, Params]:
    if model == "mlp":
        return mlp_loss_and_grads(params, batch)
    return gpt2_loss_and_grads(params, batch, cfg)


def init_params(specs: List[ParamSpec], rng: np.random.Generator) -> Params:
    """Draws every parameter in spec order, as float32 (what the runtime loads)."""
    params: Params = {}
    for spec in specs:
        if spec.init == "uniform":
            value = rng.uniform(-spec.scale, spec.scale, size=spec.shape)
        elif spec.init == "normal":
            value = rng.normal(0.0, spec.scale, size=spec.shape)
        elif spec.init == "ones":
            value = np.ones(spec.shape)
        elif spec.init == "zeros":
            value = np.zeros(spec.shape)
        else:
            raise ValueError("unknown initializer " + spec.init)
        params[spec.name] = value.astype(np.float32)
    return params
