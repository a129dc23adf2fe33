#!/usr/bin/python3
"""Mixed precision and gradient clipping train the same at every stage.

* fp16 with dynamic loss scaling, gradient clipping, and both, at 3 ranks
  (flat partitions with padding) and 4: every run gives the same bits
  twice, and stages 1-3 give stage 1's losses and parameters bit for bit;
  so does stage 0, except that with clipping its global norm sums the
  squares in another order (whole tensors, not shards): its losses then
  agree to float32 rounding (CLIP_RTOL; the measured figure is printed).
  Parameters are not compared there: Adam turns a rounding-level change of
  a near-zero gradient into a whole step of either sign.
* An overflowing step changes nothing: with an initial scale of 2^30 the
  first steps overflow, so after them every fp32 master still equals its
  initial value (the --init value rounded through fp16), Adam's states are
  zero, and the scale has halved once per step. Read from a checkpoint.

Usage: mixed_precision.py ZERO_COMPILE ZERO_RUN ZERO_CHECKPOINT
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np

from checks import GPT2, SHARDED, check, finish, read_safetensors

STEPS = 6
CLIP_RTOL = 1e-5

class Runner:
    def __init__(self, argv, work):
        self.zero_compile, self.zero_run, self.zero_checkpoint = argv
        self.work = work

    def compile(self, world, stage, pipeline):
        path = os.path.join(self.work, "plan.zplan")
        subprocess.run([self.zero_compile] + GPT2 + [
            "--world=%d" % world, "--stage=%d" % stage,
            "--pipeline=" + pipeline, "--report=none", "-o", path],
            check=True)
        return path

    def run(self, plan, *flags):
        report = os.path.join(self.work, "report.json")
        result = subprocess.run([self.zero_run, plan, "--quiet",
                                 "--report-file", report] + list(flags),
                                capture_output=True, text=True)
        if result.returncode != 0:
            check(False, "zero-run %s: %s" % (" ".join(flags),
                                              result.stderr.strip()))
            return None
        with open(report) as file:
            return json.load(file)["losses"]

    def params(self, plan, steps):
        saved = os.path.join(self.work, "saved")
        shutil.rmtree(saved, ignore_errors=True)
        losses = self.run(plan, "--steps", str(steps), "--save", saved)
        values = {name[:-4]: np.load(os.path.join(saved, name))
                  for name in os.listdir(saved)}
        return losses, values


def stages_agree(runner, world, pipeline):
    name = "%s at n=%d" % (pipeline, world)
    runs = []
    for stage in range(4):
        plan = runner.compile(world, stage, pipeline + " " + SHARDED)
        losses, params = runner.params(plan, STEPS)
        again = runner.run(plan, "--steps", str(STEPS))
        check(losses == again, "%s stage %d: a second run gives the same "
              "bits" % (name, stage))
        runs.append((losses, params))
    for stage in [2, 3]:
        check(runs[stage][0] == runs[1][0], "%s: stage %d's losses equal "
              "stage 1's bit for bit" % (name, stage))
        check(runs[stage][1].keys() == runs[1][1].keys() and
              all(np.array_equal(runs[stage][1][k], runs[1][1][k])
                  for k in runs[1][1]),
              "%s: stage %d's parameters equal stage 1's" % (name, stage))
    same = runs[0][0] == runs[1][0] and all(
        np.array_equal(runs[0][1][k], runs[1][1][k]) for k in runs[1][1])
    if "clipping" not in pipeline:
        check(same, "%s: stage 0 equals stage 1 bit for bit" % name)
        return
    losses = float(np.max(np.abs(np.array(runs[0][0]) - runs[1][0]) /
                          np.abs(runs[1][0])))
    check(losses <= CLIP_RTOL, "%s: stage 0's losses within %g of stage "
          "1's (measured %.1e)" % (name, CLIP_RTOL, losses))


def overflow_keeps_state(runner, stage):
    name = "fp16 overflow, stage %d" % stage
    plan = runner.compile(3, stage, "precision=fp16 initial-scale-power=30 "
                          "hysteresis=1 " + SHARDED)
    init = os.path.join(runner.work, "init")
    shutil.rmtree(init, ignore_errors=True)
    os.makedirs(init)
    with open(plan) as file:
        variables = json.load(file)["variables"]
    rng = np.random.default_rng(1)
    expected = {}
    for variable in variables:
        if variable["role"] != "param":
            continue
        shape = variable.get("logical_shape") or variable["global_shape"]
        value = rng.normal(0, 0.5, size=shape).astype(np.float32)
        np.save(os.path.join(init, variable["name"] + ".npy"), value)
        expected[variable["name"]] = value.astype(np.float16).astype(
            np.float32)
    checkpoints = os.path.join(runner.work, "overflow")
    shutil.rmtree(checkpoints, ignore_errors=True)
    runner.run(plan, "--steps", "3", "--init", init, "--checkpoint-dir",
               checkpoints)
    step = os.path.join(checkpoints, "step-00000003")
    shards = {}
    for rank in range(3):
        for tensor, value in read_safetensors(os.path.join(
                step, "rank-%05d-of-00003.safetensors" % rank)).items():
            shards.setdefault(tensor, []).append(value)
    check(float(shards["amp.loss_scale"][0]) == 2.0 ** 27,
          "%s: the scale halved on each of 3 steps (%s)" % (
              name, shards["amp.loss_scale"][0]))
    states = [k for k in shards if k.endswith((".exp_avg", ".exp_avg_sq"))]
    check(states and all(not np.any(v) for k in states for v in shards[k]),
          "%s: Adam's states are still zero" % name)
    out = os.path.join(runner.work, "masters.safetensors")
    subprocess.run([runner.zero_checkpoint, "to-fp32", step, out],
                   check=True, capture_output=True)
    masters = read_safetensors(out)
    changed = [k for k in expected
               if not np.array_equal(masters[k], expected[k])]
    check(not changed, "%s: every master kept its initial value (changed: "
          "%s)" % (name, changed[:3]))


def main():
    runner = Runner(sys.argv[1:4],
                    os.environ.get("TEST_TMPDIR", "/tmp/mixed_precision"))
    os.makedirs(runner.work, exist_ok=True)
    for world in [3, 4]:
        for pipeline in ["precision=fp16", "gradient-clipping=0.5",
                         "precision=fp16 gradient-clipping=0.5"]:
            stages_agree(runner, world, pipeline)
    for stage in range(4):
        overflow_keeps_state(runner, stage)
    finish()


if __name__ == "__main__":
    main()
