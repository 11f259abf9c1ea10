"""What the parts of :mod:`laser_repro.provenance` share: the record format, the sidecar of a path,
how a path is recorded (relative to the workflow root) and how a recorded one is found again."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger("laser_repro")

FORMAT = "laser-repro-provenance/1"
SUFFIX = ".prov.json"
IGNORED_IN_DIRS = (".snakemake_timestamp",)


class ProvenanceError(RuntimeError):
    """A provenance record cannot be written (e.g. an output the job claimed to make is absent)."""


# --------------------------------------------------------------------------- paths and sidecars

def sidecar_path(path: Path | str) -> Path:
    """The sidecar of an output: ``<path>.prov.json`` beside it."""
    return Path(os.path.normpath(os.fspath(path)) + SUFFIX)


def rel_key(path: Path | str, cwd: str | None = None) -> str:
    """How a path is recorded: relative to `cwd` (the workflow root) when under it, else absolute."""
    cwd = cwd or os.getcwd()
    full = os.path.normpath(os.path.join(cwd, os.fspath(path)))
    rel = os.path.relpath(full, cwd)
    return full if rel == ".." or rel.startswith(".." + os.sep) else rel.replace(os.sep, "/")


def read_sidecar(path: Path | str) -> dict | None:
    """The record of `path`'s sidecar, or None when it has none (or it cannot be parsed)."""
    side = sidecar_path(path)
    try:
        with open(side, encoding="utf-8") as f:
            rec = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        log.warning("ignoring unreadable provenance sidecar %s: %s", side, err)
        return None
    return rec if isinstance(rec, dict) and isinstance(rec.get("outputs"), dict) else None


def _own_key(abs_path: str, rec: dict) -> tuple[str, str] | None:
    """(key, workflow root) of `abs_path` among the record's outputs: the key whose path components
    end `abs_path` (so lineage works from any cwd and after the tree has moved)."""
    parts = Path(abs_path).parts
    best = None
    for key in rec["outputs"]:
        if os.path.isabs(key):
            if os.path.normpath(key) == abs_path:
                return key, os.path.dirname(abs_path)
            continue
        kparts = Path(key).parts
        matches = kparts and len(parts) > len(kparts) and parts[-len(kparts):] == kparts
        if matches and (best is None or len(kparts) > len(Path(best).parts)):  # the longest match
            best = key
    return (best, str(Path(*parts[:-len(Path(best).parts)]))) if best else None


def _resolve(key: str, root: str) -> str:
    return os.path.normpath(key if os.path.isabs(key) else os.path.join(root, key))


def _display(abs_path: str) -> str:
    return rel_key(abs_path)
