#!/usr/bin/python3
"""Checks zero-run's CUDA graph (--cuda-graph) and TF32 (--allow-tf32) on
the GPU:

- graph: the same plan trained N steps with --cuda-graph=on, auto (with
  --trace, whose last step runs op by op) and off gives bit-identical
  losses and final parameters (--save), the same memory peaks and bytes
  sent; with the graph the report says it was used (captured at step 2,
  launched for every later step) and the phase times are measured. Plans:
  the tiny GPT-2 at stage 2 in f32 and in bf16, and a small MLP with
  dropout (tests/gpu/dropout_mlp.mlir), whose mask and Adam's bias
  corrections read the step on the device;
- fallback: a plan with offloaded optimizer states, and --check-gradients,
  with --cuda-graph=on train op by op, say why on stderr in exactly one
  line and in the report, and give the op-by-op losses;
- skip: --skip-nonfinite-steps with --cuda-graph=on runs op by op and says
  why; on the MLP with an overflowing data row it skips that step, and the
  saved parameters equal, bit for bit, a run whose data lacks the row;
- TF32: the f32 GPT-2 with --allow-tf32 stays within TF32_RTOL of its f32
  losses and the report records it; the bf16 GPT-2, whose products are all
  bf16, is unchanged bit for bit.

Without a usable GPU, `--device cuda` must fail with exactly one line
`zero-run: rank 0: no CUDA device: <reason>`; the check then prints
`SKIPPED: ...` and succeeds, having checked the flags on the CPU.

Usage:
    cuda_graph_check.py --zero-run BIN --zero-compile BIN [--steps N]
    cuda_graph_check.py --zero-run BIN --plans DIR [--steps N] [--out FILE]
        (DIR holds tiny_f32_stage2, tiny_bf16_stage2, dropout_mlp_stage2
        and tiny_f32_stage2_cpu_offload .zplan, as bench/gpu/bundle.sh
        makes them)
"""

import argparse
import json
import os
import sys
import tempfile

from gpu_checks import check, failures, no_device, run, same_files

# Relative loss difference allowed between --allow-tf32 and f32 on the tiny
# GPT-2 over --steps steps: TF32 rounds the products' inputs to 10 mantissa
# bits (2^-11 relative), and the loss, a mean over the batch, moves by far
# less.
TF32_RTOL = 5e-3

PLANS = ["tiny_f32_stage2", "tiny_bf16_stage2", "dropout_mlp_stage2",
         "tiny_f32_stage2_cpu_offload"]


def compile_plans(zero_compile, workdir):
    here = os.path.dirname(os.path.abspath(__file__))
    config = os.path.join(workdir, "bf16.json")
    with open(config, "w") as file:
        json.dump({"bf16": {"enabled": True},
                   "zero_optimization": {"stage": 2}}, file)
    commands = {
        "tiny_f32_stage2": ["--preset=tiny", "--stage=2"],
        "tiny_bf16_stage2": ["--preset=tiny", "--config=" + config],
        "dropout_mlp_stage2": [os.path.join(here, "dropout_mlp.mlir"),
                               "--stage=2"],
        "tiny_f32_stage2_cpu_offload": [
            "--preset=tiny", "--pipeline=stage=2 offload-optimizer=cpu"],
    }
    for name, flags in commands.items():
        path = os.path.join(workdir, name + ".zplan")
        result = run([zero_compile, *flags, "--world=1", "-o", path,
                      "--report=none"])
        if result.returncode != 0:
            sys.exit(f"zero-compile {name} failed: {result.stderr.strip()}")
    return workdir


class Runs:
    def __init__(self, zero_run, plans, steps, workdir):
        self.zero_run, self.plans = zero_run, plans
        self.steps, self.workdir = steps, workdir
        self.count = 0

    def train(self, name, *flags, device="cuda"):
        """(report, params dir, stderr) or (None, None, result)."""
        self.count += 1
        tag = f"{name}.{self.count}"
        report = os.path.join(self.workdir, tag + ".json")
        params = os.path.join(self.workdir, tag + ".params")
        command = [self.zero_run, os.path.join(self.plans, name + ".zplan"),
                   "--device", device, "--steps", str(self.steps),
                   "--seed", "3", "--quiet", "--report-file", report,
                   "--save", params, *flags]
        command = [arg.replace("@", os.path.join(self.workdir, tag))
                   for arg in command]
        result = run(command)
        if result.returncode != 0:
            return None, None, result
        with open(report) as file:
            return json.load(file), params, result.stderr


def graph_lines(stderr):
    return [line for line in stderr.splitlines()
            if line.startswith("CUDA graph")]


