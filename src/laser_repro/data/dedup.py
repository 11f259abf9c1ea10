"""One copy of each sentence pair of a training direction (``preprocess.dedup_pairs``).

A direction's training text is the concatenation of its corpora (config order). The same pair can be in
several of them -- NTREX-128's English is newstest2019's English, news sets repeat short sentences
("Thank you.") from year to year -- and would then be trained on, and weigh in the loss, more than once.
:func:`keep_mask` reads the two Moses-preprocessed sides in lockstep and marks the first occurrence of
each (source, target) line pair; ``bpe-apply --keep`` then writes only the marked lines of either side,
so both stay line-aligned. Memory: one 16-byte digest per distinct pair (a set of ``bytes``, ~90 B per
entry in CPython): ~0.9 GB for a direction of 10M pairs.
"""
from __future__ import annotations

import hashlib
from itertools import zip_longest
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from laser_repro.core.textio import InputError, atomic_output, write_json


def keep_mask(src_lines: Iterable[str], tgt_lines: Iterable[str], *, names: tuple[str, str] = ("source", "target")
              ) -> tuple[np.ndarray, dict]:
    """A boolean array, True for the first occurrence of each (source, target) pair, and statistics
    ``{"pairs", "kept", "dropped_duplicate"}``. Sides of different lengths are an error naming them."""
    seen: set[bytes] = set()
    keep: list[bool] = []
    for src, tgt in zip_longest(src_lines, tgt_lines):
        if src is None or tgt is None:
            short = names[0] if src is None else names[1]
            raise InputError(f"{short}: ends at line {len(keep) + 1} while the other side goes on: "
                             f"the two sides of a direction must be line-aligned ({names[0]} | {names[1]})")
        digest = hashlib.blake2b(f"{len(src)}:{src}{tgt}".encode("utf-8"), digest_size=16).digest()
        keep.append(digest not in seen)
        seen.add(digest)
    mask = np.asarray(keep, dtype=bool)
    return mask, {"pairs": int(mask.size), "kept": int(mask.sum()), "dropped_duplicate": int(mask.size - mask.sum())}


def write_keep_mask(mask: np.ndarray, stats: dict, keep_path: str | Path, stats_path: str | Path) -> None:
    with atomic_output(keep_path, "wb") as out:
        np.save(out, mask, allow_pickle=False)
    write_json(stats_path, stats)


def read_keep_mask(path: str | Path) -> np.ndarray:
    mask = np.load(path, allow_pickle=False)
    if mask.dtype != bool or mask.ndim != 1:
        raise InputError(f"{path}: not a keep mask (a 1-D boolean array), got {mask.dtype} of shape {mask.shape}")
    return mask


def kept_lines(lines: Iterable[str], mask: np.ndarray, *, name: str = "input") -> Iterator[str]:
    """The lines whose mask entry is True; the mask must cover exactly the lines."""
    n = 0
    for n, line in enumerate(lines, 1):
        if n > mask.size:
            raise InputError(f"{name}: more lines than its keep mask ({mask.size}): rebuild the mask")
        if mask[n - 1]:
            yield line
    if n != mask.size:
        raise InputError(f"{name}: {n} lines but its keep mask has {mask.size}: rebuild the mask")
