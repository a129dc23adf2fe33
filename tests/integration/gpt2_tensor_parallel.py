#!/usr/bin/python3
"""GPT-2 in Megatron's layout: `zero-compile --model-parallel-size N` lays
the model out on a [world / N, N] placement (docs/design.md#tensor-
parallelism) and ZeRO partitions each model part over the data axis.

The 2-layer GPT-2 of checks.py on 4 ranks, at (dp, tp) = (4, 1), (2, 2) and
(1, 4), with the same initial values and data:

* at every stage in fp32 the losses equal the (4, 1) run's within
  FP32_RTOL (what another order of the reductions can move; measured:
  equal), and in bf16 at stage 2 within BF16_RTOL (measured: 1.3e-5);
* the parameters' model states per rank at stage 3 equal Ψ / (tp dp) per
  tensor (padded to its data group), the split ones (the embedding, c_attn,
  c_fc, both c_proj weights) 1/tp by the model axis;
* the model axis sends bytes only where there is one;
* over MPI the (2, 2) stage-3 plan gives the in-process losses bit for bit;
* synthetic data (no --data) is the same at every layout: the ids' bound is
  the whole vocabulary, not a rank's rows of the table;
* a checkpoint saved at (2, 2) with ZeRO-2 resumes at (4, 1) with ZeRO-3 and
  at (1, 4) with ZeRO-1, continuing the uninterrupted losses;
* the eval graph at (2, 2) gives the (4, 1) eval graph's loss;
* `zero-checkpoint to-fp32` of the (2, 2) checkpoint writes whole tensors
  in the model's shapes, equal to what `--save` wrote of the same run.

Usage: gpt2_tensor_parallel.py ZERO_COMPILE ZERO_RUN ZERO_CHECKPOINT
"""

import json
import os
import sys

import numpy as np

from checks import (GPT2, GPT2_SIZES, check, finish, max_rel,
                    read_safetensors, run, train_report, write_gpt2_data)

FP32_RTOL = 1e-6
# bf16 rounds to 8 bits (2^-8 relative); a reduction in another order may
# round a logit the other way.
BF16_RTOL = 4e-3
STEPS = 4
LAYOUTS = [(4, 1), (2, 2), (1, 4)]
# The flags of checks.GPT2, read back for the expected shapes.
LAYERS, EMBED = GPT2_SIZES["num-layers"], GPT2_SIZES["hidden-size"]
SEQ, VOCAB = GPT2_SIZES["seq-length"], GPT2_SIZES["vocab-size"]


def parameters():
    """(name, elements, split on the model axis) in the builder's order."""
    e = EMBED
    params = [("wte.weight", VOCAB * e, True), ("wpe.weight", SEQ * e, False)]
    for i in range(LAYERS):
        p = "h.%d." % i
        params += [(p + "ln_1.weight", e, False), (p + "ln_1.bias", e, False),
                   (p + "attn.c_attn.weight", 3 * e * e, True),
                   (p + "attn.c_attn.bias", 3 * e, True),
                   (p + "attn.c_proj.weight", e * e, True),
                   (p + "attn.c_proj.bias", e, False),
                   (p + "ln_2.weight", e, False), (p + "ln_2.bias", e, False),
                   (p + "mlp.c_fc.weight", 4 * e * e, True),
                   (p + "mlp.c_fc.bias", 4 * e, True),
                   (p + "mlp.c_proj.weight", 4 * e * e, True),
                   (p + "mlp.c_proj.bias", e, False)]
    return params + [("ln_f.weight", e, False), ("ln_f.bias", e, False)]


