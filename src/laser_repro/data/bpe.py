"""Joint BPE as in the paper (Sec. 3.1) and LASER: fastBPE's byte-pair encoding, learned, applied and
turned into the fairseq dictionary.

The paper learns "a joint byte-pair encoding (BPE) vocabulary with 50k operations, which is learned on
the concatenation of all training corpora"; LASER used fastBPE. This module reimplements fastBPE's
semantics and file formats (no code taken from it):

* Words are the whitespace-separated tokens of the (Moses-tokenized, lower-cased) text; every line of
  every training file counts (no sampling). A word's initial symbols are its characters, with `</w>`
  appended to the last one (``"hello"`` -> ``h e l l o</w>``). Every character of the training text
  is a symbol: nothing is cut for coverage and no training character becomes <unk>.
* Learning repeats `merges` times: merge the most frequent adjacent pair of symbols, counted over the
  word-frequency table (a pair inside a word of frequency f counts f per occurrence); in every word,
  occurrences are merged left to right without overlap. Ties between pairs of equal frequency go to
  the smallest ``(left, right)`` in Unicode code-point order (fastBPE breaks them by internal ids that
  depend on its hash tables, i.e. arbitrarily). A pair already merged is never emitted twice. The
  learner keeps pair counts incrementally, an index pair -> words containing it (appended to, stale
  entries skipped), and a max-heap of pair counts with lazy invalidation, so a merge only visits the
  words that contain the pair. Memory is proportional to the number of distinct words and their
  characters, not to the corpus size.
* Application (fastBPE ``applybpe``): per word, from its characters + `</w>`, repeatedly merge every
  occurrence of the adjacent pair of lowest merge rank until no pair of the codes is left; the
  subwords are joined by spaces, a non-final one marked with ``@@`` (``hel@@ lo``). Results are
  memoized per word.

Files (fastBPE's formats):

* ``codes``: one merge per line, ``left right count`` in merge order (fastBPE ``learnbpe`` output;
  LASER's released ``93langs.fcodes`` reads as is).
* ``vocab``: ``token count`` per line, the tokens of the training text after applying the codes
  (fastBPE ``getvocab``), sorted by count descending then token.
* ``words`` (ours): ``word count`` per line, the word-frequency table of all training text, same order.

The fairseq dictionary (``bin/dict.txt``) lists the vocab's tokens in vocab order with their counts,
followed by every character of the training text in each form (``c@@``, ``c``) the vocab lacks, with
count 0, so that text over the training alphabet never maps to <unk>.
"""
from __future__ import annotations

import heapq
import logging
import os
import re
import sys
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

from tqdm import tqdm

from laser_repro.core.textio import InputError, atomic_output, decode_lines, iter_lines

log = logging.getLogger("laser_repro")

END = "</w>"          # appended to a word's last character
SEP = "@@"            # marks a subword that does not end its word (fastBPE's "@@ ")
#: added by fairseq's Dictionary itself; a text token equal to one of them cannot be a dictionary entry
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")

_READ_BYTES = 1 << 22


# ---- word counts ------------------------------------------------------------------------------------

def _count_file(path: str) -> tuple[Counter, int, int]:
    """(word counts, lines, tokens) of one UTF-8 file, read in blocks of whole lines."""
    counts: Counter = Counter()
    lines = tokens = 0
    with open(path, "rb") as f:
        while block := f.read(_READ_BYTES):
            if not block.endswith(b"\n"):
                block += f.readline()
            try:
                text = block.decode("utf-8")
            except UnicodeDecodeError as err:
                line = lines + block.count(b"\n", 0, err.start) + 1
                raise InputError(f"{path}: line {line}: invalid UTF-8") from None
            words = text.split()
            counts.update(words)
            tokens += len(words)
            lines += block.count(b"\n") + (not block.endswith(b"\n"))
    return counts, lines, tokens


