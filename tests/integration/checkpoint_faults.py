#!/usr/bin/python3
"""Checkpoints survive what happens to long runs (docs/checkpoint.md).

* SIGKILL at every point of a save (ZEROSBP_CHECKPOINT_KILL_AT), in process
  and over MPI, and at random moments of a run that saves every step: the
  checkpoint `latest` names always checks and resumes to the uninterrupted
  run's losses bit for bit, and the next save clears what the killed one
  left.
* A full disk (a small tmpfs in a private mount namespace where the system
  allows one, else a file-size limit): the save fails with one line, leaves
  no partial checkpoint, and `latest` still names the previous one.
* A second writer is refused with one line while the lock is held.
* Bad checkpoints (a missing, truncated or corrupt rank file, a manifest of
  another model, optimizer or precision, a newer version, a bad `latest`):
  one line naming the file and the field, exit status 1, nothing trained.

Usage: checkpoint_faults.py ZERO_COMPILE ZERO_RUN ZERO_CHECKPOINT
"""

import fcntl
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

from checks import GPT2, check, finish

PIPELINE = "--pipeline=stage3-param-persistence-threshold=0"
POINTS = ["begin", "rank-file", "files-written", "manifest", "renamed",
          "latest", "prune"]

class Case:
    def __init__(self, argv, work):
        self.zero_compile, self.zero_run, self.zero_checkpoint = argv
        self.work = work
        self.plans = {}

    def plan(self, world=2, stage=3, extra=""):
        key = (world, stage, extra)
        if key not in self.plans:
            path = os.path.join(self.work, "plan%d.zplan" % len(self.plans))
            subprocess.run([self.zero_compile] + GPT2 + [
                "--world=%d" % world, "--stage=%d" % stage,
                PIPELINE + " " + extra, "--report=none", "-o", path],
                check=True)
            self.plans[key] = path
        return self.plans[key]

    def run(self, *args, env=None, preexec_fn=None, timeout=120):
        report = os.path.join(self.work, "report.json")
        if os.path.exists(report):
            os.remove(report)
        result = subprocess.run(
            [self.zero_run] + list(args) + ["--quiet", "--report-file",
                                            report],
            capture_output=True, text=True, env=env, preexec_fn=preexec_fn,
            timeout=timeout)
        losses = None
        if result.returncode == 0:
            with open(report) as file:
                losses = json.load(file)["losses"]
        return result, losses


def latest_step(directory):
    with open(os.path.join(directory, "latest")) as file:
        return int(file.read().strip()[len("step-"):])


def check_recovers(case, name, directory, reference, world=2, backend=None):
    """The checkpoint `latest` names checks, resumes bit for bit, and a new
    save into the directory clears what the killed save left."""
    extra = ["--backend", backend, "--ranks", str(world)] if backend else []
    inspect = subprocess.run([case.zero_checkpoint, "inspect", directory],
                             capture_output=True, text=True)
    check(inspect.returncode == 0, "%s: latest checks (%s)" % (
        name, inspect.stderr.strip()))
    step = latest_step(directory)
    result, losses = case.run(case.plan(world), "--steps", "2", "--resume",
                              directory, "--checkpoint-dir", directory,
                              *extra)
    check(losses == reference[step:step + 2],
          "%s: resumes at step %d with the uninterrupted losses (%s)" % (
              name, step, result.stderr.strip()[-300:]))
    left = [e for e in os.listdir(directory) if e.startswith(".")]
    check(not left, "%s: the next save removed %s" % (name, left))


