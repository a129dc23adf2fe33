"""Jobs that a test may stop or kill: each runs in a session of its own with
its output in files, every wait has a timeout, and kill() ends every process
of the session. mpirun's ranks hold its pipes and each sits in a process
group of its own, so neither communicate() nor killpg() alone would do."""

import os
import re
import signal
import subprocess
import time


def session_pids(sid):
    """The processes of session `sid` (zombies too), from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                text = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid pgrp session ...": comm may hold spaces.
        fields = text[text.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            found.append(int(entry))
    return found


def live_session_pids(sid):
    """session_pids less the zombies, which only wait to be reaped."""
    alive = []
    for pid in session_pids(sid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                text = f.read()
        except OSError:
            continue
        if text[text.rfind(")") + 2:].split()[0] != "Z":
            alive.append(pid)
    return alive


class Job:
    """`command` started in a new session; stdout and stderr go to
    `base`.out and `base`.err."""

    def __init__(self, command, base):
        self.out_path = base + ".out"
        self.err_path = base + ".err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=err,
                                            start_new_session=True)
        self.pid = self.process.pid

    def wait(self, timeout):
        """The exit status, or None if the job still runs after `timeout`
        seconds."""
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stdout(self):
        with open(self.out_path, errors="replace") as f:
            return f.read()

    def stderr(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def stepped(self, step):
        """Whether zero-run's progress lines on stdout reached `step`."""
        return re.search(r"^step +%d/" % step, self.stdout(), re.M) is not None

    def left(self):
        """The job's processes still running (the launcher included)."""
        return live_session_pids(self.pid)

    def left_after(self, since, limit):
        """The processes still running `limit` seconds after `since`,
        polled; the launcher is reaped first."""
        while True:
            self.process.poll()
            left = self.left()
            if not left or time.time() - since >= limit:
                return left
            time.sleep(0.2)

    def kill(self):
        """SIGKILL to every process of the session, then reaps the
        launcher; returns how many processes were still there."""
        left = self.left()
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.wait(30)
        return len(left)
