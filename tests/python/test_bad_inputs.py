"""Bad inputs to the Python API: load_state_dict is all or nothing, a
malformed safetensors or .npy file is one zerosbp.Error line naming it,
and the API has zero-run's limit on ranks. Bad inputs to the tools: a FIFO,
a character device or a directory where zero-run, zero-sim or
zero-checkpoint read a file is one line naming it."""

import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import zerosbp as zs

import models


# -- load_state_dict ---------------------------------------------------------

def shifted(state):
    return {name: value + 1 for name, value in state.items()}


@pytest.mark.parametrize("key, value, message", [
    ("fc2.bias", np.zeros(11, np.float32),
     "load_state_dict: 'fc2.bias' has shape (10,), the file has (11,)"),
    ("fc2.bias", np.array(["x"] * 10),
     "load_state_dict: 'fc2.bias' is not a float array (could not convert "
     "string to float: 'x')"),
], ids=["shape", "strings"])
@pytest.mark.parametrize("compiled", [False, True])
def test_load_state_dict_with_one_bad_key_changes_nothing(key, value,
                                                          message, compiled):
    """The bad key is the last one: every key before it is good and was
    written before the check, before this was all or nothing."""
    zs.manual_seed(3)
    model = models.Mlp(hidden=8)
    if compiled:
        graph = models.train_graph(model, zs.optim.SGD(model.parameters(),
                                                       lr=0.1),
                                   stage=3, world=2)
        graph(*models.mlp_batches(1, batch=8)[0])
    before = model.state_dict()
    new = shifted(before)
    new[key] = value
    with pytest.raises(ValueError) as error:
        model.load_state_dict(new)
    assert str(error.value) == message
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name])


def test_load_state_dict_undoes_what_it_set_when_the_graph_refuses(
        monkeypatch):
    zs.manual_seed(3)
    model = models.Mlp(hidden=8)
    graph = models.train_graph(model, zs.optim.SGD(model.parameters(),
                                                   lr=0.1), stage=2, world=2)
    batch = models.mlp_batches(1, batch=8)[0]
    graph(*batch)
    before = model.state_dict()
    expected = graph(*batch)  # The step that follows these values.
    model.load_state_dict(before)
    set_parameter, calls = graph._set_parameter, []

    def refuse_the_third(name, value):
        calls.append(name)
        if len(calls) == 3:
            raise zs.Error(f"rank 1: cannot set '{name}'")
        set_parameter(name, value)

    monkeypatch.setattr(graph, "_set_parameter", refuse_the_third)
    with pytest.raises(zs.Error) as error:
        model.load_state_dict(shifted(before))
    assert str(error.value) == "rank 1: cannot set 'fc2.weight'"
    # Two set, the third refused, all three set back.
    assert calls == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.weight",
                     "fc1.bias", "fc1.weight"]
    monkeypatch.undo()
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name])
        np.testing.assert_array_equal(
            dict(model.named_parameters())[name]._data, before[name])
    assert graph(*batch) == expected


# -- zs.load: malformed safetensors -------------------------------------------

F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


