#!/usr/bin/env python3
"""GPT-2 small on one GPU: ZeroSBP (`zero-run --device cuda`) against PyTorch
eager and torch.compile, fp32 and bf16 mixed precision, at one or more
global batches, from the same parameters and batches.

For each batch and precision the plan that bench/gpu/bundle.sh compiled
(world 1, stage 0, Adam lr 1e-4, a global batch of that many sequences) is
trained for --steps steps by up to six systems (--systems), one row each:

* zerosbp, "ZeroSBP": `zero-run PLAN --device cuda --init DIR --data DIR`;
* zerosbp-unfused, "ZeroSBP unfused": the same with the plan compiled with
  fuse-attention, fuse-epilogues and recompute-cheap false (the compiler
  before fusion; bundle.sh compiles it at batch 8 only), its losses
  compared with the ZeroSBP row's;
* zerosbp-tf32, "ZeroSBP (TF32)": the fp32 plan run with `zero-run
  --allow-tf32` (cuBLAS's f32 products on TF32 tensor cores), fp32 only
  and by default at batch 8 only (--tf32-batch), its losses compared with
  the fp32 ZeroSBP row's, recorded only;
* eager, "PyTorch eager": torch_gpt2.py's model with its attention as
  ZeroSBP computes it (scores, causal mask, softmax), torch.optim.Adam;
* sdpa, "PyTorch eager (SDPA)": the same with
  F.scaled_dot_product_attention(q, k, v, is_causal=True) (flash or
  memory-efficient attention), the same parameters and optimizer;
* compile, "torch.compile (SDPA, fused Adam)": the SDPA model and its loss
  compiled by torch.compile (--compile-mode), and
  torch.optim.Adam(fused=True).

The PyTorch precisions:

* fp32: TF32 off for matmuls and cuDNN, since ZeroSBP's matmuls are plain
  fp32 (cuBLAS with f32 compute); it stays off when the ZeroSBP (TF32) row
  runs, which has no PyTorch counterpart;
* bf16: torch.autocast(device_type, dtype=torch.bfloat16) around the
  forward, fp32 parameters, the loss in fp32; ZeroSBP keeps bf16
  parameters with fp32 master weights (DeepSpeed's bf16).

The initial parameters (char_case.py's initializers, seeded) and the random
tokens are written to a temporary directory on this machine, never bundled.
Step time is the median over the steps after --warmup; each PyTorch step is
timed between torch.cuda.synchronize() calls, ZeroSBP's by zero-run (host
wall time until the step's last event). The warm-up steps' seconds are
reported apart: for torch.compile they hold the compilation, which happens
in the first step. MFU is

    tokens/s * (6 * N_matmul + 12 * layers * hidden * seq) / peak

with N_matmul = 12 * layers * hidden^2 + vocab * hidden (the weights of the
four Linear layers of every block and the tied LM head, counted once as a
vocab x hidden matmul) and the GPU's dense peak for the precision (H100 SXM
and H200: 989 TFLOP/s bf16 tensor, 67 TFLOP/s fp32 without tensor cores);
the same count for every row, the full seq x seq attention included. The
ZeroSBP (TF32) row's MFU is against the fp32 peak too, as the other fp32
rows', so it can read above 100%.

The op breakdown (--ops, bf16 by default) runs `zero-run PLAN --steps 3
--trace FILE` on the fused and the unfused plan of one batch (8), sums the
traced step's compute-stream time per op name, prints the table and writes
it to --ops-dir/gpu_ops.csv (op, calls and ms, fused and unfused), with the
two traces. The traced step, the last, runs op by op with an event pair
around every op, whatever --cuda-graph: its time is not the rows' ms/step,
which from the second step on are CUDA graph launches.

Rows run in this order: for each batch and precision ZeroSBP, ZeroSBP
unfused, ZeroSBP (TF32), eager and SDPA; then the op breakdown; then the torch.compile
rows, the slowest to start. A row that fails
(zero-run's exit, a timeout, an OOM, torch.compile without triton, ...) is
printed and recorded, and the other rows still run; without PyTorch the
PyTorch rows are skipped, each with a line that says so. On SIGTERM or
SIGINT (on_gpu.sh's time limit) the rows not yet run are recorded as such
and the table and --json are still written. The JSON is rewritten after
every row.

Exit status 1 when a ZeroSBP or PyTorch eager row failed, when the eager
losses differ from ZeroSBP's by more than --fp32-rtol / --bf16-rtol
(relative, step by step), or when stopped. The ZeroSBP unfused, SDPA and
torch.compile rows record their loss difference and whether it is within
the same tolerance, the ZeroSBP (TF32) row within --tf32-rtol, but none of
them, failed or not, changes the exit status (their kernels round
differently), nor does the op breakdown.

Usage (on the GPU machine, after `source BUNDLE/env.sh`):
    gpu_bench.py --bundle BUNDLE [--steps 10] [--warmup 3] [--batch 8,16]
        [--precisions fp32,bf16]
        [--systems zerosbp,zerosbp-unfused,zerosbp-tf32:fp32,eager,sdpa,
                   compile:bf16] [--tf32-batch 8]
        [--ops bf16] [--ops-dir DIR] [--json FILE]
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
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

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
# The ZeroSBP (TF32) row against the fp32 ZeroSBP row, recorded only: TF32
# rounds the products' inputs to 10 mantissa bits. 5e-3 is the bound that
# tests/gpu/cuda_graph_check.py puts on --allow-tf32 (tiny GPT-2).
TF32_RTOL = 5e-3

# (--systems key, the row's name), in the table's order.
SYSTEMS = [
    ("zerosbp", "ZeroSBP"),
    ("zerosbp-unfused", "ZeroSBP unfused"),
    ("zerosbp-tf32", "ZeroSBP (TF32)"),
    ("eager", "PyTorch eager"),
    ("sdpa", "PyTorch eager (SDPA)"),
    ("compile", "torch.compile (SDPA, fused Adam)"),
]
SYSTEM_NAMES = dict(SYSTEMS)
SYSTEM_ORDER = {key: i for i, (key, _) in enumerate(SYSTEMS)}
# torch.compile only in bf16: with it in fp32 too, two batches do not fit
# on_gpu.sh's 215 s (each compilation of GPT-2 small takes about a minute).
# zerosbp-unfused runs where the bundle has an unfused plan (batch 8);
# zerosbp-tf32 at --tf32-batch (8): one more zero-run of GPT-2 small fp32.
DEFAULT_SYSTEMS = ("zerosbp,zerosbp-unfused,zerosbp-tf32:fp32,eager,sdpa,"
                   "compile:bf16")
# The precisions a system can run in (the others: fp32 and bf16).
# --allow-tf32 changes f32 products only: a bf16 plan would run unchanged.
SYSTEM_PRECISIONS = {"zerosbp-tf32": ("fp32",)}
# The batches of the zerosbp-tf32 rows unless --tf32-batch says otherwise.
DEFAULT_TF32_BATCH = "8"
# The rows whose failure, or (eager) loss disagreement, sets exit status 1.
GATING = ("zerosbp", "eager")
# The ZeroSBP rows: which plan each runs (the manifest's "fusion"), and
# zero-run's extra flags.
ZEROSBP_FUSION = {"zerosbp": "on", "zerosbp-unfused": "off",
                  "zerosbp-tf32": "on"}
ZEROSBP_FLAGS = {"zerosbp-tf32": ["--allow-tf32"]}
# zero-run --steps of the op breakdown's runs: the first step runs op by op,
# the second is captured as a CUDA graph (--cuda-graph auto), the third,
# traced, runs op by op with an event pair around every op.
OPS_STEPS = 3


class Stopped(BaseException):
    """SIGTERM: on_gpu.sh's time limit. A BaseException, so that a row's
    `except Exception` does not take it for the row's own failure."""


