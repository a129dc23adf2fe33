#!/usr/bin/python3
"""GPT-2 in Megatron's 3-D layout: `zero-compile
--pipeline-model-parallel-size P` cuts the blocks into P stages on a
[pipeline, data, model] placement, and --gradient-accumulation-steps M
micro-batches flow through them as 1F1B or GPipe
(docs/design.md#pipeline-parallelism).

The 2-layer GPT-2 of checks.py on 4 ranks, same initial values and data:

* at (pp, dp, tp) = (2, 2, 1) and (2, 1, 2), ZeRO stages 0 and 1, 2
  micro-batches, the losses equal the (1, 4, 1) run's within FP32_RTOL:
  the micro-batches' losses are averaged and their gradients summed in
  another order, which moves the last bits of float32 (the largest
  difference is printed);
* 1F1B and GPipe give the same losses bit for bit (the same sums in the
  same order, run in another order);
* Megatron's interleaved 1F1B (--num-virtual-stages-per-pipeline-rank 2,
  4 layers on 2 stages) gives the plain 1F1B losses bit for bit, the
  (1, 4, 1) ones within FP32_RTOL, and plans a smaller bubble;
* each pipeline stage holds only its own parameters: a rank's model states
  at (2, 2, 1) are those of its stage's blocks;
* the plan records the schedule and the bubble, and the report the bytes
  sent between stages (send_recv, on the pipeline axis);
* each weight gradient's running total is added by the GEMM of the
  product it sums (nn.matmul_add, zero-fuse-accumulation), with the
  unfused plan's losses bit for bit in fp32;
* over MPI the (2, 2, 1) plan gives the in-process losses bit for bit;
* a checkpoint saved at (2, 2, 1) resumes at (1, 4, 1), at (2, 1, 2) and
  at (2, 2, 1) itself, continuing the uninterrupted losses; `zero-checkpoint
  to-fp32` of it writes whole tensors equal to what `--save` wrote;
* the eval graph at (2, 2, 1) gives the (1, 4, 1) eval graph's loss;
* synthetic data (no --data) give the same losses with micro-batches;
* refusals, each one line and a non-zero exit: more stages than layers,
  micro-batches that do not divide a rank's batch, ZeRO stage 2, gradient
  clipping, an unknown schedule; and for interleaving, fewer layers than
  virtual stages, GPipe, micro-batches not in groups of the stages, no
  pipeline at all.

Usage: gpt2_pipeline.py ZERO_COMPILE ZERO_RUN ZERO_CHECKPOINT
"""

import json
import os
import sys

import numpy as np

from checks import (GPT2, check, finish, max_rel, read_safetensors, run,
                    train_report, write_gpt2_data)

# The micro-batches' mean loss and the gradients summed in another order
# round differently in float32.
FP32_RTOL = 1e-5
STEPS = 4
MICRO = 2


