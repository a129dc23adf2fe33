"""nn.Graph checkpoints: a graph saved after K steps and loaded into a fresh
graph (at the same or another world size and stage, in process or over MPI)
continues as if never stopped; a bad checkpoint or an edited manifest
changes nothing; a second writer is refused; loads succeed while another
process saves and prunes."""

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zlib

import numpy as np
import pytest

import zerosbp as zs

import models

K = 3
BATCH = 16
HIDDEN = 32


def mlp_graph(stage, world):
    """The same model and initial values on every call."""
    zs.manual_seed(4)
    model = models.Mlp(hidden=HIDDEN)
    graph = models.train_graph(model, zs.optim.Adam(model.parameters(),
                                                    lr=0.01),
                               stage=stage, world=world)
    return model, graph


def batches():
    return models.mlp_batches(2 * K, batch=BATCH, seed=9)


def train(graph, data):
    return np.array([graph(*b) for b in data], dtype=np.float32)


def state(model):
    return {k: v.copy() for k, v in model.state_dict().items()}


def assert_same_state(got, want):
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A stage-2 graph on 2 ranks: K steps, a checkpoint, K more steps."""
    directory = tmp_path_factory.mktemp("saved") / "checkpoints"
    model, graph = mlp_graph(stage=2, world=2)
    first = train(graph, batches()[:K])
    path = graph.save_checkpoint(directory, keep=2)
    at_save = state(model)
    rest = train(graph, batches()[K:])
    return {"dir": str(directory), "path": path, "first": first,
            "at_save": at_save, "rest": rest, "final": state(model)}


def test_save_writes_a_step_directory_and_latest(saved):
    assert saved["path"] == os.path.join(saved["dir"], f"step-{K:08d}")
    latest = open(os.path.join(saved["dir"], "latest")).read().strip()
    assert latest == f"step-{K:08d}"
    manifest = json.load(open(os.path.join(saved["path"], "manifest.json")))
    assert (manifest["step"], manifest["world"], manifest["stage"]) == \
        (K, 2, 2)
    assert sorted(f["name"] for f in manifest["files"]) == [
        "rank-00000-of-00002.safetensors", "rank-00001-of-00002.safetensors"]


def test_load_before_the_first_call_continues_bit_for_bit(saved):
    model, graph = mlp_graph(stage=2, world=2)
    info = graph.load_checkpoint(saved["dir"])  # Through `latest`.
    assert info["step"] == K and info["path"] == saved["path"]
    assert (info["world"], info["stage"]) == (2, 2)
    assert graph.steps_run == K
    losses = train(graph, batches()[K:])
    assert np.array_equal(losses, saved["rest"])
    assert graph.steps_run == 2 * K
    assert_same_state(state(model), saved["final"])


def test_load_after_compiling_replaces_the_state(saved):
    model, graph = mlp_graph(stage=2, world=2)
    # K steps on other data: the same step count, another state, read (and
    # cached) before the load.
    train(graph, models.mlp_batches(K, batch=BATCH, seed=10))
    assert graph.steps_run == K
    before = state(model)
    assert not np.array_equal(before["fc1.weight"],
                              saved["at_save"]["fc1.weight"])
    graph.load_checkpoint(saved["path"])
    assert graph.steps_run == K
    assert_same_state(state(model), saved["at_save"])
    assert np.array_equal(train(graph, batches()[K:]), saved["rest"])


def test_reshard_stage2_on_2_ranks_into_stage3_on_4(saved):
    model, graph = mlp_graph(stage=3, world=4)
    graph.load_checkpoint(saved["path"])
    losses = train(graph, batches()[K:])  # The same global batch.
    np.testing.assert_allclose(losses, saved["rest"], rtol=1e-5)
    for name, value in saved["final"].items():
        np.testing.assert_allclose(state(model)[name], value, rtol=1e-4,
                                   atol=1e-6, err_msg=name)


def test_to_fp32_loads_into_zs_load_and_the_modules(saved, tmp_path):
    """zero-checkpoint to-fp32 (DeepSpeed's zero_to_fp32) gives the full
    parameters at the save, under the modules' names."""
    out = tmp_path / "model.safetensors"
    subprocess.run([os.environ["ZEROSBP_CHECKPOINT"], "to-fp32", saved["dir"],
                    str(out)], check=True, capture_output=True)
    loaded = zs.load(str(out))
    assert_same_state(loaded, saved["at_save"])
    model, _ = mlp_graph(stage=0, world=1)
    model.load_state_dict(loaded)
    assert_same_state(state(model), saved["at_save"])


def test_the_data_seed_round_trips(tmp_path):
    model, graph = mlp_graph(stage=1, world=2)
    train(graph, batches()[:1])
    with pytest.raises(ValueError, match="seed must be an int"):
        graph.save_checkpoint(tmp_path / "ck", seed=-1)
    graph.save_checkpoint(tmp_path / "ck", seed=2 ** 63 + 5)
    _, fresh = mlp_graph(stage=1, world=2)
    assert fresh.load_checkpoint(tmp_path / "ck")["seed"] == 2 ** 63 + 5


def test_save_needs_a_compiled_graph(tmp_path):
    _, graph = mlp_graph(stage=2, world=2)
    with pytest.raises(RuntimeError, match="save_checkpoint: the graph is "
                       "compiled on its first call"):
        graph.save_checkpoint(tmp_path / "checkpoints")
    assert not (tmp_path / "checkpoints").exists()
    train(graph, batches()[:1])
    with pytest.raises(ValueError, match="keep"):
        graph.save_checkpoint(tmp_path / "checkpoints", keep=-1)


def test_keep_prunes_older_checkpoints(tmp_path):
    _, graph = mlp_graph(stage=2, world=2)
    for b in batches()[:3]:
        graph(*b)
        graph.save_checkpoint(tmp_path, keep=2)
    steps = sorted(p for p in os.listdir(tmp_path) if p.startswith("step-"))
    assert steps == ["step-00000002", "step-00000003"]
    assert (tmp_path / "latest").read_text().strip() == "step-00000003"


def write_manifest(path, manifest):
    """Writes an edited manifest with its checksum made again, as a
    deliberate edit does (docs/checkpoint.md#manifestjson)."""
    manifest = {k: v for k, v in manifest.items() if k != "checksum"}
    rest = json.dumps(manifest, indent=1)[2:].encode() + b"\n"
    with open(path, "wb") as file:
        file.write(b'{\n "checksum": "crc32:%08x",\n' % zlib.crc32(rest) +
                   rest)


def corrupt(path, how):
    """Breaks rank 1's file of the checkpoint at `path`; returns its path."""
    name = "rank-00001-of-00002.safetensors"
    target = os.path.join(path, name)
    if how == "crc":
        manifest_path = os.path.join(path, "manifest.json")
        manifest = json.load(open(manifest_path))
        for entry in manifest["files"]:
            if entry["name"] == name:
                entry["crc32"] = "%08x" % (int(entry["crc32"], 16) ^ 1)
        write_manifest(manifest_path, manifest)
    else:
        size = os.path.getsize(target)
        with open(target, "r+b") as file:
            file.truncate(size - 100)
    return target


@pytest.mark.parametrize("how", ["crc", "truncate"])
def test_a_bad_checkpoint_changes_nothing(saved, tmp_path, how):
    bad = str(tmp_path / "bad")
    shutil.copytree(saved["path"], bad)
    target = corrupt(bad, how)

    model, graph = mlp_graph(stage=2, world=2)
    reference_model, reference = mlp_graph(stage=2, world=2)
    data = models.mlp_batches(3, batch=BATCH, seed=11)
    assert np.array_equal(train(graph, data[:1]), train(reference, data[:1]))
    before = state(model)
    with pytest.raises(zs.Error, match=re.escape(target)) as caught:
        graph.load_checkpoint(bad)
    assert ("CRC-32" if how == "crc" else "truncated") in str(caught.value)
    assert "\n" not in str(caught.value)
    assert graph.steps_run == 1
    assert_same_state(state(model), before)
    # It trains on as the graph that never tried.
    assert np.array_equal(train(graph, data[1:]), train(reference, data[1:]))
    assert_same_state(state(model), state(reference_model))


def test_a_bad_checkpoint_before_the_first_call(saved, tmp_path):
    _, graph = mlp_graph(stage=2, world=2)
    with pytest.raises(zs.Error, match="no such checkpoint directory"):
        graph.load_checkpoint(tmp_path / "missing")
    assert graph.steps_run == 0

    bad = str(tmp_path / "bad")
    shutil.copytree(saved["path"], bad)
    target = corrupt(bad, "crc")
    model, graph = mlp_graph(stage=2, world=2)
    initial = state(model)
    graph.load_checkpoint(bad)  # The manifest opens; files are read later.
    data = batches()[:2]
    with pytest.raises(zs.Error, match=re.escape(target)):
        graph(*data[0])
    # Compiled with the initial values and no step run; the next call
    # trains from them.
    assert graph.steps_run == 0
    assert_same_state(state(model), initial)
    _, fresh = mlp_graph(stage=2, world=2)
    assert np.array_equal(train(graph, data), train(fresh, data))


def test_an_edited_manifest_changes_nothing(saved, tmp_path):
    """The step and data position set together, as a resume at another
    step would need: the manifest's checksum refuses it."""
    edited = str(tmp_path / "edited")
    shutil.copytree(saved["path"], edited)
    path = os.path.join(edited, "manifest.json")
    with open(path, "rb") as file:
        text = file.read()
    text = text.replace(b'"step": %d,' % K, b'"step": 400,').replace(
        b'"next_step": %d,' % K, b'"next_step": 400,')
    with open(path, "wb") as file:
        file.write(text)
    _, line, rest = text.split(b"\n", 2)
    message = ("%s: checksum: the manifest's CRC-32 is %08x, not the %s it "
               "was saved with (edited or corrupt)" % (
                   path, zlib.crc32(rest), line[-10:-2].decode()))

    model, graph = mlp_graph(stage=2, world=2)
    with pytest.raises(zs.Error) as caught:
        graph.load_checkpoint(edited)  # Before the first call.
    assert str(caught.value) == message
    train(graph, batches()[:1])
    before = state(model)
    with pytest.raises(zs.Error) as caught:
        graph.load_checkpoint(edited)
    assert str(caught.value) == message
    assert graph.steps_run == 1
    assert_same_state(state(model), before)


WRITER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {tests!r})
    import models, test_checkpoint as t
    _, graph = t.mlp_graph(stage=2, world=2)
    data = models.mlp_batches(4, batch=t.BATCH, seed=12)
    for step in range(100000):
        graph(*data[step % 4])
        graph.save_checkpoint({directory!r}, keep=1)
        if step == 0:
            print("saved", flush=True)
        if os.path.exists({stop!r}):
            break
