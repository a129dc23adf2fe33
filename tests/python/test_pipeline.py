"""Pipeline parallelism from Python: modules marked with
zs.pipeline_stage(module, k) and graph.config.set_pipeline_parallel_size(P).

A small MLP of two marked modules, compiled on 4 ranks at P = 2 with 2
micro-batches, is captured on the first stage's 2 ranks, and its plan
records the two stages, the micro-batches and schedule, and the stage of
each module's variables. It trains to the losses and parameters of the
same MLP without the pipeline (flat and with tensor parallelism inside the
stages, SGD and Adam with ZeRO-1), each stage's ranks holding its own
parameters; GPipe gives 1F1B's losses; checkpoints move between pipelined
and flat graphs; an inference graph with its own parameters runs
pipelined. Every bad input is refused in one line."""

import json
import os

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import models

MICRO = 2
STEPS = 3
# The micro-batches' gradients are summed in another order than without
# the pipeline, which moves the last bits of float32.
LOSS_RTOL = 1e-5


def graph_of(model, stages=2, micro=MICRO, schedule=None, configure=None,
             optimizer=None):
    class TrainGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer or zs.optim.SGD(model.parameters(),
                                                         lr=0.1))
            if stages is not None:
                self.config.set_pipeline_parallel_size(stages)
            if schedule:
                self.config.set_pipeline_schedule(schedule)
            if micro > 1:
                self.config.set_gradient_accumulation_steps(micro)
            if configure:
                configure(self)

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    return TrainGraph()


def batches(steps=STEPS, batch=8):
    return models.small_mlp_batches(steps, batch)


def flat(world=4):
    return zs.placement("cpu", ranks=range(world))


def plan_of(graph):
    with open(os.path.join(graph._workdir, "model.zplan")) as file:
        return json.load(file)


def compiled(schedule=None, placement=None):
    zs.manual_seed(0)
    graph = graph_of(models.TwoStageMlp().pipelined(), schedule=schedule)
    graph.to(placement or flat()).compile(*batches(1)[0])
    return graph


def test_marks_return_the_module_and_come_off():
    model = models.TwoStageMlp()
    assert zs.pipeline_stage(model.first, 0) is model.first
    assert model.first._pipeline_stage == 0
    assert zs.pipeline_stage(model.first, None) is model.first
    assert "_pipeline_stage" not in model.first.__dict__
    assert "pipeline_stage" in zs.__all__


def test_config_setters():
    graph = graph_of(models.TwoStageMlp(), stages=2, schedule="gpipe")
    assert graph.config.pipeline_parallel_size == 2
    assert graph.config._spec["pipeline_schedule"] == "gpipe"
    assert graph_of(models.TwoStageMlp(), stages=None).config \
        .pipeline_parallel_size == 1
    # A pair of set_pipeline_options is applied last, as the compiler
    # applies it.
    graph.config.set_pipeline_options("pipeline-parallel-size=4")
    assert graph.config.pipeline_parallel_size == 4


def test_plan_records_the_stages():
    graph = compiled()
    plan = plan_of(graph)
    pipeline = plan["pipeline"]
    assert pipeline["stages"] == 2
    assert pipeline["micro_batches"] == MICRO
    assert pipeline["schedule"] == "1f1b"
    assert 0 < pipeline["bubble"] < 1
    # The graph is captured on the first stage's ranks, and its marked ops
    # carry their stage.
    captured = graph.ir(after="capture")
    assert "#sbp.placement<cpu, [0, 1]>" in captured
    assert "[0, 1, 2, 3]" not in captured
    assert "zero.pipeline_stage = 0" in captured
    assert "zero.pipeline_stage = 1" in captured
    # Each module's parameters live on its stage.
    stages = {v["name"]: v.get("stage") for v in plan["variables"]
              if v.get("role") == "param"}
    assert stages == {"first.0.weight": 0, "first.0.bias": 0,
                      "first.2.weight": 0, "first.2.bias": 0,
                      "second.weight": 1, "second.bias": 1}
    assert "pipeline-parallel-size=2" in repr(graph)
    assert {k: graph.report["pipeline"][k] for k in
            ("stages", "micro_batches", "schedule")} == \
        {"stages": 2, "micro_batches": MICRO, "schedule": "1f1b"}
    assert graph.report["comm_bytes_per_step"].get("send_recv", 0) > 0


