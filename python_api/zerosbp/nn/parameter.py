"""Parameters: numpy arrays owned by modules, bound to a graph once it is
compiled (then their values live in the graph's ranks)."""

import numpy as np

from .. import _trace
from .. import sbp as _sbp
from .._placement import placement as _Placement
from .._tensor import Tensor


def _sbp_text(sbp):
    return "[" + ", ".join(repr(s) for s in sbp) + "]"


def global_layout(placement, sbp, shape, what):
    """The SBP list `sbp` gives a parameter of `shape` on `placement`, as a
    tuple with one entry per hierarchy axis; `what` names the parameter in
    errors."""
    if not isinstance(placement, _Placement):
        raise TypeError(f"to_global: placement must be a zerosbp.placement, "
                        f"got {type(placement).__name__}")
    if isinstance(sbp, _sbp.sbp):
        sbp = [sbp]
    if not isinstance(sbp, (list, tuple)):
        raise TypeError(
            f"to_global: sbp must be a list of zerosbp.sbp values, one per "
            f"hierarchy axis, got {type(sbp).__name__}")
    for entry in sbp:
        if not isinstance(entry, _sbp.sbp):
            raise TypeError(
                f"to_global: sbp entries are zerosbp.sbp values "
                f"(sbp.broadcast, sbp.split(dim)), got {entry!r}")
    sbp = tuple(sbp)
    if len(sbp) != placement.ndim:
        raise ValueError(
            f"to_global: {what}: sbp {_sbp_text(sbp)} has {len(sbp)} "
            f"entries but the placement has {placement.ndim} hierarchy axes "
            f"{list(placement.hierarchy)}; give one per axis")
    parts = list(shape)  # What each axis cuts: the earlier axes' parts.
    for axis, (entry, size) in enumerate(zip(sbp, placement.hierarchy)):
        if entry.kind == "partial_sum":
            raise ValueError(
                f"to_global: {what}: sbp {_sbp_text(sbp)} is partial on "
                f"axis {axis}; a parameter is broadcast or split")
        if entry.kind != "split":
            continue
        if entry.dim >= len(shape):
            raise ValueError(
                f"to_global: {what}: sbp {_sbp_text(sbp)} splits dim "
                f"{entry.dim} on axis {axis}, out of range for "
                f"{len(shape)} dims")
        if parts[entry.dim] % size:
            raise ValueError(
                f"to_global: {what}: sbp {_sbp_text(sbp)} cuts dim "
                f"{entry.dim} ({parts[entry.dim]}) into {size} parts on "
                f"axis {axis}; it must divide evenly")
        parts[entry.dim] //= size
    return sbp


class Parameter:
    """A trainable tensor (float32, PyTorch layout). Before a graph that uses
    it is compiled, ``data`` is a numpy array held here; afterwards it is the
    trained value, gathered from the ranks when read."""

    def __init__(self, data, requires_grad=True):
        self._data = np.array(data, dtype=np.float32)
        self.requires_grad = requires_grad
        self._graph = None  # The compiled graph that holds the value.
        self._name = None   # Its name there.
        self._version = 0   # Counts the values set while unbound.
        self._placement = None  # Set by to_global.
        self._sbp = None        # One zerosbp.sbp per hierarchy axis.

    @property
    def data(self):
        if self._graph is not None and self._graph._session is not None:
            return self._graph._parameter_value(self._name)
        return self._data

    @data.setter
    def data(self, value):
        self.copy_(value)

    def copy_(self, value):
        """Sets the value (in the graph's ranks too, when bound)."""
        value = np.asarray(value, dtype=np.float32)
        if value.shape != self._data.shape:
            raise ValueError(
                f"cannot set a parameter of shape {self._data.shape} from "
                f"shape {value.shape}")
        value = value.copy()
        if self._graph is not None and self._graph._session is not None:
            self._graph._set_parameter(self._name, value)
        self._data = value  # Only once the graph took it.
        self._version += 1
        return self

    def numpy(self):
        return np.array(self.data)

    @property
    def shape(self):
        return self._data.shape

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return int(self._data.size)

    def __repr__(self):
        return f"Parameter(shape={self.shape}, dtype=float32)"

    # -- layout --------------------------------------------------------------
    @property
    def placement(self):
        """The placement given by to_global, or None (the graph's, with the
        parameter broadcast on every axis)."""
        return self._placement

    @property
    def sbp(self):
        """The SBP per hierarchy axis given by to_global (a tuple), or None
        (broadcast on every axis)."""
        return self._sbp

    def to_global(self, placement, sbp):
        """Lays the parameter out on `placement` with one SBP per hierarchy
        axis, as OneFlow's ``to_global``: ``[sbp.broadcast, sbp.split(0)]``
        on a [dp, tp] placement splits dim 0 over the model axis. A split
        dim must divide evenly; partial sums are refused. Marks this
        parameter and returns it (the values stay whole here; a graph
        captures it with this layout). Set it before the first call of a
        graph that trains it."""
        self._sbp = self._check_global(placement, sbp, _describe(self, None))
        self._placement = placement
        return self

    def _check_global(self, placement, sbp, what):
        """The layout to_global(placement, sbp) gives, checked."""
        sbp = global_layout(placement, sbp, self.shape, what)
        graph = self._graph
        if graph is not None and graph._session is not None and \
                (placement, sbp) != (self._placement, self._sbp):
            raise RuntimeError(
                f"to_global: {what} is held by {type(graph).__name__}, "
                "compiled with its layout; call to_global before the "
                "graph's first call")
        return sbp

    # Inside build(), a parameter acts as the graph tensor it stands for.
    def _graph_handle(self, trace):
        return trace.parameter(self)

    def _traced(self):
        return Tensor(self._graph_handle(_trace.current()))

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._traced(), name)

    def __add__(self, other):
        return self._traced() + other

    def __radd__(self, other):
        return other + self._traced()

    def __sub__(self, other):
        return self._traced() - other

    def __rsub__(self, other):
        return other - self._traced()

    def __mul__(self, other):
        return self._traced() * other

    def __rmul__(self, other):
        return self._traced() * other

    def __truediv__(self, other):
        return self._traced() / other

    def __matmul__(self, other):
        return self._traced() @ other

    def __rmatmul__(self, other):
        return other @ self._traced()

    def __neg__(self):
        return -self._traced()


def _describe(param, name):
    """How errors name a parameter: by its name where known."""
    name = name or param._name
    if name:
        return f"parameter '{name}' of shape {tuple(param.shape)}"
    return f"a parameter of shape {tuple(param.shape)}"
