#!/usr/bin/python3
"""A plan that was edited or corrupted is refused before it runs, with one
line and exit status 1 (docs/plan-format.md#checksum):

* the checksum, recomputed here with zlib as the format defines it, equals
  the one zero-compile wrote, and the plan runs;
* one value moved into another buffer, the checksum left as it was: the
  checksum names the mismatch;
* the checksum removed: refused as missing;
* a buffer moved onto the bytes of a variable's buffer and the checksum
  recomputed: the reader finds the two buffers live at the same time.

Usage: plan_integrity.py ZERO_COMPILE ZERO_RUN
"""

import json
import os
import subprocess
import sys
import zlib

from checks import GPT2, check, finish


def checksum(text):
    """The CRC-32 of the plan's text with its checksum's digits (the last
    occurrence of them, quoted) read as 00000000."""
    digits = text.rindex('"%s"' % json.loads(text)["checksum"]) + 1
    return "%08x" % zlib.crc32(
        (text[:digits] + "00000000" + text[digits + 8:]).encode())


def sealed(plan):
    """The plan as JSON text, with its checksum (the last member)."""
    plan = dict(plan)
    plan.pop("checksum", None)
    plan["checksum"] = "00000000"
    text = json.dumps(plan, indent=1) + "\n"
    digits = text.rindex('"00000000"') + 1
    return text[:digits] + checksum(text) + text[digits + 8:]


def write(path, text):
    with open(path, "w") as file:
        file.write(text)
    return path


def expect_error(name, zero_run, plan, line):
    result = subprocess.run([zero_run, plan, "--steps", "1"],
                            capture_output=True, text=True, timeout=120)
    first = (result.stderr.splitlines() or [""])[0]
    check(result.returncode == 1, "%s: exit status %d" % (name,
                                                          result.returncode))
    check(first == line, "%s: first line %r, expected %r" % (name, first,
                                                              line))


def main():
    zero_compile, zero_run = sys.argv[1:3]
    work = os.environ.get("TEST_TMPDIR", "/tmp/plan_integrity")
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "plan.zplan")
    subprocess.run([zero_compile] + GPT2 + ["--world=2", "--stage=2",
                                            "--report=none", "-o", path],
                   check=True)
    with open(path) as file:
        text = file.read()
    plan = json.loads(text)
    check(checksum(text) == plan["checksum"],
          "the checksum recomputed with zlib equals the written one (%s)" %
          plan["checksum"])
    check(text.rstrip().endswith('"checksum": "%s"\n}' % plan["checksum"]),
          "the checksum is the last member")
    result = subprocess.run([zero_run, path, "--steps", "2", "--quiet"],
                            capture_output=True, text=True, timeout=120)
    check(result.returncode == 0, "the plan as written runs (%s)" %
          result.stderr.strip())

    # The edit: a value moved into a buffer that is live meanwhile.
    # It still reads as a consistent plan; only the checksum tells.
    buffers = plan["buffers"]
    value = next(i for i, v in enumerate(plan["values"])
                 if buffers[v["buffer"]]["role"] == "activation")
    target = next(i for i, b in enumerate(buffers)
                  if b["role"] == "activation" and
                  i != plan["values"][value]["buffer"])
    edited_plan = json.loads(text)
    edited_plan["values"][value]["buffer"] = target
    edited = json.dumps(edited_plan, indent=1)
    expect_error("a value moved", zero_run,
                 write(os.path.join(work, "moved.zplan"), edited),
                 "zero-run: %s: checksum: the content gives %s, not %s; the "
                 "plan was edited or corrupted (recompile it)" %
                 (os.path.join(work, "moved.zplan"), checksum(edited),
                  plan["checksum"]))

    corrupt = text.replace('"world": 2', '"world": 2 ', 1)
    corrupt_path = write(os.path.join(work, "corrupt.zplan"), corrupt)
    expect_error("a space added", zero_run, corrupt_path,
                 "zero-run: %s: checksum: the content gives %s, not %s; the "
                 "plan was edited or corrupted (recompile it)" %
                 (corrupt_path, checksum(corrupt), plan["checksum"]))

    unsealed = json.loads(text)
    del unsealed["checksum"]
    unsealed_path = write(os.path.join(work, "unsealed.zplan"),
                          json.dumps(unsealed))
    expect_error("no checksum", zero_run, unsealed_path,
                 "zero-run: %s: checksum: missing; the plan was edited or "
                 "corrupted, or written by an older zero-compile (recompile "
                 "it)" % unsealed_path)

    # A buffer moved onto the bytes of a variable's buffer, which is live
    # throughout: the only pair that shares bytes, sealed again.
    variable = plan["values"][plan["variables"][0]["value"]]["buffer"]
    moved = next(i for i, b in enumerate(buffers)
                 if b["live"][0] > 0 and 0 < b["bytes"] <=
                 buffers[variable]["bytes"])
    overlap_plan = json.loads(text)
    overlap_plan["buffers"][moved]["offset"] = buffers[variable]["offset"]
    overlap_path = write(os.path.join(work, "overlap.zplan"),
                         sealed(overlap_plan))
    first, last = buffers[moved]["live"]
    begin = buffers[variable]["offset"]
    expect_error("a buffer moved onto a variable", zero_run, overlap_path,
                 "zero-run: %s: buffers[%d]: shares arena bytes [%d, %d) "
                 "with buffer %d while both are live (positions %d to %d)" %
                 (overlap_path, moved, begin, begin + buffers[moved]["bytes"],
                  variable, first, last))
    finish()


if __name__ == "__main__":
    main()
