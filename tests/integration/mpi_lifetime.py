#!/usr/bin/python3
"""An MPI job neither hangs in start-up nor outlives its launcher
(docs/runtime.md#signals).

* zero-run --backend mpi, 3 ranks, --timeout 2: rank 1 stopped by SIGSTOP
  as soon as it runs, or half a second later, is named by the others
  whichever wait of start-up (MPI_Init, the communicators) or of the first
  steps it holds: exit status 1, and the first line a rank prints is
  `zero-run: rank R failed: timed out after 2 s waiting for rank 1 in ...`.
* The launcher killed with SIGKILL while the ranks train, with and without
  a stopped rank: mpirun and every rank are gone within 10 s.

Usage: mpi_lifetime.py ZERO_COMPILE ZERO_RUN
"""

import os
import re
import signal
import subprocess
import sys
import time

from checks import GPT2, check, finish, rank_pids
from jobs import Job

LIMIT = 10  # Seconds by which every process of a stopped job is gone.
NAMED = 30  # Seconds by which a stopped rank is named (2 s, with slack).
START = 120  # Seconds a loaded machine may take to start 3 ranks.

# Wherever rank 1 stopped, ranks 0 and 2 wait for it in one of these.
WAITS = (r"MPI_Init|MPI_Comm_dup of the world|"
         r"MPI_Comm_split making group \[0, 1, 2\]|"
         r"(all_reduce|reduce_scatter|all_gather) on group \[0, 1, 2\]|"
         r"the gather of step records")


def launch(zero_run, plan, work, name, *extra):
    return Job([zero_run, plan, "--ranks", "3", "--backend", "mpi",
                "--steps", "1000000"] + list(extra),
               os.path.join(work, re.sub(r"\W+", "_", name)))


def stopped_at_start(zero_run, plan, work, delay):
    name = "rank 1 stopped %.1f s after it starts" % delay
    job = launch(zero_run, plan, work, name, "--quiet", "--timeout", "2")
    started = time.time()
    pids = {}
    while (time.time() - started < START and 1 not in pids and
           job.process.poll() is None):
        pids = rank_pids(plan)
    check(1 in pids, "%s: rank 1 runs" % name)
    if 1 not in pids:
        job.kill()
        return
    time.sleep(delay)
    os.kill(pids[1], signal.SIGSTOP)
    stopped = time.time()
    status = job.wait(NAMED)
    seconds = time.time() - stopped
    stderr = job.stderr()
    lines = [line for line in stderr.splitlines()
             if line.startswith("zero-run: ")]
    pattern = (r"zero-run: rank [02] failed: timed out after 2 s waiting "
               r"for rank 1 in (%s)" % WAITS)
    check(status == 1, "%s: exit status %s" % (name, status))
    check(seconds < NAMED, "%s: named in %.1f s" % (name, seconds))
    check(bool(lines) and re.fullmatch(pattern, lines[0]) is not None,
          "%s: the first zero-run line names rank 1 (%s)" % (name, lines[:1]))
    left = job.left_after(stopped, NAMED + LIMIT)
    check(not left, "%s: no rank or mpirun left (%s)" % (name, left))
    job.kill()
    if status != 1:
        print(stderr[-3000:])


def launcher_killed(zero_run, plan, work, stop_rank):
    name = "launcher SIGKILL%s" % (" with a stopped rank" if stop_rank else "")
    job = launch(zero_run, plan, work, name)
    started = time.time()
    pids = {}
    while time.time() - started < START and job.process.poll() is None:
        time.sleep(0.3)
        pids = rank_pids(plan)
        if len(pids) == 3 and job.stepped(2):
            break
    training = len(pids) == 3 and job.stepped(2)
    check(training, "%s: the 3 ranks train (%s)" % (name, pids))
    if not training:
        job.kill()
        return
    mpirun = [pid for pid in job.left() if pid not in pids.values() and
              pid != job.pid]
    directory = None
    for pid in mpirun:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                words = f.read().decode(errors="replace").split("\0")
            directory = words[words.index("orte_tmpdir_base") + 1]
        except (OSError, ValueError, IndexError):
            pass
    if stop_rank:
        os.kill(pids[1], signal.SIGSTOP)
    os.kill(job.pid, signal.SIGKILL)
    killed = time.time()
    status = job.wait(LIMIT)
    check(status == -signal.SIGKILL, "%s: the launcher died (%s)" % (name,
                                                                    status))
    left = job.left_after(killed, LIMIT)
    check(not left and not rank_pids(plan),
          "%s: no rank or mpirun left after %d s (%s)" % (name, LIMIT, left))
    job.kill()
    # Only the launcher removes mpirun's private directory; mpirun empties
    # it.
    if directory and os.path.isdir(directory):
        check(not os.listdir(directory),
              "%s: mpirun emptied %s" % (name, directory))
        os.rmdir(directory)


def main():
    zero_compile, zero_run = sys.argv[1], sys.argv[2]
    work = os.environ.get("TEST_TMPDIR", "/tmp/mpi_lifetime")
    os.makedirs(work, exist_ok=True)
    plan = os.path.join(work, "gpt2_n3.zplan")
    subprocess.run([zero_compile] + GPT2 + [
        "--world=3", "--stage=2", "--report=none", "-o", plan], check=True,
        timeout=300)
    for delay in [0.0, 0.5]:
        stopped_at_start(zero_run, plan, work, delay)
    launcher_killed(zero_run, plan, work, stop_rank=False)
    launcher_killed(zero_run, plan, work, stop_rank=True)
    finish()


if __name__ == "__main__":
    main()
