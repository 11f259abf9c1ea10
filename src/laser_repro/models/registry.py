"""The model families known to the harness (laser_repro.models.base.ModelFamily), by config name.

A family is imported only when asked for (fairseq for LASER, nothing of it for the others). An
exported encoder file names its family (LASER files written before families existed name none:
they are LASER's)."""
from __future__ import annotations

import importlib

from laser_repro.models.base import Encoder, ModelFamily

#: config name -> "module:class"
FAMILIES = {
    "laser": "laser_repro.models.laser.family:LaserFamily",
    "multienc": "laser_repro.models.multienc.family:MultiencFamily",
    "labse": "laser_repro.models.labse.family:LabseFamily",
    "bisent2vec": "laser_repro.models.bisent2vec.family:BiSent2VecFamily",
}
_loaded: dict[str, ModelFamily] = {}


def get(name: str) -> ModelFamily:
    """The family called ``name`` in the config."""
    if name not in FAMILIES:
        raise ValueError(f"unknown model family {name!r} (known: {', '.join(FAMILIES)})")
    if name not in _loaded:
        module, cls = FAMILIES[name].split(":")
        _loaded[name] = getattr(importlib.import_module(module), cls)()
    return _loaded[name]


def family_of_encoder(path) -> str:
    """The family an exported encoder file names (memory-mapped: the tensors are not read)."""
    import zipfile

    from laser_repro.models.checkpoint_safety import load_model_file

    # mmap only for torch's zip format: a legacy-format (or empty) file would fail with "mmap can only be used ..."
    data = load_model_file(path, what="encoder", rebuild="delete it and rerun the export",
                           map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
    family = data.get("family", "laser") if isinstance(data, dict) else "laser"
    if family not in FAMILIES:
        raise ValueError(f"{path}: encoder of unknown family {family!r} (known: {', '.join(FAMILIES)})")
    return family


def load_encoder(path) -> Encoder:
    """An exported encoder of any family."""
    return get(family_of_encoder(path)).load_encoder(path)