def on_sigterm(signum, frame):
    raise Stopped("SIGTERM")


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


def find_plan(manifest, preset, precision, batch, fusion="on"):
    """The manifest's entry of the plan, or None. fusion "on": the compiler's
    defaults; "off": fuse-attention, fuse-epilogues and recompute-cheap
    false (bundle.sh, batch 8). Entries of bundles made before the unfused
    plans have no "fusion" and are fused."""
    for entry in manifest["bench"].values():
        if (entry["preset"], entry["precision"], entry["batch"],
                entry.get("fusion", "on")) == (preset, precision, batch,
                                               fusion):
            return entry
    return None


def bundled_batches(manifest, preset, precisions):
    """The batches with a (fused) plan for every precision, smallest
    first."""
    batches = {e["batch"] for e in manifest["bench"].values()
               if e["preset"] == preset and e.get("fusion", "on") == "on"}
    return sorted(b for b in batches if all(
        find_plan(manifest, preset, p, b) for p in precisions))


def write_init(work, model, seed):
    """init/<param>.npy, the same for every batch; returns the folder."""
    init = os.path.join(work, "init")
    os.makedirs(init, exist_ok=True)
    specs = char_case.gpt2_parameters(model["layers"], model["hidden"],
                                      model["vocab"], model["seq"])
    params = char_case.initial_parameters(specs,
                                          np.random.default_rng([seed, 0]))
    for name, value in params.items():
        np.save(os.path.join(init, name + ".npy"), value)
    return init


def write_data(work, model, batch, steps, seed):
    """data_b<batch>/{tokens,labels}.npy; returns the folder."""
    data = os.path.join(work, "data_b%d" % batch)
    os.makedirs(data, exist_ok=True)
    # Random windows of a random token stream: tokens and next tokens.
    rng = np.random.default_rng([seed, 1])
    stream = rng.integers(0, model["vocab"],
                          size=max(1 << 16, 4 * (model["seq"] + 1)))
    tokens, labels = char_case.batches(stream, steps, batch, model["seq"], rng)
    np.save(os.path.join(data, "tokens.npy"), tokens.astype(np.int64))
    np.save(os.path.join(data, "labels.npy"), labels.astype(np.int64))
    return data


def last_lines(text, count=5):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return "\n".join(lines[-count:]) if lines else ""


def error_text(error):
    """One short message: the exception's type and its first and last lines
    (torch.compile's errors put the cause first and advice last)."""
    lines = [l.strip() for l in str(error).strip().splitlines() if l.strip()]
    if len(lines) > 3:
        lines = lines[:2] + ["..."] + lines[-1:]
    text = " ".join(lines) or "(no message)"
    if len(text) > 600:
        text = text[:600] + " ..."
    return "%s: %s" % (type(error).__name__, text)


def run_zerosbp(args, zero_run, plan, init, data, report, steps=None,
                trace=None, flags=()):
    """zero-run's report, or {"error": ...} when it failed. steps: default
    --steps; trace: a file for --trace (the last step's timeline); flags:
    more of zero-run's flags (--allow-tf32)."""
    command = [zero_run, plan, "--device", args.device, "--steps",
               str(args.steps if steps is None else steps), "--init", init,
               "--data", data, "--report-file", report, "--quiet"]
    if trace:
        command += ["--trace", trace]
    command += list(flags)
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


def reset_dynamo():
    """Drops torch.compile's compiled code and guards: every compile row
    starts afresh (another batch would otherwise recompile with dynamic
    shapes) and keeps no reference to an earlier row's model."""
    try:
        import torch._dynamo
        torch._dynamo.reset()
    except Exception:  # no dynamo (PyTorch 1.x): nothing was compiled
        pass


