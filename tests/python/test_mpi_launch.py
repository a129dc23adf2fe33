"""python3 -m zerosbp.launch -n 2: one process per rank over MPI gives the
in-process result."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import zerosbp as zs

import models

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import zerosbp as zs
    sys.path.insert(0, {tests!r})
    import models
    zs.manual_seed(6)
    model = models.Mlp(hidden=32)
    graph = models.train_graph(model, zs.optim.AdamW(model.parameters(),
                               lr=0.01), stage=3, world=2)
    losses = [float(graph(*b)) for b in models.mlp_batches(3, batch=8)]
    state = model.state_dict()  # Collective: every rank gathers.
    if zs.rank() == 0:
        zs.save(state, {out!r} + "/params")
        json.dump({{"losses": losses, "world": zs.world_size()}},
                  open({out!r} + "/result.json", "w"))
""")


def test_launch_two_ranks_equals_in_process(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(
        tests=os.path.dirname(os.path.abspath(__file__)), out=str(tmp_path)))
    done = subprocess.run(
        [sys.executable, "-m", "zerosbp.launch", "-n", "2", str(script)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["world"] == 2

    zs.manual_seed(6)
    model = models.Mlp(hidden=32)
    graph = models.train_graph(model, zs.optim.AdamW(model.parameters(),
                                                     lr=0.01),
                               stage=3, world=2)
    losses = [float(graph(*b)) for b in models.mlp_batches(3, batch=8)]
    assert result["losses"] == losses  # Rank-order reductions: bit for bit.
    saved = zs.load(str(tmp_path / "params"))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(saved[name], value, err_msg=name)


def test_launch_rejects_a_missing_script(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "zerosbp.launch", "-n", "2",
         str(tmp_path / "missing.py")], capture_output=True, text=True)
    assert done.returncode != 0
    assert "no such script" in done.stderr


def test_launch_with_a_hostfile(tmp_path):
    """--hostfile: the ranks fill its slots; this machine's 2 give the
    in-process result, and too few slots stop the launch with one line."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(
        tests=os.path.dirname(os.path.abspath(__file__)), out=str(tmp_path)))
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=2  # this machine\n")
    done = subprocess.run(
        [sys.executable, "-m", "zerosbp.launch", "-n", "2", "--hostfile",
         str(hosts), str(script)], capture_output=True, text=True,
        timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    zs.manual_seed(6)
    model = models.Mlp(hidden=32)
    graph = models.train_graph(model, zs.optim.AdamW(model.parameters(),
                                                     lr=0.01),
                               stage=3, world=2)
    assert result["losses"] == [float(graph(*b))
                                for b in models.mlp_batches(3, batch=8)]

    hosts.write_text("localhost slots=1\n")
    done = subprocess.run(
        [sys.executable, "-m", "zerosbp.launch", "-n", "2", "--hostfile",
         str(hosts), str(script)], capture_output=True, text=True,
        timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == \
        "zerosbp.launch: %s: 1 slot for 2 ranks" % hosts
