"""Pipeline parallelism: modules marked with the pipeline stage that runs
them (zero-pipeline-stages, docs/design.md#pipeline-parallelism)."""

import numbers

from .nn.module import Module


def pipeline_stage(module, stage):
    """``pipeline_stage(module, k)`` marks the module: every call of it in
    a graph's ``build`` runs on pipeline stage k, every op it builds and
    every parameter it is the first to read (Megatron's and DeepSpeed's
    ``PipelineModule`` layers, OneFlow's ``set_stage``); returns the module.
    ``pipeline_stage(module, None)`` removes the mark.

    The graph needs ``config.set_pipeline_parallel_size(P)`` with k < P; it
    is captured on one stage's ranks (world / P of them) and the compiler
    adds the others. Ops built after a marked module's call stay on its
    stage until the next marked module's (the loss after the last stage
    runs there); ops before the first are placed where what they read or
    what reads them is. Stages must not decrease along ``build``, and a
    marked module called inside another takes the same stage."""
    if not isinstance(module, Module):
        raise TypeError(f"pipeline_stage takes a module, got "
                        f"{type(module).__name__}")
    if stage is None:
        module.__dict__.pop("_pipeline_stage", None)
        return module
    if isinstance(stage, bool) or not isinstance(stage, numbers.Integral):
        raise TypeError(f"pipeline_stage: stage must be an int, got "
                        f"{stage!r}")
    if stage < 0:
        raise ValueError(f"pipeline_stage: stage must be >= 0, got {stage}")
    object.__setattr__(module, "_pipeline_stage", int(stage))
    return module
