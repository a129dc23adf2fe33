#!/usr/bin/python3
"""Writes an integration-test case: initial parameters, data, and the float64
reference training run that the runtime's results are compared against.

    make_case.py --model mlp|gpt2 --out DIR [--steps 20] [--seed 0] [--world 1]
        [--batch-size 12]
        [MLP:   --in-features 16 --hidden-features 32 --classes 8]
        [GPT-2: --num-layers 2 --hidden-size 32 --num-attention-heads 4
                --seq-length 16 --vocab-size 64]
        [--optimizer sgd|adam|adamw] [--lr LR] [--weight-decay WD]
        [--beta1 0.9] [--beta2 0.999] [--eps 1e-8]

DIR gets
    init/<param>.npy        float32 initial values, PyTorch layout
    data/<input>.npy        one per graph input (`nn.input` name), leading
                            step axis: (steps, *global shape); step s uses [s]
    reference.json          {"losses": [loss of step s's forward, before its
                            update], "model", "optimizer", ...}
    reference/<param>.npy   float64 parameters after the last step
    mlp.mlir                (MLP only) the forward graph on `--world` ranks

GPT-2's sizes use zero-compile's flag names; reference.json's
"compile_flags" lists them ready to pass on. The GPT-2 graph's global batch is
--batch-size sequences of --seq-length tokens.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import sys
from typing import Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import models  # noqa: E402
import optim  # noqa: E402

# Random streams derived from --seed: one for the init, one for the data.
INIT_STREAM, DATA_STREAM = 0, 1
# GPT-2 data: sequences repeat one of a few short token patterns.
NUM_PATTERNS = 4
PATTERN_LENGTHS = (3, 4, 5, 6)


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def mlp_data(cfg: models.MlpConfig, steps: int,
             rng: np.random.Generator) -> Dict[str, np.ndarray]:
    """Fresh x ~ N(0, 2^2) every step; labels from a fixed random linear
    teacher, argmax(x T^T). (Inputs of scale 2 make the 20-step fall clear.)"""
    teacher = rng.normal(size=(cfg.classes, cfg.in_features))
    x = rng.normal(0.0, 2.0, size=(steps, cfg.batch, cfg.in_features)).astype(np.float32)
    labels = np.argmax(x.astype(np.float64) @ teacher.T, axis=-1).astype(np.int64)
    return {"x": x, "labels": labels}


def gpt2_patterns(vocab: int, rng: np.random.Generator) -> List[np.ndarray]:
    """NUM_PATTERNS short token cycles, disjoint while the vocabulary allows,
    so the next token follows from the current one and its context."""
    order = rng.permutation(vocab)
    patterns, used = [], 0
    for i in range(NUM_PATTERNS):
        length = min(PATTERN_LENGTHS[i % len(PATTERN_LENGTHS)], vocab)
        patterns.append(np.take(order, np.arange(used, used + length), mode="wrap"))
        used += length
    return patterns


def gpt2_data(cfg: models.Gpt2Config, steps: int,
              rng: np.random.Generator) -> Dict[str, np.ndarray]:
    """Each sequence is a pattern repeated from a random phase; labels are the
    next tokens (tokens shifted left by one, continuing the pattern)."""
    patterns = gpt2_patterns(cfg.vocab_size, rng)
    stream = np.zeros((steps, cfg.batch_size, cfg.seq_length + 1), dtype=np.int64)
    for s in range(steps):
        for b in range(cfg.batch_size):
            pattern = patterns[rng.integers(len(patterns))]
            phase = rng.integers(len(pattern))
            stream[s, b] = pattern[(phase + np.arange(cfg.seq_length + 1)) % len(pattern)]
    return {"tokens": stream[:, :, :-1].copy(), "labels": stream[:, :, 1:].copy()}


def make_data(model: str, cfg, steps: int, rng: np.random.Generator) -> Dict[str, np.ndarray]:
    data = mlp_data(cfg, steps, rng) if model == "mlp" else gpt2_data(cfg, steps, rng)
    for spec in models.input_specs(model, cfg):  # names, shapes and dtypes as the graph's
        assert data[spec.name].shape == (steps,) + spec.shape, spec
        assert data[spec.name].dtype == np.dtype(spec.dtype), spec
    return data


# ---------------------------------------------------------------------------
# Loss-invariant entries
# ---------------------------------------------------------------------------


def loss_invariant_entries(model: str, cfg) -> List[dict]:
    """models.loss_invariant_slice for every parameter, for reference.json."""
    out = []
    for spec in models.param_specs(model, cfg):
        s = models.loss_invariant_slice(spec.name, spec.shape)
        if s is not None:
            out.append({"param": spec.name, "start": s.start, "stop": s.stop,
                        "reason": "key bias: softmax is invariant to a per-query shift"})
    return out


def check_invariant_gradients(grads, invariant, scale) -> None:
    """The reference's gradients on invariant entries must be ~0."""
    for entry in invariant:
        g = grads[entry["param"]].reshape(-1)[entry["start"]:entry["stop"]]
        if np.abs(g).max() > 1e-10 * max(scale, 1e-30):
            raise AssertionError("entries listed as loss-invariant have a gradient: %s" % entry)


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


