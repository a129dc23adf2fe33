"""zs.save / zs.load: a directory of .npy files (one per tensor, the
tensor's name as file name, as zero-run --init and --save use) or a
safetensors file (https://github.com/huggingface/safetensors: an 8-byte
little-endian header size, a JSON header, then the raw little-endian data),
which PyTorch reads with safetensors.torch.load_file."""

import ctypes
import errno
import fcntl
import json
import os
import shutil
import struct
import tempfile

import numpy as np

from . import _distributed, _zerosbp
from .nn.module import Module
from .nn.parameter import Parameter

_SAFETENSORS_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_DTYPE_NAMES = {v: k for k, v in _SAFETENSORS_DTYPES.items()}


def _arrays(obj):
    if isinstance(obj, Module):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise TypeError(f"save takes a state dict or a module, got "
                        f"{type(obj).__name__}")
    out = {}
    for name, value in obj.items():
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"save: bad tensor name {name!r}")
        out[name] = np.ascontiguousarray(
            value.numpy() if isinstance(value, Parameter) else value)
    return out


def save(obj, path):
    """Saves a state dict (name -> array) or a module's state dict. A path
    ending in .safetensors writes one safetensors file; any other path is a
    directory of <name>.npy files. Under zerosbp.launch a module's state
    dict is gathered by every rank (a collective) and written by rank 0; a
    dict is written by each rank that saves it."""
    arrays = _arrays(obj)
    if isinstance(obj, Module) and _distributed.rank() != 0:
        return
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        header, offset = {}, 0
        for name, array in arrays.items():
            dtype = array.dtype.newbyteorder("<") if array.dtype.byteorder \
                == ">" else array.dtype
            if dtype not in _DTYPE_NAMES:
                raise ValueError(f"save: '{name}' has dtype {array.dtype}, "
                                 "which safetensors cannot hold here")
            size = array.size * array.dtype.itemsize
            header[name] = {"dtype": _DTYPE_NAMES[dtype],
                            "shape": list(array.shape),
                            "data_offsets": [offset, offset + size]}
            offset += size
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)  # Data starts 8-byte aligned.
        tmp = path + ".tmp"
        try:
            with open(tmp, "wb") as file:
                file.write(struct.pack("<Q", len(text)))
                file.write(text)
                for array in arrays.values():
                    file.write(array.astype(array.dtype.newbyteorder("<"),
                                            copy=False).tobytes())
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, path)  # Nothing written before is lost.
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)  # No partial file left on a full disk.
            raise
        return
    _save_npy_directory(os.path.normpath(path), arrays)


def _save_npy_directory(path, arrays):
    """Writes the arrays into a hidden sibling directory, flushed, that then
    replaces `path` as a whole, as zero-run --save does, under the same lock
    (docs/runtime.md#files-are-whole-or-absent): a failed save leaves the
    previous directory as it was, and a second saver is refused."""
    parent, name = os.path.split(path)
    parent = parent or "."
    os.makedirs(parent, exist_ok=True)
    with _PathLock(path):
        # Replacing the directory as a whole removes what else it holds:
        # only a saved state dict (.npy files) is replaced.
        if os.path.lexists(path):
            if os.path.islink(path) or not os.path.isdir(path):
                raise _zerosbp.Error(f"{path}: exists and is not a directory")
            for entry in os.scandir(path):
                if not (entry.is_file(follow_symlinks=False)
                        and entry.name.endswith(".npy")):
                    raise _zerosbp.Error(
                        f"{path}: holds '{entry.name}', which is not a saved "
                        "tensor (.npy); not replacing it")
        for entry in os.scandir(parent):  # What killed saves left.
            if entry.name.startswith(f".{name}.partial-"):
                shutil.rmtree(entry.path, ignore_errors=True)
        partial = tempfile.mkdtemp(prefix=f".{name}.partial-", dir=parent)
        try:
            for tensor, array in arrays.items():
                with open(os.path.join(partial, tensor + ".npy"), "wb") as f:
                    np.save(f, array)
                    f.flush()
                    os.fsync(f.fileno())
            _fsync_directory(partial)
            if not os.path.lexists(path):
                os.rename(partial, path)
            elif _exchange(partial, path):
                shutil.rmtree(partial, ignore_errors=True)  # The old one.
            else:
                aside = partial + ".old"
                os.rename(path, aside)
                try:
                    os.rename(partial, path)
                except BaseException:
                    os.rename(aside, path)
                    raise
                shutil.rmtree(aside, ignore_errors=True)
            _fsync_directory(parent)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise


