"""ZeRO-Offload (optimizer states in host memory) and ZeRO-Infinity (in an
NVMe file) against no offload, on the GPT-2 of bench/stages at ZeRO stage 2,
and at stage 3 with the parameter shards offloaded as well (offload_param),
fp32 Adam, N = 1, 2 and 4 in-process ranks: step time, the peak bytes of
each arena (rank 0, measured, equal to the plan's or the benchmark fails),
the zero-run process's peak resident memory (VmHWM), and the bytes each
rank moves per step against the formula of docs/design.md#offload. Losses
must be identical bit for bit across the modes. Each configuration runs
--repeats times, the runs of a case's modes taken in turns, and the fastest
run that other work on the machine did not slow counts.

The NVMe directory is --nvme-dir (default: a fresh directory under /tmp);
the benchmark first measures its write (with fsync) and read bandwidth.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import bench_model  # noqa: E402
import bench_report  # noqa: E402

MIB = 1024.0 * 1024.0
STAGE = 2
WORLDS = [1, 2, 4]
THRESHOLDS = "shard-min-size=0 stage3-param-persistence-threshold=0"
# At stage 3 "cpu" and "nvme" offload the parameter shards too. "cpu
# overlapped": overlap_comm, the updates on the host during the backward;
# "cpu overlapped, in-step waits" the same plan, its copies back waited for
# within the step instead of by the next forward (docs/runtime.md#deferred-
# transfer-waits).
IN_STEP = "cpu overlapped, in-step waits"
MODES = ["none", "cpu", "cpu overlapped", IN_STEP, "nvme"]
RUN_FLAGS = {IN_STEP: ["--defer-transfer-waits", "off"]}

COLUMNS = [
    ("stage", "stage"),
    ("ranks", "N"),
    ("mode", "offload"),
    ("step_ms", "step ms"),
    ("step_ratio", "vs none"),
    ("device_mib", "device MiB/rank"),
    ("host_mib", "host MiB/rank"),
    ("nvme_mib", "NVMe MiB/rank"),
    ("rss_mib", "process RSS MiB"),
    ("rss_saved_mib", "RSS saved MiB"),
    ("planned_saved_mib", "planned saving MiB"),
    ("moved_mib", "moved MiB/rank/step"),
    ("moved_check", "vs formula"),
    ("transfer_wait_ms", "transfer wait ms"),
]


def disk_bandwidth(directory, mib=256):
    """MB/s writing `mib` MiB with fsync, then reading them back (the page
    cache may serve the read)."""
    path = os.path.join(directory, "bandwidth.bin")
    block = os.urandom(1 << 20)
    begin = time.perf_counter()
    with open(path, "wb") as f:
        for _ in range(mib):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())
    write = mib / (time.perf_counter() - begin)
    begin = time.perf_counter()
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass
    read = mib / (time.perf_counter() - begin)
    os.remove(path)
    return write * MIB / 1e6, read * MIB / 1e6


def pipeline_for(mode, nvme_dir, params=False):
    if mode == IN_STEP:
        mode = "cpu overlapped"
    if mode == "none":
        return ""
    if mode in ("cpu", "cpu overlapped"):
        return (" offload-optimizer=cpu" +
                (" offload-param=cpu" if params else "") +
                (" overlap-comm=true" if mode == "cpu overlapped" else ""))
    text = " offload-optimizer=nvme offload-optimizer-nvme-path=" + nvme_dir
    if params:
        text += " offload-param=nvme offload-param-nvme-path=" + nvme_dir
    return text


def shard_elements(plan):
    """Elements of the rank's flat parameter shards (every tensor is
    partitioned at stage 2 with threshold 0): the sum over Adam's first
    moment variables."""
    total = 0
    for variable in plan["variables"]:
        if variable["name"].endswith(".exp_avg"):
            count = 1
            for dim in variable["local_shape"]:
                count *= dim
            total += count
    return total


def moved_formula(mode, shard):
    """Bytes per rank and step (docs/design.md#offload), fp32 Adam without
    masters: the gradient and parameter shards to the host and the new
    parameter back (12 bytes per element) plus the step (8 bytes, copied
    once for every update); with NVMe also both moments read and written
    (16)."""
    if mode == "none":
        return 0
    per_element = 12 + (16 if mode == "nvme" else 0)
    return per_element * shard + 8


def compile_plan(args, work, world, mode, stage):
    plan_path = os.path.join(work, "n%d_s%d_%s.zplan" % (
        world, stage, mode.replace(" ", "_")))
    pipeline = "stage=%d %s%s" % (stage, THRESHOLDS,
                                  pipeline_for(mode, args.nvme_dir,
                                               stage == 3))
    bench_report.run([args.zero_compile] + bench_model.GPT2_FLAGS + [
        "--world=%d" % world, "--pipeline=" + pipeline, "--report=none",
        "-o", plan_path])
    return plan_path


def measure(args, work, world, plan_path, flags=()):
    """One zero-run of the plan: its report, with mean_step_ms the median
    step after the first (what best_runs ranks by)."""
    report = bench_report.run_report(
        [args.zero_run, plan_path, "--ranks", str(world), "--steps",
         str(1 + args.steps), "--quiet", *flags],
        os.path.join(work, "report.json"))
    report["mean_step_ms"] = statistics.median(report["step_ms"][1:])
    return report


def row_of(args, world, mode, stage, plan_path, report):
    params = stage == 3
    tag = "N=%d stage %d %s" % (world, stage, mode)
    plan = bench_report.load_json(plan_path)
    peaks = report["peak_bytes"][0]
    planned = report["planned_bytes"]
    for arena in ("host", "nvme"):
        if (arena in peaks) != (arena in planned):
            bench_report.fail("%s: the %s arena is planned or measured, not "
                              "both" % (tag, arena))
        if arena in peaks and peaks[arena] != {
                k: planned[arena][k] for k in ("total", "by_role")}:
            bench_report.fail("%s: measured %s peaks %s != planned %s" % (
                tag, arena, peaks[arena], planned[arena]))
    if peaks["total"] != planned["lower_bound"]:
        bench_report.fail("%s: measured device peak %d != planned %d" % (
            tag, peaks["total"], planned["lower_bound"]))
    moved = report.get("transfer_bytes_per_step", {})
    moved_total = sum(moved.values())
    # Stage 3 moves the parameter shards once per device reader; the plan's
    # transfers say how many, so only stage 2 has a closed formula here.
    formula = moved_formula(mode, shard_elements(plan)) if not params \
        else moved_total
    row = {
        "stage": stage,
        "ranks": world,
        "mode": mode + (" (+ params)" if params and mode != "none" else ""),
        "step_ms": round(report["mean_step_ms"], 1),
        "device_mib": round(peaks["total"] / MIB, 2),
        "host_mib": round(peaks.get("host", {}).get("total", 0) / MIB, 2),
        "nvme_mib": round(peaks.get("nvme", {}).get("total", 0) / MIB, 2),
        "rss_mib": round(report["process"]["rss_bytes"] / MIB, 1),
        "rss_peak_mib": round(report["process"]["rss_peak_bytes"] / MIB, 1),
        "arena_bytes": sum(a["bytes"] for a in plan["arenas"]
                           if a["memory"] != "nvme"),
        "moved_bytes": moved,
        "moved_mib": round(moved_total / MIB, 2),
        "moved_formula_bytes": formula,
        "moved_check": ("plan" if params else "exact")
        if moved_total == formula else "%+d B" % (moved_total - formula),
        "transfer_wait_ms": round(report["phase_ms"]["transfer_wait"], 2),
        "losses": report["losses"],
        "opt_state_bytes_rank0": peaks["by_role"]["opt_state"],
        "other_cores": report["other_cores"],
    }
    print("%-12s %8.1f ms  device %7.2f MiB  host %6.2f MiB  nvme %6.2f MiB"
          "  RSS %7.1f MiB  moved %s" % (
              tag, row["step_ms"], row["device_mib"], row["host_mib"],
              row["nvme_mib"], row["rss_mib"], row["moved_check"]),
          file=sys.stderr, flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--steps", type=int, default=5,
                        help="timed steps after the first (at least 1)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of each configuration, taken in turns; "
                        "the fastest quiet one counts")
    parser.add_argument("--retries", type=int, default=2,
                        help="more runs for configurations whose runs were "
                        "all contended")
    parser.add_argument("--nvme-dir", help="where the NVMe files go")
    args = parser.parse_args()
    if args.steps < 1 or args.repeats < 1 or args.retries < 0:
        bench_report.fail("--steps and --repeats must be at least 1, "
                          "--retries at least 0")
    work = tempfile.mkdtemp(prefix="offload_bench_")
    if not args.nvme_dir:
        args.nvme_dir = os.path.join(work, "nvme")
        os.mkdir(args.nvme_dir)
    if not os.path.isdir(args.nvme_dir):
        bench_report.fail("--nvme-dir: not a directory: %s" % args.nvme_dir)
    info, date = bench_report.machine(), bench_report.now()
    write_mbs, read_mbs = disk_bandwidth(args.nvme_dir)
    print("disk: %.0f MB/s write (fsync), %.0f MB/s read" % (
        write_mbs, read_mbs), file=sys.stderr, flush=True)
    rows = []
    cases = [(STAGE, world) for world in WORLDS] + [(3, world)
                                                     for world in WORLDS]
    for stage, world in cases:
        plans = {mode: compile_plan(args, work, world, mode, stage)
                 for mode in MODES}
        best = bench_report.best_runs(
            MODES, lambda mode, attempt: measure(args, work, world,
                                                 plans[mode],
                                                 RUN_FLAGS.get(mode, ())),
            args.repeats, args.retries)
        group = [row_of(args, world, mode, stage, plans[mode], best[mode])
                 for mode in MODES]
        base = group[0]
        for row in group:
            if row["losses"] != base["losses"]:
                bench_report.fail("N=%d stage %d %s: losses differ from no "
                                  "offload: %s != %s" % (world, stage,
                                                         row["mode"],
                                                row["losses"], base["losses"]))
            row["step_ratio"] = round(row["step_ms"] / base["step_ms"], 2)
            row["rss_saved_mib"] = round(base["rss_mib"] - row["rss_mib"], 1)
            # Every rank's device and host arenas live in this process.
            row["planned_saved_mib"] = round(
                world * (base["arena_bytes"] - row["arena_bytes"]) / MIB, 1)
        rows += group
    bench_report.print_table(COLUMNS, rows)
    print("\n%s; ZeRO stages %d and 3 (3: parameter shards offloaded too), "
          "fp32 Adam, thresholds 0; median of %d steps "
          "after the first, the fastest quiet of %d runs taken in turns; "
          "in-process ranks; losses identical bit for bit "
          "across the modes. NVMe directory %s: %.0f MB/s write (fsync), "
          "%.0f MB/s read. %s; %s." % (
              bench_model.GPT2_DESCRIPTION, STAGE, args.steps, args.repeats,
              args.nvme_dir, write_mbs, read_mbs,
              bench_report.describe(info), date))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "offload", {
            "model": bench_model.GPT2_FLAGS, "stage": STAGE,
            "steps": args.steps, "repeats": args.repeats,
            "nvme_dir": args.nvme_dir,
            "disk_write_mb_s": write_mbs, "disk_read_mb_s": read_mbs},
            info, date, rows)


if __name__ == "__main__":
    main()