def kill_points(case, reference):
    for point in POINTS:
        for backend in [None, "mpi"]:
            name = "SIGKILL at %s%s" % (point, " (MPI)" if backend else "")
            directory = os.path.join(case.work, "kill")
            shutil.rmtree(directory, ignore_errors=True)
            env = dict(os.environ)
            # The second save (step 4): the first one, of step 2, is whole.
            # rank-file is reached once per rank and save in process; the
            # first save has nothing to prune.
            count = 3 if point == "rank-file" and not backend else 2
            count = 1 if point == "prune" else count
            env["ZEROSBP_CHECKPOINT_KILL_AT"] = "%s:%d" % (point, count)
            extra = ["--backend", backend, "--ranks", "2"] if backend else []
            result, _ = case.run(case.plan(), "--steps", "6",
                                 "--checkpoint-dir", directory,
                                 "--checkpoint-every", "2", "--keep", "1",
                                 *extra, env=env)
            check(result.returncode != 0, "%s: the run died (%d)" % (
                name, result.returncode))
            if point == "prune":
                check(latest_step(directory) == 4,
                      "%s: latest is the new checkpoint" % name)
            elif point in ["begin", "rank-file", "files-written", "manifest",
                           "renamed"]:
                check(latest_step(directory) == 2,
                      "%s: latest is still the previous checkpoint" % name)
            check_recovers(case, name, directory, reference, world=2,
                           backend=backend)


def random_kills(case, reference):
    """SIGKILL from outside at random moments of a run saving every step."""
    rng = random.Random(7)
    plan = case.plan()
    for attempt in range(10):
        name = "random SIGKILL %d" % attempt
        directory = os.path.join(case.work, "random")
        shutil.rmtree(directory, ignore_errors=True)
        job = subprocess.Popen([case.zero_run, plan, "--steps", "6",
                                "--quiet", "--checkpoint-dir", directory,
                                "--checkpoint-every", "1", "--keep", "2"],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        # Wait for the first checkpoint, then kill within the next steps.
        started = time.time()
        while not os.path.exists(os.path.join(directory, "latest")) and \
                time.time() - started < 30 and job.poll() is None:
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.05))
        job.send_signal(signal.SIGKILL)
        job.wait()
        check(os.path.exists(os.path.join(directory, "latest")),
              "%s: a checkpoint exists" % name)
        if os.path.exists(os.path.join(directory, "latest")):
            check_recovers(case, name, directory, reference)


