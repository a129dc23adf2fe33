#!/usr/bin/python3
"""Inference graphs next to a training graph: the memory they add per rank
and their time per batch, at ZeRO stages 0-3 on 4 in-process ranks.

The GPT-2 of bench/common/bench_model.py (4 layers, hidden 256, 4 heads,
sequence 128, vocabulary 8192), written with the zerosbp Python API, fp32
Adam, every tensor partitioned, both thresholds 0, `overlap_comm` on. For
each stage:

- **train**: the training graph on a global batch of 8 sequences; *step ms*
  is the median of `--repeats` steps after two warm-up steps, *peak
  MiB/rank* the largest measured peak of a rank.
- **eval, shared**: an inference graph (`build` returns the mean loss) on
  the same modules, compiled after the training graph, so that it runs on
  the training graph's parameters. *adds MiB/rank* is its largest measured
  peak of a rank (activations, inputs and, at stage 3, the gathered
  parameter buckets); *planned* the plan's most bytes live at once less
  its parameters; *activations* and *gathered params* the peaks of those
  roles (they peak at different times, so they sum to more); *own
  param B* the parameter bytes it holds itself (0: none). *eval ms* is the
  median time of a call (forward only, the loss handed back).
- **eval, own copy**: the same inference graph before any training graph
  holds the parameters (a fresh model), which keeps its own copy on its
  ranks: what sharing saves is its parameter bytes per rank.

Usage (through Bazel, which puts the zerosbp package on the path):
  bazel run -c opt //bench/eval -- --csv=$PWD/bench/results/eval.csv \\
      --json=$PWD/bench/results/eval.json
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "chargpt"))
import bench_model  # noqa: E402
import bench_report  # noqa: E402
from model import Gpt2  # noqa: E402

import zerosbp as zs  # noqa: E402
from zerosbp import nn  # noqa: E402

MIB = 1024.0 * 1024.0
VOCAB, SEQ, EMBED, HEADS, LAYERS, BATCH, RANKS = 8192, 128, 256, 4, 4, 8, 4
COLUMNS = [
    ("stage", "stage"),
    ("train_step_ms", "train step ms"),
    ("train_peak_mib", "train peak MiB/rank"),
    ("eval_ms", "eval ms/batch"),
    ("eval_adds_mib", "eval adds MiB/rank"),
    ("eval_planned_mib", "planned"),
    ("eval_activation_mib", "activations"),
    ("eval_buckets_mib", "gathered params"),
    ("eval_own_param_bytes", "own param B"),
    ("own_copy_mib", "eval with own copy MiB/rank"),
    ("own_copy_param_mib", "of which params"),
]


def graphs(stage):
    """The training graph of a fresh model, and the class of an inference
    graph (the mean loss) on the same model."""
    zs.manual_seed(0)
    model = Gpt2(VOCAB, SEQ, EMBED, HEADS, LAYERS, seed=0)

    class Eval(nn.Graph):
        def __init__(self, own_config=False):
            super().__init__()
            self.model, self.loss_fn = model, nn.CrossEntropyLoss()
            if own_config:
                bench_model.configure_zero(self, stage)

        def build(self, tokens, labels):
            return self.loss_fn(self.model(tokens).reshape(-1, VOCAB),
                                labels.reshape(-1))

    placement = zs.placement("cpu", ranks=range(RANKS))
    return (bench_model.train_graph(model, VOCAB, stage, RANKS), Eval,
            placement)


def median_ms(call, repeats):
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        call()
        times.append((time.perf_counter() - begin) * 1000)
    return statistics.median(times)


def measure(stage, batch, repeats):
    # An inference graph with its own copy: before any training graph.
    _, Eval, placement = graphs(stage)
    own = Eval(own_config=True).to(placement)
    own(*batch)
    own_peak = max(r["total"] for r in own.memory_report()["measured"])
    own_param = max(r["by_role"]["param"]
                    for r in own.memory_report()["measured"])

    train, Eval, _ = graphs(stage)
    train(*batch)
    train(*batch)
    step_ms = median_ms(lambda: train(*batch), repeats)
    evaluate = Eval()
    evaluate(*batch)
    eval_ms = median_ms(lambda: evaluate(*batch), repeats)
    report = evaluate.memory_report()
    measured = report["measured"]
    worst = max(measured, key=lambda r: r["total"])
    return {
        "stage": stage,
        "train_step_ms": round(step_ms, 1),
        "train_peak_mib": round(max(r["total"] for r in
                                    train.memory_report()["measured"]) / MIB,
                                2),
        "eval_ms": round(eval_ms, 1),
        "eval_adds_mib": round(worst["total"] / MIB, 3),
        "eval_planned_mib": round(report["planned"]["added_bytes"] / MIB, 3),
        "eval_activation_mib": round(worst["by_role"]["activation"] / MIB, 3),
        "eval_buckets_mib": round(worst["by_role"]["comm_buffer"] / MIB, 3),
        "eval_own_param_bytes": max(r["by_role"]["param"] for r in measured),
        "own_copy_mib": round(own_peak / MIB, 3),
        "own_copy_param_mib": round(own_param / MIB, 3),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--stages", default="0,1,2,3")
    args = parser.parse_args()
    if args.repeats < 1:
        bench_report.fail("--repeats must be at least 1")
    try:
        stages = [int(s) for s in args.stages.split(",")]
    except ValueError:
        bench_report.fail(f"--stages: bad list '{args.stages}'")
    if any(s not in (0, 1, 2, 3) for s in stages):
        bench_report.fail("--stages takes stages 0 to 3")
    info, date = bench_report.machine(), bench_report.now()
    rng = np.random.default_rng(5)
    batch = (rng.integers(0, VOCAB, (BATCH, SEQ)),
             rng.integers(0, VOCAB, (BATCH, SEQ)))
    rows = []
    for stage in stages:
        print(f"eval: stage {stage} ...", file=sys.stderr, flush=True)
        rows.append(measure(stage, batch, args.repeats))
    bench_report.print_table(COLUMNS, rows)
    print(f"\n{bench_model.GPT2_DESCRIPTION}; {RANKS} in-process ranks, fp32 "
          f"Adam; median of {args.repeats}. {bench_report.describe(info)}; "
          f"{date}.")
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "eval", {
            "model": bench_model.GPT2_FLAGS,
            "pipeline": bench_model.PYTHON_PIPELINE,
            "ranks": RANKS, "repeats": args.repeats}, info, date, rows)


if __name__ == "__main__":
    main()
