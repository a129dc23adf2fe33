"""The same model through zero-compile and zero-run, for comparison."""

import json
import os
import subprocess

import numpy as np

import zerosbp as zs


def _stacked(name, value):
    """zero-compile's GPT-2 keeps c_attn's q, k and v stacked, (3, E, E)
    and (3, E): the same elements as a (3E, E) Linear's."""
    value = np.asarray(value)
    if ".c_attn." in name and value.shape[0] % 3 == 0:
        return value.reshape((3, value.shape[0] // 3) + value.shape[1:])
    return value


def _unstacked(name, value):
    if ".c_attn." in name and value.ndim >= 2 and value.shape[0] == 3:
        return value.reshape((-1,) + value.shape[2:])
    return value


def run_cli(tmp_path, compile_args, init, batches, world):
    """Compiles with `compile_args`, trains from `init` (name -> array) on
    `batches` (tuples in the graph's input order, named by `names`), and
    returns (losses, saved parameters)."""
    plan = str(tmp_path / "model.zplan")
    subprocess.run([os.environ["ZEROSBP_COMPILE"], *compile_args,
                    f"--world={world}", "--report=none", "-o", plan],
                   check=True)
    zs.save({name: _stacked(name, value) for name, value in init.items()},
            str(tmp_path / "init"))
    data = tmp_path / "data"
    data.mkdir()
    names, rows = batches
    for index, name in enumerate(names):
        np.save(data / f"{name}.npy", np.stack([b[index] for b in rows]))
    report = tmp_path / "report.json"
    subprocess.run([os.environ["ZEROSBP_RUN"], plan, f"--ranks={world}",
                    f"--steps={len(rows)}", "--init", str(tmp_path / "init"),
                    "--data", str(data), "--save", str(tmp_path / "saved"),
                    "--report=json", "--report-file", str(report), "--quiet"],
                   check=True)
    losses = json.loads(report.read_text())["losses"]
    saved = zs.load(str(tmp_path / "saved"))
    return np.array(losses, dtype=np.float32), {
        name: _unstacked(name, np.asarray(value))
        for name, value in saved.items()}