def disk_full(case, reference):
    """The save after a complete one runs out of space."""
    plan = case.plan()
    base = os.path.join(case.work, "full")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    # A checkpoint of this model takes about this much; the tmpfs holds one
    # and a half.
    probe = os.path.join(base, "probe")
    case.run(plan, "--steps", "1", "--checkpoint-dir", probe)
    size = sum(os.path.getsize(os.path.join(root, f))
               for root, _, files in os.walk(probe) for f in files)
    disk = os.path.join(base, "disk")
    out = os.path.join(base, "out")
    os.makedirs(disk)
    os.makedirs(out)
    run = "%s %s --steps 2 --quiet" % (case.zero_run, plan)
    script = "\n".join([
        "set -u",
        "mount -t tmpfs -o size=%dk tmpfs %s || exit 77" % (
            size * 3 // 2 // 1024, disk),
        "%s --checkpoint-dir %s/ck" % (run, disk),
        "echo first=$?",
        "%s --resume %s/ck --checkpoint-dir %s/ck 2>%s/stderr" % (
            run, disk, disk, out),
        "echo second=$?",
        "ls -a %s/ck > %s/listing" % (disk, out),
        "cat %s/ck/latest > %s/latest" % (disk, out),
        "%s --resume %s/ck --report=json > %s/resumed" % (run, disk, out),
        ""])
    namespace = subprocess.run(["unshare", "--mount", "--map-root-user",
                                "sh", "-c", script],
                               capture_output=True, text=True)
    if namespace.returncode == 0 and "second=" in namespace.stdout:
        how = "tmpfs"
        with open(os.path.join(out, "stderr")) as file:
            stderr = file.read()
        with open(os.path.join(out, "listing")) as file:
            listing = file.read().split()
        with open(os.path.join(out, "latest")) as file:
            latest = file.read().strip()
        with open(os.path.join(out, "resumed")) as file:
            resumed = json.load(file)["losses"]
        check("first=0" in namespace.stdout, "disk full (tmpfs): the first "
              "save fits")
        check("second=1" in namespace.stdout, "disk full (tmpfs): exit 1")
        needle = "No space left on device"
    else:
        # No mount namespace here: a file-size limit fails the write alike.
        how = "file-size limit"
        directory = os.path.join(base, "ck")
        case.run(plan, "--steps", "2", "--checkpoint-dir", directory)
        largest = max(os.path.getsize(os.path.join(root, f))
                      for root, _, files in os.walk(directory) for f in files)

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE,
                               (largest // 2, largest // 2))
        result, _ = case.run(plan, "--steps", "2", "--resume", directory,
                             "--checkpoint-dir", directory, preexec_fn=limit)
        check(result.returncode == 1, "disk full (%s): exit 1" % how)
        stderr = result.stderr
        listing = os.listdir(directory)
        with open(os.path.join(directory, "latest")) as file:
            latest = file.read().strip()
        _, resumed = case.run(plan, "--steps", "2", "--resume", directory)
        needle = "File too large"
    lines = stderr.strip().splitlines()
    check(len(lines) == 1 and "cannot write" in stderr and needle in stderr,
          "disk full (%s): one line naming the file and the reason (%s)" % (
              how, stderr.strip()))
    check(not [e for e in listing if e.startswith(".partial")] and
          "step-00000004" not in listing,
          "disk full (%s): no partial checkpoint left (%s)" % (how, listing))
    check(latest == "step-00000002", "disk full (%s): latest is the "
          "previous checkpoint" % how)
    check(resumed == reference[2:4], "disk full (%s): the previous "
          "checkpoint resumes" % how)


def second_writer(case):
    directory = os.path.join(case.work, "locked")
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    with open(os.path.join(directory, "lock"), "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.write("%d\n" % os.getpid())
        holder.flush()
        result, _ = case.run(case.plan(), "--steps", "2", "--checkpoint-dir",
                             directory)
    message = result.stderr.strip()
    check(result.returncode == 1 and message ==
          "zero-run: %s is locked by another writer (pid %d)" % (
              directory, os.getpid()),
          "second writer: refused in one line (%s)" % message)
    result, _ = case.run(case.plan(), "--steps", "2", "--checkpoint-dir",
                         directory)
    check(result.returncode == 0, "second writer: saves once the lock is "
          "released")


def expect_refused(case, name, plan, directory, *needles, world=2):
    result, _ = case.run(plan, "--ranks", str(world), "--steps", "1",
                         "--resume", directory)
    lines = result.stderr.strip().splitlines()
    check(result.returncode == 1, "%s: exit 1 (%d)" % (name,
                                                        result.returncode))
    check(len(lines) == 1 and lines[0].startswith("zero-run: ") and
          all(n in lines[0] for n in needles),
          "%s: one line naming %s (%s)" % (name, needles, lines))
    check(not result.stdout.strip(), "%s: trains nothing" % name)


def bad_checkpoints(case):
    plan = case.plan()
    base = os.path.join(case.work, "bad")
    shutil.rmtree(base, ignore_errors=True)
    good = os.path.join(base, "good")
    case.run(plan, "--steps", "2", "--checkpoint-dir", good)
    step = os.path.join(good, "step-00000002")
    rank1 = "rank-00001-of-00002.safetensors"

    def copy(name):
        target = os.path.join(base, name)
        shutil.copytree(good, target)
        return target, os.path.join(target, "step-00000002")

    directory, inner = copy("missing")
    os.remove(os.path.join(inner, rank1))
    expect_refused(case, "missing rank file", plan, directory, rank1,
                   "No such file")

    directory, inner = copy("truncated")
    with open(os.path.join(inner, rank1), "r+b") as file:
        file.truncate(os.path.getsize(os.path.join(step, rank1)) - 100)
    expect_refused(case, "truncated shard", plan, directory, rank1,
                   "(truncated)")

    directory, inner = copy("corrupt")
    with open(os.path.join(inner, rank1), "r+b") as file:
        file.seek(-8, os.SEEK_END)
        byte = file.read(1)
        file.seek(-8, os.SEEK_END)
        file.write(bytes([byte[0] ^ 1]))
    expect_refused(case, "corrupt shard", plan, directory, rank1, "CRC-32",
                   "(corrupt)")

    expect_refused(case, "another model", compile_other(case, base), good, "manifest.json", "tensor 'wte.weight'",
                   "shape (64, 32) in the checkpoint but (64, 48)")
    expect_refused(case, "another optimizer",
                   case.plan(extra="optimizer=sgd"), good, "manifest.json",
                   "config: optimizer.type is 'Adam' in the checkpoint but "
                   "'SGD' in the plan")
    expect_refused(case, "another precision",
                   case.plan(extra="precision=bf16"), good, "manifest.json",
                   "tensor 'wte.weight': dtype f32 in the checkpoint but "
                   "bf16 in the plan")

    directory, inner = copy("newer")
    path = os.path.join(inner, "manifest.json")
    with open(path) as file:
        manifest = json.load(file)
    manifest["version"] = 2
    with open(path, "w") as file:
        json.dump(manifest, file)
    expect_refused(case, "newer format", plan, directory, "manifest.json",
                   "version: format version 2 is newer than this build "
                   "reads (1)")

    directory, inner = copy("truncated-manifest")
    path = os.path.join(inner, "manifest.json")
    with open(path, "r+b") as file:
        file.truncate(os.path.getsize(path) // 2)
    expect_refused(case, "truncated manifest", plan, directory,
                   "manifest.json", "not JSON")

    directory, inner = copy("bad-crc-field")
    path = os.path.join(inner, "manifest.json")
    with open(path) as file:
        manifest = json.load(file)
    manifest["files"][1]["crc32"] = "xyz"
    with open(path, "w") as file:
        json.dump(manifest, file)
    expect_refused(case, "malformed field", plan, directory, "manifest.json",
                   "files[1].crc32: expected 8 lower-case hex digits")

    directory, _ = copy("dangling-latest")
    with open(os.path.join(directory, "latest"), "w") as file:
        file.write("step-00000099\n")
    expect_refused(case, "dangling latest", plan, directory, "latest",
                   "names step-00000099, which has no manifest.json")

    expect_refused(case, "no checkpoint", plan, base, base,
                   "not a checkpoint")

    corrupt = os.path.join(base, "corrupt")
    inspect = subprocess.run([case.zero_checkpoint, "inspect", corrupt],
                             capture_output=True, text=True)
    check(inspect.returncode == 1 and "BAD: " in inspect.stdout and
          "1 of 2 files do not check" in inspect.stderr,
          "inspect: a corrupt file is named, exit 1")
    convert = subprocess.run([case.zero_checkpoint, "to-fp32", corrupt,
                              os.path.join(base, "out.safetensors")],
                             capture_output=True, text=True)
    check(convert.returncode == 1 and "(corrupt)" in convert.stderr and
          not os.path.exists(os.path.join(base, "out.safetensors")),
          "to-fp32: a corrupt checkpoint writes nothing")


def compile_other(case, base):
    path = os.path.join(base, "other.zplan")
    subprocess.run([case.zero_compile] + [
        "--num-layers=2", "--hidden-size=48", "--num-attention-heads=4",
        "--seq-length=16", "--vocab-size=64", "--batch-size=12",
        "--world=2", "--stage=3", PIPELINE, "--report=none", "-o", path],
        check=True)
    return path


def main():
    case = Case(sys.argv[1:4],
                os.environ.get("TEST_TMPDIR", "/tmp/checkpoint_faults"))
    os.makedirs(case.work, exist_ok=True)
    _, reference = case.run(case.plan(), "--steps", "8")
    kill_points(case, reference)
    random_kills(case, reference)
    disk_full(case, reference)
    second_writer(case)
    bad_checkpoints(case)
    finish()


if __name__ == "__main__":
    main()
