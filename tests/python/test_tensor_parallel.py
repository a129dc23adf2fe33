"""Tensor parallelism from Python: a 2-D placement ([dp, tp], OneFlow's
nested ranks) and parameters laid out by to_global.

An MLP (fc1 column-parallel, weight and bias [B, S(0)]; fc2 row-parallel,
weight [B, S(1)], bias replicated) captured on [[0, 1], [2, 3]] trains, at
stages 0-3 with SGD and Adam, to the losses and parameters of the same
model on 4 flat ranks, and resumes from its checkpoints at other layouts;
every bad input is refused in one line."""

import re

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import models

B, S, P = zs.sbp.broadcast, zs.sbp.split, zs.sbp.partial_sum

# Max relative difference of the losses from the flat run's, and max
# absolute difference of the parameters after training: what a change in
# the order of the reductions can move in float32. Measured: 8.9e-8 (one
# ulp) and 1.8e-7 on values of order 1.
LOSS_RTOL = 1e-6
PARAM_ATOL = 1e-6
STEPS = 4


def grid(dp=2, tp=2):
    return zs.placement("cpu", ranks=np.arange(dp * tp).reshape(
        dp, tp).tolist())


def parallel_mlp(placement):
    return models.SmallMlp().parallel(placement)


def graph_of(model, optimizer, stage):
    class TrainGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer(model.parameters(), lr=0.1))
            if stage:
                self.config.enable_zero(True, stage=stage, shard_min_size=1)
                self.config.set_pipeline_options(
                    "stage3-param-persistence-threshold=0")

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    return TrainGraph()


def batches(steps=STEPS, batch=8):
    return models.small_mlp_batches(steps, batch)


def train(placement, stage=0, optimizer=zs.optim.SGD, parallel=True):
    """(graph, losses, state_dict) of the MLP trained on `placement`, laid
    out tensor-parallel or left broadcast; the same initial values every
    time."""
    zs.manual_seed(0)
    model = parallel_mlp(placement) if parallel else models.SmallMlp()
    graph = graph_of(model, optimizer, stage).to(placement)
    losses = [float(graph(x, y)) for x, y in batches()]
    return graph, losses, model.state_dict()


def max_rel(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def flat_runs():
    flat = zs.placement("cpu", ranks=range(4))
    return {opt: train(flat, optimizer=opt, parallel=False)
            for opt in (zs.optim.SGD, zs.optim.Adam)}


# -- placements ---------------------------------------------------------------
def test_nested_ranks_make_a_2d_placement():
    p = zs.placement("cpu", ranks=[[0, 1], [2, 3]])
    assert p.hierarchy == (2, 2) and p.world == 4 and p.ndim == 2
    assert p.ranks == [[0, 1], [2, 3]]
    assert p == zs.placement("cpu", ranks=range(4), hierarchy=(2, 2))
    assert p == zs.placement("cpu", ranks=[[0, 1], [2, 3]], hierarchy=[2, 2])
    assert p != zs.placement("cpu", ranks=range(4))
    assert p != zs.placement("cpu", ranks=[[0, 1, 2, 3]])
    assert repr(p) == "placement(type='cpu', ranks=[[0, 1], [2, 3]])"
    flat = zs.placement("cpu", ranks=range(4), hierarchy=(4,))
    assert flat == zs.placement("cpu", ranks=[0, 1, 2, 3])
    assert flat.hierarchy == (4,) and flat.ranks == [0, 1, 2, 3]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"ranks": [[0, 1], [2]]}, ValueError,
     "placement ranks are ragged: row 1 has 1 ranks, row 0 has 2; the rows "
     "of a 2-D placement have equal length"),
    ({"ranks": [[0, 1], 2]}, ValueError,
     "placement ranks mix rows and single ranks: [[0, 1], 2]; give a list "
     "of ranks or a list of equal rows of them"),
    ({"ranks": [[[0]]]}, ValueError,
     "placement ranks nest deeper than rows: [[[0]]]; a placement has at "
     "most 2 hierarchy axes"),
    ({"ranks": [[], []]}, ValueError,
     "placement ranks have empty rows: [[], []]"),
    ({"ranks": [[0, 2], [1, 3]]}, ValueError,
     "placement ranks must be 0..N-1 in order, got [0, 2, 1, 3]"),
    ({"ranks": range(4), "hierarchy": (2, 3)}, ValueError,
     "placement: hierarchy [2, 3] holds 6 ranks but 4 are listed"),
    ({"ranks": range(4), "hierarchy": (4, 0)}, ValueError,
     "placement: hierarchy sizes must be at least 1, got [4, 0]"),
    ({"ranks": range(4), "hierarchy": (1, 2, 2)}, ValueError,
     "placement: hierarchy [1, 2, 2] has 3 axes; a placement has 1 or 2"),
    ({"ranks": range(4), "hierarchy": 4}, TypeError,
     "placement: hierarchy must be a tuple of ints, got 4"),
    ({"ranks": [[0, 1], [2, 3]], "hierarchy": (1, 4)}, ValueError,
     "placement: hierarchy [1, 4] does not match the 2 x 2 rows of ranks; "
     "give one of them"),
])
def test_bad_placements(kwargs, error, message):
    with pytest.raises(error) as caught:
        zs.placement("cpu", **kwargs)
    assert str(caught.value) == message


