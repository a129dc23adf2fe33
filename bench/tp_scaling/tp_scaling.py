#!/usr/bin/python3
"""Tensor parallelism with ZeRO on the data axis, simulated on DGX H100
nodes: the DeepSpeed tutorial's 10B GPT-2 and GPT-3 175B at tp = 1, 2, 4
and 8 (Megatron's layout from `zero-compile --model-parallel-size`, on a
[world / tp, tp] placement: the model axis is tp consecutive ranks, inside
a node) with ZeRO stages 1-3 on the data axis, against flat ZeRO-3 (tp =
1, stage 3).

Each configuration is compiled by zero-compile (bf16 with fp32 masters,
Adam, every block checkpointed, overlap_comm, DeepSpeed's 5e8 buckets,
stage-3 persistence threshold 0 so that the model-state formula is exact)
and simulated by zero-sim on nodes of 8 H100s (NVLink 450 GB/s, one
400 Gbit/s NIC per GPU). The micro-batch is one sequence per data-parallel
rank, as in the tutorial; a tp > 1 layout runs again at tp sequences per
data-parallel rank (one sequence per GPU: the tokens per GPU, and the
global batch, of flat ZeRO at micro-batch 1). A refusal is listed.

Per row: the simulated step time, tokens/s per GPU, model FLOPs
utilization (6 x parameters x tokens plus attention's 12 x layers x hidden
x sequence per token, over the bf16 dense peak), the FLOPs a GPU computes
per step (recomputation and whatever the layout repeats included), the
communication the
compute does not hide, bytes sent per GPU and step on the data axis and
the model axis and the communication time of each (the NIC's and
NVLink's), the bytes that leave the node, Megatron's model-axis bytes for
the same micro-batch (formula below), the model states per GPU as planned
and by docs/design.md#zero-on-the-data-axis from the shapes, the planned
peak and whether it fits 80 GiB, and the compile time and plan size.

Megatron's model-axis bytes (no sequence parallelism, vocabulary-parallel
cross entropy, full activation checkpointing): per layer 2 all-reduces of
the activations in the forward, 2 in the recomputed forward and 2 in the
backward, plus the embedding's and the LM head's: (6 L + 2) all-reduces of
A = b s h x 2 bytes, each sending 2 A (tp - 1) / tp per rank. zero-compile's
cross entropy is vocabulary-parallel too: only each row's max, sum of
exponentials and label logit cross the model axis.

The 175B model at (dp, tp) = (128, 8) is the compile-time goal (under 1 s,
a plan under 10 MB): its stage-1 and stage-3 compiles are repeated
--goal-repeats times and the fastest kept, with the slowest passes.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/tp_scaling -- \\
      --csv=$PWD/bench/results/tp_scaling.csv \\
      --json=$PWD/bench/results/tp_scaling.json
  tp_scaling.py ZERO_COMPILE ZERO_SIM [--csv FILE] [--json FILE]
      [--worlds 64,256,1024] [--models 10B,175B] [--tps 1,2,4,8]
      [--stages 1,2,3] [--goal-repeats 3]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "common"))
sys.path.insert(0, os.path.join(_HERE, "..", "..", "examples", "gpt2"))
import bench_report  # noqa: E402
import tensor_parallel  # noqa: E402

# GPT-2's 50257 padded to a multiple of 128 x 8 (Megatron pads to 128 x tp),
# so that every tp here splits it.
VOCAB = 50304
MODELS = {
    "10B": dict(layers=50, hidden=4096, heads=32, seq=1024),
    "175B": dict(layers=96, hidden=12288, heads=96, seq=2048),
}
PIPELINE = ("precision=bf16 overlap-comm=true reduce-bucket-size=500000000 "
            "allgather-bucket-size=500000000 "
            "stage3-prefetch-bucket-size=1500000000 "
            "stage3-max-live-parameters=3000000000 "
            "stage3-param-persistence-threshold=0")
LINKS = "intra=450GB/s,inter=50GB/s,intra_latency=2us,inter_latency=6us"
PER_NODE = 8
PEAK = 989.4e12  # H100 SXM bf16 dense
# bf16 parameters and gradients, Adam with fp32 master, m and v.
P_BYTES, K_BYTES = 2, 12
GOAL = dict(model="175B", world=1024, tp=8, compile_s=1.0, plan_mb=10.0)

COLUMNS = [
    ("model", "model"),
    ("gpus", "GPUs"),
    ("tp", "tp"),
    ("dp", "dp"),
    ("stage", "ZeRO"),
    ("seqs_per_dp_rank", "seqs per DP rank"),
    ("step_ms", "step ms"),
    ("tokens_per_s_per_gpu", "tokens/s per GPU"),
    ("mfu", "MFU"),
    ("tflop_per_gpu", "TFLOP per GPU"),
    ("comm_exposed_ms", "comm exposed ms"),
    ("data_axis_gb", "data axis GB"),
    ("data_axis_ms", "data axis ms"),
    ("model_axis_gb", "model axis GB"),
    ("model_axis_ms", "model axis ms"),
    ("megatron_model_axis_gb", "Megatron model axis GB"),
    ("network_gb", "network GB"),
    ("model_states_gib", "model states GiB (plan)"),
    ("model_states_formula_gib", "formula GiB"),
    ("ir_equals_formula", "IR = formula"),
    ("peak_gib", "peak GiB"),
    ("fits", "fits 80 GiB"),
    ("compile_ms", "compile ms"),
    ("plan_mb", "plan MB"),
]


def tensors(m, vocab=VOCAB):
    """(elements, split on the model axis) of GPT-2's parameters in the
    builder's order (examples/gpt2/tensor_parallel.py's table)."""
    return [(n, split) for _, n, split in tensor_parallel.parameters(
        m["layers"], m["hidden"], vocab, m["seq"])]


def parameters(m):
    return sum(n for n, _ in tensors(m))


def model_state_formula(m, dp, tp, stage):
    """docs/design.md#zero-on-the-data-axis: a split tensor's model part
    padded to a multiple of dp, a replicated one padded to tp dp."""
    ts = tensors(m)
    rank = sum(n // tp if split else n for n, split in ts)
    shard = sum(-(-(n // tp) // dp) if split else -(-n // (tp * dp))
                for n, split in ts)
    p, k = P_BYTES, K_BYTES
    return {1: 2 * p * rank + k * shard,
            2: p * rank + (p + k) * shard,
            3: (2 * p + k) * shard}[stage]


def megatron_model_axis_bytes(m, micro, tp):
    """Bytes a rank sends on the model axis per step in Megatron's layout:
    (6 L + 2) all-reduces of the b s h activations (bf16)."""
    if tp == 1:
        return 0
    activation = micro * m["seq"] * m["hidden"] * 2
    return (6 * m["layers"] + 2) * 2 * activation * (tp - 1) / tp


def logits_gather_bytes(m, micro, tp):
    """What zero-compile's cross entropy gathers instead: the bf16 logits
    over the model axis."""
    return micro * m["seq"] * VOCAB * 2 * (tp - 1) / tp


def model_flops_per_token(m):
    return (6 * parameters(m) +
            12 * m["layers"] * m["hidden"] * m["seq"])


def compile_command(args, m, world, tp, stage, batch, plan):
    return [args.zero_compile, "--num-layers=%d" % m["layers"],
            "--hidden-size=%d" % m["hidden"],
            "--num-attention-heads=%d" % m["heads"],
            "--seq-length=%d" % m["seq"], "--vocab-size=%d" % VOCAB,
            "--world=%d" % world, "--model-parallel-size=%d" % tp,
            "--stage=%d" % stage, "--batch-size=%d" % batch,
            "--checkpoint-activations", "--pipeline=%s" % PIPELINE,
            "--report=json", "-o", plan]


def short_error(line):
    """zero-compile's error line with a placement's rank list shortened."""
    return re.sub(r"\[(\d+), (\d+), (?:\d+, )+(\d+)\]",
                  r"[\1, \2, ..., \3]", line)


def compile_plan(args, m, world, tp, stage, batch, plan):
    """The compile report and wall seconds, or None and the error line."""
    start = time.monotonic()
    done = subprocess.run(compile_command(args, m, world, tp, stage, batch,
                                          plan),
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return None, wall, short_error(lines[-1]) if lines else "no output"
    return json.loads(done.stdout), wall, None


def simulate(args, plan, world):
    topology = "nodes=%d,ranks_per_node=%d,%s" % (
        max(1, world // PER_NODE), min(world, PER_NODE), LINKS)
    return json.loads(bench_report.run([
        args.zero_sim, plan, "--topology", topology, "--device", "h100",
        "--report", "json"]))


def row(name, m, world, tp, stage, micro, report, sim, plan_bytes):
    dp = world // tp
    step = sim["step_ms"] / 1e3
    tokens = dp * micro * m["seq"] / step / world
    per_axis = sim["comm_bytes"]["per_axis"]
    ms_axis = sim["comm_ms_by_axis"]
    model_axis = per_axis[1] if tp > 1 else 0
    formula = model_state_formula(m, dp, tp, stage)
    return {
        "model": name,
        "gpus": world,
        "tp": tp,
        "dp": dp,
        "stage": stage,
        "layout": "flat ZeRO-%d" % stage if tp == 1 else
                  "tp=%d, ZeRO-%d on the data axis" % (tp, stage),
        "seqs_per_dp_rank": micro,
        "step_ms": round(sim["step_ms"], 1),
        "tokens_per_s_per_gpu": int(round(tokens)),
        "mfu": "%.1f%%" % (100 * tokens * model_flops_per_token(m) / PEAK),
        "mfu_fraction": round(tokens * model_flops_per_token(m) / PEAK, 4),
        "compute_ms": round(sim["compute_ms"], 1),
        "tflop_per_gpu": round(sim["flops_per_rank"] / 1e12, 2),
        "comm_busy_ms": round(sim["comm_busy_ms"], 1),
        "comm_exposed_ms": round(sim["comm_exposed_ms"], 1),
        "data_axis_gb": round(per_axis[0] / 1e9, 2),
        "data_axis_ms": round(ms_axis[0], 1),
        "model_axis_gb": round(model_axis / 1e9, 2),
        "model_axis_ms": round(ms_axis[1], 1) if tp > 1 else 0.0,
        "megatron_model_axis_gb": round(
            megatron_model_axis_bytes(m, micro, tp) / 1e9, 2),
        "logits_gather_gb": round(logits_gather_bytes(m, micro, tp) / 1e9,
                                  3),
        "network_gb": round(sim["comm_bytes"]["network"] / 1e9, 2),
        "comm_bytes_by_kind": {k: sim["comm_bytes"][k] for k in
                               ["all_reduce", "reduce_scatter",
                                "all_gather", "all_to_all"]},
        "collectives": sim["collectives"],
        "model_states_bytes": report["plan"]["memory_plan"][
            "model_state_bytes"],
        "model_states_ir_bytes": report["model_state_bytes_per_rank"],
        "model_states_formula_bytes": formula,
        "model_states_gib": round(
            report["plan"]["memory_plan"]["model_state_bytes"] / 2 ** 30, 1),
        "model_states_formula_gib": round(formula / 2 ** 30, 1),
        "ir_equals_formula": report["model_state_bytes_per_rank"] == formula,
        "peak_bytes": sim["memory"]["device_bytes"],
        "peak_gib": round(sim["memory"]["device_bytes"] / 2 ** 30, 1),
        "fits": sim["memory"]["fits"],
        "compile_ms": round(report["compile_ms"]),
        "plan_bytes": plan_bytes,
        "plan_mb": round(plan_bytes / 1e6, 1),
        "params": report["params"],
        "ops": report["ops"],
    }


def measure_goal(args, work, repeats):
    """175B at (dp, tp) = (128, 8): the fastest of `repeats` compiles at
    stages 1 and 3, at one sequence per data-parallel rank and, if that is
    refused, at tp per data-parallel rank."""
    m = MODELS[GOAL["model"]]
    world, tp = GOAL["world"], GOAL["tp"]
    out = []
    for stage in [1, 3]:
        for micro in [1, tp]:
            plan = os.path.join(work, "goal.zplan")
            best = None
            for _ in range(repeats):
                report, wall, error = compile_plan(
                    args, m, world, tp, stage, world // tp * micro, plan)
                if report is None:
                    best = {"stage": stage, "seqs_per_dp_rank": micro,
                            "refused": error, "wall_s": round(wall, 2)}
                    break
                size = os.path.getsize(plan)
                os.remove(plan)
                if best is None or report["compile_ms"] < best["compile_ms"]:
                    passes = sorted(report["pass_ms"],
                                    key=lambda p: -p["ms"])
                    best = {"stage": stage, "seqs_per_dp_rank": micro,
                            "compile_ms": round(report["compile_ms"], 1),
                            "wall_s": round(wall, 2),
                            "plan_bytes": size,
                            "plan_mb": round(size / 1e6, 2),
                            "ops": report["ops"],
                            "passes_ms": [
                                {"pass": p["pass"], "ms": round(p["ms"], 1)}
                                for p in passes[:6]]}
            best["meets_goal"] = (
                "compile_ms" in best and
                best["compile_ms"] < GOAL["compile_s"] * 1e3 and
                best["plan_mb"] < GOAL["plan_mb"])
            out.append(best)
            print("goal: 175B (128, 8) stage %d, %d per DP rank: %s" % (
                stage, micro, best.get("refused") or "%.0f ms, %.2f MB" % (
                    best["compile_ms"], best["plan_mb"])), flush=True)
            if "refused" not in best:
                break
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_sim")
    parser.add_argument("--csv", help="write the table as CSV here")
    parser.add_argument("--json", help="write the table as JSON here")
    parser.add_argument("--worlds", default="64,256,1024")
    parser.add_argument("--models", default="10B,175B")
    parser.add_argument("--tps", default="1,2,4,8")
    parser.add_argument("--stages", default="1,2,3")
    parser.add_argument("--goal-repeats", type=int, default=3,
                        help="compiles of the 175B (128, 8) goal per stage "
                        "(0 leaves the goal out)")
    args = parser.parse_args()
    try:
        worlds = [int(x) for x in args.worlds.split(",")]
        tps = [int(x) for x in args.tps.split(",")]
        stages = [int(x) for x in args.stages.split(",")]
    except ValueError:
        bench_report.fail("--worlds, --tps and --stages take whole numbers "
                          "separated by commas")
    for world in worlds:
        if world < PER_NODE or world % PER_NODE:
            bench_report.fail("--worlds must be whole nodes of %d, got %d" %
                              (PER_NODE, world))
    if any(tp not in (1, 2, 4, 8) for tp in tps):
        bench_report.fail("--tps must be 1, 2, 4 or 8 (within a node)")
    if any(s not in (1, 2, 3) for s in stages):
        bench_report.fail("--stages must be 1, 2 or 3")
    names = [n for n in args.models.split(",") if n]
    for name in names:
        if name not in MODELS:
            bench_report.fail("model '%s' is not one of %s" % (
                name, ", ".join(MODELS)))

    info, date = bench_report.machine(), bench_report.now()
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="tp_scaling_")
    plan = os.path.join(work, "plan.zplan")
    rows, refused = [], []
    try:
        # tp > 1 also at tp sequences per data-parallel rank: one per GPU,
        # the tokens per GPU (and global batch) of the flat rows.
        configs = [(name, world, tp, stage, micro)
                   for name in names for world in worlds for tp in tps
                   for stage in stages
                   for micro in ([1] if tp == 1 else [1, tp])]
        for name, world, tp, stage, micro in configs:
            m = MODELS[name]
            report, wall, error = compile_plan(
                args, m, world, tp, stage, world // tp * micro, plan)
            if report is None:
                refused.append({"model": name, "gpus": world, "tp": tp,
                                "stage": stage, "seqs_per_dp_rank": micro,
                                "error": error})
                print("%-4s N=%-4d tp=%d ZeRO-%d %d per DP rank: refused: %s"
                      % (name, world, tp, stage, micro, error), flush=True)
                continue
            size = os.path.getsize(plan)
            sim = simulate(args, plan, world)
            os.remove(plan)
            r = row(name, m, world, tp, stage, micro, report, sim, size)
            rows.append(r)
            print("%-4s N=%-4d tp=%d ZeRO-%d %d per DP rank: "
                  "%9.1f ms  %6d tok/s/GPU  model axis %7.1f GB "
                  "peak %6.1f GiB  (compile %.1f s)" % (
                      name, world, tp, stage, micro, r["step_ms"],
                      r["tokens_per_s_per_gpu"], r["model_axis_gb"],
                      r["peak_gib"], wall), flush=True)
        goal = (measure_goal(args, work, args.goal_repeats)
                if args.goal_repeats > 0 and GOAL["model"] in names else [])
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print()
    bench_report.print_table(COLUMNS, rows)
    print("\nDGX H100 nodes of 8 (%s per GPU), zero-sim's h100 preset; bf16 "
          "with fp32 masters, Adam, every block checkpointed; %s; vocabulary "
          "%d. GB = 1e9 bytes sent per GPU and step; model states and peak "
          "per GPU. Megatron model axis: (6L + 2) all-reduces of the b s h "
          "activations." % (LINKS, PIPELINE, VOCAB))
    if refused:
        print("\nRefused by zero-compile (%d):" % len(refused))
        for r in refused:
            print("  %s N=%d tp=%d ZeRO-%d, %d per DP rank: %s" % (
                r["model"], r["gpus"], r["tp"], r["stage"],
                r["seqs_per_dp_rank"], r["error"]))
    for name in names:
        for world in worlds:
            flat = [r for r in rows if r["model"] == name and
                    r["gpus"] == world and r["tp"] == 1 and r["stage"] == 3]
            # At the same tokens per GPU: one sequence per GPU.
            tp8 = [r for r in rows if r["model"] == name and
                   r["gpus"] == world and r["tp"] == 8 and r["stage"] == 1
                   and r["seqs_per_dp_rank"] == 8]
            if flat and tp8:
                f, t = flat[0], tp8[0]
                print("%s on %d GPUs, one sequence per GPU: tp=8 + ZeRO-1 %s "
                      "flat ZeRO-3 (%d against "
                      "%d tokens/s per GPU; peak %.1f against %.1f GiB)" % (
                          name, world,
                          "beats" if t["tokens_per_s_per_gpu"] >
                          f["tokens_per_s_per_gpu"] else "loses to",
                          t["tokens_per_s_per_gpu"],
                          f["tokens_per_s_per_gpu"], t["peak_gib"],
                          f["peak_gib"]))
    for g in goal:
        print("goal 175B at (128, 8), ZeRO-%d, %d per DP rank: %s" % (
            g["stage"], g["seqs_per_dp_rank"], g.get("refused") or
            "%.0f ms (goal 1000), plan %.2f MB (goal 10): %s; slowest "
            "passes %s" % (g["compile_ms"], g["plan_mb"],
                           "met" if g["meets_goal"] else "missed",
                           ", ".join("%s %.0f ms" % (p["pass"], p["ms"])
                                     for p in g["passes_ms"][:4]))))
    elapsed = time.monotonic() - started
    print("\n%d rows, %d refusals in %.0f s on %s" % (
        len(rows), len(refused), elapsed, bench_report.describe(info)))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS + [("layout", "layout")],
                               rows)
    if args.json:
        bench_report.write_json(args.json, "tp_scaling", {
            "models": {n: dict(MODELS[n], params=parameters(MODELS[n]))
                       for n in names},
            "vocab": VOCAB, "pipeline": PIPELINE, "links": LINKS,
            "ranks_per_node": PER_NODE, "device": "h100",
            "worlds": worlds, "tps": tps, "stages": stages,
            "seconds": round(elapsed)}, info, date,
            {"table": rows, "refused": refused, "compile_goal": goal})


if __name__ == "__main__":
    main()
