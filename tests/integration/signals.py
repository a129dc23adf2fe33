#!/usr/bin/python3
"""SIGINT and SIGTERM stop a run cleanly, and a stopped rank is named
(docs/runtime.md#signals).

* MPI (zero-run starting mpirun on itself), 3 ranks: SIGTERM or SIGINT to
  zero-run exits 143 or 130 within seconds with one line, and after 10 s no
  rank, no mpirun and no session directory is left; the same with a rank
  stopped by SIGSTOP.
* MPI: a rank stopped by SIGSTOP makes the others' collective time out with
  a message that names it.
* In process: SIGTERM or SIGINT mid-run exits 143 or 130 with one line and
  leaves the --save directory as the previous run wrote it.

Every job runs in a session of its own with its output in files, and is
killed whole if a check fails (jobs.py), so that a stopped rank can hold
neither this script nor the machine.

Usage: signals.py ZERO_COMPILE ZERO_RUN
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

from checks import GPT2, check, finish, rank_pids
from jobs import Job

LIMIT = 10  # Seconds after the signal by which everything has stopped.
START = 120  # Seconds a loaded machine may take to start 3 ranks training.


def mpirun_pids(marker):
    """pid -> command line of the mpirun processes running `marker`."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                words = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if words and words[0] == "mpirun" and marker in words:
            found[int(entry)] = words
    return found


def session_directory(words):
    """The private directory zero-run gave mpirun (orte_tmpdir_base)."""
    for i, word in enumerate(words[:-1]):
        if word == "orte_tmpdir_base":
            return words[i + 1]
    return None


def start_mpi(zero_run, plan, work, name, *extra):
    """Starts a long MPI run and waits until it trains (its second step
    line); returns the job, its ranks and mpirun's session directory (the
    job is None, and killed, if it did not get there)."""
    base = os.path.join(work, re.sub(r"\W+", "_", name))
    job = Job([zero_run, plan, "--ranks", "3", "--backend", "mpi", "--steps",
               "1000000"] + list(extra), base)
    started = time.time()
    pids, runs = {}, {}
    while time.time() - started < START and job.process.poll() is None:
        time.sleep(0.3)
        pids = rank_pids(plan)
        runs = mpirun_pids(plan) or runs
        if len(pids) == 3 and job.stepped(2):
            break
    session = session_directory(next(iter(runs.values()))) if runs else None
    if len(pids) < 3 or not job.stepped(2):
        job.kill()
        print(job.stderr()[-3000:])
        return None, pids, session
    return job, pids, session


def mpi_signal(zero_run, plan, work, number, stop_rank=False):
    name = "MPI %s%s" % (signal.Signals(number).name,
                         " with a stopped rank" if stop_rank else "")
    job, pids, session = start_mpi(zero_run, plan, work, name, "--timeout",
                                   "120")
    check(job is not None, "%s: the 3 ranks train (%s)" % (name, pids))
    if job is None:
        return
    if stop_rank:
        os.kill(pids[1], signal.SIGSTOP)
        time.sleep(0.3)
    os.kill(job.pid, number)
    sent = time.time()
    status = job.wait(LIMIT)
    seconds = time.time() - sent
    lines = job.stderr().strip().splitlines()
    check(status == 128 + number, "%s: exit status %s" % (name, status))
    check(seconds < LIMIT, "%s: stopped in %.1f s" % (name, seconds))
    check(lines[:1] == ["zero-run: interrupted by %s" %
                        signal.Signals(number).name],
          "%s: first line (%s)" % (name, lines[:1]))
    left = job.left_after(sent, LIMIT)
    check(not left, "%s: no rank or mpirun left after %d s (%s)" % (
        name, LIMIT, left))
    job.kill()
    check(session is not None and not os.path.exists(session),
          "%s: the session directory %s is removed" % (name, session))


