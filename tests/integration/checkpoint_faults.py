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
  another model, optimizer or precision, a newer version, a bad `latest`,
  a device in place of a file): one line naming the file and the field,
  exit status 1, nothing trained.
* Manifest edits (the step with the data position, the seed, random bytes,
  a cut, a JSON tool's rewrite): refused by the manifest's checksum in one
  line; a version 1 manifest, which has none, loads with one warning.
* Readers and a writer at once: a run saving every step with --keep 1
  while other runs resume from it and inspect it in a loop; every read
  succeeds and resumes to the uninterrupted losses.
* SIGTERM to MPI runs saving every step: a partial directory left behind
  is named by inspect, and removed, in one line, by the next run saving
  there.

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
import threading
import time
import zlib

from checks import GPT2, check, finish

PIPELINE = "--pipeline=stage3-param-persistence-threshold=0"
POINTS = ["begin", "rank-file", "files-written", "manifest", "renamed",
          "latest", "prune"]

class Case:
    def __init__(self, argv, work):
        self.zero_compile, self.zero_run, self.zero_checkpoint = argv
        self.work = work
        self.plans = {}
        self.uninterrupted = []

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

    def losses(self, steps):
        """The losses of an uninterrupted run of the default plan, at least
        `steps` of them."""
        if len(self.uninterrupted) < steps:
            _, self.uninterrupted = self.run(self.plan(), "--steps",
                                             str(steps), timeout=600)
        return self.uninterrupted


def latest_step(directory):
    with open(os.path.join(directory, "latest")) as file:
        return int(file.read().strip()[len("step-"):])


CHECKSUM_LINE = b' "checksum": "crc32:'


def checksum_refusal(path):
    """The line that refuses the manifest at `path` for its checksum."""
    with open(path, "rb") as file:
        _, line, rest = file.read().split(b"\n", 2)
    return ("%s: checksum: the manifest's CRC-32 is %08x, not the %s it was "
            "saved with (edited or corrupt)" % (
                path, zlib.crc32(rest), line[len(CHECKSUM_LINE):-2].decode()))


def write_manifest(path, manifest):
    """Writes an edited manifest with its checksum made again, as a
    deliberate edit does (docs/checkpoint.md#manifestjson)."""
    manifest = {k: v for k, v in manifest.items() if k != "checksum"}
    rest = json.dumps(manifest, indent=1)[2:].encode() + b"\n"
    with open(path, "wb") as file:
        file.write(b"{\n" + CHECKSUM_LINE + b"%08x\",\n" % zlib.crc32(rest) +
                   rest)


def partial_sizes(directory):
    """The partial directories in `directory` and the bytes of their files."""
    return [(name, sum(os.path.getsize(os.path.join(root, f))
                       for root, _, files in os.walk(os.path.join(directory,
                                                                  name))
                       for f in files))
            for name in sorted(os.listdir(directory))
            if name.startswith(".partial-")]


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


def expect_refused(case, name, plan, directory, *needles, world=2,
                   exact=False):
    """zero-run --resume `directory` exits 1 with one line holding each of
    `needles` (with `exact`, the one needle is the line after the tool's
    name) and trains nothing."""
    result, _ = case.run(plan, "--ranks", str(world), "--steps", "1",
                         "--resume", directory, timeout=60)
    lines = result.stderr.strip().splitlines()
    check(result.returncode == 1, "%s: exit 1 (%d)" % (name,
                                                        result.returncode))
    if exact:
        check(result.stderr == "zero-run: %s\n" % needles[0],
              "%s: the one line %r (%s)" % (name, needles[0], lines))
    else:
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
    manifest["version"] = 3
    write_manifest(path, manifest)
    expect_refused(case, "newer format", plan, directory, "manifest.json",
                   "version: format version 3 is newer than this build "
                   "reads (2)")

    directory, inner = copy("truncated-manifest")
    path = os.path.join(inner, "manifest.json")
    with open(path, "r+b") as file:
        file.truncate(os.path.getsize(path) // 2)
    expect_refused(case, "truncated manifest", plan, directory,
                   checksum_refusal(path), exact=True)

    directory, inner = copy("bad-crc-field")
    path = os.path.join(inner, "manifest.json")
    with open(path) as file:
        manifest = json.load(file)
    manifest["files"][1]["crc32"] = "xyz"
    write_manifest(path, manifest)
    expect_refused(case, "malformed field", plan, directory, "manifest.json",
                   "files[1].crc32: expected 8 lower-case hex digits")

    # Devices in place of files would be read without end.
    for name in ["manifest.json", "latest", rank1]:
        directory, inner = copy("device-" + name)
        path = os.path.join(directory if name == "latest" else inner, name)
        os.remove(path)
        os.symlink("/dev/zero", path)
        what = {"manifest.json": "the checkpoint manifest",
                "latest": "the checkpoint's latest"}.get(name,
                                                         "a checkpoint file")
        expect_refused(case, "%s is /dev/zero" % name, plan, directory,
                       "%s: is a character device, not %s" % (path, what),
                       exact=True)

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


def manifest_edits(case, reference):
    """Every edit of manifest.json is refused by its checksum, in one line,
    by zero-run and by inspect; a version 1 manifest loads with a warning."""
    plan = case.plan()
    base = os.path.join(case.work, "edits")
    shutil.rmtree(base, ignore_errors=True)
    good = os.path.join(base, "good")
    case.run(plan, "--steps", "2", "--checkpoint-dir", good)
    with open(os.path.join(good, "step-00000002", "manifest.json"),
              "rb") as file:
        text = file.read()
    rest_at = text.index(b"\n", 2) + 1

    def edited(name, new_text):
        directory = os.path.join(base, name)
        shutil.copytree(good, directory)
        path = os.path.join(directory, "step-00000002", "manifest.json")
        with open(path, "wb") as file:
            file.write(new_text)
        return directory, path

    def refused(name, new_text, moved=False):
        directory, path = edited(name, new_text)
        line = ("%s: checksum: not on the manifest's second line (edited or "
                "corrupt)" % path) if moved else checksum_refusal(path)
        expect_refused(case, "manifest edit: " + name, plan, directory, line,
                       exact=True)
        inspect = subprocess.run([case.zero_checkpoint, "inspect", directory],
                                 capture_output=True, text=True, timeout=60)
        check(inspect.returncode == 1 and
              inspect.stderr == "zero-checkpoint: %s\n" % line,
              "manifest edit: %s: inspect refuses it in one line (%s)" % (
                  name, inspect.stderr.strip()))

    # What the checksum is for: a resume at another step and data
    # position, and another data stream, which --seed would be refused.
    refused("step and next_step 400",
            text.replace(b'"step": 2,', b'"step": 400,').replace(
                b'"next_step": 2,', b'"next_step": 400,'))
    refused("seed", text.replace(b'"seed": 0', b'"seed": 7'))
    rng = random.Random(11)
    for attempt in range(12):
        at = rng.randrange(rest_at, len(text))
        byte = text[at] ^ rng.choice([0x01, 0x02, 0x04, 0x08, 0x10])
        refused("byte %d" % at, text[:at] + bytes([byte]) + text[at + 1:])
    refused("cut", text[:rest_at + (len(text) - rest_at) // 3])
    # A JSON tool's rewrite moves the checksum off its line.
    refused("rewritten", json.dumps(json.loads(text), indent=2).encode(),
            moved=True)

    # A version 1 manifest, as builds before the checksum wrote it.
    old = json.loads(text)
    del old["checksum"]
    old["version"] = 1
    directory, path = edited("version1", json.dumps(old, indent=1).encode() +
                             b"\n")
    result, losses = case.run(plan, "--steps", "2", "--resume", directory)
    check(result.returncode == 0 and result.stderr ==
          "warning: %s: format version 1 has no checksum of the manifest, so "
          "an edit of it goes undetected\n" % path,
          "manifest edit: version 1 loads with one warning (%s)" %
          result.stderr.strip())
    check(losses == reference[2:4], "manifest edit: version 1 resumes to "
          "the uninterrupted losses")


def concurrent_readers(case):
    """A writer saving every step and keeping one, while runs resume from
    its directory and inspect it in a loop."""
    plan = case.plan()
    directory = os.path.join(case.work, "concurrent")
    shutil.rmtree(directory, ignore_errors=True)
    writer = subprocess.Popen([case.zero_run, plan, "--steps", "100000",
                               "--quiet", "--checkpoint-dir", directory,
                               "--checkpoint-every", "1", "--keep", "1"],
                              stderr=subprocess.PIPE, text=True)
    started = time.time()
    while not os.path.exists(os.path.join(directory, "latest")) and \
            time.time() - started < 60 and writer.poll() is None:
        time.sleep(0.005)
    resumes, inspects = [], []
    enough = 20

    def done():
        return (len(resumes) >= enough and len(inspects) >= enough) or \
            time.time() - started > 240 or writer.poll() is not None

    def resume_loop():
        report = os.path.join(case.work, "concurrent-report.json")
        while not done():
            result = subprocess.run(
                [case.zero_run, plan, "--steps", "1", "--quiet", "--resume",
                 directory, "--report-file", report],
                capture_output=True, text=True, timeout=120)
            step = loss = None
            if result.returncode == 0:
                with open(report) as file:
                    saved = json.load(file)
                step, loss = saved["start_step"], saved["losses"][0]
            resumes.append((result.returncode, result.stderr.strip(), step,
                            loss))

    def inspect_loop():
        while not done():
            result = subprocess.run([case.zero_checkpoint, "inspect",
                                     directory], capture_output=True,
                                    text=True, timeout=60)
            inspects.append((result.returncode, result.stderr.strip()))

    threads = [threading.Thread(target=resume_loop),
               threading.Thread(target=inspect_loop)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    running = writer.poll() is None
    writer.send_signal(signal.SIGTERM)
    writer.communicate(timeout=60)
    check(running, "readers and a writer: the writer ran throughout")
    failed = [r for r in resumes if r[0] != 0]
    check(len(resumes) >= 5 and not failed,
          "readers and a writer: %d resumes, every one loads (%s)" % (
              len(resumes), failed[:3]))
    failed = [r for r in inspects if r[0] != 0]
    check(len(inspects) >= 5 and not failed,
          "readers and a writer: %d inspects, every one checks (%s)" % (
              len(inspects), failed[:3]))
    steps = [r[2] for r in resumes if r[0] == 0]
    if steps:
        uninterrupted = case.losses(max(steps) + 1)
        wrong = [(step, loss) for _, _, step, loss in resumes
                 if step is not None and loss != uninterrupted[step]]
        check(not wrong, "readers and a writer: each resume continues with "
              "the uninterrupted loss of its step (%s)" % wrong[:3])


def sigterm_partials(case):
    """SIGTERM to MPI runs saving every step can leave a partial directory:
    inspect names it, and the next run saving there removes it, saying so
    in one line."""
    plan = case.plan()
    directory = os.path.join(case.work, "sigterm")
    resumed = []

    def check_partials(name, expect_some):
        partials = partial_sizes(directory)
        if expect_some:
            check(partials, "%s: a partial directory is left" % name)
        inspect = subprocess.run([case.zero_checkpoint, "inspect", directory],
                                 capture_output=True, text=True, timeout=60)
        lines = [line for line in inspect.stdout.splitlines()
                 if line.startswith("partial")]
        check(inspect.returncode == 0 and lines == [
            "partial     %s (%d bytes): a save under way or interrupted; "
            "the next save here removes it" % p for p in partials],
            "%s: inspect names %s (%s)" % (name, partials, lines))
        step = latest_step(directory)
        result, losses = case.run(plan, "--steps", "1", "--resume",
                                  directory, "--checkpoint-dir", directory)
        removed = ", ".join("%s (%d bytes)" % p for p in partials)
        check(result.returncode == 0 and result.stderr == (
            "zero-run: %s: removed what an interrupted save left: %s\n" % (
                directory, removed) if partials else ""),
            "%s: the next run removes them in one line (%s)" % (
                name, result.stderr.strip()))
        check(not partial_sizes(directory), "%s: nothing left" % name)
        resumed.append((name, step, losses))

    # Where the kill falls is chance; a kill at files-written leaves one.
    shutil.rmtree(directory, ignore_errors=True)
    env = dict(os.environ, ZEROSBP_CHECKPOINT_KILL_AT="files-written:2")
    case.run(plan, "--steps", "4", "--checkpoint-dir", directory,
             "--checkpoint-every", "2", env=env)
    check_partials("killed at files-written", expect_some=True)
    rng = random.Random(5)
    for attempt in range(8):
        name = "SIGTERM %d (MPI)" % attempt
        shutil.rmtree(directory, ignore_errors=True)
        job = subprocess.Popen([case.zero_run, plan, "--backend", "mpi",
                                "--ranks", "2", "--steps", "100000",
                                "--quiet", "--checkpoint-dir", directory,
                                "--checkpoint-every", "1"],
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        started = time.time()
        while not os.path.exists(os.path.join(directory, "latest")) and \
                time.time() - started < 60 and job.poll() is None:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.3))
        job.send_signal(signal.SIGTERM)
        _, stderr = job.communicate(timeout=60)
        check(job.returncode == 143 and
              stderr == "zero-run: interrupted by SIGTERM\n",
              "%s: exit 143, one line (%d, %s)" % (name, job.returncode,
                                                  stderr.strip()))
        if os.path.exists(os.path.join(directory, "latest")):
            check_partials(name, expect_some=False)
    uninterrupted = case.losses(max(step for _, step, _ in resumed) + 1)
    for name, step, losses in resumed:
        check(losses == uninterrupted[step:step + 1],
              "%s: resumes at step %d with the uninterrupted loss" % (name,
                                                                      step))


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
    reference = case.losses(8)
    kill_points(case, reference)
    random_kills(case, reference)
    disk_full(case, reference)
    second_writer(case)
    bad_checkpoints(case)
    manifest_edits(case, reference)
    concurrent_readers(case)
    sigterm_partials(case)
    finish()


if __name__ == "__main__":
    main()
