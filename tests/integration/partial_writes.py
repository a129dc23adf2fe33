#!/usr/bin/python3
"""Every file zero-run and zero-compile write is whole or absent
(docs/runtime.md#files-are-whole-or-absent, docs/compiler.md#outputs).

* --save onto a full disk (a small tmpfs in a private mount namespace where
  the system allows one, else a file-size limit): one line naming the file
  and the reason, exit status 1, and the directory still holds the previous
  save, byte for byte, with no short file and nothing beside it.
* --save replaces an existing save as a whole (a stale .npy goes), refuses a
  directory holding anything else, and a second writer is refused while
  the first holds the lock.
* --report-file and --trace into a missing directory: one line, nothing
  written.
* zero-compile: an --emit-ir that cannot be written leaves no plan either,
  and no temporary.
* Outputs that overlap (--save on the checkpoint directory or a parent of
  it, --trace inside --save, through a symbolic link) or an output over an
  input: one line naming both, exit status 1, before anything is written.

Usage: partial_writes.py ZERO_COMPILE ZERO_RUN
"""

import fcntl
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

from checks import GPT2, check, finish


def snapshot(directory):
    return {name: open(os.path.join(directory, name), "rb").read()
            for name in sorted(os.listdir(directory))}


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def one_line(name, result, expected, status=1):
    """Exit status `status` and stderr exactly `expected` (a str) or
    matching it (a compiled pattern), in one line."""
    lines = result.stderr.strip().splitlines()
    check(result.returncode == status,
          "%s: exit status %d" % (name, result.returncode))
    if isinstance(expected, str):
        ok = lines == [expected]
    else:
        ok = len(lines) == 1 and expected.fullmatch(lines[0]) is not None
    check(ok, "%s: one line %s (%s)" % (
        name, expected if isinstance(expected, str) else expected.pattern,
        lines))


