#!/usr/bin/python3
"""ZeroSBP against PyTorch eager on CPU: the same GPT-2 training, one rank.

The character-level GPT-2 (4 layers, hidden 128, 4 heads, vocabulary 64) is
trained with fp32 Adam (lr 1e-3) from the same initial parameters on the
same batches, in two cases: sequence 64 with 16 sequences a step (the demo's
case) and sequence 512 with 8 sequences a step. Each case is trained by
`zero-compile` + `zero-run --ranks 1 --threads T` twice, fused (the
default: attention as one flash-attention op `nn.attention`, bias and GELU
in their matmul's epilogue, cheap values recomputed in the backward) and
unfused (`fuse-attention=false fuse-epilogues=false recompute-cheap=false`:
scores, scale, causal softmax and values as separate ops, as before fusion),
and by
PyTorch eager (torch_gpt2.py, its "math" attention; `torch.set_num_threads(T)`).
The text is --text (default: the GPL-3 from Debian's base-files), one id per
character.

Both use the system's OpenBLAS for their matrix products with T threads
(OPENBLAS_NUM_THREADS=T). Above one thread PyTorch also runs with OpenBLAS on
one thread, its OpenMP threads alone working in parallel: OpenBLAS's threads
and OpenMP's compete for the same cores otherwise. The kernels are the ones
OpenBLAS detects for this CPU (an OPENBLAS_CORETYPE in the environment is
ignored); --openblas-coretype NAME makes every training use NAME's (Haswell,
SkylakeX, ...). The footer names them.

For each case and thread count the trainings alternate --repeats times; a
training's step time is the median over its steps after --warmup, and the
fastest repeat is kept (other work on the machine only slows runs down; the
cores it kept busy during the kept run are reported). The sequence-512 case
has its own --long-steps, --long-warmup and --long-repeats.

Memory: ZeroSBP's activation peak per rank is zero-run's report
(`peak_bytes[0].by_role.activation`, measured; `planned_bytes.by_role.
activation`, the plan's) and its peak the report's total. PyTorch's is taken
from one extra, untimed step (see torch_memory_step): the heap bytes in use
after every ATen operator of the step, forward, backward and Adam, less
those in use when it starts (parameters, their gradients, Adam's m and v).

Each loss must agree with PyTorch's of the same step to float32 noise: the
largest relative difference is printed, and above --loss-rtol the benchmark
fails. The final parameters are compared with PyTorch's too (the key bias,
whose gradient is rounding noise, left out: see
tests/integration/reference/models.py).

Usage (bench/pytorch/pytorch_bench.sh installs python3-torch first):
    pytorch_bench.py ZERO_COMPILE ZERO_RUN [--json FILE] [--cases 64,512]
        [--steps 30] [--warmup 5] [--repeats 3] [--long-steps N]
        [--long-warmup N] [--long-repeats N] [--threads 1,2] [--text FILE]
        [--seed 0] [--loss-rtol 1e-4] [--openblas-coretype NAME]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))

import bench_report  # noqa: E402
import char_case  # noqa: E402

LAYERS, EMBED, HEADS, VOCAB = 4, 128, 4, 64
LR = 1e-3
# Sequence length -> sequences a step. 64 is the demo's case; at 512 the
# attention scores (batch x heads x seq x seq) dominate the activations.
CASES = {64: 16, 512: 8}
LONG = 512
PIPELINE = ("optimizer=adam lr=%r beta1=0.9 beta2=0.999 eps=1e-08 "
            "weight-decay=0.0" % LR)
# The compiler before fusion: every fusion pass off.
UNFUSED_PIPELINE = PIPELINE + (" fuse-attention=false fuse-epilogues=false"
                               " recompute-cheap=false")
DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"
MIB = 1024.0 * 1024.0


def fail(message):
    print("pytorch_bench: " + message, file=sys.stderr)
    sys.exit(1)


def run(command, env):
    """Runs a command; its failure ends the benchmark with its stderr.
    Returns how many cores other work on the machine kept busy meanwhile,
    on average (bench_report.run_timed's measure)."""
    done, other = bench_report.timed(
        lambda: subprocess.run(command, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True))
    if done.returncode != 0:
        program = command[1] if command[0] == sys.executable else command[0]
        lines = done.stderr.strip().splitlines() or ["exit %d" %
                                                     done.returncode]
        fail("%s failed: %s" % (os.path.basename(program), lines[-1]))
    return other


def blas_environment(args, blas_threads):
    """The environment of every training: OpenBLAS's threads and kernels."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas_threads))
    env.pop("OPENBLAS_CORETYPE", None)
    if args.openblas_coretype:
        env["OPENBLAS_CORETYPE"] = args.openblas_coretype
    return env


class Case:
    """One training case: the model at sequence `seq`, `batch` sequences a
    step; its files (init/, data/ and the two plans) live under `directory`."""

    def __init__(self, seq, batch, steps, warmup, repeats, directory):
        self.seq, self.batch = seq, batch
        self.steps, self.warmup, self.repeats = steps, warmup, repeats
        self.directory = directory
        self.name = "sequence %d, batch %d" % (seq, batch)
        self.tokens = seq * batch
        self.plans = {"fused": os.path.join(directory, "fused.zplan"),
                      "unfused": os.path.join(directory, "unfused.zplan")}

    def model_flags(self):
        return ["--num-layers=%d" % LAYERS, "--hidden-size=%d" % EMBED,
                "--num-attention-heads=%d" % HEADS,
                "--seq-length=%d" % self.seq, "--vocab-size=%d" % VOCAB,
                "--batch-size=%d" % self.batch, "--world=1"]


class Training:
    """One way of training a case: its name in the table, a file-name key,
    the plan (ZeroSBP) and how to run it with `threads` threads."""

    def __init__(self, name, key, threads, blas_threads, plan=None):
        self.name, self.key = name, key
        self.threads, self.blas_threads = threads, blas_threads
        self.plan = plan

    def run(self, args, case, out, save):
        report = out + ".json"
        env = blas_environment(args, self.blas_threads)
        data = ["--init", os.path.join(case.directory, "init"), "--data",
                os.path.join(case.directory, "data"), "--steps",
                str(case.steps)]
        if self.plan:
            command = [args.zero_run, case.plans[self.plan], "--ranks", "1",
                       "--threads", str(self.threads), "--quiet",
                       "--report-file", report] + data
        else:
            env["OMP_NUM_THREADS"] = str(self.threads)
            command = [sys.executable, os.path.join(HERE, "torch_gpt2.py"),
                       "--threads", str(self.threads), "--num-layers",
                       str(LAYERS), "--hidden-size", str(EMBED),
                       "--num-attention-heads", str(HEADS), "--lr", repr(LR),
                       "--attention", "math", "--report", report] + data
        if save:
            command += ["--save", save]
        other = run(command, env)
        with open(report) as f:
            result = json.load(f)
        result["other_cores"] = other
        return result


def trainings(threads):
    """ZeroSBP fused first: the step times are compared with it; PyTorch
    second: the losses and parameters are compared with it."""
    out = [Training("ZeroSBP", "zerosbp", threads, threads, "fused"),
           Training("ZeroSBP unfused", "zerosbp_unfused", threads, threads,
                    "unfused"),
           Training("PyTorch", "pytorch", threads, threads)]
    if threads > 1:
        out.append(Training("PyTorch, OpenBLAS 1 thread", "pytorch_blas1",
                            threads, 1))
    return out


def step_ms(report, warmup):
    """Median step time after the warm-up steps."""
    return statistics.median(report["step_ms"][warmup:])


def max_relative_difference(a, b):
    return max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b))


def max_parameter_difference(dir_a, dir_b):
    """Largest |a - b| over every parameter entry but the key bias."""
    largest = 0.0
    for name in os.listdir(dir_b):
        a = np.load(os.path.join(dir_a, name)).astype(np.float64).ravel()
        b = np.load(os.path.join(dir_b, name)).astype(np.float64).ravel()
        if name.endswith("attn.c_attn.bias.npy"):
            third = len(a) // 3
            keep = np.r_[0:third, 2 * third:len(a)]
            a, b = a[keep], b[keep]
        largest = max(largest, float(np.abs(a - b).max()))
    return largest


def openblas_core(args):
    """The kernel set OpenBLAS picks here, as it reports it on loading."""
    env = dict(blas_environment(args, 1), OPENBLAS_VERBOSE="2")
    done = subprocess.run([args.zero_run], env=env, capture_output=True,
                          text=True)
    for line in (done.stdout + done.stderr).splitlines():
        if line.startswith("Core: "):
            return line[len("Core: "):].strip()
    return "unknown"


def torch_version():
    done = subprocess.run([sys.executable, "-c",
                           "import torch; print(torch.__version__)"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail("cannot import torch (install python3-torch): " +
             done.stderr.strip().splitlines()[-1])
    package = subprocess.run(["dpkg-query", "-W", "-f", "${Version}",
                              "python3-torch"], capture_output=True,
                             text=True).stdout.strip()
    return done.stdout.strip(), package or "unknown"


def torch_memory_step(init, data, report):
    """PyTorch's activation peak, measured on one training step of the
    benchmark's model (run in a child process: `pytorch_bench.py
    --torch-memory INIT DATA REPORT`, one thread, one malloc arena).

    PyTorch 1.13 keeps no peak of its CPU allocations, and Debian's build has
    no Kineto for torch.profiler's memory timeline, so the bytes are counted
    here: a TorchDispatchMode reads glibc's mallinfo2() (bytes in use, heap
    and mmap'd chunks) after every ATen operator of the step, the autograd
    engine's backward and Adam's update included. The step is the second: the
    first makes the gradients (kept, zeroed in place) and Adam's m and v, so
    the bytes in use when the measured step starts are the model states, and
    the peak above them is what the step allocates: activations, the
    gradients' temporaries, the logits. An operator's own scratch, freed
    before it returns, is not seen."""
    import ctypes
    import gc

    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode

    import torch_gpt2

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
            "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2

    def in_use():
        info = libc.mallinfo2()
        return info.uordblks + info.hblkhd

    class PeakMode(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.peak, self.ops = in_use(), 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.peak = max(self.peak, in_use())
            self.ops += 1
            return out

    torch.set_num_threads(1)
    tokens = torch.from_numpy(np.load(os.path.join(data, "tokens.npy")))
    labels = torch.from_numpy(np.load(os.path.join(data, "labels.npy")))
    seq = tokens.shape[2]
    model = torch_gpt2.Gpt2(VOCAB, seq, EMBED, HEADS, LAYERS, "math")
    torch_gpt2.load_parameters(model, init)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.999),
                           eps=1e-8, weight_decay=0.0)

    def step(index):
        opt.zero_grad(set_to_none=False)
        logits = model(tokens[index])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               labels[index].reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    step(0)
    opt.zero_grad(set_to_none=False)
    gc.collect()
    start = in_use()
    with PeakMode() as mode:
        loss = step(1)
    tensors = list(model.parameters())
    tensors += [p.grad for p in model.parameters()]
    tensors += [t for state in opt.state.values() for t in state.values()
                if torch.is_tensor(t)]
    states = sum(t.numel() * t.element_size() for t in tensors)
    with open(report, "w") as f:
        json.dump({"activation_bytes": mode.peak - start,
                   "model_state_bytes": states,
                   "peak_bytes": states + mode.peak - start,
                   "ops_seen": mode.ops, "loss_step_2": loss,
                   "method": "mallinfo2 after every ATen op of step 2, "
                   "less the bytes in use at its start"}, f)


def torch_memory(args, case, work):
    """torch_memory_step in a child process: one thread, one arena."""
    report = os.path.join(work, "torch_memory_seq%d.json" % case.seq)
    env = dict(blas_environment(args, 1), OMP_NUM_THREADS="1",
               MALLOC_ARENA_MAX="1")
    run([sys.executable, os.path.abspath(__file__), "--torch-memory",
         os.path.join(case.directory, "init"),
         os.path.join(case.directory, "data"), report], env)
    with open(report) as f:
        return json.load(f)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--cases", default="64,512",
                        help="sequence lengths to run, of %s" %
                        ",".join(str(s) for s in CASES))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5,
                        help="first steps left out of the step time")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--long-steps", type=int, default=10,
                        help="--steps of the sequence-512 case")
    parser.add_argument("--long-warmup", type=int, default=2,
                        help="--warmup of the sequence-512 case")
    parser.add_argument("--long-repeats", type=int, default=3,
                        help="--repeats of the sequence-512 case")
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts")
    parser.add_argument("--text", default=DEFAULT_TEXT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loss-rtol", type=float, default=1e-4)
    parser.add_argument("--openblas-coretype",
                        help="OPENBLAS_CORETYPE for every training (default: "
                        "OpenBLAS's own detection)")
    args = parser.parse_args()
    try:
        args.threads = [int(t) for t in args.threads.split(",")]
        args.cases = [int(s) for s in args.cases.split(",")]
    except ValueError:
        parser.error("--threads and --cases take integers separated by "
                     "commas")
    if min(args.threads) < 1 or min(args.repeats, args.long_repeats) < 1:
        parser.error("--threads and the repeats must be positive")
    for seq in args.cases:
        if seq not in CASES:
            parser.error("--cases: no case at sequence %d (there are %s)" %
                         (seq, ", ".join(str(s) for s in CASES)))
    if not 0 <= args.warmup < args.steps:
        parser.error("--warmup must be below --steps")
    if not 0 <= args.long_warmup < args.long_steps:
        parser.error("--long-warmup must be below --long-steps")
    for tool in (args.zero_compile, args.zero_run):
        if not os.access(tool, os.X_OK):
            parser.error("%s is not an executable" % tool)
    # `bazel run` starts in the runfiles; paths given are the caller's.
    caller = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    if args.json:
        args.json = os.path.join(caller, args.json)
    args.text = os.path.join(caller, args.text)
    return args


def measure(args, case, work, threads, torch_mem):
    """Rows of a case's table for one thread count."""
    candidates = trainings(threads)
    best, saved = {}, {}
    for repeat in range(case.repeats):
        for t in candidates:
            out = os.path.join(work, "seq%d_%s_t%d_r%d" % (
                case.seq, t.key, threads, repeat))
            save = out + "_params" if repeat == 0 else None
            report = t.run(args, case, out, save)
            if save:
                saved[t.name] = save
            if (t.name not in best or step_ms(report, case.warmup) <
                    step_ms(best[t.name], case.warmup)):
                best[t.name] = report
        print("sequence %d, threads %d, repeat %d: %s" % (
            case.seq, threads, repeat + 1, ", ".join(
                "%s %.1f ms" % (t.name, step_ms(best[t.name], case.warmup))
                for t in candidates)), flush=True)

    zero_ms = step_ms(best["ZeroSBP"], case.warmup)
    torch_losses = best["PyTorch"]["losses"]
    rows = []
    for t in candidates:
        report = best[t.name]
        ms = step_ms(report, case.warmup)
        compared = t.name != "PyTorch"
        if t.plan:
            measured = report["peak_bytes"][0]
            activation = measured["by_role"]["activation"]
            planned = report["planned_bytes"]["by_role"]["activation"]
            peak = measured["total"]
        else:
            activation, planned = torch_mem["activation_bytes"], None
            peak = torch_mem["peak_bytes"]
        rows.append({
            "threads": threads,
            "training": t.name,
            "attention": ("fused (nn.attention)" if t.plan == "fused" else
                          "unfused" if t.plan else "math (PyTorch)"),
            "blas_threads": t.blas_threads,
            "ms_per_step": round(ms, 2),
            "steps_per_s": round(1e3 / ms, 2),
            "tokens_per_s": round(case.tokens * 1e3 / ms),
            "zerosbp_speedup": round(ms / zero_ms, 3),
            "activation_bytes": activation,
            "planned_activation_bytes": planned,
            "peak_bytes": peak,
            "final_loss": report["losses"][-1],
            "max_rel_loss_diff": (max_relative_difference(
                report["losses"], torch_losses) if compared else None),
            "max_param_diff": (max_parameter_difference(
                saved[t.name], saved["PyTorch"]) if compared else None),
            "other_cores": round(report["other_cores"], 2),
            "losses": report["losses"],
        })
    return rows


def ratios(rows):
    """Per thread count: ZeroSBP fused against unfused."""
    out = []
    for threads in sorted({r["threads"] for r in rows}):
        by = {r["training"]: r for r in rows if r["threads"] == threads}
        fused, unfused = by["ZeroSBP"], by["ZeroSBP unfused"]
        out.append({
            "threads": threads,
            "activation_cut": round(unfused["activation_bytes"] /
                                    fused["activation_bytes"], 3),
            "planned_activation_cut": round(
                unfused["planned_activation_bytes"] /
                fused["planned_activation_bytes"], 3),
            "peak_cut": round(unfused["peak_bytes"] / fused["peak_bytes"],
                              3),
            "step_time_ratio": round(fused["ms_per_step"] /
                                     unfused["ms_per_step"], 3),
        })
    return out


def mib(value):
    return "" if value is None else "%.2f" % (value / MIB)


def print_table(rows):
    header = ["threads", "training", "ms/step", "steps/s", "tokens/s",
              "ZeroSBP speed-up", "activation MiB", "planned activation MiB",
              "peak MiB", "final loss", "max rel loss diff vs PyTorch",
              "max param diff vs PyTorch", "other work, cores"]
    print("\n| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for r in rows:
        diff = r["max_rel_loss_diff"]
        param = r["max_param_diff"]
        cells = [str(r["threads"]), r["training"], "%.1f" % r["ms_per_step"],
                 "%.2f" % r["steps_per_s"], str(r["tokens_per_s"]),
                 "%.2fx" % r["zerosbp_speedup"], mib(r["activation_bytes"]),
                 mib(r["planned_activation_bytes"]), mib(r["peak_bytes"]),
                 "%.6f" % r["final_loss"],
                 "-" if diff is None else "%.1e" % diff,
                 "-" if param is None else "%.1e" % param,
                 "%.2f" % r["other_cores"]]
        print("| " + " | ".join(cells) + " |")


def run_case(args, case, text, work):
    """Writes the case's files, compiles its two plans, measures PyTorch's
    memory and times every training; returns the case's JSON object."""
    try:
        char_case.write_case(case.directory, text, LAYERS, EMBED, VOCAB,
                             case.seq, case.batch, case.steps, args.seed)
    except ValueError as error:
        fail(str(error))
    for variant, pipeline in (("fused", PIPELINE),
                              ("unfused", UNFUSED_PIPELINE)):
        run([args.zero_compile] + case.model_flags() + [
            "--stage=0", "--pipeline=" + pipeline, "--report=none", "-o",
            case.plans[variant]], os.environ)
    torch_mem = torch_memory(args, case, work)
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    rows = []
    for threads in args.threads:
        rows += measure(args, case, work, threads, torch_mem)
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return {"name": case.name, "seq_length": case.seq, "batch": case.batch,
            "tokens_per_step": case.tokens, "steps": case.steps,
            "warmup": case.warmup, "repeats": case.repeats,
            "model": case.model_flags(),
            "pipelines": {"fused": PIPELINE, "unfused": UNFUSED_PIPELINE},
            "load_average": load,
            "seconds": round(time.monotonic() - start, 1),
            "torch_memory": torch_mem, "rows": rows,
            "fused_vs_unfused": ratios(rows)}


def report_case(result, version, package, machine, core):
    rows = result["rows"]
    print("\n## %s (%d tokens a step)" % (result["name"],
                                          result["tokens_per_step"]))
    print_table(rows)
    print("\nPyTorch %s (Debian python3-torch %s) eager on %s; OpenBLAS "
          "kernels: %s; %d steps, median step after %d warm-up steps, best "
          "of %d runs; loss %.4f -> %.4f. Speed-up: the training's step "
          "time over ZeroSBP's (fused attention). PyTorch's activation: the "
          "peak above its model states in one untimed step, one thread "
          "(heap bytes after each ATen op); its peak: that plus parameters, "
          "gradients, Adam's m and v." % (
              version, package, machine, core, result["steps"],
              result["warmup"], result["repeats"], rows[0]["losses"][0],
              rows[0]["final_loss"]))
    print("Load average (1 min): %.2f before, %.2f after." %
          tuple(result["load_average"]))
    print("Sequence %d, ZeroSBP fused / unfused attention:" %
          result["seq_length"])
    for q in result["fused_vs_unfused"]:
        by = {r["training"]: r for r in rows if r["threads"] == q["threads"]}
        fused, unfused = by["ZeroSBP"], by["ZeroSBP unfused"]
        print("  T=%d: activation peak %.2f / %.2f MiB, %.2fx lower "
              "(planned %.2fx); peak %.2f / %.2f MiB; step %.1f / %.1f ms, "
              "ratio %.3f" % (
                  q["threads"], fused["activation_bytes"] / MIB,
                  unfused["activation_bytes"] / MIB, q["activation_cut"],
                  q["planned_activation_cut"], fused["peak_bytes"] / MIB,
                  unfused["peak_bytes"] / MIB, fused["ms_per_step"],
                  unfused["ms_per_step"], q["step_time_ratio"]))


def goal(cases):
    """The goal at sequence 512: activation peak at least 3x lower fused,
    the step no slower (fused / unfused step time at most 1 at every
    thread count). None when that case did not run."""
    for case in cases:
        if case["seq_length"] == LONG:
            cut = min(q["activation_cut"] for q in case["fused_vs_unfused"])
            worst = max(q["step_time_ratio"]
                        for q in case["fused_vs_unfused"])
            return {"seq_length": LONG, "activation_cut": cut,
                    "worst_step_time_ratio": worst,
                    "activation_met": cut >= 3.0,
                    "step_time_met": worst <= 1.0}
    return None


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--torch-memory":
        torch_memory_step(*sys.argv[2:])
        return
    args = parse_args()
    version, package = torch_version()
    core = openblas_core(args)
    try:
        with open(args.text, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as error:
        fail("cannot read --text %s: %s" % (args.text, error))
    work = tempfile.mkdtemp(prefix="pytorch_bench_")
    info = bench_report.machine()
    date = bench_report.now()
    machine = "%s, %d cores" % (platform.processor() or platform.machine(),
                                os.cpu_count())

    cases = []
    for seq in args.cases:
        long = seq == LONG
        case = Case(seq, CASES[seq],
                    args.long_steps if long else args.steps,
                    args.long_warmup if long else args.warmup,
                    args.long_repeats if long else args.repeats,
                    os.path.join(work, "case_seq%d" % seq))
        cases.append(run_case(args, case, text, work))
    for result in cases:
        report_case(result, version, package, machine, core)
    reached = goal(cases)
    if reached:
        print("\nGoal at sequence %d (activation peak at least 3x lower "
              "fused, step no slower): activation %.2fx lower, %s; step "
              "time fused / unfused at most %.3f, %s." % (
                  LONG, reached["activation_cut"],
                  "met" if reached["activation_met"] else "NOT met",
                  reached["worst_step_time_ratio"],
                  "met" if reached["step_time_met"] else "NOT met"))

    if args.json:
        first = cases[0]
        # The top-level fields are the first case's (sequence 64 by
        # default), as before the cases were added.
        result = {"date": date, "machine": machine, "machine_info": info,
                  "torch_version": version, "python3_torch_package": package,
                  "openblas_core": core, "load_average": first["load_average"],
                  "steps": first["steps"], "warmup": first["warmup"],
                  "repeats": first["repeats"], "model": first["model"],
                  "pipeline": PIPELINE, "text": args.text, "seed": args.seed,
                  "threads": args.threads, "rows": first["rows"],
                  "cases": cases, "goal": reached}
        partial = args.json + ".partial"
        with open(partial, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
        os.replace(partial, args.json)
    worst = max(r["max_rel_loss_diff"] or 0.0 for c in cases
                for r in c["rows"])
    if worst > args.loss_rtol:
        fail("the losses differ by up to %.3g (relative), above --loss-rtol "
             "%g: the trainings are not the same" % (worst, args.loss_rtol))


if __name__ == "__main__":
    main()
