"""Inference graphs: a build() that returns outputs without backward()
compiles to an inference plan that runs on the training graph's parameter
storage, split at stage 3, and returns numpy arrays of the global batch."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

from gpt2_reference import numpy_logits
import models

BATCH = 24  # Splits evenly over 1-4 ranks.


class Predict(nn.Graph):
    """Logits and mean cross-entropy of `model` on a batch."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()

    def build(self, x, y):
        logits = self.model(x)
        return logits, self.loss_fn(logits, y)


def mlp_reference(state, x, y):
    """The Mlp's logits and loss in float64."""
    s = {k: np.asarray(v, np.float64) for k, v in state.items()}
    h = np.maximum(x @ s["fc1.weight"].T + s["fc1.bias"], 0)
    logits = h @ s["fc2.weight"].T + s["fc2.bias"]
    return logits, cross_entropy(logits, y)


def cross_entropy(logits, labels):
    logits = logits.reshape(-1, logits.shape[-1])
    top = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - top).sum(-1)) + top[:, 0]
    return float(np.mean(lse - logits[np.arange(len(logits)),
                                      labels.reshape(-1)]))


def assert_close(got, want, tol=2e-6):
    scale = max(1.0, float(np.abs(want).max()))
    assert float(np.abs(np.asarray(got, np.float64) - want).max()) \
        <= tol * scale


def mlp_setup(stage, world, seed=11):
    zs.manual_seed(seed)
    model = models.Mlp(hidden=32)
    train = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.02), stage=stage,
        world=world)
    batches = models.mlp_batches(3, batch=BATCH, seed=seed)
    return model, train, batches


@pytest.mark.parametrize("world", [1, 2, 3, 4])
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_eval_equals_numpy_before_and_after_training(stage, world):
    model, train, batches = mlp_setup(stage, world)
    predict = Predict(model)
    x, y = batches[0]
    initial = {k: np.array(v) for k, v in model.state_dict().items()}
    # Compiled but not run: the first evaluation sees the initial
    # parameters on the ranks, split as the training graph holds them.
    train.compile(x, y)
    for step in range(4):
        logits, loss = predict(x, y)
        assert logits.shape == (BATCH, 10) and logits.dtype == np.float32
        state = model.state_dict()
        if step == 0:
            for name, value in initial.items():
                assert np.array_equal(state[name], value), name
        want_logits, want_loss = mlp_reference(state, x, y)
        assert_close(logits, want_logits)
        assert abs(float(loss) - want_loss) <= 2e-6 * max(1, want_loss)
        if step < 3:
            train(*batches[step % len(batches)])
    assert predict.inference and not train.inference
    assert predict._owner is train
    # The steps of the training graph are not counted by evaluations.
    assert train.steps_run == 3 and predict._session.evaluations_run == 4


@pytest.mark.parametrize("stage", [2, 3])
def test_gpt2_eval_equals_numpy(stage):
    zs.manual_seed(2)
    vocab, seq, embed, heads, layers = 29, 8, 16, 2, 2
    model = models.Gpt2(vocab, seq, embed, heads, layers)
    train = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.01), stage=stage,
        world=4)
    batches = models.gpt2_batches(2, 8, seq, vocab)
    predict = Predict(model)
    train(*batches[0])
    train(*batches[1])
    tokens, labels = batches[0]
    logits, loss = predict(tokens, labels)
    want = numpy_logits(model.state_dict(), heads, tokens)
    assert logits.shape == (8, seq, vocab)
    assert_close(logits, want, tol=1e-5)
    assert abs(float(loss) - cross_entropy(want, labels)) <= 1e-5


def test_storage_is_shared_not_copied():
    model, train, batches = mlp_setup(stage=3, world=2)
    predict = Predict(model)
    x, y = batches[0]
    train(x, y)
    first, _ = predict(x, y)
    # The session's parameters are the training graph's: a step changes
    # what eval returns, with no reload and no set_parameter.
    train(x, y)
    second, _ = predict(x, y)
    assert not np.array_equal(first, second)
    assert_close(second, mlp_reference(model.state_dict(), x, y)[0])
    # Writing a parameter through the training graph shows in eval too.
    model.fc2.bias.copy_(np.full(10, 3.0, np.float32))
    third, _ = predict(x, y)
    assert_close(third, mlp_reference(model.state_dict(), x, y)[0])


