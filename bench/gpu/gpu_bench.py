#!/usr/bin/env python3
"""GPT-2 small on one GPU: ZeroSBP (`zero-run --device cuda`) against PyTorch
eager, fp32 and bf16 mixed precision, from the same parameters and batches.

For each precision the plan that bench/gpu/bundle.sh compiled (world 1,
stage 0, Adam lr 1e-4, a global batch of --batch sequences) is trained for
--steps steps by `zero-run PLAN --device cuda --init DIR --data DIR` and
by torch_gpt2.py's model on the same device:

* fp32: TF32 off for matmuls and cuDNN, since ZeroSBP's matmuls are plain
  fp32 (cuBLAS with f32 compute);
* bf16: torch.autocast(device_type, dtype=torch.bfloat16) around the
  forward, fp32 parameters, the loss in fp32, torch.optim.Adam; ZeroSBP
  keeps bf16 parameters with fp32 master weights (DeepSpeed's bf16).

The initial parameters (char_case.py's initializers, seeded) and the random
tokens are written to a temporary directory on this machine, never bundled.
Step time is the median over the steps after --warmup; each PyTorch step is
timed between torch.cuda.synchronize() calls, ZeroSBP's by zero-run (host
wall time until the step's last event). MFU is

    tokens/s * (6 * N_matmul + 12 * layers * hidden * seq) / peak

with N_matmul = 12 * layers * hidden^2 + vocab * hidden (the weights of the
four Linear layers of every block and the tied LM head, counted once as a
vocab x hidden matmul) and the GPU's dense peak for the precision (H100 SXM
and H200: 989 TFLOP/s bf16 tensor, 67 TFLOP/s fp32 without tensor cores).

A failed zero-run is printed and recorded, and PyTorch still runs. The exit
status is 1 when a training failed or the losses differ by more than
--fp32-rtol / --bf16-rtol (relative, step by step).

Usage (on the GPU machine, after `source BUNDLE/env.sh`):
    gpu_bench.py --bundle BUNDLE [--steps 10] [--warmup 3] [--batch 8]
        [--precisions fp32,bf16] [--json FILE]
Smoke run without a GPU:
    gpu_bench.py --bundle BUNDLE --device cpu --preset tiny --steps 4
        --warmup 1
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# torch_gpt2.py and char_case.py sit beside this script in a bundle, and in
# bench/pytorch in the repository.
for _path in (HERE, os.path.join(HERE, "..", "pytorch")):
    if os.path.exists(os.path.join(_path, "torch_gpt2.py")):
        sys.path.insert(0, os.path.abspath(_path))
        break

import char_case  # noqa: E402

# Dense peaks in TFLOP/s (NVIDIA's data sheets, without sparsity): bf16 on
# tensor cores, fp32 on the CUDA cores. The first name contained in the
# device's name wins.
PEAK_TFLOPS = [
    ("H100 PCIe", {"bf16": 756.0, "fp32": 51.0}),
    ("H100 NVL", {"bf16": 835.0, "fp32": 60.0}),
    ("H100", {"bf16": 989.0, "fp32": 67.0}),
    ("H200", {"bf16": 989.0, "fp32": 67.0}),
]
RTOL = {"fp32": 1e-4, "bf16": 2e-2}


def flops_per_token(m):
    """Training FLOPs per token: 6 per matmul weight (forward 2, backward 4)
    and the attention scores and values, 12 * layers * hidden * seq."""
    layers, hidden = m["layers"], m["hidden"]
    matmul_params = 12 * layers * hidden ** 2 + m["vocab"] * hidden
    return 6 * matmul_params + 12 * layers * hidden * m["seq"]


def peak_for(device_name, override):
    """(peaks by precision in FLOP/s, where they come from), or (None, why)."""
    if override:
        return {k: v * 1e12 for k, v in override.items()}, "--peak-tflops"
    for key, peaks in PEAK_TFLOPS:
        if key.lower() in device_name.lower():
            return ({k: v * 1e12 for k, v in peaks.items()},
                    "%s: %g TFLOP/s bf16, %g TFLOP/s fp32" %
                    (key, peaks["bf16"], peaks["fp32"]))
    return None, "no known peak for %r (give --peak-tflops)" % device_name


def load_manifest(bundle):
    path = os.path.join(bundle, "plans", "plans.json")
    with open(path) as f:
        return json.load(f)


def find_plan(manifest, preset, precision, batch):
    for entry in manifest["bench"].values():
        if (entry["preset"], entry["precision"], entry["batch"]) == \
                (preset, precision, batch):
            return entry
    return None


def write_case(work, model, batch, steps, seed):
    """init/<param>.npy and data/{tokens,labels}.npy; returns (init, data)."""
    init, data = os.path.join(work, "init"), os.path.join(work, "data")
    os.makedirs(init, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    specs = char_case.gpt2_parameters(model["layers"], model["hidden"],
                                      model["vocab"], model["seq"])
    params = char_case.initial_parameters(specs,
                                          np.random.default_rng([seed, 0]))
    for name, value in params.items():
        np.save(os.path.join(init, name + ".npy"), value)
    del params
    # Random windows of a random token stream: tokens and next tokens.
    rng = np.random.default_rng([seed, 1])
    stream = rng.integers(0, model["vocab"],
                          size=max(1 << 16, 4 * (model["seq"] + 1)))
    tokens, labels = char_case.batches(stream, steps, batch, model["seq"], rng)
    np.save(os.path.join(data, "tokens.npy"), tokens.astype(np.int64))
    np.save(os.path.join(data, "labels.npy"), labels.astype(np.int64))
    return init, data


def last_lines(text, count=5):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return "\n".join(lines[-count:]) if lines else ""


def run_zerosbp(args, zero_run, plan, init, data, report):
    """zero-run's report, or {"error": ...} when it failed."""
    command = [zero_run, plan, "--device", args.device, "--steps",
               str(args.steps), "--init", init, "--data", data,
               "--report-file", report, "--quiet"]
    print("$ " + " ".join(command), flush=True)
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=args.zero_run_timeout)
    except subprocess.TimeoutExpired:
        return {"error": "zero-run timed out after %d s" %
                args.zero_run_timeout}
    except OSError as error:
        return {"error": "cannot start zero-run: %s" % error}
    if done.returncode != 0:
        return {"error": "zero-run exited %d: %s" % (
            done.returncode, last_lines(done.stderr + done.stdout) or
            "(no output)")}
    with open(report) as f:
        return json.load(f)


