"""What every extractor of a training bitext shares (:mod:`laser_repro.data.corpora`): pair filters,
statistics, line reading, sub-sampling and atomic outputs; the Tatoeba test sets to exclude.

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
absent on the server) is checked by :func:`~laser_repro.data.corpora.require_sentences`
(``laser-repro extract``): an error naming the corpus, the pair, the input files and the reason,
unless the corpus allows absent pairs (then the stats say ``"absent": true``, with a warning).

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

import os
import random
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, fields, replace
from itertools import islice, zip_longest
from pathlib import Path
from typing import Any, BinaryIO

from laser_repro.core.textio import one_line

__all__ = [
    "CorpusError",
    "PairFilter",
    "normalize_for_exclusion",
    "load_tatoeba_test",
    "load_tatoeba_test_files",
    "empty_stats",
]

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


def _progress(iterable, desc: str, enabled: bool, total: int | None = None, unit: str = " pairs"):
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, desc=desc, total=total, unit=unit, unit_scale=True,
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
    companions: Sequence[str | os.PathLike] = (),
) -> dict:
    """Filter ``pairs`` and write them atomically to ``out_src`` / ``out_tgt``.

    ``companions``: files written in step with the kept pairs (an N-way corpus's Moses-preprocessed
    sides, :func:`laser_repro.data.corpora.read_local_bitext`): each item of ``pairs`` is then
    ``(src, tgt, *lines)``, one line per companion, written as given when the pair is kept (the
    filters judge ``src`` and ``tgt`` only; ``max_pairs`` samples the same pairs in every file)."""
    flt = PairFilter.coerce(filters)
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0 or None, got {max_pairs}")
    out_src, out_tgt = Path(out_src), Path(out_tgt)
    if out_src.resolve() == out_tgt.resolve():
        raise ValueError(f"out_src and out_tgt are the same file: {out_src}")
    max_chars, max_ratio = flt.max_chars, flt.max_ratio
    excl = exclude if exclude else None

    stats = empty_stats()
    outs = [out_src, out_tgt, *(Path(c) for c in companions)]
    tmps = [_part(p) for p in outs]
    samples = [p.with_name(p.name + ".sample.part") for p in outs]
    committed = False
    # Stale outputs from an earlier run must not survive a failure of this one.
    for p in outs:
        _unlink(p)
    try:
        for p in outs:
            p.parent.mkdir(parents=True, exist_ok=True)
        read = written = d_empty = d_long = d_ratio = d_excl = 0
        with ExitStack() as stack:
            fs, ft, *fc = (stack.enter_context(_open_out(p)) for p in tmps)
            for s, t, *extra in _progress(pairs, desc, progress, total):
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
                for f, line in zip(fc, extra, strict=True):
                    f.write(line)
                    f.write("\n")
                written += 1
        stats.update(read=read, dropped_empty=d_empty, dropped_long=d_long,
                     dropped_ratio=d_ratio, dropped_tatoeba_test=d_excl)

        finals = tmps
        if max_pairs is not None and written > max_pairs:
            _select_sample(tmps, samples, written, max_pairs, seed)
            stats["dropped_max_pairs"] = written - max_pairs
            written = max_pairs
            finals = samples
        stats["written"] = written

        for final, out in zip(finals, outs):
            os.replace(final, out)
        committed = True
    finally:
        for p in (*tmps, *samples):
            _unlink(p)
        if not committed:
            for p in outs:
                _unlink(p)
    assert stats["read"] == stats["written"] + sum(v for k, v in stats.items() if k.startswith("dropped_"))
    return stats


def _select_sample(ins: Sequence[Path], outs: Sequence[Path], k: int, n: int, seed: int) -> None:
    """Write a uniform random sample of exactly ``n`` of the ``k`` lines of the aligned files ``ins``
    (the same lines of each, in order)."""
    rng = random.Random(seed)
    selected = 0
    with ExitStack() as stack:
        readers = [stack.enter_context(open(p, "rb")) for p in ins]
        writers = [stack.enter_context(open(p, "wb", buffering=_WRITE_BUFFER)) for p in outs]
        for t, lines in enumerate(zip(*readers, strict=False)):
            if selected >= n:
                break
            if (k - t) * rng.random() < n - selected:
                for w, line in zip(writers, lines):
                    w.write(line)
                selected += 1
    if selected != n:  # cannot happen unless the temporary files changed underneath us
        raise CorpusError(f"internal error: sampled {selected} pairs instead of {n}")


def _check_limit(name: str, value: int | None) -> None:
    if value is not None and (not isinstance(value, int) or value < 0):
        raise ValueError(f"{name} must be a non-negative int or None, got {value!r}")


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
