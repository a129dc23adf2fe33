"""What the GPU check scripts (cuda_graph_check.py, cuda_multi_tensor_check.py,
cuda_training_check.py) share: check() and the list of failures it keeps,
running a tool with a timeout, recognizing zero-run's clean no-GPU failure,
and comparing two directories of saved parameters byte for byte. Bundled
next to them by bench/gpu/bundle.sh."""

import filecmp
import os
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
    prefix = "zero-run: rank 0: no CUDA device: "
    if result.returncode == 1 and len(lines) == 1 and \
            lines[0].startswith(prefix):
        return lines[0][len(prefix):]
    return None


def same_files(a, b):
    """Whether directories `a` and `b` hold the same non-empty set of files
    with equal bytes."""
    names = sorted(os.listdir(a))
    if names != sorted(os.listdir(b)) or not names:
        return False
    match, mismatch, errors = filecmp.cmpfiles(a, b, names, shallow=False)
    return not mismatch and not errors
