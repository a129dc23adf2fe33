#!/usr/bin/python3
"""Trains a case in NumPy at a chosen precision and writes what the runtime
writes: a report with "losses" and the final float32 parameters.

    emulate_run.py --case DIR --report run.json --saved SAVEDIR
                   [--dtype float32|float64] [--world N]

With --world N the step is data parallel as docs/design.md#numerics defines it:
each of N ranks takes its slice of the global batch (axis 0), computes the
gradient of its local mean loss, scales it by 1/N, and the N gradients are
summed; the reported loss is the mean of the local losses.

It stands in for the runtime where none is available: to test compare.py, and
to measure how far an honest float32 run drifts from the float64 reference
(which is what compare.py's default tolerances are based on).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_case  # noqa: E402
import models  # noqa: E402
import optim  # noqa: E402


def load_case(case_dir: str):
    """(model name, model config, optimizer config, init, data, steps)."""
    with open(os.path.join(case_dir, "reference.json")) as f:
        ref = json.load(f)
    m = dict(ref["model"])
    name = m.pop("name")
    if name == "mlp":
        cfg = models.MlpConfig(batch=m["batch_size"], in_features=m["in_features"],
                               hidden=m["hidden_features"], classes=m["classes"])
    else:
        cfg = models.Gpt2Config(**m)
    o = ref["optimizer"]
    opt_cfg = optim.OptimizerConfig(kind=o["type"], lr=o["lr"], beta1=o.get("beta1", 0.9),
                                    beta2=o.get("beta2", 0.999), eps=o.get("eps", 1e-8),
                                    weight_decay=o.get("weight_decay", 0.0))
    init = {p: np.load(os.path.join(case_dir, "init", p + ".npy")) for p in ref["params"]}
    data = {i: np.load(os.path.join(case_dir, "data", i + ".npy")) for i in ref["inputs"]}
    return name, cfg, opt_cfg, init, data, ref["steps"]


def local_config(model: str, cfg, world: int):
    if model == "mlp":
        return dataclasses.replace(cfg, batch=cfg.batch // world)
    return dataclasses.replace(cfg, batch_size=cfg.batch_size // world)


def data_parallel_step(model, cfg, params, batch, world, dtype, grad_fn=None):
    """Loss and gradient of one global batch split over `world` ranks.

    `grad_fn(model, local_cfg, params, shard) -> (loss, grads)` replaces the
    reference's gradient (check_compare.py uses it to plant bugs)."""
    grad_fn = grad_fn or models.loss_and_grads
    local = local_config(model, cfg, world)
    rows = next(iter(batch.values())).shape[0] // world
    losses, total = [], None
    for r in range(world):
        shard = {k: v[r * rows:(r + 1) * rows] for k, v in batch.items()}
        loss, grads = grad_fn(model, local, params, shard)
        losses.append(loss)
        scaled = {k: g * dtype(1.0 / world) for k, g in grads.items()}
        total = scaled if total is None else {k: total[k] + scaled[k] for k in total}
    return float(np.mean(losses)), total


def emulate(model, cfg, opt_cfg, init, data, steps, dtype=np.float32, world=1,
            grad_fn=None, optimizer=None):
    """(losses, final params) of `steps` steps; `optimizer` replaces the one
    opt_cfg makes."""
    params = {k: v.astype(dtype) for k, v in init.items()}
    opt = optimizer or optim.make_optimizer(opt_cfg)
    losses = []
    for s in range(steps):
        batch = {k: v[s].astype(dtype) if v.dtype.kind == "f" else v[s] for k, v in data.items()}
        loss, grads = data_parallel_step(model, cfg, params, batch, world, dtype, grad_fn)
        losses.append(loss)
        opt.step(params, grads)
    return losses, params


def write_run(report_path, saved_dir, losses, params) -> None:
    """run.json {"losses": [...]} and <param>.npy in float32, as the runtime."""
    with open(report_path, "w") as f:
        json.dump({"losses": losses}, f)
    make_case.save_arrays(saved_dir, {k: v.astype(np.float32) for k, v in params.items()})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True)
    p.add_argument("--report", required=True, help="write {\"losses\": [...]} here")
    p.add_argument("--saved", required=True, help="write <param>.npy (float32) here")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--world", type=int, default=1)
    args = p.parse_args(argv)
    model, cfg, opt_cfg, init, data, steps = load_case(args.case)
    batch = cfg.batch if model == "mlp" else cfg.batch_size
    if args.world < 1 or batch % args.world:
        p.error("--world must divide the global batch %d" % batch)
    dtype = np.float32 if args.dtype == "float32" else np.float64
    losses, params = emulate(model, cfg, opt_cfg, init, data, steps, dtype, args.world)
    write_run(args.report, args.saved, losses, params)
    return 0


if __name__ == "__main__":
    sys.exit(main())
