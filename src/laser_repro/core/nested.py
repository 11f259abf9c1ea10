"""Nested settings as flat dotted keys (what fingerprints and model records compare)."""
from __future__ import annotations

from typing import Mapping


def flatten_settings(data, prefix: str = "") -> dict:
    """``{"a.b.c": value}`` of nested settings (an empty mapping stays a value)."""
    if isinstance(data, Mapping):
        out = {}
        for k, v in data.items():
            out.update(flatten_settings(v, f"{prefix}{k}."))
        return out or {prefix[:-1]: {}}
    return {prefix[:-1]: data}