def run_torch(args, model, precision, init, data, system):
    """One PyTorch training: {"losses", "step_ms", "peak_bytes", "info"}.
    system: "eager" (scores + mask + softmax), "sdpa" (eager with
    F.scaled_dot_product_attention) or "compile" (SDPA, torch.compile,
    fused Adam)."""
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
    compiled = system == "compile"
    if compiled and not hasattr(torch, "compile"):
        raise RuntimeError("torch.compile needs PyTorch 2.0 or later; this "
                           "is PyTorch %s" % torch.__version__)
    attention = "math" if system == "eager" else "sdpa"
    info = {"attention": attention, "torch": torch.__version__}
    torch.manual_seed(args.seed)
    dims = (model["vocab"], model["seq"], model["hidden"], model["heads"],
            model["layers"])
    if hasattr(torch.device, "__enter__"):
        # PyTorch 2: the model is built on the device, which skips drawing
        # 124M initial values on the host (they are overwritten below).
        with device:
            net = torch_gpt2.Gpt2(*dims, attention=attention)
    else:
        net = torch_gpt2.Gpt2(*dims, attention=attention).to(device)
    torch_gpt2.load_parameters(net, init)
    opt_cfg = model["optimizer"]
    opt_args = dict(lr=opt_cfg["lr"], betas=tuple(opt_cfg["betas"]),
                    eps=opt_cfg["eps"], weight_decay=opt_cfg["weight_decay"])
    if compiled:
        try:
            opt = torch.optim.Adam(net.parameters(), fused=True, **opt_args)
            info["adam"] = "fused"
        except (RuntimeError, ValueError, TypeError) as error:
            if cuda:
                raise
            # The CPU smoke run on a PyTorch whose fused Adam is CUDA-only.
            opt = torch.optim.Adam(net.parameters(), **opt_args)
            info["adam"] = "not fused (fused=True refused: %s)" % \
                error_text(error)
        info["compile_mode"] = args.compile_mode
    else:
        opt = torch.optim.Adam(net.parameters(), **opt_args)
        info["adam"] = "default"
    # One tensor per step, each its own storage: views of one array would
    # differ in storage offset from step to step, which torch.compile may
    # take for a new input to recompile for.
    tokens = torch.from_numpy(np.load(os.path.join(data, "tokens.npy")))
    labels = torch.from_numpy(np.load(os.path.join(data, "labels.npy")))
    steps = [(tokens[i].clone().to(device), labels[i].clone().to(device))
             for i in range(args.steps)]
    del tokens, labels
    bf16 = precision == "bf16"
    vocab = model["vocab"]

    def loss_of(step_tokens, step_labels):
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                            enabled=bf16):
            logits = net(step_tokens)
        return F.cross_entropy(logits.float().reshape(-1, vocab),
                               step_labels.reshape(-1))

    # The model and its loss are compiled together, as nanoGPT compiles a
    # model whose forward returns the loss; the optimizer step stays eager
    # (fused). Compilation happens in the first step.
    step_loss = torch.compile(loss_of, mode=args.compile_mode) \
        if compiled else loss_of

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    losses, step_ms = [], []
    for step_tokens, step_labels in steps:
        sync()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = step_loss(step_tokens, step_labels)
        loss.backward()
        opt.step()
        value = loss.item()
        sync()
        step_ms.append((time.perf_counter() - start) * 1e3)
        losses.append(value)
    result = {"losses": losses, "step_ms": step_ms, "peak_bytes": None,
              "info": info}
    if cuda:
        result["peak_bytes"] = torch.cuda.max_memory_allocated(device)
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved(device)
    return result


def release_torch_memory(compiled=False):
    """Gives PyTorch's cached GPU memory back before the next row; after a
    torch.compile row, its compiled code too."""
    import gc
    try:
        import torch
    except Exception:
        return
    if compiled:
        reset_dynamo()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def summarize(system, precision, batch, result, args, model, peaks):
    """One row of the table from a training's losses and step times."""
    row = {"batch": batch, "precision": precision,
           "system": SYSTEM_NAMES[system], "key": system,
           "error": result.get("error")}
    for key in ("skipped", "error_detail"):
        if result.get(key):
            row[key] = result[key]
    row.update(result.get("info", {}))
    if row["error"]:
        return row
    ms = statistics.median(result["step_ms"][args.warmup:])
    tokens_per_s = batch * model["seq"] * 1e3 / ms
    row.update(ms_per_step=ms, tokens_per_s=tokens_per_s,
               mfu=(tokens_per_s * flops_per_token(model) / peaks[precision]
                    if peaks else None),
               peak_bytes=result["peak_bytes"],
               warmup_s=sum(result["step_ms"][:args.warmup]) / 1e3,
               first_step_s=result["step_ms"][0] / 1e3,
               first_loss=result["losses"][0], last_loss=result["losses"][-1],
               losses=result["losses"], step_ms=result["step_ms"])
    for key in ("peak_reserved_bytes", "planned_peak_bytes"):
        if key in result:
            row[key] = result[key]
    return row


def zerosbp_result(report, device, fusion="on"):
    """Losses, step times and peak memory out of zero-run's report."""
    if "error" in report:
        return dict(report, info={"fusion": fusion})
    peak = report["peak_bytes"][0]
    return {"losses": report["losses"], "step_ms": report["step_ms"],
            # On the GPU: the arena plus the stream-ordered pool's reserve.
            "peak_bytes": peak["device_held"] if device == "cuda"
            else peak["total"],
            "planned_peak_bytes": report["planned_bytes"]["arena"],
            "info": {"fusion": fusion,
                     "cuda_graph": report.get("cuda_graph"),
                     "allow_tf32": report.get("allow_tf32")}}


def split_op_name(name):
    """(op, instructions) of a compute-stream event's name: a multi-tensor
    launch is named "nn.adam x148" (148 instructions in one launch), any
    other event by its one instruction's op."""
    op, sep, count = name.rpartition(" x")
    if sep and op and count.isdigit():
        return op, int(count)
    return name, 1


