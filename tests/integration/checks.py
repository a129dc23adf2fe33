"""What the integration scripts share: the small GPT-2 they compile, the
pipeline that partitions every parameter, check() and its summary, and a
safetensors reader that does not use the runtime's."""

import json
import os
import struct
import subprocess
import sys

import numpy as np

# zero-compile flags of a 2-layer GPT-2 small enough for many runs.
GPT2 = ["--num-layers=2", "--hidden-size=32", "--num-attention-heads=4",
        "--seq-length=16", "--vocab-size=64", "--batch-size=12"]
# Stage 3 partitions every parameter, the collectives overlap compute, and
# small buckets make several of each kind.
SHARDED = ("stage3-param-persistence-threshold=0 overlap-comm=true "
           "reduce-bucket-size=3000 allgather-bucket-size=3000 "
           "stage3-prefetch-bucket-size=3000")

# GPT2's sizes, read back from its flags.
GPT2_SIZES = {flag[2:].split("=")[0]: int(flag.split("=")[1]) for flag in GPT2}

failures = []


def write_gpt2_data(work, steps):
    """`steps` steps of random tokens and labels for GPT2 as .npy files in
    work/data (the same every run); returns that directory."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    rng = np.random.default_rng(0)
    shape = (steps, GPT2_SIZES["batch-size"], GPT2_SIZES["seq-length"])
    for name in ("tokens", "labels"):
        np.save(os.path.join(data, name + ".npy"),
                rng.integers(0, GPT2_SIZES["vocab-size"], shape))
    return data


def run(command):
    """Runs a tool, its output captured; one that runs past 300 s fails
    the test."""
    return subprocess.run(command, capture_output=True, text=True,
                          timeout=300)


def max_rel(a, b):
    """The largest relative difference of `a` to `b`, element by element."""
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def train_report(zero_run, plan, work, data, steps, *flags):
    """Trains `plan` on 4 in-process ranks for `steps` steps on the .npy
    inputs in `data` (synthetic ones when None): (its report, "") or
    (None, its error)."""
    report = os.path.join(work, "report.json")
    source = [] if data is None else ["--data", data]
    result = run([zero_run, plan, "--ranks", "4", "--steps", str(steps),
                  *source, "--quiet", "--report-file", report, *flags])
    if result.returncode != 0:
        return None, result.stderr.strip()
    with open(report) as file:
        return json.load(file), ""


def check(condition, message):
    print(("ok:   " if condition else "FAIL: ") + message)
    if not condition:
        failures.append(message)


def finish():
    """Prints the outcome and exits 1 if any check failed."""
    if failures:
        print("%d checks failed" % len(failures))
        sys.exit(1)
    print("all checks passed")


_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "F64": "<f8",
           "I64": "<i8", "I32": "<i4", "BOOL": "?"}


def read_safetensors(path):
    """name -> array (bf16 as its raw uint16 bits)."""
    with open(path, "rb") as file:
        blob = file.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    return {name: np.frombuffer(data[e["data_offsets"][0]:
                                     e["data_offsets"][1]],
                                _DTYPES[e["dtype"]]).reshape(e["shape"])
            for name, e in header.items() if name != "__metadata__"}


def safetensors_dtypes(path):
    """name -> the dtype the header names."""
    with open(path, "rb") as file:
        (size,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(size))
    return {name: e["dtype"] for name, e in header.items()
            if name != "__metadata__"}


def rank_pids(marker):
    """{rank: pid} of the processes whose command line holds `marker` (not
    mpirun itself), from the rank OpenMPI puts in each one's environment."""
    pids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().decode(errors="replace")
            if marker not in cmdline or "mpirun" in cmdline.split("\0")[0]:
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                environ = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for variable in environ:
            if variable.startswith("OMPI_COMM_WORLD_RANK="):
                pids[int(variable.split("=")[1])] = int(entry)
    return pids