def check_cpu_flags(runs, name):
    """The flags parse and reach the report on any machine."""
    bad = run([runs.zero_run, os.path.join(runs.plans, name + ".zplan"),
               "--steps", "1", "--cuda-graph=maybe"])
    check(bad.returncode == 1 and bad.stderr.startswith(
        "zero-run: --cuda-graph: expected on, off or auto, got 'maybe'\n"),
        "--cuda-graph=maybe is refused with one line")
    report, _, stderr = runs.train(name, "--cuda-graph=on", "--allow-tf32",
                                   device="cpu")
    check(report is not None, f"{name}: trains on the CPU with the flags")
    if report is None:
        return
    graph = report.get("cuda_graph", {})
    check(graph.get("mode") == "on" and graph.get("used") is False and
          "cpu" in (graph.get("reason") or "") and
          report.get("allow_tf32") is True and graph_lines(stderr) == [],
          f"{name}: the CPU report records the flags, no graph: {graph}")


def check_graph(runs, name, trace):
    """on, auto (+ --trace) and off: bit-identical; the graph was used.
    Returns {"off": report, "on": report}, or the failed run."""
    off, off_params, off_err = runs.train(name, "--cuda-graph=off")
    if off is None:
        return off_err
    reports = {"off": off}
    check(off["cuda_graph"]["used"] is False and
          off["cuda_graph"]["reason"] == "--cuda-graph=off" and
          graph_lines(off_err) == [],
          f"{name}: --cuda-graph=off launches op by op, silently: "
          f"{off['cuda_graph']}")
    variants = [("on", ["--cuda-graph=on"], runs.steps - 1)]
    if trace:
        # auto, the default; the traced last step runs op by op.
        variants.append(("auto --trace", ["--trace", "@.trace"],
                         runs.steps - 2))
    for label, flags, launches in variants:
        report, params, stderr = runs.train(name, *flags)
        check(report is not None, f"{name}: trains with {label}: "
              f"{'' if report else stderr.stderr.strip()}")
        if report is None:
            continue
        reports[label] = report
        graph = report["cuda_graph"]
        check(graph["used"] is True and graph["captured_step"] == 2 and
              graph["graph_steps"] == launches and graph["reason"] is None
              and graph_lines(stderr) == [],
              f"{name} {label}: captured at step 2, launched for "
              f"{launches} steps: {graph} {graph_lines(stderr)}")
        check(report["losses"] == off["losses"],
              f"{name} {label}: losses equal op by op's bit for bit: "
              f"{report['losses']} vs {off['losses']}")
        check(same_files(params, off_params),
              f"{name} {label}: final parameters equal bit for bit")
        check(report["comm_bytes"] == off["comm_bytes"] and
              [p["by_role"] for p in report["peak_bytes"]] ==
              [p["by_role"] for p in off["peak_bytes"]],
              f"{name} {label}: bytes sent and memory peaks as op by op")
        phases = report["phase_ms"]
        check(phases["forward"] > 0 and phases["backward"] > 0 and
              phases["optimizer"] > 0,
              f"{name} {label}: phase times measured in the graph: {phases}")
        held = [p["device_held"] for p in report["peak_bytes"]]
        check(all(h >= report["planned_bytes"]["arena"] for h in held),
              f"{name} {label}: device memory held {held} covers the arena")
        if "--trace" in flags:
            with open(flags[flags.index("--trace") + 1].replace(
                    "@", os.path.join(runs.workdir, f"{name}.{runs.count}"))) \
                    as file:
                events = json.load(file)
            events = events.get("traceEvents", events)
            spans = [e for e in events if e.get("ph") == "X"]
            check(len(spans) > 0, f"{name} {label}: the last step, run op by "
                  f"op, has a timeline of {len(spans)} events")
    return reports


def check_fallback(runs, name, flags, reason, off=None):
    """--cuda-graph=on where the step cannot be captured: op by op, one
    line saying why, the losses of `off` (or of a run with
    --cuda-graph=off)."""
    label = " ".join([name, *flags])
    if off is None:
        off, _, _ = runs.train(name, "--cuda-graph=off", *flags)
    report, _, stderr = runs.train(name, "--cuda-graph=on", *flags)
    check(off is not None and report is not None,
          f"{label}: trains with --cuda-graph=on and off")
    if off is None or report is None:
        return
    graph = report["cuda_graph"]
    lines = graph_lines(stderr)
    check(graph["used"] is False and graph["graph_steps"] == 0 and
          (graph["reason"] or "").startswith(reason) and
          lines == ["CUDA graph not used: " + graph["reason"]],
          f"{label}: falls back saying why, once: "
          f"{lines} {graph}")
    check(report["losses"] == off["losses"],
          f"{label}: the same losses as --cuda-graph=off")


