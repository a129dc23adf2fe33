"""zs.save to a directory of .npy files is whole or absent, as zero-run
--save (docs/runtime.md#files-are-whole-or-absent): it replaces the
directory as a whole, a failed save leaves the previous one, and a
directory holding other files or locked by another writer is refused."""

import errno
import fcntl
import os

import numpy as np
import pytest

import zerosbp as zs


def snapshot(directory):
    return {name: (directory / name).read_bytes()
            for name in sorted(os.listdir(directory))}


def test_save_replaces_the_directory_as_a_whole(tmp_path):
    path = tmp_path / "ckpt"
    zs.save({"a": np.ones(3), "b": np.zeros(2)}, str(path))
    zs.save({"a": np.full(3, 2.0)}, str(path))
    assert sorted(os.listdir(path)) == ["a.npy"]
    np.testing.assert_array_equal(zs.load(str(path))["a"], np.full(3, 2.0))
    assert os.listdir(tmp_path) == ["ckpt"]  # No lock, no temporary.


def test_failed_save_leaves_the_previous_directory(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    zs.save({"a": np.ones(3), "b": np.zeros(2)}, str(path))
    before = snapshot(path)
    real, calls = np.save, []

    def full_disk(file, array):
        calls.append(array)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(file, array)

    monkeypatch.setattr(np, "save", full_disk)
    with pytest.raises(OSError, match="No space left on device"):
        zs.save({"a": np.full(3, 2.0), "b": np.ones(2)}, str(path))
    assert snapshot(path) == before
    assert os.listdir(tmp_path) == ["ckpt"]


def test_save_refuses_a_directory_holding_other_files(tmp_path):
    path = tmp_path / "ckpt"
    path.mkdir()
    (path / "notes.txt").write_text("mine")
    with pytest.raises(zs.Error) as error:
        zs.save({"a": np.ones(3)}, str(path))
    assert str(error.value) == (f"{path}: holds 'notes.txt', which is not a "
                                "saved tensor (.npy); not replacing it")
    assert os.listdir(path) == ["notes.txt"]


def test_second_writer_is_refused(tmp_path):
    path = tmp_path / "ckpt"
    with open(tmp_path / ".ckpt.lock", "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        holder.write(f"{os.getpid()}\n")
        holder.flush()
        with pytest.raises(zs.Error) as error:
            zs.save({"a": np.ones(3)}, str(path))
    assert str(error.value) == \
        f"{path} is locked by another writer (pid {os.getpid()})"
    assert not path.exists()
