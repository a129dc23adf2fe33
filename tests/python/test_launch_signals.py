"""python3 -m zerosbp.launch and its ranks (docs/runtime.md#signals):

* SIGTERM or SIGINT stops every rank: exit 143 or 130 with one line, and
  after 10 s no rank, mpirun or session directory is left;
* SIGKILL of the launcher leaves no rank or mpirun after 10 s;
* a rank stopped before its graph's groups are made is named by the others
  within the timeout.

Every job runs in a session of its own, with its output in files, and is
killed whole at the end (tests/integration/jobs.py)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

sys.path.insert(0, os.path.join("tests", "integration"))
from jobs import Job  # noqa: E402

LIMIT = 10  # Seconds by which every process of a stopped job is gone.
START = 120  # Seconds a loaded machine may take to start the ranks.

SLEEPER = textwrap.dedent("""
    import sys, time
    import zerosbp as zs
    open(sys.argv[1] + "/rank%d" % zs.rank(), "w").close()
    time.sleep(600)
""")


def processes(marker):
    """pid -> argv of the processes whose command line holds `marker`."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                words = file.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any(marker in word for word in words):
            found[int(entry)] = words
    return found


def start_sleepers(tmp_path):
    """Launches 2 ranks that sleep once started; returns the job, the marker
    in their command lines and mpirun's session directory."""
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    marker = str(script)
    job = Job([sys.executable, "-m", "zerosbp.launch", "-n", "2", marker,
               str(tmp_path)], str(tmp_path / "launch"))
    started = time.time()
    while time.time() - started < START and not all(
            (tmp_path / f"rank{r}").exists() for r in range(2)):
        assert job.process.poll() is None, job.stderr()
        time.sleep(0.2)
    runs = [words for words in processes(marker).values()
            if words[0] == "mpirun"]
    assert runs, "mpirun not found"
    session = runs[0][runs[0].index("orte_tmpdir_base") + 1]
    assert os.path.isdir(session)
    return job, marker, session


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_every_rank(tmp_path, number):
    job, marker, session = start_sleepers(tmp_path)
    try:
        os.kill(job.pid, number)
        sent = time.time()
        assert job.wait(LIMIT) == 128 + number, job.stderr()
        assert job.stderr().splitlines()[0] == \
            f"zerosbp.launch: interrupted by {signal.Signals(number).name}"
        assert not job.left_after(sent, LIMIT)
        assert not processes(marker)
        assert not os.path.exists(session)
    finally:
        job.kill()


def test_sigkill_of_the_launcher_leaves_no_rank(tmp_path):
    job, marker, session = start_sleepers(tmp_path)
    try:
        os.kill(job.pid, signal.SIGKILL)
        killed = time.time()
        assert job.wait(LIMIT) == -signal.SIGKILL
        assert not job.left_after(killed, LIMIT)
        assert not processes(marker)
        # mpirun empties its directory; only the launcher would remove it.
        assert not os.path.exists(session) or not os.listdir(session)
    finally:
        job.kill()
        if os.path.isdir(session):
            os.rmdir(session)


STOPS_BEFORE_ITS_GROUPS = textwrap.dedent("""
    import os, signal, sys
    from zerosbp import _zerosbp
    rank, _ = _zerosbp.mpi_rank_and_size()
    if rank == 1:
        os.kill(os.getpid(), signal.SIGSTOP)
    _zerosbp.Session(sys.argv[1], "mpi", timeout=2.0)
""")


def test_a_rank_stopped_in_start_up_is_named(tmp_path):
    plan = str(tmp_path / "tiny.zplan")
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--preset=tiny",
                    "--world=2", "--stage=2", "--report=none", "-o", plan],
                   check=True, timeout=300)
    script = tmp_path / "stops.py"
    script.write_text(STOPS_BEFORE_ITS_GROUPS)
    job = Job([sys.executable, "-m", "zerosbp.launch", "-n", "2",
               str(script), plan], str(tmp_path / "launch"))
    try:
        # MPI_Init, then 2 s in MPI_Comm_split and a few for the roll call.
        status = job.wait(START)
        lines = [line for line in job.stderr().splitlines()
                 if line.startswith("zero-run: ")]
        assert status == 1, job.stderr()
        assert lines[:1] == [
            "zero-run: rank 0 failed: timed out after 2 s waiting for rank "
            "1 in MPI_Comm_split making group [0, 1]"], job.stderr()
        assert not job.left_after(time.time(), LIMIT)
    finally:
        job.kill()