def stopped_rank_is_named(zero_run, plan, work):
    name = "MPI SIGSTOP"
    job, pids, _ = start_mpi(zero_run, plan, work, name, "--timeout", "2")
    check(job is not None, "%s: the 3 ranks train (%s)" % (name, pids))
    if job is None:
        return
    os.kill(pids[1], signal.SIGSTOP)
    stopped = time.time()
    status = job.wait(60)
    stderr = job.stderr()
    # mpirun's own MPI_ABORT banner may come before or after the ranks'
    # lines; the first line a rank printed is the one checked.
    lines = [line for line in stderr.strip().splitlines()
             if line.startswith("zero-run: ")]
    # Ranks 0 and 2 both time out; either may print first. The collective
    # is whichever rank 1 stopped before.
    pattern = (r"zero-run: rank [02] failed: timed out after 2 s waiting for "
               r"rank 1 in ((all_reduce|reduce_scatter|all_gather) on group "
               r"\[0, 1, 2\]|the gather of step records)")
    check(status == 1, "%s: exit status %s" % (name, status))
    check(bool(lines) and re.fullmatch(pattern, lines[0]) is not None,
          "%s: the first zero-run line names rank 1 (%s)" % (name,
                                                               lines[:1]))
    left = job.left_after(stopped + 5, LIMIT)
    check(not left, "%s: no rank left (%s)" % (name, left))
    job.kill()
    if status != 1:
        print(stderr[-3000:])


def snapshot(directory):
    return {name: open(os.path.join(directory, name), "rb").read()
            for name in sorted(os.listdir(directory))}


def in_process_signal(zero_run, plan, work, number):
    name = "in process %s" % signal.Signals(number).name
    base = os.path.join(work, "inprocess-%d" % number)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    saved = os.path.join(base, "params")
    subprocess.run([zero_run, plan, "--steps", "1", "--quiet", "--save",
                    saved], check=True, timeout=300)
    before = snapshot(saved)
    job = Job([zero_run, plan, "--steps", "1000000", "--quiet", "--save",
               saved, "--report-file", os.path.join(base, "report.json")],
              os.path.join(work, "inprocess-%d" % number))
    time.sleep(2.0)
    os.kill(job.pid, number)
    sent = time.time()
    status = job.wait(LIMIT)
    seconds = time.time() - sent
    job.kill()
    stderr = job.stderr()
    check(status == 128 + number, "%s: exit status %s" % (name, status))
    check(seconds < LIMIT, "%s: stopped in %.1f s" % (name, seconds))
    check(stderr == "zero-run: interrupted by %s\n" %
          signal.Signals(number).name, "%s: one line (%r)" % (name, stderr))
    check(sorted(os.listdir(base)) == ["params"],
          "%s: no report, lock or partial directory (%s)" % (
              name, sorted(os.listdir(base))))
    check(snapshot(saved) == before,
          "%s: --save holds the previous run's files" % name)


def main():
    zero_compile, zero_run = sys.argv[1], sys.argv[2]
    work = os.environ.get("TEST_TMPDIR", "/tmp/signals")
    os.makedirs(work, exist_ok=True)
    plans = {}
    for world in [2, 3]:
        plans[world] = os.path.join(work, "gpt2_n%d.zplan" % world)
        subprocess.run([zero_compile] + GPT2 + [
            "--world=%d" % world, "--stage=3",
            "--pipeline=stage3-param-persistence-threshold=0",
            "--report=none", "-o", plans[world]], check=True, timeout=300)

    mpi_signal(zero_run, plans[3], work, signal.SIGTERM)
    mpi_signal(zero_run, plans[3], work, signal.SIGINT)
    mpi_signal(zero_run, plans[3], work, signal.SIGTERM, stop_rank=True)
    stopped_rank_is_named(zero_run, plans[3], work)
    in_process_signal(zero_run, plans[2], work, signal.SIGTERM)
    in_process_signal(zero_run, plans[2], work, signal.SIGINT)
    finish()


if __name__ == "__main__":
    main()
