"""Dropout with p > 0 in training graphs: the mask is Philox4x32-10 of the
seed, the step, the op's stream and each element's global index
(docs/compiler.md, "Dropout"), so it is the same at every ZeRO stage and
rank count. The reference here is an independent NumPy Philox."""

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import models

# Philox4x32-10 in uint64 arithmetic: every word is kept below 2^32.
M0, M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
W0, W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
LOW = np.uint64(0xFFFFFFFF)
SHIFT = np.uint64(32)


def philox(counter, key):
    """Philox4x32-10 of arrays of counter words `counter` (four) and the
    key (two ints); returns the four output words."""
    c = [np.asarray(word, dtype=np.uint64) & LOW for word in counter]
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & LOW, (k1 + W1) & LOW
        p0, p1 = M0 * c[0], M1 * c[2]
        c = [(p1 >> SHIFT) ^ c[1] ^ k0, p1 & LOW,
             (p0 >> SHIFT) ^ c[3] ^ k1, p0 & LOW]
    return c


def test_philox_known_answers():
    # Random123's kat_vectors for philox4x32 with 10 rounds.
    for counter, key, expected in [
            ([0] * 4, [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                               0x9b00dbd8]),
            ([0xffffffff] * 4, [0xffffffff] * 2,
             [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
            ([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
             [0xa4093822, 0x299f31d0],
             [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1])]:
        assert [int(w) for w in philox(counter, key)] == expected


def keep_mask(shape, p, seed, step, stream, micro_batch=0):
    """Which elements of a tensor of global `shape` dropout keeps."""
    index = np.arange(int(np.prod(shape)), dtype=np.uint64)
    n = index.size
    word = philox([index & LOW,
                   (index >> SHIFT) | np.uint64(micro_batch << 16),
                   np.full(n, step & 0xFFFFFFFF, np.uint64),
                   np.full(n, stream, np.uint64)],
                  [seed & 0xFFFFFFFF, seed >> 32])[0]
    return ((word >> np.uint64(8)).astype(np.float64) * 2.0 ** -24
            >= p).reshape(shape)


P = 0.25
BATCH, IN, HIDDEN, CLASSES = 12, 16, 32, 4  # 12 rows split over 1-4 ranks.
STEPS = 4


class DropoutMlp(nn.Module):
    def __init__(self, p=P):
        super().__init__()
        self.fc1 = nn.Linear(IN, HIDDEN)
        self.drop = nn.Dropout(p)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        return self.fc2(self.relu(self.drop(self.fc1(x))))


def batches(steps=STEPS, seed=4):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((BATCH, IN)).astype(np.float32),
             rng.integers(0, CLASSES, BATCH)) for _ in range(steps)]


def mlp_graph(stage, world, seed=5, sgd=False, eval_mode=False, p=P):
    zs.manual_seed(seed)
    model = DropoutMlp(p)
    if eval_mode:
        model.eval()
    init = {k: v.astype(np.float64) for k, v in model.state_dict().items()}
    optimizer = (zs.optim.SGD(model.parameters(), lr=0.5) if sgd else
                 zs.optim.Adam(model.parameters(), lr=0.01))
    graph = models.train_graph(model, optimizer, stage=stage, world=world)
    return model, init, graph


def reference_step(params, x, y, keep, lr):
    """Float64 forward with the reference mask, and the SGD update."""
    x = x.astype(np.float64)
    scale = 1 / (1 - P)
    h = x @ params["fc1.weight"].T + params["fc1.bias"]
    d = h * keep * scale
    r = np.maximum(d, 0)
    z = r @ params["fc2.weight"].T + params["fc2.bias"]
    z = z - z.max(axis=1, keepdims=True)
    prob = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    loss = -np.mean(np.log(prob[np.arange(len(y)), y]))
    dz = prob.copy()
    dz[np.arange(len(y)), y] -= 1
    dz /= len(y)
    dh = (dz @ params["fc2.weight"]) * (d > 0) * keep * scale
    grads = {"fc2.weight": dz.T @ r, "fc2.bias": dz.sum(0),
             "fc1.weight": dh.T @ x, "fc1.bias": dh.sum(0)}
    return loss, {k: params[k] - lr * grads[k] for k in params}


def test_first_loss_matches_numpy_and_stages_agree_bit_for_bit():
    data = batches()
    for world in (1, 2, 3, 4):
        losses = {}
        for stage in (0, 1, 2, 3):
            _, init, graph = mlp_graph(stage, world)
            losses[stage] = np.array([graph(*b) for b in data])
            keep = keep_mask((BATCH, HIDDEN), P, seed=5, step=1, stream=0)
            expected, _ = reference_step(init, *data[0], keep, lr=0)
            np.testing.assert_allclose(losses[stage][0], expected, rtol=1e-5,
                                       err_msg=f"world {world} stage {stage}")
        for stage in (1, 2, 3):
            np.testing.assert_array_equal(
                losses[stage], losses[0],
                err_msg=f"world {world}: stage {stage} differs from stage 0")


def test_backward_masks_the_gradient_like_numpy():
    data = batches(steps=1)
    keep = keep_mask((BATCH, HIDDEN), P, seed=5, step=1, stream=0)
    for world, stage in ((1, 0), (3, 2), (4, 3)):
        model, init, graph = mlp_graph(stage, world, sgd=True)
        loss = graph(*data[0])
        expected_loss, expected = reference_step(init, *data[0], keep, lr=0.5)
        np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
        for name, value in model.state_dict().items():
            np.testing.assert_allclose(value, expected[name], rtol=1e-4,
                                       atol=1e-6, err_msg=name)


class Probe(nn.Module):
    """Two dropouts of x * w: with x = 1 and SGD at lr = 1, each weight's
    update is its dropout's mask times 1 / ((1 - p) n), computed by the
    backward dropout, so the masks can be read off the weights."""

    def __init__(self, rows, cols):
        super().__init__()
        self.w1 = nn.Parameter(np.ones((rows, cols)))
        self.w2 = nn.Parameter(np.ones((rows, cols)))
        self.d1 = nn.Dropout(P)
        self.d2 = nn.Dropout(P)

    def forward(self, x):
        return self.d1(x * self.w1).mean() + self.d2(x * self.w2).mean()


def probe_masks(seed, stage, world, rows=8, cols=24, steps=2):
    zs.manual_seed(seed)
    probe = Probe(rows, cols)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.probe = probe
            self.add_optimizer(zs.optim.SGD(probe.parameters(), lr=1.0))
            if stage:
                self.config.enable_zero(True, stage=stage, shard_min_size=1)

        def build(self, x):
            loss = self.probe(x)
            loss.backward()
            return loss

    graph = G().to(zs.placement("cpu", ranks=list(range(world))))
    x = np.ones((rows, cols), np.float32)
    masks, losses = [], []
    before = probe.state_dict()
    for _ in range(steps):
        losses.append(float(graph(x)))
        after = probe.state_dict()
        masks.append([before[w] != after[w] for w in ("w1", "w2")])
        before = after
    return masks, losses, graph


@pytest.mark.parametrize("seed,stage,world", [(11, 0, 1), (11, 3, 4),
                                              (2 ** 64 - 3, 2, 2)])
def test_masks_follow_seed_step_and_stream(seed, stage, world):
    rows, cols = 8, 24
    masks, losses, _ = probe_masks(seed, stage, world, rows, cols)
    for step, (m1, m2) in enumerate(masks, start=1):
        ref1 = keep_mask((rows, cols), P, seed, step, stream=0)
        ref2 = keep_mask((rows, cols), P, seed, step, stream=1)
        np.testing.assert_array_equal(m1, ref1)
        np.testing.assert_array_equal(m2, ref2)
        assert 0.6 < m1.mean() < 0.9
    # The first loss counts the kept elements of both (w = 1), each worth
    # 1/(1-p).
    first = keep_mask((rows, cols), P, seed, 1, 0).sum() + \
        keep_mask((rows, cols), P, seed, 1, 1).sum()
    np.testing.assert_allclose(losses[0], first / (1 - P) / (rows * cols),
                               rtol=1e-6)
    # Two dropout ops, and two steps, draw different masks.
    assert (masks[0][0] != masks[0][1]).any()
    assert (masks[0][0] != masks[1][0]).any()


def test_p_zero_and_eval_emit_no_dropout():
    data = batches(steps=2)
    _, _, off = mlp_graph(2, 2, p=0.0)
    off(*data[0])
    assert "nn.dropout" not in off.ir(after="capture")
    _, _, evaluated = mlp_graph(2, 2, eval_mode=True)
    without = [evaluated(*b) for b in data]
    assert "nn.dropout" not in evaluated.ir(after="capture")
    model, _, trained = mlp_graph(2, 2)
    assert model.training and model.drop.training
    with_dropout = [trained(*b) for b in data]
    capture = trained.ir(after="capture")
    assert capture.count("nn.dropout") == 1
    assert capture.count("nn.step") == 1
    assert "stream = 0" in capture and "seed = 5" in capture
    assert not np.allclose(with_dropout, without, rtol=1e-3)
    # train() after eval() turns it back on.
    assert model.eval().drop.training is False
    assert model.train().drop.training is True


def test_functional_dropout_and_bad_p():
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        nn.functional.dropout(None, p=1.0)
    # training=False and p=0 return the input itself, traced or not.
    marker = object()
    assert nn.functional.dropout(marker, p=0.5, training=False) is marker
    assert nn.functional.dropout(marker, p=0.0) is marker
    with pytest.raises(ValueError, match="2\\^64"):
        zs.manual_seed(2 ** 64)
    zs.manual_seed(7)
    assert zs.initial_seed() == 7
