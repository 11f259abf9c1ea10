"""Produce line-aligned training bitexts from raw corpora.

The extractors, each writing a pair of line-aligned UTF-8 files and returning statistics:

* OPUS moses zips: :func:`extract_opus_moses` and the OPUS paths and URLs (:mod:`laser_repro.data.opus`);
* local files, optionally compressed: :func:`read_local_bitext`, and :func:`extract_nway_pair` for
  two files of an N-way parallel corpus (here);
* tar members (FLORES-200): :func:`extract_tar_members` (:mod:`laser_repro.data.tarballs`).

What they share -- the pair filters (:class:`PairFilter`), the statistics, strict line reading,
sub-sampling (``first_n``, ``max_pairs``), atomic outputs and the Tatoeba test sets to exclude -- is
in :mod:`laser_repro.data.bitext`, whose docstring describes it.  Here also: the check that an
extraction kept at least one sentence pair (:func:`require_sentences`).  The names in ``__all__``
and the OPUS absent-pair record (``write_absent_pair_record``, ``absent_pair_url``,
``ABSENT_MARKER``) are importable from here, as before those modules were split off.
"""

from __future__ import annotations

import bz2
import gzip
import logging
import lzma
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

from laser_repro.core.textio import atomic_output, one_line
from laser_repro.data.bitext import (_UNSET, _WRITE_BUFFER, CorpusError, PairFilter, _check_limit, _fresh_outputs,
                                     _iter_lines, _lockstep, _progress, _resolve_filters, _unlink, _write_pairs,
                                     empty_stats, load_tatoeba_test, load_tatoeba_test_files, normalize_for_exclusion)
# ABSENT_MARKER, absent_pair_url, write_absent_pair_record: re-exported (data/fetch.py and tests import them)
from laser_repro.data.opus import (ABSENT_MARKER, OPUS_BASE_URL, absent_pair_url, extract_opus_moses,
                                   opus_moses_members, opus_moses_path, opus_moses_url, write_absent_pair_record)
from laser_repro.data.tarballs import FLORES200_URL, extract_tar_member, extract_tar_members, flores200_member

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


#: Evaluation sets that are never training text: a name in a training file's path, download member or
#: test set -> what evaluates on it. newstest2012 is Table 7's "WMT" set (TACL 2019, section 5);
#: sacrebleu calls it wmt12.
EVALUATION_ONLY_SETS = {
    "newstest2012": "the WMT similarity test set of the LASER paper (TACL 2019 Table 7; evaluation.wmt)",
    "wmt12": "sacrebleu's name of newstest2012, the WMT similarity test set of the LASER paper (TACL 2019 Table 7)",
}


def evaluation_set_named(text: str) -> str | None:
    """The evaluation-only set (:data:`EVALUATION_ONLY_SETS`) that ``text`` (a path, URL or member
    template, a test-set name) names, or None. Matched as a whole name: ``newstest2012.de``, ``wmt12``,
    ``.../wmt12/test.tgz``, not ``newstest20121`` or ``wmt121``."""
    import re

    for name in EVALUATION_ONLY_SETS:
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![0-9])", str(text)):
            return name
    return None


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
    moses: tuple[str | os.PathLike, str | os.PathLike] | None = None,
    moses_out: tuple[str | os.PathLike, str | os.PathLike] | None = None,
) -> dict:
    """Filter/sub-sample two line-aligned local files (optionally .gz/.bz2/.xz).

    Same options, checks and stats as :func:`extract_opus_moses`; errors name the files.
    ``skip_lines``: 0-based ``(start, stop)`` of lines left out before anything else (the
    evaluation lines held out of an N-way corpus); stats ``heldout`` counts them.
    ``moses``: the two files' Moses-preprocessed lines (:func:`write_moses_lines`, line *i* of
    line *i*); the kept pairs' lines of them go to ``moses_out``, so that the pair is not
    preprocessed again (an N-way corpus is preprocessed once per language, not once per pair).
    """
    src_path, tgt_path = Path(src_path), Path(tgt_path)
    _check_limit("first_n", first_n)
    if (moses is None) != (moses_out is None):
        raise ValueError("give both moses and moses_out, or neither")
    with _fresh_outputs(out_src, out_tgt, *(moses_out or ())), ExitStack() as stack:
        def lines(path: Path) -> Iterator[str]:
            return _iter_lines(_open_local(path, stack), str(path), _LOCAL_ERRORS)

        src_lines, tgt_lines = lines(src_path), lines(tgt_path)
        if moses is not None:  # each side with its Moses lines, which must be as many
            src_lines = _lockstep(src_lines, lines(Path(moses[0])), str(src_path), str(moses[0]), None)
            tgt_lines = _lockstep(tgt_lines, lines(Path(moses[1])), str(tgt_path), str(moses[1]), None)
        pairs = _lockstep(src_lines, tgt_lines, str(src_path), str(tgt_path), first_n)
        if moses is not None:
            pairs = ((s, t, ms, mt) for (s, ms), (t, mt) in pairs)
        held = [0]
        if skip_lines is not None:
            pairs = _skip_range(pairs, skip_lines, held)
        stats = _write_pairs(pairs, out_src, out_tgt,
                             filters=_resolve_filters(filters, max_chars, max_ratio), exclude=exclude,
                             max_pairs=max_pairs, seed=seed, progress=progress,
                             desc=f"{src_path.name}|{tgt_path.name}", total=first_n, companions=moses_out or ())
    if skip_lines is not None:
        stats["heldout"] = held[0]
    log.info("bitext %s | %s: %s", src_path, tgt_path, stats)
    return stats


def write_moses_lines(path: str | os.PathLike, out: str | os.PathLike, preprocess: Callable[[str], str], *,
                      progress: bool = True) -> int:
    """Line *i* of ``out``: ``preprocess`` (a language's Moses preprocessor) of line *i* of the local
    corpus file ``path``, read and cleaned as the extraction reads it (:func:`read_local_bitext`),
    so that its lines are those of any pair extracted from the file. Returns the line count."""
    path = Path(path)
    n = 0
    with ExitStack() as stack, atomic_output(out) as f:
        lines = _iter_lines(_open_local(path, stack), str(path), _LOCAL_ERRORS)
        for line in _progress(lines, path.name, progress, unit=" lines"):
            f.write(preprocess(one_line(line)) + "\n")
            n += 1
    return n


def _skip_range(pairs: Iterable[tuple], lines: tuple[int, int], counter: list) -> Iterator[tuple]:
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
