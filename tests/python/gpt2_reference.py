"""GPT-2's forward pass in NumPy (float64), the independent reference the
tests compare compiled graphs with. Parameter names and layouts are Hugging
Face's GPT2LMHeadModel with torch.nn.Linear weights (out, in); the LM head
is tied to ``wte``."""

import math

import numpy as np


def _layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)  # biased, as PyTorch
    return (x - mean) / np.sqrt(var + 1e-5) * weight + bias


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                  (x + 0.044715 * x ** 3)))


def _linear(x, state, name):
    # zero-compile's c_attn stacks q, k and v, (3, E, E) and (3, E): the
    # same elements as one (3E, E) Linear.
    weight = state[name + ".weight"]
    weight = weight.reshape(-1, weight.shape[-1])
    return x @ weight.T + state[name + ".bias"].reshape(-1)


def numpy_logits(state, heads, tokens):
    """Logits (batch, t, vocab) for `tokens` (batch, t), t <= the trained
    sequence length, in float64."""
    state = {k: np.asarray(v, np.float64) for k, v in state.items()}
    batch, t = tokens.shape
    embed = state["wte.weight"].shape[1]
    head_dim = embed // heads
    x = state["wte.weight"][tokens] + state["wpe.weight"][:t]
    layers = len({k.split(".")[1] for k in state if k.startswith("h.")})
    mask = np.triu(np.full((t, t), -np.inf), 1)
    for i in range(layers):
        p = f"h.{i}."
        h = _layer_norm(x, state[p + "ln_1.weight"], state[p + "ln_1.bias"])
        q, k, v = np.split(_linear(h, state, p + "attn.c_attn"), 3, axis=-1)
        q, k, v = (a.reshape(batch, t, heads, head_dim).transpose(0, 2, 1, 3)
                   for a in (q, k, v))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + mask
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        y = (scores / scores.sum(-1, keepdims=True)) @ v
        y = y.transpose(0, 2, 1, 3).reshape(batch, t, embed)
        x = x + _linear(y, state, p + "attn.c_proj")
        h = _layer_norm(x, state[p + "ln_2.weight"], state[p + "ln_2.bias"])
        h = _gelu(_linear(h, state, p + "mlp.c_fc"))
        x = x + _linear(h, state, p + "mlp.c_proj")
    x = _layer_norm(x, state["ln_f.weight"], state["ln_f.bias"])
    return x @ state["wte.weight"].T


def numpy_loss(state, heads, tokens, labels):
    """Mean cross-entropy over every token, in float64."""
    logits = numpy_logits(state, heads, tokens)
    logits = logits - logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[..., None], axis=-1)
    return float(-picked.mean())
