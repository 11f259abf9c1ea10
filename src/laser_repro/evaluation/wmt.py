"""Multilingual similarity error on a WMT news test set (paper Sec. 5, language-count ablation).

Schwenk & Douze (2017) style: for every ordered language pair (a, b), a != b, every sentence of a
retrieves its nearest neighbour (cosine) among all sentences of b; an error is counted when that is
not the aligned sentence. The score is the average error rate over all ordered pairs.

The test set's N-way aligned text comes from sacrebleu's definitions through
:mod:`laser_repro.data.sacrebleu_sets` (also the source of the WMT news training corpora): the
tarball URL(s) and md5 (``wmt-sources``), the md5 check, the private sacrebleu cache and the join of
the xx-en pairs on the English side (``wmt-texts``).
"""
from __future__ import annotations

import json
import logging
import sys

import numpy as np

from laser_repro.core.textio import read_json, write_json
from laser_repro.data.sacrebleu_sets import WmtError, build_texts, language_pairs, test_set_sources

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- similarity error


def similarity_errors(embeddings: Mapping[str, np.ndarray]) -> dict:
    """Error rates (%) for every ordered pair (query language, searched language) of row-aligned
    embeddings, per-language averages and the average over all ordered pairs."""
    from laser_repro.evaluation.tatoeba import retrieval_errors

    codes = list(embeddings)
    if len(codes) < 2:
        raise WmtError(f"need embeddings for at least 2 languages, got {codes}")
    shapes = {c: np.shape(embeddings[c]) for c in codes}
    n = shapes[codes[0]][0]
    if any(len(s) != 2 for s in shapes.values()) or len(set(shapes.values())) != 1:
        raise WmtError(f"embeddings are not row-aligned matrices of one shape: {shapes}")
    if n == 0:
        raise WmtError("embeddings have no rows")
    pairs, matrix = [], {a: {} for a in codes}
    for a in codes:
        for b in codes:
            if a == b:
                continue
            errors = retrieval_errors(embeddings[a], embeddings[b])
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
    meta = build_texts(a.test_set, a.tarball, a.langs, a.out_dir, md5=a.md5, key=a.join, prefix=a.prefix)
    for code, reason in meta["absent"].items():
        log.warning("%s: absent from %s: %s", code, a.test_set, reason)
    log.info("%s: %d aligned sentences in %s (%s)", a.test_set, meta["sentences"], ", ".join(meta["languages"]),
             json.dumps(meta["join"]))


def cmd_wmt_similarity(a):
    embeddings = {}
    for code, path in a.emb:
        if code in embeddings:
            raise WmtError(f"--emb {code} given twice")
        embeddings[code] = np.load(path)
    scores = similarity_errors(embeddings)
    scores["embeddings"] = {code: str(path) for code, path in a.emb}
    scores["absent"] = {}
    if a.meta:
        meta = read_json(a.meta)
        if meta.get("sentences") != scores["sentences"]:
            raise WmtError(f"{a.meta}: {meta.get('sentences')} sentences but the embeddings have {scores['sentences']} rows")
        missing = [c for c in meta.get("languages", []) if c not in embeddings]
        if missing:
            raise WmtError(f"{a.meta} lists {', '.join(missing)} but no --emb was given for them")
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

    s = sub.add_parser("wmt-texts", help="N-way aligned texts of a WMT test set through sacrebleu, offline")
    s.add_argument("--tarball", action="append", required=True, help="the test set's archive (repeat if several)")
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
    s.add_argument("--emb", nargs=2, action="append", required=True, metavar=("LANG", "NPY"),
                   help="row-aligned embeddings of one language (repeat per language)")
    s.add_argument("--meta", help="meta.json of wmt-texts: checks the sentence count, carries the absent languages")
    s.add_argument("--scores", required=True)
    s.set_defaults(func=cmd_wmt_similarity)