def run_torch(args, model, precision, init, data):
    """PyTorch eager: {"losses", "step_ms", "peak_bytes", ...}."""
    import torch
    import torch.nn.functional as F
    import torch_gpt2

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda:
        # ZeroSBP's fp32 matmuls are IEEE fp32; TF32 would be a different
        # (faster, less exact) computation.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    net = torch_gpt2.Gpt2(model["vocab"], model["seq"], model["hidden"],
                          model["heads"], model["layers"])
    torch_gpt2.load_parameters(net, init)
    net.to(device)
    opt_cfg = model["optimizer"]
    opt = torch.optim.Adam(net.parameters(), lr=opt_cfg["lr"],
                           betas=tuple(opt_cfg["betas"]), eps=opt_cfg["eps"],
                           weight_decay=opt_cfg["weight_decay"])
    tokens = torch.from_numpy(np.load(os.path.join(data, "tokens.npy")))
    labels = torch.from_numpy(np.load(os.path.join(data, "labels.npy")))
    tokens, labels = tokens.to(device), labels.to(device)
    bf16 = precision == "bf16"

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    losses, step_ms = [], []
    for step in range(args.steps):
        sync()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                            enabled=bf16):
            logits = net(tokens[step])
        loss = F.cross_entropy(logits.float().reshape(-1, model["vocab"]),
                               labels[step].reshape(-1))
        loss.backward()
        opt.step()
        value = loss.item()
        sync()
        step_ms.append((time.perf_counter() - start) * 1e3)
        losses.append(value)
    result = {"losses": losses, "step_ms": step_ms, "peak_bytes": None}
    if cuda:
        result["peak_bytes"] = torch.cuda.max_memory_allocated(device)
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(device)
    del net, opt, logits, loss, tokens, labels
    release_torch_memory()
    return result


