"""Feed-forward classifier: learning, determinism, epoch and grid selection on dev."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from laser_repro.evaluation import classifier
from laser_repro.evaluation.classifier import ConfigError, FeatureSet, HParams


@pytest.fixture(autouse=True)
def _one_thread(torch_single_thread):
    yield


def blobs(n: int, seed: int, dim: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Two linearly separable classes: the sign of the first coordinate, with a margin."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    x[:, 0] += np.where(y == 1, 1.0, -1.0)
    return x, y


def xor(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """XOR of the signs of two coordinates: no linear model gets it, one hidden layer does."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    x += np.sign(x) * 0.2
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).astype(np.int64)
    return x, y


def fs(x, y, name="") -> FeatureSet:
    return classifier.row_features(x, y, name=name)


def weights(model) -> list[np.ndarray]:
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_linearly_separable_toy_set_is_learned_perfectly():
    train, dev, test = blobs(200, 0), blobs(100, 1), blobs(100, 2)
    hp = HParams(hidden=(8,), lr=0.01, epochs=15, batch_size=16)
    result = classifier.train(fs(*train), fs(*dev), 2, hp, seed=3)
    assert result.dev_accuracy == 100.0
    assert classifier.accuracy(result.model, fs(*train)) == 100.0
    assert classifier.accuracy(result.model, fs(*test)) == 100.0


def test_same_seed_same_weights_and_accuracy_different_seed_different_weights():
    train, dev = fs(*xor(200, 0)), fs(*xor(100, 1))
    hp = HParams(hidden=(16,), dropout=0.2, lr=0.02, epochs=5, batch_size=32)
    a = classifier.train(train, dev, 2, hp, seed=7)
    b = classifier.train(train, dev, 2, hp, seed=7)
    c = classifier.train(train, dev, 2, hp, seed=8)
    for wa, wb in zip(weights(a.model), weights(b.model)):
        np.testing.assert_array_equal(wa, wb)
    assert a.dev_curve == b.dev_curve and a.train_loss == b.train_loss and a.best_epoch == b.best_epoch
    assert any(not np.array_equal(wa, wc) for wa, wc in zip(weights(a.model), weights(c.model)))


def test_training_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    classifier.train(fs(*blobs(50, 0)), fs(*blobs(20, 1)), 2, HParams(hidden=(4,), dropout=0.5, epochs=2), seed=1)
    assert torch.equal(torch.rand(3), expected)


def test_best_epoch_on_dev_equals_training_that_many_epochs():
    train, dev = fs(*xor(200, 0)), fs(*xor(100, 1))
    hp = HParams(hidden=(16,), lr=0.02, epochs=12, batch_size=32)
    result = classifier.train(train, dev, 2, hp, seed=5)
    assert result.dev_accuracy == max(result.dev_curve)
    assert result.best_epoch == result.dev_curve.index(max(result.dev_curve)) + 1
    assert classifier.accuracy(result.model, dev) == result.dev_accuracy
    # The kept snapshot is exactly the model trained for best_epoch epochs (shuffles are seeded per run).
    again = classifier.train(train, None, 2, HParams(**{**hp.as_dict(), "epochs": result.best_epoch}), seed=5)
    for w1, w2 in zip(weights(result.model), weights(again.model)):
        np.testing.assert_array_equal(w1, w2)


def test_patience_stops_early():
    train, dev = fs(*blobs(100, 0)), fs(*blobs(50, 1))
    result = classifier.train(train, dev, 2, HParams(hidden=(4,), lr=0.05, epochs=50, patience=2), seed=0)
    assert len(result.dev_curve) < 50
    assert len(result.dev_curve) - result.best_epoch == 2


def test_selection_picks_the_grid_point_best_on_dev():
    # On XOR a linear model (hidden=()) cannot beat ~75%; a hidden layer reaches ~100%. The hidden
    # layer comes second in the grid so that the choice is not just the first point.
    train, dev, test = fs(*xor(300, 0)), fs(*xor(200, 1)), fs(*xor(200, 2))
    grid = classifier.expand_grid({"lr": 0.03, "epochs": 30, "batch_size": 32}, {"hidden": [[], [16]]})
    sel = classifier.select(train, dev, 2, grid, seed=0)
    assert [t["hidden"] for t in sel.trials] == [[], [16]]
    assert sel.trials[0]["dev_accuracy"] < 85 < sel.trials[1]["dev_accuracy"]
    assert sel.best.hparams.hidden == (16,)
    assert sel.best.dev_accuracy == max(t["dev_accuracy"] for t in sel.trials)
    assert classifier.evaluate(sel.model, {"test": test})["test"] > 90