def safetensors(header, data=b"\0" * 8):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize("blob, message", [
    # Sizes whose product overflows 64 bits, or more elements than the data.
    (safetensors({"w": dict(F32, shape=[2**32, 2**32, 2**32])}),
     "tensor 'w': shape [4294967296, 4294967296, 4294967296] is too large"),
    (safetensors({"w": dict(F32, shape=[2**64 + 2])}),
     "tensor 'w': shape [18446744073709551618] is too large"),
    (safetensors({"w": dict(F32, shape=[0, 2**62], data_offsets=[0, 0])}),
     "tensor 'w': shape [0, 4611686018427387904] is too large"),
    (safetensors({"w": dict(F32, shape=[1000], data_offsets=[0, 4000])}),
     "tensor 'w': data_offsets [0, 4000] do not fit shape [1000] of F32 in "
     "8 data bytes"),
    (safetensors({"w": dict(F32, shape=[1] * 33, data_offsets=[0, 4])}),
     "tensor 'w': shape has 33 dimensions, more than numpy's 32"),
    # Deep nesting (a RecursionError in json), numbers json cannot read.
    (safetensors(b'{"w":' + b"[" * 100000 + b"]" * 100000 + b"}"),
     "header is not JSON (nested too deeply)"),
    (safetensors(b'{"w":{"dtype":"F32","shape":[' + b"9" * 5000 +
                 b'],"data_offsets":[0,8]}}'),
     "header is not JSON (Exceeds the limit (4300 digits) for integer string "
     "conversion: value has 5000 digits; use sys.set_int_max_str_digits() "
     "to increase the limit)"),
    (safetensors(b'{"w\xff":1}'),
     "header is not JSON ('utf-8' codec can't decode byte 0xff in position "
     "3: invalid start byte)"),
    (safetensors([F32]), "header is not a JSON object"),
    # Entries that are not objects, bad dtypes, dimensions and offsets.
    (safetensors({"w": [1, 2]}),
     "tensor 'w': needs dtype, shape and data_offsets"),
    (safetensors({"w": {"dtype": "F32"}}),
     "tensor 'w': needs dtype, shape and data_offsets"),
    (safetensors({"w": dict(F32, dtype="BF16")}),
     "tensor 'w': unsupported dtype \"BF16\""),
    (safetensors({"w": dict(F32, dtype=[["F32"]])}),
     "tensor 'w': unsupported dtype [[\"F32\"]]"),
    (safetensors({"w": dict(F32, shape=2)}),
     "tensor 'w': shape is not an array"),
    (safetensors({"w": dict(F32, shape=[-2])}),
     "tensor 'w': shape [-2] has a dimension that is not a non-negative "
     "integer"),
    (safetensors({"w": dict(F32, shape=[2.0])}),
     "tensor 'w': shape [2.0] has a dimension that is not a non-negative "
     "integer"),
    (safetensors({"w": dict(F32, data_offsets=[8, 0])}),
     "tensor 'w': data_offsets [8, 0] do not fit shape [2] of F32 in 8 data "
     "bytes"),
    (safetensors({"w": dict(F32, data_offsets=[0, 8, 8])}),
     "tensor 'w': data_offsets is not [begin, end]"),
    (safetensors({"w": dict(F32, data_offsets=[0, -8])}),
     "tensor 'w': data_offsets is not [begin, end]"),
    (safetensors({"a": F32, "b": dict(F32, shape=[1],
                                      data_offsets=[4, 8])}),
     "tensors 'a' and 'b' overlap"),
    (safetensors({"__metadata__": {"step": 1}, "w": F32}),
     "__metadata__ is not an object of strings"),
    (safetensors({"a\nb": dict(F32, dtype="X")}),
     "tensor \"a\\nb\": unsupported dtype \"X\""),
    (b"\1\0\0", "truncated: 3 bytes, too short for a safetensors header"),
    (struct.pack("<Q", 1 << 40) + b"{}",
     "header of 1099511627776 bytes runs past the end of the file (10 "
     "bytes)"),
], ids=["overflow", "past-u64", "empty-overflow", "more-than-data",
        "33-dims", "deep", "long-number", "not-utf8", "not-object",
        "entry-not-object", "entry-missing-keys", "bf16", "dtype-not-string",
        "shape-not-array", "negative-dim", "float-dim", "reversed-offsets",
        "three-offsets", "negative-offset", "overlap", "metadata",
        "name-with-newline", "short-file", "header-past-end"])
