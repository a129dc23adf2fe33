#!/usr/bin/python3
"""Checks zero-run's multi-tensor launches (--multi-tensor) on the GPU:

- the same plan trained N steps with --multi-tensor=on and off gives
  bit-identical losses and final parameters (--save), with the CUDA graph
  (the default, auto) capturing the multi-tensor launches like any other.
  Plans: the tiny GPT-2 in f32 at stages 0 and 2, in bf16 at stages 0 and
  2, with AdamW (weight decay 0.1) and with SGD at stage 0, and in fp16
  with dynamic loss scaling at stage 0;
- the report's `multi_tensor`: on, every update of the plan in one launch
  (and with bf16 every cast to the parameters in the next); off, none, the
  reason `--multi-tensor=off`;
- a traced step (--trace) names the merged launches `nn.adam xN`, and
  `--cuda-graph=off` and `--check-gradients` (updates one by one, said in
  the report) change no number.

Without a usable GPU, `--device cuda` must fail with exactly one line
`zero-run: rank 0: no CUDA device: <reason>`; the check then prints
`SKIPPED: ...` and succeeds, having checked the flag on the CPU.

Usage:
    cuda_multi_tensor_check.py --zero-run BIN --zero-compile BIN [--steps N]
    cuda_multi_tensor_check.py --zero-run BIN --plans DIR [--steps N]
                               [--out FILE]
        (DIR holds the .zplan files of PLANS, as bench/gpu/bundle.sh makes
        them)
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from gpu_checks import check, failures, no_device, run, same_files

# name: zero-compile flags besides --preset=tiny --world=1; the precision
# comes from a DeepSpeed config, as bench/gpu/bundle.sh writes it.
PLANS = {
    "tiny_f32_stage0": ["--stage=0"],
    "tiny_f32_stage2": ["--stage=2"],
    "tiny_bf16_stage0": ["--config=@bf16_stage0.json"],
    "tiny_bf16_stage2": ["--config=@bf16_stage2.json"],
    "tiny_adamw_stage0": ["--pipeline=stage=0 optimizer=adamw "
                          "weight-decay=0.1"],
    "tiny_sgd_stage0": ["--pipeline=stage=0 optimizer=sgd"],
    "tiny_fp16_stage0": ["--config=@fp16_stage0.json"],
}


def compile_plans(zero_compile, workdir):
    for precision in ["bf16", "fp16"]:
        for stage in [0, 2]:
            with open(os.path.join(workdir, f"{precision}_stage{stage}.json"),
                      "w") as file:
                json.dump({precision: {"enabled": True},
                           "zero_optimization": {"stage": stage}}, file)
    for name, flags in PLANS.items():
        path = os.path.join(workdir, name + ".zplan")
        flags = [flag.replace("@", workdir + "/") for flag in flags]
        result = run([zero_compile, "--preset=tiny", "--world=1", *flags,
                      "-o", path, "--report=none"])
        if result.returncode != 0:
            sys.exit(f"zero-compile {name} failed: {result.stderr.strip()}")
    return workdir


def expected_runs(path):
    """The launches --multi-tensor=on should make of the plan at `path`:
    every update in one, then with mixed precision (bf16) every cast in
    one; None where it is not so simple (fp16's loss scaling)."""
    with open(path) as file:
        plan = json.load(file)
    ops = [i.get("op") for i in plan["instructions"]]
    updates = [op for op in ops if op in ("nn.adam", "nn.adamw", "nn.sgd")]
    if not updates or "nn.select" in ops:
        return None
    runs = [{"op": updates[0], "instructions": len(updates)}]
    first = ops.index(updates[0])
    casts = ops[first:].count("nn.cast")
    if casts:
        runs.append({"op": "nn.cast", "instructions": casts})
    return runs


class Runs:
    def __init__(self, zero_run, plans, steps, workdir):
        self.zero_run, self.plans = zero_run, plans
        self.steps, self.workdir = steps, workdir
        self.count = 0

    def train(self, name, *flags, device="cuda", trace=False):
        """(report, params dir, stderr, tag) or (None, None, result, tag);
        with `trace`, the timeline is at tag + '.trace'."""
        self.count += 1
        tag = os.path.join(self.workdir, f"{name}.{self.count}")
        report = tag + ".json"
        params = tag + ".params"
        command = [self.zero_run, os.path.join(self.plans, name + ".zplan"),
                   "--device", device, "--steps", str(self.steps),
                   "--seed", "5", "--quiet", "--report-file", report,
                   "--save", params, *flags]
        if trace:
            command += ["--trace", tag + ".trace"]
        result = run(command)
        if result.returncode != 0:
            return None, None, result, tag
        with open(report) as file:
            return json.load(file), params, result.stderr, tag


def check_cpu_flag(runs, name):
    """The flag parses and reaches the report on any machine."""
    bad = run([runs.zero_run, os.path.join(runs.plans, name + ".zplan"),
               "--steps", "1", "--multi-tensor=maybe"])
    check(bad.returncode == 1 and bad.stderr.startswith(
        "zero-run: --multi-tensor: expected on or off, got 'maybe'\n"),
        "--multi-tensor=maybe is refused with one line")
    on, _, _, _ = runs.train(name, device="cpu")
    off, _, _, _ = runs.train(name, "--multi-tensor=off", device="cpu")
    check(on is not None and off is not None,
          f"{name}: trains on the CPU with --multi-tensor on and off")
    if on is None or off is None:
        return
    multi = on.get("multi_tensor", {})
    check(multi.get("mode") == "on" and multi.get("applies") is False and
          multi.get("launches") == 0 and
          "cpu" in (multi.get("reason") or "") and
          off["multi_tensor"]["mode"] == "off" and
          on["losses"] == off["losses"],
          f"{name}: the CPU report says multi-tensor launches do not apply: "
          f"{multi}")


def check_plan(runs, name):
    """on against off: bit-identical, the report's counts. Returns the
    failed run when the GPU cannot be used, else None."""
    off, off_params, off_err, _ = runs.train(name, "--multi-tensor=off")
    if off is None:
        return off_err
    on, on_params, on_err, _ = runs.train(name)
    check(on is not None, f"{name}: trains with --multi-tensor=on: "
          f"{'' if on else on_err.stderr.strip()}")
    if on is None:
        return None
    check(off["multi_tensor"] == {
        "mode": "off", "applies": True, "instructions": 0, "launches": 0,
        "runs": [], "reason": "--multi-tensor=off"},
        f"{name}: off merges nothing: {off['multi_tensor']}")
    multi = on["multi_tensor"]
    want = expected_runs(os.path.join(runs.plans, name + ".zplan"))
    if want is not None:
        check(multi["mode"] == "on" and multi["applies"] is True and
              multi["runs"] == want and multi["launches"] == len(want) and
              multi["instructions"] == sum(r["instructions"] for r in want)
              and multi["reason"] is None,
              f"{name}: on merges {want}: {multi}")
    else:
        check(multi["launches"] > 0 and
              multi["instructions"] > multi["launches"],
              f"{name}: on merges some updates and casts: "
              f"{multi['instructions']} instructions in "
              f"{multi['launches']} launches")
    check(on["losses"] == off["losses"],
          f"{name}: losses equal --multi-tensor=off's bit for bit: "
          f"{on['losses']} vs {off['losses']}")
    check(same_files(on_params, off_params),
          f"{name}: final parameters equal bit for bit")
    check(on["cuda_graph"]["used"] is True and
          on["cuda_graph"]["graph_steps"] == runs.steps - 1 and
          on["cuda_graph"] == off["cuda_graph"],
          f"{name}: the CUDA graph captured the multi-tensor launches as it "
          f"captures the single kernels: {on['cuda_graph']}")
    check(on["comm_bytes"] == off["comm_bytes"] and
          [p["by_role"] for p in on["peak_bytes"]] ==
          [p["by_role"] for p in off["peak_bytes"]],
          f"{name}: bytes sent and memory peaks as off")
    return {"on": on, "off": off, "want": want}


def check_variants(runs, name, on, off, want):
    """Op by op, traced, and with --check-gradients: the same numbers."""
    graphless, _, err, _ = runs.train(name, "--cuda-graph=off")
    check(graphless is not None and graphless["losses"] == off["losses"] and
          graphless["multi_tensor"] == on["multi_tensor"] and
          graphless["cuda_graph"]["used"] is False,
          f"{name} --cuda-graph=off: the same launches op by op, the same "
          f"losses: {'' if graphless else err.stderr.strip()}")
    traced, _, err, tag = runs.train(name, trace=True)
    if traced is None:
        check(False, f"{name} --trace: {err.stderr.strip()}")
    else:
        with open(tag + ".trace") as file:
            events = json.load(file)
        events = events.get("traceEvents", events)
        names = {e.get("name") for e in events if e.get("ph") == "X"}
        merged = [f"{r['op']} x{r['instructions']}" for r in want]
        check(traced["losses"] == off["losses"] and
              all(m in names for m in merged) and "nn.adam" not in names,
              f"{name} --trace: the same losses; the timeline names the "
              f"merged launches {merged}")
    checked, _, err, _ = runs.train(name, "--check-gradients")
    check(checked is not None and checked["losses"] == off["losses"] and
          "--check-gradients" in (checked["multi_tensor"]["reason"] or "") and
          not any(r["op"] in ("nn.adam", "nn.adamw", "nn.sgd")
                  for r in checked["multi_tensor"]["runs"]),
          f"{name} --check-gradients: updates one by one, the same losses: "
          f"{checked['multi_tensor'] if checked else err.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zero-run", required=True)
    parser.add_argument("--zero-compile")
    parser.add_argument("--plans")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.steps < 3:
        parser.error("--steps must be 3 or more")

    workdir = tempfile.mkdtemp(prefix="cuda_multi_tensor_")
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

    check_cpu_flag(runs, "tiny_bf16_stage0")
    skipped = None
    summary = {}
    for name in PLANS:
        result = check_plan(runs, name)
        if isinstance(result, subprocess.CompletedProcess):
            reason = no_device(result)
            if reason is not None and not summary:
                skipped = reason
                break
            check(False, f"{name}: trains on the GPU: "
                  f"{result.stderr.strip()}")
            continue
        if result is not None:
            summary[name] = result["on"]["multi_tensor"]
            if name == "tiny_bf16_stage0" and result["want"]:
                check_variants(runs, name, result["on"], result["off"],
                               result["want"])

    if args.out:
        with open(args.out, "w") as file:
            json.dump({"skipped": skipped, "multi_tensor": summary,
                       "failures": failures}, file, indent=2)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    if skipped is not None:
        print(f"SKIPPED: no CUDA device: {skipped} (checked the flag on the "
              "CPU and that --device cuda fails with this one line)")
    else:
        print(f"multi-tensor checks pass ({runs.count} runs of {args.steps} "
              "steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
