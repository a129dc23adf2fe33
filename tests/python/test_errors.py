"""Bad calls raise clear exceptions, with the compiler's messages."""

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import models


def graph_with(configure=None, stage=None, optimizer=True, model=None):
    model = model or models.Mlp(hidden=8)
    opt = zs.optim.Adam(model.parameters()) if optimizer else None

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            if opt:
                self.add_optimizer(opt)
            if configure:
                configure(self.config)

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    return G()


BATCH = models.mlp_batches(1, batch=8)[0]


def test_stage_4():
    with pytest.raises(zs.Error,
                       match=r"stage: expected an integer in \[1, 3\], got 4"):
        graph_with(lambda c: c.enable_zero(True, stage=4))


def test_unknown_deepspeed_key():
    with pytest.raises(zs.Error, match="unknown key 'zero_optimization.stag'"):
        graph_with(lambda c: c.set_deepspeed_config(
            {"zero_optimization": {"stag": 2}}))


def test_deepspeed_parameter_offload_needs_stage_3():
    with pytest.raises(zs.Error, match="offload_param.device: needs ZeRO "
                       "stage 3"):
        graph_with(lambda c: c.set_deepspeed_config(
            {"zero_optimization": {"stage": 2,
                                   "offload_param": {"device": "cpu"}}}))


def test_offload_optimizer_arguments():
    with pytest.raises(ValueError, match="needs nvme_path"):
        graph_with(lambda c: c.set_offload_optimizer("nvme"))
    with pytest.raises(ValueError, match="device must be"):
        graph_with(lambda c: c.set_offload_optimizer("gpu"))
    with pytest.raises(zs.Error, match="needs ZeRO stage 1, 2 or 3"):
        graph_with(lambda c: (c.enable_zero(False),
                              c.set_offload_optimizer("cpu")))


def test_deepspeed_train_batch_size_must_be_the_graphs_batch():
    graph = graph_with(lambda c: c.set_deepspeed_config(
        {"train_batch_size": 16, "zero_optimization": {"stage": 2}}))
    graph.to(zs.placement("cpu", ranks=[0, 1]))
    with pytest.raises(zs.Error, match=r"train_batch_size 16 != the graph's "
                       r"batch 8 \(input 'x', axis 0\)"):
        graph(*BATCH)


def test_deepspeed_train_batch_size_equal_to_the_batch_trains():
    graph = graph_with(lambda c: c.set_deepspeed_config(
        {"train_batch_size": 8, "gradient_accumulation_steps": 2,
         "zero_optimization": {"stage": 2}}))
    graph.to(zs.placement("cpu", ranks=[0, 1]))
    assert np.isfinite(graph(*BATCH))


def test_deepspeed_config_drives_the_stage():
    graph = graph_with(lambda c: c.set_deepspeed_config(
        {"zero_optimization": {"stage": 3}}))
    graph.to(zs.placement("cpu", ranks=[0, 1]))
    graph(*BATCH)
    assert graph.report["stage"] == 3


def test_build_not_defined():
    class NoBuild(nn.Graph):
        pass

    with pytest.raises(NotImplementedError, match="build is not defined"):
        NoBuild()(*BATCH)


def test_mismatched_batch_shape():
    graph = graph_with().to(zs.placement("cpu", ranks=[0, 1]))
    graph(*BATCH)
    x, y = models.mlp_batches(1, batch=4)[0]
    with pytest.raises(ValueError, match=r"input 'x': the graph was traced "
                       r"with shape \(8, 256\)"):
        graph(x, y)


def test_shape_error_names_the_op():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(100, 10)

        def forward(self, x):
            return self.fc(x)

    with pytest.raises(zs.Error, match="matmul"):
        graph_with(model=Bad())(*BATCH)


def test_no_optimizer():
    with pytest.raises(RuntimeError, match="no optimizer"):
        graph_with(optimizer=False)(*BATCH)


def test_backward_not_called():
    model = models.Mlp(hidden=8)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(zs.optim.SGD(model.parameters()))

        def build(self, x, y):
            return nn.functional.cross_entropy(self.model(x), y)

    with pytest.raises(RuntimeError, match="did not call loss.backward"):
        G()(*BATCH)


def test_dropout_p_range():
    assert nn.Dropout(0.0).p == 0
    assert nn.Dropout(0.1).p == 0.1
    for p in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"\[0, 1\)"):
            nn.Dropout(p)


def test_bad_placement_and_amp():
    with pytest.raises(ValueError, match="0..N-1"):
        zs.placement("cpu", ranks=[1, 2])
    with pytest.raises(ValueError, match="fp16 or bf16"):
        graph_with(lambda c: c.enable_amp(True, dtype="int8"))
    with pytest.raises(ValueError, match="exclude each other"):
        graph_with(lambda c: (c.enable_zero(True, stage=1),
                              c.set_deepspeed_config({})))


def test_inspection_before_compile():
    graph = graph_with()
    assert "not compiled yet" in repr(graph)
    with pytest.raises(RuntimeError, match="compiled on its first call"):
        graph.ir(after="zero-stage")


def test_unknown_pipeline_option():
    with pytest.raises(zs.Error, match="unknown key 'overlap-com'"):
        graph_with(lambda c: c.set_pipeline_options("overlap-com=true"))


def message(error_info):
    return str(error_info.value)


