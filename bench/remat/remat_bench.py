#!/usr/bin/python3
"""Activation checkpointing (zero-remat) on the GPT-2 of bench/stages with 8
layers: activation memory, peak memory per rank and step time, with no
checkpointing and with every block checkpointed, at ZeRO stages 0 and 3 on
4 in-process ranks, with bench/stages' vocabulary (8192) and a small one
(512).

The model is bench/common/bench_model.py's (hidden 256, 4 heads, sequence
128, vocabulary 8192, a global batch of 8 sequences) with 8 layers instead
of 4 (and vocabulary 512 too), written with the zerosbp Python API, fp32 Adam, every tensor
partitioned, thresholds 0, `overlap_comm` on. *activation MiB/rank* is the
measured peak of role `activation` (equal to the plan's, checked); *peak
MiB/rank* the measured peak of all roles; *step ms* the median of
`--repeats` steps after two warm-up steps. The losses of the checkpointed
runs must equal the others' bit for bit (the benchmark fails otherwise).

Usage (through Bazel, which puts the zerosbp package on the path):
  bazel run -c opt //bench/remat -- --csv=$PWD/bench/results/remat.csv \\
      --json=$PWD/bench/results/remat.json
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "chargpt"))
import bench_model  # noqa: E402
import bench_report  # noqa: E402
from model import Gpt2  # noqa: E402

import zerosbp as zs  # noqa: E402

MIB = 1024.0 * 1024.0
SEQ, EMBED, HEADS, LAYERS, BATCH, RANKS = 128, 256, 4, 8, 8, 4
# bench/stages' vocabulary, and a small one: the LM head's logits (their
# gradient takes their bytes) are live at the start of the backward
# whatever is checkpointed, so a small vocabulary shows the blocks' own
# saving.
VOCABS = [8192, 512]
PIPELINE = bench_model.PYTHON_PIPELINE
COLUMNS = [
    ("vocab", "vocabulary"),
    ("stage", "stage"),
    ("checkpointing", "checkpointing"),
    ("activation_mib", "activation MiB/rank"),
    ("activation_planned_mib", "planned"),
    ("peak_mib", "peak MiB/rank"),
    ("step_ms", "step ms"),
    ("activation_cut", "activation cut"),
    ("step_ratio", "step time ratio"),
    ("recompute_gflops", "recompute GFLOP/rank/step"),
    ("final_loss", "final loss"),
]


def train(vocab, stage, checkpoint, batches, repeats):
    zs.manual_seed(0)
    model = Gpt2(vocab, SEQ, EMBED, HEADS, LAYERS, seed=0)
    if checkpoint:
        for block in model.h:
            zs.checkpoint(block)
    graph = bench_model.train_graph(model, vocab, stage, RANKS)
    losses = [float(graph(*b)) for b in batches[:2]]
    times = []
    for batch in batches[2:2 + repeats]:
        begin = time.perf_counter()
        losses.append(float(graph(*batch)))
        times.append((time.perf_counter() - begin) * 1000)
    report = graph.memory_report()
    planned = report["planned"]["peak_bytes_by_role"]["activation"]
    measured = max(r["by_role"]["activation"] for r in report["measured"])
    flops = graph.report.get("remat", {}).get("recompute_flops_per_rank", 0)
    if measured != planned:
        bench_report.fail(f"stage {stage}: measured activation peak "
                          f"{measured} != planned {planned}")
    return {
        "losses": losses,
        "activation": measured,
        "planned": planned,
        "peak": max(r["total"] for r in report["measured"]),
        "step_ms": statistics.median(times),
        "recompute_gflops": round(flops / 1e9, 3),
    }


BUDGET_COLUMNS = [
    ("checkpointing", "checkpointing"),
    ("budget_mib", "budget MiB"),
    ("blocks", "blocks checkpointed"),
    ("activation_mib", "activation MiB/rank (run)"),
    ("activation_planned_mib", "planned"),
    ("peak_mib", "peak MiB/rank"),
    ("step_ms", "step ms"),
    ("recompute_gflops", "recompute GFLOP/rank/step"),
]


def budgets(args):
    """zero-compile --activation-memory-budget on the same model (vocabulary
    512, stage 3): no checkpointing, every block, and two budgets between,
    each trained by zero-run for `--repeats` steps after one."""
    tools = os.environ.get("ZEROSBP_COMPILE"), os.environ.get("ZEROSBP_RUN")
    if not all(tools):
        bench_report.fail("ZEROSBP_COMPILE and ZEROSBP_RUN must name the tools")
    compile_tool, run_tool = tools
    model = ["--num-layers=%d" % LAYERS, "--hidden-size=%d" % EMBED,
             "--num-attention-heads=%d" % HEADS, "--seq-length=%d" % SEQ,
             "--vocab-size=512", "--batch-size=%d" % BATCH,
             "--world=%d" % RANKS, "--stage=3", "--pipeline=" + PIPELINE]
    work = tempfile.mkdtemp(prefix="remat-bench-")

    def compile_plan(name, *flags):
        plan = os.path.join(work, name + ".zplan")
        report = json.loads(bench_report.run(
            [compile_tool, *model, *flags, "--report=json", "-o", plan]))
        return plan, report

    activation = lambda r: r["plan"]["memory_plan"]["peak_bytes_by_role"][
        "activation"]
    _, plain = compile_plan("none")
    _, every = compile_plan("every", "--checkpoint-activations")
    top, bottom = activation(plain), activation(every)
    configs = [("none", [], None), ("every block",
                                    ["--checkpoint-activations"], None)]
    for fraction in (0.5, 0.25):
        budget = int(bottom + fraction * (top - bottom))
        configs.append(("budget", ["--activation-memory-budget=%d" % budget],
                        budget))
    rows = []
    for name, flags, budget in configs:
        print(f"remat: zero-run, {name} {budget or ''}", file=sys.stderr,
              flush=True)
        plan, report = compile_plan(name.replace(" ", "-") + str(budget),
                                    *flags)
        choice = report.get("activation_checkpointing", {})
        blocks = (len(choice["checkpointed_blocks"]) if choice else
                  LAYERS if flags else 0)
        run = bench_report.run_report(
            [run_tool, plan, "--ranks=%d" % RANKS,
             "--steps=%d" % (1 + args.repeats), "--quiet"],
            os.path.join(work, "report.json"))
        measured = max(r["by_role"]["activation"]
                       for r in run["peak_bytes"])
        if measured != activation(report):
            bench_report.fail(f"{name}: measured activation peak {measured} "
                              f"!= planned {activation(report)}")
        flops = report.get("remat", {}).get("recompute_flops_per_rank", 0)
        rows.append({
            "checkpointing": name,
            "budget_mib": round(budget / MIB, 2) if budget else "",
            "blocks": blocks,
            "activation_mib": round(measured / MIB, 2),
            "activation_planned_mib": round(activation(report) / MIB, 2),
            "peak_mib": round(max(r["total"] for r in run["peak_bytes"]) /
                              MIB, 2),
            "step_ms": round(run["mean_step_ms"], 1),
            "recompute_gflops": round(flops / 1e9, 3),
        })
    shutil.rmtree(work, ignore_errors=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--stages", default="0,3")
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
    rows = []
    for vocab in VOCABS:
        rng = np.random.default_rng(5)
        batches = [(rng.integers(0, vocab, (BATCH, SEQ)),
                    rng.integers(0, vocab, (BATCH, SEQ)))
                   for _ in range(2 + args.repeats)]
        for stage in stages:
            print(f"remat: vocabulary {vocab}, stage {stage} ...",
                  file=sys.stderr, flush=True)
            plain = train(vocab, stage, False, batches, args.repeats)
            blocks = train(vocab, stage, True, batches, args.repeats)
            if blocks["losses"] != plain["losses"]:
                bench_report.fail(
                    f"stage {stage}: checkpointed losses differ: "
                    f"{blocks['losses']} != {plain['losses']}")
            for name, run in (("none", plain), ("every block", blocks)):
                rows.append({
                    "vocab": vocab,
                    "stage": stage,
                    "checkpointing": name,
                    "activation_mib": round(run["activation"] / MIB, 2),
                    "activation_planned_mib": round(run["planned"] / MIB, 2),
                    "peak_mib": round(run["peak"] / MIB, 2),
                    "step_ms": round(run["step_ms"], 1),
                    "activation_cut": round(plain["activation"] /
                                            run["activation"], 2),
                    "step_ratio": round(run["step_ms"] / plain["step_ms"],
                                        2),
                    "final_loss": "%.6f" % run["losses"][-1],
                    "recompute_gflops": run["recompute_gflops"],
                })
    budget_rows = budgets(args)
    bench_report.print_table(COLUMNS, rows)
    print()
    bench_report.print_table(BUDGET_COLUMNS, budget_rows)
    print(f"\nGPT-2: {LAYERS} layers, hidden {EMBED}, {HEADS} heads, sequence "
          f"{SEQ}, vocabulary 8192 or 512, global batch {BATCH}; {RANKS} "
          f"in-process ranks, fp32 Adam; median of {args.repeats} steps; "
          f"losses identical with and without checkpointing. "
          f"{bench_report.describe(info)}; {date}.")
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        rows = rows + [dict(r, table="budget") for r in budget_rows]
        bench_report.write_json(args.json, "remat", {
            "layers": LAYERS, "vocabularies": VOCABS, "pipeline": PIPELINE,
            "ranks": RANKS,
            "repeats": args.repeats}, info, date, rows)


if __name__ == "__main__":
    main()