def test_stage3_eval_memory_is_activations_and_buckets():
    model, train, batches = mlp_setup(stage=3, world=4)
    predict = Predict(model)
    x, y = batches[0]
    train(x, y)
    predict(x, y)
    report = predict.memory_report()
    planned = report["planned"]["peak_bytes_by_role"]
    session = predict._session
    # The plan holds each rank's parameter shards first; the eval session
    # holds only what follows them.
    assert planned["param"] > 0
    assert session.arena_bytes_held <= session.arena_bytes - planned["param"]
    assert planned["grad"] == planned["master"] == planned["opt_state"] == 0
    assert report["planned"]["shares_parameters_with"] == "TrainGraph"
    assert report["planned"]["held_arena_bytes"] == session.arena_bytes_held
    for measured in report["measured"]:
        # Measured equals planned for what the eval graph holds, and it
        # holds no parameter bytes of its own.
        assert measured["by_role"]["param"] == 0
        assert measured["total"] == report["planned"]["added_bytes"]
        for role in ("activation", "comm_buffer", "input"):
            assert measured["by_role"][role] == planned[role], role
        assert measured["high_water"] <= session.arena_bytes_held
    # Stage 3 gathers the parameters for the forward: buckets are live.
    assert planned["comm_buffer"] > 0
    # The training graph's measured peak is its plan's most bytes live at
    # once (inputs die at their last read, as planned).
    lower_bound = train.report["plan"]["memory_plan"]["lower_bound_bytes"]
    assert [m["total"] for m in train.memory_report()["measured"]] == \
        [lower_bound] * 4
    # The training graph's own memory is unchanged by the eval graph.
    assert train.memory_report()["measured"][0]["by_role"]["param"] == \
        train.memory_report()["planned"]["peak_bytes_by_role"]["param"]


def test_ir_is_an_inference_graph():
    model, train, batches = mlp_setup(stage=3, world=2)
    predict = Predict(model)
    train(*batches[0])
    predict(*batches[0])
    assert "zero-inference" in predict.passes
    assert "zero-autodiff" not in predict.passes
    final = predict.ir()
    for word in ("nn.gradient", "nn.adam", "nn.assign", "_grad"):
        assert word not in final, word
    assert "all_gather" in final  # Stage 3: parameters gathered per use.
    plan = json.load(open(os.path.join(predict._workdir, "model.zplan")))
    assert plan["mode"] == "eval"
    assert {v["role"] for v in plan["variables"]} == {"param"}
    assert len(plan["outputs"]) == 2


def test_standalone_eval_follows_its_parameters():
    zs.manual_seed(5)
    model = models.Mlp(hidden=32)
    x, y = models.mlp_batches(1, batch=BATCH)[0]
    predict = Predict(model).to(zs.placement("cpu", ranks=range(2)))
    logits, _ = predict(x, y)  # Before any training graph: its own copy.
    assert predict._owner is None
    assert_close(logits, mlp_reference(model.state_dict(), x, y)[0])
    model.fc1.bias.copy_(np.linspace(-1, 1, 32).astype(np.float32))
    logits, _ = predict(x, y)
    assert_close(logits, mlp_reference(model.state_dict(), x, y)[0])
    # Once a training graph holds the parameters, eval runs on them.
    train = models.train_graph(model, zs.optim.SGD(model.parameters(),
                                                   lr=0.1), stage=3, world=2)
    train(x, y)
    logits, _ = predict(x, y)
    assert predict._owner is train
    assert_close(logits, mlp_reference(model.state_dict(), x, y)[0])


def test_bf16_eval_reads_the_bf16_parameters():
    zs.manual_seed(3)
    model = models.Mlp(hidden=32)
    train = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.02), stage=2, world=2,
        configure=lambda g: g.config.enable_amp("bf16"))
    x, y = models.mlp_batches(1, batch=BATCH)[0]
    train(x, y)
    logits, loss = Predict(model)(x, y)
    want, want_loss = mlp_reference(model.state_dict(), x, y)
    # bf16 compute: 8 bits of mantissa.
    assert float(np.abs(logits - want).max()) < 0.05 * np.abs(want).max()
    assert abs(float(loss) - want_loss) < 0.02 * want_loss


