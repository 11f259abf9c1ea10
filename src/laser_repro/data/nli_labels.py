"""The labels of natural language inference: their order (:data:`XNLI_LABELS`, the class indices) and the
``pairID<TAB>label`` files that carry them, one row per sentence pair (written by the XNLI / MultiNLI
extraction of :mod:`laser_repro.evaluation.xnli`; read by its classifier and by the binarization of LASER's
NLI multitask objective, :func:`laser_repro.models.laser.fairseq_bridge.binarize_nli`)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from laser_repro.core.textio import InputError

XNLI_LABELS = ("entailment", "neutral", "contradiction")


def read_labels(path: Path | str, names: Sequence[str] = XNLI_LABELS) -> tuple[list[str], np.ndarray]:
    """pairIDs and label indices of a ``pairID<TAB>label`` file."""
    from laser_repro.core.textio import iter_lines

    index = {name: i for i, name in enumerate(names)}
    ids, labels, seen = [], [], set()
    for number, line in enumerate(iter_lines(path), start=1):
        pid, tab, label = line.partition("\t")
        if not tab or not pid:
            raise InputError(f"{path}: line {number}: expected 'pairID<TAB>label', got {line!r}")
        if label not in index:
            raise InputError(f"{path}: line {number}: label {label!r} is not one of {', '.join(names)}")
        if pid in seen:
            raise InputError(f"{path}: line {number}: pairID {pid} appears twice")
        seen.add(pid)
        ids.append(pid)
        labels.append(index[label])
    if not ids:
        raise InputError(f"{path}: no labels")
    return ids, np.asarray(labels, dtype=np.int64)
