#!/usr/bin/python3
"""Checks the float64 reference itself before it is used to judge the runtime.

1. Hand-written gradients vs central finite differences (float64) for the MLP
   and GPT-2: every entry on small configs, a random sample of entries on the
   default test sizes. Per parameter the error is
   max|fd - analytic| / max|analytic|; the check needs it below 1e-7 (it is
   typically 1e-10 to 1e-8 with a step of 1e-5).
2. GPT-2 attention vs a plain per-(batch, head, query) loop that reads q, k, v
   straight out of the c_attn output columns: catches a wrong split, head
   layout, scale or mask that the gradient check cannot see.
3. The optimizers vs an element-by-element transcription of torch.optim's
   loops.
4. Negative controls: a gradient with the tied LM-head term left out of
   `wte.weight`, a gradient off by 1e-4 relative, and an attention without
   the causal mask must all be caught; otherwise the checks themselves are
   broken and the script fails.

Prints one line per check and "reference OK" on success; exits 1 on failure.
Usage: check_reference.py [--quick]   (--quick samples entries everywhere)
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import models  # noqa: E402
import optim  # noqa: E402

GRAD_RTOL = 1e-7
FD_STEP = 1e-5


# ---------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------


def random_params(model: str, cfg, rng: np.random.Generator) -> models.Params:
    """The model's init in float64, with layer norms moved off ones/zeros so
    their gradients are exercised."""
    params = models.init_params(models.param_specs(model, cfg), rng)
    out = {}
    for spec in models.param_specs(model, cfg):
        value = params[spec.name].astype(np.float64)
        if spec.init in ("ones", "zeros"):
            value = value + rng.normal(0.0, 0.1, size=value.shape)
        if spec.name == "wte.weight":
            value = value * 10.0  # larger logits: a less flat softmax
        out[spec.name] = value
    return out


def random_batch(model: str, cfg, rng: np.random.Generator) -> models.Batch:
    if model == "mlp":
        return {
            "x": rng.normal(size=(cfg.batch, cfg.in_features)),
            "labels": rng.integers(0, cfg.classes, size=cfg.batch),
        }
    shape = (cfg.batch_size, cfg.seq_length)
    return {
        "tokens": rng.integers(0, cfg.vocab_size, size=shape),
        "labels": rng.integers(0, cfg.vocab_size, size=shape),
    }


# ---------------------------------------------------------------------------
# 1. Finite differences
# ---------------------------------------------------------------------------


def finite_difference(loss_fn, params, name, index) -> float:
    p = params[name]
    saved = p[index]
    p[index] = saved + FD_STEP
    plus = loss_fn(params)
    p[index] = saved - FD_STEP
    minus = loss_fn(params)
    p[index] = saved
    return (plus - minus) / (2.0 * FD_STEP)


def sample_indices(shape, limit, rng):
    """Every index when there are at most `limit`, else `limit` random ones."""
    size = int(np.prod(shape))
    flat = np.arange(size) if size <= limit else rng.choice(size, limit, replace=False)
    return [np.unravel_index(i, shape) for i in flat]


def gradient_errors(loss_fn, grads, params, limit, rng):
    """name -> max|fd - analytic| / max|analytic| over the sampled entries."""
    errors = {}
    for name in params:
        idx = sample_indices(params[name].shape, limit, rng)
        fd = np.array([finite_difference(loss_fn, params, name, i) for i in idx])
        an = np.array([grads[name][i] for i in idx])
        scale = max(np.abs(an).max(), np.abs(fd).max(), 1e-12)
        errors[name] = float(np.abs(fd - an).max() / scale)
    return errors


def check_gradients(model, cfg, seed, limit, grad_fn=None) -> float:
    """(worst relative error, its parameter) of the gradients `grad_fn(params,
    batch)` returns (default: the reference's) against finite differences."""
    rng = np.random.default_rng(seed)
    params = random_params(model, cfg, rng)
    batch = random_batch(model, cfg, rng)
    if grad_fn is None:
        grads = models.loss_and_grads(model, cfg, params, batch)[1]
    else:
        grads = grad_fn(params, batch)
    if sorted(grads) != sorted(params):
        raise AssertionError("gradient names %s differ from parameters" % sorted(grads))
    loss_fn = lambda p: models.loss_and_grads(model, cfg, p, batch)[0]  # noqa: E731
    errors = gradient_errors(loss_fn, grads, params, limit, rng)
    return max(errors.values()), max(errors, key=errors.get)


# ---------------------------------------------------------------------------
# 2. Attention by loops
# ---------------------------------------------------------------------------


def attention_by_loops(params, prefix, x, cfg, causal=True):
    """q, k, v of head h at token (b, t) are columns [h*D, (h+1)*D) of the
    q / k / v thirds of row b*T + t of the c_attn output."""
    e, d, t_len = cfg.hidden_size, cfg.head_dim, cfg.seq_length
    w = params[prefix + ".c_attn.weight"].reshape(3 * e, e)
    qkv = x @ w.T + params[prefix + ".c_attn.bias"].reshape(3 * e)
    y = np.zeros((cfg.rows, e))
    for b in range(cfg.batch_size):
        for h in range(cfg.num_attention_heads):
            cols = slice(h * d, (h + 1) * d)
            for i in range(t_len):
                q = qkv[b * t_len + i, 0 * e:1 * e][cols]
                keys = range(i + 1) if causal else range(t_len)
                scores = [q @ qkv[b * t_len + j, 1 * e:2 * e][cols] / math.sqrt(d) for j in keys]
                weights = np.exp(np.array(scores) - max(scores))
                weights /= weights.sum()
                for w, j in zip(weights, keys):
                    y[b * t_len + i, cols] += w * qkv[b * t_len + j, 2 * e:3 * e][cols]
    return y @ params[prefix + ".c_proj.weight"].T + params[prefix + ".c_proj.bias"]


def attention_error(cfg, seed, causal=True) -> float:
    rng = np.random.default_rng(seed)
    params = random_params("gpt2", cfg, rng)
    x = rng.normal(size=(cfg.rows, cfg.hidden_size))
    fast, _ = models.attention_forward(params, "h.0.attn", x, cfg)
    slow = attention_by_loops(params, "h.0.attn", x, cfg, causal=causal)
    return float(np.abs(fast - slow).max() / np.abs(slow).max())


# ---------------------------------------------------------------------------
# 3. Optimizers by loops
# ---------------------------------------------------------------------------


def torch_loop_step(kind, cfg, p, g, state, t):
    """One torch.optim step on a flat list of floats (single-tensor loop)."""
    for i in range(len(p)):
        grad = g[i]
        if kind == "sgd":
            p[i] = p[i] - cfg.lr * grad
            continue
        if kind == "adamw":
            p[i] = p[i] * (1.0 - cfg.lr * cfg.weight_decay)
        elif cfg.weight_decay:
            grad = grad + cfg.weight_decay * p[i]
        m, v = state[i]
        m = m * cfg.beta1 + (1.0 - cfg.beta1) * grad
        v = v * cfg.beta2 + (1.0 - cfg.beta2) * grad * grad
        state[i] = (m, v)
        step_size = cfg.lr / (1.0 - cfg.beta1**t)
        denom = math.sqrt(v) / math.sqrt(1.0 - cfg.beta2**t) + cfg.eps
        p[i] = p[i] - step_size * m / denom


def optimizer_error(kind, weight_decay) -> float:
    rng = np.random.default_rng(7)
    cfg = optim.OptimizerConfig(kind, optim.DEFAULT_LR[kind], weight_decay=weight_decay)
    params = {"w": rng.normal(size=(3, 4))}
    flat = [float(v) for v in params["w"].ravel()]
    state = [(0.0, 0.0)] * len(flat)
    opt = optim.make_optimizer(cfg)
    for t in range(1, 6):
        g = rng.normal(size=(3, 4))
        opt.step(params, {"w": g})
        torch_loop_step(kind, cfg, flat, list(g.ravel()), state, t)
    return float(np.abs(params["w"].ravel() - np.array(flat)).max())


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


class Checks:
    def __init__(self):
        self.failed = []

    def expect(self, label, ok, detail):
        print("%-62s %s  %s" % (label, "ok  " if ok else "FAIL", detail))
        if not ok:
            self.failed.append(label)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="sample at most 20 entries per parameter everywhere")
    args = parser.parse_args(argv)
    full = 20 if args.quick else 10**9
    checks = Checks()

    small_mlp = models.MlpConfig(batch=5, in_features=4, hidden=6, classes=3)
    small_gpt2 = models.Gpt2Config(num_layers=2, hidden_size=8, num_attention_heads=2,
                                   seq_length=4, vocab_size=11, batch_size=2)
    cases = [
        ("mlp small (every entry)", "mlp", small_mlp, full),
        ("mlp default sizes (sampled)", "mlp", models.MlpConfig(), 20),
        ("gpt2 small (every entry)", "gpt2", small_gpt2, full),
        ("gpt2 default sizes (sampled)", "gpt2", models.Gpt2Config(), 12),
    ]
    for label, model, cfg, limit in cases:
        err, worst = check_gradients(model, cfg, seed=1, limit=limit)
        checks.expect("gradients vs finite differences: " + label, err < GRAD_RTOL,
                      "max rel err %.2e (%s)" % (err, worst))

    err = attention_error(models.Gpt2Config(batch_size=2, seq_length=5), seed=2)
    checks.expect("attention vs per-head loops", err < 1e-12, "max rel err %.2e" % err)

    for kind, wd in (("sgd", 0.0), ("adam", 0.0), ("adam", 0.1), ("adamw", 0.01)):
        err = optimizer_error(kind, wd)
        checks.expect("%s (weight decay %g) vs torch.optim loop" % (kind, wd), err < 1e-12,
                      "max abs err %.2e" % err)

    # Negative controls: each broken variant must be caught.
    def embedding_use_only(p, batch):
        _, grads, dwte_embedding, _ = models.gpt2_loss_and_grad_parts(p, batch, small_gpt2)
        return {**grads, "wte.weight": dwte_embedding}

    err, worst = check_gradients("gpt2", small_gpt2, seed=1, limit=10, grad_fn=embedding_use_only)
    checks.expect("negative control: untied wte gradient is caught",
                  err >= GRAD_RTOL and worst == "wte.weight",
                  "max rel err %.2e (%s)" % (err, worst))

    def off_by_1e4(p, batch):
        grads = models.mlp_loss_and_grads(p, batch)[1]
        grads["fc1.bias"] = grads["fc1.bias"] * (1.0 + 1e-4)
        return grads

    err, worst = check_gradients("mlp", small_mlp, seed=1, limit=full, grad_fn=off_by_1e4)
    checks.expect("negative control: gradient off by 1e-4 is caught",
                  err >= GRAD_RTOL and worst == "fc1.bias", "max rel err %.2e (%s)" % (err, worst))

    rng = np.random.default_rng(3)
    cfg = models.Gpt2Config(batch_size=1, seq_length=5)
    params = random_params("gpt2", cfg, rng)
    x = rng.normal(size=(cfg.rows, cfg.hidden_size))
    fast, _ = models.attention_forward(params, "h.0.attn", x, cfg)
    acausal = attention_by_loops(params, "h.0.attn", x, cfg, causal=False)
    err = float(np.abs(fast - acausal).max() / np.abs(acausal).max())
    checks.expect("negative control: attention without the mask is caught",
                  err > 1e-3, "max rel diff %.2e" % err)

    if checks.failed:
        print("reference check FAILED: " + "; ".join(checks.failed))
        return 1
    print("reference OK: gradients, attention and optimizers agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
