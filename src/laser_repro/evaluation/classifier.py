"""Feed-forward classifier on frozen sentence embeddings (paper Sections 4.2 and 4.3).

The paper trains a small MLP on the English training data only, tunes its hyperparameters on
the English dev set only, and applies that one model unchanged to every test language
(zero-shot transfer). This module holds that generic part; xnli.py and mldoc.py build the
features.

Features are never materialised for a whole data set: a :class:`FeatureSet` carries a
``build(rows)`` callable that returns the features of a few rows, so MultiNLI (393k pairs x
4096 features) trains from memory-mapped 1024-d embeddings one mini-batch at a time.

Determinism: parameter initialisation and dropout draw from torch's global generator inside
``torch.random.fork_rng`` seeded with ``seed`` (the caller's RNG state is left untouched); the
epoch shuffles come from ``numpy.random.default_rng(seed)``. Same inputs, seed and thread count
give the same weights and accuracies on CPU.

Model selection follows LASER's ``sent_classif.py``/``nli.py``: after every epoch the model is
scored on the dev set and the best epoch is kept, so the number of epochs is selected on dev
together with the grid of the other hyperparameters (all trials use the same seed).
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from laser_repro.core.errors import ConfigError

log = logging.getLogger(__name__)

EVAL_BATCH_SIZE = 2048


# --------------------------------------------------------------------------- features


@dataclass(frozen=True)
class FeatureSet:
    """A labelled data set whose features are built on demand, a mini-batch at a time.

    ``build(rows)`` gets sorted int64 row indices and returns float32 features [len(rows), dim].
    """

    labels: np.ndarray
    build: Callable[[np.ndarray], np.ndarray]
    dim: int
    name: str = ""

    def __post_init__(self):
        labels = np.asarray(self.labels)
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"{self.name or 'feature set'}: labels must be a 1-d integer array, got "
                             f"{labels.dtype} {labels.shape}")
        object.__setattr__(self, "labels", labels.astype(np.int64, copy=False))

    def __len__(self) -> int:
        return len(self.labels)


def l2_normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def row_features(matrix: np.ndarray, labels, *, normalize: bool = False, name: str = "") -> FeatureSet:
    """Features = rows of a (possibly memory-mapped) [n, dim] matrix."""
    if matrix.ndim != 2 or len(matrix) != len(labels):
        raise ValueError(f"{name or 'features'}: {matrix.shape} embeddings for {len(labels)} labels")

    def build(rows: np.ndarray) -> np.ndarray:
        x = np.asarray(matrix[rows], dtype=np.float32)
        return l2_normalize(x) if normalize else x

    return FeatureSet(np.asarray(labels), build, int(matrix.shape[1]), name)


# --------------------------------------------------------------------------- hyperparameters


@dataclass(frozen=True)
class HParams:
    """One point of the grid. ``epochs`` is the maximum; the best epoch on dev is kept.

    ``patience``: stop a trial after this many epochs without a dev improvement (0: never)."""

    hidden: tuple[int, ...] = ()
    dropout: float = 0.0
    lr: float = 1e-3
    epochs: int = 10
    batch_size: int = 128
    weight_decay: float = 0.0
    activation: str = "tanh"
    patience: int = 0

    def __post_init__(self):
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        checks = {
            "hidden": all(h > 0 for h in self.hidden),
            "dropout": 0.0 <= self.dropout < 1.0,
            "lr": self.lr >= 0,
            "epochs": int(self.epochs) == self.epochs and self.epochs >= 1,
            "batch_size": int(self.batch_size) == self.batch_size and self.batch_size >= 1,
            "weight_decay": self.weight_decay >= 0,
            "activation": self.activation in _ACTIVATIONS,
            "patience": int(self.patience) == self.patience and self.patience >= 0,
        }
        for key, ok in checks.items():
            if not ok:
                raise ConfigError(f"classifier hyperparameter {key!r}: invalid value {getattr(self, key)!r}")

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["hidden"] = list(self.hidden)
        return d


HPARAM_KEYS = tuple(f.name for f in dataclasses.fields(HParams))
_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU}


def expand_grid(base: Mapping, grid: Mapping[str, Sequence] | None = None) -> list[HParams]:
    """Cartesian product of ``grid`` over ``base``, in the order the grid keys and values are given.

    The order matters: on equal dev accuracy the first grid point wins."""
    grid = dict(grid or {})
    for key in [*base, *grid]:
        if key not in HPARAM_KEYS:
            raise ConfigError(f"unknown classifier hyperparameter {key!r}; known: {', '.join(HPARAM_KEYS)}")
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
            raise ConfigError(f"classifier grid {key!r}: expected a non-empty list of values, got {values!r}")
    keys = list(grid)
    points = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        try:
            points.append(HParams(**{**base, **dict(zip(keys, combo))}))
        except TypeError as err:
            raise ConfigError(f"classifier hyperparameters: {err}") from None
    return points


@dataclass(frozen=True)
class ClassifierConfig:
    """Hyperparameters, grid and seed of one task, as read from JSON; ``options`` holds the task's
    own keys (e.g. ``normalize``)."""

    base: dict
    grid: dict
    seed: int
    options: dict = field(default_factory=dict)

    def points(self) -> list[HParams]:
        return expand_grid(self.base, self.grid)

    def as_dict(self) -> dict:
        return {**self.base, "grid": self.grid, "seed": self.seed, **self.options}


def parse_config(text: str | Mapping | None, defaults: Mapping, *, options: Sequence[str] = ()) -> ClassifierConfig:
    """Merge a JSON object (string or mapping) over ``defaults``.

    Keys: the HParams fields (fixed values), ``grid`` (key -> list of values, replaces the
    default grid), ``seed``, and the task's ``options``. A key given a fixed value leaves the
    default grid (``{"lr": 0.01}`` fixes the learning rate). Unknown keys are errors."""
    if text is None or text == "":
        given = {}
    elif isinstance(text, Mapping):
        given = dict(text)
    else:
        try:
            given = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError(f"classifier parameters: invalid JSON ({err}): {text!r}") from None
    if not isinstance(given, dict):
        raise ConfigError(f"classifier parameters: expected a JSON object, got {given!r}")
    merged = {**defaults, **given}
    known = {*HPARAM_KEYS, "grid", "seed", *options}
    for key in merged:
        if key not in known:
            raise ConfigError(f"unknown classifier parameter {key!r}; known: {', '.join(sorted(known))}")
    grid = merged.pop("grid", None) or {}
    if not isinstance(grid, dict):
        raise ConfigError(f"classifier parameter 'grid': expected an object of lists, got {grid!r}")
    if "grid" not in given:
        grid = {k: v for k, v in grid.items() if k not in given}
    seed = merged.pop("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ConfigError(f"classifier parameter 'seed': expected an integer, got {seed!r}")
    opts = {k: merged.pop(k) for k in options if k in merged}
    config = ClassifierConfig(base=merged, grid=grid, seed=seed, options=opts)
    config.points()  # validate now, before any data is read
    return config


# --------------------------------------------------------------------------- model


def build_model(dim: int, n_classes: int, hp: HParams) -> nn.Sequential:
    """MLP as in LASER's classifiers: dropout on the input and after every hidden layer."""
    layers: list[nn.Module] = []
    prev = dim
    if hp.hidden and hp.dropout > 0:
        layers.append(nn.Dropout(hp.dropout))
    for width in hp.hidden:
        layers += [nn.Linear(prev, width), _ACTIVATIONS[hp.activation]()]
        if hp.dropout > 0:
            layers.append(nn.Dropout(hp.dropout))
        prev = width
    layers.append(nn.Linear(prev, n_classes))
    return nn.Sequential(*layers)