def train(model: str, cfg, opt_cfg: optim.OptimizerConfig, init: models.Params,
          data: Dict[str, np.ndarray], steps: int):
    """Float64 training from `init` (upcast) for `steps` steps; step s reads
    row s of every input. Returns (losses, final params)."""
    params = {name: value.astype(np.float64) for name, value in init.items()}
    opt = optim.make_optimizer(opt_cfg)
    invariant = loss_invariant_entries(model, cfg)
    losses = []
    for s in range(steps):
        batch = {name: value[s] for name, value in data.items()}
        loss, grads = models.loss_and_grads(model, cfg, params, batch)
        largest = max(np.abs(g).max() for g in grads.values())
        check_invariant_gradients(grads, invariant, largest)
        losses.append(float(loss))
        opt.step(params, grads)
    return losses, params


# ---------------------------------------------------------------------------
# Graph text for the MLP
# ---------------------------------------------------------------------------


def mlir_float(value: float) -> str:
    """A float literal the nn parser accepts (it needs a '.')."""
    text = repr(float(value))
    if not any(c in text for c in ".ni"):
        exp = text.find("e")
        text = text + ".0" if exp < 0 else text[:exp] + ".0" + text[exp:]
    return text


def mlp_mlir(cfg: models.MlpConfig, world: int) -> str:
    """examples/mlp/mlp.mlir with this case's sizes on `world` CPU ranks."""
    pl = "#cpus%d" % world
    b, n, h, c = cfg.batch, cfg.in_features, cfg.hidden, cfg.classes
    s1, s2 = mlir_float(1.0 / math.sqrt(n)), mlir_float(1.0 / math.sqrt(h))
    def inp(shape: str) -> str:
        return "tensor<%s, #sbp.global<[S(0)], %s, input>>" % (shape, pl)

    def par(shape: str) -> str:
        return "tensor<%sxf32, #sbp.global<[B], %s, param>>" % (shape, pl)

    x_t, l_t = inp("%dx%dxf32" % (b, n)), inp("%dxi64" % b)
    w1, b1, w2, b2 = par("%dx%d" % (h, n)), par("%d" % h), par("%dx%d" % (c, h)), par("%d" % c)
    bh, bc = "tensor<%dx%dxf32>" % (b, h), "tensor<%dx%dxf32>" % (b, c)
    lines = [
        "// MLP %d -> %d -> %d, batch %d, %d CPU ranks: forward graph (make_case.py)"
        % (n, h, c, b, world),
        "%s = #sbp.placement<cpu, [%s]>" % (pl, ", ".join(str(r) for r in range(world))),
        "module {",
        "  func.func @mlp() -> tensor<f32> {",
        '    %%0 = nn.input "x" : %s' % x_t,
        '    %%1 = nn.input "labels" : %s' % l_t,
        '    %%2 = nn.variable "fc1.weight" param init = uniform(%s) : %s' % (s1, w1),
        "    %%3 = nn.matmul %%0, %%2 {transpose_rhs} : (%s, %s) -> %s" % (x_t, w1, bh),
        '    %%4 = nn.variable "fc1.bias" param init = uniform(%s) : %s' % (s1, b1),
        "    %%5 = nn.bias_add %%3, %%4 : (%s, %s) -> %s" % (bh, b1, bh),
        "    %%6 = nn.relu %%5 : (%s) -> %s" % (bh, bh),
        '    %%7 = nn.variable "fc2.weight" param init = uniform(%s) : %s' % (s2, w2),
        "    %%8 = nn.matmul %%6, %%7 {transpose_rhs} : (%s, %s) -> %s" % (bh, w2, bc),
        '    %%9 = nn.variable "fc2.bias" param init = uniform(%s) : %s' % (s2, b2),
        "    %%10 = nn.bias_add %%8, %%9 : (%s, %s) -> %s" % (bc, b2, bc),
        "    %%11 = nn.cross_entropy %%10, %%1 : (%s, %s) -> tensor<f32>" % (bc, l_t),
        "    return %11 : tensor<f32>",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Write a ZeroSBP integration-test case.")
    p.add_argument("--model", choices=("mlp", "gpt2"), required=True)
    p.add_argument("--out", required=True, help="case directory")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--world", type=int, default=1,
                   help="ranks the graph is placed on (mlp.mlir); must divide the batch")
    p.add_argument("--batch-size", type=int, default=12, help="global batch (both models)")
    mlp = p.add_argument_group("MLP sizes")
    mlp.add_argument("--in-features", type=int, default=16)
    mlp.add_argument("--hidden-features", type=int, default=32)
    mlp.add_argument("--classes", type=int, default=8)
    gpt = p.add_argument_group("GPT-2 sizes (zero-compile's flags)")
    gpt.add_argument("--num-layers", type=int, default=2)
    gpt.add_argument("--hidden-size", type=int, default=32)
    gpt.add_argument("--num-attention-heads", type=int, default=4)
    gpt.add_argument("--seq-length", type=int, default=16)
    gpt.add_argument("--vocab-size", type=int, default=64)
    o = p.add_argument_group("optimizer (torch.optim definitions)")
    o.add_argument("--optimizer", choices=optim.OPTIMIZERS, default="adam")
    o.add_argument("--lr", type=float, help="default: sgd 0.1, adam/adamw 1e-2")
    o.add_argument("--weight-decay", type=float, help="default: adamw 0.01, else 0")
    o.add_argument("--beta1", type=float, default=0.9)
    o.add_argument("--beta2", type=float, default=0.999)
    o.add_argument("--eps", type=float, default=1e-8)
    args = p.parse_args(argv)
    if args.steps < 1 or args.world < 1:
        p.error("--steps and --world must be positive")
    if args.batch_size % args.world:
        p.error("--world %d does not divide --batch-size %d" % (args.world, args.batch_size))
    return args


