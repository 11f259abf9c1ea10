"""Which evaluation sentences a run's training text holds (contamination): for every test set of the run
(Tatoeba both sides, the held-out FLORES lines, WMT, BUCC, XNLI, MLDoc, an N-way data entry's validation
lines) and every language, how many test sentences occur in the training text of that language

* **exactly**: the line as given, stripped of its surrounding whitespace, and
* **after normalisation**: the preprocessing the training text goes through (:func:`normalisers`, the one
  place that chooses it from a data entry's settings), applied to the test sentence and compared with the
  normalised training text.

The training text is streamed, never held: each language keeps two sets of 8-byte hashes (blake2b of the
line's UTF-8, :data:`HASH_BYTES`), the distinct lines as given and as normalised, as sorted ``uint64``
arrays (:class:`HashSet`: 8 bytes per distinct line, and the merges' transient copies, measured in
docs/evaluation.md). One language is indexed at a time, and its test rows are counted before the next one
is read, so memory follows the largest language, not the sum. Two different lines share a hash with
probability 2^-64 per pair; a test set of 10^5 lines against 10^9 distinct training lines expects
5 x 10^-6 false matches.

The input is a spec (JSON, written by the workflow: ``laser_repro.workflow.contamination``)::

    {"run": NAME,
     "training": [{"data": "bitext_data.news", "entry": {the data entry}, "models": [...], "text": "what the
                   training text is", "normalised_text": "what the normalised files are",
                   "languages": {LANG: {"exact": [SOURCE, ...], "normalised": [SOURCE, ...] or null}}}],
     "sets": [{"set": "tatoeba", "label": "Tatoeba v1", "part": "deu-eng", "language": "deu", "file": PATH,
               "data": null or the one training entry it belongs to}],
     "absent": {SET: why it has no rows}}

A SOURCE is ``{"files": [PATH, ...], "skip": [START, STOP] or null}``: the files' lines in order, lines
START..STOP-1 of their concatenation (0-based) left out (an N-way data entry's held-out validation lines).
``normalised: null``: the normalised set is the normaliser applied to the exact lines (the files holding the
normalised text, e.g. the Moses shards the BPE is applied to, are faster to read when they exist).

The result (:func:`contamination`) is plain JSON: the same inputs give the same bytes.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from laser_repro.core.textio import InputError, iter_lines

#: bytes of a line's hash (blake2b with digest_size=8)
HASH_BYTES = 8
#: how the lines are hashed, as the JSON states it
HASH = "blake2b, 8-byte digest, of the line's UTF-8 with its surrounding whitespace stripped"
#: hashes gathered before they are sorted and de-duplicated into a HashSet's pending arrays
CHUNK_LINES = 1 << 20


# ---- the one place that says what "normalised" means for a data entry -----------------------------------
def normalisers(data: Mapping) -> Callable[[str], Callable[[str], str]] | None:
    """The normalisation of a data entry's training text (an entry of ``bitext_data`` or ``nway_data``, as
    the config writes it): ``lang -> callable(str) -> str``, the preprocessing that entry's training lines of
    language ``lang`` go through. Its ``description`` attribute says what it is (the table's note).

    The text paths: Moses (LASER's, and the N-way data's): :func:`laser_repro.data.preprocess.
    language_preprocessor` with the entry's lowercasing (``preprocess.lowercase`` of a bitext_data entry,
    ``lowercase`` of an nway_data entry); LASER2's (``subword.kind: spm``): its language-agnostic normalisation.
    Another text path is added here, and nowhere else; until it is, None: the table counts exact matches only
    and says why."""
    import functools

    from laser_repro.data.subword_text import TEXT_OF_KIND, normalizer

    kind = (data.get("subword") or {}).get("kind", "bpe")
    if kind not in TEXT_OF_KIND:
        return None
    if "preprocess" in data:
        lowercase, key = bool(data["preprocess"].get("lowercase", True)), "preprocess.lowercase"
    else:
        lowercase, key = bool(data.get("lowercase", True)), "lowercase"
    text = TEXT_OF_KIND[kind]  # the training text's path before its subwords (laser_repro.data.subword_text)

    @functools.lru_cache(maxsize=None)
    def of_path(lang: str) -> Callable[[str], str]:
        return normalizer(text, lang, lowercase=lowercase)

    def of(lang: str) -> Callable[[str], str]:
        return of_path(lang if text == "moses" else "")  # LASER2's: one normaliser for every language

    case = f"{'lowercased' if lowercase else 'case kept'} ({key}: {'true' if lowercase else 'false'}"
    if text == "laser2":
        of.description = ("LASER2's language-agnostic normalisation, the same for every language (non-printing "
                          "characters to spaces, Moses' punctuation normalisation with its English rules, no "
                          f"tokenizer; subword.kind spm), {case}; laser_repro.data.spm.Laser2Normalizer)")
    else:
        of.description = ("the training preprocessing of the language: Moses (non-printing characters removed, "
                          "punctuation normalised, tokenized without escaping; jieba for Chinese, MeCab for Japanese, "
                          f"Greek romanized), {case}; laser_repro.data.preprocess.language_preprocessor)")
    return of


# ---- hashes ----------------------------------------------------------------------------------------------
def line_hash(text: str) -> bytes:
    """The 8-byte hash of a line (its surrounding whitespace already stripped)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=HASH_BYTES).digest()