def _fsync_directory(path):
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _exchange(a, b):
    """Swaps two paths in one step (renameat2 RENAME_EXCHANGE); False where
    the system or file system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b),
                 rename_exchange) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(error, os.strerror(error), b)


class _PathLock:
    """runtime/io/DurableFile.h's PathLock: flock on the hidden sibling
    `.<name>.lock`, removed on release."""

    def __init__(self, path):
        self.path = path
        parent, name = os.path.split(path)
        self.lock_file = os.path.join(parent, f".{name}.lock")
        self.descriptor = None

    def __enter__(self):
        while True:
            descriptor = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.pread(descriptor, 31, 0).split(b"\n")[0]
                os.close(descriptor)
                pid = f" (pid {int(holder)})" if holder.isdigit() else ""
                raise _zerosbp.Error(
                    f"{self.path} is locked by another writer{pid}") from None
            # The previous holder removes the file as it releases it.
            held, named = os.fstat(descriptor), None
            try:
                named = os.stat(self.lock_file)
            except FileNotFoundError:
                pass
            if named and (held.st_dev, held.st_ino) == (named.st_dev,
                                                        named.st_ino):
                break
            os.close(descriptor)
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        self.descriptor = descriptor
        return self

    def __exit__(self, *exc):
        os.unlink(self.lock_file)
        os.close(self.descriptor)


def _bad(path, message):
    return _zerosbp.Error(f"{path}: {message}")


# The readers' bounds, as the runtime's (runtime/io/Safetensors.cpp): a
# header over 100 MB is refused before it is read, and no tensor may need
# more than 2^62 bytes, so no size overflows and no length in a corrupt file
# allocates gigabytes. numpy holds at most 32 dimensions.
_MAX_HEADER_BYTES = 100 << 20
_MAX_TENSOR_BYTES = 1 << 62
_MAX_DIMS = 32
_NPY_MAGIC = b"\x93NUMPY"


def _line(error, limit=200):
    """An exception's message on one line, shortened."""
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _show(value, limit=60):
    """A JSON value for a one-line message, shortened."""
    try:
        text = json.dumps(value)
    except (RecursionError, ValueError):
        text = "..."
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _quote(name):
    return f"'{name}'" if name.isprintable() and len(name) <= 100 \
        else _show(name, 100)


def _is_count(value):
    return type(value) is int and value >= 0  # Not bool, not float.


def _tensor_bytes(shape, itemsize):
    """Bytes of a tensor of `shape` (non-negative ints), or None past
    _MAX_TENSOR_BYTES counting the nonzero dimensions only: numpy refuses
    an empty array whose other dimensions overflow too."""
    count = 1
    for dim in shape:
        if dim:
            count *= dim
            if count * max(itemsize, 1) > _MAX_TENSOR_BYTES:
                return None
    return 0 if 0 in shape else count * itemsize


def _read_exactly(file, path, count, what):
    buffer = bytearray(count)
    view, done = memoryview(buffer), 0
    while done < count:
        got = file.readinto(view[done:])
        if not got:
            raise _bad(path, f"truncated while reading {what} ({done} of "
                       f"{count} bytes)")
        done += got
    return buffer


def _safetensors_header(path, text, data_bytes):
    """[(name, dtype, shape, begin, end)] of a safetensors header, every
    entry checked against the data's size; refused as the runtime's reader
    refuses it (runtime/io/Safetensors.cpp), in one line naming the file."""
    try:
        header = json.loads(text.decode("utf-8"))
    except RecursionError:
        raise _bad(path, "header is not JSON (nested too deeply)") from None
    except ValueError as error:  # Not UTF-8, not JSON, too long a number.
        raise _bad(path, f"header is not JSON ({_line(error)})") from None
    if not isinstance(header, dict):
        raise _bad(path, "header is not a JSON object")
    tensors = []
    for name, entry in header.items():
        if name == "__metadata__":
            if not isinstance(entry, dict) or not all(
                    isinstance(v, str) for v in entry.values()):
                raise _bad(path, "__metadata__ is not an object of strings")
            continue
        where = f"tensor {_quote(name)}"
        if not isinstance(entry, dict) or not {
                "dtype", "shape", "data_offsets"} <= entry.keys():
            raise _bad(path, f"{where}: needs dtype, shape and data_offsets")
        dtype = _SAFETENSORS_DTYPES.get(entry["dtype"]) \
            if isinstance(entry["dtype"], str) else None
        if dtype is None:
            raise _bad(path, f"{where}: unsupported dtype "
                       f"{_show(entry['dtype'])}")
        shape = entry["shape"]
        if not isinstance(shape, list):
            raise _bad(path, f"{where}: shape is not an array")
        if not all(_is_count(dim) for dim in shape):
            raise _bad(path, f"{where}: shape {_show(shape)} has a dimension "
                       "that is not a non-negative integer")
        if len(shape) > _MAX_DIMS:
            raise _bad(path, f"{where}: shape has {len(shape)} dimensions, "
                       f"more than numpy's {_MAX_DIMS}")
        size = _tensor_bytes(shape, dtype.itemsize)
        if size is None:
            raise _bad(path, f"{where}: shape {_show(shape)} is too large")
        offsets = entry["data_offsets"]
        if not isinstance(offsets, list) or len(offsets) != 2 or not all(
                _is_count(x) for x in offsets):
            raise _bad(path, f"{where}: data_offsets is not [begin, end]")
        begin, end = offsets
        if not begin <= end <= data_bytes or end - begin != size:
            raise _bad(path, f"{where}: data_offsets [{begin}, {end}] do not "
                       f"fit shape {_show(shape)} of {entry['dtype']} in "
                       f"{data_bytes} data bytes")
        tensors.append((name, dtype, tuple(shape), begin, end))
    # A tensor of no bytes first: it shares its begin with the tensor after
    # it, which it does not overlap.
    by_offset = sorted(tensors, key=lambda tensor: tensor[3:])
    for before, after in zip(by_offset, by_offset[1:]):
        if after[3] < before[4]:
            raise _bad(path, f"tensors {_quote(before[0])} and "
                       f"{_quote(after[0])} overlap")
    return tensors