def release_torch_memory():
    """Gives PyTorch's cached GPU memory back before the next zero-run."""
    import gc
    import torch
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def summarize(system, precision, result, args, model, peaks):
    """One row of the table from a training's losses and step times."""
    row = {"precision": precision, "system": system,
           "error": result.get("error")}
    if row["error"]:
        return row
    ms = statistics.median(result["step_ms"][args.warmup:])
    tokens_per_s = args.batch * model["seq"] * 1e3 / ms
    row.update(ms_per_step=ms, tokens_per_s=tokens_per_s,
               mfu=(tokens_per_s * flops_per_token(model) / peaks[precision]
                    if peaks else None),
               peak_bytes=result["peak_bytes"],
               first_loss=result["losses"][0], last_loss=result["losses"][-1],
               losses=result["losses"], step_ms=result["step_ms"])
    for key in ("peak_reserved_bytes", "planned_peak_bytes"):
        if key in result:
            row[key] = result[key]
    return row


def zerosbp_result(report, device):
    """Losses, step times and peak memory out of zero-run's report."""
    if "error" in report:
        return report
    peak = report["peak_bytes"][0]
    return {"losses": report["losses"], "step_ms": report["step_ms"],
            # On the GPU: the arena plus the stream-ordered pool's reserve.
            "peak_bytes": peak["device_held"] if device == "cuda"
            else peak["total"],
            "planned_peak_bytes": report["planned_bytes"]["arena"]}


def compare_losses(rows, precision, rtol):
    """Max relative difference of PyTorch's losses from ZeroSBP's."""
    by_system = {r["system"]: r for r in rows if r["precision"] == precision}
    zero, torch_row = by_system.get("ZeroSBP"), by_system.get("PyTorch")
    if not zero or not torch_row or zero["error"] or torch_row["error"]:
        return None
    diffs = [abs(t - z) / max(abs(z), 1e-30)
             for z, t in zip(zero["losses"], torch_row["losses"])]
    torch_row["rel_loss_diff"] = diffs
    torch_row["max_rel_loss_diff"] = max(diffs)
    torch_row["loss_rtol"] = rtol
    return max(diffs)


def device_info(args):
    """The device's name and torch's versions; None without a CUDA device."""
    import torch
    if args.device == "cuda":
        if not torch.cuda.is_available():
            return None
        props = torch.cuda.get_device_properties(0)
        return {"name": torch.cuda.get_device_name(0),
                "torch": torch.__version__, "cuda": torch.version.cuda,
                "memory_bytes": props.total_memory}
    return {"name": "CPU %s, %d cores" % (platform.processor() or
                                          platform.machine(), os.cpu_count()),
            "torch": torch.__version__, "cuda": None, "memory_bytes": None}


def fmt(value, pattern, none="-"):
    return none if value is None else pattern % value


def gib(value):
    """GiB with two decimals, or three digits when below 1 GiB."""
    if value is None:
        return "-"
    value /= 2**30
    return "%.2f" % value if value >= 1 else "%.3g" % value