# -- SBP ----------------------------------------------------------------------
def test_sbp_values():
    assert (repr(B), repr(S(1)), repr(P)) == ("B", "S(1)", "P(sum)")
    assert zs.sbp.B is zs.sbp.broadcast and zs.sbp.S(0) == zs.sbp.split(0)
    assert zs.sbp.P is zs.sbp.partial_sum and S(0) != S(1) != B
    assert (S(1).kind, S(1).dim, B.kind, B.dim) == ("split", 1,
                                                    "broadcast", None)
    with pytest.raises(ValueError, match=r"^sbp\.split: dim must be "
                       r"non-negative, got -1$"):
        S(-1)
    with pytest.raises(TypeError, match=r"^sbp\.split: dim must be an int, "
                       r"got '0'$"):
        S("0")


def test_to_global_marks_the_parameter():
    p = grid()
    model = models.SmallMlp()
    assert model.fc1.weight.placement is None and model.fc1.weight.sbp is None
    assert model.fc2.weight.to_global(p, sbp=[B, S(1)]) is model.fc2.weight
    assert model.fc2.weight.sbp == (B, S(1))
    assert model.fc1.to_global(p, [B, S(0)]) is model.fc1
    assert model.fc1.bias.placement == p and model.fc1.bias.sbp == (B, S(0))
    flat = zs.placement("cpu", ranks=range(2))
    assert model.fc2.bias.to_global(flat, S(0)).sbp == (S(0),)


@pytest.mark.parametrize("shape, sbp, error, message", [
    ((8, 6), [S(0)], ValueError,
     "to_global: a parameter of shape (8, 6): sbp [S(0)] has 1 entries but "
     "the placement has 2 hierarchy axes [2, 2]; give one per axis"),
    ((8, 6), [B, B, S(0)], ValueError,
     "to_global: a parameter of shape (8, 6): sbp [B, B, S(0)] has 3 "
     "entries but the placement has 2 hierarchy axes [2, 2]; give one per "
     "axis"),
    ((8, 6), [B, S(2)], ValueError,
     "to_global: a parameter of shape (8, 6): sbp [B, S(2)] splits dim 2 on "
     "axis 1, out of range for 2 dims"),
    ((7, 6), [B, S(0)], ValueError,
     "to_global: a parameter of shape (7, 6): sbp [B, S(0)] cuts dim 0 (7) "
     "into 2 parts on axis 1; it must divide evenly"),
    # Axis 1 cuts what axis 0 left: 6 / 2 = 3.
    ((6,), [S(0), S(0)], ValueError,
     "to_global: a parameter of shape (6,): sbp [S(0), S(0)] cuts dim 0 (3) "
     "into 2 parts on axis 1; it must divide evenly"),
    ((8, 6), [B, P], ValueError,
     "to_global: a parameter of shape (8, 6): sbp [B, P(sum)] is partial on "
     "axis 1; a parameter is broadcast or split"),
    ((8, 6), [B, "S(0)"], TypeError,
     "to_global: sbp entries are zerosbp.sbp values (sbp.broadcast, "
     "sbp.split(dim)), got 'S(0)'"),
    ((8, 6), "B", TypeError,
     "to_global: sbp must be a list of zerosbp.sbp values, one per "
     "hierarchy axis, got str"),
])
def test_bad_parameter_layouts(shape, sbp, error, message):
    param = nn.Parameter(np.zeros(shape))
    with pytest.raises(error) as caught:
        param.to_global(grid(), sbp=sbp)
    assert str(caught.value) == message
    assert param.placement is None and param.sbp is None