def check_skip_nonfinite(runs, workdir):
    """The MLP trained on rows of which row 1 overflows: the step is skipped
    on the GPU, the parameters as if the row had not come."""
    import numpy as np
    rng = np.random.default_rng(5)
    steps = runs.steps
    x = rng.uniform(-1, 1, size=(steps, 8, 6)).astype(np.float32)
    x[1, 3, :] = 3e38
    y = rng.integers(0, 3, size=(steps, 8))
    keep = [s for s in range(steps) if s != 1]
    data = {}
    for name, rows in [("big", range(steps)), ("without", keep)]:
        data[name] = os.path.join(workdir, "data_" + name)
        os.makedirs(data[name], exist_ok=True)
        np.save(os.path.join(data[name], "x.npy"), x[list(rows)])
        np.save(os.path.join(data[name], "y.npy"), y[list(rows)])
    skipped, params, _ = runs.train("dropout_mlp_stage2", "--data",
                                    data["big"], "--skip-nonfinite-steps")
    saved_steps = runs.steps
    runs.steps = steps - 1
    clean, clean_params, _ = runs.train("dropout_mlp_stage2", "--data",
                                        data["without"])
    runs.steps = saved_steps
    check(skipped is not None and clean is not None,
          "dropout_mlp_stage2: trains with an overflowing row and "
          "--skip-nonfinite-steps, and without the row")
    if skipped is None or clean is None:
        return
    check(skipped["skipped_steps"] == [2],
          f"dropout_mlp_stage2: step 2 skipped ({skipped['skipped_steps']})")
    check(same_files(params, clean_params),
          "dropout_mlp_stage2: the parameters after the skipped step equal "
          "a run without its row, bit for bit")


def check_tf32(runs, f32, bf16):
    """--allow-tf32 against `f32` and `bf16`, the same plans' runs without
    it."""
    tf32, _, _ = runs.train("tiny_f32_stage2", "--allow-tf32")
    check(f32 is not None and tf32 is not None,
          "tiny_f32_stage2: trains with and without --allow-tf32")
    if f32 is None or tf32 is None:
        return None
    worst = max(abs(a - b) / abs(a)
                for a, b in zip(f32["losses"], tf32["losses"]))
    check(tf32["allow_tf32"] is True and f32["allow_tf32"] is False,
          "the report records --allow-tf32")
    kind = ("bit for bit: cuBLAS chose no TF32 kernel" if worst == 0
            else "TF32 kernels ran")
    check(worst <= TF32_RTOL,
          f"tiny_f32_stage2: --allow-tf32 losses within {TF32_RTOL:g} of "
          f"f32 (max rel diff {worst:.2e}, {kind})")
    bf16_tf32, _, _ = runs.train("tiny_bf16_stage2", "--allow-tf32")
    check(bf16 is not None and bf16_tf32 is not None and
          bf16["losses"] == bf16_tf32["losses"],
          "tiny_bf16_stage2: --allow-tf32 changes no bf16 product")
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-run", required=True)
    parser.add_argument("--zero-compile")
    parser.add_argument("--plans")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.steps < 4:
        parser.error("--steps must be 4 or more")

    workdir = tempfile.mkdtemp(prefix="cuda_graph_")
    plans = args.plans
    if not plans:
        if not args.zero_compile:
            sys.exit("give --plans or --zero-compile")
        plans = compile_plans(args.zero_compile, workdir)
    missing = [name for name in PLANS
               if not os.path.exists(os.path.join(plans, name + ".zplan"))]
    if missing:
        sys.exit(f"{plans} lacks {', '.join(missing)}.zplan")
    runs = Runs(args.zero_run, plans, args.steps, workdir)

    check_cpu_flags(runs, "tiny_f32_stage2")
    skipped = None
    tf32_diff = None
    f32 = check_graph(runs, "tiny_f32_stage2", trace=True)
    if not isinstance(f32, dict):
        skipped = no_device(f32)
        check(skipped is not None, "tiny_f32_stage2: trains on the GPU: "
              f"{f32.stderr.strip()}")
    else:
        reports = {}
        for name in ["tiny_bf16_stage2", "dropout_mlp_stage2"]:
            reports[name] = check_graph(runs, name, trace=False)
            check(isinstance(reports[name], dict),
                  f"{name}: trains on the GPU")
        check_fallback(runs, "tiny_f32_stage2_cpu_offload", [],
                       "the plan offloads")
        # Checking gradients changes no number: the losses are op by op's.
        check_fallback(runs, "tiny_f32_stage2", ["--check-gradients"],
                       "--check-gradients", off=f32["off"])
        check_fallback(runs, "tiny_f32_stage2", ["--skip-nonfinite-steps"],
                       "steps whose loss is not finite are skipped",
                       off=f32["off"])
        check_skip_nonfinite(runs, workdir)
        bf16 = reports["tiny_bf16_stage2"]
        if "on" in f32 and isinstance(bf16, dict) and "on" in bf16:
            tf32_diff = check_tf32(runs, f32["on"], bf16["on"])

    if args.out:
        with open(args.out, "w") as file:
            json.dump({"skipped": skipped, "tf32_max_rel_diff": tf32_diff,
                       "failures": failures}, file, indent=2)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    if skipped is not None:
        print(f"SKIPPED: no CUDA device: {skipped} (checked the flags on the "
              "CPU and that --device cuda fails with this one line)")
    else:
        print(f"CUDA graph and TF32 checks pass ({runs.count} runs of "
              f"{args.steps} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
