#!/usr/bin/python3
"""Step time, memory and traffic of ZeRO stages 0-3 on the CPU runtime.

GPT-2 with 4 layers, hidden 256, 4 heads, sequence 128, a vocabulary of
8192, a global batch of 8 sequences, fp32 Adam, on 4 in-process ranks (one
thread each, sharing this machine's cores), both ZeRO thresholds 0. Each
stage runs with `overlap_comm` on and off; each run trains `--steps` steps
on synthetic data and reports the mean over all steps but the first; of
`--repeats` runs the fastest is kept.

Columns: mean step time and its ratio to stage 0 (same overlap setting);
peak bytes per rank (measured) and model-state bytes per rank; bytes sent
per rank per step; the time the communication stream was busy and the time
the compute stream waited for it (exposed): what overlap hides is the
difference.

Usage: runtime_bench.py ZERO_COMPILE ZERO_RUN [--csv FILE] [--json FILE]
           [--steps 6] [--ranks 4]
"""

import argparse
import csv
import json
import os
import platform
import subprocess
import tempfile

MODEL = ["--num-layers=4", "--hidden-size=256", "--num-attention-heads=4",
         "--seq-length=128", "--vocab-size=8192", "--batch-size=8"]
MIB = 1024.0 * 1024.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per configuration; the fastest is kept")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="runtime_bench_")
    rows = []
    for overlap in [True, False]:
        baseline = None
        for stage in [0, 1, 2, 3]:
            plan = os.path.join(work, "s%d_o%d.zplan" % (stage, overlap))
            pipeline = "stage3-param-persistence-threshold=0 overlap-comm=%s" % (
                "true" if overlap else "false")
            subprocess.run([args.zero_compile] + MODEL + [
                "--world=%d" % args.ranks, "--stage=%d" % stage,
                "--pipeline=" + pipeline, "--report=none", "-o", plan],
                check=True)
            report = None
            for repeat in range(args.repeats):
                report_path = "%s.%d.json" % (plan, repeat)
                subprocess.run([args.zero_run, plan, "--ranks",
                                str(args.ranks), "--steps", str(args.steps),
                                "--quiet", "--report-file", report_path],
                               check=True)
                with open(report_path) as f:
                    candidate = json.load(f)
                if (report is None or candidate["mean_step_ms"] <
                        report["mean_step_ms"]):
                    report = candidate
            step = report["mean_step_ms"]
            if baseline is None:
                baseline = step
            peak = max(p["total"] for p in report["peak_bytes"])
            states = max(sum(p["by_role"][r] for r in
                             ["param", "grad", "master", "opt_state"])
                         for p in report["peak_bytes"])
            sent = max(sum(r.values())
                       for r in report["comm_bytes"]["per_rank"])
            phases = report["phase_ms"]
            rows.append({
                "stage": stage,
                "overlap_comm": overlap,
                "step_ms": round(step, 1),
                "vs_stage0": round(step / baseline, 3),
                "tokens_per_s": round(report["tokens_per_second"]),
                "peak_mib_per_rank": round(peak / MIB, 2),
                "model_state_mib_per_rank": round(states / MIB, 2),
                "sent_mib_per_step": round(sent / MIB, 2),
                "comm_busy_ms": round(phases["comm_busy"], 1),
                "comm_exposed_ms": round(phases["comm_wait"], 1),
                "compute_ms": round(phases["forward"] + phases["backward"] +
                                    phases["optimizer"], 1),
            })
            print("stage %d overlap %-5s %8.1f ms" % (stage, overlap, step),
                  flush=True)

    columns = list(rows[0].keys())
    print()
    print("| " + " | ".join(columns) + " |")
    print("| " + " | ".join("---" for _ in columns) + " |")
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    machine = "%s, %d cores" % (platform.processor() or platform.machine(),
                                os.cpu_count())
    print("\n%d in-process ranks on %s; %d steps, first left out; best of "
          "%d runs." % (args.ranks, machine, args.steps, args.repeats))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "ranks": args.ranks,
                       "steps": args.steps, "model": MODEL, "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    main()
