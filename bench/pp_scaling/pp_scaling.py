#!/usr/bin/python3
"""GPT-3 175B in 3-D layouts (pipeline x data x tensor), simulated on
1,024 H100s in DGX nodes, against flat ZeRO-3 and the 2-D layout (tensor
parallelism inside a node, ZeRO-1 over the rest) on the same GPUs and the
same global batch (docs/design.md#pipeline-parallelism).

Every configuration is compiled by zero-compile (bf16 with fp32 masters,
Adam, every block checkpointed, overlap_comm, DeepSpeed's 5e8 buckets, as
bench/tp_scaling) and simulated by zero-sim on nodes of 8 H100s (NVLink
450 GB/s, one 400 Gbit/s NIC per GPU). The global batch is 1,024
sequences of 2,048 tokens: one sequence per GPU, which flat ZeRO-3 runs at
one sequence per rank. The layouts put the model axis (tp) inside a node,
the pipeline stages across nodes, and the data axis over the rest, as
Megatron-DeepSpeed does; a pipelined layout splits its data rank's
sequences into --gradient-accumulation-steps micro-batches that run as
1F1B, or as Megatron's interleaved 1F1B over V model chunks per stage
(--num-virtual-stages-per-pipeline-rank V).

Per row: the simulated step (the slowest stage's), tokens/s per GPU and
model FLOPs utilization (6 x parameters x tokens plus attention's, over
the bf16 dense peak), the bubble zero-compile planned from the stages'
matmul FLOPs and (P - 1)/(V M + P - 1), the communication the compute does
not hide, the bytes a GPU sends per step between stages, on the data axis
and on the model axis, the bytes that leave the node, model states and
the planned peak per GPU and whether it fits 80 GiB, the compile time
and the plan's size. A pipelined layout is compiled a second time as a
micro-batch loop (micro-batch-loop=true: one micro-batch's graph that the
plan runs M times, docs/design.md#the-micro-batch-loop), with its compile
time, plan size, simulated step and planned peak beside the copies'.

The 175B (pp, dp, tp) = (8, 16, 8) compile is the issue's compile-time
goal (under 1 s); the table shows where it stands.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/pp_scaling -- \\
      --csv=$PWD/bench/results/pp_scaling.csv \\
      --json=$PWD/bench/results/pp_scaling.json
  pp_scaling.py ZERO_COMPILE ZERO_SIM [--csv FILE] [--json FILE]
      [--layouts PPxDPxTP:STAGE:M[:V],...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "common"))
sys.path.insert(0, os.path.join(_HERE, "..", "tp_scaling"))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "examples", "gpt2"))
import bench_report  # noqa: E402
import tp_scaling  # noqa: E402

MODEL = tp_scaling.MODELS["175B"]
GLOBAL_BATCH = 1024
# (pp, dp, tp, ZeRO stage, micro-batches, model chunks per stage).
LAYOUTS = [
    (1, 1024, 1, 3, 1, 1),
    (1, 128, 8, 1, 1, 1),
    (4, 32, 8, 1, 16, 1),
    (8, 16, 8, 1, 16, 1),
    (8, 16, 8, 1, 32, 1),
    (8, 16, 8, 1, 32, 4),
    (16, 8, 8, 1, 32, 1),
    (4, 64, 4, 1, 16, 1),
    (4, 64, 4, 1, 16, 4),
    (8, 64, 2, 1, 16, 1),
    (8, 64, 2, 1, 16, 4),
    (8, 64, 2, 1, 16, 6),
    (16, 64, 1, 1, 16, 6),
    (8, 128, 1, 1, 8, 1),
    (8, 128, 1, 1, 8, 12),
]
PIPELINE = ("precision=bf16 optimizer=adam overlap-comm=true "
            "reduce-bucket-size=500000000 allgather-bucket-size=500000000 "
            "stage3-prefetch-bucket-size=1500000000 "
            "stage3-max-live-parameters=3000000000 "
            "stage3-param-persistence-threshold=0")

COLUMNS = [
    ("layout", "layout"), ("pp", "pp"), ("dp", "dp"), ("tp", "tp"),
    ("stage", "ZeRO"), ("micro_batches", "M"), ("model_chunks", "V"),
    ("seqs_per_micro_batch", "seqs per micro-batch"),
    ("step_ms", "step ms"), ("tokens_per_s_per_gpu", "tokens/s per GPU"),
    ("mfu", "MFU"), ("bubble", "planned bubble"),
    ("balanced_bubble", "(P-1)/(VM+P-1)"),
    ("comm_exposed_ms", "comm exposed ms (rank 0)"),
    ("pipeline_axis_gb", "between stages GB"),
    ("data_axis_gb", "data axis GB"), ("model_axis_gb", "model axis GB"),
    ("network_gb", "network GB"), ("model_states_gib", "model states GiB"),
    ("peak_gib", "peak GiB"), ("fits", "fits 80 GiB"),
    ("compile_ms", "compile ms"), ("plan_mb", "plan MB"),
    ("loop_compile_ms", "loop: compile ms"), ("loop_plan_mb", "loop: plan MB"),
    ("loop_step_ms", "loop: step ms"), ("loop_peak_gib", "loop: peak GiB"),
]


def parse_layouts(text):
    layouts = []
    for item in text.split(","):
        shape, stage, micro, *chunks = item.split(":")
        pp, dp, tp = (int(x) for x in shape.split("x"))
        if len(chunks) > 1:
            raise ValueError(item)
        layouts.append((pp, dp, tp, int(stage), int(micro),
                        int(chunks[0]) if chunks else 1))
    return layouts


def compile_plan(args, layout, plan, loop=False):
    pp, dp, tp, stage, micro, chunks = layout
    m = MODEL
    command = [args.zero_compile, "--num-layers=%d" % m["layers"],
               "--hidden-size=%d" % m["hidden"],
               "--num-attention-heads=%d" % m["heads"],
               "--seq-length=%d" % m["seq"],
               "--vocab-size=%d" % tp_scaling.VOCAB,
               "--world=%d" % (pp * dp * tp), "--model-parallel-size=%d" % tp,
               "--stage=%d" % stage, "--batch-size=%d" % GLOBAL_BATCH,
               "--checkpoint-activations",
               "--pipeline=%s%s" % (PIPELINE, " micro-batch-loop=true"
                                    if loop else ""),
               "--report=json", "-o", plan]
    if pp > 1:
        command += ["--pipeline-model-parallel-size=%d" % pp,
                    "--gradient-accumulation-steps=%d" % micro]
    if chunks > 1:
        command.append("--num-virtual-stages-per-pipeline-rank=%d" % chunks)
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return None, tp_scaling.short_error(lines[-1] if lines else "")
    return json.loads(done.stdout), time.monotonic() - start


def simulate(args, plan, world):
    topology = "nodes=%d,ranks_per_node=%d,%s" % (
        max(1, world // tp_scaling.PER_NODE),
        min(world, tp_scaling.PER_NODE), tp_scaling.LINKS)
    return json.loads(bench_report.run([
        args.zero_sim, plan, "--topology", topology, "--device", "h100",
        "--report", "json"]))


def row(layout, report, sim):
    pp, dp, tp, stage, micro, chunks = layout
    world = pp * dp * tp
    step = sim["step_ms"] / 1e3
    tokens = GLOBAL_BATCH * MODEL["seq"] / step / world
    mfu = tokens * tp_scaling.model_flops_per_token(MODEL) / tp_scaling.PEAK
    # The plan's axes: [pipeline, data, model] with a pipeline, else
    # [data, model] (or [data] at tp = 1).
    per_axis = sim["comm_bytes"]["per_axis"]
    axes = ([None] if pp > 1 else []) + ["data"] + (["model"] if tp > 1
                                                    else [])
    by_axis = dict(zip(axes, per_axis))
    if pp > 1:
        name = "3-D: pp=%d, tp=%d, ZeRO-%d%s" % (
            pp, tp, stage, ", interleaved" if chunks > 1 else "")
    elif tp > 1:
        name = "2-D: tp=%d, ZeRO-%d" % (tp, stage)
    else:
        name = "flat ZeRO-%d" % stage
    pipeline = report.get("pipeline", {})
    return {
        "layout": name, "pp": pp, "dp": dp, "tp": tp, "stage": stage,
        "micro_batches": micro, "model_chunks": chunks,
        "seqs_per_micro_batch": GLOBAL_BATCH // (dp * micro),
        "step_ms": round(sim["step_ms"], 1),
        "stage_step_ms": [round(ms, 1) for ms in
                          sim.get("stage_step_ms", [sim["step_ms"]])],
        "tokens_per_s_per_gpu": int(round(tokens)),
        "mfu": "%.1f%%" % (100 * mfu), "mfu_fraction": round(mfu, 4),
        "bubble": round(pipeline.get("bubble", 0.0), 3),
        "balanced_bubble": round((pp - 1) / (chunks * micro + pp - 1), 3),
        "compute_ms": round(sim["compute_ms"], 1),
        "comm_exposed_ms": round(sim["comm_exposed_ms"], 1),
        "pipeline_axis_gb": round(per_axis[0] / 1e9, 2) if pp > 1 else 0.0,
        "data_axis_gb": round(by_axis["data"] / 1e9, 2),
        "model_axis_gb": round(by_axis.get("model", 0) / 1e9, 2),
        "network_gb": round(sim["comm_bytes"]["network"] / 1e9, 2),
        "model_states_gib": round(
            report["plan"]["memory_plan"]["model_state_bytes"] / 2 ** 30, 1),
        "peak_gib": round(sim["memory"]["device_bytes"] / 2 ** 30, 1),
        "fits": sim["memory"]["fits"],
        "compile_ms": round(report["compile_ms"]),
        "ops": report["ops"],
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("zero_compile")
    parser.add_argument("zero_sim")
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--layouts")
    args = parser.parse_args()
    try:
        layouts = parse_layouts(args.layouts) if args.layouts else LAYOUTS
    except ValueError:
        bench_report.fail("--layouts: expected PPxDPxTP:STAGE:M[:V],...")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for layout in layouts:
            plan = os.path.join(work, "plan.zplan")
            report, wall = compile_plan(args, layout, plan)
            if report is None:
                print("%s: refused: %s" % (layout, wall), file=sys.stderr)
                continue
            world = layout[0] * layout[1] * layout[2]
            sim = simulate(args, plan, world)
            rows.append(row(layout, report, sim))
            rows[-1]["plan_mb"] = round(os.path.getsize(plan) / 1e6, 1)
            # The same layout as a micro-batch loop
            # (docs/design.md#the-micro-batch-loop), side by side.
            looped = dict.fromkeys(["loop_compile_ms", "loop_plan_mb",
                                    "loop_step_ms", "loop_peak_gib"], "-")
            if layout[0] > 1:
                loop_report, _ = compile_plan(args, layout, plan, loop=True)
                if loop_report is not None:
                    loop_sim = simulate(args, plan, world)
                    looped = {
                        "loop_compile_ms": round(loop_report["compile_ms"]),
                        "loop_plan_mb": round(os.path.getsize(plan) / 1e6, 1),
                        "loop_step_ms": round(loop_sim["step_ms"], 1),
                        "loop_peak_gib": round(
                            loop_sim["memory"]["device_bytes"] / 2 ** 30, 1),
                    }
            rows[-1].update(looped)
            print("%s: %d tokens/s per GPU" % (
                rows[-1]["layout"], rows[-1]["tokens_per_s_per_gpu"]),
                file=sys.stderr)
    bench_report.print_table(COLUMNS, rows)
    info = bench_report.machine()
    print()
    print("Compiled and simulated on %s." % bench_report.describe(info))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "pp_scaling", {
            "model": MODEL, "global_batch": GLOBAL_BATCH,
            "pipeline": PIPELINE, "links": tp_scaling.LINKS},
            info, bench_report.now(), rows)


if __name__ == "__main__":
    main()
