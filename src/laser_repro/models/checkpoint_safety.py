"""Safe loading of our model files: ``torch.load(weights_only=True)``, an allowlist, errors naming the file.

Under torch >= 2.6 ``torch.load`` is ``weights_only=True`` by default; fairseq 0.12 calls it
without ``weights_only``.  A training checkpoint of the ``laser_lstm`` model holds, besides
tensors and plain containers, exactly one non-primitive class -- ``argparse.Namespace`` (the
legacy model/task arguments inside ``cfg``).  Instead of switching to unsafe pickle loading, we
keep ``weights_only=True`` and allowlist only the classes in :data:`CHECKPOINT_SAFE_GLOBALS`:
inside :func:`checkpoint_globals_allowed` while ``fairseq_bridge.train`` / :func:`load_checkpoint`
run, and (for spawned multi-GPU workers) in ``LaserMultilingualTask.setup_task``, i.e. only in
processes that train our task.  Any other object in a file still makes the load fail; nothing is
ever loaded with ``weights_only=False``.

This module imports only the standard library, torch and :mod:`laser_repro.core.errors` (standard
library only): the fairseq plugin (:mod:`laser_repro.models.laser.fairseq_plugin`) imports it, and
nothing else of the package.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle

import torch

from laser_repro.core.errors import UserError

#: the only non-primitive classes a laser_lstm training checkpoint contains
CHECKPOINT_SAFE_GLOBALS = [argparse.Namespace]


class CorruptFileError(UserError, RuntimeError):
    """A model file (exported encoder, training checkpoint) that torch cannot read: truncated or corrupt."""


class RefusedFileError(UserError, pickle.UnpicklingError):
    """A file holding objects that ``weights_only`` loading refuses: not one of our model files."""


@contextlib.contextmanager
def checkpoint_globals_allowed():
    """Allow (for ``weights_only`` loading) exactly the classes of :data:`CHECKPOINT_SAFE_GLOBALS`
    while the block runs."""
    with torch.serialization.safe_globals(list(CHECKPOINT_SAFE_GLOBALS)):
        yield


def _unreadable(err: BaseException) -> bool:
    """Whether ``torch.load`` raised ``err`` because the file's bytes are broken (not because it is
    missing or refused)."""
    if isinstance(err, (FileNotFoundError, IsADirectoryError, PermissionError)):
        return False
    if isinstance(err, (EOFError, OSError)):  # an empty file; a cut-off zip ([Errno 22] Invalid argument)
        return True
    text = str(err)
    return isinstance(err, RuntimeError) and ("PytorchStreamReader" in text or "zip archive" in text)


def load_model_file(path, *, what: str, rebuild: str, **load_kwargs):
    """``torch.load(path, **load_kwargs)``, with errors that name the file.

    A truncated or corrupt file raises :class:`CorruptFileError` naming ``path`` (``what`` it is)
    and how to rebuild it (``rebuild``: e.g. "delete it and rerun the export"); the original error
    is chained.  A pickle refused by ``weights_only`` loading raises :class:`RefusedFileError` (a
    ``pickle.UnpicklingError``) naming the path and the refused object.  A missing file raises
    ``FileNotFoundError`` as before; a directory raises :class:`UserError` naming it."""
    if isinstance(path, (str, os.PathLike)) and os.path.isdir(path):
        raise UserError(f"{path}: a directory, not a {what} file")
    try:
        return torch.load(path, **load_kwargs)
    except pickle.UnpicklingError as err:
        # torch's message is paragraphs of advice on unsafe loading; the line naming the refused object says why
        lines = str(err).splitlines() or ["no message"]
        why = next((line.strip() for line in lines if "global" in line.lower()), lines[0].strip())
        raise RefusedFileError(f"{path}: weights_only loading refused this file ({why}): it is no {what} "
                               f"written by this project") from err
    except Exception as err:
        if not _unreadable(err):
            raise
        size = os.path.getsize(path) if os.path.isfile(path) else None
        raise CorruptFileError(
            f"{path}: cannot read this {what}: the file is truncated or corrupt "
            f"({size} bytes; {type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'no data'}). "
            f"To rebuild it, {rebuild}") from err


def load_checkpoint(path) -> dict:
    """Load one of our fairseq training checkpoints on CPU, with ``weights_only=True`` and the
    allowlist of :func:`checkpoint_globals_allowed`.

    A truncated or corrupt file raises :class:`CorruptFileError` naming it."""
    with checkpoint_globals_allowed():
        return load_model_file(path, what="training checkpoint", map_location="cpu", weights_only=True,
                               rebuild=f"delete {path} and rerun the training that wrote it (it resumes "
                                       f"from an intact checkpoint_last.pt in its save directory, else "
                                       f"starts over)")
