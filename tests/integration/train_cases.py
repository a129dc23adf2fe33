#!/usr/bin/python3
"""Trains a model through zero-compile and zero-run at every stage and rank
count asked for, and checks the runs:

* stage 0 at each rank count against the independent float64 reference
  (reference/compare.py --case: float32 noise);
* stages 1, 2, 3 against stage 0 at the same rank count, bit for bit (the
  in-process backend reduces in rank order, so ZeRO changes no bit);
* with --mpi-ranks, MPI runs (one process per rank) against the in-process
  run of the same plan, within 1e-6;
* with --model-parallel-size N (GPT-2), each world laid out as Megatron
  does on [world / N, N], against the same reference.

Usage: train_cases.py --zero-compile BIN --zero-run BIN --model mlp|gpt2
           --optimizer sgd|adam|adamw [--ranks 1,2,3,4] [--stages 0,1,2,3]
           [--mpi-ranks 2,3] [--mpi-stages 2,3] [--steps 20]
           [--pipeline 'overlap-comm=true ...'] [--model-parallel-size N]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "reference")


def run(command, **kwargs):
    started = time.time()
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        print("FAILED: " + " ".join(command), file=sys.stderr)
        print(result.stdout[-4000:], result.stderr[-4000:], file=sys.stderr)
        sys.exit(1)
    return result, time.time() - started


def mlir_for_world(text, world):
    """The case's MLP graph placed on `world` ranks."""
    ranks = ", ".join(str(r) for r in range(world))
    text = re.sub(r"#sbp\.placement<cpu, \[[0-9, ]*\]>",
                  "#sbp.placement<cpu, [%s]>" % ranks, text)
    return re.sub(r"#cpus\d+", "#cpus%d" % world, text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--zero-compile", required=True)
    parser.add_argument("--zero-run", required=True)
    parser.add_argument("--model", choices=["mlp", "gpt2"], required=True)
    parser.add_argument("--optimizer", choices=["sgd", "adam", "adamw"],
                        required=True)
    parser.add_argument("--ranks", default="1,2,3,4")
    parser.add_argument("--stages", default="0,1,2,3")
    parser.add_argument("--mpi-ranks", default="")
    parser.add_argument("--mpi-stages", default="2,3")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--pipeline", default="",
                        help="more zero-compile --pipeline keys")
    parser.add_argument("--model-parallel-size", type=int, default=1,
                        help="GPT-2 in Megatron's layout over this many "
                             "model ranks of each world")
    args = parser.parse_args()
    ranks = [int(n) for n in args.ranks.split(",") if n]
    stages = [int(s) for s in args.stages.split(",") if s]
    mpi_ranks = [int(n) for n in args.mpi_ranks.split(",") if n]
    mpi_stages = [int(s) for s in args.mpi_stages.split(",") if s]

    work = os.environ.get("TEST_TMPDIR", "/tmp/train_cases")
    case = os.path.join(work, "case_%s_%s" % (args.model, args.optimizer))
    run([sys.executable, os.path.join(REFERENCE, "make_case.py"),
         "--model", args.model, "--optimizer", args.optimizer,
         "--steps", str(args.steps), "--out", case])
    with open(os.path.join(case, "reference.json")) as f:
        reference = json.load(f)
    pipeline = reference["optimizer"]["pipeline"] + " " + args.pipeline
    flags = [f for f in reference["compile_flags"]
             if not f.startswith("--world") and f != "mlp.mlir"]
    if args.model_parallel_size != 1:
        flags.append("--model-parallel-size=%d" % args.model_parallel_size)

    def compile_plan(world, stage):
        plan = os.path.join(work, "%s_n%d_s%d.zplan" % (args.model, world,
                                                        stage))
        command = [args.zero_compile, "--world=%d" % world,
                   "--stage=%d" % stage, "--pipeline=" + pipeline,
                   "--report=none", "-o", plan] + flags
        if args.model == "mlp":
            graph = os.path.join(work, "mlp_n%d.mlir" % world)
            with open(os.path.join(case, "mlp.mlir")) as f:
                text = mlir_for_world(f.read(), world)
            with open(graph, "w") as f:
                f.write(text)
            command.append(graph)
        run(command)
        return plan

    def train(plan, world, stage, backend):
        name = "%s_n%d_s%d_%s" % (args.model, world, stage, backend)
        report = os.path.join(work, name + ".json")
        saved = os.path.join(work, name + "_saved")
        command = [args.zero_run, plan, "--ranks", str(world),
                   "--backend", backend, "--steps", str(args.steps),
                   "--init", os.path.join(case, "init"),
                   "--data", os.path.join(case, "data"),
                   "--save", saved, "--report-file", report, "--quiet",
                   "--timeout", "60"]
        _, seconds = run(command)
        with open(report) as f:
            losses = json.load(f)["losses"]
        print("%-28s %5.1fs  loss %.6f -> %.6f" % (name, seconds, losses[0],
                                                   losses[-1]))
        return report, saved

    compare = os.path.join(REFERENCE, "compare.py")
    plans = {}
    for world in ranks:
        baseline = None
        for stage in stages:
            plans[(world, stage)] = compile_plan(world, stage)
            report, saved = train(plans[(world, stage)], world, stage,
                                  "inprocess")
            if baseline is None:
                baseline = (report, saved)
                run([sys.executable, compare, "--case", case, "--report",
                     report, "--saved", saved])
                print("  matches the float64 reference")
            else:
                run([sys.executable, compare, "--bitwise", baseline[0],
                     report, "--saved-a", baseline[1], "--saved-b", saved])
                print("  equals stage %d bit for bit" % stages[0])
    for world in mpi_ranks:
        for stage in mpi_stages:
            plan = plans.get((world, stage)) or compile_plan(world, stage)
            local = train(plan, world, stage, "inprocess")
            remote = train(plan, world, stage, "mpi")
            run([sys.executable, compare, "--close", local[0], remote[0],
                 "--rtol", "1e-6", "--saved-a", local[1], "--saved-b",
                 remote[1], "--case", case])
            print("  MPI equals in-process within 1e-6")
    print("PASS")


if __name__ == "__main__":
    main()