def test_gpipe_schedule():
    assert plan_of(compiled("gpipe"))["pipeline"]["schedule"] == "gpipe"


def test_stages_from_pipeline_options():
    def configure(graph):
        graph.config.set_pipeline_options(
            "pipeline-parallel-size=2 pipeline-schedule=gpipe")

    zs.manual_seed(0)
    graph = graph_of(models.TwoStageMlp().pipelined(), stages=None,
                     configure=configure)
    graph.to(flat()).compile(*batches(1)[0])
    assert plan_of(graph)["pipeline"]["stages"] == 2
    assert plan_of(graph)["pipeline"]["schedule"] == "gpipe"


def test_stages_of_a_2d_placement_take_whole_rows():
    # [[0, 1], [2, 3]] at P = 2: each stage is one row, [1, 2].
    graph = compiled(placement=zs.placement("cpu", ranks=[[0, 1], [2, 3]]))
    assert "#sbp.placement<cpu, [0, 1], hierarchy = [1, 2]>" in \
        graph.ir(after="capture")
    assert plan_of(graph)["pipeline"]["stages"] == 2


def test_deepspeed_batch_sizes_count_a_stages_ranks():
    # 4 ranks in 2 stages: 2 data-parallel ranks, 2 micro-batches of 2.
    def configure(graph):
        graph.config.set_deepspeed_config({
            "train_batch_size": 8, "gradient_accumulation_steps": MICRO})

    zs.manual_seed(0)
    graph = graph_of(models.TwoStageMlp().pipelined(), micro=1,
                     configure=configure)
    graph.to(flat()).compile(*batches(1)[0])
    assert plan_of(graph)["pipeline"]["micro_batches"] == MICRO


def train(model, placement, stages, schedule=None, adam=False):
    """(graph, losses) of `model` trained on `placement`; with `adam`,
    Adam at ZeRO stage 1 (the pipeline carries stages 0 and 1), else
    SGD."""
    def configure(graph):
        if adam:
            graph.config.enable_zero(True, stage=1, shard_min_size=1)

    optimizer = zs.optim.Adam(model.parameters(), lr=0.01) if adam else None
    graph = graph_of(model, stages=stages, schedule=schedule,
                     configure=configure, optimizer=optimizer).to(placement)
    return graph, [float(graph(x, y)) for x, y in batches()]


def tensor_parallel(model, grid):
    """Megatron's layout inside the first stage: first.0 column-parallel,
    first.2 row-parallel."""
    B, S = zs.sbp.broadcast, zs.sbp.split
    model.first[0].to_global(grid, sbp=[B, S(0)])
    model.first[2].weight.to_global(grid, sbp=[B, S(1)])
    return model


