"""The same model through zero-compile and zero-run, for comparison."""

import json
import os
import subprocess

import numpy as np

import zerosbp as zs


def run_cli(tmp_path, compile_args, init, batches, world):
    """Compiles with `compile_args`, trains from `init` (name -> array) on
    `batches` (tuples in the graph's input order, named by `names`), and
    returns (losses, saved parameters)."""
    plan = str(tmp_path / "model.zplan")
    subprocess.run([os.environ["ZEROSBP_COMPILE"], *compile_args,
                    f"--world={world}", "--report=none", "-o", plan],
                   check=True)
    zs.save(init, str(tmp_path / "init"))
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
    return np.array(losses, dtype=np.float32), zs.load(
        str(tmp_path / "saved"))
