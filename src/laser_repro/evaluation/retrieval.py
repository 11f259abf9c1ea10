"""Bitext retrieval with the encoder of any family (laser_repro.models.registry): for each language, its
sentences query the English ones by cosine and an error is a nearest neighbour that is not the
translation -- Tatoeba's error (Artetxe & Schwenk 2019) and the UN task's 100 - P@1 (LaBSE, Section 4.1),
on raw text prepared by the family (with the BPE codes the encoder file names, for a family that takes
codes). ``--tfidf``: the same search with character n-gram TF-IDF vectors (the non-learned baseline).
Writes ``{"task", "direction": "xx->eng", "encoder", "results": {lang: {"error", "en_xx_error", "n"}}}``
(``error``: xx -> eng, the LaBSE paper's direction; ``en_xx_error``: the English sentences as queries,
for LASER's two-direction Tatoeba error), one file per encoder (the model and its update 0 in one
process). The input of laser_repro.reporting.labse, .bisent2vec and .task_compare."""
from __future__ import annotations

import logging

from laser_repro.core.errors import UserError
from laser_repro.core.textio import iter_lines, write_json
from laser_repro.evaluation.xsim import tfidf_error_matrix
from laser_repro.models.similarity import pair_key, similarity_error_matrix

log = logging.getLogger("laser_repro")


def read_pair(xx_path, eng_path) -> tuple[list[str], list[str]]:
    xx, eng = list(iter_lines(xx_path)), list(iter_lines(eng_path))
    if len(xx) != len(eng) or not xx:
        raise ValueError(f"{xx_path} ({len(xx)} lines) and {eng_path} ({len(eng)} lines) are not a test set of "
                         f"aligned translations")
    return xx, eng


def load_for_retrieval(encoder, codes=None):
    """(family, loaded encoder) of an exported encoder file; a family that applies BPE codes to raw text
    needs ``codes``, and the ones its encoder file names (laser_repro.models.subword)."""
    from laser_repro.models import registry, subword

    header = registry.read_encoder_file(encoder)
    family = registry.get(header["family"])
    if family.takes_codes:
        if not codes:
            raise UserError(f"retrieval: {encoder} ({family.name}) applies BPE codes to raw text: give --codes")
        subword.check_codes(encoder, header.get(subword.RECORD_KEY), codes)
    return family, family.load_encoder(encoder)


def retrieval_errors(langs, xx_files, eng_files, *, encoder=None, codes=None, keep_case: bool = False) -> dict:
    """lang -> {"error": % of its sentences whose nearest English sentence is not the translation,
    "en_xx_error": % of the English sentences whose nearest sentence of lang is not theirs, "n"}."""
    family = loaded = None
    if encoder is not None:
        family, loaded = load_for_retrieval(encoder, codes)
        codes = codes if family.takes_codes else None
    results = {}
    for lang, xx_path, eng_path in zip(langs, xx_files, eng_files):
        xx, eng = read_pair(xx_path, eng_path)
        if loaded is None:
            matrix = tfidf_error_matrix({lang: xx, "eng": eng}, [lang, "eng"])
        else:
            vectors = {lang: loaded.embed(family.prepare(xx, lang, codes=codes, lowercase=not keep_case), lang),
                       "eng": loaded.embed(family.prepare(eng, "eng", codes=codes, lowercase=not keep_case), "eng")}
            matrix = similarity_error_matrix(vectors, [lang, "eng"])
        results[lang] = {"error": matrix["pairs"][pair_key(lang, "eng")],
                         "en_xx_error": matrix["pairs"][pair_key("eng", lang)], "n": len(xx)}
        log.info("%s -> eng: %.2f%% error, eng -> %s: %.2f%% on %d sentences", lang, results[lang]["error"], lang,
                 results[lang]["en_xx_error"], len(xx))
    return results


def cmd_retrieval(a) -> None:
    if not (len(a.langs) == len(a.xx) == len(a.eng)):
        raise SystemExit("retrieval: give one --xx and one --eng file per --langs language")
    if bool(a.encoder) == a.tfidf:
        raise SystemExit("retrieval: give either --encoder or --tfidf")
    encoders = a.encoder or [None]
    if len(a.output) != len(encoders):
        raise SystemExit(f"retrieval: give one --output per --encoder ({len(encoders)}), got {len(a.output)}")
    if a.encoder:  # (the TF-IDF baseline needs no torch: 2-4 s of a job's start)
        import torch

        torch.set_num_threads(a.threads)
    for encoder, output in zip(encoders, a.output):
        results = retrieval_errors(a.langs, a.xx, a.eng, encoder=encoder, codes=a.codes, keep_case=a.keep_case)
        write_json(output, {"task": a.task, "direction": "xx->eng", "encoder": encoder or "tfidf", "results": results})


def add_cli(sub) -> None:
    s = sub.add_parser("retrieval", help="xx -> eng bitext retrieval error of any family's encoder (or TF-IDF)")
    s.add_argument("--task", required=True, choices=["tatoeba", "un"])
    s.add_argument("--encoder", nargs="+", help="exported encoders of any family (the model, its update 0), "
                                                "one --output each")
    s.add_argument("--codes", help="the BPE codes of a family that takes codes (the ones its encoder file names)")
    s.add_argument("--tfidf", action="store_true", help="the character n-gram TF-IDF baseline instead of an encoder")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--xx", nargs="+", required=True, help="raw sentences of each language")
    s.add_argument("--eng", nargs="+", required=True, help="their English translations, line by line")
    s.add_argument("--keep-case", action="store_true", help="no lowercasing in the Moses preprocessing")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--output", nargs="+", required=True)
    s.set_defaults(func=cmd_retrieval)
