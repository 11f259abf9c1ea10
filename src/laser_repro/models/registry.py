"""The model families known to the harness (laser_repro.models.base.ModelFamily), by config name.

A family is imported only when asked for (fairseq for LASER, nothing of it for the others). An
exported encoder file names its family (LASER files written before families existed name none:
they are LASER's)."""
from __future__ import annotations

import importlib

from laser_repro.core.errors import UserError
from laser_repro.models.base import Encoder, ModelFamily
from laser_repro.models.declaration import FamilyDeclaration

#: config name -> "module:class"
FAMILIES = {
    "laser": "laser_repro.models.laser.family:LaserFamily",
    "multienc": "laser_repro.models.multienc.family:MultiencFamily",
    "labse": "laser_repro.models.labse.family:LabseFamily",
    "bisent2vec": "laser_repro.models.bisent2vec.family:BiSent2VecFamily",
}
_loaded: dict[str, ModelFamily] = {}
#: keys only a training checkpoint has: the optimizer state (fairseq's history for LASER, ours for
#: multienc and LaBSE), the thread RNG states of Bi-Sent2Vec's trainer
TRAINING_STATE_KEYS = ("optimizer_history", "optimizer", "rng")


def _known(name: str) -> None:
    if name not in FAMILIES:
        raise ValueError(f"unknown model family {name!r} (known: {', '.join(FAMILIES)})")


def get(name: str) -> ModelFamily:
    """The family called ``name`` in the config."""
    _known(name)
    if name not in _loaded:
        module, cls = FAMILIES[name].split(":")
        _loaded[name] = getattr(importlib.import_module(module), cls)()
    return _loaded[name]


def declaration(name: str) -> FamilyDeclaration:
    """The facts the family called ``name`` declares (its package's ``DECLARATION``): imports its package
    only, not its model code."""
    _known(name)
    package = FAMILIES[name].split(":")[0].rsplit(".", 1)[0]
    return importlib.import_module(package).DECLARATION


def read_encoder_file(path) -> dict:
    """An exported encoder file, memory-mapped (the tensors are not read), with its ``family`` (LASER's
    files may name none); a directory, a truncated file, a training checkpoint raise :class:`UserError`
    naming the file."""
    import zipfile

    from laser_repro.models.checkpoint_safety import checkpoint_globals_allowed, load_model_file

    # mmap only for torch's zip format: a legacy-format (or empty) file would fail with "mmap can only be used ...";
    # the allowlist of our fairseq checkpoints: one given as an encoder is named as such, not refused as a pickle
    with checkpoint_globals_allowed():
        data = load_model_file(path, what="encoder", rebuild="delete it and rerun the export",
                               map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
    if not isinstance(data, dict):
        raise UserError(f"{path}: not an encoder file (a {type(data).__name__}, not a dict of tensors)")
    family = data.setdefault("family", "laser")
    if family not in FAMILIES:
        raise UserError(f"{path}: encoder of unknown family {family!r} (known: {', '.join(FAMILIES)})")
    if any(key in data for key in TRAINING_STATE_KEYS):
        raise UserError(f"{path}: a training checkpoint, not an encoder file: export it first "
                        f"(laser-repro export --family {family} --checkpoint {path} --output ENCODER.pt)")
    return data


def family_of_encoder(path) -> str:
    """The family an exported encoder file names (:func:`read_encoder_file`)."""
    return read_encoder_file(path)["family"]


def load_encoder(path) -> Encoder:
    """An exported encoder of any family."""
    return get(family_of_encoder(path)).load_encoder(path)
