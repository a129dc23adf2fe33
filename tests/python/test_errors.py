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
