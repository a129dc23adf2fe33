"""Where a graph runs: a device kind and its ranks, as one axis or a 2-D
grid."""

import numbers

from . import _zerosbp

# The most hierarchy axes a placement may have (#sbp.placement's limit).
_MAX_AXES = 2


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_row(value):
    return isinstance(value, (list, tuple, range))


def _count(ranks):
    """len(ranks), refusing a count out of range before a list is built
    (so that a huge range is not)."""
    count = len(ranks) if hasattr(ranks, "__len__") else None
    if count is not None and not 1 <= count <= _zerosbp.MAX_RANKS:
        raise ValueError(
            f"placement: expected a number of ranks in "
            f"[1, {_zerosbp.MAX_RANKS}], got {count}")
    return count


def _grid(ranks):
    """(flat ranks, hierarchy or None) of a list of ranks or of a nested
    list of equal rows (OneFlow's way of writing a 2-D placement)."""
    if hasattr(ranks, "tolist"):  # A numpy array, of either shape.
        ranks = ranks.tolist()
    _count(ranks)
    ranks = list(ranks)
    if not any(_is_row(r) for r in ranks):
        return ranks, None
    if not all(_is_row(r) for r in ranks):
        raise ValueError(
            f"placement ranks mix rows and single ranks: {ranks}; give a "
            "list of ranks or a list of equal rows of them")
    rows = [list(r) for r in ranks]
    if any(_is_row(r) for row in rows for r in row):
        raise ValueError(
            f"placement ranks nest deeper than rows: {ranks}; a placement "
            f"has at most {_MAX_AXES} hierarchy axes")
    for index, row in enumerate(rows):
        if len(row) != len(rows[0]):
            raise ValueError(
                f"placement ranks are ragged: row {index} has {len(row)} "
                f"ranks, row 0 has {len(rows[0])}; the rows of a 2-D "
                "placement have equal length")
    if not rows[0]:
        raise ValueError(f"placement ranks have empty rows: {ranks}")
    flat = [r for row in rows for r in row]
    _count(flat)
    return flat, (len(rows), len(rows[0]))


class placement:
    """``placement("cpu", ranks=[0, 1, 2, 3])``: ranks 0..N-1 of one device
    kind, ``cpu`` or ``cuda`` (one GPU per rank, NCCL between them).

    ``ranks=[[0, 1], [2, 3]]`` (or ``ranks=range(4), hierarchy=(2, 2)``)
    lays them out as a 2-D grid [dp, tp], row-major: axis 0 is the data
    axis, over which the graph's inputs are split along the batch, and
    axis 1 the model axis, over which parameters given a split by
    ``to_global`` are cut (tensor parallelism)."""

    def __init__(self, type="cpu", ranks=(0,), hierarchy=None):
        if type not in ("cpu", "cuda"):
            raise ValueError(
                f"placement type '{type}' is not supported (cpu or cuda)")
        flat, grid = _grid(ranks)
        if flat != list(range(len(flat))):
            raise ValueError(
                f"placement ranks must be 0..N-1 in order, got {flat}")
        if hierarchy is not None:
            hierarchy = self._check_hierarchy(hierarchy, len(flat))
            if grid is not None and hierarchy != grid:
                raise ValueError(
                    f"placement: hierarchy {list(hierarchy)} does not match "
                    f"the {grid[0]} x {grid[1]} rows of ranks; give one of "
                    "them")
            grid = hierarchy if len(hierarchy) == _MAX_AXES else None
        self.type = type
        self.hierarchy = grid or (len(flat),)
        self._flat = flat
        self.ranks = flat if grid is None else [
            flat[row * grid[1]:(row + 1) * grid[1]] for row in range(grid[0])]

    @staticmethod
    def _check_hierarchy(hierarchy, count):
        if not _is_row(hierarchy) or not all(_is_int(s) for s in hierarchy):
            raise TypeError(
                f"placement: hierarchy must be a tuple of ints, got "
                f"{hierarchy!r}")
        hierarchy = tuple(int(s) for s in hierarchy)
        if not 1 <= len(hierarchy) <= _MAX_AXES:
            raise ValueError(
                f"placement: hierarchy {list(hierarchy)} has "
                f"{len(hierarchy)} axes; a placement has 1 or {_MAX_AXES}")
        if any(s < 1 for s in hierarchy):
            raise ValueError(
                f"placement: hierarchy sizes must be at least 1, got "
                f"{list(hierarchy)}")
        product = 1
        for size in hierarchy:
            product *= size
        if product != count:
            raise ValueError(
                f"placement: hierarchy {list(hierarchy)} holds {product} "
                f"ranks but {count} are listed")
        return hierarchy

    @property
    def world(self):
        """The number of ranks."""
        return len(self._flat)

    @property
    def ndim(self):
        """The number of hierarchy axes (the length of an SBP list)."""
        return len(self.hierarchy)

    def __repr__(self):
        return f"placement(type='{self.type}', ranks={self.ranks})"

    def __eq__(self, other):
        return (isinstance(other, placement) and self.type == other.type
                and self.ranks == other.ranks)

    def __hash__(self):
        return hash((self.type, self.hierarchy))
