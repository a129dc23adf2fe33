"""Pipeline parallelism: modules marked with the pipeline stage that runs
them (zero-pipeline-stages, docs/design.md#pipeline-parallelism)."""

import contextlib
import numbers

from . import _trace


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
    from .nn.module import Module
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


@contextlib.contextmanager
def on_stage(module, stage):
    """Runs a marked module's call on its stage, refusing what the
    pipeline cannot hold: a stage out of range, a graph without stages,
    stages that decrease, a module of another stage inside it."""
    trace = _trace.current()
    what = trace.describe_module(module)
    stages = trace.pipeline_stages
    if stages == 1:
        raise ValueError(
            f"pipeline_stage: {what} is marked for stage {stage} but the "
            "graph's pipeline_parallel_size is 1; call "
            "graph.config.set_pipeline_parallel_size(P), P >= "
            f"{max(stage + 1, 2)}, in the graph's __init__")
    if stage >= stages:
        raise ValueError(
            f"pipeline_stage: {what} is marked for stage {stage}, out of "
            f"range for pipeline_parallel_size {stages} (stages "
            f"0..{stages - 1})")
    outer = trace.open_stage
    if outer is not None:
        if outer[1] != stage:
            raise ValueError(
                f"pipeline_stage: {what} (stage {stage}) is called inside "
                f"{outer[0]} (stage {outer[1]}); every op of a marked "
                "module runs on its stage: mark the inner modules alone")
        yield
        return
    if stage < trace.stage:
        raise ValueError(
            f"pipeline_stage: {what} (stage {stage}) is called after "
            f"{trace.stage_module} (stage {trace.stage}); stages must not "
            "decrease along build()")
    trace.capture.set_pipeline_stage(stage)
    trace.stage, trace.stage_module = stage, what
    trace.stages_called.add(stage)
    trace.open_stage = (what, stage)
    try:
        yield
    finally:
        trace.open_stage = None


def check_stages(trace):
    """After build(): every stage of the pipeline runs a marked module."""
    stages = trace.pipeline_stages
    if stages == 1:
        return
    if not trace.stages_called:
        raise ValueError(
            f"pipeline_parallel_size is {stages} but build() called no "
            "module marked by zs.pipeline_stage; mark each stage's modules "
            f"with zs.pipeline_stage(module, k), k in 0..{stages - 1}")
    missing = [s for s in range(stages) if s not in trace.stages_called]
    if missing:
        raise ValueError(
            f"pipeline_parallel_size is {stages} but build() called no "
            f"module of stage{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(str, missing))}; every stage needs a module "
            "marked by zs.pipeline_stage")
