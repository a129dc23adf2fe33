#!/usr/bin/python3
"""Trains plans with `zero-run --device cuda` and with `--device cpu` and
checks that the GPU run is the CPU run: the same losses within float32 noise
(bf16 plans within bf16's), the same bytes sent per step and kind, the same
planned memory peaks, and a measured device peak that holds the arena. It
also checks the GPU run's timeline (--trace) and that bad devices are
refused with one line. Plans of 2 and 4 ranks run as threads of one
process; on one GPU they share it (SharedDeviceComm, whose reductions are
the CPU's), and their f32 losses must equal the CPU's bit for bit
(tolerance 0), an inference plan among them. The 2-rank stage-2 plan
also crosses devices through a
checkpoint: saved on the GPU and resumed on the CPU, and back.

Without a usable GPU, `--device cuda` must fail with exactly one line
`zero-run: rank 0: no CUDA device: <reason>` and a non-zero exit; the check
then prints `SKIPPED: ...` and succeeds, having checked that.

Usage:
    cuda_training_check.py --zero-run BIN --plan P[:RTOL] [--plan ...]
                           [--steps N] [--out FILE]
    cuda_training_check.py --zero-run BIN --zero-compile BIN [--steps N]
        (compiles its own plans: the tiny GPT-2 at world 1, stages 0-3 in
        f32 and stage 2 in bf16; at worlds 2 and 4 MULTI_RANK_PLANS: stages
        0-3, MiCS, hpZ, optimizer and parameter offload, bf16)
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

from gpu_checks import check, failures, no_device, run as run_tool


def run(command):
    """Training on a device takes longer than the other checks' runs."""
    return run_tool(command, timeout=600)


def compile_plans(zero_compile, workdir):
    plans = []
    for stage in range(4):
        path = os.path.join(workdir, f"tiny_f32_stage{stage}.zplan")
        result = run([zero_compile, "--preset=tiny", "--world=1",
                      f"--stage={stage}", "-o", path, "--report=none"])
        if result.returncode != 0:
            sys.exit("zero-compile failed: " + result.stderr.strip())
        plans.append((path, 1e-4))
    config = os.path.join(workdir, "bf16.json")
    with open(config, "w") as file:
        json.dump({"bf16": {"enabled": True},
                   "zero_optimization": {"stage": 2}}, file)
    path = os.path.join(workdir, "tiny_bf16_stage2.zplan")
    result = run([zero_compile, "--preset=tiny", "--world=1",
                  "--config=" + config, "-o", path, "--report=none"])
    if result.returncode != 0:
        sys.exit("zero-compile failed: " + result.stderr.strip())
    plans.append((path, 2e-2))
    # Offloaded optimizer states: the updates run on the host with the CPU
    # kernels (pinned host arena, copy stream, NVMe file).
    nvme = os.path.join(workdir, "nvme")
    os.makedirs(nvme, exist_ok=True)
    for name, pipeline, rtol in [
            ("tiny_f32_stage2_cpu_offload",
             "stage=2 offload-optimizer=cpu", 1e-4),
            # The updates on the host stream during the backward.
            ("tiny_f32_stage2_cpu_offload_overlap",
             "stage=2 offload-optimizer=cpu overlap-comm=true", 1e-4),
            ("tiny_bf16_stage3_nvme_offload",
             "stage=3 precision=bf16 offload-optimizer=nvme "
             "offload-optimizer-nvme-path=" + nvme, 2e-2)]:
        path = os.path.join(workdir, name + ".zplan")
        result = run([zero_compile, "--preset=tiny", "--world=1",
                      "--pipeline=" + pipeline, "-o", path, "--report=none"])
        if result.returncode != 0:
            sys.exit("zero-compile failed: " + result.stderr.strip())
        plans.append((path, rtol))
    # Several ranks, as threads of one process: on one GPU they share it.
    for name, world, pipeline, rtol in MULTI_RANK_PLANS:
        path = os.path.join(workdir, name + ".zplan")
        eval_flag = ["--eval"] if name.endswith("_eval") else []
        result = run([zero_compile, "--preset=tiny", f"--world={world}",
                      "--pipeline=" + pipeline, *eval_flag, "-o", path,
                      "--report=none"])
        if result.returncode != 0:
            sys.exit("zero-compile failed: " + result.stderr.strip())
        plans.append((path, rtol))
    return plans


