#!/usr/bin/python3
"""Step time, memory and traffic of ZeRO stages 0-3 on the CPU runtime.

GPT-2 with 4 layers, hidden 256, 4 heads, sequence 128, a vocabulary of
8192, a global batch of 8 sequences, fp32 Adam, on 4 in-process ranks (one
thread each, sharing this machine's cores), both ZeRO thresholds 0. Each
stage runs with `overlap_comm` on and off; each run trains `--steps` steps
on synthetic data and reports the mean over all steps but the first; of
`--repeats` runs the fastest is kept, the repeats taken in turns over all
configurations; a quiet run is kept before a faster one that shared the
machine with other work, and a configuration with only such runs gets up
to `--retries` more (bench/common/bench_report.py).

Columns: mean step time and its ratio to stage 0 (same overlap setting);
peak bytes per rank (measured) and model-state bytes per rank; bytes sent
per rank per step; the time the communication stream was busy and the time
the compute stream waited for it (exposed): what overlap hides is the
difference; how many cores other work on the machine kept busy during the
kept run, on average (it slows the run on a shared machine).

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/runtime -- --csv=$PWD/bench/results/runtime.csv \
      --json=$PWD/bench/results/runtime.json
  runtime_bench.py ZERO_COMPILE ZERO_RUN [--csv FILE] [--json FILE]
      [--steps 6] [--ranks 4] [--repeats 3] [--retries 2]
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


COLUMNS = [
    ("stage", "stage"),
    ("overlap_comm", "overlap_comm"),
    ("step_ms", "step ms"),
    ("vs_stage0", "vs stage 0"),
    ("tokens_per_s", "tokens/s"),
    ("peak_mib_per_rank", "peak MiB/rank"),
    ("model_state_mib_per_rank", "model-state MiB/rank"),
    ("sent_mib_per_step", "sent MiB/step/rank"),
    ("comm_busy_ms", "comm busy ms"),
    ("comm_exposed_ms", "comm exposed ms"),
    ("compute_ms", "compute ms"),
    ("other_cores", "other work, cores"),
]


def run_once(args, plan, repeat):
    """One run of a plan: its report, with the cores other work on the
    machine kept busy meanwhile (it slows the run)."""
    return bench_report.run_report(
        [args.zero_run, plan, "--ranks", str(args.ranks), "--steps",
         str(args.steps), "--quiet"], "%s.%d.json" % (plan, repeat))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv", help="write the table as CSV here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--steps", type=int, default=6,
                        help="steps per run; the first is left out")
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per configuration; the fastest is kept")
    parser.add_argument("--retries", type=int, default=2,
                        help="extra runs of a configuration whose runs all "
                        "shared the machine with other work")
    args = parser.parse_args()
    if args.steps < 2:
        bench_report.fail("--steps must be at least 2 (the first is left "
                          "out), got %d" % args.steps)
    if args.ranks < 1 or args.repeats < 1 or args.retries < 0:
        bench_report.fail("--ranks and --repeats must be at least 1, "
                          "--retries at least 0")
    info, date = bench_report.machine(), bench_report.now()
    work = tempfile.mkdtemp(prefix="runtime_bench_")
    configs = [(overlap, stage) for overlap in [True, False]
               for stage in [0, 1, 2, 3]]
    plans = {}
    for overlap, stage in configs:
        plan = os.path.join(work, "s%d_o%d.zplan" % (stage, overlap))
        pipeline = ("stage3-param-persistence-threshold=0 "
                    "overlap-comm=%s" % ("true" if overlap else "false"))
        bench_report.run([args.zero_compile] + bench_model.GPT2_FLAGS + [
            "--world=%d" % args.ranks, "--stage=%d" % stage,
            "--pipeline=" + pipeline, "--report=none", "-o", plan])
        plans[(overlap, stage)] = plan

    def run_one(config, attempt):
        report = run_once(args, plans[config], attempt)
        print("run %d stage %d overlap %-5s %8.1f ms  other work %.2f cores" %
              (attempt + 1, config[1], config[0], report["mean_step_ms"],
               report["other_cores"]), flush=True)
        return report

    best = bench_report.best_runs(configs, run_one, args.repeats,
                                  args.retries)

    rows = []
    for overlap, stage in configs:
        report = best[(overlap, stage)]
        step = report["mean_step_ms"]
        baseline = best[(overlap, 0)]["mean_step_ms"]
        peak = max(p["total"] for p in report["peak_bytes"])
        states = max(sum(p["by_role"][r] for r in
                         ["param", "grad", "master", "opt_state"])
                     for p in report["peak_bytes"])
        sent = max(sum(r.values()) for r in report["comm_bytes"]["per_rank"])
        phases = report["phase_ms"]
        rows.append({
            "stage": stage,
            "overlap_comm": overlap,
            "step_ms": round(step, 1),
            "vs_stage0": round(step / baseline, 3),
            "tokens_per_s": int(round(report["tokens_per_second"])),
            "peak_mib_per_rank": round(peak / MIB, 2),
            "model_state_mib_per_rank": round(states / MIB, 2),
            "sent_mib_per_step": round(sent / MIB, 2),
            "comm_busy_ms": round(phases["comm_busy"], 1),
            "comm_exposed_ms": round(phases["comm_wait"], 1),
            "compute_ms": round(phases["forward"] + phases["backward"] +
                                phases["optimizer"], 1),
            "other_cores": round(report["other_cores"], 2),
            "contended": report["other_cores"] > bench_report.CONTENDED_CORES,
        })

    print()
    bench_report.print_table(COLUMNS, rows)
    print("\n%s; fp32 Adam; %d in-process ranks; %d steps, first left out; "
          "best of %d runs (quiet runs first, up to %d more where all were "
          "contended). %s; %s." % (
              bench_model.GPT2_DESCRIPTION, args.ranks, args.steps,
              args.repeats, args.retries, bench_report.describe(info), date))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "runtime", {
            "model": bench_model.GPT2_FLAGS, "ranks": args.ranks,
            "steps": args.steps, "repeats": args.repeats,
            "retries": args.retries}, info, date, rows)


if __name__ == "__main__":
    main()