def shard_elements(dp, tp):
    """A rank's elements of every parameter's ZeRO shard."""
    def padded(count, ranks):
        return -(-count // ranks) * ranks
    return sum(padded(n // tp, dp) // dp if split else
               padded(n, dp * tp) // (dp * tp)
               for _, n, split in parameters())


def main():
    zero_compile, zero_run, zero_checkpoint = sys.argv[1:4]
    work = os.environ.get("TEST_TMPDIR", "/tmp/gpt2_tensor_parallel")
    os.makedirs(work, exist_ok=True)
    data = write_gpt2_data(work, STEPS)

    def compile_plan(dp, tp, stage, precision="fp32", eval_graph=False):
        name = "gpt2_%d_%d_%d_%s%s" % (dp, tp, stage, precision,
                                       "_eval" if eval_graph else "")
        plan = os.path.join(work, name + ".zplan")
        result = run([zero_compile, *GPT2, "--world=4",
                      "--model-parallel-size=%d" % tp, "--stage=%d" % stage,
                      "--pipeline=optimizer=adam precision=%s "
                      "stage3-param-persistence-threshold=0" % precision,
                      *(["--eval"] if eval_graph else []),
                      "-o", plan, "--report=json"])
        compiled = json.loads(result.stdout) if result.returncode == 0 else None
        check(compiled is not None, "(%d, %d) stage %d %s%s compiles (%s)" % (
            dp, tp, stage, precision, " eval" if eval_graph else "",
            result.stderr.strip()))
        return plan, compiled

    def train(plan, *flags, steps=STEPS, synthetic=False):
        return train_report(zero_run, plan, work,
                            None if synthetic else data, steps, *flags)

    plans, losses = {}, {}
    worst = 0.0
    for stage in (0, 1, 2, 3):
        for dp, tp in LAYOUTS:
            plan, compiled = compile_plan(dp, tp, stage)
            plans[(dp, tp, stage)] = plan
            report, error = train(plan)
            check(report is not None, "(%d, %d) stage %d trains (%s)" % (
                dp, tp, stage, error))
            if report is None:
                continue
            losses[(dp, tp, stage)] = report["losses"]
            axes = report["comm_bytes"]["per_axis"][0]
            check((len(axes) == 2 and axes[1] > 0) == (tp > 1),
                  "(%d, %d) stage %d: the model axis sends only where there "
                  "is one (%s by axis)" % (dp, tp, stage, axes))
            if stage == 3 and compiled:
                expected = 4 * shard_elements(dp, tp)
                held = compiled["bytes_per_rank"]["param"]
                check(held == expected, "(%d, %d) stage 3: %d parameter "
                      "bytes per rank, Psi / (tp dp) per tensor (%d)" % (
                          dp, tp, held, expected))
        base = losses.get((4, 1, stage))
        for dp, tp in LAYOUTS[1:]:
            mine = losses.get((dp, tp, stage))
            if base and mine:
                diff = max_rel(mine, base)
                worst = max(worst, diff)
                check(diff <= FP32_RTOL, "(%d, %d) stage %d fp32: the (4, 1) "
                      "losses within %g (max rel diff %.2e)" % (
                          dp, tp, stage, FP32_RTOL, diff))
    print("largest relative fp32 loss difference to (4, 1): %.2e" % worst)

    bf16 = {}
    for dp, tp in LAYOUTS:
        plan, _ = compile_plan(dp, tp, 2, "bf16")
        bf16[(dp, tp)], error = train(plan)
        check(bf16[(dp, tp)] is not None, "(%d, %d) bf16 trains (%s)" % (
            dp, tp, error))
    for dp, tp in LAYOUTS[1:]:
        if bf16[(dp, tp)] and bf16[(4, 1)]:
            diff = max_rel(bf16[(dp, tp)]["losses"], bf16[(4, 1)]["losses"])
            check(diff <= BF16_RTOL, "(%d, %d) bf16 stage 2: the (4, 1) "
                  "losses within %g (max rel diff %.2e)" % (
                      dp, tp, BF16_RTOL, diff))

    # Over MPI: the in-process losses bit for bit.
    mpi, error = train(plans[(2, 2, 3)], "--backend", "mpi")
    check(mpi is not None and mpi["losses"] == losses.get((2, 2, 3)),
          "(2, 2) stage 3 over MPI: the in-process losses bit for bit (%s)"
          % (mpi["losses"] if mpi else error))

    # Synthetic data reads ids over the whole vocabulary at every layout.
    flat, _ = train(plans[(4, 1, 0)], synthetic=True)
    split, error = train(plans[(2, 2, 0)], synthetic=True)
    check(flat is not None and split is not None and
          max_rel(split["losses"], flat["losses"]) <= FP32_RTOL,
          "(2, 2) on synthetic data: the (4, 1) losses (%s)" % (
              split["losses"] if split else error))

    # A checkpoint of (2, 2) at stage 2 resumes at other layouts and stages.
    uninterrupted = losses.get((2, 2, 2), [])
    ck = os.path.join(work, "ck")
    whole = os.path.join(work, "saved")
    saved, error = train(plans[(2, 2, 2)], "--checkpoint-dir", ck,
                         "--save", whole, steps=2)
    check(saved is not None, "(2, 2) saves a checkpoint (%s)" % error)

    # to-fp32 gathers the model parts and the data shards into whole tensors.
    out = os.path.join(work, "model.safetensors")
    convert = run([zero_checkpoint, "to-fp32", ck, out])
    check(convert.returncode == 0, "(2, 2) to-fp32: exit 0 (%s)" %
          convert.stderr.strip())
    if convert.returncode == 0 and saved is not None:
        tensors = read_safetensors(out)
        expected = {name[:-4]: np.load(os.path.join(whole, name))
                    for name in os.listdir(whole) if name.endswith(".npy")}
        check(tensors.keys() == expected.keys() and
              all(tensors[k].shape == expected[k].shape and
                  np.array_equal(tensors[k], expected[k]) for k in expected),
              "(2, 2) to-fp32: every parameter whole, equal to --save")
    for name, key in [("(4, 1), stage 3", (4, 1, 3)),
                      ("(1, 4), stage 1", (1, 4, 1))]:
        resumed, error = train(plans[key], "--resume", ck, steps=STEPS - 2)
        check(resumed is not None and len(uninterrupted) == STEPS and
              max_rel(resumed["losses"], uninterrupted[2:]) <= FP32_RTOL,
              "resumed at %s: the uninterrupted losses (%s)" % (
                  name, resumed["losses"] if resumed else error))

    # The eval graph on the same layout.
    evals = {}
    for dp, tp in [(4, 1), (2, 2)]:
        plan, _ = compile_plan(dp, tp, 3, eval_graph=True)
        evals[(dp, tp)], error = train(plan, "--eval", steps=2)
        check(evals[(dp, tp)] is not None, "(%d, %d) eval runs (%s)" % (
            dp, tp, error))
    if evals[(4, 1)] and evals[(2, 2)]:
        a, b = evals[(2, 2)]["losses"], evals[(4, 1)]["losses"]
        check(len(a) == 2 and max_rel(a, b) <= FP32_RTOL,
              "(2, 2) eval: the (4, 1) losses (%s, %s)" % (a, b))
    finish()


if __name__ == "__main__":
    main()
