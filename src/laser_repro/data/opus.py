"""OPUS corpora in moses format: where their zips lie (path below the OPUS server, URL), the members of
a zip, the record of a pair OPUS does not publish (an empty zip whose comment says so), and the
extraction of a pair from a zip into a training bitext (filters, statistics and outputs:
:mod:`laser_repro.data.bitext`)."""

from __future__ import annotations

import io
import logging
import os
import zipfile
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

from laser_repro.core.archives import ZIP_ERRORS, find_zip_member
from laser_repro.data.bitext import (_UNSET, _WRITE_BUFFER, PairFilter, CorpusError, _check_limit, _fresh_outputs,
                                     _iter_lines, _lockstep, _resolve_filters, _write_pairs)

__all__ = [
    "OPUS_BASE_URL",
    "ABSENT_MARKER",
    "opus_moses_path",
    "opus_moses_url",
    "opus_moses_members",
    "write_absent_pair_record",
    "absent_pair_url",
    "extract_opus_moses",
]

log = logging.getLogger("laser_repro.data.corpora")  # the extraction's logger (this code was in corpora.py)

#: the OPUS download server (also the default of config opus.base_url and of `laser-repro fetch --base-url`)
OPUS_BASE_URL = "https://object.pouta.csc.fi"


def _sorted_pair(src_code: str, tgt_code: str) -> tuple[str, str]:
    if src_code == tgt_code:
        raise ValueError(f"source and target language are the same: {src_code!r}")
    a, b = sorted((src_code, tgt_code))
    return a, b


def opus_moses_path(corpus: str, version: str, src_code: str, tgt_code: str) -> str:
    """Where an OPUS moses-format zip lies below the OPUS base URL (and below ``resources/opus/`` in
    the workflow): ``OPUS-<corpus>/<version>/moses/<l1>-<l2>.txt.zip``.  The two language codes are
    sorted as strings (OPUS convention)."""
    l1, l2 = _sorted_pair(src_code, tgt_code)
    return f"OPUS-{corpus}/{version}/moses/{l1}-{l2}.txt.zip"


def opus_moses_url(corpus: str, version: str, src_code: str, tgt_code: str, base_url: str = OPUS_BASE_URL) -> str:
    """URL of an OPUS moses-format zip, e.g.
    ``https://object.pouta.csc.fi/OPUS-Tatoeba/v2023-04-12/moses/de-en.txt.zip``
    (:func:`opus_moses_path` below ``base_url``)."""
    return f"{base_url.rstrip('/')}/{opus_moses_path(corpus, version, src_code, tgt_code)}"


def opus_moses_members(corpus: str, src_code: str, tgt_code: str) -> tuple[str, str]:
    """Names of the (source, target) text members inside an OPUS moses zip."""
    l1, l2 = _sorted_pair(src_code, tgt_code)
    stem = f"{corpus}.{l1}-{l2}"
    return f"{stem}.{src_code}", f"{stem}.{tgt_code}"


ABSENT_MARKER = "laser-repro: absent on server: "