def print_table(gpu, date, rows):
    header = ["GPU", "date", "precision", "system", "ms/step", "tokens/s",
              "MFU", "peak GiB", "first loss", "last loss",
              "max rel loss diff"]
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        if r["error"]:
            cells = [gpu, date, r["precision"], r["system"]] + \
                ["failed"] + ["-"] * 6
        else:
            cells = [gpu, date, r["precision"], r["system"],
                     "%.1f" % r["ms_per_step"], "%.0f" % r["tokens_per_s"],
                     fmt(r["mfu"] and 100 * r["mfu"], "%.1f%%"),
                     gib(r["peak_bytes"]),
                     "%.6f" % r["first_loss"], "%.6f" % r["last_loss"],
                     fmt(r.get("max_rel_loss_diff"), "%.1e")]
        print("| " + " | ".join(cells) + " |")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bundle", help="the folder bundle.sh wrote "
                        "(default: the bundle holding this script, else "
                        ".gpu-bundle at the repository root)")
    parser.add_argument("--zero-run", help="default: BUNDLE/bin/zero-run")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--preset", choices=["small", "tiny"],
                        default="small")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3,
                        help="first steps left out of the step time")
    parser.add_argument("--batch", type=int, default=8,
                        help="global batch in sequences; bundle.sh must have "
                        "compiled a plan for it (--batch there)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fp32-rtol", type=float, default=RTOL["fp32"])
    parser.add_argument("--bf16-rtol", type=float, default=RTOL["bf16"])
    parser.add_argument("--peak-tflops",
                        help="dense peaks for MFU, e.g. fp32=67,bf16=989 "
                        "(default: from the GPU's name)")
    parser.add_argument("--zero-run-timeout", type=int, default=200,
                        help="seconds one zero-run may take")
    parser.add_argument("--workdir", help="where the parameters and data go "
                        "(default: a temporary directory, removed after)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    args.precisions = [p for p in args.precisions.split(",") if p]
    if not args.precisions or set(args.precisions) - {"fp32", "bf16"}:
        parser.error("--precisions takes fp32 and/or bf16, comma-separated")
    if not 0 <= args.warmup < args.steps:
        parser.error("--warmup must be at least 0 and below --steps")
    if args.peak_tflops:
        try:
            args.peak_tflops = {k: float(v) for k, v in (
                item.split("=") for item in args.peak_tflops.split(","))}
        except ValueError:
            parser.error("--peak-tflops takes fp32=X,bf16=Y")
        if set(args.precisions) - set(args.peak_tflops):
            parser.error("--peak-tflops needs a peak for every precision")
    if not args.bundle:
        inside = os.path.join(HERE, "..")
        args.bundle = inside if os.path.exists(os.path.join(
            inside, "plans", "plans.json")) else os.path.join(
                HERE, "..", "..", ".gpu-bundle")
    args.bundle = os.path.abspath(args.bundle)
    args.zero_run = args.zero_run or os.path.join(args.bundle, "bin",
                                                  "zero-run")
    return args


def main():
    args = parse_args()
    try:
        manifest = load_manifest(args.bundle)
    except OSError as error:
        sys.exit("gpu_bench: no bundle at %s (run bench/gpu/bundle.sh): %s"
                 % (args.bundle, error))
    plans = {}
    for precision in args.precisions:
        entry = find_plan(manifest, args.preset, precision, args.batch)
        if entry is None:
            sys.exit("gpu_bench: the bundle has no %s %s plan for batch %d "
                     "(bench/gpu/bundle.sh --batch %d)" %
                     (args.preset, precision, args.batch, args.batch))
        plans[precision] = entry
    # Every precision's plan is the same model and optimizer.
    model = plans[args.precisions[0]]
    info = device_info(args)
    if info is None:
        sys.exit("gpu_bench: torch sees no CUDA device")
    peaks, peak_note = (None, "no MFU on the CPU") if args.device == "cpu" \
        else peak_for(info["name"], args.peak_tflops)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    print("%s, torch %s (CUDA %s); GPT-2 %s: %d layers, hidden %d, %d heads, "
          "seq %d, vocab %d, %d parameters, batch %d, %d steps (median after "
          "%d); %.3g FLOP/token; peak: %s" % (
              info["name"], info["torch"], info["cuda"], args.preset,
              model["layers"], model["hidden"], model["heads"], model["seq"],
              model["vocab"], model["params"], args.batch, args.steps,
              args.warmup, flops_per_token(model), peak_note), flush=True)

    work = args.workdir or tempfile.mkdtemp(prefix="gpu_bench_")
    os.makedirs(work, exist_ok=True)
    rows, worst = [], {}
    try:
        start = time.perf_counter()
        init, data = write_case(work, model, args.batch, args.steps, args.seed)
        print("parameters and data written to %s in %.1f s" %
              (work, time.perf_counter() - start), flush=True)
        for precision in args.precisions:
            entry = plans[precision]
            report = os.path.join(work, "zerosbp_%s.json" % precision)
            zero = zerosbp_result(run_zerosbp(
                args, args.zero_run, os.path.join(args.bundle, entry["file"]),
                init, data, report), args.device)
            if "error" in zero:
                print("ZeroSBP %s failed: %s" % (precision, zero["error"]),
                      flush=True)
            rows.append(summarize("ZeroSBP", precision, zero, args, model,
                                  peaks))
            try:
                result = run_torch(args, entry, precision, init, data)
            except Exception as error:  # an OOM or a CUDA error: recorded
                result = {"error": "%s: %s" % (type(error).__name__,
                                               last_lines(str(error), 3))}
                release_torch_memory()
                print("PyTorch %s failed: %s" % (precision, result["error"]),
                      flush=True)
            rows.append(summarize("PyTorch", precision, result, args, model,
                                  peaks))
            rtol = args.fp32_rtol if precision == "fp32" else args.bf16_rtol
            worst[precision] = compare_losses(rows, precision, rtol)
            for r in rows[-2:]:
                if not r["error"]:
                    print("%s %s: %.1f ms/step, losses %s" % (
                        r["system"], precision, r["ms_per_step"],
                        " ".join("%.6f" % l for l in r["losses"])),
                        flush=True)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print_table(info["name"], date, rows)
    notes = []
    for precision, diff in worst.items():
        rtol = args.fp32_rtol if precision == "fp32" else args.bf16_rtol
        if diff is None:
            notes.append("%s: losses not compared (a training failed)" %
                         precision)
        else:
            notes.append("%s: losses agree to %.1e relative (%s %g)" % (
                precision, diff, "within" if diff <= rtol else "ABOVE", rtol))
    if args.device == "cuda":
        memory = ("ZeroSBP's device memory held (arena + stream-ordered "
                  "pool), PyTorch's max_memory_allocated")
    else:
        memory = "ZeroSBP's measured peak, none for PyTorch on the CPU"
    print("\n" + "; ".join(notes) + ". MFU peak: %s. Peak memory: %s." %
          (peak_note, memory))
    failed = [r for r in rows if r["error"]]
    for r in failed:
        print("%s %s failed: %s" % (r["system"], r["precision"], r["error"]))

    if args.json:
        with open(args.json, "w") as f:
            json.dump({"date": date, "device": args.device, "gpu": info,
                       "preset": args.preset,
                       "model": {k: model[k] for k in (
                           "layers", "hidden", "heads", "seq", "vocab",
                           "params", "optimizer")},
                       "batch": args.batch, "steps": args.steps,
                       "warmup": args.warmup, "seed": args.seed,
                       "flops_per_token": flops_per_token(model),
                       "peak_flops": peaks, "peak_note": peak_note,
                       "bundle_commit": manifest.get("commit"),
                       "plans": {p: plans[p]["file"] for p in plans},
                       "rows": rows}, f, indent=2)
    disagree = [p for p, d in worst.items() if d is not None and d > (
        args.fp32_rtol if p == "fp32" else args.bf16_rtol)]
    return 1 if failed or disagree else 0


if __name__ == "__main__":
    sys.exit(main())