# The tiny GPT-2 on 2 and 4 ranks (bench/gpu/bundle.sh compiles the same):
# name, world, pipeline, loss tolerance (0: bit for bit).
MULTI_RANK_PLANS = [
    ("tiny_f32_stage0_n2", 2, "stage=0", 0.0),
    ("tiny_f32_stage1_n2", 2, "stage=1", 0.0),
    ("tiny_f32_stage2_n2", 2, "stage=2", 0.0),
    ("tiny_f32_stage3_n2", 2, "stage=3", 0.0),
    ("tiny_f32_stage3_n4", 4, "stage=3", 0.0),
    ("tiny_f32_mics2_n4", 4, "stage=3 mics-shard-size=2", 0.0),
    ("tiny_f32_hpz2_n4", 4, "stage=3 hpz-partition-size=2", 0.0),
    ("tiny_f32_stage2_cpu_offload_n2", 2,
     "stage=2 offload-optimizer=cpu overlap-comm=true", 0.0),
    ("tiny_f32_stage3_param_offload_n2", 2,
     "stage=3 offload-optimizer=cpu offload-param=cpu", 0.0),
    ("tiny_bf16_stage2_n2", 2, "stage=2 precision=bf16", 2e-2),
    # An inference plan (zero-run --eval): the gathers alone.
    ("tiny_f32_stage3_n2_eval", 2, "stage=3", 0.0),
]


def check_checkpoint_crossing(zero_run, plan, workdir):
    """Two steps on the GPU saved, two more resumed on the CPU, and the
    other way round: both equal four steps on the CPU (rtol 0 for f32)."""
    name = os.path.basename(plan)
    whole, result = train(zero_run, plan, "cpu", 4, workdir)
    if whole is None:
        check(False, f"{name}: 4 steps on the CPU: {result.stderr.strip()}")
        return
    for first, second in [("cuda", "cpu"), ("cpu", "cuda")]:
        directory = os.path.join(workdir, f"ck_{first}_{second}")
        shutil.rmtree(directory, ignore_errors=True)
        saved, result = train(zero_run, plan, first, 2, workdir,
                              extra=["--checkpoint-dir", directory])
        if saved is None:
            check(False, f"{name}: 2 steps on {first} saved: "
                  f"{result.stderr.strip()}")
            continue
        resumed, result = train(zero_run, plan, second, 2, workdir,
                                extra=["--resume", directory])
        if resumed is None:
            check(False, f"{name}: resumed on {second}: "
                  f"{result.stderr.strip()}")
            continue
        check(saved["losses"] + resumed["losses"] == whole["losses"],
              f"{name}: saved on {first}, resumed on {second}: the losses "
              f"of 4 steps on the CPU, bit for bit")


def plan_header(plan):
    """The plan's world and whether it is an inference plan."""
    with open(plan) as file:
        header = json.load(file)
    return header["world"], header.get("mode") == "eval"


def train(zero_run, plan, device, steps, workdir, trace=False, extra=()):
    report = os.path.join(workdir, f"{os.path.basename(plan)}.{device}.json")
    world, inference = plan_header(plan)
    command = [zero_run, plan, "--device", device, "--steps", str(steps),
               "--ranks", str(world), "--seed", "3",
               "--report-file", report, "--quiet", *extra]
    if inference:
        command.append("--eval")
    if trace:
        command += ["--trace", report + ".trace"]
    result = run(command)
    if result.returncode != 0:
        return None, result
    with open(report) as file:
        return json.load(file), result