def write_absent_pair_record(dest: str | os.PathLike, url: str, why: str = "HTTP 404") -> None:
    """Record that `url` does not exist (``why``: HTTP 404, or not in a local mirror directory) as
    a zip with no members and a comment saying so.

    Only used for corpora configured with `allow_absent_pairs`: OPUS does not publish every
    language pair of a corpus, and the paper simply has no data for such a pair.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    with zipfile.ZipFile(tmp, "w") as zf:
        zf.comment = f"{ABSENT_MARKER}{url} ({why})".encode("utf-8")
    os.replace(tmp, dest)


def absent_pair_url(zf: zipfile.ZipFile) -> str | None:
    comment = zf.comment.decode("utf-8", "replace")
    if not zf.namelist() and comment.startswith(ABSENT_MARKER):
        return comment[len(ABSENT_MARKER):]
    return None


def extract_opus_moses(
    zip_path: str | os.PathLike,
    corpus: str,
    src_code: str,
    tgt_code: str,
    out_src: str | os.PathLike,
    out_tgt: str | os.PathLike,
    *,
    first_n: int | None = None,
    max_pairs: int | None = None,
    seed: int = 0,
    filters: PairFilter | Mapping | None = None,
    max_chars: int | None = _UNSET,
    max_ratio: float | None = _UNSET,
    exclude: set[str] | frozenset[str] | None = None,
    progress: bool = True,
) -> dict:
    """Extract the ``src_code``/``tgt_code`` sides of an OPUS moses zip to two text files.

    ``out_src`` receives member ``{corpus}.{l1}-{l2}.{src_code}`` and ``out_tgt`` member
    ``{corpus}.{l1}-{l2}.{tgt_code}`` (l1 < l2).  See :mod:`laser_repro.data.bitext` for
    ``first_n``, ``max_pairs``/``seed``, ``exclude`` and the returned stats.  Filters:
    ``filters`` (a :class:`PairFilter` or a mapping such as the config's ``filters:``
    block; default ``PairFilter()``: max_chars=1000, no ratio filter), with
    ``max_chars`` / ``max_ratio`` keyword arguments, when passed, overriding it
    (``None`` disables that check).

    Raises CorpusError for a corrupt/truncated zip (naming the zip), missing members
    (listing the members present), CRC/decompression errors (naming zip and member),
    differing line counts (naming both members and counts) and invalid UTF-8 (naming the
    member and the 1-based line).
    """
    zip_path = Path(zip_path)
    src_member, tgt_member = opus_moses_members(corpus, src_code, tgt_code)
    _check_limit("first_n", first_n)
    with _fresh_outputs(out_src, out_tgt), ExitStack() as stack:
        if not zip_path.is_file():
            raise CorpusError(f"{zip_path}: no such file")
        try:
            zf = stack.enter_context(zipfile.ZipFile(zip_path))
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise CorpusError(f"{zip_path}: not a valid zip archive (truncated or corrupt download?): {e}") from e
        absent = absent_pair_url(zf)
        if absent is not None:
            # the download step recorded that OPUS has no such pair: an empty bitext, said so in the stats
            for out in (Path(out_src), Path(out_tgt)):
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(b"")
            log.warning("%s: OPUS has no %s-%s pair (%s): no data", zip_path, src_code, tgt_code, absent)
            return {"read": 0, "written": 0, "absent_on_server": absent}
        si = find_zip_member(zf, src_member, zip_path, CorpusError)
        ti = find_zip_member(zf, tgt_member, zip_path, CorpusError)
        try:
            # BufferedReader: C-level readline (ZipExtFile.readline is pure Python).
            fsrc = stack.enter_context(io.BufferedReader(zf.open(si), _WRITE_BUFFER))
            ftgt = stack.enter_context(io.BufferedReader(zf.open(ti), _WRITE_BUFFER))
        except ZIP_ERRORS as e:
            raise CorpusError(f"{zip_path}: cannot open members {si!r}/{ti!r}: {e}") from e
        src_name = f"{zip_path}:{si}"
        tgt_name = f"{zip_path}:{ti}"
        pairs = _lockstep(
            _iter_lines(fsrc, src_name, ZIP_ERRORS),
            _iter_lines(ftgt, tgt_name, ZIP_ERRORS),
            src_name, tgt_name, first_n,
        )
        stats = _write_pairs(pairs, out_src, out_tgt,
                             filters=_resolve_filters(filters, max_chars, max_ratio), exclude=exclude,
                             max_pairs=max_pairs, seed=seed, progress=progress,
                             desc=f"{corpus} {src_code}-{tgt_code}", total=first_n)
    log.info("%s %s-%s from %s: %s", corpus, src_code, tgt_code, zip_path, stats)
    return stats
