"""SIGTERM or SIGINT to python3 -m zerosbp.launch stops every rank: exit
143 or 130 with one line, and after 10 s no rank, mpirun or session
directory is left (docs/runtime.md#signals)."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

SCRIPT = textwrap.dedent("""
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


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_every_rank(tmp_path, number):
    script = tmp_path / "sleeper.py"
    script.write_text(SCRIPT)
    marker = str(script)
    job = subprocess.Popen([sys.executable, "-m", "zerosbp.launch", "-n", "2",
                            marker, str(tmp_path)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    started = time.time()
    while time.time() - started < 120 and not all(
            (tmp_path / f"rank{r}").exists() for r in range(2)):
        assert job.poll() is None, job.communicate()
        time.sleep(0.2)
    runs = [words for words in processes(marker).values()
            if words[0] == "mpirun"]
    assert runs, "mpirun not found"
    session = runs[0][runs[0].index("orte_tmpdir_base") + 1]
    assert os.path.isdir(session)

    os.kill(job.pid, number)
    sent = time.time()
    _, stderr = job.communicate(timeout=10)
    assert job.returncode == 128 + number, stderr
    assert stderr.splitlines()[0] == \
        f"zerosbp.launch: interrupted by {signal.Signals(number).name}"
    while processes(marker) and time.time() - sent < 10:
        time.sleep(0.2)
    left = processes(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, left
    assert not os.path.exists(session)
