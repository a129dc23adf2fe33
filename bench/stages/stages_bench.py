#!/usr/bin/python3
"""Measured model-state bytes and bytes sent per ZeRO stage against the
closed-form figures of docs/design.md#zero-stages-and-their-formulas.

The GPT-2 of bench/common/bench_model.py is compiled by `zero-compile` at
stages 0-3 for N = 2 and 4 in-process ranks, with fp32 Adam (K = 8: the
parameter is its own master) and with bf16 mixed precision (K = 12: fp32
master, m and v), both ZeRO thresholds 0 (`shard-min-size=0
stage3-param-persistence-threshold=0`); stage 3 also with
`stage3-max-reuse-distance=0`, which gathers every parameter again for the
backward pass. `zero-run` trains each plan for two steps; every figure in
the table is read from its report (what the ranks measured), the formula
next to it is computed here from the parameter shapes alone.

Ψ is the parameter count; Ψp counts each parameter padded to a multiple of
N (a partitioned tensor is flattened and padded so its N shards are equal):
sharded terms use Ψp, full copies Ψ. With p and g the bytes of a parameter
and a gradient (4 and 4 in fp32, 2 and 2 in bf16), model states per rank
are (p + g + K)Ψ at stage 0, (p + g)Ψ + KΨp/N at stage 1, pΨ + (g + K)Ψp/N
at stage 2 and (p + g + K)Ψp/N at stage 3. Bytes sent per rank per step are
2Ψp·p·(N-1)/N at stages 0-2 and at stage 3 with the default reuse distance
(the forward's gathered copy serves the backward), (2Ψp + Ψp_bwd)·p·(N-1)/N
at stage 3 with reuse distance 0, where Ψ_bwd leaves out the parameters the
backward never reads (biases, layer-norm betas, the position embedding);
on top of these every rank sends its share of the loss's 4-byte all-reduce.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/stages -- --csv=$PWD/bench/results/stages.csv \
      --json=$PWD/bench/results/stages.json
  stages_bench.py ZERO_COMPILE ZERO_RUN [--csv FILE] [--json FILE]
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
import bench_model  # noqa: E402
import bench_report  # noqa: E402

MIB = 1024.0 * 1024.0
THRESHOLDS = "shard-min-size=0 stage3-param-persistence-threshold=0"
# Bytes of a parameter and of a gradient, K bytes of optimizer state.
PRECISIONS = [
    {"name": "fp32", "pipeline": "", "p": 4, "g": 4, "k": 8},
    {"name": "bf16", "pipeline": " precision=bf16", "p": 2, "g": 2, "k": 12},
]
# (stage, stage3_max_reuse_distance or None for the default).
CASES = [(0, None), (1, None), (2, None), (3, None), (3, 0)]
WORLDS = [2, 4]
LOSS_BYTES = 4

COLUMNS = [
    ("precision", "precision (K)"),
    ("ranks", "N"),
    ("stage", "stage"),
    ("psi_padded", "Ψp"),
    ("states_formula_text", "states formula"),
    ("states_bytes", "states B/rank (measured)"),
    ("states_formula_bytes", "formula B"),
    ("states_ratio", "measured / formula"),
    ("states_check", "states vs formula"),
    ("bucket_mib", "bucket buffers MiB"),
    ("peak_mib", "peak MiB/rank (measured)"),
    ("sent_formula_text", "sent formula"),
    ("sent_bytes_rank0", "sent B/step rank 0 (measured)"),
    ("sent_formula_bytes", "formula B"),
    ("sent_check", "sent vs formula"),
]


def numel(shape):
    count = 1
    for dim in shape:
        count *= dim
    return count


def padded(count, world):
    return -(-count // world) * world


def backward_reads(name):
    """Whether the backward pass reads a parameter: a bias's gradient is a
    sum of the output gradient, layer norm's reads gamma but not beta, and
    the position embedding's is a copy of the output gradient."""
    return not name.endswith(".bias") and name != "wpe.weight"