def max_rel(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


@pytest.mark.parametrize("adam", [False, True])
@pytest.mark.parametrize("layout", ["flat", "tensor_parallel"])
def test_losses_equal_the_unpipelined_ones(layout, adam):
    """(pp, dp, tp) = (2, 2, 1) and (2, 1, 2) against 4 data-parallel
    ranks: the same losses within float32 rounding, and parameters; each
    stage's ranks hold their own module's parameters only."""
    zs.manual_seed(0)
    reference_model = models.TwoStageMlp()
    _, reference = train(reference_model, flat(), stages=None, adam=adam)
    zs.manual_seed(0)
    model = models.TwoStageMlp().pipelined()
    placement = flat()
    if layout == "tensor_parallel":
        placement = zs.placement("cpu", ranks=[[0, 1], [2, 3]])
        tensor_parallel(model, placement)
    graph, losses = train(model, placement, stages=2, adam=adam)
    assert len(losses) == STEPS and np.all(np.isfinite(losses))
    assert max_rel(losses, reference) <= LOSS_RTOL, (losses, reference)
    # The steps trained: the losses move.
    assert len(set(losses)) == STEPS
    trained, expected = model.state_dict(), reference_model.state_dict()
    for name in expected:
        np.testing.assert_allclose(trained[name], expected[name],
                                   rtol=LOSS_RTOL, atol=1e-6)
    # Ranks 0-1 hold `first`'s parameters (split over the model axis in
    # the tensor-parallel layout), ranks 2-3 `second`'s.
    first = 4 * (8 * 6 + 8 + 8 * 8 + 8)
    if layout == "tensor_parallel":
        first = 4 * (8 * 6 // 2 + 8 // 2 + 8 * 8 // 2 + 8)
    second = 4 * (4 * 8 + 4)
    measured = [r["by_role"]["param"]
                for r in graph.memory_report()["measured"]]
    assert measured == [first, first, second, second]
    sent = [r["send_recv"] for r in graph.comm_report()["measured"]]
    assert all(bytes_ > 0 for bytes_ in sent), sent


def test_gpipe_gives_the_1f1b_losses_bit_for_bit():
    runs = []
    for schedule in ("1f1b", "gpipe"):
        zs.manual_seed(0)
        runs.append(train(models.TwoStageMlp().pipelined(), flat(), stages=2,
                          schedule=schedule)[1])
    assert runs[0] == runs[1]


class DropoutMlp(models.TwoStageMlp):
    """TwoStageMlp with dropout in each stage: each micro-batch draws its
    own masks."""

    def __init__(self):
        super().__init__()
        self.first = nn.Sequential(nn.Linear(6, 8), nn.GELU(),
                                   nn.Dropout(0.25), nn.Linear(8, 8))
        self.second = nn.Sequential(nn.Dropout(0.25), nn.Linear(8, 4))


@pytest.mark.parametrize("adam", [False, True])
def test_micro_batch_loop_gives_the_copies_losses_bit_for_bit(adam):
    """micro-batch-loop=true compiles one micro-batch and the plan runs it
    per micro-batch: the losses, parameters and dropout masks of the
    copies, and a plan whose instructions do not grow with the
    micro-batches."""
    runs, states, plans = [], [], []
    for loop in (False, True):
        def configure(graph, loop=loop):
            graph.config.set_pipeline_options(
                "micro-batch-loop=%s" % str(loop).lower())
            if adam:
                graph.config.enable_zero(True, stage=1, shard_min_size=1)

        zs.manual_seed(0)
        model = DropoutMlp().pipelined()
        optimizer = zs.optim.Adam(model.parameters(), lr=0.01) if adam else None
        graph = graph_of(model, micro=4, configure=configure,
                         optimizer=optimizer).to(flat())
        runs.append([float(graph(x, y)) for x, y in batches()])
        states.append(model.state_dict())
        plans.append(plan_of(graph))
    assert runs[0] == runs[1], runs
    for name in states[0]:
        np.testing.assert_array_equal(states[1][name], states[0][name])
    assert "loop" in plans[1]["pipeline"] and "loop" not in plans[0]["pipeline"]
    assert len(plans[1]["instructions"]) < len(plans[0]["instructions"])


def test_checkpoints_move_between_pipelined_and_flat(tmp_path):
    """A pipelined graph's checkpoint resumes without the pipeline, and a
    flat one's in the pipeline, continuing the same losses."""
    def graph(pipeline):
        zs.manual_seed(0)
        model = models.TwoStageMlp()
        if pipeline:
            model.pipelined()
        return graph_of(model, stages=2 if pipeline else None).to(flat())

    def more(g):
        return [float(g(x, y)) for x, y in batches(2)]

    for saved_pipelined in (True, False):
        directory = tmp_path / str(saved_pipelined)
        saver = graph(saved_pipelined)
        for x, y in batches():
            saver(x, y)
        saver.save_checkpoint(directory)
        expected = more(saver)
        resumed = graph(not saved_pipelined)
        assert resumed.load_checkpoint(directory)["step"] == STEPS
        assert more(resumed) == expected


@pytest.mark.parametrize("cut", ["after_gelu", "before_gelu"])
def test_a_gelu_at_the_boundary(cut):
    """A stage that ends with a GELU (whose output the next stage reads,
    so the backward does not compute it again there) or starts with one
    right after the previous stage's linear layer (the epilogue does not
    fuse across the boundary) trains to the unpipelined losses."""
    def model():
        zs.manual_seed(0)
        mlp = models.TwoStageMlp()
        if cut == "after_gelu":
            mlp.first = nn.Sequential(nn.Linear(6, 8), nn.GELU())
            mlp.second = nn.Linear(8, 4)
        else:
            mlp.first = nn.Linear(6, 8)
            mlp.second = nn.Sequential(nn.GELU(), nn.Linear(8, 4))
        return mlp

    runs = []
    for stages in (None, 2):
        mlp = model().pipelined() if stages else model()
        graph = graph_of(mlp, stages=stages)
        graph.to(flat())
        runs.append([float(graph(x, y)) for x, y in batches()])
    assert max_rel(runs[1], runs[0]) <= LOSS_RTOL, runs


def forward(state, x):
    """TwoStageMlp's outputs in float64 NumPy (GELU's tanh form)."""
    def linear(h, name):
        return h @ state[name + ".weight"].T.astype(np.float64) + \
            state[name + ".bias"]

    h = linear(x.astype(np.float64), "first.0")
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
    return linear(linear(h, "first.2"), "second")


class Predict(nn.Graph):
    def __init__(self, model, stages=None):
        super().__init__()
        self.model = model
        if stages:
            self.config.set_pipeline_parallel_size(stages)

    def build(self, x):
        return self.model(x)


def test_inference_graphs():
    zs.manual_seed(0)
    model = models.TwoStageMlp().pipelined()
    train(model, flat(), stages=2)
    x = batches(1)[0][0]
    # On the training graph's parameters: not built yet, refused.
    with pytest.raises(NotImplementedError) as info:
        Predict(model)(x)
    assert one_line(info).startswith(
        "Predict would run on the parameters of TrainGraph, which has "
        "pipeline_parallel_size 2; an inference graph on a pipelined "
        "graph's parameters is not built yet")
    # On parameters of its own, pipelined too: the trained model's outputs.
    copy = models.TwoStageMlp().pipelined()
    copy.load_state_dict(model.state_dict())
    predict = Predict(copy, stages=2).to(flat())
    np.testing.assert_allclose(predict(x), forward(model.state_dict(), x),
                               rtol=1e-5, atol=1e-6)
    assert predict.inference and predict.report["pipeline"]["stages"] == 2


# -- refusals -----------------------------------------------------------------
def one_line(error_info):
    text = str(error_info.value)
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize("args, error, message", [
    ((object(), 0), TypeError, "pipeline_stage takes a module, got object"),
    ((nn.Linear(2, 2), -1), ValueError,
     "pipeline_stage: stage must be >= 0, got -1"),
    ((nn.Linear(2, 2), "1"), TypeError,
     "pipeline_stage: stage must be an int, got '1'"),
    ((nn.Linear(2, 2), True), TypeError,
     "pipeline_stage: stage must be an int, got True"),
])
def test_bad_marks(args, error, message):
    with pytest.raises(error) as info:
        zs.pipeline_stage(*args)
    assert one_line(info) == message


@pytest.mark.parametrize("call, message", [
    (lambda c: c.set_pipeline_parallel_size(0),
     "set_pipeline_parallel_size: expected an int >= 1, got 0"),
    (lambda c: c.set_pipeline_parallel_size(True),
     "set_pipeline_parallel_size: expected an int >= 1, got True"),
    (lambda c: c.set_pipeline_schedule("zb"),
     "set_pipeline_schedule: expected \"1f1b\" or \"gpipe\", got 'zb'"),
])
def test_bad_config(call, message):
    with pytest.raises(ValueError) as info:
        call(graph_of(models.TwoStageMlp(), stages=None).config)
    assert one_line(info) == message


def refusal(model, placement=None, stages=2, micro=MICRO, configure=None):
    graph = graph_of(model, stages=stages, micro=micro, configure=configure)
    with pytest.raises((ValueError, zs.Error)) as info:
        graph.to(placement or flat()).compile(*batches(1)[0])
    return one_line(info)


def test_stage_out_of_range():
    assert refusal(models.TwoStageMlp().pipelined(0, 2)) == (
        "pipeline_stage: Linear 'model.second' is marked for "
        "stage 2, out of range for pipeline_parallel_size 2 (stages 0..1)")


def test_stages_must_not_decrease():
    assert refusal(models.TwoStageMlp().pipelined(1, 0)) == (
        "pipeline_stage: Linear 'model.second' (stage 0) is called "
        "after Sequential 'model.first' (stage 1); stages must not "
        "decrease along build()")


def test_marks_without_a_pipeline():
    assert refusal(models.TwoStageMlp().pipelined(), stages=None) == (
        "pipeline_stage: Sequential 'model.first' is marked for "
        "stage 0 but the graph's pipeline_parallel_size is 1; call "
        "graph.config.set_pipeline_parallel_size(P), P >= 2, in the "
        "graph's __init__")


def test_a_pipeline_without_marks():
    assert refusal(models.TwoStageMlp()) == (
        "pipeline_parallel_size is 2 but build() called no module marked "
        "by zs.pipeline_stage; mark each stage's modules with "
        "zs.pipeline_stage(module, k), k in 0..1")


def test_a_stage_without_a_module():
    model = models.TwoStageMlp()
    zs.pipeline_stage(model.first, 0)
    assert refusal(model) == (
        "pipeline_parallel_size is 2 but build() called no module of stage "
        "1; every stage needs a module marked by zs.pipeline_stage")


def test_a_module_of_another_stage_inside_a_marked_one():
    model = models.TwoStageMlp()
    zs.pipeline_stage(model, 0)
    zs.pipeline_stage(model.second, 1)
    assert refusal(model) == (
        "pipeline_stage: Linear 'model.second' (stage 1) is called "
        "inside TwoStageMlp 'model' (stage 0); every op of a "
        "marked module runs on its stage: mark the inner modules alone")


def test_a_module_of_the_same_stage_inside_a_marked_one():
    zs.manual_seed(0)
    model = models.TwoStageMlp().pipelined()
    zs.pipeline_stage(model.first[0], 0)
    graph = graph_of(model).to(flat()).compile(*batches(1)[0])
    assert plan_of(graph)["pipeline"]["stages"] == 2


def test_stages_must_divide_the_ranks():
    assert refusal(models.TwoStageMlp().pipelined(), flat(3)) == (
        "pipeline_parallel_size 2 does not divide the graph's 3 ranks: each "
        "pipeline stage runs on world / 2 of them")
    assert refusal(models.TwoStageMlp().pipelined(),
                   zs.placement("cpu", ranks=[[0, 1, 2, 3]])) == (
        "pipeline_parallel_size 2 does not divide the 1 row of the graph's "
        "placement [1, 4]: the pipeline axis is outermost, so each stage "
        "takes whole rows of ranks")


def test_the_batch_divides_over_a_stages_ranks():
    graph = graph_of(models.TwoStageMlp().pipelined())
    x, y = batches(1, batch=6)[0]
    with pytest.raises(ValueError) as info:
        graph.to(flat()).compile(x, y)
    assert one_line(info) == (
        "input 'x': a batch of 6 does not divide over the 2 ranks of a "
        "pipeline stage x 2 micro-batches: inputs are split along axis 0, "
        "so the batch must be a multiple of 4")


def test_what_the_pipeline_does_not_carry_is_refused():
    message = refusal(models.TwoStageMlp().pipelined(), configure=lambda g: (
        g.config.enable_zero(True, stage=2)))
    assert "pipeline-parallel-size > 1 with ZeRO stage 2 is not built" in \
        message