def test_malformed_safetensors_is_one_error_naming_the_file(tmp_path, blob,
                                                            message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(zs.Error) as error:
        zs.load(str(path))
    assert str(error.value) == f"{path}: {message}"


def test_a_header_over_100_mb_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.safetensors"
    size = (100 << 20) + 1
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", size))
        file.truncate(8 + size)  # Sparse: nothing is there to read.
    with pytest.raises(zs.Error) as error:
        zs.load(str(path))
    assert str(error.value) == (f"{path}: header of {size} bytes is over "
                                "the limit of 104857600 bytes")


def test_empty_tensors_with_huge_dimensions_still_load(tmp_path):
    path = tmp_path / "empty.safetensors"
    path.write_bytes(safetensors(
        {"e": dict(F32, shape=[0, 2**40], data_offsets=[8, 8]), "w": F32}))
    loaded = zs.load(str(path))
    assert loaded["e"].shape == (0, 2**40)
    np.testing.assert_array_equal(loaded["w"], [0, 0])


# -- zs.load: malformed .npy files in a directory ------------------------------

def npy(shape, descr="<f4", data=b"", version=(1, 0)):
    header = (f"{{'descr': {descr!r}, 'fortran_order': False, "
              f"'shape': {shape}, }}").encode("latin1")
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack("<H", len(header)) \
        + header + data


@pytest.mark.parametrize("blob, message", [
    # np.load reads this one as shape (4,).
    (npy("(-1,)", data=b"\0" * 16), "malformed .npy shape (-1,)"),
    (npy("(4611686018427387904, 4)", data=b"\0" * 16),
     ".npy shape (4611686018427387904, 4) is too large"),
    (npy("(4294967296, 4294967296, 4)"),
     ".npy shape (4294967296, 4294967296, 4) is too large"),
    (npy("(" + "1, " * 33 + ")", data=b"\0" * 4),
     ".npy shape has 33 dimensions, more than numpy's 32"),
    (npy("(8,)", data=b"\0" * 16), "truncated .npy data (16 bytes, expected "
     "32)"),
    (npy("(1,)", descr="|O", data=b"\0" * 8),
     ".npy dtype [('', '|O')] holds Python objects, which would need "
     "pickle"),
    (npy("(1,)", data=b"\0" * 4, version=(9, 0)),
     "unsupported .npy version 9.0"),
    (npy("(1,)", descr="zz", data=b"\0" * 4),
     "malformed .npy header (descr is not a valid dtype descriptor: 'zz')"),
    (b"PK\3\4 not a .npy file", "not a .npy file"),
    (b"", "not a .npy file"),
], ids=["negative-dim", "huge", "overflow", "33-dims", "truncated", "object",
        "version", "descr", "zip", "empty"])
def test_malformed_npy_is_one_error_naming_the_file(tmp_path, blob, message):
    (tmp_path / "params").mkdir()
    np.save(tmp_path / "params" / "a.npy", np.ones(3, np.float32))
    path = tmp_path / "params" / "b.npy"
    path.write_bytes(blob)
    with pytest.raises(zs.Error) as error:
        zs.load(str(tmp_path / "params"))
    assert str(error.value) == f"{path}: {message}"


def test_a_deeply_nested_npy_header_is_one_error(tmp_path):
    (tmp_path / "params").mkdir()
    path = tmp_path / "params" / "b.npy"
    path.write_bytes(npy("(" * 3000 + ")" * 3000))
    with pytest.raises(zs.Error) as error:
        zs.load(str(tmp_path / "params"))
    text = str(error.value)
    assert text.startswith(f"{path}: malformed .npy header (Cannot parse "
                           "header: ")
    assert "\n" not in text and len(text) < len(str(path)) + 240


def test_npy_files_load_as_np_load_reads_them(tmp_path):
    arrays = {"f": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
              "big_endian": np.arange(4, dtype=">i4"),
              "empty": np.zeros((0, 5), np.float16),
              "scalar": np.float32(2.5)}
    for name, array in arrays.items():
        np.save(tmp_path / f"{name}.npy", array)
    loaded = zs.load(str(tmp_path))
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype
        np.testing.assert_array_equal(loaded[name], array)
        loaded[name][...] = 0  # Writable, as np.load's arrays are.


# -- one limit on ranks --------------------------------------------------------

def test_the_api_has_zero_runs_limit_on_ranks(tmp_path):
    limit = zs._zerosbp.MAX_RANKS
    assert limit == 16384
    done = subprocess.run([os.environ["ZEROSBP_RUN"], "m.zplan",
                           f"--ranks={limit + 1}"], capture_output=True,
                          text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        "zero-run: --ranks: expected an integer in [1, 16384], got '16385'")

    with pytest.raises(ValueError) as error:
        zs.placement("cpu", ranks=range(limit + 1))
    assert str(error.value) == (
        "placement: expected a number of ranks in [1, 16384], got 16385")
    with pytest.raises(ValueError) as error:
        zs.placement("cpu", ranks=range(10**12))  # Not built as a list.
    assert str(error.value) == (
        "placement: expected a number of ranks in [1, 16384], got "
        "1000000000000")
    assert zs.placement("cuda", ranks=range(limit)).world == limit

    # A graph's world, whatever MPI gives it.
    with pytest.raises(zs.Error) as error:
        zs._zerosbp.GraphCapture("G", limit + 1)
    assert str(error.value) == (
        "world: expected a number of ranks in [1, 16384], got 16385")

    script = tmp_path / "train.py"
    script.write_text("")
    done = subprocess.run([sys.executable, "-m", "zerosbp.launch", "-n",
                           str(limit + 1), str(script)],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "python3 -m zerosbp.launch: error: -n: expected an integer in "
        "[1, 16384], got '16385'")


def test_a_missing_file_is_a_zerosbp_error(tmp_path):
    missing = tmp_path / "absent.safetensors"
    with pytest.raises(zs.Error) as caught:
        zs.load(missing)
    assert str(caught.value) == (f"{missing}: cannot read (No such file or "
                                 "directory)")


# -- the tools: files that are not regular files -------------------------------
# A FIFO, a character device (or a link to one) or a directory where a file
# is meant is one line naming it, never a read that does not end
# (docs/runtime.md#input-files). The tests never open a FIFO themselves,
# and every tool runs under a timeout.

def tool(variable, *args):
    done = subprocess.run([os.environ[variable], *map(str, args)],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


NOT_REGULAR = {"fifo": "a FIFO", "dev-zero": "a character device",
               "link-to-dev-zero": "a character device",
               "directory": "a directory"}


def not_regular(path, kind):
    """Makes `path` a file of `kind` (a key of NOT_REGULAR); returns the
    path to give a tool (/dev/zero itself for "dev-zero")."""
    if kind == "dev-zero":
        return "/dev/zero"
    if os.path.lexists(path):
        os.remove(path)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-dev-zero":
        os.symlink("/dev/zero", path)
    else:
        os.mkdir(path)
    return str(path)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A world-1 plan, its saved parameters (`init`) and one step of data
    (`data`)."""
    base = tmp_path_factory.mktemp("tiny")
    plan = base / "m.zplan"
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--preset=tiny",
                    "--world=1", "--report=none", "-o", str(plan)],
                   check=True)
    code, _, err = tool("ZEROSBP_RUN", plan, "--steps=1", "--quiet",
                        "--save", base / "init")
    assert code == 0, err
    (base / "data").mkdir()
    for name in ["tokens", "labels"]:
        np.save(base / "data" / f"{name}.npy", np.zeros((1, 1, 32), np.int64))
    return base


SIM = ["--topology", "nodes=1,ranks_per_node=1,intra=100GB/s,inter=10GB/s,"
       "latency=5us"]


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_plan_that_is_not_a_file_is_one_line(tmp_path, tiny, kind):
    path = not_regular(tmp_path / "m.zplan", kind)
    what = NOT_REGULAR[kind]
    assert tool("ZEROSBP_RUN", path, "--steps=1") == (
        1, "", f"zero-run: {path}: is {what}, not the plan\n")
    assert tool("ZEROSBP_SIM", path, *SIM, "--device=h100") == (
        1, "", f"zero-sim: {path}: is {what}, not the plan\n")
    path = not_regular(tmp_path / "device.json", kind)
    assert tool("ZEROSBP_SIM", tiny / "m.zplan", *SIM, "--device-file",
                path) == (
        1, "", f"zero-sim: {path}: is {what}, not the device model\n")


@pytest.mark.parametrize("kind", ["fifo", "link-to-dev-zero", "directory"])
@pytest.mark.parametrize("flag, name", [("--init", "wte.weight"),
                                        ("--data", "tokens")])
def test_an_npy_file_that_is_not_a_file_is_one_line(tmp_path, tiny, kind,
                                                   flag, name):
    directory = tmp_path / flag[2:]
    shutil.copytree(tiny / flag[2:], directory)
    path = not_regular(directory / f"{name}.npy", kind)
    assert tool("ZEROSBP_RUN", tiny / "m.zplan", "--steps=1", flag,
                directory) == (
        1, "", f"zero-run: {path}: is {NOT_REGULAR[kind]}, not a .npy file\n")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-to-dev-zero"])
def test_a_directory_flag_given_a_file_is_one_line(tmp_path, tiny, kind):
    path = not_regular(tmp_path / "dir", kind)
    plan = tiny / "m.zplan"
    for flag, name in [("--init", "wte.weight"), ("--data", "tokens")]:
        assert tool("ZEROSBP_RUN", plan, "--steps=1", flag, path) == (
            1, "", f"zero-run: {path}/{name}.npy: cannot open a .npy file "
            "(Not a directory)\n")
    assert tool("ZEROSBP_RUN", plan, "--steps=1", "--resume", path) == (
        1, "", f"zero-run: {path}: no such checkpoint directory\n")
    for command in [["inspect", path],
                    ["to-fp32", path, tmp_path / "out.safetensors"]]:
        assert tool("ZEROSBP_CHECKPOINT", *command) == (
            1, "", f"zero-checkpoint: {path}: no such checkpoint directory\n")


def test_an_npy_file_is_read_as_its_header_states(tmp_path, tiny):
    """The data the header's shape needs, which the file must hold: a
    header stating 2^40 elements over 16 bytes is refused by its size,
    before anything is allocated."""
    init = tmp_path / "init"
    shutil.copytree(tiny / "init", init)
    path = init / "wte.weight.npy"
    path.write_bytes(npy(f"({2**40},)", data=b"\0" * 16))
    assert tool("ZEROSBP_RUN", tiny / "m.zplan", "--steps=1", "--init",
                init) == (
        1, "", f"zero-run: {path}: truncated .npy data (16 bytes, expected "
        f"{4 * 2**40})\n")


# -- the tools: an output over an input ----------------------------------------
# Refused in one line before anything is written
# (docs/runtime.md#files-are-whole-or-absent; zero-run's cases are in
# test_zero_run_flags.py and tests/integration/partial_writes.py).

def test_zero_sim_writes_no_report_over_its_inputs(tmp_path, tiny):
    plan = tiny / "m.zplan"
    device = tmp_path / "device.json"
    device.write_text('{"name": "x"}')
    before = plan.read_bytes()
    assert tool("ZEROSBP_SIM", plan, *SIM, "--device=h100", "--report-file",
                plan) == (
        1, "", f"zero-sim: --report-file {plan} and the plan {plan} are "
        "the same path\n")
    assert tool("ZEROSBP_SIM", plan, *SIM, "--device-file", device,
                "--report-file", device) == (
        1, "", f"zero-sim: --report-file {device} and --device-file {device} "
        "are the same path\n")
    assert plan.read_bytes() == before
    assert device.read_text() == '{"name": "x"}'


def test_to_fp32_writes_nothing_over_the_checkpoint(tmp_path, tiny):
    ck = tmp_path / "ck"
    code, _, err = tool("ZEROSBP_RUN", tiny / "m.zplan", "--steps=1",
                        "--quiet", "--checkpoint-dir", ck)
    assert code == 0, err
    step = ck / "step-00000001"
    before = {path: path.read_bytes() for path in ck.rglob("*")
              if path.is_file()}
    (tmp_path / "link").symlink_to(step)
    for given, out, message in [
            (ck, step / "manifest.json", f"the output {step}/manifest.json "
             f"is inside the checkpoint {ck}"),
            (ck, ck, f"the output {ck} and the checkpoint {ck} are the same "
             "path"),
            (step, tmp_path, f"the checkpoint {step} is inside the output "
             f"{tmp_path}"),
            (tmp_path / "link", step / "x.safetensors",
             f"the output {step}/x.safetensors is inside the checkpoint "
             f"{tmp_path}/link")]:
        assert tool("ZEROSBP_CHECKPOINT", "to-fp32", given, out) == (
            1, "", f"zero-checkpoint: {message}\n")
    assert {path: path.read_bytes() for path in ck.rglob("*")
            if path.is_file()} == before
    # Beside the step converted, not in it.
    code, _, err = tool("ZEROSBP_CHECKPOINT", "to-fp32", step,
                        ck / "params.safetensors")
    assert code == 0, err
    # The step `latest` names is a link to a directory elsewhere.
    moved = tmp_path / "moved"
    step.rename(moved)
    step.symlink_to(moved)
    assert tool("ZEROSBP_CHECKPOINT", "to-fp32", ck,
                moved / "x.safetensors") == (
        1, "", f"zero-checkpoint: the output {moved}/x.safetensors is inside "
        f"the checkpoint {step}\n")