def hashes(lines: Sequence[str]):
    """The hashes of lines as a ``uint64`` array (little-endian digests), in order."""
    import numpy as np

    return np.frombuffer(b"".join(line_hash(x) for x in lines), dtype="<u8").astype(np.uint64)


class HashSet:
    """A set of line hashes built from a stream: ``add`` a line, ``array()`` the sorted distinct hashes
    (``uint64``). Hashes are gathered as bytes (8 per line), every :data:`CHUNK_LINES` lines sorted and
    de-duplicated into a pending array, and the pending arrays merged into the sorted set once they hold as
    many hashes as it (so each hash is merged O(log n) times and memory stays near 8 bytes per distinct line,
    plus the merge's copies). The empty line is never added."""

    def __init__(self, chunk_lines: int = CHUNK_LINES):
        import numpy as np

        self._np = np
        self._chunk = max(1, int(chunk_lines))
        self._sorted = np.empty(0, dtype=np.uint64)
        self._pending: list = []
        self._pending_n = 0
        self._buf = bytearray()
        self._buf_n = 0
        self.lines = 0  # non-empty lines added (with repeats)

    def add(self, text: str) -> None:
        if not text:
            return
        self._buf += line_hash(text)
        self._buf_n += 1
        self.lines += 1
        if self._buf_n >= self._chunk:
            self._flush()

    def _flush(self) -> None:
        np = self._np
        if self._buf_n:
            chunk = np.unique(np.frombuffer(bytes(self._buf), dtype="<u8").astype(np.uint64))
            self._buf, self._buf_n = bytearray(), 0
            self._pending.append(chunk)
            self._pending_n += chunk.size
        if self._pending and self._pending_n >= max(self._sorted.size, self._chunk):
            self._merge()

    def _merge(self) -> None:
        """The sorted set and the pending arrays into one sorted set: concatenated into one new array (the old
        ones freed), sorted in place (radix sort: linear), repeats dropped. Peak: about twice the merged hashes
        and a byte each, 17 bytes per hash."""
        np = self._np
        merged = np.concatenate([self._sorted, *self._pending])
        self._sorted, self._pending, self._pending_n = None, [], 0
        merged.sort(kind="stable")
        keep = np.empty(merged.size, dtype=bool)
        keep[:1] = True
        np.not_equal(merged[1:], merged[:-1], out=keep[1:])
        self._sorted = merged[keep]

    def array(self):
        """The sorted distinct hashes (``uint64``)."""
        self._flush()
        if self._pending:
            self._merge()
        return self._sorted

    def __len__(self) -> int:
        return int(self.array().size)