def test_errors():
    model, train, batches = mlp_setup(stage=2, world=2)
    x, y = batches[0]
    train(x, y)

    class WithOptimizer(Predict):
        def __init__(self):
            super().__init__(model)
            self.add_optimizer(zs.optim.SGD(model.parameters(), lr=0.1))

    with pytest.raises(RuntimeError, match="did not call loss.backward"
                       r"\(\) but the graph has an optimizer"):
        WithOptimizer()(x, y)

    class Configured(Predict):
        def __init__(self):
            super().__init__(model)
            self.config.enable_zero(True, stage=3, shard_min_size=1)

    with pytest.raises(ValueError, match="runs on the parameters of "
                       "TrainGraph and takes its config"):
        Configured()(x, y)

    other = nn.Linear(10, 10)

    class Mixed(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model, self.other = model, other

        def build(self, x):
            return self.other(self.model(x))

    with pytest.raises(ValueError, match="parameter 'other.weight' is used "
                       "by Mixed.build"):
        Mixed()(x)

    class ReturnsNothing(Predict):
        def build(self, x, y):
            self.model(x)

    with pytest.raises(RuntimeError, match="nor graph tensors"):
        ReturnsNothing(model)(x, y)

    predict = Predict(model)
    predict(x, y)
    with pytest.raises(RuntimeError, match="inference graph and holds no "
                       "training state"):
        predict.save_checkpoint("unused")
    with pytest.raises(ValueError, match="traced with shape"):
        predict(x[:12], y[:12])


MPI_SCRIPT = """
import json, sys
sys.path.insert(0, {tests!r})
import numpy as np, zerosbp as zs
import models, test_eval
model, train, batches = test_eval.mlp_setup(stage=3, world=2)
predict = test_eval.Predict(model)
out = []
for x, y in batches:
    train(x, y)
    logits, loss = predict(x, y)
    out.append([logits.tolist(), float(loss)])
state = {{k: v.tolist() for k, v in model.state_dict().items()}}
if zs.rank() == 0:
    json.dump({{"out": out, "state": state}}, open({out!r}, "w"))
"""


def test_under_mpi_eval_equals_in_process(tmp_path):
    script = tmp_path / "eval.py"
    result = tmp_path / "result.json"
    script.write_text(MPI_SCRIPT.format(
        tests=os.path.dirname(os.path.abspath(__file__)), out=str(result)))
    done = subprocess.run(
        [sys.executable, "-m", "zerosbp.launch", "-n", "2", str(script)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(result.read_text())
    model, train, batches = mlp_setup(stage=3, world=2)
    predict = Predict(model)
    for (x, y), (logits, loss) in zip(batches, got["out"]):
        train(x, y)
        want_logits, want_loss = predict(x, y)
        np.testing.assert_array_equal(np.float32(logits), want_logits)
        assert np.float32(loss) == want_loss


def run(*command):
    done = subprocess.run([str(c) for c in command], capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_zero_run_eval_on_a_training_checkpoint(tmp_path):
    """zero-compile --eval and zero-run --eval --resume: the parameters of a
    stage-2 checkpoint on 2 ranks, evaluated at stage 3 on 4 ranks (read
    resharded), equal a float64 NumPy forward of the saved parameters."""
    compile_, run_ = os.environ["ZEROSBP_COMPILE"], os.environ["ZEROSBP_RUN"]
    train_plan, eval_plan = tmp_path / "train.zplan", tmp_path / "eval.zplan"
    assert run(compile_, "--preset=tiny", "--world=2", "--stage=2",
               "--report=none", "-o", train_plan)[0] == 0
    assert run(compile_, "--preset=tiny", "--world=4", "--stage=3", "--eval",
               "--report=none", "-o", eval_plan)[0] == 0
    checkpoints = tmp_path / "ck"
    code, out = run(run_, train_plan, "--steps=2", "--quiet",
                    "--checkpoint-dir", checkpoints)
    assert code == 0, out
    rng = np.random.default_rng(4)
    tokens = rng.integers(0, 512, (3, 4, 32))
    labels = rng.integers(0, 512, (3, 4, 32))
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "tokens.npy", tokens)
    np.save(data / "labels.npy", labels)
    outputs, report = tmp_path / "outputs", tmp_path / "report.json"
    code, out = run(run_, eval_plan, "--eval", "--steps=3", "--resume",
                    checkpoints, "--data", data, "--outputs", outputs,
                    "--report-file", report)
    assert code == 0, out
    assert "batch 3/3  loss" in out
    assert run(os.environ["ZEROSBP_CHECKPOINT"], "to-fp32", checkpoints,
               tmp_path / "params.safetensors")[0] == 0
    state = zs.load(str(tmp_path / "params.safetensors"))
    logits = np.load(outputs / "output0.npy")
    losses = np.load(outputs / "output1.npy")
    assert logits.shape == (3, 4, 32, 512) and losses.shape == (3,)
    for b in range(3):
        want = numpy_logits(state, 4, tokens[b])
        assert_close(logits[b], want, tol=1e-5)
        assert abs(losses[b] - cross_entropy(want, labels[b])) <= 1e-5
    result = json.loads(report.read_text())
    assert result["mode"] == "eval" and result["losses"] == \
        [float(l) for l in losses]


def test_zero_run_eval_with_init(tmp_path):
    """zero-run --eval --init: parameters given as .npy files (PyTorch names
    and layouts), evaluated at stage 3 on 4 ranks, equal a float64 NumPy
    forward of those files; no training step runs."""
    compile_, run_ = os.environ["ZEROSBP_COMPILE"], os.environ["ZEROSBP_RUN"]
    train_plan, eval_plan = tmp_path / "train.zplan", tmp_path / "eval.zplan"
    assert run(compile_, "--preset=tiny", "--world=1", "--report=none", "-o",
               train_plan)[0] == 0
    assert run(compile_, "--preset=tiny", "--world=4", "--stage=3", "--eval",
               "--report=none", "-o", eval_plan)[0] == 0
    # The parameters' names and shapes, from a saved model; the values are
    # drawn anew below.
    saved = tmp_path / "saved"
    code, out = run(run_, train_plan, "--steps=1", "--quiet", "--save", saved)
    assert code == 0, out
    rng = np.random.default_rng(9)
    init = tmp_path / "init"
    init.mkdir()
    state = {}
    for path in sorted(saved.glob("*.npy")):
        shape = np.load(path).shape
        value = rng.normal(0, 0.2, shape).astype(np.float32)
        state[path.stem] = value
        np.save(init / path.name, value)
    assert len(state) > 4
    tokens = rng.integers(0, 512, (2, 4, 32))
    labels = rng.integers(0, 512, (2, 4, 32))
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "tokens.npy", tokens)
    np.save(data / "labels.npy", labels)
    outputs = tmp_path / "outputs"
    code, out = run(run_, eval_plan, "--eval", "--steps=2", "--init", init,
                    "--data", data, "--outputs", outputs)
    assert code == 0, out
    logits = np.load(outputs / "output0.npy")
    losses = np.load(outputs / "output1.npy")
    for b in range(2):
        want = numpy_logits(state, 4, tokens[b])
        assert_close(logits[b], want, tol=1e-5)
        assert abs(losses[b] - cross_entropy(want, labels[b])) <= 1e-5


def test_zero_run_eval_flags(tmp_path):
    compile_, run_ = os.environ["ZEROSBP_COMPILE"], os.environ["ZEROSBP_RUN"]
    train_plan, eval_plan = tmp_path / "train.zplan", tmp_path / "eval.zplan"
    run(compile_, "--preset=tiny", "--world=1", "-o", train_plan)
    run(compile_, "--preset=tiny", "--world=1", "--eval", "-o", eval_plan)
    for args, message in [
        ([eval_plan, "--steps=1"],
         f"zero-run: {eval_plan} is an inference plan (zero-compile --eval): "
         "run it with --eval"),
        ([train_plan, "--steps=1", "--eval"],
         f"zero-run: --eval: {train_plan} is a training plan; compile an "
         "inference plan with zero-compile --eval"),
        ([eval_plan, "--steps=1", "--eval", "--checkpoint-dir", tmp_path],
         "zero-run: --checkpoint-dir trains; --eval runs the forward only"),
        ([train_plan, "--steps=1", "--outputs", tmp_path / "o"],
         "zero-run: --outputs needs --eval"),
    ]:
        code, out = run(run_, *args)
        assert code == 1 and out.strip() == message, out
    assert not (tmp_path / "o").exists()


class DropoutMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 32)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(self.drop(nn.functional.relu(self.fc1(x))))


def test_eval_turns_dropout_off():
    zs.manual_seed(9)
    model = DropoutMlp()
    train = models.train_graph(model, zs.optim.SGD(model.parameters(),
                                                   lr=0.05), stage=3, world=2)
    predict = Predict(model)
    x, y = models.mlp_batches(1, batch=BATCH)[0]
    train(x, y)
    logits, loss = predict(x, y)
    # The same module traced with dropout; the inference graph drops it.
    assert "nn.dropout" in train.ir(after="capture")
    assert "nn.dropout" in predict.ir(after="capture")
    assert "nn.dropout" not in predict.ir(after="zero-inference")
    want_logits, want_loss = mlp_reference(model.state_dict(), x, y)
    assert_close(logits, want_logits)
    # Twice the same: no mask, no step.
    again, _ = predict(x, y)
    np.testing.assert_array_equal(logits, again)


def test_checkpoints_and_inference_graphs(tmp_path):
    model, train, batches = mlp_setup(stage=2, world=2)
    x, y = batches[0]
    train(x, y)
    path = train.save_checkpoint(tmp_path / "ck")
    trained = model.state_dict()
    shared = Predict(model)
    shared(x, y)
    # A shared inference graph would load parameters under the training
    # graph's optimizer state: refused.
    with pytest.raises(RuntimeError, match="Predict runs on the parameters "
                       "of TrainGraph; load the checkpoint into that graph"):
        shared.load_checkpoint(path)
    # One with its own parameters loads them (stage 3, 4 ranks: resharded).
    zs.manual_seed(99)
    fresh = models.Mlp(hidden=32)
    own = Predict(fresh).to(zs.placement("cpu", ranks=range(4)))
    own.config.enable_zero(True, stage=3, shard_min_size=1)
    own.load_checkpoint(tmp_path / "ck")
    logits, loss = own(x, y)
    assert_close(logits, mlp_reference(trained, x, y)[0])
    own.load_checkpoint(path)  # After compiling too.
    np.testing.assert_array_equal(own(x, y)[0], logits)
