"""Graphs placed on `cuda`: the IR carries the placement, the plan runs on
the GPU, and its losses equal the same graph's on the CPU. Without a GPU the
first step's session fails with one line naming the reason."""

import re

import numpy as np
import pytest

import zerosbp as zs

import models

STEPS = 3


def mlp_graph(device, stage):
    zs.manual_seed(1)
    model = models.Mlp()
    optimizer = zs.optim.Adam(model.parameters(), lr=0.01)
    return models.train_graph(model, optimizer, stage=stage, world=1,
                              device=device)


def test_placement_types():
    assert zs.placement("cuda", ranks=[0]).type == "cuda"
    with pytest.raises(ValueError,
                       match=r"placement type 'tpu' is not supported "
                             r"\(cpu or cuda\)"):
        zs.placement("tpu", ranks=[0])


@pytest.mark.parametrize("stage", [0, 2])
def test_cuda_graph_trains_like_cpu(stage):
    batches = models.mlp_batches(1, batch=64) * STEPS
    cpu = mlp_graph("cpu", stage)
    cpu_losses = [cpu(*batch) for batch in batches]
    cuda = mlp_graph("cuda", stage)
    try:
        cuda_losses = [cuda(*batch) for batch in batches]
    except RuntimeError as error:
        message = str(error)
        assert "\n" not in message
        assert re.search(r"rank 0: no CUDA device: \S", message), message
        # The graph was compiled for the GPU before the session failed.
        assert "#sbp.placement<cuda, [0]>" in cuda.ir(after="zero-export-plan")
        pytest.skip("no CUDA device: " + message.split("no CUDA device: ")[1])
    assert "#sbp.placement<cuda, [0]>" in cuda.ir(after="zero-export-plan")
    np.testing.assert_allclose(cuda_losses, cpu_losses, rtol=1e-4)
