"""Toy XNLI-1.0.zip and multinli_1.0.zip in their published layouts, for offline tests.

``write_xnli_zip`` writes ``XNLI-1.0/xnli.<split>.tsv`` (the 19-column header of the real file,
one row per (language, pairID), no quoting) plus the ``.jsonl`` twin, a README and the macOS
``__MACOSX/`` junk the real archive carries. ``write_multinli_zip`` writes
``multinli_1.0/multinli_1.0_train.jsonl`` (and the ``.txt`` twin) with the real field names.

Toy data from synthetic sentences: an item is (premise concepts, hypothesis concepts) and its
label is a function of the two (``nli_label``), so a classifier on sentence embeddings can learn
it; ``parallel_rows`` renders items in every language with a ``render(concepts, lang)`` function::

    items = toy_nli_items(300, n_concepts=24, seed=0)
    write_multinli_zip(d / "multinli_1.0.zip", parallel_rows(items[:200], render, ["eng"])["eng"])
    write_xnli_zip(d / "XNLI-1.0.zip", splits={"dev": parallel_rows(items[200:250], render, ["eng", "spa"]),
                                               "test": parallel_rows(items[250:], render, ["eng", "spa"])})

Language keys are our ISO 639-3 codes (``eng``) or XNLI's two-letter codes (``en``). XNLI only has
15 languages; toy languages outside them (none of eng spa deu ell cmn is) would need a stand-in
code.
"""
from __future__ import annotations

import json
import random
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

XNLI_COLUMNS = ["language", "gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
                "sentence2_parse", "sentence1", "sentence2", "promptID", "pairID", "genre", "label1", "label2",
                "label3", "label4", "label5", "sentence1_tokenized", "sentence2_tokenized", "match"]
LABELS = ("entailment", "neutral", "contradiction")


def xnli_code(lang: str) -> str:
    """XNLI's language code (``en``) for ``eng`` or ``en``."""
    if len(lang) == 2:
        return lang
    from laser_repro.core import languages

    return languages.get(lang).paper


def _row(item) -> tuple[str, str, str, str | None]:
    if len(item) == 3:
        return (*item, None)
    if len(item) == 4:
        return tuple(item)
    raise ValueError(f"XNLI fixture rows are (premise, hypothesis, label[, pairID]), got {item!r}")


def _binary_parse(text: str) -> str:
    return "( " + " ".join(text.split()) + " )"


def _xnli_tsv(rows_by_lang: Mapping[str, Sequence], first_pair_id: int, shuffle_seed: int | None):
    lines, records = [], []
    for lang, rows in rows_by_lang.items():
        code = xnli_code(lang)
        for i, item in enumerate(rows):
            premise, hypothesis, label, pid = _row(item)
            pid = str(first_pair_id + i) if pid is None else str(pid)
            rec = {"language": code, "gold_label": label,
                   "sentence1_binary_parse": _binary_parse(premise),
                   "sentence2_binary_parse": _binary_parse(hypothesis),
                   "sentence1_parse": "(ROOT " + premise + ")", "sentence2_parse": "(ROOT " + hypothesis + ")",
                   "sentence1": premise, "sentence2": hypothesis, "promptID": pid, "pairID": pid, "genre": "fiction",
                   "label1": label, "label2": label, "label3": "", "label4": "", "label5": "",
                   "sentence1_tokenized": " ".join(premise.split()),
                   "sentence2_tokenized": " ".join(hypothesis.split()),
                   "match": "True"}
            records.append(rec)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(records)
    lines = ["\t".join(XNLI_COLUMNS)] + ["\t".join(rec[c] for c in XNLI_COLUMNS) for rec in records]
    return "".join(line + "\n" for line in lines), "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def write_xnli_zip(path: Path | str, rows_by_lang: Mapping[str, Sequence] | None = None, split: str = "test", *,
                   splits: Mapping[str, Mapping[str, Sequence]] | None = None, first_pair_id: int = 1,
                   shuffle_seed: int | None = None, macosx: bool = True,
                   raw_tsv: Mapping[str, bytes] | None = None) -> Path:
    """Write an XNLI-1.0.zip.

    ``rows_by_lang``: {lang: [(premise, hypothesis, label[, pairID]), ...]} for ``split``, or
    ``splits``: {"dev": rows_by_lang, "test": rows_by_lang} for both. Row i of every language
    gets pairID ``first_pair_id + i`` unless given (rows of different languages with the same
    pairID are translations). Rows are grouped by language unless ``shuffle_seed`` shuffles them.
    ``raw_tsv``: {split: bytes} written verbatim instead (to test malformed files)."""
    if splits is None:
        splits = {} if rows_by_lang is None else {split: rows_by_lang}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("XNLI-1.0/", b"")
        zf.writestr("XNLI-1.0/README.md", "# XNLI toy fixture\n")
        for name, rows in splits.items():
            tsv, jsonl = _xnli_tsv(rows, first_pair_id, shuffle_seed)
            zf.writestr(f"XNLI-1.0/xnli.{name}.tsv", tsv.encode("utf-8"))
            zf.writestr(f"XNLI-1.0/xnli.{name}.jsonl", jsonl.encode("utf-8"))
            if macosx:
                zf.writestr(f"__MACOSX/XNLI-1.0/._xnli.{name}.tsv", b"\x00\x05\x16\x07 AppleDouble junk")
        for name, data in (raw_tsv or {}).items():
            zf.writestr(f"XNLI-1.0/xnli.{name}.tsv", data)
    return path


