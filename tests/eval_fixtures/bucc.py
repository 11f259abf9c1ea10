"""Toy BUCC 2018 archives in the real distribution format, for tests.

    split = make_split(parallel=[("Guten Tag.", "Good day."), ...], xx_only=[...], en_only=[...])
    written = write_bucc_archives(tmp_path, "de", {"training": split, "test": other})
    written["training"].path, written["training"].sha256

Each archive is ``bucc2018-<xx>-en.<sample-gold|training-gold|test>.tar.bz2`` with the members
``bucc2018/<xx>-en/<xx>-en.<split>.<xx>``, ``.en`` and (not for test) ``.gold``; sentence lines
are ``<xx>-000000001<TAB>sentence``, gold lines ``xx_id<TAB>en_id``. The layout is written out
here, independently of laser_repro.evaluation.bucc, so that a mistake there is caught by the tests.
Archives are byte-for-byte reproducible (fixed mtimes, owners and order).
"""
from __future__ import annotations

import bz2
import hashlib
import io
import random
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SUFFIX = {"sample": "sample-gold", "training": "training-gold", "test": "test"}


@dataclass(frozen=True)
class BuccSplit:
    """Sentences of one split in file order; gold as (xx index, en index) into them."""

    xx: Sequence[str]
    en: Sequence[str]
    gold: Sequence[tuple[int, int]]


@dataclass(frozen=True)
class WrittenArchive:
    path: Path
    sha256: str
    members: dict  # member name -> text written
    gold_ids: frozenset  # (xx_id, en_id) pairs of the gold (also for test, where no member has them)
    xx_ids: tuple
    en_ids: tuple


def make_split(parallel: Sequence[tuple[str, str]], xx_only: Sequence[str] = (), en_only: Sequence[str] = (),
               *, duplicate: bool = True, seed: int = 0) -> BuccSplit:
    """Planted translations among unrelated sentences, each side shuffled on its own.

    duplicate: repeat the first unrelated xx sentence (without one, the first unrelated English
    sentence) under a second id: the case LASER drops from scoring."""
    rng = random.Random(seed)
    xx = [p[0] for p in parallel] + list(xx_only)
    en = [p[1] for p in parallel] + list(en_only)
    if duplicate:
        if xx_only:
            xx.append(xx_only[0])
        elif en_only:
            en.append(en_only[0])
        else:
            raise ValueError("duplicate=True needs an unrelated sentence to repeat")
    xx_order, en_order = list(range(len(xx))), list(range(len(en)))
    rng.shuffle(xx_order)
    rng.shuffle(en_order)
    xx_pos = {old: new for new, old in enumerate(xx_order)}
    en_pos = {old: new for new, old in enumerate(en_order)}
    gold = sorted((xx_pos[i], en_pos[i]) for i in range(len(parallel)))
    return BuccSplit([xx[i] for i in xx_order], [en[i] for i in en_order], gold)


def _add(tf: tarfile.TarFile, name: str, data: bytes | None) -> None:
    info = tarfile.TarInfo(name)
    info.mtime, info.uid, info.gid, info.uname, info.gname = 1514764800, 0, 0, "", ""
    if data is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tf.addfile(info)
    else:
        info.size, info.mode = len(data), 0o644
        tf.addfile(info, io.BytesIO(data))


def write_bucc_archives(dest_dir: str | Path, lang: str, splits: Mapping[str, BuccSplit], *,
                        id_digits: int = 9) -> dict[str, WrittenArchive]:
    """Write one archive per split (keys: sample, training, test) into dest_dir."""
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, data in splits.items():
        if split not in SUFFIX:
            raise ValueError(f"unknown BUCC split {split!r}")
        xx_ids = tuple(f"{lang}-{i:0{id_digits}d}" for i in range(1, len(data.xx) + 1))
        en_ids = tuple(f"en-{i:0{id_digits}d}" for i in range(1, len(data.en) + 1))
        gold_ids = frozenset((xx_ids[i], en_ids[j]) for i, j in data.gold)
        base = f"bucc2018/{lang}-en/{lang}-en.{split}"
        members = {
            f"{base}.{lang}": "".join(f"{i}\t{s}\n" for i, s in zip(xx_ids, data.xx)),
            f"{base}.en": "".join(f"{i}\t{s}\n" for i, s in zip(en_ids, data.en)),
        }
        if split != "test":
            members[f"{base}.gold"] = "".join(f"{a}\t{b}\n" for a, b in sorted(gold_ids))
        path = dest_dir / f"bucc2018-{lang}-en.{SUFFIX[split]}.tar.bz2"
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tf:
            _add(tf, "bucc2018", None)
            _add(tf, f"bucc2018/{lang}-en", None)
            for name, text in members.items():
                _add(tf, name, text.encode("utf-8"))
        blob = bz2.compress(raw.getvalue(), 9)
        path.write_bytes(blob)
        out[split] = WrittenArchive(path, hashlib.sha256(blob).hexdigest(), members, gold_ids, xx_ids, en_ids)
    return out
