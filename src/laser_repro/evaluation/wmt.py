"""Multilingual similarity error on a WMT news test set (paper Sec. 5, language-count ablation).

Schwenk & Douze (2017) style: for every ordered language pair (a, b), a != b, every sentence of a
retrieves its nearest neighbour (cosine) among all sentences of b; an error is counted when that is
not the aligned sentence. The score is the average error rate over all ordered pairs.

The test set's N-way aligned text comes from sacrebleu's definitions through
:mod:`laser_repro.data.sacrebleu_sets` (also the source of the WMT news training corpora): the
tarball URL(s) and md5 (``wmt-sources``), the md5 check, the private sacrebleu cache and the join of
the xx-en pairs on the English side (``wmt-texts --tarball``). With ``data_root`` the workflow reads
the test set as N-way plain-text files instead (``wmt-texts --text``: one sentence a line, line i the
same sentence in every language, ``<data_root>/wmt-news/multiway/newstest2012.<xx>``): no archive, no
sacrebleu processing, the same outputs.

Beside an encoder's embeddings, ``wmt-similarity --text`` scores the TF-IDF baseline on the raw text.
"""
from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, Sequence

import numpy as np

from laser_repro.core.textio import iter_lines, read_json, write_json
from laser_repro.data.sacrebleu_sets import (
    WmtError,
    build_texts,
    build_texts_from_files,
    language_pairs,
    test_set_sources,
)

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- similarity error


def similarity_errors(embeddings: Mapping[str, np.ndarray], *, normalized: bool = False) -> dict:
    """Error rates (%) for every ordered pair (query language, searched language) of row-aligned
    embeddings, per-language averages and the average over all ordered pairs. ``normalized``: the rows
    are L2-normalised already (dense or scipy sparse, e.g. TF-IDF rows)."""
    from laser_repro.models.similarity import normalize_rows, retrieval_errors

    codes = list(embeddings)
    if len(codes) < 2:
        raise WmtError(f"need embeddings for at least 2 languages, got {codes}")
    shapes = {c: np.shape(embeddings[c]) for c in codes}
    n = shapes[codes[0]][0]
    if any(len(s) != 2 for s in shapes.values()) or len(set(shapes.values())) != 1:
        raise WmtError(f"embeddings are not row-aligned matrices of one shape: {shapes}")
    if n == 0:
        raise WmtError("embeddings have no rows")
    vectors = embeddings if normalized else {c: normalize_rows(embeddings[c]) for c in codes}  # once per language
    pairs, matrix = [], {a: {} for a in codes}
    for a in codes:
        for b in codes:
            if a == b:
                continue
            errors = retrieval_errors(vectors[a], vectors[b], normalized=True)
            rate = 100.0 * errors / n
            pairs.append({"src": a, "trg": b, "errors": errors, "error": rate})
            matrix[a][b] = rate
    k = len(codes) - 1
    return {
        "sentences": n,
        "languages": codes,
        "pairs": pairs,
        "matrix": matrix,
        "src_average": {a: sum(matrix[a].values()) / k for a in codes},
        "trg_average": {b: sum(matrix[a][b] for a in codes if a != b) / k for b in codes},
        "average_error": sum(p["error"] for p in pairs) / len(pairs),
    }


def tfidf_similarity_errors(lines: Mapping[str, Sequence[str]]) -> dict:
    """:func:`similarity_errors` of the TF-IDF baseline (character n-grams of the raw, row-aligned
    sentences, one vocabulary for all languages): what a string match finds without any learning."""
    from laser_repro.evaluation.xsim import TFIDF_NGRAMS, tfidf_fit

    codes = list(lines)
    sizes = {c: len(lines[c]) for c in codes}
    if len(set(sizes.values())) > 1:
        raise WmtError(f"texts are not line-aligned: {sizes}")
    scores = similarity_errors(dict(zip(codes, tfidf_fit([list(lines[c]) for c in codes]))), normalized=True)
    scores["system"] = f"character {TFIDF_NGRAMS[0]}-{TFIDF_NGRAMS[1]}-gram TF-IDF"
    return scores


# --------------------------------------------------------------------------- CLI


