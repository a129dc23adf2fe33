"""A NaN or Inf loss raises zerosbp.Error naming the step, as zero-run
stops (docs/runtime.md#non-finite-numbers)."""

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import models


def mlp_graph():
    model = models.Mlp(hidden=8)
    opt = zs.optim.Adam(model.parameters())

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    graph = G()
    graph.to(zs.placement("cpu", ranks=[0, 1]))
    return graph


def test_a_nan_loss_raises_with_its_step():
    graph = mlp_graph()
    x, y = models.mlp_batches(1, batch=8)[0]
    assert np.isfinite(graph(x, y))
    bad = x.copy()
    bad[3, 7] = np.nan
    with pytest.raises(zs.Error) as error:
        graph(bad, y)
    assert str(error.value) == "step 2: the loss is nan"
    assert graph.steps_run == 2


def test_an_inf_input_gives_a_non_finite_loss():
    graph = mlp_graph()
    x, y = models.mlp_batches(1, batch=8)[0]
    bad = x.copy()
    bad[0, 0] = np.inf
    with pytest.raises(zs.Error, match=r"^step 1: the loss is (nan|inf)$"):
        graph(bad, y)
