#!/usr/bin/python3
"""Pipeline parallelism in 3-D layouts: a GPT-2 of 8 blocks at (pp, dp, tp)
on 4 and 8 in-process CPU ranks, ZeRO-1 over each stage's data ranks
(docs/design.md#pipeline-parallelism).

Every layout trains the same global batch of BATCH sequences on the same
data from the same initial values. A pipelined layout (pp > 1) runs
MICRO micro-batches (`--gradient-accumulation-steps`) through its stages,
as 1F1B and, for one layout per world, as GPipe and as Megatron's
interleaved 1F1B over two model chunks per stage
(`--num-virtual-stages-per-pipeline-rank 2`); a layout without stages
runs the batch in one step, as data and tensor parallelism do.

Per row:
* model states and the planned peak of a rank's arena, for the rank that
  holds the most (`zero-compile --report=json`), and the run's high water
  (the largest over the ranks, `zero-run`'s `peak_bytes`);
* the planned bubble (`pipeline.bubble`: the share of the stages' time
  spent waiting, from the matmul FLOPs of each micro-batch's forward and
  backward) and (P - 1)/(V M + P - 1), what balanced stages would give
  with V model chunks per stage;
* bytes a rank sends per step between stages (send_recv) and in
  collectives, measured, the largest over the ranks;
* the step time, the median of the steps after the first of the fastest
  quiet run of --repeats, and how many cores other work kept busy then;
* the final loss and the largest relative difference of the losses from
  those of (1, W, 1), within float32 rounding.

One layout per world also runs 1F1B and interleaved 1F1B as a micro-batch
loop (`micro-batch-loop=true`: one micro-batch's graph that the plan runs
per micro-batch, docs/design.md#the-micro-batch-loop), whose losses must
equal the copies' bit for bit.

CPU ranks are threads of one process here: a stage's wait shows as time
too, but the cores are shared, so step times compare layouts on this
machine only.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/pipeline -- \\
      --csv=$PWD/bench/results/pipeline.csv \\
      --json=$PWD/bench/results/pipeline.json
  pipeline_bench.py ZERO_COMPILE ZERO_RUN [--csv FILE] [--json FILE]
      [--worlds 4,8] [--steps 6] [--repeats 3]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
import bench_report  # noqa: E402

import numpy as np  # noqa: E402

MODEL = dict(layers=8, hidden=64, heads=4, seq=32, vocab=512)
BATCH = 32
MICRO = 4
LAYOUTS = {
    4: [(1, 4, 1), (1, 2, 2), (2, 2, 1), (2, 1, 2), (4, 1, 1)],
    8: [(1, 8, 1), (1, 4, 2), (2, 4, 1), (2, 2, 2), (4, 2, 1), (4, 1, 2),
        (8, 1, 1)],
}
# The layout of each world also run as GPipe and interleaved (V = 2).
GPIPE = {4: (2, 2, 1), 8: (4, 2, 1)}
INTERLEAVED = GPIPE
CHUNKS = 2
# The layout of each world also run as a micro-batch loop, 1F1B and
# interleaved: the copies' losses bit for bit, a plan of one micro-batch.
LOOPED = GPIPE
LOOP = "-loop"
FP32_RTOL = 1e-5

COLUMNS = [
    ("world", "ranks"), ("pp", "pp"), ("dp", "dp"), ("tp", "tp"),
    ("micro_batches", "M"), ("schedule", "schedule"),
    ("model_state_bytes", "model states / rank"),
    ("planned_peak_bytes", "planned peak / rank"),
    ("high_water_bytes", "run high water / rank"),
    ("bubble", "planned bubble"), ("balanced_bubble", "(P-1)/(VM+P-1)"),
    ("send_recv_bytes", "send_recv B / rank / step"),
    ("collective_bytes", "collective B / rank / step"),
    ("step_ms", "step ms"), ("other_cores", "other cores"),
    ("final_loss", "final loss"), ("loss_rel_diff", "vs (1, W, 1)"),
]


def compile_plan(args, work, layout, schedule):
    pp, dp, tp = layout
    world = pp * dp * tp
    m = MODEL
    plan = os.path.join(work, "gpt2_%d_%d_%d_%s.zplan" % (pp, dp, tp,
                                                          schedule))
    # "-loop": the same schedule as a micro-batch loop
    # (docs/design.md#the-micro-batch-loop).
    loop = schedule.endswith(LOOP)
    schedule = schedule[:-len(LOOP)] if loop else schedule
    command = [args.zero_compile, "--num-layers=%d" % m["layers"],
               "--hidden-size=%d" % m["hidden"],
               "--num-attention-heads=%d" % m["heads"],
               "--seq-length=%d" % m["seq"], "--vocab-size=%d" % m["vocab"],
               "--batch-size=%d" % BATCH, "--world=%d" % world, "--stage=1",
               "--model-parallel-size=%d" % tp,
               "--pipeline=optimizer=adam%s" % (
                   " micro-batch-loop=true" if loop else ""),
               "--report=json", "-o", plan]
    if pp > 1:
        command += ["--pipeline-model-parallel-size=%d" % pp,
                    "--gradient-accumulation-steps=%d" % MICRO,
                    "--pipeline-schedule=%s" % (
                        "1f1b" if schedule == "interleaved" else schedule)]
    if schedule == "interleaved":
        command.append("--num-virtual-stages-per-pipeline-rank=%d" % CHUNKS)
    return plan, json.loads(bench_report.run(command))


def measure(args, work, data, plan, world, attempt):
    report_path = os.path.join(work, "report_%d.json" % attempt)
    return bench_report.run_report(
        [args.zero_run, plan, "--ranks", str(world), "--steps",
         str(args.steps), "--data", data, "--quiet"], report_path)


def row(layout, schedule, compiled, report, base_losses):
    pp, dp, tp = layout
    plan = compiled["plan"]
    pipeline = compiled.get("pipeline", {})
    per_rank = report["comm_bytes"]["per_rank"]
    timed = report["step_ms"][1:] or report["step_ms"]
    losses = report["losses"]
    micro = MICRO if pp > 1 else 1
    loop = schedule.endswith(LOOP)
    schedule = schedule[:-len(LOOP)] if loop else schedule
    chunks = CHUNKS if schedule == "interleaved" else 1
    return {
        "world": pp * dp * tp, "pp": pp, "dp": dp, "tp": tp,
        "micro_batches": micro,
        "schedule": ("interleaved 1f1b, V=%d" % chunks
                     if schedule == "interleaved" else schedule) +
        (", loop" if loop else "") if pp > 1 else "-",
        "model_state_bytes": plan["memory_plan"]["model_state_bytes"],
        "planned_peak_bytes": plan["memory_plan"]["peak_bytes_per_rank"],
        "high_water_bytes": max(rank["high_water"]
                                for rank in report["peak_bytes"]),
        "bubble": round(pipeline.get("bubble", 0.0), 4),
        "balanced_bubble": round((pp - 1) / (chunks * micro + pp - 1), 4),
        "send_recv_bytes": max(rank.get("send_recv", 0) for rank in per_rank),
        "collective_bytes": max(sum(v for k, v in rank.items()
                                    if k != "send_recv")
                                for rank in per_rank),
        "step_ms": round(statistics.median(timed), 2),
        "other_cores": round(report["other_cores"], 2),
        "final_loss": round(losses[-1], 6),
        "loss_rel_diff": "%.1e" % max(
            abs(a - b) / abs(b) for a, b in zip(losses, base_losses))
        if base_losses else "-",
        "losses": losses,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--worlds", default="4,8")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    worlds = [int(w) for w in args.worlds.split(",")]
    if any(w not in LAYOUTS for w in worlds) or args.steps < 2 or \
            args.repeats < 1:
        bench_report.fail("--worlds takes 4 and 8, --steps at least 2, "
                          "--repeats at least 1")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data")
        os.makedirs(data)
        rng = np.random.default_rng(0)
        for name in ("tokens", "labels"):
            np.save(os.path.join(data, name + ".npy"),
                    rng.integers(0, MODEL["vocab"],
                                 (args.steps, BATCH, MODEL["seq"])))
        configs = []
        for world in worlds:
            for layout in LAYOUTS[world]:
                configs.append((layout, "1f1b"))
                if layout == GPIPE[world]:
                    configs.append((layout, "gpipe"))
                if layout == INTERLEAVED[world]:
                    configs.append((layout, "interleaved"))
                if layout == LOOPED[world]:
                    configs.append((layout, "1f1b" + LOOP))
                    configs.append((layout, "interleaved" + LOOP))
        compiled = {config: compile_plan(args, work, *config)
                    for config in configs}

        def run_one(config, attempt):
            plan, _ = compiled[config]
            layout = config[0]
            return measure(args, work, data, plan,
                           layout[0] * layout[1] * layout[2], attempt)

        best = bench_report.best_runs(configs, run_one, args.repeats,
                                      retries=2)
        for world in worlds:
            base = best[((1, world, 1), "1f1b")]["losses"]
            for config in configs:
                layout, schedule = config
                if layout[0] * layout[1] * layout[2] != world:
                    continue
                rows.append(row(layout, schedule, compiled[config][1],
                                best[config], base))
        # A loop runs the copies' sums: the same losses, bit for bit.
        loops_equal = all(
            best[config]["losses"] ==
            best[(config[0], config[1][:-len(LOOP)])]["losses"]
            for config in configs if config[1].endswith(LOOP))
    worst = max(float(r["loss_rel_diff"]) for r in rows)
    bench_report.print_table(COLUMNS, rows)
    info = bench_report.machine()
    print()
    print("%s; largest relative loss difference to (1, W, 1): %.1e "
          "(float32 rounding allows %g)" % (bench_report.describe(info),
                                            worst, FP32_RTOL))
    print("micro-batch loops: the copies' losses bit for bit: %s" %
          ("yes" if loops_equal else "NO"))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "pipeline", {
            "model": MODEL, "batch": BATCH, "micro_batches": MICRO,
            "steps": args.steps, "repeats": args.repeats, "stage": 1,
            "optimizer": "adam", "precision": "fp32"},
            info, bench_report.now(), rows)
    if worst > FP32_RTOL:
        bench_report.fail("a layout's losses differ from (1, W, 1) by %.1e"
                          % worst)
    if not loops_equal:
        bench_report.fail("a micro-batch loop's losses differ from its "
                          "copies'")


if __name__ == "__main__":
    main()
