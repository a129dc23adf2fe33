"""What the GPU check scripts (cuda_graph_check.py, cuda_multi_tensor_check.py,
cuda_training_check.py) share: check() and the list of failures it keeps,
running a tool with a timeout, recognizing zero-run's clean no-GPU failure,
and comparing two directories of saved parameters byte for byte. Bundled
next to them by bench/gpu/bundle.sh."""

import filecmp
import os
import re
import subprocess

failures = []


def check(condition, message):
    print(("ok:   " if condition else "FAIL: ") + message, flush=True)
    if not condition:
        failures.append(message)


def run(command, timeout=300):
    return subprocess.run(command, capture_output=True, text=True,
                          timeout=timeout)


def no_device(result):
    """The reason when `result` is zero-run's clean no-GPU failure."""
    lines = result.stderr.strip().splitlines()
    # With several ranks, whichever fails first says it.
    match = re.match(r"zero-run: rank \d+: no CUDA device: (.*)",
                     lines[0]) if len(lines) == 1 else None
    if result.returncode == 1 and match:
        return match.group(1)
    return None


def same_files(a, b):
    """Whether directories `a` and `b` hold the same non-empty set of files
    with equal bytes."""
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)) or not names:
        return False
    match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    return not mismatch and not errors
