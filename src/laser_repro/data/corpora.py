"""Produce line-aligned training bitexts from raw corpora.

Every extractor writes a pair of plain UTF-8 files (``out_src``, ``out_tgt``) whose line
*i* is the *i*-th kept sentence pair, and returns a statistics dict::

    {"read": int,                  # pairs read from the input (after first_n)
     "written": int,               # pairs written to the outputs
     "dropped_empty": int,         # either side empty / whitespace or control characters only
     "dropped_long": int,          # either side longer than max_chars characters
     "dropped_ratio": int,         # longer/shorter character ratio > max_ratio
     "dropped_tatoeba_test": int,  # either side in the ``exclude`` set
     "dropped_max_pairs": int}     # removed by the max_pairs sub-sampling

with ``read == written + sum(dropped_*)``.  Each dropped pair is counted once, under the
first failing check in the order listed.

Inputs are streamed (never loaded in memory).  Lines are split on ``\\n`` only and
decoded as strict UTF-8 line by line, so an invalid byte sequence is reported with the
file/member name and its 1-based line number.  Control characters (C0 and C1: ``\\x00-\\x1f``
except tab, ``\\x7f-\\x9f``; among them those other tools treat as line breaks, ``\\r``,
``\\v``, ``\\f``, ``\\x1c-\\x1e``, ``\\x85``) and U+2028, U+2029 are replaced by a space, so
that downstream readers using universal newlines / ``str.splitlines`` cannot misalign the two
sides and a line of NUL bytes is an empty line; then each side is stripped of surrounding
whitespace (:func:`laser_repro.core.textio.one_line`, as every stage).

A pair with no sentence left (an empty input, every pair filtered, an OPUS pair recorded as
absent on the server) is checked by :func:`require_sentences` (``laser-repro extract``): an
error naming the corpus, the pair, the input files and the reason, unless the corpus allows
absent pairs (then the stats say ``"absent": true``, with a warning).

Sub-sampling:

* ``first_n`` keeps the first N input pairs (what the paper does for the UN corpus);
  reading stops after N pairs, so the line-count check then only covers those pairs.
* ``max_pairs`` keeps at most N of the pairs that survive the filters, as a seeded
  uniform random sample **in original order** (Knuth's selection sampling, Algorithm S:
  pair *t* of K is kept with probability (N - selected) / (K - t)).  The filtered pairs
  are first written to temporary files (one pass over the input, which also validates
  it completely); if more than N survive, a second pass over those temporary files
  selects exactly N.  Memory is O(1); the result depends only on (seed, K, N)
  (``random.Random(seed)``, Mersenne Twister, stable across Python versions).

Outputs are written to ``<out>.part`` files and renamed to their final names only after
both sides are complete.  On any error both ``.part`` files are removed, as are
pre-existing outputs, so no (possibly stale or half-written) output file remains.
"""

from __future__ import annotations

import bz2
import gzip
import io
import logging
import lzma
import os
import random
import sys
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, fields, replace
from itertools import islice, zip_longest
from pathlib import Path
from typing import Any, BinaryIO

from laser_repro.core.archives import TAR_ERRORS, ZIP_ERRORS, find_zip_member, norm_member
from laser_repro.core.textio import one_line

__all__ = [
    "CorpusError",
    "EmptyBitextError",
    "empty_bitext_reason",
    "require_sentences",
    "PairFilter",
    "OPUS_BASE_URL",
    "FLORES200_URL",
    "opus_moses_path",
    "opus_moses_url",
    "opus_moses_members",
    "extract_opus_moses",
    "read_local_bitext",
    "extract_nway_pair",
    "normalize_for_exclusion",
    "load_tatoeba_test",
    "load_tatoeba_test_files",
    "extract_tar_member",
    "extract_tar_members",
    "flores200_member",
    "empty_stats",
]

log = logging.getLogger(__name__)

#: the OPUS download server (also the default of config opus.base_url and of `laser-repro fetch --base-url`)
OPUS_BASE_URL = "https://object.pouta.csc.fi"
FLORES200_URL = "https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz"

_WRITE_BUFFER = 1 << 20


class CorpusError(RuntimeError):
    """Malformed or unreadable corpus input (corrupt archive, misaligned sides, bad UTF-8...)."""