def compare(name, cpu, cuda, rtol):
    worst = max(abs(a - b) / max(abs(a), 1e-30)
                for a, b in zip(cpu["losses"], cuda["losses"]))
    check(len(cpu["losses"]) == len(cuda["losses"]) and worst <= rtol,
          f"{name}: losses agree (max rel diff {worst:.2e} <= {rtol:g}): "
          f"cpu {cpu['losses']} cuda {cuda['losses']}")
    check(cpu["comm_bytes"] == cuda["comm_bytes"],
          f"{name}: bytes sent per step and kind equal the CPU's")
    planned = [(p["total"], p["model_states"], p["by_role"])
               for p in cpu["peak_bytes"]]
    measured = [(p["total"], p["model_states"], p["by_role"])
                for p in cuda["peak_bytes"]]
    check(planned == measured, f"{name}: memory peaks by role equal the CPU's")
    arena = cuda["planned_bytes"]["arena"]
    held = [p["device_held"] for p in cuda["peak_bytes"]]
    check(all(h >= arena for h in held),
          f"{name}: device memory held {held} covers the arena {arena}")
    check(cuda["device"] == "cuda" and cpu["device"] == "cpu",
          f"{name}: reports name their device")
    check(cuda.get("device_comm") in ("nccl", "shared_device"),
          f"{name}: the GPU run names its communicator "
          f"({cuda.get('device_comm')})")


def check_trace(name, path):
    with open(path) as file:
        events = json.load(file)
    events = events.get("traceEvents", events)
    spans = [e for e in events if e.get("ph") == "X"]
    check(len(spans) > 0 and all(e["dur"] >= 0 for e in spans),
          f"{name}: the GPU timeline has {len(spans)} events")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-run", required=True)
    parser.add_argument("--zero-compile")
    parser.add_argument("--plan", action="append", default=[])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="cuda_training_")
    plans = []
    for spec in args.plan:
        path, _, rtol = spec.partition(":")
        plans.append((path, float(rtol) if rtol else 1e-4))
    if not plans:
        if not args.zero_compile:
            sys.exit("give --plan or --zero-compile")
        plans = compile_plans(args.zero_compile, workdir)

    bad = run([args.zero_run, plans[0][0], "--device", "tpu", "--steps", "1"])
    check(bad.returncode == 1, "--device tpu exits with status 1")
    check(bad.stderr.startswith(
        "zero-run: --device: expected cpu or cuda, got 'tpu'"),
        "--device tpu is refused with one line: " +
        bad.stderr.splitlines()[0] if bad.stderr else "(no message)")

    results = {}
    skipped = None
    for index, (plan, rtol) in enumerate(plans):
        name = os.path.basename(plan)
        cpu, result = train(args.zero_run, plan, "cpu", args.steps, workdir)
        check(cpu is not None, f"{name}: trains on the CPU "
              f"{'' if cpu else result.stderr.strip()}")
        if cpu is None:
            continue
        cuda, result = train(args.zero_run, plan, "cuda", args.steps, workdir,
                             trace=index == len(plans) - 1)
        if cuda is None:
            reason = no_device(result)
            if reason is None:
                check(False, f"{name}: trains on the GPU: "
                      f"{result.stderr.strip()}")
                continue
            check(True, f"{name}: --device cuda fails cleanly without a "
                  f"GPU: {result.stderr.strip()!r}")
            skipped = reason
            continue
        compare(name, cpu, cuda, rtol)
        results[name] = {"cpu": cpu["losses"], "cuda": cuda["losses"],
                         "cpu_ms": cpu["mean_step_ms"],
                         "cuda_ms": cuda["mean_step_ms"]}
        if index == len(plans) - 1:
            check_trace(name, os.path.join(
                workdir, f"{name}.cuda.json.trace"))
        if name == "tiny_f32_stage2_n2.zplan":
            check_checkpoint_crossing(args.zero_run, plan, workdir)

    if args.out:
        with open(args.out, "w") as file:
            json.dump({"skipped": skipped, "plans": results,
                       "failures": failures}, file, indent=2)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    if skipped is not None:
        print(f"SKIPPED: no CUDA device: {skipped} (checked that "
              "--device cuda fails with this one line)")
    else:
        print(f"all {len(plans)} plans train on the GPU as on the CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
