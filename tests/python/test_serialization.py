"""zs.save / zs.load: .npy directories and safetensors files."""

import json
import struct

import numpy as np
import pytest

import zerosbp as zs

import models


def sample():
    rng = np.random.default_rng(0)
    return {"a.weight": rng.standard_normal((3, 5)).astype(np.float32),
            "a.bias": rng.standard_normal(5).astype(np.float32),
            "ids": np.arange(6, dtype=np.int64).reshape(2, 3),
            "half": np.linspace(-1, 1, 7).astype(np.float16)}


def test_safetensors_round_trip(tmp_path):
    path = tmp_path / "model.safetensors"
    zs.save(sample(), str(path))
    loaded = zs.load(str(path))
    assert sorted(loaded) == sorted(sample())
    for name, value in sample().items():
        assert loaded[name].dtype == value.dtype
        np.testing.assert_array_equal(loaded[name], value)


def test_safetensors_layout_follows_the_spec(tmp_path):
    """Parsed by hand: u64 LE header size, JSON header, aligned data."""
    path = tmp_path / "model.safetensors"
    zs.save(sample(), str(path))
    blob = path.read_bytes()
    (size,) = struct.unpack("<Q", blob[:8])
    assert (8 + size) % 8 == 0
    header = json.loads(blob[8:8 + size])
    assert header["a.weight"]["dtype"] == "F32"
    assert header["a.weight"]["shape"] == [3, 5]
    assert header["ids"]["dtype"] == "I64"
    assert header["half"]["dtype"] == "F16"
    begin, end = header["a.bias"]["data_offsets"]
    data = blob[8 + size:]
    np.testing.assert_array_equal(
        np.frombuffer(data[begin:end], "<f4"), sample()["a.bias"])
    assert max(e["data_offsets"][1] for e in header.values()) == len(data)


@pytest.mark.parametrize("corrupt, message", [
    (lambda b: b[:4], "too short"),
    (lambda b: struct.pack("<Q", 1 << 40) + b[8:], "runs past the end"),
    (lambda b: b[:8] + b"\xff" + b[9:], "not JSON"),
    (lambda b: b[:-4], "do not fit"),
])
def test_corrupt_safetensors_is_an_error(tmp_path, corrupt, message):
    path = tmp_path / "model.safetensors"
    zs.save(sample(), str(path))
    path.write_bytes(corrupt(path.read_bytes()))
    with pytest.raises(zs.Error, match=message):
        zs.load(str(path))


def test_npy_directory_round_trip(tmp_path):
    zs.save(sample(), str(tmp_path / "ckpt"))
    assert (tmp_path / "ckpt" / "a.weight.npy").exists()
    loaded = zs.load(str(tmp_path / "ckpt"))
    for name, value in sample().items():
        np.testing.assert_array_equal(loaded[name], value)


def test_trained_state_round_trips_into_a_new_graph(tmp_path):
    """Save after training, load into a fresh model and a fresh graph:
    training continues from the same parameters (optimizer state is new)."""
    zs.manual_seed(3)
    model = models.Mlp(hidden=32)
    graph = models.train_graph(model, zs.optim.SGD(model.parameters(),
                                                   lr=0.1), stage=3, world=2)
    batches = models.mlp_batches(3, batch=8)
    for batch in batches[:2]:
        graph(*batch)
    zs.save(model, str(tmp_path / "mlp.safetensors"))
    expected = graph(*batches[2])

    zs.manual_seed(99)
    fresh = models.Mlp(hidden=32)
    fresh.load_state_dict(zs.load(str(tmp_path / "mlp.safetensors")))
    graph2 = models.train_graph(fresh, zs.optim.SGD(fresh.parameters(),
                                                    lr=0.1), stage=1, world=2)
    assert graph2(*batches[2]) == expected


def test_load_state_dict_into_a_running_graph():
    zs.manual_seed(3)
    model = models.Mlp(hidden=32)
    graph = models.train_graph(model, zs.optim.SGD(model.parameters(),
                                                   lr=0.1), stage=2, world=2)
    batch = models.mlp_batches(1, batch=8)[0]
    start = {k: v.copy() for k, v in model.state_dict().items()}
    first = graph(*batch)
    model.load_state_dict(start)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, start[name])
    assert graph(*batch) == first  # SGD has no state: the same step again.