def test_enable_zero_mode_must_be_a_bool():
    # "no" is a true string: it would have turned ZeRO on.
    for mode in ("no", 1, None):
        with pytest.raises(TypeError) as error:
            graph_with(lambda c: c.enable_zero(mode, stage=2))
        assert message(error) == ("enable_zero: mode must be True (ZeRO) or "
                                  f"False (off), got {mode!r}")
    graph = graph_with(lambda c: c.enable_zero(np.bool_(False), stage=2))
    assert graph.config.stage == 0


@pytest.mark.parametrize("norm", [float("nan"), float("inf"), -1.0, True])
def test_gradient_clipping_must_be_a_finite_norm(norm):
    with pytest.raises(ValueError) as error:
        graph_with(lambda c: c.set_gradient_clipping(norm))
    assert message(error) == ("set_gradient_clipping: expected a finite "
                              f"norm >= 0 (0: no clipping), got {norm!r}")


def test_integers_past_int64_name_the_argument():
    with pytest.raises(ValueError) as error:
        graph_with(lambda c: c.enable_zero(True, stage=2,
                                           shard_min_size=2 ** 70))
    assert message(error) == (
        "enable_zero: shard_min_size is out of range: "
        "1180591620717411303424 (at most 2**63 - 1)")
    with pytest.raises(ValueError) as error:
        graph_with(lambda c: c.set_gradient_accumulation_steps(2 ** 63))
    assert message(error) == (
        "set_gradient_accumulation_steps: steps is out of range: "
        "9223372036854775808 (at most 2**63 - 1)")
    with pytest.raises(ValueError) as error:
        graph_with(lambda c: c.set_activation_memory_budget(2 ** 64))
    assert message(error) == (
        "set_activation_memory_budget: budget_bytes is out of range: "
        "18446744073709551616 (at most 2**63 - 1)")


def test_config_after_the_first_call_is_refused():
    graph = graph_with(lambda c: c.enable_zero(True, stage=2))
    graph.to(zs.placement("cpu", ranks=[0, 1]))
    graph(*BATCH)
    calls = [
        ("set_deepspeed_config",
         lambda c: c.set_deepspeed_config({"zero_optimization":
                                           {"stage": 3}})),
        ("enable_zero", lambda c: c.enable_zero(True, stage=3)),
        ("enable_amp", lambda c: c.enable_amp(False)),
        ("set_gradient_clipping", lambda c: c.set_gradient_clipping(1.0)),
        ("set_pipeline_options",
         lambda c: c.set_pipeline_options("overlap-comm=true")),
    ]
    for method, call in calls:
        with pytest.raises(RuntimeError) as error:
            call(graph.config)
        assert message(error) == (
            f"{method}: G was compiled on its first call and its config can "
            "no longer change; configure it before the first call, or build "
            "a new graph")
    assert graph.config.stage == 2 and graph.report["stage"] == 2
    assert np.isfinite(graph(*BATCH))


@pytest.mark.parametrize("value,name", [(np.nan, "nan"), (np.inf, "inf"),
                                        (-np.inf, "-inf")])
def test_load_state_dict_refuses_non_finite_values(value, name):
    model = models.Mlp(hidden=8)
    state = model.state_dict()
    before = {key: array.copy() for key, array in state.items()}
    state["fc2.weight"] = state["fc2.weight"].copy()
    state["fc2.weight"][0, 3] = value
    with pytest.raises(ValueError) as error:
        model.load_state_dict(state)
    assert message(error) == (f"load_state_dict: 'fc2.weight': element 3 is "
                              f"{name}; parameters must be finite")
    for key, array in model.state_dict().items():
        assert array.tobytes() == before[key].tobytes()


def test_float_labels_are_refused_naming_the_input():
    graph = graph_with().to(zs.placement("cpu", ranks=[0, 1]))
    x, y = BATCH
    with pytest.raises(TypeError) as error:
        graph(x, y.astype(np.float32))
    assert message(error) == (
        "cross_entropy: labels must be integer class indices, but graph "
        "input 'y' is f32: pass the labels as an integer array")


def test_a_batch_must_divide_over_the_ranks():
    graph = graph_with().to(zs.placement("cpu", ranks=[0, 1]))
    x, y = models.mlp_batches(1, batch=7)[0]
    with pytest.raises(ValueError) as error:
        graph(x, y)
    assert message(error) == (
        "input 'x': a batch of 7 does not divide over 2 ranks: inputs are "
        "split along axis 0, so the batch must be a multiple of 2")
    accumulating = graph_with(
        lambda c: c.set_gradient_accumulation_steps(2)).to(
            zs.placement("cpu", ranks=[0, 1]))
    x, y = models.mlp_batches(1, batch=6)[0]
    with pytest.raises(ValueError) as error:
        accumulating(x, y)
    assert message(error) == (
        "input 'x': a batch of 6 does not divide over 2 ranks x 2 "
        "micro-batches: inputs are split along axis 0, so the batch must be "
        "a multiple of 4")


def test_an_empty_batch_says_so():
    graph = graph_with().to(zs.placement("cpu", ranks=[0, 1]))
    x, y = BATCH
    with pytest.raises(ValueError) as error:
        graph(x[:0], y[:0])
    assert message(error) == "input 'x': the batch is empty (shape (0, 256))"