def _load_safetensors(path):
    """Reads the 8-byte size and the header first (nothing past a bounded
    header is read before it is checked), then each tensor into its
    array."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size < 8:
            raise _bad(path, f"truncated: {size} bytes, too short for a "
                       "safetensors header")
        (header_bytes,) = struct.unpack("<Q", _read_exactly(
            file, path, 8, "the header size"))
        if header_bytes > size - 8:
            raise _bad(path, f"header of {header_bytes} bytes runs past the "
                       f"end of the file ({size} bytes)")
        if header_bytes > _MAX_HEADER_BYTES:
            raise _bad(path, f"header of {header_bytes} bytes is over the "
                       f"limit of {_MAX_HEADER_BYTES} bytes")
        text = _read_exactly(file, path, header_bytes, "the header")
        data_start = 8 + header_bytes
        out = {}
        for name, dtype, shape, begin, end in _safetensors_header(
                path, bytes(text), size - data_start):
            file.seek(data_start + begin)
            data = _read_exactly(file, path, end - begin,
                                 f"tensor {_quote(name)}")
            out[name] = np.frombuffer(data, dtype=dtype).reshape(shape)
    return out


def _load_npy(path):
    """One .npy file, refused in one line naming it when malformed: the
    header is numpy's reader's; the shape is checked against the file's
    size before anything is allocated (np.load accepts negative
    dimensions and sizes that overflow)."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        start = file.read(8)
        if len(start) < 8 or start[:6] != _NPY_MAGIC:
            raise _bad(path, "not a .npy file")
        version = (start[6], start[7])
        readers = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0,
                   (3, 0): lambda f: np.lib.format._read_array_header(
                       f, (3, 0))}
        if version not in readers:
            raise _bad(path, f"unsupported .npy version {version[0]}."
                       f"{version[1]}")
        try:
            shape, fortran, dtype = readers[version](file)
        except Exception as error:  # numpy's message says what is wrong.
            raise _bad(path, f"malformed .npy header ({_line(error)})") \
                from None
        if dtype.hasobject:
            raise _bad(path, f".npy dtype {_line(dtype.descr, 60)} holds "
                       "Python objects, which would need pickle")
        if not all(_is_count(dim) for dim in shape):
            raise _bad(path, f"malformed .npy shape {_line(shape, 60)}")
        if len(shape) > _MAX_DIMS:
            raise _bad(path, f".npy shape has {len(shape)} dimensions, more "
                       f"than numpy's {_MAX_DIMS}")
        nbytes = _tensor_bytes(shape, dtype.itemsize)
        if nbytes is None:
            raise _bad(path, f".npy shape {_line(shape, 60)} is too large")
        available = size - file.tell()
        if available < nbytes:
            raise _bad(path, f"truncated .npy data ({available} bytes, "
                       f"expected {nbytes})")
        if dtype.itemsize == 0:
            return np.empty(shape, dtype)
        array = np.frombuffer(_read_exactly(file, path, nbytes, "the data"),
                              dtype=dtype)
    return array.reshape(shape[::-1]).T if fortran else array.reshape(shape)


def load(path):
    """Loads what save wrote: name -> numpy array. A malformed file raises
    zerosbp.Error naming it."""
    path = os.fspath(path)
    try:
        if path.endswith(".safetensors"):
            return _load_safetensors(path)
        if not os.path.isdir(path):
            raise _bad(path, "no such directory of .npy files")
        return {entry[:-4]: _load_npy(os.path.join(path, entry))
                for entry in sorted(os.listdir(path))
                if entry.endswith(".npy")}
    except OSError as error:
        # A missing or unreadable file: one line naming it, like the rest.
        raise _bad(error.filename or path,
                   f"cannot read ({error.strerror or error})") from None
