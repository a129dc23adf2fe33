#!/usr/bin/python3
"""Step time per ZeRO stage at N = 1, 2 and 4 ranks, in-process and over MPI.

The GPT-2 of bench/common/bench_model.py (global batch 8 sequences, fixed:
strong scaling), fp32 Adam, both ZeRO thresholds 0, `overlap_comm` on, is
compiled by `zero-compile` at stages 0-3 for each N and trained by `zero-run`
with one thread per rank in one process (`--backend inprocess`) and with one
process per rank under mpirun (`--backend mpi`). Both backends get the same
BLAS threads per rank, max(1, cores / N), so they differ only in how ranks
talk. Each run trains `--steps` steps on synthetic data; its step time is the
mean over all steps but the first (the report's `mean_step_ms`: the slowest
rank's step); of `--repeats` runs the fastest is kept, the repeats taken
in turns over all configurations. A run during which other work on the
machine kept more than a quarter of a core busy is contended; a
configuration with only contended runs gets up to `--retries` more, and a
quiet run is kept before a faster contended one. Tokens/s is the global
batch's 1,024 tokens over that step time.

Columns: backend, N, stage, BLAS threads per rank, step ms, tokens/s,
speedup over N = 1 (same backend and stage), time the communication thread
ran collectives (busy) and the time compute waited for them (exposed),
compute (forward + backward + optimizer kernels), per rank and step, and
how many cores other work on the machine kept busy during the kept run, on
average (the machine's busy CPU time less the run's own, over its wall
time): on a shared machine that work slows the run.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/scaling -- --csv=$PWD/bench/results/scaling.csv \
      --json=$PWD/bench/results/scaling.json
  scaling_bench.py ZERO_COMPILE ZERO_RUN [--csv FILE] [--json FILE]
      [--steps 5] [--repeats 3] [--retries 2] [--ranks 1,2,4]
      [--backends inprocess,mpi]
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
import bench_model  # noqa: E402
import bench_report  # noqa: E402

PIPELINE = ("shard-min-size=0 stage3-param-persistence-threshold=0 "
            "overlap-comm=true")
STAGES = [0, 1, 2, 3]
BACKENDS = ["inprocess", "mpi"]

COLUMNS = [
    ("backend", "backend"),
    ("ranks", "N"),
    ("stage", "stage"),
    ("threads_per_rank", "BLAS threads/rank"),
    ("step_ms", "step ms"),
    ("tokens_per_s", "tokens/s"),
    ("speedup_vs_1", "speedup vs N=1"),
    ("comm_busy_ms", "comm busy ms"),
    ("comm_exposed_ms", "comm exposed ms"),
    ("compute_ms", "compute ms"),
    ("other_cores", "other work, cores"),
]


def parse_list(text, allowed, what):
    items = [item.strip() for item in text.split(",") if item.strip()]
    for item in items:
        if item not in allowed:
            bench_report.fail("%s '%s' is not one of %s" % (
                what, item, ", ".join(allowed)))
    if not items:
        bench_report.fail("no %s given" % what)
    return items


def parse_ranks(text):
    try:
        worlds = [int(item) for item in text.split(",")]
    except ValueError:
        bench_report.fail("--ranks takes whole numbers separated by commas, "
                          "got '%s'" % text)
    if not worlds or min(worlds) < 1:
        bench_report.fail("--ranks must all be at least 1, got '%s'" % text)
    return worlds


def run_once(args, plan, world, backend, threads, repeat):
    """One run of a plan: its report, with the cores other work on the
    machine kept busy meanwhile (it slows the run)."""
    return bench_report.run_report(
        [args.zero_run, plan, "--ranks", str(world), "--backend", backend,
         "--steps", str(args.steps), "--threads", str(threads), "--quiet"],
        "%s.%s.%d.json" % (plan, backend, repeat))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv", help="write the table as CSV here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--steps", type=int, default=5,
                        help="steps per run; the first is left out")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per configuration; the fastest is kept")
    parser.add_argument("--retries", type=int, default=2,
                        help="extra runs of a configuration whose runs all "
                        "shared the machine with other work")
    parser.add_argument("--ranks", default="1,2,4",
                        help="rank counts, comma-separated")
    parser.add_argument("--backends", default="inprocess,mpi",
                        help="inprocess, mpi or both, comma-separated")
    args = parser.parse_args()
    if args.steps < 2:
        bench_report.fail("--steps must be at least 2 (the first is left "
                          "out), got %d" % args.steps)
    if args.repeats < 1 or args.retries < 0:
        bench_report.fail("--repeats must be at least 1 and --retries at "
                          "least 0, got %d and %d" % (args.repeats,
                                                      args.retries))
    worlds = parse_ranks(args.ranks)
    backends = parse_list(args.backends, BACKENDS, "backend")
    for tool in [args.zero_compile, args.zero_run]:
        if not os.access(tool, os.X_OK):
            bench_report.fail("not an executable: %s" % tool)

    info, date = bench_report.machine(), bench_report.now()
    work = tempfile.mkdtemp(prefix="scaling_bench_")
    plans = bench_model.compile_plans(args.zero_compile, worlds, STAGES,
                                      PIPELINE, work)

    configs = [(backend, world, stage) for backend in backends
               for world in worlds for stage in STAGES]

    def run_one(config, attempt):
        backend, world, stage = config
        report = run_once(args, plans[(world, stage)], world, backend,
                          max(1, info["cores"] // world), attempt)
        print("run %d %-9s N=%d stage %d  %8.1f ms  other work %.2f cores" % (
            attempt + 1, backend, world, stage, report["mean_step_ms"],
            report["other_cores"]), flush=True)
        return report

    best = bench_report.best_runs(configs, run_one, args.repeats,
                                  args.retries)

    rows = []
    for backend, world, stage in configs:
        report = best[(backend, world, stage)]
        step = report["mean_step_ms"]
        baseline = best.get((backend, 1, stage))
        phases = report["phase_ms"]
        rows.append({
            "backend": backend,
            "ranks": world,
            "stage": stage,
            "threads_per_rank": max(1, info["cores"] // world),
            "step_ms": round(step, 1),
            "tokens_per_s": int(round(report["tokens_per_second"])),
            "speedup_vs_1": ("%.2f" % (baseline["mean_step_ms"] / step)
                             if baseline else "-"),
            "comm_busy_ms": round(phases["comm_busy"], 1),
            "comm_exposed_ms": round(phases["comm_wait"], 1),
            "compute_ms": round(phases["forward"] + phases["backward"] +
                                phases["optimizer"], 1),
            "other_cores": round(report["other_cores"], 2),
            "step_ms_all": [round(t, 2) for t in report["step_ms"]],
            "contended": report["other_cores"] > bench_report.CONTENDED_CORES,
        })

    print()
    bench_report.print_table(COLUMNS, rows)
    print("\n%s; fp32 Adam, thresholds 0, overlap_comm on; %d steps per run, "
          "the first left out; best of %d runs (quiet runs first, up to %d "
          "more where all were contended). %s; %s. N above the core count "
          "oversubscribes: ranks share cores." % (
              bench_model.GPT2_DESCRIPTION, args.steps, args.repeats,
              args.retries, bench_report.describe(info), date))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "scaling", {
            "model": bench_model.GPT2_FLAGS, "pipeline": PIPELINE,
            "steps": args.steps, "repeats": args.repeats,
            "retries": args.retries, "ranks": worlds,
            "backends": backends}, info, date, rows)


if __name__ == "__main__":
    main()
