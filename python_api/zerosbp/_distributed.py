"""This process's rank when launched with ``python3 -m zerosbp.launch``."""

from . import _zerosbp


def launched():
    """Whether this process is one rank of an mpirun job."""
    return _zerosbp.launched_by_mpirun()


def rank():
    """This process's rank: 0 unless launched over MPI."""
    return _zerosbp.mpi_rank_and_size()[0] if launched() else 0


def world_size():
    """The number of processes: 1 unless launched over MPI."""
    return _zerosbp.mpi_rank_and_size()[1] if launched() else 1
