"""Tensors of a graph being traced: each operation adds an op to the graph.

Shapes are known at trace time and checked by the C++ builder as ops are
added, so a shape error is raised at the line that makes it."""

import numbers

from . import _trace


def _normalize_axis(axis, rank):
    if not -rank <= axis < max(rank, 1):
        raise IndexError(f"dimension {axis} out of range for a {rank}-D tensor")
    return axis % rank if rank else 0


class Tensor:
    """A value of the graph being traced (global shape, dtype)."""

    _input_name = None  # The graph input it is, if one.

    def __init__(self, handle):
        self._handle = handle

    # -- construction ------------------------------------------------------
    @staticmethod
    def _apply(op, operands, **attrs):
        trace = _trace.current()
        handles = [_handle(trace, x) for x in operands]
        return Tensor(trace.capture.apply(op, handles, **attrs))

    # -- metadata ----------------------------------------------------------
    @property
    def shape(self):
        return tuple(_trace.current().capture.shape(self._handle))

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return self.ndim

    @property
    def dtype(self):
        return _trace.current().capture.dtype(self._handle)

    def __repr__(self):
        try:
            return f"Tensor(shape={self.shape}, dtype={self.dtype})"
        except RuntimeError:
            return "Tensor(<outside its graph>)"

    def to_global(self, placement=None, sbp=None):
        # The compiler picks every other tensor's layout (SBP propagation);
        # a layout set here by hand would be silently replaced.
        raise NotImplementedError(
            "to_global: only parameters take a layout (Parameter.to_global "
            "or Module.to_global, before the graph's first call); inputs "
            "are split on the batch over axis 0 and the compiler lays out "
            "the other tensors")

    # -- training ----------------------------------------------------------
    def backward(self):
        """Marks this scalar as the loss the graph differentiates."""
        trace = _trace.current()
        if self.shape != ():
            raise ValueError(
                f"backward() needs a scalar loss, got shape {self.shape}")
        if trace.loss is not None and trace.loss is not self:
            raise ValueError("backward() was called on two different losses")
        trace.loss = self

    # -- arithmetic --------------------------------------------------------
    def _binary(self, op, other, reverse=False):
        if isinstance(other, numbers.Number):
            other = full(self.shape, float(other), self.dtype)
        lhs, rhs = (other, self) if reverse else (self, other)
        return Tensor._apply(op, [lhs, rhs])

    def __add__(self, other):
        return self._binary("add", other)

    def __radd__(self, other):
        return self._binary("add", other, reverse=True)

    def __sub__(self, other):
        return self._binary("sub", other)

    def __rsub__(self, other):
        return self._binary("sub", other, reverse=True)

    def __mul__(self, other):
        if isinstance(other, numbers.Number):
            return Tensor._apply("scale", [self], scalar=float(other))
        return self._binary("mul", other)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __truediv__(self, other):
        if isinstance(other, numbers.Number):
            return Tensor._apply("scale", [self], scalar=1.0 / float(other))
        return self._binary("div", other)

    def __rtruediv__(self, other):
        return self._binary("div", other, reverse=True)

    def __neg__(self):
        return Tensor._apply("scale", [self], scalar=-1.0)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    # -- shape -------------------------------------------------------------
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = list(shape)
        total = 1
        for d in self.shape:
            total *= d
        if shape.count(-1) > 1:
            raise ValueError("only one dimension can be inferred (-1)")
        if -1 in shape:
            known = 1
            for d in shape:
                if d != -1:
                    known *= d
            if known == 0 or total % known:
                raise ValueError(
                    f"shape {tuple(shape)} is invalid for a tensor of "
                    f"shape {self.shape}")
            shape[shape.index(-1)] = total // known
        return Tensor._apply("reshape", [self], ints=shape)

    view = reshape

    def permute(self, *dims):
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        rank = self.ndim
        return Tensor._apply("transpose", [self],
                             ints=[_normalize_axis(d, rank) for d in dims])

    def transpose(self, dim0, dim1):
        rank = self.ndim
        perm = list(range(rank))
        a, b = _normalize_axis(dim0, rank), _normalize_axis(dim1, rank)
        perm[a], perm[b] = perm[b], perm[a]
        return Tensor._apply("transpose", [self], ints=perm)

    @property
    def T(self):
        if self.ndim != 2:
            raise ValueError(".T needs a 2-D tensor")
        return self.transpose(0, 1)

    def split(self, split_size_or_sections, dim=0):
        dim = _normalize_axis(dim, self.ndim)
        extent = self.shape[dim]
        if isinstance(split_size_or_sections, int):
            size = split_size_or_sections
            sizes = [size] * (extent // size)
            if extent % size:
                sizes.append(extent % size)
        else:
            sizes = list(split_size_or_sections)
        trace = _trace.current()
        return tuple(Tensor(h) for h in trace.capture.split(
            self._handle, dim, sizes))

    def chunk(self, chunks, dim=0):
        extent = self.shape[_normalize_axis(dim, self.ndim)]
        return self.split(-(-extent // chunks), dim)

    # -- reductions and activations -----------------------------------------
    def sum(self, dim=None, keepdim=False):
        return _reduce("reduce_sum", self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        return _reduce("reduce_mean", self, dim, keepdim)

    def softmax(self, dim=-1):
        return Tensor._apply("softmax", [self], axis=dim)

    def relu(self):
        return Tensor._apply("relu", [self])

    def tanh(self):
        return Tensor._apply("tanh", [self])

    def float(self):
        return self.to("f32")

    def to(self, dtype):
        dtype = {"fp32": "f32", "float32": "f32", "fp16": "f16",
                 "float16": "f16", "bfloat16": "bf16"}.get(dtype, dtype)
        if dtype == self.dtype:
            return self
        return Tensor._apply("cast", [self], dtype=dtype)


def _handle(trace, value):
    if isinstance(value, Tensor):
        return value._handle
    # A parameter (nn.Parameter) stands for the graph tensor it reads.
    if hasattr(value, "_graph_handle"):
        return value._graph_handle(trace)
    raise TypeError(
        f"expected a graph tensor or parameter, got {type(value).__name__} "
        "(numpy arrays enter a graph only as arguments of build())")


def _reduce(op, x, dim, keepdim):
    if dim is None:
        dims = list(range(x.ndim))
    elif isinstance(dim, int):
        dims = [_normalize_axis(dim, x.ndim)]
    else:
        dims = [_normalize_axis(d, x.ndim) for d in dim]
    return Tensor._apply(op, [x], ints=dims, keepdim=keepdim)


def full(shape, value, dtype="f32"):
    """A constant tensor of `shape` filled with `value`."""
    return Tensor._apply("fill", [], scalar=float(value), ints=list(shape),
                         dtype=dtype)


def matmul(a, b):
    """torch.matmul for 2-D @ 2-D, N-D @ 2-D (batch folded into rows) and
    equal-batch N-D @ N-D."""
    sa, sb = _shape(a), _shape(b)
    if len(sa) == 2 and len(sb) == 2:
        return Tensor._apply("matmul", [a, b])
    if len(sb) == 2:
        rows = a.reshape(-1, sa[-1])
        return Tensor._apply("matmul", [rows, b]).reshape(
            *sa[:-1], sb[-1])
    return Tensor._apply("batch_matmul", [a, b])


def _shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) or hasattr(
        x, "_graph_handle") else ()