def contains(sorted_hashes, queries):
    """A boolean array: which of ``queries`` (``uint64``) are in ``sorted_hashes``."""
    import numpy as np

    if sorted_hashes.size == 0 or queries.size == 0:
        return np.zeros(queries.shape, dtype=bool)
    at = np.searchsorted(sorted_hashes, queries)
    at[at == sorted_hashes.size] = 0
    return sorted_hashes[at] == queries


# ---- reading -----------------------------------------------------------------------------------------------
def _lines(path: str, what: str) -> Iterator[str]:
    """The lines of a file (invalid UTF-8: an InputError naming the file and line); a missing file: an
    InputError naming it and what it is."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file ({what})")
    yield from iter_lines(path)


def source_lines(source: Mapping, what: str) -> Iterator[str]:
    """The stripped lines of a SOURCE (module docstring): its files in order, the ``skip`` range of their
    concatenation left out."""
    files = source.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise InputError(f"contamination spec: {what}: a source needs 'files', a list of paths; got {source!r}")
    skip = source.get("skip")
    start, stop = (int(skip[0]), int(skip[1])) if skip else (0, 0)
    index = 0
    for path in files:
        for line in _lines(path, what):
            if not start <= index < stop:
                yield line.strip()
            index += 1


def read_test_file(path: str, what: str) -> list[str]:
    return [line.strip() for line in _lines(path, what)]


def index_language(lang: str, spec: Mapping, normalise: Callable[[str], str] | None, what: str,
                   chunk_lines: int = CHUNK_LINES) -> dict:
    """A language's training text as hash sets: ``{"exact": sorted uint64, "normalised": sorted uint64,
    "lines": non-empty training lines read, "files": the files read}``. ``spec``: ``{"exact": [SOURCE],
    "normalised": [SOURCE] or None}``; without normalised sources, ``normalise`` (the language's
    normaliser) is applied to the exact lines (each distinct line of a block once). ``normalise`` None (no
    normalisation for the data's text path): the exact set only (the normalised one empty)."""
    exact, norm = HashSet(chunk_lines), HashSet(chunk_lines)
    normalised_sources = spec.get("normalised") if normalise is not None else []
    files = []
    block: set[str] = set()
    for source in spec.get("exact") or []:
        files += source.get("files", [])
        for line in source_lines(source, f"{what}: training text of {lang}"):
            exact.add(line)
            if normalised_sources is None and line:
                block.add(line)
                if len(block) >= 100_000:
                    for x in block:
                        norm.add(normalise(x))
                    block.clear()
    for x in block:
        norm.add(normalise(x))
    exact_hashes = exact.array()  # merged before the normalised files are read: the two peaks do not add up
    for source in normalised_sources or []:
        files += source.get("files", [])
        for line in source_lines(source, f"{what}: normalised training text of {lang}"):
            norm.add(line)
    return {"exact": exact_hashes, "normalised": norm.array(), "lines": exact.lines, "files": files}


# ---- the counts ------------------------------------------------------------------------------------------
#: test sentences named per row of the JSON (``examples``): the first ones found in the training text
EXAMPLES = 5


def count_sentences(lines: Sequence[str], index: Mapping | None, normalise: Callable[[str], str] | None) -> dict:
    """``{"sentences", "exact", "normalised", "examples"}`` of a test set's lines against one language's index
    (None: the language has no training text, both counts None; ``normalise`` None: no normalised count).
    ``examples``: the first :data:`EXAMPLES` test sentences in the training text exactly, and as many only
    after normalisation. An empty test line is never in the training text."""
    out = {"sentences": len(lines), "exact": None, "normalised": None, "examples": {"exact": [], "normalised_only": []}}
    if index is None:
        return out
    kept = [x for x in lines if x]
    if not kept:
        out["exact"], out["normalised"] = 0, (None if normalise is None else 0)
        return out
    exact = contains(index["exact"], hashes(kept))
    out["exact"] = int(exact.sum())
    out["examples"]["exact"] = [x for x, hit in zip(kept, exact) if hit][:EXAMPLES]
    if normalise is None:
        return out
    normalised = [normalise(x) for x in kept]
    # an empty normalised line (a test line of only removed characters) is never in the training text
    hit = contains(index["normalised"], hashes(normalised)) & [bool(x) for x in normalised]
    out["normalised"] = int(hit.sum())
    out["examples"]["normalised_only"] = [x for x, h, e in zip(kept, hit, exact) if h and not e][:EXAMPLES]
    return out


def _check_spec(spec: Mapping) -> None:
    if not isinstance(spec, Mapping) or not isinstance(spec.get("training"), list) or not isinstance(spec.get("sets"), list):
        raise InputError("contamination spec: expected {'run', 'training': [...], 'sets': [...]}")
    names = [t.get("data") for t in spec["training"]]
    if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
        raise InputError(f"contamination spec: each training entry needs its own 'data' name; got {names}")
    for s in spec["sets"]:
        missing = [k for k in ("set", "language", "file") if not s.get(k)]
        if missing:
            raise InputError(f"contamination spec: a test set lacks {', '.join(missing)}: {s!r}")
        if s.get("data") is not None and s["data"] not in names:
            raise InputError(f"contamination spec: test set {s['file']} belongs to {s['data']!r}, not a training entry "
                             f"({', '.join(names)})")


def percent(n: int | None, of: int) -> float | None:
    return None if n is None else (round(100.0 * n / of, 2) if of else 0.0)


def contamination(spec: Mapping, *, chunk_lines: int = CHUNK_LINES, log=None) -> dict:
    """The counts of a spec (module docstring): ``{"run", "hash", "training": [...], "rows": [...], "absent"}``,
    one row per training entry x test file, in the spec's order."""
    _check_spec(spec)
    tests: dict[str, list[str]] = {}
    for s in spec["sets"]:
        if s["file"] not in tests:
            tests[s["file"]] = read_test_file(s["file"], f"test set {s.get('label') or s['set']} {s['language']}")
    training_out, rows = [], []
    for t in spec["training"]:
        entry = t.get("entry") or {}
        of = normalisers(entry)
        normalise = of if of is not None else (lambda lang: None)
        description = of.description if of is not None else (
            f"none: the text path subword.kind {(entry.get('subword') or {}).get('kind')!r} has no normalisation here yet "
            f"(laser_repro.evaluation.contamination.normalisers): exact matches only")
        langs = t.get("languages") or {}
        sets = [s for s in spec["sets"] if s.get("data") in (None, t["data"])]
        counts: dict[int, dict] = {}
        stats = {}
        for lang in sorted(langs):  # one language's index at a time
            index = index_language(lang, langs[lang], normalise(lang), t["data"], chunk_lines)
            stats[lang] = {"lines": index["lines"], "distinct": int(index["exact"].size),
                           "distinct_normalised": int(index["normalised"].size), "files": len(index["files"])}
            if log:
                log(f"{t['data']} {lang}: {index['lines']} training lines, {stats[lang]['distinct']} distinct, "
                    f"{stats[lang]['distinct_normalised']} distinct normalised")
            for k, s in enumerate(sets):
                if s["language"] == lang:
                    counts[k] = count_sentences(tests[s["file"]], index if index["lines"] else None, normalise(lang))
            del index
        for k, s in enumerate(sets):
            c = counts.get(k) or count_sentences(tests[s["file"]], None, None)
            lines = stats.get(s["language"], {}).get("lines", 0)
            rows.append({"data": t["data"], "set": s["set"], "label": s.get("label") or s["set"], "part": s.get("part", ""),
                         "language": s["language"], "file": s["file"], "sentences": c["sentences"],
                         "training_lines": lines, "training_distinct": stats.get(s["language"], {}).get("distinct", 0),
                         "exact": c["exact"], "exact_percent": percent(c["exact"], c["sentences"]),
                         "normalised": c["normalised"], "normalised_percent": percent(c["normalised"], c["sentences"]),
                         "status": "ok" if lines else "no training text", "examples": c["examples"]})
        training_out.append({"data": t["data"], "models": list(t.get("models") or []), "text": t.get("text", ""),
                             "normalised_text": t.get("normalised_text", ""), "normalisation": description,
                             "languages": {lang: stats[lang] for lang in sorted(stats)}})
    return {"run": spec.get("run"), "hash": HASH, "training": training_out, "rows": rows,
            "absent": dict(spec.get("absent") or {})}


def set_totals(rows: Sequence[Mapping]) -> list[dict]:
    """Per training entry and test set (in the rows' order): its sentences and the exact and normalised
    counts summed over every row (a row without training text counts its sentences, none in training; no
    normalised total where a row with training text has no normalised count: a text path without one)."""
    out: dict[tuple, dict] = {}
    for r in rows:
        t = out.setdefault((r["data"], r["set"]), {"data": r["data"], "set": r["set"], "label": r["label"],
                                                    "sentences": 0, "exact": 0, "normalised": 0})
        t["sentences"] += r["sentences"]
        t["exact"] += r["exact"] or 0
        if t["normalised"] is not None:
            unknown = r["status"] == "ok" and r["normalised"] is None
            t["normalised"] = None if unknown else t["normalised"] + (r["normalised"] or 0)
    for t in out.values():
        t["exact_percent"] = percent(t["exact"], t["sentences"])
        t["normalised_percent"] = percent(t["normalised"], t["sentences"])
    return list(out.values())


# ---- SLURM request ---------------------------------------------------------------------------------------
# Measured on the default run (config/small.yaml, 2026-11-28, 2 cores; docs/evaluation.md, "Contamination"):
# 189 MB of training text (pair files and Moses shards, 637,558 lines; English 57.8 MB, 223,758 lines),
# 7.0-8.4 s and 244-249 MB peak RSS, most of it the interpreter, Moses, jieba and MeCab for the test sentences.
#: MB of the process before the training text: the interpreter, numpy, Moses (133 MB without training text),
#: jieba and MeCab (the default run: 249 MB in all)
MB_BASE = 300
#: peak bytes per distinct training line of one language: its exact set held (8) while the normalised one
#: merges (about 24 at its peak); the command measured 28.9 and 31.6 at 4M and 16M distinct lines (docs/evaluation.md)
BYTES_PER_DISTINCT_LINE = 32
#: bytes of a training line in the exact and the normalised files together, to bound the lines from the files'
#: size: 256-649 in the default run's news text; 100 for short lines (subtitles), so the request errs high
TEXT_BYTES_PER_LINE = 100
#: seconds per MB of training text read and hashed (measured 0.012-0.017 on the default run's languages, 0.026
#: on 1.9 GB of synthetic text, 16M distinct lines, on a busy machine: 1.6-3 us per line)
SECONDS_PER_MB = 0.03


def resources(training_bytes: int | None, largest_language_bytes: int | None, headroom: float = 1.5) -> dict:
    """The SLURM request of ``contamination``: ``{"mem_mb", "runtime"}`` (minutes) from the size of the
    training text files (all, and the largest language's: one language is indexed at a time), with
    ``headroom``; before they exist (a dry run, `laser-repro slurm-requests`), 2 GB and 15 min: Snakemake asks
    again when it submits the job, from the files then there."""
    if training_bytes is None:
        return {"mem_mb": 2000, "runtime": 15}
    lines = largest_language_bytes / TEXT_BYTES_PER_LINE  # an upper bound of its distinct lines
    mem = MB_BASE + lines * BYTES_PER_DISTINCT_LINE * headroom / 1e6
    seconds = 120 + training_bytes / 1e6 * SECONDS_PER_MB * headroom
    return {"mem_mb": max(1000, int(mem)), "runtime": max(5, int(seconds / 60) + 1)}
