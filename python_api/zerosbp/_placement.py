"""Where a graph runs: a device kind and its ranks."""

from . import _zerosbp


class placement:
    """``placement("cpu", ranks=[0, 1, 2, 3])``: ranks 0..N-1 of one device
    kind, ``cpu`` or ``cuda`` (one GPU per rank, NCCL between them). The
    graph's inputs are split along the batch over these ranks."""

    def __init__(self, type="cpu", ranks=(0,)):
        if type not in ("cpu", "cuda"):
            raise ValueError(
                f"placement type '{type}' is not supported (cpu or cuda)")
        # A count before the list, so that a huge range is not built.
        count = len(ranks) if hasattr(ranks, "__len__") else None
        if count is None or count <= _zerosbp.MAX_RANKS:
            ranks = list(ranks)
            count = len(ranks)
        if not 1 <= count <= _zerosbp.MAX_RANKS:
            raise ValueError(
                f"placement: expected a number of ranks in "
                f"[1, {_zerosbp.MAX_RANKS}], got {count}")
        if ranks != list(range(len(ranks))):
            raise ValueError(
                f"placement ranks must be 0..N-1 in order, got {ranks}")
        self.type = type
        self.ranks = ranks

    @property
    def world(self):
        return len(self.ranks)

    def __repr__(self):
        return f"placement(type='{self.type}', ranks={self.ranks})"

    def __eq__(self, other):
        return (isinstance(other, placement) and self.type == other.type
                and self.ranks == other.ranks)
