"""python3 -m zerosbp.launch -n 2: one process per rank over MPI gives the
in-process result (zs.save of a module writes it once), and so does -n 4
on a [2, 2] placement with tensor parallelism and in two pipeline stages.
A rank that raises stops the job. Both launchers (zerosbp.launch and
zero-run --backend mpi) refuse a hostfile they cannot use, and zero-run a
--ranks its plan was not compiled for, in one line before mpirun starts.

Every job runs in a session of its own and is killed whole at the end
(tests/integration/jobs.py), so that a hung one fails its test rather than
holding the suite."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import zerosbp as zs

import models

sys.path.insert(0, os.path.join("tests", "integration"))
from jobs import Job  # noqa: E402

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
    # A module: every rank gathers, rank 0 writes.
    zs.save(model, {out!r} + "/model.safetensors")
""")


class Done:
    """What a finished job left: its status (None if it was still running
    at the timeout, and killed), stdout and stderr."""

    def __init__(self, job, timeout):
        try:
            self.returncode = job.wait(timeout)
        finally:
            job.kill()
        self.stdout = job.stdout()
        self.stderr = job.stderr()


def run(tmp_path, command, timeout):
    base = tmp_path / f"job{len(list(tmp_path.glob('job*.err')))}"
    return Done(Job(command, str(base)), timeout)


def launch(tmp_path, *args, timeout=300):
    return run(tmp_path, [sys.executable, "-m", "zerosbp.launch", *args],
               timeout)


def test_launch_two_ranks_equals_in_process(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(
        tests=os.path.dirname(os.path.abspath(__file__)), out=str(tmp_path)))
    done = launch(tmp_path, "-n", "2", str(script))
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
    whole = zs.load(str(tmp_path / "model.safetensors"))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(saved[name], value, err_msg=name)
        np.testing.assert_array_equal(whole[name], value, err_msg=name)


RAISES = textwrap.dedent("""
    import sys
    import zerosbp as zs
    sys.path.insert(0, {tests!r})
    import models
    if zs.rank() == 1:
        raise RuntimeError("rank 1 gives up")
    model = models.Mlp(hidden=32)
    graph = models.train_graph(model, zs.optim.AdamW(model.parameters(),
                               lr=0.01), stage=3, world=2)
    for batch in models.mlp_batches(3, batch=8):
        graph(*batch)  # Would wait for rank 1 in its collectives.
""")


def test_a_rank_that_raises_stops_the_job(tmp_path):
    """Its traceback is printed and mpirun stops the other rank at once,
    rather than leaving it in a collective until the timeout."""
    script = tmp_path / "train.py"
    script.write_text(RAISES.format(
        tests=os.path.dirname(os.path.abspath(__file__))))
    done = launch(tmp_path, "-n", "2", str(script), timeout=120)
    assert done.returncode not in (0, None), done.stdout + done.stderr
    assert "RuntimeError: rank 1 gives up" in done.stderr


TENSOR_PARALLEL = textwrap.dedent("""
    import json, sys
    import zerosbp as zs
    sys.path.insert(0, {tests!r})
    import models
    zs.manual_seed(0)
    model = models.SmallMlp().parallel(
        zs.placement("cpu", ranks=[[0, 1], [2, 3]]))
    graph = models.train_graph(model, zs.optim.Adam(model.parameters(),
                               lr=0.1), stage=3, world=4)
    graph.to(model.fc1.weight.placement)
    losses = [float(graph(*b)) for b in models.small_mlp_batches(3)]
    state = model.state_dict()  # Collective: every rank gathers.
    if zs.rank() == 0:
        zs.save(state, {out!r} + "/params")
        json.dump({{"losses": losses}}, open({out!r} + "/result.json", "w"))
""")


def test_launch_tensor_parallel_equals_in_process(tmp_path):
    """Four processes on a [2, 2] placement, fc1 and fc2 split on the model
    axis, ZeRO-3 over the data axis: the in-process result bit for bit."""
    script = tmp_path / "train.py"
    script.write_text(TENSOR_PARALLEL.format(
        tests=os.path.dirname(os.path.abspath(__file__)), out=str(tmp_path)))
    done = launch(tmp_path, "-n", "4", str(script))
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "result.json").read_text())

    zs.manual_seed(0)
    placement = zs.placement("cpu", ranks=[[0, 1], [2, 3]])
    model = models.SmallMlp().parallel(placement)
    graph = models.train_graph(model, zs.optim.Adam(model.parameters(),
                                                    lr=0.1),
                               stage=3, world=4).to(placement)
    assert result["losses"] == [float(graph(*b))
                                for b in models.small_mlp_batches(3)]
    saved = zs.load(str(tmp_path / "params"))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(saved[name], value, err_msg=name)


