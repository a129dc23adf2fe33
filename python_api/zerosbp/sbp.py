"""SBP: how a global tensor lies on one hierarchy axis of its placement, by
OneFlow's names.

- ``broadcast`` (``B``): every rank of the axis holds the whole tensor;
- ``split(dim)`` (``S(dim)``): tensor dim ``dim`` is cut into equal parts,
  one per rank of the axis;
- ``partial_sum`` (``P``): every rank holds a full-size partial value, the
  tensor is their sum. The compiler makes these; a parameter is never
  given one.

A parameter takes one per axis: ``p.to_global(placement, sbp=[broadcast,
split(0)])`` (docs: python_api/README.md#tensor-parallelism).
"""

import numbers

__all__ = ["sbp", "broadcast", "split", "partial_sum", "B", "S", "P"]


class sbp:
    """One axis's layout; build it with ``broadcast``, ``split(dim)`` or
    ``partial_sum``."""

    __slots__ = ("_kind", "_dim")

    def __init__(self, kind, dim=None):
        self._kind = kind
        self._dim = dim

    @property
    def kind(self):
        """"broadcast", "split" or "partial_sum"."""
        return self._kind

    @property
    def dim(self):
        """The split dim (None unless a split)."""
        return self._dim

    def __repr__(self):
        # The IR's spelling.
        if self._kind == "split":
            return f"S({self._dim})"
        return "B" if self._kind == "broadcast" else "P(sum)"

    def __eq__(self, other):
        return (isinstance(other, sbp) and self._kind == other._kind and
                self._dim == other._dim)

    def __hash__(self):
        return hash((self._kind, self._dim))


broadcast = sbp("broadcast")
partial_sum = sbp("partial_sum")


def split(dim):
    """``S(dim)``: tensor dim ``dim`` cut into equal parts over the axis."""
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"sbp.split: dim must be an int, got {dim!r}")
    if dim < 0:
        raise ValueError(f"sbp.split: dim must be non-negative, got {dim}")
    return sbp("split", int(dim))


B = broadcast
S = split
P = partial_sum
