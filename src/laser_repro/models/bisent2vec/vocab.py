"""The Bi-Sent2Vec vocabulary of one language pair, and the training text as word ids.

As the reference implementation, one vocabulary holds both languages' words, kept apart by language
(``the`` of English and ``the`` of another language are two entries): id 0 is the placeholder that
stands for the target word in its own sentence's context, then the words of both languages by count
(descending; ties by language then word, so that the same text gives the same ids), those seen fewer
than ``min_count`` times dropped and the rest cut at ``max_size`` entries. Bigrams are not entries:
they are hashed into ``bucket`` rows after the words (laser_repro.models.bisent2vec.kernel).
"""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from laser_repro.core.textio import iter_lines

PLACEHOLDER = "<PLACEHOLDER>"


@dataclass
class Vocabulary:
    languages: tuple[str, str]
    words: list[str]          # entry -> word (entry 0: the placeholder)
    langs: list[int]          # entry -> index of its language in ``languages`` (-1: the placeholder)
    counts: list[int]         # entry -> count in the training text (0: the placeholder)
    ntokens: int              # every training token of both languages, rare words included
    _index: list[dict[str, int]] = field(default_factory=list, repr=False)

    def __post_init__(self):
        self._index = [{} for _ in self.languages]
        for i, (word, lang) in enumerate(zip(self.words, self.langs)):
            if lang >= 0:
                self._index[lang][word] = i

    def __len__(self) -> int:
        return len(self.words)

    def lookup(self, lang: str) -> dict[str, int]:
        """word -> entry of ``lang``'s words."""
        return self._index[self.languages.index(lang)]

    def keep_probabilities(self, t: float) -> np.ndarray:
        """Subsampling: entry w is a target with probability min(1, sqrt(t/f_w) + t/f_w) (f_w its frequency)."""
        counts = np.asarray(self.counts, dtype=np.float64)
        with np.errstate(divide="ignore"):
            ratio = t / (counts / max(self.ntokens, 1))
        keep = np.sqrt(ratio) + ratio
        keep[counts == 0] = 0.0  # the placeholder is never a target
        return np.minimum(keep, 1.0)

    def negative_table(self, size: int, seed: int) -> np.ndarray:
        """fastText's table of negatives: entry w repeated in proportion to count^0.5, shuffled."""
        weights = np.sqrt(np.asarray(self.counts, dtype=np.float64))
        reps = np.ceil(weights * size / weights.sum()).astype(np.int64)
        table = np.repeat(np.arange(len(self.words), dtype=np.int32), reps)
        np.random.default_rng(seed).shuffle(table)
        return table

    def to_state(self) -> dict:
        return {"languages": list(self.languages), "words": list(self.words), "langs": list(self.langs),
                "counts": list(self.counts), "ntokens": int(self.ntokens)}

    @classmethod
    def from_state(cls, state: Mapping) -> "Vocabulary":
        return cls(tuple(state["languages"]), list(state["words"]), list(state["langs"]), list(state["counts"]),
                   int(state["ntokens"]))


def build(texts: Mapping[str, Iterable[str]], languages: Sequence[str], *, min_count: int,
          max_size: int | None) -> Vocabulary:
    """The vocabulary of ``texts`` (language -> its tokenised training lines, whitespace-separated)."""
    if len(languages) != 2:
        raise ValueError(f"bisent2vec: a model is trained on one language pair, got {list(languages)}")
    counters = []
    ntokens = 0
    for lang in languages:
        counter: Counter = Counter()
        for line in texts[lang]:
            words = line.split()
            counter.update(words)
            ntokens += len(words)
        counters.append(counter)
    entries = [(count, li, word) for li, counter in enumerate(counters) for word, count in counter.items()
               if count >= min_count]
    entries.sort(key=lambda e: (-e[0], e[1], e[2]))
    if max_size is not None:
        entries = entries[:max(0, max_size - 1)]
    if not entries:
        raise ValueError(f"bisent2vec: no word of {list(languages)} occurs {min_count} times or more "
                         f"(min_count); lower it or give more text")
    return Vocabulary(tuple(languages), [PLACEHOLDER] + [w for _, _, w in entries], [-1] + [li for _, li, _ in entries],
                      [0] + [c for c, _, _ in entries], ntokens)


def build_from_files(files: Mapping[str, str], languages: Sequence[str], **kwargs) -> Vocabulary:
    return build({lang: iter_lines(files[lang], progress=True, desc=f"vocabulary {lang}") for lang in languages},
                 languages, **kwargs)


def encode(lines: Iterable[str], lookup: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Tokenised lines -> (word ids of every line, concatenated; offsets: line i is ids[off[i]:off[i+1]]);
    words outside the vocabulary are dropped (as fastText does)."""
    ids, offsets = array("i"), array("q", [0])
    get = lookup.get
    for line in lines:
        ids.extend(i for i in map(get, line.split()) if i is not None)
        offsets.append(len(ids))
    return np.frombuffer(ids, dtype=np.int32).copy(), np.frombuffer(offsets, dtype=np.int64).copy()


class LengthCap:
    """Cuts tokenised lines to their first ``max_len`` words and counts the lines it cut: training costs
    the square of a sentence's length (each target word's context is the whole sentence), so one
    megabyte-long line would take minutes of an epoch and delay a stop request as long."""

    def __init__(self, max_len: int):
        self.max_len, self.capped = max_len, 0

    def __call__(self, lines: Iterable[str]) -> Iterator[str]:
        for line in lines:
            if len(line) > self.max_len:  # shorter lines have at most max_len words: no split needed
                words = line.split()
                if len(words) > self.max_len:
                    self.capped += 1
                    line = " ".join(words[:self.max_len])
            yield line


def save(vocab: Vocabulary, path) -> None:
    """One JSON object (compact: 750k entries at the paper's size)."""
    import json

    from laser_repro.core.textio import atomic_output

    with atomic_output(path) as f:
        json.dump(vocab.to_state(), f, ensure_ascii=False)
        f.write("\n")


def load(path) -> Vocabulary:
    import json

    try:
        state = json.loads(open(path, encoding="utf-8").read())
        return Vocabulary.from_state(state)
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{path}: not a Bi-Sent2Vec vocabulary file ({err})") from None


def cmd_vocab(a) -> None:
    if len(a.langs) != 2 or len(a.texts) != 2:
        raise SystemExit("bisent2vec-vocab: give the two languages of the pair (--langs) and their training "
                         "files (--texts), in the same order")
    vocab = build_from_files(dict(zip(a.langs, a.texts)), a.langs, min_count=a.min_count, max_size=a.max_size)
    save(vocab, a.output)
    per_lang = [sum(1 for li in vocab.langs if li == i) for i in range(2)]
    import logging

    logging.getLogger("laser_repro").info("vocabulary: %d entries (%s), %d training tokens", len(vocab),
                                          ", ".join(f"{n} {lang}" for lang, n in zip(a.langs, per_lang)), vocab.ntokens)


def add_cli(sub) -> None:
    s = sub.add_parser("bisent2vec-vocab", help="the word vocabulary of a Bi-Sent2Vec language pair")
    s.add_argument("--langs", nargs=2, required=True)
    s.add_argument("--texts", nargs=2, required=True, help="tokenised training lines, one file per language")
    s.add_argument("--min-count", type=int, default=8, help="drop words seen fewer times (paper setting: 8)")
    s.add_argument("--max-size", type=int, default=750_000, help="at most this many entries (paper setting: 750k)")
    s.add_argument("--output", required=True, help="vocabulary JSON")
    s.set_defaults(func=cmd_vocab)
