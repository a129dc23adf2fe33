"""ZeroSBP: ZeRO as SBP rewriting of a captured training graph.

    import zerosbp as zs
    from zerosbp import nn

    class TrainGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(zs.optim.Adam(model.parameters(), lr=1e-3))
            self.config.enable_zero(True, stage=2)

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    g = TrainGraph().to(zs.placement("cpu", ranks=[0, 1, 2, 3]))
    loss = g(x, y)          # numpy in, numpy out; compiled on the first call
    print(g.ir(after="zero-stage"))
"""

import os as _os
import sys as _sys

# The one place the version is written: the wheel's metadata reads it here.
__version__ = "0.1.0"

# OpenMPI loads its components as plugins that need libmpi's symbols, so the
# extension (which links libmpi) is loaded with global symbols.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    from . import _zerosbp
finally:
    _sys.setdlopenflags(_flags)

Error = _zerosbp.Error

if _zerosbp.launched_by_mpirun():
    import atexit as _atexit
    _atexit.register(_zerosbp.mpi_finalize)

    def _stop_the_job(kind, value, traceback, _report=_sys.excepthook):
        """A rank that raises says why and exits without finalizing MPI, so
        that mpirun stops every rank: finalized, it would leave its peers
        waiting in their next collective until its timeout."""
        _report(kind, value, traceback)
        if issubclass(kind, KeyboardInterrupt):
            return  # The launcher stops the job (docs/runtime.md#signals).
        _sys.stdout.flush()
        _sys.stderr.flush()
        _os._exit(1)

    _sys.excepthook = _stop_the_job

from ._random import initial_seed, manual_seed  # noqa: E402
from ._placement import placement  # noqa: E402
from ._distributed import rank, world_size  # noqa: E402
from ._tensor import Tensor  # noqa: E402
from ._serialization import save, load  # noqa: E402
from ._checkpoint import checkpoint  # noqa: E402
from ._pipeline import pipeline_stage  # noqa: E402
from . import nn, optim, sbp  # noqa: E402

float32 = "f32"
float16 = "fp16"
bfloat16 = "bf16"

__all__ = [
    "checkpoint",
    "Error",
    "Tensor",
    "initial_seed",
    "load",
    "manual_seed",
    "nn",
    "optim",
    "pipeline_stage",
    "placement",
    "rank",
    "save",
    "sbp",
    "world_size",
]
