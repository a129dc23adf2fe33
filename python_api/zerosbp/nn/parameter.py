"""Parameters: numpy arrays owned by modules, bound to a graph once it is
compiled (then their values live in the graph's ranks)."""

import numpy as np

from .. import _trace


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

    # Inside build(), a parameter acts as the graph tensor it stands for.
    def _traced(self):
        from .._tensor import Tensor
        return Tensor(_trace.current().parameter(self))

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
