#!/usr/bin/python3
"""ZeroSBP against PyTorch eager on CPU: the same GPT-2 training, one rank.

The character-level GPT-2 (4 layers, hidden 128, 4 heads, sequence 64,
vocabulary 64, global batch 16 sequences) is trained for --steps steps with
fp32 Adam (lr 1e-3) from the same initial parameters on the same batches:
by `zero-compile` + `zero-run --ranks 1 --threads T`, and by PyTorch eager
(torch_gpt2.py, `torch.set_num_threads(T)`). The text is --text (default:
the GPL-3 from Debian's base-files), one id per character.

Both use the system's OpenBLAS for their matrix products with T threads
(OPENBLAS_NUM_THREADS=T). Above one thread PyTorch also runs with OpenBLAS on
one thread, its OpenMP threads alone working in parallel: OpenBLAS's threads
and OpenMP's compete for the same cores otherwise. The kernels are the ones
OpenBLAS detects for this CPU (an OPENBLAS_CORETYPE in the environment is
ignored); --openblas-coretype NAME makes every training use NAME's (Haswell,
SkylakeX, ...). The footer names them.

For each thread count the trainings alternate --repeats times; a training's
step time is the median over its steps after --warmup, and the fastest
repeat is kept (other work on the machine only slows runs down). Each
PyTorch loss must agree with ZeroSBP's of the same step to float32 noise:
the largest relative difference is printed, and above --loss-rtol the
benchmark fails. The final parameters are compared too (the key bias, whose
gradient is rounding noise, left out: see
tests/integration/reference/models.py).

Usage (bench/pytorch/pytorch_bench.sh installs python3-torch first):
    pytorch_bench.py ZERO_COMPILE ZERO_RUN [--json FILE] [--steps 30]
        [--warmup 5] [--threads 1,2] [--repeats 3] [--text FILE]
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

import numpy as np

import char_case

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS, EMBED, HEADS, SEQ, VOCAB, BATCH = 4, 128, 4, 64, 64, 16
LR = 1e-3
MODEL_FLAGS = ["--num-layers=%d" % LAYERS, "--hidden-size=%d" % EMBED,
               "--num-attention-heads=%d" % HEADS, "--seq-length=%d" % SEQ,
               "--vocab-size=%d" % VOCAB, "--batch-size=%d" % BATCH,
               "--world=1"]
PIPELINE = ("optimizer=adam lr=%r beta1=0.9 beta2=0.999 eps=1e-08 "
            "weight-decay=0.0" % LR)
DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


def fail(message):
    print("pytorch_bench: " + message, file=sys.stderr)
    sys.exit(1)


def run(command, env):
    """Runs a command; its failure ends the benchmark with its stderr."""
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        program = command[1] if command[0] == sys.executable else command[0]
        lines = done.stderr.strip().splitlines() or ["exit %d" %
                                                     done.returncode]
        fail("%s failed: %s" % (os.path.basename(program), lines[-1]))


def blas_environment(args, blas_threads):
    """The environment of every training: OpenBLAS's threads and kernels."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas_threads))
    env.pop("OPENBLAS_CORETYPE", None)
    if args.openblas_coretype:
        env["OPENBLAS_CORETYPE"] = args.openblas_coretype
    return env


class Training:
    """One way of training the case: its name in the table, a file-name key
    and how to run it with `threads` threads."""

    def __init__(self, name, key, threads, blas_threads):
        self.name, self.key = name, key
        self.threads, self.blas_threads = threads, blas_threads

    def run(self, args, plan, case, out, save):
        report = out + ".json"
        env = blas_environment(args, self.blas_threads)
        data = ["--init", os.path.join(case, "init"), "--data",
                os.path.join(case, "data"), "--steps", str(args.steps)]
        if self.key == "zerosbp":
            command = [args.zero_run, plan, "--ranks", "1", "--threads",
                       str(self.threads), "--quiet", "--report-file",
                       report] + data
        else:
            env["OMP_NUM_THREADS"] = str(self.threads)
            command = [sys.executable, os.path.join(HERE, "torch_gpt2.py"),
                       "--threads", str(self.threads), "--num-layers",
                       str(LAYERS), "--hidden-size", str(EMBED),
                       "--num-attention-heads", str(HEADS), "--lr", repr(LR),
                       "--report", report] + data
        if save:
            command += ["--save", save]
        run(command, env)
        with open(report) as f:
            return json.load(f)


def trainings(threads):
    """ZeroSBP first: the others are compared with it."""
    out = [Training("ZeroSBP", "zerosbp", threads, threads),
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


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5,
                        help="first steps left out of the step time")
    parser.add_argument("--threads", default="1,2",
                        help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--text", default=DEFAULT_TEXT)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loss-rtol", type=float, default=1e-4)
    parser.add_argument("--openblas-coretype",
                        help="OPENBLAS_CORETYPE for every training (default: "
                        "OpenBLAS's own detection)")
    args = parser.parse_args()
    try:
        args.threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        parser.error("--threads takes integers separated by commas, not %r"
                     % args.threads)
    if min(args.threads) < 1 or args.repeats < 1:
        parser.error("--threads and --repeats must be positive")
    if not 0 <= args.warmup < args.steps:
        parser.error("--warmup must be below --steps")
    for tool in (args.zero_compile, args.zero_run):
        if not os.access(tool, os.X_OK):
            parser.error("%s is not an executable" % tool)
    # `bazel run` starts in the runfiles; paths given are the caller's.
    caller = os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())
    if args.json:
        args.json = os.path.join(caller, args.json)
    args.text = os.path.join(caller, args.text)
    return args