def write_multinli_zip(path: Path | str, rows: Sequence, *, macosx: bool = True,
                       raw_jsonl: bytes | None = None) -> Path:
    """Write a multinli_1.0.zip whose training set holds ``rows``: (premise, hypothesis, label[, pairID]);
    label ``-`` marks a pair without annotator consensus, as in the real file."""
    records = []
    for i, item in enumerate(rows):
        premise, hypothesis, label, pid = _row(item)
        prompt = str(100000 + i)
        pid = pid if pid is not None else prompt + (label[0] if label != "-" else "x")
        records.append({"annotator_labels": [label if label != "-" else "neutral"], "genre": "fiction",
                        "gold_label": label, "pairID": pid, "promptID": prompt,
                        "sentence1": premise, "sentence1_binary_parse": _binary_parse(premise),
                        "sentence1_parse": "(ROOT " + premise + ")",
                        "sentence2": hypothesis, "sentence2_binary_parse": _binary_parse(hypothesis),
                        "sentence2_parse": "(ROOT " + hypothesis + ")"})
    jsonl = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    txt_cols = ["gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse", "sentence2_parse",
                "sentence1", "sentence2", "promptID", "pairID", "genre"]
    txt = "\t".join(txt_cols + ["label1"]) + "\n" + "".join(
        "\t".join([*(r[c] for c in txt_cols), r["annotator_labels"][0]]) + "\n" for r in records)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("multinli_1.0/", b"")
        zf.writestr("multinli_1.0/README.txt", "MultiNLI toy fixture\n")
        zf.writestr("multinli_1.0/multinli_1.0_train.jsonl", raw_jsonl if raw_jsonl is not None else jsonl)
        zf.writestr("multinli_1.0/multinli_1.0_train.txt", txt.encode("utf-8"))
        zf.writestr("multinli_1.0/multinli_1.0_dev_matched.jsonl", jsonl[: jsonl.find(b"\n") + 1])
        if macosx:
            zf.writestr("__MACOSX/multinli_1.0/._multinli_1.0_train.jsonl", b"\x00\x05\x16\x07 AppleDouble junk")
    return path


# --------------------------------------------------------------------------- synthetic items


def nli_label(premise: Sequence[int], hypothesis: Sequence[int]) -> str:
    """Toy NLI rule: every hypothesis concept in the premise -> entailment; some -> neutral;
    none -> contradiction."""
    shared = set(hypothesis) & set(premise)
    if shared == set(hypothesis):
        return "entailment"
    return "neutral" if shared else "contradiction"


def toy_nli_items(n: int, n_concepts: int = 24, seed: int = 0) -> list[tuple[list[int], list[int], str]]:
    """``n`` (premise concepts, hypothesis concepts, label) items, the three labels in turn."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        premise = rng.sample(range(n_concepts), 4)
        others = [c for c in range(n_concepts) if c not in premise]
        want = LABELS[i % 3]
        if want == "entailment":
            hypothesis = rng.sample(premise, 2)
        elif want == "neutral":
            hypothesis = [rng.choice(premise), rng.choice(others)]
        else:
            hypothesis = rng.sample(others, 2)
        assert nli_label(premise, hypothesis) == want
        items.append((premise, hypothesis, want))
    return items


def parallel_rows(items: Sequence[tuple[Sequence[int], Sequence[int], str]], render: Callable[[list[int], str], str],
                  langs: Sequence[str]) -> dict[str, list[tuple[str, str, str]]]:
    """{lang: [(premise, hypothesis, label)]}: the same items rendered in every language."""
    return {lang: [(render(list(p), lang), render(list(h), lang), label) for p, h, label in items] for lang in langs}
