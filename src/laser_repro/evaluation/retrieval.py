"""Bitext retrieval with the encoder of any family (laser_repro.models.registry): for each language, its
sentences query the English ones by cosine and an error is a nearest neighbour that is not the
translation -- Tatoeba's error (Artetxe & Schwenk 2019) and the UN task's 100 - P@1 (LaBSE, Section 4.1),
on raw text prepared by the family. ``--tfidf``: the same search with character n-gram TF-IDF vectors
(the non-learned baseline). Writes ``{"task", "direction": "xx->eng", "encoder", "results": {lang:
{"error", "n"}}}`` (the input of laser_repro.reporting.labse)."""
from __future__ import annotations

import logging

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


def retrieval_errors(langs, xx_files, eng_files, *, encoder=None, keep_case: bool = False) -> dict:
    """lang -> {"error": % of its sentences whose nearest English sentence is not the translation, "n"}."""
    family = loaded = None
    if encoder is not None:
        from laser_repro.models import registry

        family = registry.get(registry.family_of_encoder(encoder))
        loaded = family.load_encoder(encoder)
    results = {}
    for lang, xx_path, eng_path in zip(langs, xx_files, eng_files):
        xx, eng = read_pair(xx_path, eng_path)
        if loaded is None:
            matrix = tfidf_error_matrix({lang: xx, "eng": eng}, [lang, "eng"])
        else:
            vectors = {lang: loaded.embed(family.prepare(xx, lang, codes=None, lowercase=not keep_case), lang),
                       "eng": loaded.embed(family.prepare(eng, "eng", codes=None, lowercase=not keep_case), "eng")}
            matrix = similarity_error_matrix(vectors, [lang, "eng"])
        results[lang] = {"error": matrix["pairs"][pair_key(lang, "eng")], "n": len(xx)}
        log.info("%s -> eng: %.2f%% error on %d sentences", lang, results[lang]["error"], len(xx))
    return results


def cmd_retrieval(a) -> None:
    import torch

    if not (len(a.langs) == len(a.xx) == len(a.eng)):
        raise SystemExit("retrieval: give one --xx and one --eng file per --langs language")
    if (a.encoder is None) == (not a.tfidf):
        raise SystemExit("retrieval: give either --encoder or --tfidf")
    torch.set_num_threads(a.threads)
    results = retrieval_errors(a.langs, a.xx, a.eng, encoder=a.encoder, keep_case=a.keep_case)
    write_json(a.output, {"task": a.task, "direction": "xx->eng", "encoder": a.encoder or "tfidf", "results": results})


def add_cli(sub) -> None:
    s = sub.add_parser("retrieval", help="xx -> eng bitext retrieval error of any family's encoder (or TF-IDF)")
    s.add_argument("--task", required=True, choices=["tatoeba", "un"])
    s.add_argument("--encoder", help="an exported encoder of any family")
    s.add_argument("--tfidf", action="store_true", help="the character n-gram TF-IDF baseline instead of an encoder")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--xx", nargs="+", required=True, help="raw sentences of each language")
    s.add_argument("--eng", nargs="+", required=True, help="their English translations, line by line")
    s.add_argument("--keep-case", action="store_true", help="no lowercasing in the Moses preprocessing")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_retrieval)
