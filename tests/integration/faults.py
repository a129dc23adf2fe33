#!/usr/bin/python3
"""A failing rank stops every rank, with an error that names it, in bounded
time, and bad command lines and data get one clear line.

* in-process, 4 ranks: rank 1's share of the labels holds an id past the
  vocabulary in step 3, so rank 1's kernel throws mid-step;
* MPI, 3 ranks: the same bad label on rank 1;
* MPI, 3 ranks: rank 1 is killed with SIGKILL mid-run;
* bad input: rank count, data shape and content, a missing parameter file.

Usage: faults.py ZERO_COMPILE ZERO_RUN
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np

from checks import rank_pids
from jobs import Job

GPT2 = ["--num-layers=2", "--hidden-size=32", "--num-attention-heads=4",
        "--seq-length=16", "--vocab-size=64", "--batch-size=12"]
LIMIT = 30  # Seconds a failure may take to stop every rank.

failures = []


def check(condition, message):
    print(("ok:   " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


def expect_failure(name, command, *needles, limit=LIMIT):
    started = time.time()
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=limit + 30)
    except subprocess.TimeoutExpired:
        check(False, "%s: still running after %d s" % (name, limit + 30))
        return
    seconds = time.time() - started
    output = result.stdout + result.stderr
    check(result.returncode != 0, "%s: exit status %d" % (name,
                                                          result.returncode))
    check(seconds < limit, "%s: stopped in %.1f s" % (name, seconds))
    for needle in needles:
        check(needle in output, "%s: output names %r" % (name, needle))
    if failures:
        print(output[-3000:])


def data_with_bad_label(directory, world, rank, step):
    """GPT-2 inputs for 8 steps; the labels of `rank` in `step` hold 999."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 64, size=(8, 12, 16), dtype=np.int64)
    labels = rng.integers(0, 64, size=(8, 12, 16), dtype=np.int64)
    rows = 12 // world
    labels[step, rank * rows:(rank + 1) * rows, 5] = 999
    np.save(os.path.join(directory, "tokens.npy"), tokens)
    np.save(os.path.join(directory, "labels.npy"), labels)


def main():
    zero_compile, zero_run = sys.argv[1], sys.argv[2]
    work = os.environ.get("TEST_TMPDIR", "/tmp/faults")
    os.makedirs(work, exist_ok=True)
    plans = {}
    for world in [3, 4]:
        plans[world] = os.path.join(work, "gpt2_n%d.zplan" % world)
        subprocess.run([zero_compile] + GPT2 + [
            "--world=%d" % world, "--stage=3", "--pipeline=overlap-comm=true "
            "stage3-param-persistence-threshold=0", "--report=none", "-o",
            plans[world]], check=True)

    # A rank that throws, in-process.
    bad4 = os.path.join(work, "bad4")
    data_with_bad_label(bad4, 4, rank=1, step=2)
    expect_failure("in-process rank throws",
                   [zero_run, plans[4], "--ranks", "4", "--steps", "8",
                    "--data", bad4, "--timeout", "120"],
                   "zero-run: rank 1: ", "label 999")

    # A rank that throws, MPI.
    bad3 = os.path.join(work, "bad3")
    data_with_bad_label(bad3, 3, rank=1, step=2)
    expect_failure("MPI rank throws",
                   [zero_run, plans[3], "--ranks", "3", "--backend", "mpi",
                    "--steps", "8", "--data", bad3, "--timeout", "120"],
                   "rank 1 failed", "label 999")

    # An MPI rank killed mid-run.
    marker = plans[3]
    started = time.time()
    # In a session of its own, output in files: the ranks hold mpirun's
    # pipes, and a kill must reach every one of them (jobs.py).
    job = Job([zero_run, marker, "--ranks", "3", "--backend", "mpi",
               "--steps", "1000000", "--quiet", "--timeout", "120"],
              os.path.join(work, "mpi_kill"))
    pids = {}
    while time.time() - started < 20 and len(pids) < 3:
        time.sleep(0.5)
        pids = rank_pids(marker)
    check(len(pids) == 3, "MPI kill: found the 3 ranks (%s)" % pids)
    if len(pids) == 3:
        time.sleep(1.0)  # Well into training.
        os.kill(pids[1], signal.SIGKILL)
        killed = time.time()
        status = job.wait(LIMIT + 30)
        seconds = time.time() - killed
        if status is None:
            job.kill()
        output = job.stdout() + job.stderr()
        check(status is not None and status != 0,
              "MPI kill: exit status %s" % status)
        check(seconds < LIMIT, "MPI kill: stopped in %.1f s" % seconds)
        check("rank 1" in output, "MPI kill: output names rank 1")
        left = job.left_after(killed, seconds + 10)
        check(not left, "MPI kill: no rank left running (%s)" % left)
        if failures:
            print(output[-3000:])
    job.kill()

    # Bad command lines and data: one line, status 1.
    expect_failure("rank count", [zero_run, plans[4], "--ranks", "3",
                                  "--steps", "1"],
                   "the plan was compiled for 4 ranks, not 3")
    short = os.path.join(work, "short")
    os.makedirs(short, exist_ok=True)
    np.save(os.path.join(short, "tokens.npy"),
            np.zeros((2, 12, 16), dtype=np.int64))
    np.save(os.path.join(short, "labels.npy"),
            np.zeros((2, 12, 15), dtype=np.int64))
    expect_failure("data shape", [zero_run, plans[4], "--ranks", "4",
                                  "--steps", "2", "--data", short],
                   "labels.npy: shape (2, 12, 15), expected (steps, ...) = "
                   "(2, 12, 16)")
    two = os.path.join(work, "two_steps")
    os.makedirs(two, exist_ok=True)
    for name in ["tokens", "labels"]:
        np.save(os.path.join(two, name + ".npy"),
                np.zeros((2, 12, 16), dtype=np.int64))
    expect_failure("data steps", [zero_run, plans[4], "--ranks", "4",
                                  "--steps", "3", "--data", two],
                   "tokens.npy: holds 2 steps, the run needs 3")
    np.save(os.path.join(two, "labels.npy"),
            np.zeros((2, 12, 16), dtype=np.float32))
    expect_failure("data type", [zero_run, plans[4], "--ranks", "4",
                                 "--steps", "2", "--data", two],
                   "labels.npy: integer data expected for input 'labels'")
    empty = os.path.join(work, "empty_init")
    os.makedirs(empty, exist_ok=True)
    expect_failure("missing parameter", [zero_run, plans[4], "--ranks", "4",
                                         "--steps", "1", "--init", empty],
                   "empty_init/wte.weight.npy: cannot open")
    expect_failure("no steps", [zero_run, plans[4], "--ranks", "4"],
                   "zero-run: --steps is required")
    with open(os.path.join(work, "truncated.zplan"), "w") as f:
        with open(plans[4]) as source:
            f.write(source.read()[:5000])
    expect_failure("truncated plan",
                   [zero_run, os.path.join(work, "truncated.zplan"),
                    "--ranks", "4", "--steps", "1"],
                   "truncated.zplan: not valid JSON")

    if failures:
        print("%d checks failed" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