PIPELINE = textwrap.dedent("""
    import json, sys
    import zerosbp as zs
    sys.path.insert(0, {tests!r})
    import models
    zs.manual_seed(0)
    model = models.TwoStageMlp().pipelined()
    graph = models.pipeline_graph(model, zs.optim.SGD(model.parameters(),
                                                      lr=0.1))
    losses = [float(graph(*b)) for b in models.small_mlp_batches(3)]
    state = model.state_dict()  # Collective: every rank gathers.
    if zs.rank() == 0:
        zs.save(state, {out!r} + "/params")
        json.dump({{"losses": losses}}, open({out!r} + "/result.json", "w"))
""")


def test_launch_pipeline_equals_in_process(tmp_path):
    """Four processes in two pipeline stages (zs.pipeline_stage), two
    micro-batches: the in-process result bit for bit."""
    script = tmp_path / "train.py"
    script.write_text(PIPELINE.format(
        tests=os.path.dirname(os.path.abspath(__file__)), out=str(tmp_path)))
    done = launch(tmp_path, "-n", "4", str(script))
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((tmp_path / "result.json").read_text())

    zs.manual_seed(0)
    model = models.TwoStageMlp().pipelined()
    graph = models.pipeline_graph(model, zs.optim.SGD(model.parameters(),
                                                      lr=0.1))
    assert result["losses"] == [float(graph(*b))
                                for b in models.small_mlp_batches(3)]
    saved = zs.load(str(tmp_path / "params"))
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(saved[name], value, err_msg=name)


def test_launch_rejects_a_missing_script(tmp_path):
    done = launch(tmp_path, "-n", "2", str(tmp_path / "missing.py"),
                  timeout=60)
    assert done.returncode not in (0, None)
    assert "no such script" in done.stderr


def test_launch_with_a_hostfile(tmp_path):
    """--hostfile: the ranks fill its slots; this machine's 2 give the
    in-process result, and too few slots stop the launch with one line."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(
        tests=os.path.dirname(os.path.abspath(__file__)), out=str(tmp_path)))
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=2  # this machine\n")
    done = launch(tmp_path, "-n", "2", "--hostfile", str(hosts), str(script))
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
    done = launch(tmp_path, "-n", "2", "--hostfile", str(hosts), str(script),
                  timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == \
        "zerosbp.launch: %s: 1 slot for 2 ranks" % hosts


def unresolvable(name):
    """getaddrinfo's reason for `name`, as the launchers print it."""
    try:
        socket.getaddrinfo(name, None)
    except socket.gaierror as error:
        return error.strerror
    pytest.skip(f"{name} resolves here")


@pytest.fixture
def plan2(tmp_path):
    """A world-2 plan for zero-run."""
    plan = str(tmp_path / "tiny.zplan")
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--preset=tiny",
                    "--world=2", "--stage=2", "--report=none", "-o", plan],
                   check=True, timeout=300)
    return plan


def zero_run_mpi(tmp_path, plan, *args):
    return run(tmp_path, [os.environ["ZEROSBP_RUN"], plan, "--backend", "mpi",
                          "--steps", "1", *args], 60)


def test_zero_run_checks_the_rank_count_before_mpirun(tmp_path, plan2):
    """The in-process backend's line, and no MPI banner."""
    done = zero_run_mpi(tmp_path, plan2, "--ranks", "3")
    assert done.returncode == 1
    assert done.stderr == (
        f"zero-run: {plan2}: the plan was compiled for 2 ranks, not 3 "
        "(recompile with --world=3)\n")


def test_launchers_refuse_a_host_that_does_not_resolve(tmp_path, plan2):
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost slots=1\nno-such-host.invalid slots=1\n")
    line = (f"{hosts}:2: cannot resolve host 'no-such-host.invalid' "
            f"({unresolvable('no-such-host.invalid')})")
    done = zero_run_mpi(tmp_path, plan2, "--ranks", "2", "--hostfile",
                        str(hosts))
    assert (done.returncode, done.stderr) == (1, f"zero-run: {line}\n")
    script = tmp_path / "nothing.py"
    script.write_text("")
    done = launch(tmp_path, "-n", "2", "--hostfile", str(hosts), str(script),
                  timeout=60)
    assert (done.returncode, done.stderr) == (1, f"zerosbp.launch: {line}\n")


def test_launchers_refuse_a_hostfile_that_is_a_device(tmp_path, plan2):
    done = zero_run_mpi(tmp_path, plan2, "--ranks", "2", "--hostfile",
                        "/dev/zero")
    assert (done.returncode, done.stderr) == (
        1, "zero-run: /dev/zero: is a character device, not the hostfile\n")
    script = tmp_path / "nothing.py"
    script.write_text("")
    done = launch(tmp_path, "-n", "2", "--hostfile", "/dev/zero", str(script),
                  timeout=60)
    assert (done.returncode, done.stderr) == (
        1, "zerosbp.launch: /dev/zero: is a character device, not the "
        "hostfile\n")