def op_times(trace_path):
    """Sums zero-run --trace's compute stream (rank 0, thread 0) per op:
    ({op: {"calls", "launches", "ms"}}, the ops' total ms, the span from
    the first op's start to the last op's end in ms). The trace is Chrome
    trace-event JSON of the last step: "X" events with ts and dur in
    microseconds from the step's start (runtime/exec/StepTrace.cpp)."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    compute = [e for e in events if e.get("ph") == "X" and
               e.get("tid") == 0]
    if not compute:
        raise ValueError("%s has no compute-stream events" % trace_path)
    rank = min(e.get("pid", 0) for e in compute)
    compute = [e for e in compute if e.get("pid", 0) == rank]
    ops = {}
    for e in compute:
        op, calls = split_op_name(e["name"])
        entry = ops.setdefault(op, {"calls": 0, "launches": 0, "ms": 0.0})
        entry["calls"] += calls
        entry["launches"] += 1
        entry["ms"] += e["dur"] / 1e3
    total = sum(entry["ms"] for entry in ops.values())
    span = (max(e["ts"] + e["dur"] for e in compute) -
            min(e["ts"] for e in compute)) / 1e3
    return ops, total, span


def run_op_breakdown(args, plans, init, data, work, out_dir):
    """zero-run --steps 3 --trace on the fused and the unfused plan of one
    batch and precision; plans: {"fused": entry, "unfused": entry}. Returns
    {"fused": {...}, "unfused": {...}} with each one's ops, totals, traced
    step and CUDA graph status, or with "error" for the one that failed."""
    steps = min(OPS_STEPS, args.steps)  # data/ holds --steps batches
    result = {}
    for variant in ("fused", "unfused"):
        entry = plans[variant]
        stem = "gpu_trace_%s_b%d_%s" % (entry["precision"], entry["batch"],
                                        variant)
        trace = os.path.join(out_dir, stem + ".json")
        report_path = os.path.join(work, stem + "_report.json")
        report = run_zerosbp(args, args.zero_run,
                             os.path.join(args.bundle, entry["file"]), init,
                             data, report_path, steps=steps, trace=trace)
        one = {"plan": entry["file"], "trace": trace, "steps": steps}
        if "error" in report:
            one["error"] = report["error"]
        else:
            try:
                ops, total, span = op_times(trace)
            except (OSError, ValueError, KeyError, TypeError) as error:
                one["error"] = "cannot read the trace: %s" % error_text(error)
            else:
                one.update(ops=ops, total_ms=total, span_ms=span,
                           traced_step_ms=report["step_ms"][-1],
                           step_ms=report["step_ms"],
                           cuda_graph=report.get("cuda_graph"))
        result[variant] = one
    return result


def op_rows(breakdown):
    """The table's rows: (op, calls fused, calls unfused, ms fused,
    ms unfused), an op missing from one plan with 0 calls and 0 ms, sorted
    by the larger of its two times, longest first."""
    fused = breakdown["fused"].get("ops", {})
    unfused = breakdown["unfused"].get("ops", {})
    rows = []
    for op in set(fused) | set(unfused):
        f = fused.get(op, {"calls": 0, "ms": 0.0})
        u = unfused.get(op, {"calls": 0, "ms": 0.0})
        rows.append((op, f["calls"], u["calls"], f["ms"], u["ms"]))
    rows.sort(key=lambda r: (-max(r[3], r[4]), r[0]))
    return rows


def write_ops_csv(path, breakdowns):
    """gpu_ops.csv: one line per batch, precision and op."""
    import csv
    partial = path + ".partial"
    with open(partial, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["batch", "precision", "op", "calls_fused",
                      "calls_unfused", "ms_fused", "ms_unfused"])
        for b in breakdowns:
            if b.get("error"):
                continue
            for op, cf, cu, mf, mu in op_rows(b):
                out.writerow([b["batch"], b["precision"], op, cf, cu,
                              "%.3f" % mf, "%.3f" % mu])
    os.replace(partial, path)


def print_ops(b, row_ms):
    """The op breakdown of one batch and precision as a markdown table;
    row_ms: {"fused": ms/step, "unfused": ms/step} of the rows, if they
    ran."""
    print("\nOp breakdown, %s batch %d: the compute stream of the traced "
          "step (the last of zero-run --steps %d --trace, run op by op), "
          "summed per op" % (b["precision"], b["batch"], b["steps"]))
    print("\n| op | calls fused | calls unfused | ms fused | ms unfused |")
    print("|---|---|---|---|---|")
    for op, cf, cu, mf, mu in op_rows(b):
        print("| %s | %d | %d | %.3f | %.3f |" % (op, cf, cu, mf, mu))
    fused, unfused = b["fused"], b["unfused"]
    print("| every op | %d | %d | %.3f | %.3f |" % (
        sum(o["calls"] for o in fused["ops"].values()),
        sum(o["calls"] for o in unfused["ops"].values()),
        fused["total_ms"], unfused["total_ms"]))
    print("\nTraced step (op by op): fused %.1f ms, unfused %.1f ms "
          "(first op's start to last op's end: %.1f and %.1f ms). "
          "The rows' ms/step, CUDA graph launches from the second step "
          "where used: fused %s, unfused %s. CUDA graph in the traced "
          "runs: fused %s; unfused %s." % (
              fused["traced_step_ms"], unfused["traced_step_ms"],
              fused["span_ms"], unfused["span_ms"],
              fmt(row_ms.get("fused"), "%.1f"),
              fmt(row_ms.get("unfused"), "%.1f"),
              graph_note(fused.get("cuda_graph")),
              graph_note(unfused.get("cuda_graph"))))


def graph_note(status):
    """zero-run's report["cuda_graph"] in a few words."""
    if not status:
        return "not reported"
    if status.get("used"):
        return "step %s captured, %s step(s) launched as a graph%s" % (
            status.get("captured_step"), status.get("graph_steps"),
            " (%s)" % status["reason"] if status.get("reason") else "")
    return "not used (%s)" % (status.get("reason") or "no reason given")


def compare_losses(row, zero_row, rtol):
    """Records the max relative difference of a row's losses from ZeroSBP's
    of the same batch and precision; None when either failed."""
    if not zero_row or zero_row["error"] or row["error"]:
        return None
    diffs = [abs(t - z) / max(abs(z), 1e-30)
             for z, t in zip(zero_row["losses"], row["losses"])]
    row["rel_loss_diff"] = diffs
    row["max_rel_loss_diff"] = max(diffs)
    row["loss_rtol"] = rtol
    row["loss_within_rtol"] = max(diffs) <= rtol
    # Only the eager row's difference sets the exit status.
    row["loss_checked"] = row["key"] == "eager"
    return max(diffs)


