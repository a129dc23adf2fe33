#!/usr/bin/python3
"""zero-sim's scaling tables: GPT-2 1.5B and 10B (the DeepSpeed tutorial's
shapes) and a 175B model from 8 to 1,024 GPUs, flat ZeRO stages 1-3 against
hierarchical stage 3 (MiCS, ZeRO++ hpZ), on DGX H100 nodes.

Each configuration is compiled by zero-compile (bf16 with fp32 masters,
Adam, per-block activation checkpointing, overlap_comm, the bucket sizes
below) for its N and simulated by zero-sim on nodes of 8 GPUs. Weak
scaling: every GPU trains `micro` sequences a step, so the global batch
grows with N. Columns: step time, tokens/s per GPU, model FLOPs
utilization (6 x parameters x tokens plus attention's 12 x layers x
hidden x sequence per token, over the bf16 dense peak), the communication
the compute does not hide, the bytes per step that leave a GPU's node (a
flat ring over nodes of 8 sends 1/8 of its bytes over the network), the
planned memory per GPU and whether it fits 80 GiB, and the efficiency:
tokens/s per GPU against the same layout's at N = 8.

A second table slows the network to 400 Gbit/s per node (6.25 GB/s per
GPU, as on clusters with one NIC per node) and compares flat stage 3 with
MiCS for the 10B model. A third puts the ZeRO paper's hardware in (DGX-2:
16 V100s per node, NVSwitch, 800 Gbit/s per node) for the 10B model at
stage 2.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/sim:scaling -- \
      --csv=$PWD/bench/results/sim_scaling.csv \
      --json=$PWD/bench/results/sim_scaling.json
  sim_scaling.py ZERO_COMPILE ZERO_SIM [--csv FILE] [--json FILE]
      [--worlds 8,16,...,1024] [--models 1.5B,10B,175B]
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
import bench_report  # noqa: E402

VOCAB = 50257
# micro: sequences per GPU per step; mics: MiCS's shard group (a node for
# the models whose states fit one, 64 GPUs for 175B's 2.8 TB of states).
MODELS = {
    "1.5B": dict(layers=48, hidden=1600, heads=16, seq=1024, micro=8,
                 mics=8),
    "10B": dict(layers=50, hidden=4096, heads=32, seq=1024, micro=4,
                mics=8),
    "175B": dict(layers=96, hidden=12288, heads=96, seq=2048, micro=1,
                 mics=64),
}
# DeepSpeed's reduce and all-gather buckets (5e8 elements); a prefetch and
# a live-parameter budget large enough for 175B's layers to prefetch.
PIPELINE = ("precision=bf16 overlap-comm=true reduce-bucket-size=500000000 "
            "allgather-bucket-size=500000000 "
            "stage3-prefetch-bucket-size=1500000000 "
            "stage3-max-live-parameters=3000000000")
H100_LINKS = "intra=450GB/s,inter=50GB/s,intra_latency=2us,inter_latency=6us"
H100_PER_NODE = 8
H100_PEAK = 989.4e12
SLOW_LINKS = ("intra=450GB/s,inter=6.25GB/s,intra_latency=2us,"
              "inter_latency=6us")
V100_LINKS = ("intra=150GB/s,inter=6.25GB/s,intra_latency=2us,"
              "inter_latency=6us")
V100_PER_NODE = 16
V100_PEAK = 125e12

COLUMNS = [
    ("model", "model"),
    ("ranks", "GPUs"),
    ("layout", "layout"),
    ("step_ms", "step ms"),
    ("tokens_per_s_per_gpu", "tokens/s per GPU"),
    ("mfu", "MFU"),
    ("comm_exposed_ms", "comm exposed ms"),
    ("network_gb", "network GB/GPU"),
    ("memory_gib", "memory GiB/GPU"),
    ("fits", "fits 80 GiB"),
    ("efficiency", "efficiency vs 8 GPUs"),
]
V100_COLUMNS = COLUMNS + [("tflops_per_gpu", "TFLOP/s per GPU")]


def parameters(m):
    h, layers = m["hidden"], m["layers"]
    return layers * (12 * h * h + 13 * h) + 2 * h + (VOCAB + m["seq"]) * h


def model_flops_per_token(m):
    return 6 * parameters(m) + 12 * m["layers"] * m["hidden"] * m["seq"]


def layouts(m, world):
    out = [("stage %d" % s, s, "") for s in [1, 2, 3]]
    if world > m["mics"] and world % m["mics"] == 0:
        out.append(("stage 3, MiCS %d" % m["mics"], 3,
                    "mics-shard-size=%d" % m["mics"]))
    if world > H100_PER_NODE:
        out.append(("stage 3, hpZ %d" % H100_PER_NODE, 3,
                    "hpz-partition-size=%d" % H100_PER_NODE))
    # ZeRO++'s qwZ: the gathers move 8-bit codes in blocks of 2048.
    out.append(("stage 3, qwZ", 3, "zero-quantized-weights=true"))
    return out


def topology(world, per_node, links):
    nodes = max(1, world // per_node)
    return "nodes=%d,ranks_per_node=%d,%s" % (nodes, min(world, per_node),
                                              links)


def simulate(args, work, name, m, world, stage, extra, per_node, links,
             device):
    plan = os.path.join(work, "plan.zplan")
    bench_report.run([
        args.zero_compile, "--num-layers=%d" % m["layers"],
        "--hidden-size=%d" % m["hidden"],
        "--num-attention-heads=%d" % m["heads"],
        "--seq-length=%d" % m["seq"], "--vocab-size=%d" % VOCAB,
        "--batch-size=%d" % (m["micro"] * world), "--world=%d" % world,
        "--stage=%d" % stage, "--checkpoint-activations",
        "--pipeline=%s %s" % (PIPELINE, extra), "--report=none", "-o", plan])
    report = json.loads(bench_report.run([
        args.zero_sim, plan, "--topology", topology(world, per_node, links),
        "--device", device, "--report", "json"]))
    os.remove(plan)
    return report


def row(name, m, world, layout, report, peak):
    step = report["step_ms"] / 1e3
    tokens = m["micro"] * m["seq"] / step
    return {
        "model": name,
        "ranks": world,
        "layout": layout,
        "step_ms": round(report["step_ms"], 1),
        "tokens_per_s_per_gpu": int(round(tokens)),
        "mfu": "%.1f%%" % (100 * tokens * model_flops_per_token(m) / peak),
        "mfu_fraction": round(tokens * model_flops_per_token(m) / peak, 4),
        "tflops_per_gpu": round(report["flops_per_rank"] / step / 1e12, 1),
        "comm_exposed_ms": round(report["comm_exposed_ms"], 1),
        "comm_busy_ms": round(report["comm_busy_ms"], 1),
        "compute_ms": round(report["compute_ms"], 1),
        "network_gb": round(report["comm_bytes"]["network"] / 1e9, 2),
        "sent_gb": round(sum(report["comm_bytes"]["per_axis"]) / 1e9, 2),
        "memory_gib": round(report["memory"]["device_bytes"] / 2 ** 30, 1),
        "fits": report["memory"]["fits"],
        "efficiency": "-",
    }


def add_efficiency(rows):
    base = {}
    for r in rows:
        key = (r["model"], r["layout"])
        if r["ranks"] == 8:
            base[key] = r["tokens_per_s_per_gpu"]
    for r in rows:
        b = base.get((r["model"], r["layout"]))
        if b:
            r["efficiency"] = "%.0f%%" % (100.0 * r["tokens_per_s_per_gpu"] / b)
            r["efficiency_fraction"] = round(r["tokens_per_s_per_gpu"] / b, 4)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_sim")
    parser.add_argument("--csv", help="write the H100 table as CSV here")
    parser.add_argument("--json", help="write both tables as JSON here")
    parser.add_argument("--worlds", default="8,16,32,64,128,256,512,1024")
    parser.add_argument("--models", default="1.5B,10B,175B")
    args = parser.parse_args()
    try:
        worlds = [int(x) for x in args.worlds.split(",")]
    except ValueError:
        bench_report.fail("--worlds takes whole numbers separated by commas, "
                          "got '%s'" % args.worlds)
    for world in worlds:
        if world < 8 or world % 8:
            bench_report.fail("--worlds must be multiples of 8 (whole "
                              "nodes), got %d" % world)
    names = [n for n in args.models.split(",") if n]
    for name in names:
        if name not in MODELS:
            bench_report.fail("model '%s' is not one of %s" % (
                name, ", ".join(MODELS)))

    info, date = bench_report.machine(), bench_report.now()
    work = tempfile.mkdtemp(prefix="sim_scaling_")
    rows = []
    for name in names:
        m = MODELS[name]
        for world in worlds:
            for layout, stage, extra in layouts(m, world):
                report = simulate(args, work, name, m, world, stage, extra,
                                  H100_PER_NODE, H100_LINKS, "h100")
                rows.append(row(name, m, world, layout, report, H100_PEAK))
                print("%-5s N=%-5d %-18s %10.1f ms" % (
                    name, world, layout, report["step_ms"]), flush=True)
    add_efficiency(rows)

    slow_rows = []
    m = MODELS["10B"]
    for world in [w for w in worlds if w >= 16]:
        for layout, extra in [("stage 3", ""),
                              ("stage 3, MiCS 8", "mics-shard-size=8"),
                              ("stage 3, qwZ", "zero-quantized-weights=true")]:
            report = simulate(args, work, "10B", m, world, 3, extra,
                              H100_PER_NODE, SLOW_LINKS, "h100")
            slow_rows.append(row("10B", m, world, layout, report, H100_PEAK))

    v100_rows = []
    m = dict(MODELS["10B"])
    for world in [16, 64, 128, 256, 400]:
        report = simulate(args, work, "10B", m, world, 2, "", V100_PER_NODE,
                          V100_LINKS, "v100")
        v100_rows.append(row("10B", m, world, "stage 2", report, V100_PEAK))
    base = v100_rows[0]["tokens_per_s_per_gpu"]
    for r in v100_rows:
        r["efficiency"] = "%.0f%% (vs 16)" % (
            100.0 * r["tokens_per_s_per_gpu"] / base)
    shutil.rmtree(work, ignore_errors=True)

    print()
    bench_report.print_table(COLUMNS, rows)
    print("\nDGX H100 nodes of 8 (%s per GPU); bf16, Adam, activation "
          "checkpointing; %s; zero-sim's h100 preset. Micro-batch per GPU: %s."
          % (H100_LINKS, PIPELINE, ", ".join(
              "%s %d x %d tokens" % (n, MODELS[n]["micro"], MODELS[n]["seq"])
              for n in names)))
    print()
    bench_report.print_table(COLUMNS[:-1], slow_rows)
    print("\nThe same H100 nodes with 400 Gbit/s per node (%s per GPU): the "
          "10B model at stage 3, flat against MiCS within a node." %
          SLOW_LINKS)
    print()
    bench_report.print_table(V100_COLUMNS, v100_rows)
    print("\nDGX-2 nodes of 16 V100s (%s per GPU), the 10B model at stage "
          "2 without model parallelism, 4 sequences per GPU; TFLOP/s counts "
          "the recomputed forward too." % V100_LINKS)
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "sim_scaling", {
            "models": {n: MODELS[n] for n in names}, "vocab": VOCAB,
            "pipeline": PIPELINE, "h100_links": H100_LINKS,
            "v100_links": V100_LINKS, "worlds": worlds}, info, date,
            {"h100": rows, "slow_network": slow_rows, "v100": v100_rows})


if __name__ == "__main__":
    main()
