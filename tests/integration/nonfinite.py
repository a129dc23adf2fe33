#!/usr/bin/python3
"""A NaN or Inf stops a run with one line naming where it is, before
anything is saved (docs/runtime.md#non-finite-numbers):

* in --init or --data: the file, the element and the value;
* in the loss: the step (in process at 1 and 2 ranks, and over MPI), and
  --save writes nothing;
* with --check-gradients, in a gradient an update reads: the step and the
  parameter; a finite run is not changed by the flag;
* with fp16 dynamic loss scaling, non-finite steps are overflow steps:
  they are skipped and the run goes on; --check-gradients is refused;
* with --skip-nonfinite-steps, a step whose loss is not finite makes no
  update, prints one line and is listed in the report, and the run goes on
  as if its batch had not come (in process and over MPI).

Usage: nonfinite.py ZERO_COMPILE ZERO_RUN MLP_MLIR
"""

import json
import os
import subprocess
import sys

import numpy as np

from checks import check, finish

# A GPT-2 small enough for many runs.
GPT2 = ["--num-layers=1", "--hidden-size=16", "--num-attention-heads=2",
        "--seq-length=8", "--vocab-size=32", "--batch-size=2"]


def compile_plan(zero_compile, path, *flags):
    subprocess.run([zero_compile] + list(flags) + ["--report=none", "-o",
                                                   path], check=True)
    with open(path) as file:
        return json.load(file)


def save_init(directory, plan, change=None):
    """Small normal parameters, `change(name, array)` applied."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(0)
    for variable in plan["variables"]:
        if variable["role"] != "param" or "copy_of" in variable:
            continue
        shape = variable.get("logical_shape") or variable["global_shape"]
        value = rng.normal(0, 0.02, size=shape).astype(np.float32)
        if change:
            change(variable["name"], value)
        np.save(os.path.join(directory, variable["name"] + ".npy"), value)
    return directory


def overflowing(name, value):
    """Logits past float32's range: the loss and gradients become NaN."""
    if name == "ln_f.weight":
        value[:] = 1e38
    if name == "wte.weight":
        value *= 1000


def run(zero_run, plan, *flags):
    return subprocess.run([zero_run, plan] + list(flags), capture_output=True,
                          text=True, timeout=300)


def expect_error(name, result, line):
    first = (result.stderr.splitlines() or [""])[0]
    check(result.returncode == 1, "%s: exit status %d" % (name,
                                                          result.returncode))
    check(first == line, "%s: first line %r, expected %r" % (name, first,
                                                              line))


def updated_parameter(plan):
    """The parameter of the plan's first optimizer update (stage 0: its
    operand 0 is the variable's value) and its gradient's element count."""
    update = next(i for i in plan["instructions"]
                  if i["op"] in ("nn.sgd", "nn.adam", "nn.adamw"))
    buffer = plan["values"][update["operands"][0]]["buffer"]
    name = next(v["name"] for v in plan["variables"]
                if plan["values"][v["value"]]["buffer"] == buffer)
    return name, int(np.prod(plan["values"][update["operands"][1]]["shape"]))