def predict(model: nn.Module, data: FeatureSet, batch_size: int = EVAL_BATCH_SIZE) -> np.ndarray:
    """Predicted class of every row, in row order."""
    model.eval()
    out = np.empty(len(data), dtype=np.int64)
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            rows = np.arange(start, min(start + batch_size, len(data)), dtype=np.int64)
            out[rows] = model(torch.from_numpy(data.build(rows))).argmax(dim=1).numpy()
    return out


def accuracy(model: nn.Module, data: FeatureSet, batch_size: int = EVAL_BATCH_SIZE) -> float:
    """Accuracy in percent."""
    if len(data) == 0:
        raise ValueError(f"{data.name or 'data set'} is empty")
    return 100.0 * float(np.mean(predict(model, data, batch_size) == data.labels))


@dataclass
class TrainResult:
    model: nn.Module
    hparams: HParams
    best_epoch: int  # 1-based; the final epoch when there is no dev set
    dev_accuracy: float | None
    dev_curve: list[float]  # dev accuracy after each epoch run
    train_loss: list[float]  # mean training loss of each epoch

    def summary(self) -> dict:
        return {**self.hparams.as_dict(), "selected_epoch": self.best_epoch, "epochs_run": len(self.train_loss),
                "dev_accuracy": self.dev_accuracy}


def _check_data(data: FeatureSet, n_classes: int, dim: int | None = None) -> None:
    if len(data) and (data.labels.min() < 0 or data.labels.max() >= n_classes):
        raise ValueError(f"{data.name or 'data set'}: labels outside [0, {n_classes})")
    if dim is not None and data.dim != dim:
        raise ValueError(f"{data.name or 'data set'}: feature dimension {data.dim} != training dimension {dim}")


