"""Toy MLDoc directory in the layout facebookresearch/MLDoc's generate_documents.py produces.

One file per language and split, named like MLDoc's index files (``english.train.1000``,
``english.dev``, ``english.test``, ...); each line ``LABEL<TAB>document``, LABEL one of
CCAT ECAT GCAT MCAT. ``bytes_literal=True`` writes the text the way that script does under
Python 3 (``b'...'`` with ``\\x..`` escapes for non-ASCII).

Toy data from synthetic sentences: an item is (label, [concepts of sentence 1, ...]) whose
concepts come mostly from the label's group (``toy_mldoc_items``), so a classifier on mean-pooled
sentence embeddings can learn it; ``parallel_docs`` renders items in every language with a
``render(concepts, lang)`` function (sentences joined by a space, or nothing for cmn/jpn)::

    items = toy_mldoc_items(120, n_concepts=24, seed=0)
    write_mldoc_dir(d, {"eng": {"train.1000": docs["eng"], ...}, ...})

Language keys are our ISO 639-3 codes of MLDoc's eight languages (eng deu spa fra ita jpn rus
cmn) or MLDoc's names (``english``); for another toy language (e.g. ell) use a stand-in name.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

LABELS = ("CCAT", "ECAT", "GCAT", "MCAT")
NAMES = {"eng": "english", "deu": "german", "spa": "spanish", "fra": "french", "ita": "italian",
         "jpn": "japanese", "rus": "russian", "cmn": "chinese"}


def write_mldoc_dir(directory: Path | str, docs_by_language: Mapping[str, Mapping[str, Sequence[tuple[str, str]]]], *,
                    bytes_literal: bool = False) -> Path:
    """Write {lang: {split: [(label, text), ...]}}; split is ``train.1000`` (``train`` means
    that), ``train.2000``..., ``dev`` or ``test``. Returns the directory."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for lang, splits in docs_by_language.items():
        name = NAMES.get(lang, lang)
        for split, docs in splits.items():
            split = "train.1000" if split == "train" else split
            with open(directory / f"{name}.{split}", "w", encoding="utf-8", newline="\n") as f:
                for label, text in docs:
                    if "\n" in text or "\t" in label:
                        raise ValueError(f"MLDoc fixture: a document must be one line: {text!r}")
                    f.write(f"{label}\t{str(text.encode('utf-8')) if bytes_literal else text}\n")
    return directory


def toy_mldoc_items(n: int, n_concepts: int = 24, seed: int = 0, sentences: tuple[int, int] = (1, 3),
                    ) -> list[tuple[str, list[list[int]]]]:
    """``n`` (label, sentences) items, labels in turn; concept c belongs to group c % 4 and a
    document's concepts are drawn from its label's group, plus one random concept per sentence."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        label = LABELS[i % 4]
        group = [c for c in range(n_concepts) if c % 4 == i % 4]
        doc = [[*rng.sample(group, 2), rng.randrange(n_concepts)] for _ in range(rng.randint(*sentences))]
        items.append((label, doc))
    return items


def parallel_docs(items: Sequence[tuple[str, Sequence[Sequence[int]]]], render: Callable[[list[int], str], str],
                  langs: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """{lang: [(label, text)]}: the same documents rendered in every language."""
    out = {}
    for lang in langs:
        sep = "" if lang in ("cmn", "jpn", "chinese", "japanese") else " "
        out[lang] = [(label, sep.join(render(list(s), lang) for s in sentences)) for label, sentences in items]
    return out
