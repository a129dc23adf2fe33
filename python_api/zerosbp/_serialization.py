"""zs.save / zs.load: a directory of .npy files (one per tensor, the
tensor's name as file name, as zero-run --init and --save use) or a
safetensors file (https://github.com/huggingface/safetensors: an 8-byte
little-endian header size, a JSON header, then the raw little-endian data),
which PyTorch reads with safetensors.torch.load_file."""

import json
import os
import struct

import numpy as np

from . import _zerosbp

_SAFETENSORS_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_DTYPE_NAMES = {v: k for k, v in _SAFETENSORS_DTYPES.items()}


def _arrays(obj):
    from .nn.module import Module
    from .nn.parameter import Parameter
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
    directory of <name>.npy files."""
    arrays = _arrays(obj)
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
        with open(tmp, "wb") as file:
            file.write(struct.pack("<Q", len(text)))
            file.write(text)
            for array in arrays.values():
                file.write(array.astype(array.dtype.newbyteorder("<"),
                                        copy=False).tobytes())
        os.replace(tmp, path)  # Nothing written before is lost on failure.
        return
    os.makedirs(path, exist_ok=True)
    for name, array in arrays.items():
        np.save(os.path.join(path, name + ".npy"), array)


def _bad(path, message):
    return _zerosbp.Error(f"{path}: {message}")


def _load_safetensors(path):
    with open(path, "rb") as file:
        blob = file.read()
    if len(blob) < 8:
        raise _bad(path, "too short for a safetensors header")
    (size,) = struct.unpack("<Q", blob[:8])
    if size > len(blob) - 8:
        raise _bad(path, f"header of {size} bytes runs past the end of the "
                   f"file ({len(blob)} bytes)")
    try:
        header = json.loads(blob[8:8 + size])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _bad(path, f"header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise _bad(path, "header is not a JSON object")
    data = memoryview(blob)[8 + size:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = _SAFETENSORS_DTYPES[entry["dtype"]]
            shape = tuple(int(d) for d in entry["shape"])
            begin, end = (int(x) for x in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise _bad(path, f"tensor '{name}': bad or unsupported entry "
                       f"{entry!r}") from None
        count = int(np.prod(shape)) if shape else 1
        if any(d < 0 for d in shape) or not 0 <= begin <= end <= len(data) \
                or end - begin != count * dtype.itemsize:
            raise _bad(path, f"tensor '{name}': data_offsets [{begin}, "
                       f"{end}] do not fit shape {list(shape)} of "
                       f"{entry['dtype']} in {len(data)} data bytes")
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(
            shape).copy()
    return out


def load(path):
    """Loads what save wrote: name -> numpy array."""
    path = os.fspath(path)
    if path.endswith(".safetensors"):
        return _load_safetensors(path)
    if not os.path.isdir(path):
        raise _bad(path, "no such directory of .npy files")
    out = {}
    for entry in sorted(os.listdir(path)):
        if entry.endswith(".npy"):
            try:
                out[entry[:-4]] = np.load(os.path.join(path, entry),
                                          allow_pickle=False)
            except ValueError as error:
                raise _bad(os.path.join(path, entry), str(error)) from None
    return out