def train(train_set: FeatureSet, dev_set: FeatureSet | None, n_classes: int, hp: HParams, seed: int) -> TrainResult:
    """Train one model; keep the epoch with the best dev accuracy (first one on ties)."""
    if len(train_set) == 0:
        raise ValueError(f"{train_set.name or 'training set'} is empty")
    _check_data(train_set, n_classes)
    if dev_set is not None:
        _check_data(dev_set, n_classes, train_set.dim)
    labels = torch.from_numpy(train_set.labels)
    n = len(train_set)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build_model(train_set.dim, n_classes, hp)
        opt = torch.optim.Adam(model.parameters(), lr=hp.lr, weight_decay=hp.weight_decay)
        order = np.random.default_rng(seed)
        loss_fn = nn.CrossEntropyLoss()
        best_acc, best_epoch, best_state = None, 0, None
        curve, losses = [], []
        for epoch in range(1, hp.epochs + 1):
            model.train()
            perm = order.permutation(n)
            total = 0.0
            for start in range(0, n, hp.batch_size):
                rows = np.sort(perm[start:start + hp.batch_size])
                x = torch.from_numpy(np.ascontiguousarray(train_set.build(rows), dtype=np.float32))
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), labels[rows])
                loss.backward()
                opt.step()
                total += loss.item() * len(rows)
            losses.append(total / n)
            if dev_set is None:
                best_epoch = epoch
                continue
            acc = accuracy(model, dev_set)
            curve.append(acc)
            if best_acc is None or acc > best_acc:
                best_acc, best_epoch, best_state = acc, epoch, copy.deepcopy(model.state_dict())
            elif hp.patience and epoch - best_epoch >= hp.patience:
                break
        if best_state is not None:
            model.load_state_dict(best_state)
    model.eval()
    return TrainResult(model, hp, best_epoch, best_acc, curve, losses)


@dataclass
class Selection:
    best: TrainResult
    trials: list[dict]  # one summary per grid point, in grid order

    @property
    def model(self) -> nn.Module:
        return self.best.model


def select(train_set: FeatureSet, dev_set: FeatureSet, n_classes: int, grid: Sequence[HParams], seed: int) -> Selection:
    """Train every grid point (same seed) and keep the best on dev; the first one wins ties."""
    if not grid:
        raise ConfigError("empty hyperparameter grid")
    best, trials = None, []
    for i, hp in enumerate(grid, start=1):
        result = train(train_set, dev_set, n_classes, hp, seed)
        trials.append(result.summary())
        log.info("trial %d/%d %s: dev %.2f%% at epoch %d", i, len(grid), json.dumps(hp.as_dict()),
                 result.dev_accuracy, result.best_epoch)
        if best is None or result.dev_accuracy > best.dev_accuracy:
            best = result
        else:
            del result
    return Selection(best, trials)


def evaluate(model: nn.Module, tests: Mapping[str, FeatureSet]) -> dict[str, float]:
    """Accuracy (%) of one model on every test set."""
    return {name: accuracy(model, data) for name, data in tests.items()}


def selection_record(selection: Selection, config: ClassifierConfig, test_accuracy: Mapping[str, float], *,
                     settings_source: str) -> dict:
    """What a task's scores document says about its classifier: seed and threads, how the model was
    selected (``settings_source``: where the settings come from), the selected hyperparameters and
    epoch, the English dev accuracy, every trial, and the test accuracies."""
    best = selection.best
    return {
        "seed": config.seed,
        "threads": threads(),
        "selection": "best English dev accuracy over the grid and the epochs",
        "settings_source": settings_source,
        "hyperparameters": {**best.hparams.as_dict(), "selected_epoch": best.best_epoch},
        "dev_accuracy": best.dev_accuracy,
        "trials": selection.trials,
        "test_accuracy": test_accuracy,
    }


def set_threads(n: int | None) -> None:
    """Intra-op threads for CPU training; keep it fixed to reproduce results bit for bit."""
    if n:
        torch.set_num_threads(int(n))


def threads() -> int:
    """Intra-op threads torch uses (recorded with the scores: they change floating-point sums)."""
    return torch.get_num_threads()


def _tests_by_language(entries: Sequence[Sequence[str]], command: str, files: Callable) -> dict:
    """The ``--test LANG PATH...`` options of an `*-classify` command: ``{LANG: files(*PATHs)}`` (as
    Paths), in the order given. An unknown language code, or one given twice, stops the command."""
    from laser_repro.core import languages

    tests = {}
    for lang, *paths in entries:
        languages.get(lang)
        if lang in tests:
            raise SystemExit(f"{command}: language {lang} given twice with --test")
        tests[lang] = files(*map(Path, paths))
    return tests


def config_from_cli(params, defaults: Mapping, seed: int | None) -> "ClassifierConfig":
    """The classifier settings of an `*-classify` command: --params JSON over the task's defaults,
    --seed overriding the seed."""
    config = parse_config(params, defaults, options=("normalize",))
    if seed is not None:
        config = ClassifierConfig(config.base, config.grid, seed, config.options)
    return config


def run_classify_command(a, command: str, defaults: Mapping, files: Callable,
                         classify: Callable[[dict, ClassifierConfig], dict]) -> None:
    """An `*-classify` command (xnli-classify, mldoc-classify): the settings (``--params`` over the
    task's ``defaults``, ``--seed``), ``--threads``, the ``--test`` languages (``files(*paths)`` each);
    ``classify(tests, config)`` gives the scores, written to ``--scores`` with the settings."""
    from laser_repro.core.textio import write_json

    config = config_from_cli(a.params, defaults, a.seed)
    set_threads(a.threads)
    scores = classify(_tests_by_language(a.test, command, files), config)
    scores["config"] = config.as_dict()
    write_json(a.scores, scores)