def cmd_wmt_sources(a):
    out = [{"test_set": s.test_set, "url": s.url, "md5": s.md5, "tarball": s.tarball}
           for s in test_set_sources(a.test_set)]
    present, absent = language_pairs(a.test_set, a.langs or [])
    record = {"sources": out, "pairs": {c: lp for c, (lp, _) in present.items()}, "absent": absent}
    if a.json:
        write_json(a.json, record)
    else:
        json.dump(record, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")


def cmd_wmt_texts(a):
    if a.text:
        files = dict(a.text)
        if len(files) != len(a.text):
            raise WmtError("--text: a language given twice")
        if a.md5:
            raise WmtError("--md5 checks --tarball archives; it has no meaning with --text")
        meta = build_texts_from_files(a.test_set, files, a.langs, a.out_dir, prefix=a.prefix)
    else:
        meta = build_texts(a.test_set, a.tarball, a.langs, a.out_dir, md5=a.md5, key=a.join, prefix=a.prefix)
    for code, reason in meta["absent"].items():
        log.warning("%s: absent from %s: %s", code, a.test_set, reason)
    log.info("%s: %d aligned sentences in %s (%s)", a.test_set, meta["sentences"], ", ".join(meta["languages"]),
             json.dumps(meta["join"]))


def cmd_wmt_similarity(a):
    inputs = a.emb or a.text
    if bool(a.emb) == bool(a.text):
        raise WmtError("wmt-similarity: give --emb (an encoder's embeddings) or --text (the TF-IDF baseline)")
    if len({code for code, _ in inputs}) != len(inputs):
        raise WmtError(f"wmt-similarity: a language given twice in {[code for code, _ in inputs]}")
    if a.emb:
        scores = similarity_errors({code: np.load(path) for code, path in a.emb})
        scores["embeddings"] = {code: str(path) for code, path in a.emb}
    else:
        scores = tfidf_similarity_errors({code: list(iter_lines(path)) for code, path in a.text})
        scores["texts"] = {code: str(path) for code, path in a.text}
    scores["absent"] = {}
    if a.meta:
        meta = read_json(a.meta)
        if meta.get("sentences") != scores["sentences"]:
            raise WmtError(f"{a.meta}: {meta.get('sentences')} sentences but the inputs have {scores['sentences']} rows")
        missing = [c for c in meta.get("languages", []) if c not in scores["languages"]]
        if missing:
            raise WmtError(f"{a.meta} lists {', '.join(missing)} but no input was given for them")
        scores["test_set"] = meta.get("test_set")
        scores["absent"] = meta.get("absent", {})
    write_json(a.scores, scores)
    log.info("average similarity error %.2f%% over %d ordered pairs (%d sentences)", scores["average_error"],
             len(scores["pairs"]), scores["sentences"])


def add_cli(sub) -> None:
    """Register the wmt-* subcommands on the main CLI's subparsers."""
    s = sub.add_parser("wmt-sources", help="archive URL(s) and md5 of a sacrebleu test set, and its language pairs")
    s.add_argument("--test-set", default="wmt14")
    s.add_argument("--langs", nargs="*", help="ISO 639-3 codes to look up (absent ones are listed with the reason)")
    s.add_argument("--json", help="write the record here instead of stdout")
    s.set_defaults(func=cmd_wmt_sources)

    s = sub.add_parser("wmt-texts", help="N-way aligned texts of a WMT test set (its archive through sacrebleu, "
                                         "or N-way plain-text files), offline")
    source = s.add_mutually_exclusive_group(required=True)
    source.add_argument("--tarball", action="append", help="the test set's archive (repeat if several)")
    source.add_argument("--text", nargs=2, action="append", metavar=("LANG", "FILE"),
                        help="one language's plain-text file, line i the same sentence in every file (repeat per "
                             "language the test set has, English included)")
    s.add_argument("--test-set", default="wmt14", help="sacrebleu test-set name (wmt12 and wmt13 are N-way)")
    s.add_argument("--langs", nargs="+", required=True, help="ISO 639-3 codes, e.g. eng ces fra deu spa")
    s.add_argument("--out-dir", required=True, help="gets <prefix><lang>.txt and meta.json")
    s.add_argument("--prefix", default="", help="file-name prefix of the texts, e.g. 'newstest2014.'")
    s.add_argument("--join", choices=["doc", "text"], default="doc",
                   help="doc: same docid and position and identical English (default); text: identical English")
    s.add_argument("--md5", action="append",
                   help="md5 to expect instead of sacrebleu's, one per --tarball (re-packed mirror, test fixture)")
    s.set_defaults(func=cmd_wmt_texts)

    s = sub.add_parser("wmt-similarity", help="similarity error over all ordered language pairs")
    s.add_argument("--emb", nargs=2, action="append", metavar=("LANG", "NPY"),
                   help="row-aligned embeddings of one language (repeat per language)")
    s.add_argument("--text", nargs=2, action="append", metavar=("LANG", "TXT"),
                   help="instead of --emb: the TF-IDF baseline on one language's raw text (repeat per language)")
    s.add_argument("--meta", help="meta.json of wmt-texts: checks the sentence count, carries the absent languages")
    s.add_argument("--scores", required=True)
    s.set_defaults(func=cmd_wmt_similarity)