def test_bad_placement_argument():
    with pytest.raises(TypeError, match=r"^to_global: placement must be a "
                       r"zerosbp\.placement, got list$"):
        nn.Parameter(np.zeros(4)).to_global([[0, 1], [2, 3]], sbp=[B, B])


def test_module_to_global_names_the_parameter_and_sets_none():
    model = models.SmallMlp()
    with pytest.raises(ValueError) as caught:
        model.fc2.to_global(grid(), sbp=[B, S(1)])
    assert str(caught.value) == (
        "to_global: parameter 'bias' of shape (4,): sbp [B, S(1)] splits "
        "dim 1 on axis 1, out of range for 1 dims")
    assert model.fc2.weight.sbp is None  # All or nothing.
    with pytest.raises(ValueError, match=r"^to_global: parameter "
                       r"'fc1\.weight' of shape \(8, 6\): sbp \[B, S\(1\)\] "
                       r"cuts dim 1 \(6\) into 4 parts on axis 1; it must "
                       r"divide evenly$"):
        model.to_global(grid(1, 4), sbp=[B, S(1)])


def test_to_global_on_a_graph_tensor_is_refused():
    model = models.SmallMlp()

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x).to_global(grid(), sbp=[S(0), B])

    with pytest.raises(NotImplementedError) as caught:
        G().to(grid())(np.zeros((8, 6), np.float32))
    assert str(caught.value) == (
        "to_global: only parameters take a layout (Parameter.to_global or "
        "Module.to_global, before the graph's first call); inputs are split "
        "on the batch over axis 0 and the compiler lays out the other "
        "tensors")


def test_layout_is_fixed_once_compiled():
    graph, _, _ = train(grid())
    weight = graph.model.fc1.weight
    weight.to_global(grid(), sbp=[B, S(0)])  # The same layout: a no-op.
    with pytest.raises(RuntimeError) as caught:
        weight.to_global(grid(), sbp=[B, B])
    assert str(caught.value) == (
        "to_global: parameter 'fc1.weight' of shape (8, 6) is held by "
        "TrainGraph, compiled with its layout; call to_global before the "
        "graph's first call")
    assert weight.sbp == (B, S(0))


def test_parameter_and_graph_placements_must_agree():
    model = parallel_mlp(grid())
    graph = graph_of(model, zs.optim.SGD, 0).to(
        zs.placement("cpu", ranks=range(4)))
    with pytest.raises(ValueError) as caught:
        graph(*batches(1)[0])
    assert str(caught.value) == (
        "parameter 'fc1.weight' is placed on placement(type='cpu', "
        "ranks=[[0, 1], [2, 3]]) by to_global but the graph on "
        "placement(type='cpu', ranks=[0, 1, 2, 3]); place them on the same "
        "ranks")


def test_batch_divides_over_every_rank():
    graph = graph_of(parallel_mlp(grid()), zs.optim.SGD, 0).to(grid())
    x, y = batches(1, batch=6)[0]
    with pytest.raises(ValueError) as caught:
        graph(x, y)
    assert str(caught.value) == (
        "input 'x': a batch of 6 does not divide over the 2 x 2 ranks of "
        "hierarchy [2, 2]: inputs are split along axis 0 over the data axis "
        "and their rows may be split over the model axis, so the batch must "
        "be a multiple of 4")


# -- capture and training -----------------------------------------------------
def test_capture_ir_shows_the_layouts():
    graph, _, _ = train(grid())
    capture = graph.ir(after="capture")
    assert re.search(r"= #sbp\.placement<cpu, \[0, 1, 2, 3\], "
                     r"hierarchy = \[2, 2\]>", capture)
    for name, sbp in [("fc1.weight", r"\[B, S\(0\)\]"),
                      ("fc1.bias", r"\[B, S\(0\)\]"),
                      ("fc2.weight", r"\[B, S\(1\)\]"),
                      ("fc2.bias", r"\[B, B\]")]:
        assert re.search(r'nn\.variable "%s" param : tensor<[0-9x]+f32, '
                         r"#sbp\.global<%s," % (re.escape(name), sbp),
                         capture), name
    for name in ("x", "y"):
        assert re.search(r'nn\.input "%s" : tensor<[0-9a-z]+, '
                         r"#sbp\.global<\[S\(0\), B\]," % name, capture)