def import_torch():
    """(the torch module, None) or (None, why it cannot be imported)."""
    try:
        import torch
        return torch, None
    except Exception as error:  # ImportError, or a library that fails to load
        return None, error_text(error)


def nvidia_smi_name():
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30)
        names = done.stdout.strip().splitlines()
        return names[0].strip() if done.returncode == 0 and names else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def device_info(args, torch):
    """The device's name and torch's versions; None when torch sees no CUDA
    device. Without torch, the GPU's name comes from nvidia-smi."""
    if torch is None:
        if args.device == "cuda":
            name = nvidia_smi_name() or "CUDA device (unnamed: no torch, " \
                "no nvidia-smi)"
        else:
            name = "CPU %s, %d cores" % (platform.processor() or
                                         platform.machine(), os.cpu_count())
        return {"name": name, "torch": None, "cuda": None,
                "memory_bytes": None}
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


def row_label(row):
    return "%s %s b%d" % (row["system"], row["precision"], row["batch"])


def print_table(gpu, date, rows):
    header = ["GPU", "date", "batch", "precision", "system", "ms/step",
              "tokens/s", "MFU", "peak GiB", "warm-up s", "first loss",
              "last loss", "max rel loss diff"]
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        cells = [gpu, date, str(r["batch"]), r["precision"], r["system"]]
        if r["error"]:
            cells += ["skipped" if r.get("skipped") else "stopped"
                      if r.get("stopped") else "failed"] + ["-"] * 7
        else:
            cells += ["%.1f" % r["ms_per_step"], "%.0f" % r["tokens_per_s"],
                      fmt(r["mfu"] and 100 * r["mfu"], "%.1f%%"),
                      gib(r["peak_bytes"]), "%.1f" % r["warmup_s"],
                      "%.6f" % r["first_loss"], "%.6f" % r["last_loss"],
                      fmt(r.get("max_rel_loss_diff"), "%.1e")]
        print("| " + " | ".join(cells) + " |")


def loss_notes(rows, cases):
    """One phrase per batch and precision: each PyTorch row's difference
    from ZeroSBP and whether it is within the tolerance."""
    notes = []
    for batch, precision in cases:
        parts = []
        zero = [r for r in rows if (r["batch"], r["precision"], r["key"]) ==
                (batch, precision, "zerosbp")]
        for r in rows:
            if (r["batch"], r["precision"]) != (batch, precision) or \
                    r["key"] == "zerosbp":
                continue
            if r.get("max_rel_loss_diff") is None:
                parts.append("%s not compared (%s)" % (
                    r["system"], "no ZeroSBP row" if not zero else
                    "skipped" if r.get("skipped") else
                    "a training failed or did not run"))
            else:
                parts.append("%s %.1e (%s %g%s)" % (
                    r["system"], r["max_rel_loss_diff"],
                    "within" if r["loss_within_rtol"] else "ABOVE",
                    r["loss_rtol"],
                    "" if r["loss_checked"] else ", recorded only"))
        if parts:
            notes.append("b%d %s: %s" % (batch, precision, ", ".join(parts)))
    return notes