def main():
    zero_compile, zero_run, mlp_mlir = sys.argv[1:4]
    work = os.environ.get("TEST_TMPDIR", "/tmp/nonfinite")
    os.makedirs(work, exist_ok=True)
    path1 = os.path.join(work, "gpt2_n1.zplan")
    plan1 = compile_plan(zero_compile, path1, *GPT2, "--world=1",
                         "--stage=0")
    path2 = os.path.join(work, "gpt2_n2.zplan")
    compile_plan(zero_compile, path2, *GPT2, "--world=2", "--stage=2")

    # --init: the file, the element, the value.
    def inf_at_3(name, value):
        if name == "ln_f.weight":
            value[3] = np.inf
    init = save_init(os.path.join(work, "init_inf"), plan1, inf_at_3)
    expect_error("--init", run(zero_run, path1, "--steps", "1", "--init",
                               init),
                 "zero-run: %s/ln_f.weight.npy: element 3 is inf; parameters "
                 "must be finite" % init)

    # --data: the file, the element (and the step that reads it), the value.
    mlp = os.path.join(work, "mlp.zplan")
    compile_plan(zero_compile, mlp, mlp_mlir, "--world=4", "--stage=2")
    data = os.path.join(work, "data_nan")
    os.makedirs(data, exist_ok=True)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(3, 64, 256)).astype(np.float32)
    x[1, 0, 44] = np.nan
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "labels.npy"),
            rng.integers(0, 10, size=(3, 64)))
    expect_error("--data", run(zero_run, mlp, "--steps", "3", "--data", data),
                 "zero-run: %s/x.npy: element 16428 (step 2) is nan; inputs "
                 "must be finite" % data)
    result = run(zero_run, mlp, "--steps", "1", "--data", data, "--quiet")
    check(result.returncode == 0, "--data: a NaN in a row the run does not "
          "read is not refused (%s)" % result.stderr.strip())

    # The loss: the step; --save writes nothing.
    init = save_init(os.path.join(work, "init_overflow"), plan1, overflowing)
    saved = os.path.join(work, "saved")
    for name, plan in [("1 rank", path1), ("2 ranks", path2)]:
        expect_error("a NaN loss, %s" % name,
                     run(zero_run, plan, "--steps", "3", "--init", init,
                         "--save", saved),
                     "zero-run: step 1: the loss is nan")
    check(not os.path.exists(saved), "a NaN loss: --save wrote nothing")
    result = run(zero_run, path2, "--steps", "3", "--init", init,
                 "--backend", "mpi", "--ranks", "2")
    check(result.returncode != 0 and
          "failed: step 1: the loss is nan" in result.stderr,
          "a NaN loss over MPI stops every rank naming the step (%d: %s)" %
          (result.returncode, result.stderr.strip()[-300:]))

    # --check-gradients: before the first update, the step and the parameter.
    parameter, count = updated_parameter(plan1)
    expect_error("--check-gradients",
                 run(zero_run, path1, "--steps", "3", "--init", init,
                     "--check-gradients"),
                 "zero-run: rank 0: step 1: the gradient of '%s' is not "
                 "finite (element 0 of %d on this rank is nan)" %
                 (parameter, count))
    finite = save_init(os.path.join(work, "init_finite"), plan1)
    losses = []
    for flags in [[], ["--check-gradients"]]:
        report = os.path.join(work, "report.json")
        result = run(zero_run, path2, "--steps", "3", "--init", finite,
                     "--quiet", "--report-file", report, *flags)
        check(result.returncode == 0, "finite run %s: exit status 0 (%s)" %
              (flags, result.stderr.strip()))
        with open(report) as file:
            losses.append(json.load(file)["losses"])
    check(losses[0] == losses[1], "--check-gradients leaves a finite run's "
          "losses as they were")

    # --skip-nonfinite-steps: a row whose values overflow (finite, so not
    # refused as data) is skipped; the run equals one without that row.
    big = os.path.join(work, "data_big")
    os.makedirs(big, exist_ok=True)
    x = rng.uniform(-1, 1, size=(3, 64, 256)).astype(np.float32)
    x[1, 5, :] = 3e38
    labels = rng.integers(0, 10, size=(3, 64))
    np.save(os.path.join(big, "x.npy"), x)
    np.save(os.path.join(big, "labels.npy"), labels)
    without = os.path.join(work, "data_without_row_1")
    os.makedirs(without, exist_ok=True)
    np.save(os.path.join(without, "x.npy"), x[[0, 2]])
    np.save(os.path.join(without, "labels.npy"), labels[[0, 2]])
    expect_error("an overflowing row without --skip-nonfinite-steps",
                 run(zero_run, mlp, "--steps", "3", "--data", big),
                 "zero-run: step 2: the loss is nan")
    skipped, clean = (os.path.join(work, name) for name in ("skipped",
                                                            "clean"))
    report = os.path.join(work, "skip_report.json")
    result = run(zero_run, mlp, "--steps", "3", "--data", big, "--save",
                 skipped, "--report-file", report, "--skip-nonfinite-steps")
    check(result.returncode == 0 and result.stderr.splitlines() ==
          ["zero-run: step 2: the loss is nan; skipped (parameters, "
           "optimizer state and step count unchanged)"],
          "--skip-nonfinite-steps: one line for the skipped step, exit 0 "
          "(%d: %r)" % (result.returncode, result.stderr))
    check(["step 1/3", "step 3/3"] == [line[:8] for line in
                                       result.stdout.splitlines()],
          "--skip-nonfinite-steps: progress lines for the other steps (%r)" %
          result.stdout)
    with open(report) as file:
        got = json.load(file)
    check(got["skipped_steps"] == [2] and got["losses"][1] is None,
          "--skip-nonfinite-steps: the report lists step 2 (%r, %r)" %
          (got["skipped_steps"], got["losses"]))
    result = run(zero_run, mlp, "--steps", "2", "--data", without, "--save",
                 clean, "--quiet")
    check(result.returncode == 0, "the run without row 1 (%s)" %
          result.stderr.strip())
    names = sorted(os.listdir(clean))
    check(names == sorted(os.listdir(skipped)) and all(
        np.load(os.path.join(skipped, n)).tobytes() ==
        np.load(os.path.join(clean, n)).tobytes() for n in names),
          "--skip-nonfinite-steps: the parameters equal those of a run "
          "without the skipped row, bit for bit")
    # Interrupted right after the skipped step and resumed: the checkpoint
    # records the rows read (data.next_step 2) apart from the updates
    # (step 1), and the resumed run reads on from row 2, ending with the
    # uninterrupted run's parameters.
    ck = os.path.join(work, "skip_ck")
    result = run(zero_run, mlp, "--steps", "2", "--data", big,
                 "--skip-nonfinite-steps", "--checkpoint-dir", ck, "--quiet")
    check(result.returncode == 0, "--skip-nonfinite-steps with "
          "--checkpoint-dir (%s)" % result.stderr.strip())
    with open(os.path.join(ck, "step-00000001", "manifest.json")) as file:
        data = json.load(file)
    check(data["step"] == 1 and data["data"]["next_step"] == 2,
          "the checkpoint after a skipped step: step 1, data.next_step 2 "
          "(%r, %r)" % (data["step"], data["data"]))
    resumed = os.path.join(work, "skip_resumed")
    result = run(zero_run, mlp, "--steps", "1", "--data", big, "--resume",
                 ck, "--save", resumed, "--quiet")
    check(result.returncode == 0 and sorted(os.listdir(resumed)) == names and
          all(np.load(os.path.join(resumed, n)).tobytes() ==
              np.load(os.path.join(skipped, n)).tobytes() for n in names),
          "resumed after a skipped step: the uninterrupted run's "
          "parameters, bit for bit (%s)" % result.stderr.strip())

    # Every step overflowing: the saved parameters are the initial ones.
    for name, flags in [("in process", []),
                        ("over MPI", ["--backend", "mpi", "--ranks", "2"])]:
        out = os.path.join(work, "kept_" + name.replace(" ", "_"))
        result = run(zero_run, path2, "--steps", "2", "--init", init,
                     "--save", out, "--skip-nonfinite-steps", *flags)
        lines = [line for line in result.stderr.splitlines()
                 if line.startswith("zero-run: ")]
        check(result.returncode == 0 and lines == [
            "zero-run: step %d: the loss is nan; skipped (parameters, "
            "optimizer state and step count unchanged)" % step
            for step in (1, 2)],
              "--skip-nonfinite-steps %s: every step skipped, exit 0 (%d: "
              "%r)" % (name, result.returncode, result.stderr[-400:]))
        check(result.returncode == 0 and all(
            np.load(os.path.join(out, n)).tobytes() ==
            np.load(os.path.join(init, n)).tobytes()
            for n in os.listdir(init)),
              "--skip-nonfinite-steps %s: --save writes the initial "
              "parameters" % name)

    # fp16 with dynamic loss scaling: overflowing steps are skipped.
    fp16 = os.path.join(work, "gpt2_fp16.zplan")
    compile_plan(zero_compile, fp16, *GPT2, "--world=1", "--stage=0",
                 "--pipeline=precision=fp16")
    result = run(zero_run, fp16, "--steps", "3", "--init", init)
    check(result.returncode == 0 and
          result.stdout.count("loss ") == 3 and "nan" in result.stdout,
          "fp16 dynamic loss scaling: NaN losses are overflow steps, the run "
          "goes on (%d: %s)" % (result.returncode, result.stdout.strip()))
    expect_error("--check-gradients with dynamic loss scaling",
                 run(zero_run, fp16, "--steps", "1", "--check-gradients"),
                 "zero-run: --check-gradients: the plan scales the loss "
                 "dynamically (fp16), and steps whose gradients are not "
                 "finite skip their updates")
    finish()


if __name__ == "__main__":
    main()