def test_graph_takes_its_parameters_placement():
    zs.manual_seed(0)
    model = parallel_mlp(grid())
    graph = graph_of(model, zs.optim.SGD, 0)  # No to().
    assert graph.placement == grid() and graph.world == 4
    graph(*batches(1)[0])
    assert "hierarchy = [2, 2]" in graph.ir(after="capture")


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize("optimizer", [zs.optim.SGD, zs.optim.Adam],
                         ids=["sgd", "adam"])
def test_trains_to_the_flat_losses(flat_runs, stage, optimizer):
    _, flat_losses, flat_state = flat_runs[optimizer]
    graph, losses, state = train(grid(), stage, optimizer)
    assert max_rel(losses, flat_losses) <= LOSS_RTOL, (losses, flat_losses)
    for name, value in flat_state.items():
        np.testing.assert_allclose(state[name], value, rtol=0,
                                   atol=PARAM_ATOL, err_msg=name)
    # ZeRO partitions each model part over the data axis: the parameters
    # at stage 3, Adam's states from stage 1.
    variable = {3: "fc1.weight"}.get(stage) or (
        "fc1.weight.exp_avg" if stage and optimizer is zs.optim.Adam
        else None)
    if variable:
        assert re.search(r'nn\.variable "%s" (param|opt_state) '
                         r"\{logical_shape = array<i64: 8, 6>, model_split = "
                         r"array<i64: 1, 0>\} : tensor<2x24xf32, "
                         r"#sbp\.global<\[S\(1\), S\(0\)\]" %
                         re.escape(variable), graph.ir(after="zero-stage"))


def test_all_model_parallel_trains_to_the_flat_losses(flat_runs):
    _, flat_losses, _ = flat_runs[zs.optim.SGD]
    _, losses, _ = train(grid(1, 4))
    assert max_rel(losses, flat_losses) <= LOSS_RTOL, (losses, flat_losses)


def test_inference_graph_runs_on_the_split_parameters(flat_runs):
    flat_graph = flat_runs[zs.optim.SGD][0]
    graph, _, _ = train(grid())
    x = batches(1, batch=8)[0][0]

    class Predict(nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    predict = Predict(graph.model)
    out = predict(x)
    assert predict.placement == grid()
    np.testing.assert_allclose(out, Predict(flat_graph.model)(x), rtol=0,
                               atol=PARAM_ATOL)


def test_inference_graph_of_its_own_follows_a_new_layout():
    """Parameters no training graph holds: to_global after a call
    compiles the inference graph again, with the same outputs."""
    model = parallel_mlp(grid())

    class Predict(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    predict = Predict()
    x = batches(1)[0][0]
    before = predict(x)
    assert "[B, S(1)]" in predict.ir(after="capture")
    model.fc2.weight.to_global(grid(), sbp=[B, B])
    np.testing.assert_allclose(predict(x), before, rtol=0, atol=PARAM_ATOL)
    assert "[B, S(1)]" not in predict.ir(after="capture")


@pytest.mark.parametrize("target", ["flat stage 0", "grid stage 3"])
def test_checkpoint_resumes_at_another_layout(flat_runs, tmp_path, target):
    """Saved at [2, 2], ZeRO-2, after 2 steps: flat ranks or ZeRO-3 on the
    grid continue the uninterrupted losses."""
    _, flat_losses, _ = flat_runs[zs.optim.Adam]
    zs.manual_seed(0)
    model = parallel_mlp(grid())
    graph = graph_of(model, zs.optim.Adam, 2).to(grid())
    for x, y in batches(2):
        graph(x, y)
    graph.save_checkpoint(str(tmp_path))

    zs.manual_seed(1)  # Other initial values: the checkpoint's replace them.
    if target == "flat stage 0":
        model = models.SmallMlp()
        graph = graph_of(model, zs.optim.Adam, 0).to(
            zs.placement("cpu", ranks=range(4)))
    else:
        graph = graph_of(parallel_mlp(grid()), zs.optim.Adam, 3).to(grid())
    assert graph.load_checkpoint(str(tmp_path))["step"] == 2
    losses = [float(graph(x, y)) for x, y in batches()[2:]]
    assert max_rel(losses, flat_losses[2:]) <= LOSS_RTOL, (
        losses, flat_losses)