def disk_full(zero_run, plan, work):
    base = os.path.join(work, "full")
    shutil.rmtree(base, ignore_errors=True)
    probe = os.path.join(base, "probe")
    subprocess.run([zero_run, plan, "--steps", "1", "--quiet", "--save",
                    probe], check=True)
    # What a save takes on a tmpfs: whole pages per file.
    size = sum((os.path.getsize(os.path.join(probe, f)) + 4095) // 4096 * 4096
               for f in os.listdir(probe))
    disk = os.path.join(base, "disk")
    out = os.path.join(base, "out")
    os.makedirs(disk)
    os.makedirs(out)
    saved = os.path.join(disk, "params")
    run_line = "%s %s --quiet --save %s" % (zero_run, plan, saved)
    # The tmpfs holds one save and a half: the second save's temporary
    # copy does not fit beside the first.
    script = "\n".join([
        "set -u",
        "mount -t tmpfs -o size=%dk tmpfs %s || exit 77" % (
            size * 3 // 2 // 1024, disk),
        "%s --steps 1" % run_line,
        "echo first=$?",
        "cp -r %s %s/before" % (saved, out),
        "%s --steps 2 2>%s/stderr" % (run_line, out),
        "echo second=$?",
        "ls -a %s > %s/listing" % (disk, out),
        "cp -r %s %s/after" % (saved, out),
        "exit 0",
        ""])
    namespace = subprocess.run(["unshare", "--mount", "--map-root-user",
                                "sh", "-c", script],
                               capture_output=True, text=True)
    if namespace.returncode == 0 and "second=" in namespace.stdout:
        if "first=0" not in namespace.stdout:
            print(namespace.stdout + namespace.stderr)
        how = "tmpfs"
        check("first=0" in namespace.stdout, "disk full (tmpfs): the first "
              "save fits")
        with open(os.path.join(out, "stderr")) as file:
            stderr = file.read()
        status = int(re.search(r"second=(\d+)", namespace.stdout).group(1))
        with open(os.path.join(out, "listing")) as file:
            listing = file.read().split()
        before, after = ({name: None} if not os.path.isdir(
            os.path.join(out, name)) else snapshot(os.path.join(out, name))
            for name in ["before", "after"])
        reason = "No space left on device"
    else:
        # No mount namespace here: a file-size limit fails the write alike.
        how = "file-size limit"
        directory = os.path.join(base, "limited")
        os.makedirs(directory)
        saved = os.path.join(directory, "params")
        subprocess.run([zero_run, plan, "--steps", "1", "--quiet", "--save",
                        saved], check=True)
        before = snapshot(saved)
        largest = max(len(data) for data in before.values())

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE,
                               (largest // 2, largest // 2))
        result = run([zero_run, plan, "--steps", "2", "--quiet", "--save",
                      saved], preexec_fn=limit)
        stderr, status = result.stderr, result.returncode
        listing = os.listdir(directory)
        after = snapshot(saved)
        reason = "File too large"
    one_line("disk full (%s)" % how,
             subprocess.CompletedProcess([], status, "", stderr),
             re.compile(r"zero-run: %s/[\w.]+\.npy: cannot write \(%s\)" % (
                 re.escape(saved), reason)))
    check(after == before and all(after.values()),
          "disk full (%s): the previous save is intact, no short file" % how)
    check(sorted(e for e in listing if e not in (".", "..")) == ["params"],
          "disk full (%s): nothing left beside it (%s)" % (how, listing))


def replace_and_refuse(zero_run, plan, work):
    base = os.path.join(work, "replace")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    saved = os.path.join(base, "params")
    fresh = os.path.join(base, "fresh")
    subprocess.run([zero_run, plan, "--steps", "1", "--quiet", "--save",
                    saved], check=True)
    with open(os.path.join(saved, "stale.weight.npy"), "wb") as file:
        file.write(b"left by another model")
    # What a save killed with SIGKILL leaves; the next save removes it.
    os.makedirs(os.path.join(base, ".params.partial-99999"))
    for directory in [saved, fresh]:
        subprocess.run([zero_run, plan, "--steps", "2", "--quiet", "--save",
                        directory], check=True)
    check(snapshot(saved) == snapshot(fresh),
          "replace: the directory is replaced as a whole (stale file gone)")
    check(sorted(os.listdir(base)) == ["fresh", "params"],
          "replace: no lock or temporary left, the killed save's removed "
          "(%s)" % os.listdir(base))

    with open(os.path.join(saved, "notes.txt"), "w") as file:
        file.write("mine")
    before = snapshot(saved)
    one_line("not a saved model",
             run([zero_run, plan, "--steps", "1", "--quiet", "--save",
                  saved]),
             "zero-run: %s: holds 'notes.txt', which is not a saved "
             "parameter (.npy); not replacing it" % saved)
    check(snapshot(saved) == before, "not a saved model: left as it was")
    os.remove(os.path.join(saved, "notes.txt"))

    # A second writer, the lock held by this process.
    lock = os.path.join(base, ".params.lock")
    with open(lock, "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.write("%d\n" % os.getpid())
        holder.flush()
        one_line("second writer",
                 run([zero_run, plan, "--steps", "1", "--quiet", "--save",
                      saved]),
                 "zero-run: %s is locked by another writer (pid %d)" % (
                     saved, os.getpid()))
    os.remove(lock)
    # Two runs at once: the second is refused before training, naming the
    # first, which saves.
    first = subprocess.Popen([zero_run, plan, "--steps", "2000", "--quiet",
                              "--save", saved], stderr=subprocess.PIPE,
                             text=True)
    started = time.time()
    while not os.path.exists(lock) and time.time() - started < 30:
        time.sleep(0.05)
    one_line("two writers",
             run([zero_run, plan, "--steps", "1", "--quiet", "--save",
                  saved]),
             "zero-run: %s is locked by another writer (pid %d)" % (
                 saved, first.pid))
    _, stderr = first.communicate(timeout=300)
    check(first.returncode == 0, "two writers: the first saves (%s)" %
          stderr.strip())
    check(sorted(os.listdir(base)) == ["fresh", "params"],
          "two writers: the lock is released (%s)" % os.listdir(base))


def outputs(zero_run, plan, work):
    base = os.path.join(work, "outputs")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    missing = os.path.join(base, "missing")
    one_line("--report-file",
             run([zero_run, plan, "--steps", "1", "--quiet", "--report-file",
                  missing + "/report.json"]),
             "zero-run: %s/report.json: cannot write the report (No such "
             "file or directory)" % missing)
    one_line("--trace",
             run([zero_run, plan, "--steps", "1", "--quiet", "--trace",
                  missing + "/trace.json"]),
             "zero-run: %s/trace.json: cannot write the trace (No such file "
             "or directory)" % missing)
    check(os.listdir(base) == [], "outputs: nothing written")
    result = run([zero_run, plan, "--steps", "1", "--quiet", "--report-file",
                  os.path.join(base, "report.json"), "--trace",
                  os.path.join(base, "trace.json")])
    check(result.returncode == 0 and sorted(os.listdir(base)) ==
          ["report.json", "trace.json"],
          "outputs: written under their names only (%s)" % os.listdir(base))


def tree(directory):
    """Every file under `directory` with its bytes."""
    found = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                found[os.path.relpath(path, directory)] = file.read()
    return found


def overlapping(zero_run, plan, work):
    base = os.path.join(work, "overlap")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    out = os.path.join(base, "out")
    for flags, expected in [
            (["--checkpoint-dir", out, "--save", out],
             "--save %s and --checkpoint-dir %s are the same path" % (out,
                                                                      out)),
            (["--save", out, "--checkpoint-dir", out + "/ck"],
             "--checkpoint-dir %s/ck is inside --save %s" % (out, out)),
            (["--save", out, "--trace", out + "/trace.json"],
             "--trace %s/trace.json is inside --save %s" % (out, out))]:
        one_line("overlap %s" % " ".join(flags[::2]),
                 run([zero_run, plan, "--steps", "1", "--quiet"] + flags),
                 "zero-run: " + expected)
    check(os.listdir(base) == [], "overlap: nothing written (%s)" %
          os.listdir(base))

    # A checkpoint that exists is left as it was, also through a link to
    # its parent.
    ck = os.path.join(out, "ck")
    subprocess.run([zero_run, plan, "--steps", "1", "--quiet",
                    "--checkpoint-dir", ck], check=True)
    before = tree(base)
    link = os.path.join(base, "link")
    os.symlink(out, link)
    for flags, expected in [
            (["--checkpoint-dir", ck, "--save", out],
             "--checkpoint-dir %s is inside --save %s" % (ck, out)),
            (["--resume", ck, "--checkpoint-dir", ck, "--save", link],
             "--checkpoint-dir %s is inside --save %s" % (ck, link)),
            (["--resume", ck, "--report-file", link + "/ck"],
             "--report-file %s/ck and --resume %s are the same path" % (
                 link, ck)),
            (["--report-file", plan],
             "--report-file %s and the plan %s are the same path" % (plan,
                                                                     plan))]:
        one_line("overlap %s" % " ".join(flags[::2]),
                 run([zero_run, plan, "--steps", "1", "--quiet"] + flags),
                 "zero-run: " + expected)
    os.remove(link)
    check(tree(base) == before, "overlap: the checkpoint is left as it was")


def emit_ir(zero_compile, work):
    base = os.path.join(work, "emit")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    flags = [zero_compile] + GPT2 + ["--world=2", "--stage=2",
                                     "--report=none"]
    plan = os.path.join(base, "model.zplan")
    ir = os.path.join(base, "missing", "model.mlir")
    one_line("--emit-ir fails", run(flags + ["-o", plan, "--emit-ir", ir]),
             "zero-compile: cannot write the IR to '%s': No such file or "
             "directory" % ir)
    check(os.listdir(base) == [],
          "--emit-ir fails: no plan, no temporary (%s)" % os.listdir(base))
    one_line("-o fails", run(flags + ["-o", os.path.join(base, "missing",
                                                          "model.zplan")]),
             "zero-compile: cannot write the plan to '%s': No such file or "
             "directory" % os.path.join(base, "missing", "model.zplan"))
    ir = os.path.join(base, "model.mlir")
    result = run(flags + ["-o", plan, "--emit-ir", ir])
    check(result.returncode == 0 and sorted(os.listdir(base)) ==
          ["model.mlir", "model.zplan"],
          "both written under their names only (%s)" % os.listdir(base))


def main():
    zero_compile, zero_run = sys.argv[1], sys.argv[2]
    work = os.environ.get("TEST_TMPDIR", "/tmp/partial_writes")
    os.makedirs(work, exist_ok=True)
    plan = os.path.join(work, "gpt2_n2.zplan")
    subprocess.run([zero_compile] + GPT2 + [
        "--world=2", "--stage=3",
        "--pipeline=stage3-param-persistence-threshold=0", "--report=none",
        "-o", plan], check=True)
    disk_full(zero_run, plan, work)
    replace_and_refuse(zero_run, plan, work)
    outputs(zero_run, plan, work)
    overlapping(zero_run, plan, work)
    emit_ir(zero_compile, work)
    finish()


if __name__ == "__main__":
    main()