def count_words(paths: Sequence[Path | str], *, threads: int = 1, progress: bool = False) -> tuple[Counter, dict]:
    """Word frequencies over all `paths` (streamed; memory grows with distinct words only) and stats.

    Words are split on whitespace as fairseq and the encoder split BPE'd lines (``str.split``); on
    Moses-tokenized text that is fastBPE's split on spaces. `threads` > 1 counts files in parallel
    processes (the sums do not depend on the order).
    """
    paths = [str(p) for p in paths]
    sizes = [os.path.getsize(p) for p in paths]
    total: Counter = Counter()
    stats = {"files": len(paths), "lines": 0, "tokens": 0}
    with tqdm(total=sum(sizes), unit="B", unit_scale=True, desc="count words", disable=not progress,
              file=sys.stderr, mininterval=10) as bar:
        def add(result, size):
            counts, lines, tokens = result
            total.update(counts)
            stats["lines"] += lines
            stats["tokens"] += tokens
            bar.update(size)

        if threads > 1 and len(paths) > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=min(threads, len(paths)),
                                     mp_context=multiprocessing.get_context("spawn")) as pool:
                for result, size in zip(pool.map(_count_file, paths), sizes):
                    add(result, size)
        else:
            for path, size in zip(paths, sizes):
                add(_count_file(path), size)
    stats["words"] = len(total)
    return total, stats