""")


def test_loads_while_another_process_saves_and_prunes(tmp_path):
    """A writer saving every step and keeping one: each load takes the
    checkpoint `latest` names, whole, however the saves fall, and leaves a
    usable graph."""
    directory = tmp_path / "checkpoints"
    stop = tmp_path / "stop"
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(
        tests=os.path.dirname(os.path.abspath(__file__)),
        directory=str(directory), stop=str(stop)))
    writer = subprocess.Popen([sys.executable, str(script)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "saved"
        model, graph = mlp_graph(stage=2, world=2)
        train(graph, batches()[:1])
        steps = []
        started = time.time()
        while len(steps) < 20 and time.time() - started < 120:
            info = graph.load_checkpoint(directory)
            assert graph.steps_run == info["step"]
            assert sorted(state(model)) == sorted(model.state_dict())
            steps.append(info["step"])
        assert len(steps) >= 5 and steps == sorted(steps)
    finally:
        stop.touch()
        writer.wait(timeout=60)
    assert writer.returncode == 0


HOLD_LOCK = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(os.path.join(sys.argv[1], "lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.ftruncate(fd, 0)
    os.write(fd, b"%d\\n" % os.getpid())
    print("locked", flush=True)
    sys.stdin.read()
""")


def test_a_second_writer_is_refused(tmp_path):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    _, graph = mlp_graph(stage=2, world=2)
    train(graph, batches()[:1])
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK,
                               str(directory)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(zs.Error) as caught:
            graph.save_checkpoint(directory)
        assert str(caught.value) == (f"{directory} is locked by another "
                                     f"writer (pid {holder.pid})")
        assert sorted(os.listdir(directory)) == ["lock"]
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # The lock dies with its holder; the graph's lock lasts one save, so
    # another process can take it afterwards.
    path = graph.save_checkpoint(directory)
    fd = os.open(os.path.join(directory, "lock"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    assert os.path.isfile(os.path.join(path, "manifest.json"))


MPI_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import zerosbp as zs
    sys.path.insert(0, {tests!r})
    import models, test_checkpoint as t
    _, graph = t.mlp_graph(stage=2, world=2)
    info = graph.load_checkpoint({load!r})
    losses = [float(graph(*b)) for b in t.batches()[t.K:]]
    try:
        graph.save_checkpoint({locked!r})
        refused = None
    except zs.Error as error:
        refused = str(error)
    json.dump(refused, open({out!r} + "/refused%d.json" % zs.rank(), "w"))
    path = graph.save_checkpoint({out!r} + "/checkpoints", keep=1)
    state = graph.model.state_dict()  # Collective: every rank gathers.
    if zs.rank() == 0:
        zs.save(state, {out!r} + "/params")
        json.dump({{"losses": losses, "path": path, "step": info["step"],
                   "steps_run": graph.steps_run}},
                  open({out!r} + "/result.json", "w"))
""")


def test_under_mpi_every_process_loads_and_saves(saved, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    script = tmp_path / "resume.py"
    script.write_text(MPI_SCRIPT.format(
        tests=os.path.dirname(os.path.abspath(__file__)),
        load=saved["dir"], locked=str(locked), out=str(tmp_path)))
    fd = os.open(locked / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"%d\n" % os.getpid())
        done = subprocess.run(
            [sys.executable, "-m", "zerosbp.launch", "-n", "2", str(script)],
            capture_output=True, text=True, timeout=300)
    finally:
        os.close(fd)
    assert done.returncode == 0, done.stdout + done.stderr
    # Rank 0 could not lock; every rank refuses instead of waiting for it.
    refused = [json.loads((tmp_path / f"refused{r}.json").read_text())
               for r in range(2)]
    assert refused == [
        f"{locked} is locked by another writer (pid {os.getpid()})",
        f"{locked}: rank 0 could not take the lock to save"]
    assert sorted(os.listdir(locked)) == ["lock"]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["step"] == K and result["steps_run"] == 2 * K
    assert result["losses"] == [float(l) for l in saved["rest"]]
    assert result["path"] == str(tmp_path / "checkpoints" /
                                 f"step-{2 * K:08d}")
    assert_same_state(zs.load(str(tmp_path / "params")), saved["final"])
    # Rank 0 released the lock, and the save loads back in process.
    model, graph = mlp_graph(stage=2, world=2)
    train(graph, batches()[:1])
    graph.load_checkpoint(tmp_path / "checkpoints")
    assert graph.steps_run == 2 * K
    assert_same_state(state(model), saved["final"])
