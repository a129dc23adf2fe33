"""Pipeline stages while build() is traced: the stage each marked module's
call runs on, and the checks that the stages form a pipeline
(docs/design.md#pipeline-parallelism). zs.pipeline_stage marks the
modules (_pipeline.py)."""

import contextlib

from . import _trace


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