def _by_count(counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """Items sorted by count descending, then key (code-point order): the order of every file here."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _write_counts(items: Iterable[tuple[str, int]], path: Path | str) -> int:
    n = 0
    with atomic_output(path) as out:
        for key, count in items:
            out.write(f"{key} {count}\n")
            n += 1
    return n


def _read_counts(path: Path | str, what: str) -> Iterator[tuple[str, int]]:
    """(key, count) of a ``key count`` file; a malformed line raises InputError naming file and line."""
    for number, line in enumerate(iter_lines(path), start=1):
        fields = line.split(" ")
        if len(fields) != 2 or not fields[0] or not fields[1].isdigit() or any(c.isspace() for c in fields[0]):
            raise InputError(f"{path}: line {number}: expected '{what} count' (2 fields separated by one "
                             f"space, count a non-negative integer), got {line!r}")
        yield fields[0], int(fields[1])


def write_word_counts(counts: Mapping[str, int], path: Path | str) -> int:
    """Write the word-frequency table (``word count``, count descending then word); returns its size."""
    return _write_counts(_by_count(counts), path)


def read_word_counts(path: Path | str) -> Iterator[tuple[str, int]]:
    for word, count in _read_counts(path, "word"):
        if count < 1:
            raise InputError(f"{path}: word {word!r} has count {count}")
        yield word, count


# ---- codes and vocab files --------------------------------------------------------------------------

def write_codes(codes: Iterable[tuple[str, str, int]], path: Path | str) -> int:
    """fastBPE codes: ``left right count`` per merge, in merge order."""
    n = 0
    with atomic_output(path) as out:
        for left, right, count in codes:
            out.write(f"{left} {right} {count}\n")
            n += 1
    return n


def read_codes(path: Path | str) -> list[tuple[str, str, int]]:
    """Merges of a fastBPE codes file (ours or LASER's ``93langs.fcodes``), in merge order.

    Each line is ``left right count`` (one space between fields); anything else, or a pair listed
    twice, raises InputError naming the file and line.
    """
    codes: list[tuple[str, str, int]] = []
    seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(iter_lines(path), start=1):
        fields = line.rstrip("\r").split(" ")
        if len(fields) != 3 or not all(fields) or not fields[2].lstrip("-").isdigit():
            raise InputError(f"{path}: line {number}: expected a fastBPE merge 'left right count' (3 fields "
                             f"separated by one space), got {line!r}")
        pair = (fields[0], fields[1])
        if pair in seen:
            raise InputError(f"{path}: line {number}: the pair {fields[0]!r} {fields[1]!r} was already "
                             f"merged on line {seen[pair]}")
        seen[pair] = number
        codes.append((fields[0], fields[1], int(fields[2])))
    if not codes:
        raise InputError(f"{path}: no merges (empty codes file)")
    return codes


def write_vocab(vocab: Mapping[str, int], path: Path | str) -> int:
    """fastBPE vocab: ``token count`` per line, count descending then token."""
    return _write_counts(_by_count(vocab), path)


def read_vocab(path: Path | str) -> list[tuple[str, int]]:
    vocab = list(_read_counts(path, "token"))
    if not vocab:
        raise InputError(f"{path}: empty BPE vocabulary")
    return vocab


# ---- learning ---------------------------------------------------------------------------------------

@dataclass
class Learned:
    codes: list[tuple[str, str, int]]            # (left, right, count) in merge order
    vocab: dict[str, int] | None                 # token counts of the segmented words (None: see learn_codes)
    stats: dict = field(default_factory=dict)


def _add_location(where: dict, key: tuple[str, str], i: int) -> None:
    """Record that word i contains pair `key`: a plain int for the first word, then an array of ids."""
    loc = where.get(key)
    if loc is None:
        where[key] = i
    elif loc.__class__ is int:
        if loc != i:
            where[key] = array("i", (loc, i))
    elif loc[-1] != i:
        loc.append(i)


def learn_codes(word_counts: Iterable[tuple[str, int]], merges: int, *, log_every: int | None = None) -> Learned:
    """Learn up to `merges` BPE merges from (word, count) pairs (each word once).

    Returns the merges and, when every merge produced a new symbol string (the usual case), the
    token counts of the training words as the codes segment them (fastBPE ``getvocab``); otherwise
    vocab is None and the caller computes it with :func:`vocab_from_codes` (learn() does).

    State: each word as a tuple of interned symbol strings; the count of every adjacent pair; for
    every pair the ids of the words it was seen in (appended when a merge creates it, never removed:
    a stale id is skipped); a heap of (-count, left, right) with lazy invalidation (an entry is current
    iff its count equals the pair's count; a decreased pair is re-queued when its entry surfaces). Only
    pairs with count >= `floor` are queued: when none is left, the floor is lowered and the heap
    rebuilt from the counts, so the many rare pairs cost no heap entries.
    """
    if merges < 1:
        raise ValueError(f"bpe.merges must be at least 1, got {merges}")
    start = time.perf_counter()
    intern: dict[str, str] = {}     # one object per symbol string: shared by all words, `is`-comparable
    words: list[tuple[str, ...]] = []
    freqs = array("q")
    pair_counts: dict[tuple[str, str], int] = {}
    where: dict[tuple[str, str], int | array] = {}   # pair -> id(s) of words that contained it
    tokens = 0
    for i, (word, count) in enumerate(word_counts):
        syms = list(word)
        syms[-1] += END
        syms = tuple(map(intern.setdefault, syms, syms))
        words.append(syms)
        freqs.append(count)
        tokens += count
        for pair in zip(syms, syms[1:]):
            pair_counts[pair] = pair_counts.get(pair, 0) + count
            _add_location(where, pair, i)
    if not words:
        raise ValueError("no words to learn BPE from (empty training text)")
    alphabet = {s[:-len(END)] if s.endswith(END) else s for s in intern}
    log.info("BPE: %d distinct words (%d tokens), %d characters, %d distinct pairs; learning %d merges",
             len(words), tokens, len(alphabet), len(pair_counts), merges)

    # the floor starts at the merges-th largest pair count: most merges are found above it
    floor = min(heapq.nlargest(merges, pair_counts.values())) if pair_counts else 1
    heap: list[tuple[int, str, str]] = []
    codes: list[tuple[str, str, int]] = []
    merged: set[tuple[str, str]] = set()
    made: set[str] = set()
    repeated_symbols = rebuilds = visited = 0
    log_every = log_every or max(1, merges // 50)
    heappop, heappush = heapq.heappop, heapq.heappush
    add_location = _add_location
    while len(codes) < merges:
        best = None
        while True:
            if not heap:   # (first pass, or) no pair at or above the floor left: lower it, requeue
                if not pair_counts or (floor <= 1 and rebuilds):
                    break
                floor = floor // 4 if rebuilds else floor
                floor = max(1, floor)
                heap = [(-c, left, right) for (left, right), c in pair_counts.items()
                        if c >= floor and (left, right) not in merged]
                heapq.heapify(heap)
                rebuilds += 1
                continue
            negc, left, right = heap[0]
            count = pair_counts.get((left, right), 0)
            if count == -negc and (left, right) not in merged:
                best = (left, right)
                break
            heappop(heap)
            if floor <= count < -negc and (left, right) not in merged:   # decreased since queued
                heappush(heap, (-count, left, right))
        if best is None:
            log.warning("BPE: no pair left to merge after %d of %d merges (every word is one symbol)",
                        len(codes), merges)
            break
        heappop(heap)
        left, right = best
        new = left + right
        new = intern.setdefault(new, new)
        if new in made:
            repeated_symbols += 1
        made.add(new)
        merged.add(best)
        codes.append((left, right, count))

        delta: dict[tuple[str, str], int] = {}
        ids = where.pop(best, ())
        for i in (ids,) if ids.__class__ is int else dict.fromkeys(ids):
            syms = words[i]
            try:
                j = syms.index(left)
            except ValueError:
                continue
            syms = list(syms)
            f = freqs[i]
            n = len(syms)
            visited += 1
            while True:   # every occurrence, left to right, no overlap; j: an occurrence of `left`
                if j < n - 1 and syms[j + 1] is right:
                    delta[best] = delta.get(best, 0) - f
                    if j > 0:
                        prev = syms[j - 1]
                        key = (prev, left)
                        delta[key] = delta.get(key, 0) - f
                        key = (prev, new)
                        delta[key] = delta.get(key, 0) + f
                        add_location(where, key, i)
                    if j < n - 2:
                        nxt = syms[j + 2]
                        key = (right, nxt)
                        delta[key] = delta.get(key, 0) - f
                        key = (new, nxt)
                        delta[key] = delta.get(key, 0) + f
                        add_location(where, key, i)
                    syms[j] = new
                    del syms[j + 1]
                    n -= 1
                j += 1
                if j >= n - 1:
                    break
                try:
                    j = syms.index(left, j)
                except ValueError:
                    break
            words[i] = tuple(syms)
        for key, d in delta.items():
            if d:
                c = pair_counts.get(key, 0) + d
                if c > 0:
                    pair_counts[key] = c
                    if d > 0 and c >= floor:
                        heappush(heap, (-c, key[0], key[1]))
                else:   # gone from every word: its index entries are all stale
                    pair_counts.pop(key, None)
                    where.pop(key, None)
        if len(codes) % log_every == 0 or len(codes) == merges:
            log.info("BPE: merge %d/%d: %r + %r (count %d); %.0f s, %d word visits, %d pairs, heap %d",
                     len(codes), merges, left, right, count, time.perf_counter() - start, visited,
                     len(pair_counts), len(heap))

    stats = {"words": len(words), "tokens": tokens, "characters": len(alphabet), "merges": len(codes),
             "repeated_symbols": repeated_symbols, "heap_rebuilds": rebuilds,
             "learn_seconds": round(time.perf_counter() - start, 3)}
    if repeated_symbols:
        # a symbol string made by two merges: applying the codes by rank can segment a word differently
        # from the order the learner merged it in, so the vocab must come from applying the codes
        log.warning("BPE: %d merges produced a symbol string made before; the vocab is computed by "
                    "applying the codes", repeated_symbols)
        return Learned(codes, None, stats)
    vocab: dict[str, int] = {}
    for syms, f in zip(words, freqs):
        for s in syms[:-1]:
            token = s + SEP
            vocab[token] = vocab.get(token, 0) + f
        token = syms[-1][:-len(END)]
        vocab[token] = vocab.get(token, 0) + f
    return Learned(codes, vocab, stats)


def vocab_from_codes(codes: Sequence[tuple[str, str, int]] | BpeApplier,
                     word_counts: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Token counts of the training text after applying the codes (fastBPE ``getvocab``), from the
    word-frequency table (each word's segmentation counted with the word's frequency)."""
    applier = codes if isinstance(codes, BpeApplier) else BpeApplier(codes, cache_size=0)
    vocab: dict[str, int] = {}
    for word, count in word_counts:
        for token in applier.encode_word(word).split(" "):
            vocab[token] = vocab.get(token, 0) + count
    return vocab


#: Learning 50k merges (scripts/benchmark_bpe.py, 0.5M-4M distinct words): ~52 s and ~0.35 GB per million
#: distinct words; the word-count file holds ~14.2 bytes per distinct word (the default run: 7,523,434 bytes,
#: 529,517 words). Without the file (a dry run): the paper's upper estimate, 95M distinct words.
LEARN_S_PER_MILLION_WORDS = 52.0
LEARN_MB_PER_MILLION_WORDS = 350.0
WORD_COUNT_BYTES_PER_WORD = 14.2
PAPER_DISTINCT_WORDS = 95_000_000


def learn_resources(words_file_bytes: int | None, headroom: float = 1.25) -> dict:
    """The SLURM request of ``bpe-learn`` on a word-count file of that size: ``{"mem_mb", "runtime"}``
    (runtime in minutes), from the measured rates above, with `headroom`."""
    words = PAPER_DISTINCT_WORDS if words_file_bytes is None else words_file_bytes / WORD_COUNT_BYTES_PER_WORD
    millions = words / 1e6
    return {"mem_mb": max(2000, int(1000 + millions * LEARN_MB_PER_MILLION_WORDS * headroom)),
            "runtime": max(5, int(millions * LEARN_S_PER_MILLION_WORDS * headroom / 60) + 5)}


def learn_resources_for(words_path: Path | str) -> dict:
    """:func:`learn_resources` of a word-count file, the paper's estimate while it does not exist (a dry run)."""
    return learn_resources(os.path.getsize(words_path) if os.path.exists(words_path) else None)


def learn(codes_path: Path | str, vocab_path: Path | str, *, merges: int, words_path: Path | str | None = None,
          inputs: Sequence[Path | str] | None = None, threads: int = 1) -> dict:
    """Learn `merges` merges from a word-frequency file (`words_path`, written by bpe-count) or from
    text files (`inputs`); write the codes and the vocab; returns statistics."""
    if (words_path is None) == (inputs is None):
        raise ValueError("give either words_path or inputs")
    if merges < 1:
        raise ValueError(f"bpe.merges must be at least 1, got {merges}")
    source = words_path if words_path is not None else ", ".join(map(str, inputs))
    if words_path is not None:
        word_counts = lambda: read_word_counts(words_path)  # noqa: E731 (read twice, never held as text)
    else:
        items = _by_count(count_words(inputs, threads=threads, progress=True)[0])
        word_counts = lambda: items  # noqa: E731
    try:
        learned = learn_codes(word_counts(), merges)
    except InputError:
        raise
    except ValueError:   # no words
        what = "the word-count file is empty" if words_path is not None else "the text files have no word"
        raise InputError(f"{source}: no words to learn BPE from: {what}. Is every training bitext "
                         f"empty? See the extraction statistics results/<run>/corpora/*/*.stats.json "
                         f"('written': 0, 'absent': true)") from None
    vocab = learned.vocab if learned.vocab is not None else vocab_from_codes(learned.codes, word_counts())
    write_codes(learned.codes, codes_path)
    write_vocab(vocab, vocab_path)
    return {**learned.stats, "vocab": len(vocab)}


# ---- application ------------------------------------------------------------------------------------

class BpeApplier:
    """Applies fastBPE codes to whitespace-tokenized text (fastBPE ``applybpe`` output), memoized per word."""

    def __init__(self, codes: Path | str | Sequence[tuple[str, str] | tuple[str, str, int]], *,
                 cache_size: int = 1 << 20):
        if isinstance(codes, (str, os.PathLike)):
            codes = read_codes(codes)
        self.ranks: dict[tuple[str, str], int] = {}
        for rank, (left, right, *_) in enumerate(codes):
            self.ranks.setdefault((left, right), rank)
        self.cache: dict[str, str] = {}
        self.cache_size = cache_size

    def segment(self, word: str) -> list[str]:
        """The subwords of one word; the last one ends with `</w>`."""
        syms = list(word)
        syms[-1] += END
        ranks = self.ranks
        while len(syms) > 1:
            best = None
            best_rank = len(ranks)
            for pair in zip(syms, syms[1:]):
                rank = ranks.get(pair)
                if rank is not None and rank < best_rank:
                    best, best_rank = pair, rank
            if best is None:
                break
            left, right = best
            new = left + right
            out = []
            j, n = 0, len(syms)
            while j < n:
                if j < n - 1 and syms[j] == left and syms[j + 1] == right:
                    out.append(new)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            syms = out
        return syms

    def encode_word(self, word: str) -> str:
        """``hel@@ lo``: the subwords of `word`, joined by spaces, non-final ones marked with ``@@``."""
        encoded = self.cache.get(word)
        if encoded is None:
            syms = self.segment(word)
            syms[-1] = syms[-1][:-len(END)]
            encoded = (SEP + " ").join(syms)
            if self.cache_size:
                if len(self.cache) >= self.cache_size:
                    self.cache.clear()
                self.cache[word] = encoded
        return encoded

    def encode_line(self, line: str) -> str:
        return " ".join(map(self.encode_word, line.split()))

    def encode(self, lines: Iterable[str]) -> list[str]:
        return [self.encode_line(line) for line in lines]

    def encode_stream(self, lines: Iterable[str]) -> Iterator[str]:
        return map(self.encode_line, lines)


def apply_files(codes_path: Path | str, inputs: Sequence[Path | str], out_path: Path | str,
                *, progress: bool = False) -> int:
    """BPE-encode the concatenation of `inputs` into `out_path` (one output line per input line)."""
    applier = BpeApplier(codes_path)
    written = 0
    with atomic_output(out_path) as out:
        for path in inputs:
            for encoded in applier.encode_stream(iter_lines(path, progress=progress)):
                out.write(encoded + "\n")
                written += 1
    return written


# ---- fairseq dictionary -----------------------------------------------------------------------------

def subword_characters(token: str) -> str:
    """The characters of a vocab token (``hel@@`` -> ``hel``)."""
    return token[:-len(SEP)] if token.endswith(SEP) and len(token) > len(SEP) else token


def write_fairseq_dict(vocab_path: Path | str, dict_path: Path | str, *, characters: bool = True) -> dict:
    """Write the fairseq dictionary (``token count`` per line) from a fastBPE vocab file.

    The vocab's tokens come first, in vocab order with their counts (as LASER's dictionary). With
    `characters`, every character occurring in the vocab's tokens, i.e. in the training text, follows
    in each of its two forms (``c@@`` inside a word, ``c`` at its end) the vocab lacks, with count 0
    (code-point order), so that a word made of training characters never maps to <unk>. Tokens equal to
    one of fairseq's own symbols (``<unk>`` ...) are left out (fairseq adds those itself).
    """
    vocab = read_vocab(vocab_path)
    entries: list[tuple[str, int]] = []
    present: set[str] = set()
    skipped = []
    for token, count in vocab:
        if token in FAIRSEQ_SPECIALS:
            skipped.append(token)
            continue
        if token in present:
            raise InputError(f"{vocab_path}: token {token!r} listed twice")
        present.add(token)
        entries.append((token, count))
    added = 0
    if characters:
        alphabet = sorted({ch for token in present for ch in subword_characters(token)})
        for ch in alphabet:
            for form in (ch + SEP, ch):
                if form not in present and form not in FAIRSEQ_SPECIALS:
                    entries.append((form, 0))
                    present.add(form)
                    added += 1
    with atomic_output(dict_path) as out:
        for token, count in entries:
            out.write(f"{token} {count}\n")
    if skipped:
        log.warning("%s: left out of the dictionary (fairseq's own symbols): %s", vocab_path, skipped)
    return {"entries": len(entries), "vocab": len(vocab) - len(skipped), "character_forms_added": added}


_SHARD_NAME = re.compile(r"\.\d{3}-of-\d{3}$")


def iter_input_lines(paths: Sequence[str], block_lines: int) -> Iterator[str]:
    """Lines of the given files in order: runs of shard files (``<base>.KKK-of-NNN``) are read back in
    the original order; ``-`` is standard input; any other file is read as is."""
    from laser_repro.data.sharding import group_shards, iter_sharded

    run: list[str] = []
    for path in [*paths, None]:
        if path is not None and _SHARD_NAME.search(str(path)):
            run.append(path)
            continue
        for shards in group_shards(run) if run else ():
            yield from iter_sharded(shards, block_lines)
        run = []
        if path == "-":
            for _, line in decode_lines(sys.stdin.buffer, "<stdin>"):
                yield line
        elif path is not None:
            yield from iter_lines(path)
