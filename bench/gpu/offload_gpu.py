#!/usr/bin/python3
"""ZeRO-Offload on one GPU: GPT-2 small (bf16, batch 8) trained by
`zero-run --device cuda` with the optimizer states on the device, in host
memory (updates on the host stream during the backward), in host memory
with the one-step delayed update, on NVMe, and at stage 3 with the
parameter shards in host memory too. Per plan: the step time against no
offload, the host update's GB/s and parameters per second and the share
of it the step did not wait for (zero-run's `host_update`), the bytes moved per step, and whether the losses equal the
no-offload run's (the delayed update's differ by design).

The goal (issue: fast offload): `offload_optimizer: cpu` at most 1.3x the
no-offload step, with the same losses.

Usage: offload_gpu.py --zero-run BIN --plans DIR [--steps N] [--out FILE]
           [--device cuda|cpu]
The plans are bench/gpu/bundle.sh's `offload_*`; `--device cpu` runs the
same script on the CPU runtime (a smoke test of the script itself).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

# (plan, what it is, whether its losses must equal no offload's)
PLANS = [
    ("offload_none", "no offload (stage 2)", True),
    ("offload_cpu", "offload_optimizer cpu, overlap_comm", True),
    ("offload_cpu_dpu", "offload_optimizer cpu, delayed update", False),
    ("offload_nvme", "offload_optimizer nvme", True),
    ("offload_param_cpu", "stage 3, offload_optimizer and offload_param cpu",
     True),
]
GOAL = 1.3


def train(zero_run, plan, device, steps, workdir):
    report = os.path.join(workdir, os.path.basename(plan) + ".json")
    command = [zero_run, plan, "--device", device, "--steps", str(steps),
               "--seed", "3", "--quiet", "--report-file", report]
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return None, lines[-1] if lines else "exit %d" % done.returncode
    with open(report) as file:
        return json.load(file), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-run", required=True)
    parser.add_argument("--plans", required=True)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.steps < 2:
        sys.exit("offload_gpu.py: --steps must be at least 2")
    workdir = tempfile.mkdtemp(prefix="offload_gpu_")
    rows, failures = [], []
    base = None
    for name, what, exact in PLANS:
        plan = os.path.join(args.plans, name + ".zplan")
        if not os.path.exists(plan):
            failures.append("%s: not bundled" % name)
            continue
        report, error = train(args.zero_run, plan, args.device, args.steps,
                              workdir)
        if report is None:
            failures.append("%s: %s" % (name, error))
            print("%-18s failed: %s" % (name, error), flush=True)
            continue
        update = report.get("host_update", {})
        row = {"plan": name, "what": what,
               "step_ms": round(report["mean_step_ms"], 2),
               "losses": report["losses"],
               "host_update_ms": round(update.get("ms", 0), 2),
               "host_gb_per_s": round(update.get("gb_per_s", 0), 2),
               "host_overlap": round(update.get("overlap", 0), 3),
               "host_gparams_per_s":
                   round(update.get("params_per_s", 0) / 1e9, 3),
               "moved_bytes": report.get("transfer_bytes_per_step", {}),
               "device_comm": report.get("device_comm")}
        if name == "offload_none":
            base = row
        if base:
            row["vs_none"] = round(row["step_ms"] / base["step_ms"], 2)
            row["losses_equal"] = row["losses"] == base["losses"]
            if exact and not row["losses_equal"]:
                failures.append("%s: losses %s differ from no offload's %s"
                                % (name, row["losses"], base["losses"]))
        rows.append(row)
        print("%-18s %8.2f ms  x%-5s host %7.2f ms %6.2f GB/s %3.0f%% hidden"
              "  losses %s"
              % (name, row["step_ms"], row.get("vs_none", "-"),
                 row["host_update_ms"], row["host_gb_per_s"],
                 100 * row["host_overlap"],
                 "equal" if row.get("losses_equal") else "differ"),
              flush=True)
    cpu = next((r for r in rows if r["plan"] == "offload_cpu"), None)
    met = bool(cpu and cpu.get("vs_none", 99) <= GOAL and
               cpu.get("losses_equal"))
    print("goal: offload_optimizer cpu at most %.1fx no offload with the same "
          "losses: %s" % (GOAL, "met" if met else "NOT met"))
    if args.out:
        with open(args.out, "w") as file:
            json.dump({"device": args.device, "steps": args.steps,
                       "rows": rows, "goal_met": met, "failures": failures},
                      file, indent=2)
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