def parameter_counts(plan, world):
    params = [v for v in plan["variables"] if v["role"] == "param"]
    sizes = [(v["name"], numel(v.get("logical_shape", v["global_shape"])))
             for v in params]
    psi = sum(n for _, n in sizes)
    psi_padded = sum(padded(n, world) for _, n in sizes)
    bwd_padded = sum(padded(n, world) for name, n in sizes
                     if backward_reads(name))
    bwd = sum(n for name, n in sizes if backward_reads(name))
    # The compiler's own flat partitions, to confirm the padding rule.
    plan_padded = sum(numel(v["global_shape"]) for v in plan["variables"]
                      if v["name"].endswith(".exp_avg"))
    return psi, psi_padded, bwd, bwd_padded, plan_padded


def states_formula(precision, stage, psi, psi_padded, world):
    p, g, k = precision["p"], precision["g"], precision["k"]
    return {
        0: ((p + g + k) * psi, "%dΨ" % (p + g + k)),
        1: ((p + g) * psi + k * psi_padded // world,
            "%dΨ + %dΨp/N" % (p + g, k)),
        2: (p * psi + (g + k) * psi_padded // world,
            "%dΨ + %dΨp/N" % (p, g + k)),
        3: ((p + g + k) * psi_padded // world, "%dΨp/N" % (p + g + k)),
    }[stage]


def sent_formula(precision, stage, reuse, psi, psi_padded, bwd_padded,
                 world):
    p = precision["p"]
    if stage == 3 and reuse == 0:
        moved, text = 2 * psi_padded + bwd_padded, "(2Ψp + Ψp_bwd)·%d·(N-1)/N"
    else:
        moved = 2 * (psi if stage == 0 else psi_padded)
        text = "2Ψ%s·%%d·(N-1)/N" % ("" if stage == 0 else "p")
    total = moved * p * (world - 1)
    if total % world:
        bench_report.fail("traffic formula is not a whole byte count")
    return total // world, text % p


def loss_share(rank, world):
    """Bytes a rank sends in the loss's 0-D all-reduce: rank 0 owns the
    element and sends the sum to the others; each other rank sends its
    partial to rank 0."""
    if world == 1:
        return 0
    return LOSS_BYTES * (world - 1) if rank == 0 else LOSS_BYTES


def same_on_every_rank(values, what, tag):
    if len(set(values)) != 1:
        print("note: %s differs across ranks at %s: %s" % (what, tag, values))
    return max(values)


def describe_difference(measured, formula):
    if measured == formula:
        return "exact"
    difference = measured - formula
    if abs(difference) < 1024:
        return "%+d B" % difference
    return "%+.2f MiB" % (difference / MIB)


def measure(args, work, precision, world, stage, reuse):
    tag = "%s N=%d stage %d%s" % (precision["name"], world, stage,
                                  "" if reuse is None else " reuse 0")
    name = "%s_n%d_s%d%s" % (precision["name"], world, stage,
                             "" if reuse is None else "_r0")
    plan_path = os.path.join(work, name + ".zplan")
    run_path = os.path.join(work, name + ".run.json")
    pipeline = THRESHOLDS + precision["pipeline"]
    if reuse is not None:
        pipeline += " stage3-max-reuse-distance=%d" % reuse
    bench_report.run([args.zero_compile] + bench_model.GPT2_FLAGS + [
        "--world=%d" % world, "--stage=%d" % stage, "--pipeline=" + pipeline,
        "--report=none", "-o", plan_path])
    bench_report.run([args.zero_run, plan_path, "--ranks", str(world),
                      "--steps", str(args.steps), "--quiet", "--report-file",
                      run_path])
    plan = bench_report.load_json(plan_path)
    report = bench_report.load_json(run_path)

    psi, psi_padded, bwd, bwd_padded, plan_padded = parameter_counts(
        plan, world)
    if stage > 0 and plan_padded != psi_padded:
        print("note: %s: the plan's flat partitions hold %d elements, "
              "Ψp = %d" % (tag, plan_padded, psi_padded))
    states_bytes, states_text = states_formula(precision, stage, psi,
                                               psi_padded, world)
    sent_bytes, sent_text = sent_formula(precision, stage, reuse, psi,
                                         psi_padded, bwd_padded, world)

    peaks = report["peak_bytes"]
    states = same_on_every_rank([r["model_states"] for r in peaks],
                                "model states", tag)
    buckets = max(r["by_role"].get("comm_buffer", 0) for r in peaks)
    peak = max(r["total"] for r in peaks)
    sent = [sum(kinds.values()) for kinds in report["comm_bytes"]["per_rank"]]
    steps_sent = {sum(kinds.values())
                  for kinds in report["comm_bytes"]["per_step"]}
    if len(steps_sent) != 1:
        print("note: %s: rank 0 sends different bytes per step: %s" % (
            tag, sorted(steps_sent)))
    excess = [sent[rank] - sent_bytes for rank in range(world)]
    exact_sent = all(excess[rank] == loss_share(rank, world)
                     for rank in range(world))
    if exact_sent:
        sent_check = "exact + loss all-reduce (%d B rank 0, %d B others)" % (
            loss_share(0, world), loss_share(1, world))
    else:
        sent_check = "differs: %s B per rank" % excess

    row = {
        "precision": "%s (K=%d)" % (precision["name"], precision["k"]),
        "ranks": world,
        "stage": "%d%s" % (stage, "" if reuse is None else ", reuse 0"),
        "psi": psi,
        "psi_padded": psi_padded,
        "psi_bwd": bwd,
        "psi_bwd_padded": bwd_padded,
        "states_formula_text": states_text,
        "states_bytes": states,
        "states_formula_bytes": states_bytes,
        "states_ratio": "%.6f" % (states / states_bytes),
        "states_check": describe_difference(states, states_bytes),
        "bucket_mib": round(buckets / MIB, 2),
        "peak_mib": round(peak / MIB, 2),
        "sent_formula_text": sent_text,
        "sent_bytes_rank0": sent[0],
        "sent_bytes_per_rank": sent,
        "sent_formula_bytes": sent_bytes,
        "sent_exact_plus_loss": exact_sent,
        "sent_check": sent_check,
        "peak_by_role_rank0": peaks[0]["by_role"],
        "pipeline": pipeline,
    }
    print("%-26s states %12d (formula %12d)  sent %10d (formula %10d)" % (
        tag, states, states_bytes, sent[0], sent_bytes), flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv", help="write the table as CSV here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--steps", type=int, default=2,
                        help="training steps per run (at least 1)")
    args = parser.parse_args()
    if args.steps < 1:
        bench_report.fail("--steps must be at least 1, got %d" % args.steps)
    for tool in [args.zero_compile, args.zero_run]:
        if not os.access(tool, os.X_OK):
            bench_report.fail("not an executable: %s" % tool)

    info, date = bench_report.machine(), bench_report.now()
    work = tempfile.mkdtemp(prefix="stages_bench_")
    rows = [measure(args, work, precision, world, stage, reuse)
            for precision in PRECISIONS for world in WORLDS
            for stage, reuse in CASES]

    first = rows[0]
    padding = "; ".join(
        "N = %d: Ψp = %s, Ψp_bwd = %s" % (
            row["ranks"], "{:,}".format(row["psi_padded"]),
            "{:,}".format(row["psi_bwd_padded"]))
        for row in rows if row["stage"] == "3, reuse 0" and
        row["precision"] == first["precision"])
    print()
    print("Ψ = %s parameters; Ψ_bwd = %s (all but the biases, layer-norm "
          "betas and wpe, which the backward never reads); %s." % (
              "{:,}".format(first["psi"]), "{:,}".format(first["psi_bwd"]),
              padding))
    print()
    bench_report.print_table(COLUMNS, rows)
    print("\n%s; thresholds 0; %d steps per run, in-process ranks. %s; %s." % (
        bench_model.GPT2_DESCRIPTION, args.steps,
        bench_report.describe(info), date))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS + [
            ("psi", ""), ("psi_bwd", ""), ("psi_bwd_padded", ""),
            ("sent_exact_plus_loss", ""), ("pipeline", "")], rows)
    if args.json:
        bench_report.write_json(args.json, "stages", {
            "model": bench_model.GPT2_FLAGS, "steps": args.steps,
            "backend": "inprocess"}, info, date, rows)


if __name__ == "__main__":
    main()