def main():
    zero_compile, zero_run, zero_checkpoint = sys.argv[1:4]
    work = os.environ.get("TEST_TMPDIR", "/tmp/gpt2_pipeline")
    os.makedirs(work, exist_ok=True)
    data = write_gpt2_data(work, STEPS)

    def compile_plan(pp, tp, stage, schedule="1f1b", micro=MICRO,
                     pairs="optimizer=adam", eval_graph=False, layers=None,
                     chunks=1):
        name = "gpt2_%d_%d_%d_%s_%d_%s_%d_%s%s" % (
            pp, tp, stage, schedule, micro, layers, chunks,
            pairs.replace(" ", "_").replace("=", "-"),
            "_eval" if eval_graph else "")
        plan = os.path.join(work, name + ".zplan")
        model = [flag for flag in GPT2
                 if not (layers and flag.startswith("--num-layers="))]
        if layers:
            model.append("--num-layers=%d" % layers)
        flags = ["--world=4", "--stage=%d" % stage, "--pipeline=" + pairs]
        if eval_graph:
            flags.append("--eval")
        if pp > 1:
            flags += ["--pipeline-model-parallel-size=%d" % pp,
                      "--pipeline-schedule=%s" % schedule,
                      "--gradient-accumulation-steps=%d" % micro]
        if chunks > 1:
            flags.append("--num-virtual-stages-per-pipeline-rank=%d" % chunks)
        if tp > 1:
            flags.append("--model-parallel-size=%d" % tp)
        result = run([zero_compile, *model, *flags, "-o", plan,
                      "--report=json"])
        compiled = json.loads(result.stdout) if result.returncode == 0 else None
        return plan, compiled, result

    def train(plan, *flags, steps=STEPS):
        return train_report(zero_run, plan, work, data, steps, *flags)

    losses, states = {}, {}
    worst = 0.0
    for stage in (0, 1):
        for pp, tp in [(1, 1), (2, 1), (2, 2)]:
            plan, compiled, result = compile_plan(pp, tp, stage)
            check(compiled is not None, "(%d, %d, %d) stage %d compiles (%s)"
                  % (pp, 4 // (pp * tp), tp, stage, result.stderr.strip()))
            if compiled is None:
                continue
            states[(pp, tp, stage)] = compiled["bytes_per_rank"]["param"]
            report, error = train(plan)
            check(report is not None, "(%d, %d, %d) stage %d trains (%s)" % (
                pp, 4 // (pp * tp), tp, stage, error))
            if report is None:
                continue
            losses[(pp, tp, stage)] = report["losses"]
            if pp > 1:
                with open(plan) as file:
                    pipeline = json.load(file).get("pipeline", {})
                check(pipeline.get("stages") == pp and
                      pipeline.get("micro_batches") == MICRO and
                      0 < pipeline.get("bubble", 0) < 1,
                      "(%d, %d) stage %d: the plan records the schedule and "
                      "its bubble (%s)" % (pp, tp, stage, pipeline))
                sent = compiled["comm_bytes_per_step"].get("send_recv", 0)
                check(sent > 0, "(%d, %d) stage %d: the report counts the "
                      "bytes sent between stages (%s)" % (pp, tp, stage,
                                                           sent))
        base = losses.get((1, 1, stage))
        for pp, tp in [(2, 1), (2, 2)]:
            mine = losses.get((pp, tp, stage))
            if base and mine:
                diff = max_rel(mine, base)
                worst = max(worst, diff)
                check(diff <= FP32_RTOL, "(%d, %d, %d) stage %d: the (1, 4, "
                      "1) losses within %g (max rel diff %.2e)" % (
                          pp, 4 // (pp * tp), tp, stage, FP32_RTOL, diff))
    print("largest relative loss difference to (1, 4, 1): %.2e" % worst)

    # A stage holds its own blocks' parameters only.
    flat, piped = states.get((1, 1, 1)), states.get((2, 1, 1))
    check(flat and piped and piped < flat,
          "(2, 2, 1) holds fewer parameter bytes per rank than (1, 4, 1) "
          "(%s < %s)" % (piped, flat))

    # GPipe runs the same sums in another order.
    for stage in (0, 1):
        plan, compiled, result = compile_plan(2, 1, stage, "gpipe")
        report, error = train(plan) if compiled else (None, result.stderr)
        check(report is not None and
              report["losses"] == losses.get((2, 1, stage)),
              "(2, 2, 1) stage %d: GPipe gives the 1F1B losses bit for bit "
              "(%s)" % (stage, report["losses"] if report else error))

    # Interleaved 1F1B: each stage holds two of the four blocks' ranges.
    interleaved = {}
    for pp, chunks in [(1, 1), (2, 1), (2, 2)]:
        plan, compiled, result = compile_plan(pp, 1, 1, layers=4,
                                              chunks=chunks)
        report, error = train(plan) if compiled else (None,
                                                      result.stderr.strip())
        check(report is not None, "4 layers, pp %d, %d model chunks per "
              "stage trains (%s)" % (pp, chunks, error))
        if report is not None:
            with open(plan) as file:
                pipeline = json.load(file).get("pipeline", {})
            interleaved[(pp, chunks)] = (report["losses"], pipeline)
    if len(interleaved) == 3:
        flat, _ = interleaved[(1, 1)]
        plain, plain_pipeline = interleaved[(2, 1)]
        mine, pipeline = interleaved[(2, 2)]
        check(mine == plain, "interleaved 1F1B gives the 1F1B losses bit "
              "for bit (%s, %s)" % (mine, plain))
        check(max_rel(mine, flat) <= FP32_RTOL, "interleaved 1F1B: the (1, "
              "4, 1) losses within %g (%s, %s)" % (FP32_RTOL, mine, flat))
        check(pipeline.get("model_chunks") == 2 and
              "model_chunks" not in plain_pipeline and
              pipeline.get("bubble", 1) < plain_pipeline.get("bubble", 0),
              "the interleaved plan records 2 model chunks and a smaller "
              "bubble (%s, %s)" % (pipeline, plain_pipeline))

    # The gradient sums fused into their products' GEMMs, or not.
    fused_plan, _, _ = compile_plan(2, 1, 1)
    unfused_plan, compiled, result = compile_plan(
        2, 1, 1, pairs="optimizer=adam fuse-accumulation=false")
    with open(fused_plan) as file:
        fused_ops = [i.get("op") for i in json.load(file)["instructions"]]
    with open(unfused_plan) as file:
        unfused_ops = [i.get("op") for i in json.load(file)["instructions"]]
    check(fused_ops.count("nn.matmul_add") > 0 and
          "nn.matmul_add" not in unfused_ops,
          "(2, 2, 1): the plan adds gradient sums in their GEMMs (%d "
          "nn.matmul_add), fuse-accumulation=false does not" %
          fused_ops.count("nn.matmul_add"))
    unfused, error = train(unfused_plan) if compiled else (
        None, result.stderr.strip())
    check(unfused is not None and
          unfused["losses"] == losses.get((2, 1, 1)),
          "(2, 2, 1) stage 1: fused and unfused gradient sums give the same "
          "losses bit for bit (%s)" % (unfused["losses"] if unfused
                                       else error))

    # The micro-batch loop: one micro-batch's graph, expanded by the plan
    # reader, trains to the copies' losses bit for bit.
    for pp, tp, stage, schedule, chunks in [
            (2, 1, 1, "1f1b", 1), (2, 1, 1, "gpipe", 1), (2, 2, 1, "1f1b", 1),
            (2, 1, 0, "1f1b", 1), (2, 1, 1, "1f1b", 2)]:
        name = "(%d, %d, %d) stage %d %s%s" % (
            pp, 4 // (pp * tp), tp, stage, schedule,
            " interleaved" if chunks > 1 else "")
        layers = 4 if chunks > 1 else None
        copies_plan, _, _ = compile_plan(pp, tp, stage, schedule,
                                         layers=layers, chunks=chunks)
        loop_plan, compiled, result = compile_plan(
            pp, tp, stage, schedule,
            pairs="optimizer=adam micro-batch-loop=true", layers=layers,
            chunks=chunks)
        with open(loop_plan) as file:
            loop_pipeline = json.load(file).get("pipeline", {})
        with open(copies_plan) as file:
            copies_count = len(json.load(file)["instructions"])
        reported = (compiled or {}).get("pipeline", {}).get(
            "micro_batch_loop", {})
        check(compiled is not None and "loop" in loop_pipeline and
              len(loop_pipeline["loop"]["chunks"]) == 2 * pp * chunks and
              reported.get("chunks") == 2 * pp * chunks,
              "%s: micro-batch-loop=true writes pipeline.loop with a forward "
              "and a backward per model chunk and stage, and the report "
              "says so (%s, %s)" % (name, reported, result.stderr.strip()))
        copies, _ = train(copies_plan)
        looped, error = train(loop_plan) if compiled else (
            None, result.stderr.strip())
        check(looped is not None and copies is not None and
              looped["losses"] == copies["losses"],
              "%s: the micro-batch loop trains to the copies' losses bit for "
              "bit (%s, %d instructions in the copies' plan)" %
              (name, looped["losses"] if looped else error, copies_count))

    # Four stages of tensor-parallel pairs on 8 ranks: a stage sends the
    # next several values per micro-batch, some read only by its backward,
    # and they are received in one chunk, in the order sent; interleaved,
    # the receives of two chunks meet where the later one begins.
    model = [flag for flag in GPT2 if not flag.startswith("--num-layers=")]
    for name, flags in [
            ("checkpointed", ["--num-layers=4", "--checkpoint-activations"]),
            ("interleaved", ["--num-layers=8",
                             "--num-virtual-stages-per-pipeline-rank=2"])]:
        deep = {}
        for loop in ("false", "true"):
            plan = os.path.join(work, "gpt2_pp4_tp2_%s_%s.zplan" % (name,
                                                                   loop))
            result = run([zero_compile, *model, *flags, "--world=8",
                          "--stage=1", "--pipeline-model-parallel-size=4",
                          "--model-parallel-size=2",
                          "--gradient-accumulation-steps=4",
                          "--pipeline=optimizer=adam micro-batch-loop=" + loop,
                          "-o", plan])
            report = os.path.join(work, "report_pp4_%s_%s.json" % (name, loop))
            trained = result.returncode == 0 and run(
                [zero_run, plan, "--ranks", "8", "--steps", "2", "--quiet",
                 "--report-file", report]).returncode == 0
            if trained:
                with open(report) as file:
                    deep[loop] = json.load(file)["losses"]
        check(len(deep) == 2 and deep["true"] == deep["false"],
              "(4, 1, 2) stage 1, %s: the micro-batch loop trains to the "
              "copies' losses bit for bit (%s)" % (name, deep))

    # Over MPI: the in-process losses bit for bit.
    plan, _, _ = compile_plan(2, 1, 1)
    mpi, error = train(plan, "--backend", "mpi")
    check(mpi is not None and mpi["losses"] == losses.get((2, 1, 1)),
          "(2, 2, 1) stage 1 over MPI: the in-process losses bit for bit "
          "(%s)" % (mpi["losses"] if mpi else error))
    # And as a micro-batch loop, which each process's reader unrolls.
    loop_plan, _, _ = compile_plan(
        2, 1, 1, pairs="optimizer=adam micro-batch-loop=true")
    mpi, error = train(loop_plan, "--backend", "mpi")
    check(mpi is not None and mpi["losses"] == losses.get((2, 1, 1)),
          "(2, 2, 1) stage 1 as a micro-batch loop over MPI: the in-process "
          "losses bit for bit (%s)" % (mpi["losses"] if mpi else error))
    # A loop's checkpoint resumes in the copies' plan: the same variables.
    loop_ck = os.path.join(work, "loop_ck")
    saved, error = train(loop_plan, "--checkpoint-dir", loop_ck, steps=2)
    resumed, error = train(compile_plan(2, 1, 1)[0], "--resume", loop_ck,
                           steps=STEPS - 2) if saved else (None, error)
    check(resumed is not None and
          resumed["losses"] == losses.get((2, 1, 1), [])[2:],
          "(2, 2, 1): a micro-batch loop's checkpoint resumes in the copies' "
          "plan to the uninterrupted losses bit for bit (%s)" % (
              resumed["losses"] if resumed else error))
    # Synthetic data (no --data): each micro-batch reads its own rows.
    looped, error = train_report(zero_run, loop_plan, work, None, STEPS)
    copied, _ = train_report(zero_run, compile_plan(2, 1, 1)[0], work, None,
                             STEPS)
    check(looped is not None and copied is not None and
          looped["losses"] == copied["losses"],
          "(2, 2, 1) as a micro-batch loop on synthetic data: the copies' "
          "losses bit for bit (%s)" % (looped["losses"] if looped else error))

    # A checkpoint of (2, 2, 1) resumes at other pipeline sizes.
    uninterrupted = losses.get((2, 1, 1), [])
    ck = os.path.join(work, "ck")
    whole = os.path.join(work, "saved")
    saved, error = train(compile_plan(2, 1, 1)[0], "--checkpoint-dir", ck,
                         "--save", whole, steps=2)
    check(saved is not None, "(2, 2, 1) saves a checkpoint (%s)" % error)
    for pp, tp in [(1, 1), (2, 2), (2, 1)]:
        resumed, error = train(compile_plan(pp, tp, 1)[0], "--resume", ck,
                               steps=STEPS - 2)
        check(resumed is not None and len(uninterrupted) == STEPS and
              max_rel(resumed["losses"], uninterrupted[2:]) <= FP32_RTOL,
              "resumed at (%d, %d, %d): the uninterrupted losses (%s)" % (
                  pp, 4 // (pp * tp), tp,
                  resumed["losses"] if resumed else error))
    out = os.path.join(work, "model.safetensors")
    convert = run([zero_checkpoint, "to-fp32", ck, out])
    check(convert.returncode == 0, "(2, 2, 1) to-fp32: exit 0 (%s)" %
          convert.stderr.strip())
    if convert.returncode == 0 and saved is not None:
        tensors = read_safetensors(out)
        expected = {name[:-4]: np.load(os.path.join(whole, name))
                    for name in os.listdir(whole) if name.endswith(".npy")}
        check(tensors.keys() == expected.keys() and
              all(np.array_equal(tensors[k], expected[k]) for k in expected),
              "(2, 2, 1) to-fp32: every parameter whole, equal to --save")

    # The eval graph cut into the same stages.
    evals = {}
    for pp in (1, 2):
        plan, compiled, result = compile_plan(pp, 1, 1, eval_graph=True)
        evals[pp], error = train(plan, "--eval", steps=2) if compiled else \
            (None, result.stderr.strip())
        check(evals[pp] is not None, "(%d, %d, 1) eval runs (%s)" % (
            pp, 4 // pp, error))
    if evals[1] and evals[2]:
        a, b = evals[2]["losses"], evals[1]["losses"]
        check(len(a) == 2 and max_rel(a, b) <= FP32_RTOL,
              "(2, 2, 1) eval: the (1, 4, 1) losses (%s, %s)" % (a, b))

    # Synthetic data (no --data) are the same with micro-batches: their ids
    # range over the vocabulary read through each micro-batch's rows.
    flat, _ = train_report(zero_run, compile_plan(1, 1, 1)[0], work, None,
                           STEPS)
    piped, error = train_report(zero_run, compile_plan(2, 1, 1)[0], work,
                                None, STEPS)
    check(flat is not None and piped is not None and
          max_rel(piped["losses"], flat["losses"]) <= FP32_RTOL,
          "(2, 2, 1) on synthetic data: the (1, 4, 1) losses (%s, %s)" % (
              piped["losses"] if piped else error,
              flat["losses"] if flat else None))

    # Refusals: one line each, and a non-zero exit.
    refusals = [
        ("more stages than layers", dict(pp=4, tp=1, stage=0),
         "2 layers do not cut into 4 pipeline stages"),
        ("micro-batches that do not divide a rank's batch",
         dict(pp=2, tp=1, stage=0, micro=4),
         "does not split evenly into gradient_accumulation_steps 4"),
        ("ZeRO stage 2", dict(pp=2, tp=1, stage=2),
         "pipeline-parallel-size > 1 with ZeRO stage 2 is not built"),
        ("gradient clipping",
         dict(pp=2, tp=1, stage=1, pairs="optimizer=adam gradient-clipping=1"),
         "with gradient clipping"),
        ("an unknown schedule", dict(pp=2, tp=1, stage=0, schedule="zb"),
         "expected 1f1b or gpipe, got 'zb'"),
        ("fewer layers than virtual stages", dict(pp=2, tp=1, stage=1,
                                                  chunks=2),
         "2 layers do not cut into 2 pipeline stages of 2 model chunks"),
        ("interleaved GPipe", dict(pp=2, tp=1, stage=1, chunks=2, layers=4,
                                   schedule="gpipe"),
         "interleaves the 1f1b schedule, not gpipe"),
        ("virtual stages without a pipeline", dict(pp=1, tp=1, stage=1,
                                                   chunks=2, layers=4),
         "virtual-pipeline-stages: only used with pipeline-parallel-size > 1"),
        ("micro-batches not in groups of the stages",
         dict(pp=2, tp=1, stage=1, chunks=2, layers=4, micro=3),
         "needs gradient-accumulation-steps (3) to be a multiple of "
         "pipeline-parallel-size (2)"),
    ]
    for what, kwargs, message in refusals:
        _, _, result = compile_plan(**kwargs)
        lines = result.stderr.strip().splitlines()
        check(result.returncode != 0 and len(lines) == 1 and
              message in lines[0],
              "refuses %s in one line (%s)" % (what, result.stderr.strip()))
    finish()


if __name__ == "__main__":
    main()