def test_selection_looks_at_dev_only():
    # Dev labels are the XOR complement: the linear model (worse on train/test) is better on dev.
    (xt, yt), (xd, yd) = xor(300, 0), xor(200, 1)
    grid = classifier.expand_grid({"lr": 0.03, "epochs": 30, "batch_size": 32}, {"hidden": [[16], []]})
    sel = classifier.select(fs(xt, yt), fs(xd, 1 - yd), 2, grid, seed=0)
    assert sel.best.hparams.hidden == ()


def test_ties_go_to_the_first_grid_point():
    train, dev = fs(*blobs(60, 0)), fs(*blobs(30, 1))
    # patience larger than epochs changes nothing: two identical trials.
    grid = classifier.expand_grid({"hidden": [4], "epochs": 3}, {"patience": [0, 10]})
    sel = classifier.select(train, dev, 2, grid, seed=0)
    assert sel.trials[0]["dev_accuracy"] == sel.trials[1]["dev_accuracy"]
    assert sel.best.hparams.patience == 0


def test_features_are_built_per_mini_batch():
    x, y = blobs(300, 0)
    sizes = []

    def build(rows):
        sizes.append(len(rows))
        assert np.all(np.diff(rows) > 0)
        return x[rows]

    data = FeatureSet(y, build, x.shape[1], "spy")
    classifier.train(data, None, 2, HParams(epochs=2, batch_size=64), seed=0)
    assert max(sizes) == 64 and sum(sizes) == 600
    sizes.clear()
    classifier.predict(classifier.build_model(6, 2, HParams()), data, batch_size=100)
    assert sizes == [100, 100, 100]


def test_row_features_normalize():
    x = np.array([[3.0, 4.0], [0.0, 2.0]], dtype=np.float32)
    data = classifier.row_features(x, np.array([0, 1]), normalize=True)
    np.testing.assert_allclose(data.build(np.array([0, 1])), [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)


def test_parse_config_merges_and_validates():
    defaults = {"hidden": [10], "epochs": 5, "grid": {"lr": [0.1, 0.01]}, "seed": 1, "normalize": False}
    cfg = classifier.parse_config('{"epochs": 7, "grid": {"dropout": [0.0, 0.5]}, "normalize": true}', defaults,
                                  options=("normalize",))
    assert cfg.seed == 1 and cfg.options == {"normalize": True}
    points = cfg.points()
    assert [(p.epochs, p.dropout, p.hidden) for p in points] == [(7, 0.0, (10,)), (7, 0.5, (10,))]
    fixed = classifier.parse_config('{"lr": 0.5}', defaults, options=("normalize",))
    assert fixed.grid == {} and [p.lr for p in fixed.points()] == [0.5]
    with pytest.raises(ConfigError, match="'hiden'"):
        classifier.parse_config('{"hiden": [3]}', defaults, options=("normalize",))
    with pytest.raises(ConfigError, match="'normalize'"):
        classifier.parse_config("", defaults)  # a task option the task does not declare
    with pytest.raises(ConfigError, match="'dropout'"):
        classifier.parse_config('{"grid": {"dropout": [1.5]}}', defaults, options=("normalize",))
    with pytest.raises(ConfigError, match="'lr'.*non-empty list"):
        classifier.parse_config('{"grid": {"lr": 0.1}}', defaults, options=("normalize",))
    with pytest.raises(ConfigError, match="invalid JSON"):
        classifier.parse_config("{epochs: 3}", defaults, options=("normalize",))
    with pytest.raises(ConfigError, match="'seed'"):
        classifier.parse_config('{"seed": "x"}', defaults, options=("normalize",))


def test_bad_labels_are_rejected():
    x, y = blobs(10, 0)
    with pytest.raises(ValueError, match="labels outside"):
        classifier.train(fs(x, y + 1), None, 2, HParams(epochs=1), seed=0)
    with pytest.raises(ValueError, match="embeddings for"):
        classifier.row_features(x, y[:5])
