"""Split a corpus side into shards processed as independent jobs, and read them back in order.

Shard k of n holds the blocks k, k+n, k+2n, ... of `block_lines` consecutive lines. The shard count
is fixed by the config (so the workflow DAG is known before any file exists) and no shard needs the
total line count. Reading the shards back block by block, round-robin, restores the original order.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from laser_repro.core.textio import atomic_output, iter_lines


def shard_lines(lines: Iterable[str], k: int, n: int, block_lines: int) -> Iterator[str]:
    """The lines of shard k (0-based) of n."""
    if not 0 <= k < n:
        raise ValueError(f"shard index {k} out of range for {n} shards")
    for i, line in enumerate(lines):
        if (i // block_lines) % n == k:
            yield line


def write_shard(in_path: Path | str, out_path: Path | str, k: int, n: int, block_lines: int,
                transform: Callable[[str], str] = lambda s: s, *, progress: bool = False) -> int:
    """Apply `transform` to every line of shard k of n of `in_path`; atomic write; returns lines written."""
    written = 0
    with atomic_output(out_path) as out:
        for line in shard_lines(iter_lines(in_path, progress=progress), k, n, block_lines):
            out.write(transform(line) + "\n")
            written += 1
    return written


def iter_sharded(shard_paths: Sequence[Path | str], block_lines: int) -> Iterator[str]:
    """Lines of the original file, from its shards in order 0..n-1 (written by `write_shard`)."""
    readers = [iter_lines(p) for p in shard_paths]
    active = list(range(len(readers)))
    while active:
        still = []
        for k in active:
            taken = 0
            for line in readers[k]:
                yield line
                taken += 1
                if taken == block_lines:
                    still.append(k)
                    break
            else:
                # shard k ended; a later shard must not have more blocks than this one
                for j in active[active.index(k) + 1:]:
                    if next(readers[j], None) is not None:
                        raise ValueError(f"{shard_paths[j]}: shard has more blocks than {shard_paths[k]}")
                return
        active = still





_SHARD_SUFFIX = re.compile(r"^(?P<base>.*)\.(?P<k>\d{3})-of-(?P<n>\d{3})$")


def group_shards(paths: Sequence[Path | str]) -> list[list[Path | str]]:
    """Group consecutive shard paths of the same file (`<base>.KKK-of-NNN`), checking all n are there."""
    groups: list[list[Path | str]] = []
    bases: list[tuple[str, int]] = []
    for path in paths:
        match = _SHARD_SUFFIX.match(str(path))
        if not match:
            raise ValueError(f"{path}: not a shard file name (<base>.KKK-of-NNN)")
        key = (match["base"], int(match["n"]))
        if not bases or bases[-1] != key:
            bases.append(key)
            groups.append([])
        if int(match["k"]) != len(groups[-1]):
            raise ValueError(f"{path}: expected shard {len(groups[-1])} of {key[0]} next")
        groups[-1].append(path)
    for (base, n), group in zip(bases, groups):
        if len(group) != n:
            raise ValueError(f"{base}: {len(group)} of {n} shards given")
    return groups
