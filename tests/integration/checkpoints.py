#!/usr/bin/python3
"""Checkpoints hold the whole training state (docs/checkpoint.md).

* Resume: K steps, save, resume, K more steps gives the losses and the
  parameters of an uninterrupted 2K-step run bit for bit, at stages 0-3,
  in process and over MPI, in fp32 and bf16 (and fp16 with its dynamic loss
  scale).
* Reshard: a checkpoint saved at N ranks and stage s continues at M ranks
  and stage t with the uninterrupted run's losses to the rounding noise of
  its precision (RESHARD_RTOL; the measured figure is printed).
* Pruning keeps the newest --keep checkpoints and `latest` names the last.
* zero-checkpoint inspect describes a checkpoint, and to-fp32 writes the
  full parameters that --save writes (from the fp32 masters under bf16).

Usage: checkpoints.py ZERO_COMPILE ZERO_RUN ZERO_CHECKPOINT
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np

from checks import (GPT2, SHARDED, check, finish, read_safetensors,
                    safetensors_dtypes)

K = 3
# Resharding changes the reduction order (the bucket and rank sums). In
# fp32 the continued losses then differ in the last bits: 8 layout pairs
# measured at most 1.1e-7 (one float32 ulp of the loss, 4.17), against
# 1e-5. In bf16 a changed fp32 sum can round to the neighbouring bf16
# value: one logit near 1 moved by one bf16 ulp (2^-7) moves the mean loss
# over the 12 x 16 tokens by up to 2^-7 / 192 / 4.17 = 9.8e-6 of it, so
# 1e-5 allowed one such step only. Two uninterrupted bf16 runs at the two
# layouts differ as much: the same 8 pairs measured up to 2.2e-5 between
# the layouts and 2.3e-5 after a reshard ((4, 3) -> (2, 2), tested below).
# 1e-4 allows ten such steps, 4.3 times the largest measured.
RESHARD_RTOL = {"fp32": 1e-5, "bf16": 1e-4}

class Tools:
    def __init__(self, zero_compile, zero_run, zero_checkpoint, work):
        self.zero_compile = zero_compile
        self.zero_run = zero_run
        self.zero_checkpoint = zero_checkpoint
        self.work = work
        self.plans = {}

    def plan(self, world, stage, precision="fp32", optimizer="adam"):
        key = (world, stage, precision, optimizer)
        if key not in self.plans:
            path = os.path.join(self.work, "n%d_s%d_%s_%s.zplan" % key)
            subprocess.run([self.zero_compile] + GPT2 + [
                "--world=%d" % world, "--stage=%d" % stage,
                "--pipeline=%s precision=%s optimizer=%s" % (
                    SHARDED, precision, optimizer),
                "--report=none", "-o", path], check=True)
            self.plans[key] = path
        return self.plans[key]

    def run(self, plan, world, steps, *flags, backend="inprocess"):
        """Runs zero-run; returns its report (None on failure)."""
        report = os.path.join(self.work, "report.json")
        if os.path.exists(report):
            os.remove(report)
        command = [self.zero_run, plan, "--ranks", str(world), "--steps",
                   str(steps), "--quiet", "--backend", backend,
                   "--report-file", report] + list(flags)
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            check(False, "%s exited %d: %s" % (" ".join(command[1:]),
                                                result.returncode,
                                                result.stderr.strip()[-500:]))
            return None
        with open(report) as file:
            return json.load(file)


def read_npy_dir(directory):
    return {name[:-4]: np.load(os.path.join(directory, name))
            for name in sorted(os.listdir(directory)) if name.endswith(".npy")}


def same_parameters(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k])
                                        for k in a)


def resume_case(tools, world, stage, precision, backend):
    name = "resume n=%d stage %d %s %s" % (world, stage, precision, backend)
    plan = tools.plan(world, stage, precision)
    base = os.path.join(tools.work, "resume")
    shutil.rmtree(base, ignore_errors=True)
    full_params = os.path.join(base, "full")
    first = os.path.join(base, "first")
    resumed_params = os.path.join(base, "resumed")
    full = tools.run(plan, world, 2 * K, "--save", full_params,
                     backend=backend)
    half = tools.run(plan, world, K, "--checkpoint-dir", first,
                     backend=backend)
    resumed = tools.run(plan, world, K, "--resume", first, "--save",
                        resumed_params, backend=backend)
    if not (full and half and resumed):
        return
    check(half["losses"] == full["losses"][:K] and
          resumed["losses"] == full["losses"][K:],
          "%s: losses bit for bit (%s)" % (name, resumed["losses"]))
    check(resumed["start_step"] == K, "%s: continues at step %d" % (name, K))
    check(same_parameters(read_npy_dir(full_params),
                          read_npy_dir(resumed_params)),
          "%s: final parameters bit for bit" % name)


def reshard_case(tools, source, target, precision="fp32"):
    (n, s), (m, t) = source, target
    name = "reshard %s n=%d stage %d -> n=%d stage %d" % (precision, n, s, m,
                                                          t)
    base = os.path.join(tools.work, "reshard")
    shutil.rmtree(base, ignore_errors=True)
    directory = os.path.join(base, "checkpoints")
    full = tools.run(tools.plan(n, s, precision), n, 2 * K,
                     "--checkpoint-dir", directory, "--checkpoint-every",
                     str(K))
    resumed = tools.run(tools.plan(m, t, precision), m, K, "--resume",
                        os.path.join(directory, "step-%08d" % K))
    if not (full and resumed):
        return
    expected = np.array(full["losses"][K:])
    got = np.array(resumed["losses"])
    difference = float(np.max(np.abs(got - expected) / np.abs(expected)))
    tolerance = RESHARD_RTOL[precision]
    check(difference <= tolerance,
          "%s: losses within %g of the uninterrupted run (measured %.2e)" % (
              name, tolerance, difference))
    check(resumed["resumed"]["buffer_bytes"] <= m * (1 << 20),
          "%s: the load held at most 1 MiB per rank (%d bytes)" % (
              name, resumed["resumed"]["buffer_bytes"]))


def keep_case(tools):
    directory = os.path.join(tools.work, "keep")
    shutil.rmtree(directory, ignore_errors=True)
    tools.run(tools.plan(2, 2), 2, 5, "--checkpoint-dir", directory,
              "--checkpoint-every", "1", "--keep", "2")
    entries = sorted(e for e in os.listdir(directory) if e != "lock")
    check(entries == ["latest", "step-00000004", "step-00000005"],
          "--keep 2 leaves the newest two (%s)" % entries)
    with open(os.path.join(directory, "latest")) as file:
        check(file.read().strip() == "step-00000005",
              "latest names step-00000005")


def tools_case(tools, precision):
    name = "zero-checkpoint (%s)" % precision
    base = os.path.join(tools.work, "tools")
    shutil.rmtree(base, ignore_errors=True)
    directory = os.path.join(base, "checkpoints")
    saved = os.path.join(base, "saved")
    tools.run(tools.plan(4, 3, precision), 4, K, "--checkpoint-dir",
              directory, "--save", saved)
    inspect = subprocess.run([tools.zero_checkpoint, "inspect", directory],
                             capture_output=True, text=True)
    check(inspect.returncode == 0, "%s inspect: exit 0" % name)
    for needle in ["step        %d" % K, "world       4 ranks", "stage       3",
                   "wte.weight", "exp_avg_sq", "rank-00003-of-00004"]:
        check(needle in inspect.stdout, "%s inspect shows %r" % (name, needle))
    out = os.path.join(base, "model.safetensors")
    convert = subprocess.run([tools.zero_checkpoint, "to-fp32", directory,
                              out], capture_output=True, text=True)
    check(convert.returncode == 0, "%s to-fp32: exit 0 (%s)" % (
        name, convert.stderr.strip()))
    if convert.returncode == 0:
        check(set(safetensors_dtypes(out).values()) == {"F32"},
              "%s to-fp32 writes F32 tensors" % name)
        check(same_parameters(read_safetensors(out), read_npy_dir(saved)),
              "%s to-fp32 equals --save (fp32 masters)" % name)


def main():
    tools = Tools(*sys.argv[1:4],
                  work=os.environ.get("TEST_TMPDIR", "/tmp/checkpoints"))
    os.makedirs(tools.work, exist_ok=True)
    for backend in ["inprocess", "mpi"]:
        for precision in ["fp32", "bf16"]:
            for stage in range(4):
                resume_case(tools, 2, stage, precision, backend)
    resume_case(tools, 3, 2, "fp16", "inprocess")
    reshard_case(tools, (4, 3), (2, 2))
    reshard_case(tools, (3, 1), (4, 3))
    reshard_case(tools, (2, 0), (1, 3))
    reshard_case(tools, (4, 2), (3, 0))
    reshard_case(tools, (2, 3), (4, 1), precision="bf16")
    reshard_case(tools, (4, 3), (2, 2), precision="bf16")
    keep_case(tools)
    tools_case(tools, "fp32")
    tools_case(tools, "bf16")
    finish()


if __name__ == "__main__":
    main()