@dataclass(frozen=True)
class PairFilter:
    """Pair-wise filters. ``None`` disables a check.

    max_chars: drop a pair if either side has more than this many characters.
    max_ratio: drop a pair if len(longer side) / len(shorter side) > max_ratio.
    """

    max_chars: int | None = 1000
    max_ratio: float | None = None

    def __post_init__(self):
        if self.max_chars is not None and self.max_chars < 1:
            raise ValueError(f"max_chars must be >= 1 or None, got {self.max_chars}")
        if self.max_ratio is not None and self.max_ratio < 1:
            raise ValueError(f"max_ratio must be >= 1 or None, got {self.max_ratio}")

    @classmethod
    def coerce(cls, value: PairFilter | Mapping | None) -> PairFilter:
        """Accept a PairFilter, a mapping (e.g. from the YAML config) or None (defaults)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            known = {f.name for f in fields(cls)}
            unknown = set(value) - known
            if unknown:
                raise ValueError(f"unknown filter option(s) {sorted(unknown)}; known: {sorted(known)}")
            return cls(**dict(value))
        raise TypeError(f"filters must be a PairFilter, a mapping or None, not {type(value).__name__}")


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _resolve_filters(filters: PairFilter | Mapping | None, max_chars, max_ratio) -> PairFilter:
    """``filters`` (or the defaults), with explicitly passed max_chars / max_ratio on top."""
    flt = PairFilter.coerce(filters)
    over = {}
    if max_chars is not _UNSET:
        over["max_chars"] = max_chars
    if max_ratio is not _UNSET:
        over["max_ratio"] = max_ratio
    return replace(flt, **over) if over else flt


def empty_stats() -> dict:
    return {
        "read": 0,
        "written": 0,
        "dropped_empty": 0,
        "dropped_long": 0,
        "dropped_ratio": 0,
        "dropped_tatoeba_test": 0,
        "dropped_max_pairs": 0,
    }


def normalize_for_exclusion(s: str) -> str:
    """Key used for Tatoeba test exclusion: control characters as spaces (as extraction does),
    stripped, internal whitespace collapsed to one space."""
    return " ".join(one_line(s).split())


def _excl_key(s: str) -> str:
    """normalize_for_exclusion() for an already stripped string, with a fast path: a
    printable string (only ASCII space as separator) without double spaces is its own key."""
    if s.isprintable() and "  " not in s:
        return s
    return " ".join(s.split())


# --------------------------------------------------------------------------- line reading


def _iter_lines(stream: BinaryIO, name: str, wrap_errors: tuple[type[BaseException], ...] = ()) -> Iterator[str]:
    """Yield the decoded lines of a binary stream, without the trailing ``\\n``.

    Splits on ``\\n`` only (a trailing ``\\r`` of CRLF files is left to :func:`~laser_repro.core.textio.one_line`)
    and drops a UTF-8 BOM at the start of line 1.  Invalid UTF-8 -> CorpusError naming
    ``name`` and the 1-based line number.  Exceptions of the ``wrap_errors`` types raised
    while reading the stream are re-raised as CorpusError naming ``name``.
    """
    lineno = 0
    try:
        for raw in stream:
            lineno += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorpusError(
                    f"{name}: invalid UTF-8 on line {lineno} (byte {e.start} of the line: "
                    f"{raw[max(0, e.start - 10):e.end + 10]!r})"
                ) from e
            if line[-1:] == "\n":
                line = line[:-1]
            if lineno == 1 and line[:1] == "\ufeff":
                line = line[1:]
            yield line
    except wrap_errors as e:
        raise CorpusError(
            f"{name}: corrupt or truncated data (detected after {lineno} lines; reads are buffered): {e}"
        ) from e


def _count_rest(it: Iterator[str]) -> int:
    n = 0
    for _ in it:
        n += 1
    return n


def _lockstep(
    src_lines: Iterator[str],
    tgt_lines: Iterator[str],
    src_name: str,
    tgt_name: str,
    first_n: int | None,
) -> Iterator[tuple[str, str]]:
    """Pair two line iterators; a length mismatch raises CorpusError with both counts."""
    both = zip_longest(src_lines, tgt_lines)
    it = both if first_n is None else islice(both, first_n)
    n = 0
    for s, t in it:
        if s is None or t is None:
            longer = n + 1 + _count_rest(both)
            n_src, n_tgt = (n, longer) if s is None else (longer, n)
            raise CorpusError(
                f"line count mismatch: {src_name} has {n_src} lines but {tgt_name} has {n_tgt} lines"
            )
        n += 1
        yield s, t


# --------------------------------------------------------------------------- writing


def _part(p: Path) -> Path:
    return p.with_name(p.name + ".part")


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except FileNotFoundError:
        pass


@contextmanager
def _fresh_outputs(*outs: str | os.PathLike):
    """Delete existing outputs now (stale results must not survive a failed run) and
    again if the body raises."""
    paths = [Path(o) for o in outs]
    for p in paths:
        _unlink(p)
    try:
        yield
    except BaseException:
        for p in paths:
            _unlink(p)
        raise


def _progress(iterable, desc: str, enabled: bool, total: int | None = None):
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, desc=desc, total=total, unit=" pairs", unit_scale=True,
                file=sys.stderr, leave=False, mininterval=1.0, dynamic_ncols=True)


def _open_out(p: Path):
    return open(p, "w", encoding="utf-8", newline="\n", buffering=_WRITE_BUFFER)


def _write_pairs(
    pairs: Iterable[tuple[str, str]],
    out_src: str | os.PathLike,
    out_tgt: str | os.PathLike,
    *,
    filters: PairFilter | Mapping | None,
    exclude: set[str] | frozenset[str] | None,
    max_pairs: int | None,
    seed: int,
    progress: bool,
    desc: str,
    total: int | None = None,
) -> dict:
    """Filter ``pairs`` and write them atomically to ``out_src`` / ``out_tgt``."""
    flt = PairFilter.coerce(filters)
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0 or None, got {max_pairs}")
    out_src, out_tgt = Path(out_src), Path(out_tgt)
    if out_src.resolve() == out_tgt.resolve():
        raise ValueError(f"out_src and out_tgt are the same file: {out_src}")
    max_chars, max_ratio = flt.max_chars, flt.max_ratio
    excl = exclude if exclude else None

    stats = empty_stats()
    tmp_src, tmp_tgt = _part(out_src), _part(out_tgt)
    smp_src, smp_tgt = out_src.with_name(out_src.name + ".sample.part"), out_tgt.with_name(out_tgt.name + ".sample.part")
    temps = (tmp_src, tmp_tgt, smp_src, smp_tgt)
    committed = False
    # Stale outputs from an earlier run must not survive a failure of this one.
    _unlink(out_src)
    _unlink(out_tgt)
    try:
        out_src.parent.mkdir(parents=True, exist_ok=True)
        out_tgt.parent.mkdir(parents=True, exist_ok=True)
        read = written = d_empty = d_long = d_ratio = d_excl = 0
        with _open_out(tmp_src) as fs, _open_out(tmp_tgt) as ft:
            for s, t in _progress(pairs, desc, progress, total):
                read += 1
                s = one_line(s)
                t = one_line(t)
                ls, lt = len(s), len(t)
                if ls == 0 or lt == 0:
                    d_empty += 1
                    continue
                if max_chars is not None and (ls > max_chars or lt > max_chars):
                    d_long += 1
                    continue
                if max_ratio is not None and max(ls, lt) > max_ratio * min(ls, lt):
                    d_ratio += 1
                    continue
                if excl is not None and (
                    _excl_key(s) in excl or _excl_key(t) in excl
                ):
                    d_excl += 1
                    continue
                fs.write(s)
                fs.write("\n")
                ft.write(t)
                ft.write("\n")
                written += 1
        stats.update(read=read, dropped_empty=d_empty, dropped_long=d_long,
                     dropped_ratio=d_ratio, dropped_tatoeba_test=d_excl)

        final_src, final_tgt = tmp_src, tmp_tgt
        if max_pairs is not None and written > max_pairs:
            _select_sample(tmp_src, tmp_tgt, smp_src, smp_tgt, written, max_pairs, seed)
            stats["dropped_max_pairs"] = written - max_pairs
            written = max_pairs
            final_src, final_tgt = smp_src, smp_tgt
        stats["written"] = written

        os.replace(final_src, out_src)
        os.replace(final_tgt, out_tgt)
        committed = True
    finally:
        for p in temps:
            _unlink(p)
        if not committed:
            _unlink(out_src)
            _unlink(out_tgt)
    assert stats["read"] == stats["written"] + sum(v for k, v in stats.items() if k.startswith("dropped_"))
    return stats


def _select_sample(in_src: Path, in_tgt: Path, out_src: Path, out_tgt: Path, k: int, n: int, seed: int) -> None:
    """Write a uniform random sample of exactly ``n`` of the ``k`` line pairs, in order."""
    rng = random.Random(seed)
    selected = 0
    with open(in_src, "rb") as fs, open(in_tgt, "rb") as ft, \
            open(out_src, "wb", buffering=_WRITE_BUFFER) as os_, open(out_tgt, "wb", buffering=_WRITE_BUFFER) as ot:
        for t, (ls, lt) in enumerate(zip(fs, ft, strict=False)):
            if selected >= n:
                break
            if (k - t) * rng.random() < n - selected:
                os_.write(ls)
                ot.write(lt)
                selected += 1
    if selected != n:  # cannot happen unless the temporary files changed underneath us
        raise CorpusError(f"internal error: sampled {selected} pairs instead of {n}")


# --------------------------------------------------------------------------- OPUS


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
    ``{corpus}.{l1}-{l2}.{tgt_code}`` (l1 < l2).  See the module docstring for
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


class EmptyBitextError(CorpusError):
    """An extraction kept no sentence pair, and its corpus does not allow absent pairs."""


#: what each stats counter of a dropped pair means (``{max_chars}`` / ``{max_ratio}``: the limits)
_DROP_REASONS = {
    "dropped_empty": "a side empty, whitespace or control characters only",
    "dropped_long": "a side longer than max_chars={max_chars} characters",
    "dropped_ratio": "length ratio of the sides above max_ratio={max_ratio}",
    "dropped_tatoeba_test": "a side in the Tatoeba test set (exclude_tatoeba_test)",
    "dropped_max_pairs": "max_pairs sub-sampling",
}


def empty_bitext_reason(stats: Mapping, sources: Iterable[str] = (), *, max_chars: int | None = None,
                        max_ratio: float | None = None) -> str | None:
    """Why an extraction with these ``stats`` wrote no pair (None when it wrote some).

    ``sources``: the names of the input files (or zip members), for the message."""
    if stats.get("written", 0) > 0:
        return None
    if stats.get("absent_on_server"):
        return f"the pair does not exist at its source: {stats['absent_on_server']}"
    sources = list(sources)
    names = " and ".join(sources) or "the input"
    read, held = stats.get("read", 0), stats.get("heldout", 0)
    if read == 0 and held:
        return f"all {held} lines of {names} are held-out evaluation lines (--skip-lines): none is left to train on"
    if read == 0:
        return f"{names} contain no lines (empty file{'s' if len(sources) > 1 else ''})"
    drops = sorted(((stats.get(k, 0), k) for k in _DROP_REASONS if stats.get(k, 0)), reverse=True)
    how = "; ".join(f"{n} by {k} ({_DROP_REASONS[k].format(max_chars=max_chars, max_ratio=max_ratio)})"
                    for n, k in drops)
    return f"all {read} pairs read from {names} were removed by the filters: {how or 'none counted'}"


def require_sentences(stats: dict, *, corpus: str, pair: str, sources: Iterable[str], absent_ok: bool,
                      outputs: Iterable[str | os.PathLike] = (), archive: str | os.PathLike | None = None,
                      max_chars: int | None = None, max_ratio: float | None = None) -> dict:
    """Check that an extraction kept at least one sentence pair.

    When it kept none: with ``absent_ok`` (the corpus's ``allow_absent_pairs``), mark ``stats``
    ``"absent": True`` with ``"absent_reason"`` and log a WARNING (the empty bitext stays: training
    leaves the pair out); otherwise delete ``outputs`` and raise :class:`EmptyBitextError` naming
    the corpus, the pair, the input files and why nothing is left (from the stats' counters).
    ``archive``: the OPUS zip the sources are members of (named as the record to delete when the
    pair was recorded absent); ``allow_absent_pairs`` exists for OPUS corpora only, so the error
    suggests it only when ``archive`` is given.  Returns ``stats``."""
    sources = [str(x) for x in sources]
    reason = empty_bitext_reason(stats, sources, max_chars=max_chars, max_ratio=max_ratio)
    if reason is None:
        return stats
    if absent_ok:
        stats.update(absent=True, absent_reason=reason)
        log.warning("corpus %r, pair %s: no sentence pair extracted (%s); allow_absent_pairs: an empty "
                    "bitext, training leaves this pair out", corpus, pair, reason)
        return stats
    for out in outputs:
        _unlink(Path(out))
    if archive is None:  # a local corpus
        hint = (f"fix the input files (or the filters), or leave this pair out of corpus {corpus!r} "
                "(its languages / targets)")
    else:
        hint = f"set allow_absent_pairs: true for corpus {corpus!r} to train without this pair"
        if stats.get("absent_on_server"):
            hint += f", or delete {archive} (recorded by fetch --absent-ok) to download it again"
        else:
            hint = "fix the input data (or the filters), or " + hint
    raise EmptyBitextError(f"corpus {corpus!r}, pair {pair}: no sentence pair extracted: {reason}. To go on, {hint}")


def _check_limit(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or value < 0):
        raise ValueError(f"{name} must be a non-negative int or None, got {value!r}")


# --------------------------------------------------------------------------- local files


def _open_local(path: Path, stack: ExitStack) -> BinaryIO:
    """Open a local text file for binary reading; .gz/.bz2/.xz are decompressed on the fly."""
    if not path.is_file():
        raise CorpusError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".gz":
        return stack.enter_context(gzip.open(path, "rb"))
    if suffix == ".bz2":
        return stack.enter_context(bz2.open(path, "rb"))
    if suffix == ".xz":
        return stack.enter_context(lzma.open(path, "rb"))
    return stack.enter_context(open(path, "rb", buffering=_WRITE_BUFFER))


_LOCAL_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)


def read_local_bitext(
    src_path: str | os.PathLike,
    tgt_path: str | os.PathLike,
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
    skip_lines: tuple[int, int] | None = None,
) -> dict:
    """Filter/sub-sample two line-aligned local files (optionally .gz/.bz2/.xz).

    Same options, checks and stats as :func:`extract_opus_moses`; errors name the files.
    ``skip_lines``: 0-based ``(start, stop)`` of lines left out before anything else (the
    evaluation lines held out of an N-way corpus); stats ``heldout`` counts them.
    """
    src_path, tgt_path = Path(src_path), Path(tgt_path)
    _check_limit("first_n", first_n)
    with _fresh_outputs(out_src, out_tgt), ExitStack() as stack:
        fsrc = _open_local(src_path, stack)
        ftgt = _open_local(tgt_path, stack)
        pairs = _lockstep(
            _iter_lines(fsrc, str(src_path), _LOCAL_ERRORS),
            _iter_lines(ftgt, str(tgt_path), _LOCAL_ERRORS),
            str(src_path), str(tgt_path), first_n,
        )
        held = [0]
        if skip_lines is not None:
            pairs = _skip_range(pairs, skip_lines, held)
        stats = _write_pairs(pairs, out_src, out_tgt,
                             filters=_resolve_filters(filters, max_chars, max_ratio), exclude=exclude,
                             max_pairs=max_pairs, seed=seed, progress=progress,
                             desc=f"{src_path.name}|{tgt_path.name}", total=first_n)
    if skip_lines is not None:
        stats["heldout"] = held[0]
    log.info("bitext %s | %s: %s", src_path, tgt_path, stats)
    return stats


def _skip_range(pairs: Iterable[tuple[str, str]], lines: tuple[int, int], counter: list) -> Iterator[tuple[str, str]]:
    start, stop = (int(x) for x in lines)
    if not 0 <= start <= stop:
        raise ValueError(f"held-out lines must be 0 <= start <= stop, got {lines}")
    for i, pair in enumerate(pairs):
        if start <= i < stop:
            counter[0] += 1
            continue
        yield pair


#: A bitext of two files of an N-way parallel corpus (FLORES-200 style: one file per language, line
#: *i* the same sentence in every language; ``skip_lines``: the held-out evaluation lines, never
#: trained on): :func:`read_local_bitext`, under the name that says what kind of input the
#: pipeline gives it.
extract_nway_pair = read_local_bitext


# --------------------------------------------------------------------------- Tatoeba test


def load_tatoeba_test_files(*paths: str | os.PathLike) -> set[str]:
    """Union of the (normalised, non-empty) lines of the given test files; see
    :func:`normalize_for_exclusion`.  Pass the result as ``exclude=`` to any extractor."""
    out: set[str] = set()
    for p in map(Path, paths):
        if not p.is_file():
            raise CorpusError(f"Tatoeba test file not found: {p}")
        with open(p, "rb") as f:
            for line in _iter_lines(f, str(p)):
                key = normalize_for_exclusion(line)
                if key:
                    out.add(key)
    return out


def load_tatoeba_test(test_dir: str | os.PathLike, lang: str | Iterable[str]) -> set[str]:
    """Sentences of the Tatoeba test set for ``lang`` (ISO 639-3, e.g. ``"deu"``), both sides.

    Reads ``{test_dir}/tatoeba.{lang}-eng.{lang}`` and ``{test_dir}/tatoeba.{lang}-eng.eng``
    (see :func:`load_tatoeba_test_files`).  ``lang`` may also be an iterable of codes;
    the union is returned.
    """
    test_dir = Path(test_dir)
    langs = [lang] if isinstance(lang, str) else list(lang)
    return load_tatoeba_test_files(
        *(test_dir / f"tatoeba.{lg}-eng.{side}" for lg in langs for side in (lg, "eng"))
    )


# --------------------------------------------------------------------------- tarballs


def flores200_member(code: str, split: str = "dev") -> str:
    """Tar member of a FLORES-200 file, e.g. ``flores200_member("deu_Latn")`` ->
    ``"flores200_dataset/dev/deu_Latn.dev"`` (split: ``dev`` or ``devtest``)."""
    if split not in ("dev", "devtest"):
        raise ValueError(f"FLORES-200 split must be 'dev' or 'devtest', not {split!r}")
    return f"flores200_dataset/{split}/{code}.{split}"


def extract_tar_members(
    tar_path: str | os.PathLike, members: Mapping[str, str | os.PathLike]
) -> dict[str, Path]:
    """Extract several regular-file members of a (compressed) tar in one streaming pass.

    ``members`` maps member names (a leading ``./`` is ignored) to output paths.  Each
    output is written to ``<out>.part`` and renamed when complete.  Raises CorpusError
    when a member is missing (listing a few available names), is not a regular file, or
    the archive is truncated/corrupt; on error no output of this call remains.
    """
    tar_path = Path(tar_path)
    wanted = {norm_member(m): Path(o) for m, o in members.items()}
    if not tar_path.is_file():
        raise CorpusError(f"{tar_path}: no such file")
    done: dict[str, Path] = {}
    seen: list[str] = []
    ok = False
    for o in wanted.values():
        _unlink(o)
    try:
        try:
            with tarfile.open(tar_path, mode="r|*") as tf:
                for ti in tf:
                    name = norm_member(ti.name)
                    seen.append(name)
                    if name not in wanted or name in done:
                        continue
                    if not ti.isfile():
                        raise CorpusError(f"{tar_path}: member {ti.name!r} is not a regular file")
                    out = wanted[name]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    part = _part(out)
                    try:
                        src = tf.extractfile(ti)
                        n = 0
                        with open(part, "wb") as fo:
                            while True:
                                block = src.read(_WRITE_BUFFER)
                                if not block:
                                    break
                                fo.write(block)
                                n += len(block)
                        if n != ti.size:
                            raise CorpusError(
                                f"{tar_path}: member {ti.name!r} is truncated ({n} of {ti.size} bytes)")
                        os.replace(part, out)
                    finally:
                        _unlink(part)
                    done[name] = out
                    if len(done) == len(wanted):
                        break
        except CorpusError:
            raise
        except TAR_ERRORS as e:
            raise CorpusError(f"{tar_path}: truncated or corrupt tar archive: {e}") from e
        missing = [m for m in wanted if m not in done]
        if missing:
            same_dir = [n for n in seen if n.rsplit("/", 1)[0] == missing[0].rsplit("/", 1)[0]]
            sample = (same_dir or seen)[:10]
            raise CorpusError(
                f"{tar_path}: member(s) {missing[:5]} not found among {len(seen)} entries; "
                f"e.g. {sample}"
            )
        ok = True
    finally:
        if not ok:
            for o in wanted.values():
                _unlink(o)
    return done


def extract_tar_member(tar_path: str | os.PathLike, member: str, out_path: str | os.PathLike) -> Path:
    """Extract one regular-file member of a (compressed) tar to ``out_path`` (streaming).

    See :func:`extract_tar_members` for the error behaviour.
    """
    return extract_tar_members(tar_path, {member: out_path})[norm_member(member)]