def parse_systems(text, precisions):
    """--systems: SYSTEM or SYSTEM:PRECISION[+PRECISION], comma-separated;
    returns {system: [precisions]} in SYSTEMS' order. A system without a
    suffix runs in those of --precisions it can (zerosbp-tf32: fp32)."""
    chosen = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, _, wanted = item.partition(":")
        if key not in SYSTEM_NAMES:
            raise ValueError("unknown system %r (one of %s)" % (
                key, ", ".join(k for k, _ in SYSTEMS)))
        allowed = SYSTEM_PRECISIONS.get(key, ("fp32", "bf16"))
        wanted = wanted.split("+") if wanted else \
            [p for p in precisions if p in allowed]
        if set(wanted) - {"fp32", "bf16"}:
            raise ValueError("%r: the precisions are fp32 and bf16" % item)
        if set(wanted) - set(allowed):
            raise ValueError("%r: %s runs in %s only" % (
                item, key, " and ".join(allowed)))
        chosen.setdefault(key, set()).update(wanted)
    if not chosen:
        raise ValueError("no system chosen")
    return {key: [p for p in precisions if p in chosen[key]]
            for key, _ in SYSTEMS if key in chosen}


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
    parser.add_argument("--systems", default=DEFAULT_SYSTEMS,
                        help="rows to run: zerosbp, zerosbp-unfused (where "
                        "the bundle has an unfused plan: batch 8), "
                        "zerosbp-tf32 (fp32 only, zero-run --allow-tf32, at "
                        "--tf32-batch), eager, sdpa, compile, each "
                        "optionally :fp32, :bf16 or :fp32+bf16 (default "
                        "%(default)s)")
    parser.add_argument("--tf32-batch", default=DEFAULT_TF32_BATCH,
                        help="the batches of the zerosbp-tf32 rows, comma-"
                        "separated, or all (default %(default)s)")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3,
                        help="first steps left out of the step time")
    parser.add_argument("--batch", help="global batches in sequences, "
                        "comma-separated, e.g. 8,16 (default: every batch "
                        "the bundle has plans for; bundle.sh --batch)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fp32-rtol", type=float, default=RTOL["fp32"])
    parser.add_argument("--bf16-rtol", type=float, default=RTOL["bf16"])
    parser.add_argument("--tf32-rtol", type=float, default=TF32_RTOL,
                        help="the ZeroSBP (TF32) row's loss difference from "
                        "the fp32 ZeroSBP row is compared with it, recorded "
                        "only (default %(default)g)")
    parser.add_argument("--peak-tflops",
                        help="dense peaks for MFU, e.g. fp32=67,bf16=989 "
                        "(default: from the GPU's name)")
    parser.add_argument("--compile-mode", default="default",
                        help="torch.compile's mode for the compile rows "
                        "(default, reduce-overhead, max-autotune, ...)")
    parser.add_argument("--zero-run-timeout", type=int, default=200,
                        help="seconds one zero-run may take")
    parser.add_argument("--ops", default="bf16",
                        help="precisions of the op breakdown, comma-"
                        "separated, or none: zero-run --steps 3 --trace on "
                        "the fused and the unfused plan of the smallest "
                        "batch that has both (default %(default)s)")
    parser.add_argument("--ops-dir", help="writes gpu_ops.csv and the two "
                        "traces there (default: printed and in --json "
                        "only)")
    parser.add_argument("--workdir", help="where the parameters and data go "
                        "(default: a temporary directory, removed after)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    args.precisions = [p for p in args.precisions.split(",") if p]
    if not args.precisions or set(args.precisions) - {"fp32", "bf16"}:
        parser.error("--precisions takes fp32 and/or bf16, comma-separated")
    try:
        args.systems = parse_systems(args.systems, args.precisions)
    except ValueError as error:
        parser.error("--systems: %s" % error)
    if not 0 <= args.warmup < args.steps:
        parser.error("--warmup must be at least 0 and below --steps")
    if not any(args.systems.values()):
        parser.error("--systems and --precisions leave no row to run")
    if args.ops.strip().lower() in ("", "none", "off"):
        args.ops = []
    else:
        args.ops = [p for p in args.ops.split(",") if p]
        if set(args.ops) - {"fp32", "bf16"}:
            parser.error("--ops takes fp32 and/or bf16, comma-separated, "
                         "or none")
        # Only the precisions that run.
        args.ops = [p for p in args.precisions if p in args.ops]
    if args.systems.get("compile") and args.warmup < 1:
        parser.error("--warmup must be at least 1 with the compile rows "
                     "(their first step compiles)")
    if args.batch is not None:
        try:
            args.batch = [int(b) for b in args.batch.split(",") if b]
        except ValueError:
            args.batch = []
        if not args.batch or min(args.batch) < 1:
            parser.error("--batch takes positive integers, comma-separated")
        args.batch = list(dict.fromkeys(args.batch))
    if args.tf32_batch.strip().lower() == "all":
        args.tf32_batch = None  # every batch that runs
    else:
        try:
            args.tf32_batch = [int(b) for b in args.tf32_batch.split(",")
                               if b.strip()]
        except ValueError:
            args.tf32_batch = []
        if not args.tf32_batch or min(args.tf32_batch) < 1:
            parser.error("--tf32-batch takes positive integers, comma-"
                         "separated, or all")
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
    if args.ops_dir:
        args.ops_dir = os.path.abspath(args.ops_dir)
    args.zero_run = args.zero_run or os.path.join(args.bundle, "bin",
                                                  "zero-run")
    return args


def write_json(path, payload):
    """Whole or not at all: a temporary name, then a rename."""
    partial = path + ".partial"
    with open(partial, "w") as f:
        json.dump(payload, f, indent=2)
    os.replace(partial, path)


def main():
    args = parse_args()
    try:
        manifest = load_manifest(args.bundle)
    except OSError as error:
        sys.exit("gpu_bench: no bundle at %s (run bench/gpu/bundle.sh): %s"
                 % (args.bundle, error))
    batches = args.batch or bundled_batches(manifest, args.preset,
                                            args.precisions)
    if not batches:
        sys.exit("gpu_bench: the bundle has no %s plans for %s "
                 "(bench/gpu/bundle.sh)" % (args.preset,
                                            " and ".join(args.precisions)))
    plans = {}
    for batch in batches:
        for precision in args.precisions:
            entry = find_plan(manifest, args.preset, precision, batch)
            if entry is None:
                sys.exit("gpu_bench: the bundle has no %s %s plan for batch "
                         "%d (bench/gpu/bundle.sh --batch %s)" %
                         (args.preset, precision, batch,
                          ",".join(map(str, batches))))
            plans[(batch, precision)] = entry
    # The unfused plans bundle.sh compiles (batch 8): the zerosbp-unfused
    # rows and the op breakdown run where there is one.
    unfused = {}
    for batch in batches:
        for precision in args.precisions:
            entry = find_plan(manifest, args.preset, precision, batch, "off")
            if entry is not None:
                unfused[(batch, precision)] = entry
    # Every plan is the same model and optimizer.
    model = plans[(batches[0], args.precisions[0])]
    torch, torch_error = import_torch()
    info = device_info(args, torch)
    if info is None:
        sys.exit("gpu_bench: torch sees no CUDA device")
    peaks, peak_note = (None, "no MFU on the CPU") if args.device == "cpu" \
        else peak_for(info["name"], args.peak_tflops)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    print("%s, torch %s (CUDA %s); GPT-2 %s: %d layers, hidden %d, %d heads, "
          "seq %d, vocab %d, %d parameters, batch %s, %d steps (median after "
          "%d); %.3g FLOP/token; peak: %s" % (
              info["name"], info["torch"], info["cuda"], args.preset,
              model["layers"], model["hidden"], model["heads"], model["seq"],
              model["vocab"], model["params"],
              ", ".join(map(str, batches)), args.steps, args.warmup,
              flops_per_token(model), peak_note), flush=True)
    if torch is None:
        print("PyTorch is not available (%s): the PyTorch rows are skipped"
              % torch_error, flush=True)

    cases = [(b, p) for b in batches for p in args.precisions]
    no_unfused = [(b, p) for b, p in cases
                  if p in args.systems.get("zerosbp-unfused", ()) and
                  (b, p) not in unfused]
    if no_unfused:
        print("ZeroSBP unfused: no row for %s, which the bundle has no "
              "unfused %s plan for (bundle.sh compiles them at batch 8 "
              "only)" % (", ".join("%s b%d" % (p, b) for b, p in no_unfused),
                         args.preset), flush=True)
    # The ZeroSBP (TF32) rows: fp32, at --tf32-batch (8) where it runs.
    tf32_cases = [(b, p) for b, p in cases
                  if p in args.systems.get("zerosbp-tf32", ()) and
                  (args.tf32_batch is None or b in args.tf32_batch)]
    if args.systems.get("zerosbp-tf32") and not tf32_cases:
        print("ZeroSBP (TF32): no row, since no batch of %s is among "
              "--tf32-batch %s" % (", ".join(map(str, batches)), ",".join(
                  map(str, args.tf32_batch))), flush=True)
    # The op breakdown: for each --ops precision, the smallest batch with a
    # fused and an unfused plan.
    ops_cases = []
    for precision in args.ops:
        both = [b for b in batches if (b, precision) in unfused]
        if both:
            ops_cases.append((min(both), precision))
        else:
            print("op breakdown %s: no batch of %s has an unfused plan in "
                  "the bundle: not run" % (
                      precision, ", ".join(map(str, batches))), flush=True)
    # ZeroSBP (fused, unfused and TF32), eager and SDPA for every case
    # first, then the op breakdown, then the compile rows: they take the
    # longest, and a time limit cuts them, not the others.
    todo = [(b, p, key) for b, p in cases
            for key in ("zerosbp", "zerosbp-unfused", "zerosbp-tf32",
                        "eager", "sdpa")
            if p in args.systems.get(key, ()) and
            (key != "zerosbp-unfused" or (b, p) in unfused) and
            (key != "zerosbp-tf32" or (b, p) in tf32_cases)]
    todo += [(b, p, "ops") for b, p in ops_cases]
    todo += [(b, p, "compile") for b, p in cases
             if p in args.systems.get("compile", ())]

    def task_name(key):
        return "the op breakdown" if key == "ops" else SYSTEM_NAMES[key]

    def payload(rows):
        return {"date": date, "device": args.device, "gpu": info,
                "preset": args.preset,
                "model": {k: model[k] for k in (
                    "layers", "hidden", "heads", "seq", "vocab", "params",
                    "optimizer")},
                # A number with one batch, as before; a list with several.
                "batch": batches[0] if len(batches) == 1 else batches,
                "batches": batches,
                "systems": {k: v for k, v in args.systems.items()},
                "tf32_batches": sorted({b for b, _ in tf32_cases}),
                "steps": args.steps, "warmup": args.warmup,
                "seed": args.seed, "compile_mode": args.compile_mode,
                "rtol": {"fp32": args.fp32_rtol, "bf16": args.bf16_rtol,
                         "tf32": args.tf32_rtol},
                "flops_per_token": flops_per_token(model),
                "peak_flops": peaks, "peak_note": peak_note,
                "bundle_commit": manifest.get("commit"),
                "plans": {"%s_b%d" % (p, b): e["file"]
                          for (b, p), e in plans.items()},
                "plans_unfused": {"%s_b%d" % (p, b): e["file"]
                                  for (b, p), e in unfused.items()},
                "stopped": stopped, "rows": rows, "ops": breakdowns}

    signal.signal(signal.SIGTERM, on_sigterm)
    work = args.workdir or tempfile.mkdtemp(prefix="gpu_bench_")
    os.makedirs(work, exist_ok=True)
    if args.ops_dir:
        os.makedirs(args.ops_dir, exist_ok=True)
    rows, zero_rows, stopped = [], {}, None
    breakdowns = []
    current = None
    try:
        start = time.perf_counter()
        init = write_init(work, model, args.seed)
        data = {b: write_data(work, model, b, args.steps, args.seed)
                for b in batches}
        print("parameters and data written to %s in %.1f s" %
              (work, time.perf_counter() - start), flush=True)
        for batch, precision, key in todo:
            current = (batch, precision, key)
            began = time.perf_counter()
            if key == "ops":
                try:
                    breakdown = run_op_breakdown(
                        args, {"fused": plans[(batch, precision)],
                               "unfused": unfused[(batch, precision)]},
                        init, data[batch], work, args.ops_dir or work)
                    ops_failed = ["%s: %s" % (v, breakdown[v]["error"])
                                  for v in ("fused", "unfused")
                                  if breakdown[v].get("error")]
                except Exception as error:  # a report or trace not as read
                    breakdown = {}
                    ops_failed = [error_text(error)]
                    print(last_lines(traceback.format_exc(), 20), flush=True)
                breakdown.update(batch=batch, precision=precision,
                                 steps=min(OPS_STEPS, args.steps),
                                 ops_s=time.perf_counter() - began,
                                 error="; ".join(ops_failed) or None)
                breakdowns.append(breakdown)
                current = None
                if breakdown["error"]:
                    print("op breakdown %s b%d failed: %s" % (
                        precision, batch, breakdown["error"]), flush=True)
                else:
                    print("op breakdown %s b%d: traced step's ops %.1f ms "
                          "fused, %.1f ms unfused, %.0f s" % (
                              precision, batch,
                              breakdown["fused"]["total_ms"],
                              breakdown["unfused"]["total_ms"],
                              breakdown["ops_s"]), flush=True)
                    if args.ops_dir:
                        write_ops_csv(os.path.join(args.ops_dir,
                                                   "gpu_ops.csv"),
                                      breakdowns)
                if args.json:
                    write_json(args.json, payload(rows))
                continue
            entry = (unfused if key == "zerosbp-unfused" else plans)[
                (batch, precision)]
            if key in ZEROSBP_FUSION:
                report = os.path.join(work, "%s_%s_b%d.json" % (
                    key.replace("-", "_"), precision, batch))
                result = zerosbp_result(run_zerosbp(
                    args, args.zero_run,
                    os.path.join(args.bundle, entry["file"]), init,
                    data[batch], report, flags=ZEROSBP_FLAGS.get(key, ())),
                    args.device, ZEROSBP_FUSION[key])
            elif torch is None:
                result = {"error": "skipped: PyTorch is not available (%s)"
                          % torch_error, "skipped": True}
            else:
                try:
                    result = run_torch(args, entry, precision, init,
                                       data[batch], key)
                except Exception as error:  # OOM, CUDA error, no triton...
                    result = {"error": error_text(error),
                              "error_detail": last_lines(
                                  traceback.format_exc(), 40)}
                    print(result["error_detail"], flush=True)
                release_torch_memory(compiled=key == "compile")
            row = summarize(key, precision, batch, result, args, model,
                            peaks)
            row["row_s"] = time.perf_counter() - began
            if key == "zerosbp":
                zero_rows[(batch, precision)] = row
            else:
                rtol = args.tf32_rtol if key == "zerosbp-tf32" else \
                    args.fp32_rtol if precision == "fp32" else args.bf16_rtol
                compare_losses(row, zero_rows.get((batch, precision)), rtol)
            rows.append(row)
            current = None
            if row.get("skipped"):
                print("%s: %s" % (row_label(row), row["error"]), flush=True)
            elif row["error"]:
                print("%s failed: %s" % (row_label(row), row["error"]),
                      flush=True)
            else:
                print("%s: %.1f ms/step, warm-up %.1f s, row %.0f s, "
                      "losses %s" % (
                          row_label(row), row["ms_per_step"], row["warmup_s"],
                          row["row_s"],
                          " ".join("%.6f" % l for l in row["losses"])),
                      flush=True)
            if args.json:
                write_json(args.json, payload(rows))
    except (Stopped, KeyboardInterrupt) as stop:
        stopped = "SIGTERM" if isinstance(stop, Stopped) else "SIGINT"
        print("\ngpu_bench: stopped by %s%s; the rows not run are recorded "
              "as such" % (stopped, " during %s %s b%d" % (
                  task_name(current[2]), current[1], current[0])
                  if current else ""), flush=True)
        done = {(r["batch"], r["precision"], r["key"]) for r in rows}
        done |= {(b["batch"], b["precision"], "ops") for b in breakdowns}
        for batch, precision, key in todo:
            if key == "ops" and (batch, precision, key) not in done:
                breakdowns.append({
                    "batch": batch, "precision": precision, "stopped": True,
                    "error": "%s by %s" % (
                        "cut short" if (batch, precision, key) == current
                        else "not run: stopped", stopped)})
            elif (batch, precision, key) not in done:
                row = summarize(key, precision, batch, {
                    "error": "%s by %s" % (
                        "cut short" if (batch, precision, key) == current
                        else "not run: stopped", stopped)},
                    args, model, peaks)
                row["stopped"] = True
                rows.append(row)
    finally:
        # What is left (the table, the JSON) takes well under on_gpu.sh's
        # 10 s between SIGTERM and SIGKILL.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    rows.sort(key=lambda r: (batches.index(r["batch"]),
                             args.precisions.index(r["precision"]),
                             SYSTEM_ORDER[r["key"]]))
    print_table(info["name"], date, rows)
    notes = loss_notes(rows, cases)
    if args.device == "cuda":
        memory = ("ZeroSBP's device memory held (arena + stream-ordered "
                  "pool), PyTorch's max_memory_allocated")
    else:
        memory = "ZeroSBP's measured peak, none for PyTorch on the CPU"
    print("\nLosses against ZeroSBP: %s." % ("; ".join(notes) or "none"))
    print("MFU peak: %s. Peak memory: %s. warm-up s: the %d warm-up "
          "step(s), left out of ms/step (torch.compile compiles in the "
          "first)." % (
              peak_note, memory, args.warmup))
    if any(r["key"] == "zerosbp-tf32" for r in rows):
        has_torch = any(r["key"] in ("eager", "sdpa", "compile") and
                        r["precision"] == "fp32" for r in rows)
        print("ZeroSBP (TF32): the fp32 plan run with zero-run --allow-tf32 "
              "(cuBLAS's f32 products on TF32 tensor cores); its MFU is "
              "against the fp32 peak, as the other fp32 rows', so it can "
              "read above 100%%; its loss difference is from the fp32 "
              "ZeroSBP row, against --tf32-rtol %g, recorded only.%s" % (
                  args.tf32_rtol,
                  " The fp32 PyTorch rows keep TF32 off "
                  "(torch.backends.cuda.matmul.allow_tf32 and "
                  "torch.backends.cudnn.allow_tf32 False): none of them is "
                  "its counterpart." if has_torch else ""))
    for r in rows:
        if r["error"]:
            print("%s: %s%s" % (row_label(r), "" if r.get("skipped") or
                                r.get("stopped") else "failed: ",
                                r["error"]))
    for b in breakdowns:
        if b["error"]:
            print("\nop breakdown %s b%d: %s%s" % (
                b["precision"], b["batch"],
                "" if b.get("stopped") else "failed: ", b["error"]))
            continue
        row_ms = {}
        variants = {"zerosbp": "fused", "zerosbp-unfused": "unfused"}
        for r in rows:
            if (r["batch"], r["precision"]) == (b["batch"], b["precision"]) \
                    and r["key"] in variants and not r["error"]:
                row_ms[variants[r["key"]]] = r["ms_per_step"]
        print_ops(b, row_ms)
    if args.ops_dir and any(not b["error"] for b in breakdowns):
        write_ops_csv(os.path.join(args.ops_dir, "gpu_ops.csv"), breakdowns)
        print("\nop breakdown written to %s" % os.path.join(
            args.ops_dir, "gpu_ops.csv"))
    if args.json:
        write_json(args.json, payload(rows))
    # The last line, which on_gpu.sh adds to its summary.
    counts = [("ran", sum(1 for r in rows if not r["error"]))]
    for what, test in (("failed", lambda r: not (r.get("skipped") or
                                                 r.get("stopped"))),
                       ("skipped", lambda r: r.get("skipped")),
                       ("stopped", lambda r: r.get("stopped"))):
        n = sum(1 for r in rows if r["error"] and test(r))
        if n:
            counts.append((what, n))
    ops_notes = ["op breakdown %s b%d %s" % (
        b["precision"], b["batch"], "stopped" if b.get("stopped") else
        "failed" if b["error"] else "ok") for b in breakdowns]
    print("gpu_bench: %d rows: %s%s" % (len(rows), ", ".join(
        "%d %s" % (n, what) for what, n in counts), "".join(
            "; " + note for note in ops_notes)))
    failed = [r for r in rows if r["error"] and not r.get("skipped") and
              r["key"] in GATING]
    disagree = [r for r in rows if r.get("loss_checked") and
                not r["loss_within_rtol"]]
    return 1 if failed or disagree or stopped else 0


if __name__ == "__main__":
    sys.exit(main())