def measure(args, plan, case, work, threads):
    """Rows of the table for one thread count."""
    candidates = trainings(threads)
    best, saved = {}, {}
    for repeat in range(args.repeats):
        for t in candidates:
            out = os.path.join(work, "%s_t%d_r%d" % (t.key, threads, repeat))
            save = out + "_params" if repeat == 0 else None
            report = t.run(args, plan, case, out, save)
            if save:
                saved[t.name] = save
            if (t.name not in best or step_ms(report, args.warmup) <
                    step_ms(best[t.name], args.warmup)):
                best[t.name] = report
        print("threads %d repeat %d: %s" % (threads, repeat + 1, ", ".join(
            "%s %.1f ms" % (t.name, step_ms(best[t.name], args.warmup))
            for t in candidates)), flush=True)

    zero = best["ZeroSBP"]
    zero_ms = step_ms(zero, args.warmup)
    rows = []
    for t in candidates:
        report = best[t.name]
        ms = step_ms(report, args.warmup)
        compared = t.name != "ZeroSBP"
        rows.append({
            "threads": threads,
            "training": t.name,
            "blas_threads": t.blas_threads,
            "ms_per_step": round(ms, 2),
            "steps_per_s": round(1e3 / ms, 2),
            "tokens_per_s": round(BATCH * SEQ * 1e3 / ms),
            "zerosbp_speedup": round(ms / zero_ms, 3),
            "final_loss": report["losses"][-1],
            "max_rel_loss_diff": (max_relative_difference(
                report["losses"], zero["losses"]) if compared else None),
            "max_param_diff": (max_parameter_difference(
                saved[t.name], saved["ZeroSBP"]) if compared else None),
            "losses": report["losses"],
        })
    return rows


def print_table(rows):
    header = ["threads", "training", "ms/step", "steps/s", "tokens/s",
              "ZeroSBP speed-up", "final loss", "max rel loss diff",
              "max param diff"]
    print("\n| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for r in rows:
        diff = r["max_rel_loss_diff"]
        param = r["max_param_diff"]
        cells = [str(r["threads"]), r["training"], "%.1f" % r["ms_per_step"],
                 "%.2f" % r["steps_per_s"], str(r["tokens_per_s"]),
                 "%.2fx" % r["zerosbp_speedup"], "%.6f" % r["final_loss"],
                 "-" if diff is None else "%.1e" % diff,
                 "-" if param is None else "%.1e" % param]
        print("| " + " | ".join(cells) + " |")


def main():
    args = parse_args()
    version, package = torch_version()
    core = openblas_core(args)
    try:
        with open(args.text, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as error:
        fail("cannot read --text %s: %s" % (args.text, error))
    work = tempfile.mkdtemp(prefix="pytorch_bench_")
    case = os.path.join(work, "case")
    try:
        char_case.write_case(case, text, LAYERS, EMBED, VOCAB, SEQ, BATCH,
                             args.steps, args.seed)
    except ValueError as error:
        fail(str(error))
    plan = os.path.join(work, "gpt2.zplan")
    run([args.zero_compile] + MODEL_FLAGS + ["--stage=0",
                                             "--pipeline=" + PIPELINE,
                                             "--report=none", "-o", plan],
        os.environ)

    load_before = os.getloadavg()[0]
    rows = []
    for threads in args.threads:
        rows += measure(args, plan, case, work, threads)
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]

    print_table(rows)
    machine = "%s, %d cores" % (platform.processor() or platform.machine(),
                                os.cpu_count())
    print("\nPyTorch %s (Debian python3-torch %s) eager on %s; OpenBLAS "
          "kernels: %s; %d steps, median step after %d warm-up steps, best "
          "of %d runs; loss %.4f -> %.4f. Speed-up: the training's step "
          "time over ZeroSBP's." % (
              version, package, machine, core, args.steps, args.warmup,
              args.repeats, rows[0]["losses"][0], rows[0]["final_loss"]))
    print("Load average (1 min): %.2f before, %.2f after." % tuple(load))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine, "torch_version": version,
                       "python3_torch_package": package,
                       "openblas_core": core, "load_average": load,
                       "steps": args.steps, "warmup": args.warmup,
                       "repeats": args.repeats, "model": MODEL_FLAGS,
                       "pipeline": PIPELINE, "text": args.text,
                       "seed": args.seed, "rows": rows}, f, indent=2)
    worst = max(r["max_rel_loss_diff"] or 0.0 for r in rows)
    if worst > args.loss_rtol:
        fail("the losses differ by up to %.3g (relative), above --loss-rtol "
             "%g: the trainings are not the same" % (worst, args.loss_rtol))


if __name__ == "__main__":
    main()