def model_config(args):
    if args.model == "mlp":
        cfg = models.MlpConfig(batch=args.batch_size, in_features=args.in_features,
                               hidden=args.hidden_features, classes=args.classes)
        if min(cfg.batch, cfg.in_features, cfg.hidden, cfg.classes) < 1:
            raise ValueError("MLP sizes must be positive")
        return cfg
    cfg = models.Gpt2Config(num_layers=args.num_layers, hidden_size=args.hidden_size,
                            num_attention_heads=args.num_attention_heads,
                            seq_length=args.seq_length, vocab_size=args.vocab_size,
                            batch_size=args.batch_size)
    cfg.validate()
    return cfg


def optimizer_config(args) -> optim.OptimizerConfig:
    kind = args.optimizer
    lr = optim.DEFAULT_LR[kind] if args.lr is None else args.lr
    wd = optim.DEFAULT_WEIGHT_DECAY[kind] if args.weight_decay is None else args.weight_decay
    cfg = optim.OptimizerConfig(kind=kind, lr=lr, beta1=args.beta1, beta2=args.beta2,
                                eps=args.eps, weight_decay=wd)
    cfg.validate()
    return cfg


def model_json(model: str, cfg) -> dict:
    out = {"name": model}
    if model == "mlp":
        out.update(batch_size=cfg.batch, in_features=cfg.in_features,
                   hidden_features=cfg.hidden, classes=cfg.classes)
    else:
        out.update({f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})
    return out


def compile_flags(model: str, cfg, world: int) -> List[str]:
    """zero-compile's model flags for this case (GPT-2), or the graph file."""
    if model == "mlp":
        return ["mlp.mlir", "--world=%d" % world]
    return ["--num-layers=%d" % cfg.num_layers, "--hidden-size=%d" % cfg.hidden_size,
            "--num-attention-heads=%d" % cfg.num_attention_heads,
            "--seq-length=%d" % cfg.seq_length, "--vocab-size=%d" % cfg.vocab_size,
            "--batch-size=%d" % cfg.batch_size, "--world=%d" % world]


def save_arrays(directory: str, arrays: Dict[str, np.ndarray]) -> None:
    """One <name>.npy per array; a stale directory is replaced."""
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    for name, value in arrays.items():
        np.save(os.path.join(directory, name + ".npy"), value)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        cfg = model_config(args)
        opt_cfg = optimizer_config(args)
    except ValueError as error:
        print("make_case.py: %s" % error, file=sys.stderr)
        return 2

    specs = models.param_specs(args.model, cfg)
    init = models.init_params(specs, np.random.default_rng([args.seed, INIT_STREAM]))
    data = make_data(args.model, cfg, args.steps, np.random.default_rng([args.seed, DATA_STREAM]))
    losses, final = train(args.model, cfg, opt_cfg, init, data, args.steps)

    os.makedirs(args.out, exist_ok=True)
    save_arrays(os.path.join(args.out, "init"), init)
    save_arrays(os.path.join(args.out, "data"), data)
    save_arrays(os.path.join(args.out, "reference"), final)
    graph = os.path.join(args.out, "mlp.mlir")
    if args.model == "mlp":
        with open(graph, "w") as f:
            f.write(mlp_mlir(cfg, args.world))
    elif os.path.exists(graph):
        os.remove(graph)
    report = {
        "losses": losses,
        "model": model_json(args.model, cfg),
        "optimizer": opt_cfg.to_json(),
        "steps": args.steps,
        "seed": args.seed,
        "world": args.world,
        "compile_flags": compile_flags(args.model, cfg, args.world),
        "params": [s.name for s in specs],
        "inputs": {s.name: {"shape": list(s.shape), "dtype": s.dtype}
                   for s in models.input_specs(args.model, cfg)},
        "loss_invariant": loss_invariant_entries(args.model, cfg),
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    print("%s/%s: %d steps, loss %.6f -> %.6f" % (args.model, opt_cfg.kind, args.steps,
                                                 losses[0], losses[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
