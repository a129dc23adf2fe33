"""A NaN or Inf loss raises zerosbp.Error naming the step, as zero-run
stops, and the step makes no update: parameters, optimizer state and the
step count are as before the call, and the next batch trains as if the bad
one had never come (docs/runtime.md#non-finite-numbers)."""

import numpy as np
import pytest

import zerosbp as zs

import models

SKIPPED = ("; the step was skipped (parameters, optimizer state and step "
           "count unchanged)")


def mlp_graph(stage=None, amp=None):
    zs.manual_seed(0)
    model = models.Mlp(hidden=8)
    opt = zs.optim.Adam(model.parameters(), lr=1e-2)

    def configure(graph):
        if amp:
            graph.config.enable_amp(amp)

    graph = models.train_graph(model, opt, stage=stage, world=2,
                               configure=configure)
    return graph, model


def parameters(model):
    return {name: value.copy() for name, value in model.state_dict().items()}


def assert_identical(got, expected):
    assert got.keys() == expected.keys()
    for name in expected:
        assert got[name].tobytes() == expected[name].tobytes(), name


def test_a_nan_loss_raises_with_its_step():
    graph, _ = mlp_graph()
    x, y = models.mlp_batches(1, batch=8)[0]
    assert np.isfinite(graph(x, y))
    bad = x.copy()
    bad[3, 7] = np.nan
    with pytest.raises(zs.Error) as error:
        graph(bad, y)
    assert str(error.value) == "step 2: the loss is nan" + SKIPPED
    assert graph.steps_run == 1


def test_an_inf_input_gives_a_non_finite_loss():
    graph, _ = mlp_graph()
    x, y = models.mlp_batches(1, batch=8)[0]
    bad = x.copy()
    bad[0, 0] = np.inf
    with pytest.raises(zs.Error) as error:
        graph(bad, y)
    assert str(error.value) in ("step 1: the loss is nan" + SKIPPED,
                                "step 1: the loss is inf" + SKIPPED)
    assert graph.steps_run == 0


@pytest.mark.parametrize("stage,amp", [(None, None), (2, None), (3, None),
                                       (2, "bf16")])
def test_a_bad_batch_leaves_the_state_as_it_was(stage, amp):
    batches = models.mlp_batches(4, batch=8)
    bad = batches[1][0].copy()
    bad[6, 0] = np.nan  # On rank 1's half of the batch only.

    graph, model = mlp_graph(stage, amp)
    losses = [graph(*batches[0])]
    before = parameters(model)
    with pytest.raises(zs.Error) as error:
        graph(bad, batches[1][1])
    assert str(error.value) == "step 2: the loss is nan" + SKIPPED
    assert graph.steps_run == 1
    assert_identical(parameters(model), before)
    losses += [graph(*batch) for batch in batches[2:]]
    assert graph.steps_run == 3

    # The same run without the bad batch: the same losses and parameters,
    # bit for bit, so Adam's moments and step count were left as they were.
    clean, clean_model = mlp_graph(stage, amp)
    expected = [clean(*batch) for batch in [batches[0]] + batches[2:]]
    assert [float(v) for v in losses] == [float(v) for v in expected]
    assert_identical(parameters(model), parameters(clean_model))
