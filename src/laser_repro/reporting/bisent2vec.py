"""Sabet et al. 2019 (Bi-Sent2Vec), Tables 1, 3 and 4: our P@1 beside the published ones.

The paper's values are in ``paper_values/bisent2vec_2019/bisent2vec_2019.csv``: one line per printed cell of its Tables 1, 3,
4 and 5 (every row, baselines included; the "Reduction in error" rows of Tables 3 and 4 with unit "%", their
printed '–' an empty value), with the paper's table, row and column in ``source``. Columns are
``en-xx.fwd`` (the paper's "en-xx →": English queries, xx candidates), ``en-xx.bwd`` ("←": xx to English) and
``avg`` (Table 4: ``words.en-xx.*`` and ``sentences.en-xx.*``, no average). ``block`` is the side of the
paper's double midrule (mapping-based or jointly trained), "reduction in error", or Table 5's
"MLDoc zero-shot transfer" (Table 5 is in the CSV only; its MLDoc accuracies are not reported here).

Our inputs are *result JSONs*, one per (model, direction, task), written by the evaluation commands::

    word translation (Tables 1 and 4, left):
    {"task": "muse_words", "src": "eng", "tgt": "fra",
     "results": {"nn": {"p@1": 71.2, "p@5": .., "p@10": .., "n": 1480, "n_dictionary": 1500},
                 "csls_knn_10": {...}}}
    sentence retrieval on Europarl (Tables 3 and 4, right):
    {"task": "europarl", "src": "eng", "tgt": "fra",
     "results": {"nn": {"p@1": .., "n_queries": 2000, "n_keys": 200000}, "csls_knn_10": {...}}}

Languages are ISO 639-3 (:data:`LANGUAGES` maps them to the paper's codes); ``eng-xx`` is the paper's →,
``xx-eng`` its ←. Each of our models is one language pair and one n-gram order::

    {"name": "bis2v_en_fr_uni", "description": "...", "pair": ["eng", "fra"], "ngrams": 1,  # 2: uni. + bi.
     "words": {"eng-fra": results or None, "fra-eng": ...}, "words_init": {...},
     "sentences": {...}, "sentences_init": {...}}

where ``*_init`` are the same evaluations of the model at its random initialization. Our rows of a table
gather the models of one n-gram order over the table's pairs: ``ours.uni.nn`` (uni., NN retrieval) stands
for the paper's ``BI-SENT2VEC uni. NN`` row, ``ours.uni_bi.csls`` for ``uni. + bi. CSLS`` and so on
(:data:`METHODS`: ``nn`` -> NN, ``csls_knn_10`` -> CSLS). Then the same rows at random init, then the
non-learned baselines on the same queries: *identical strings* for words (a source word translated as itself
when the same string is in the target vocabulary) and TF-IDF for sentences, given as result JSONs of the same
format per direction (a baseline's ``results`` may hold another method than ``nn`` / ``csls_knn_10``, e.g.
``identical_strings``: one row per method). A pair no model was trained for, or a direction without results,
is an empty cell (never 0) with a note; an average only when every column of its row has a value.

**The pairs table** (``pairs.md`` / ``pairs.csv``; not in the paper): similarity search on the pairs we
trained, which every Bi-Sent2Vec run evaluates, also when the MUSE / Europarl tasks are not configured (then
Tables 1, 3 and 4 are not written; see :func:`write_tables`). A model may also hold::

     "similarity": {"similarity": M, "init": M or None},   # FLORES held-out lines (``laser-repro similarity``)
     "tatoeba": results, "tatoeba_init": results           # Tatoeba, xx -> eng (``laser-repro retrieval``)

where M is a similarity error matrix ``{"pairs": {"eng-fra": 87.5, "fra-eng": 90.0}, "sentences": 200,
"mean": ..}`` (the % of the held-out lines of a whose nearest neighbour among the lines of b is not the
translation, for the pair "a-b"; ``init``: the model at its random initialization) and the Tatoeba results are
``{"task": "tatoeba", "direction": "xx->eng", "results": {"fra": {"error": 12.5, "n": 1000}}}``. Its
baselines are TF-IDF (character n-grams, no learning) on the same sentences: a matrix over all the data's
languages (``laser-repro nway-tfidf``) and Tatoeba results of the same format. One row per trained pair
(``eng-xx``, xx the pair's non-English language; the pair of a model here may be any language of its data,
not only the paper's), columns (:func:`pairs_columns`): for each n-gram order some model has, its en→xx
(``eng-xx``) and xx→en (``xx-eng``) FLORES error and those at random init, then TF-IDF's and the number of
held-out sentences; then the Tatoeba xx→eng error of each order's model and init, TF-IDF's and the number of
Tatoeba sentences. A value not there is an empty cell (never 0) with a note.

Command line (writes ``table1.md/.csv``, ``table3.md/.csv``, ``table4.md/.csv`` when some model has word or
sentence results, ``pairs.md/.csv`` when some model has a similarity file)::

    laser-repro bisent2vec-tables --models models.json --out-dir reports/bisent2vec --run-name RUN \
        [--identical-strings eng-fra=ident_eng_fra.json ...] [--tfidf eng-fra=tfidf_eng_fra.json ...] \
        [--tfidf-flores tfidf_flores.json] [--tfidf-tatoeba tfidf_tatoeba.json]

``--models`` is the list of model dicts above with paths (or null) in place of the results: ``words`` ...
``sentences_init`` map a direction to a path, ``similarity``, ``tatoeba`` and ``tatoeba_init`` are one path.

This module holds the tables' definitions; the paper values, rounding and the Markdown, CSV and LaTeX files
(``.tex`` beside each ``.md``) come from :mod:`laser_repro.reporting.paper_table`.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Mapping, Sequence

from laser_repro.models.record import add_model_records_option, check_model_records
from laser_repro.reporting import seeds
from laser_repro.reporting.paper_table import (Document, Grid, csv_frame, fmt2, load_checked_json, models_argument,
                                               read_paper_values, round2, write_files)

PAPER = "Sabet et al. 2019 (Bi-Sent2Vec)"
#: the paper's values: laser_repro/paper_values/<PAPER_DIR>/<PAPER_CSV>
PAPER_DIR = "bisent2vec_2019"
PAPER_CSV = "bisent2vec_2019.csv"
#: our ISO 639-3 codes -> the paper's
LANGUAGES = {"eng": "en", "fra": "fr", "deu": "de", "spa": "es", "ita": "it", "rus": "ru", "hun": "hu", "fin": "fi"}
#: our two evaluations -> the ``task`` of their result JSONs
TASKS = {"words": "muse_words", "sentences": "europarl"}
#: the count of queries behind a P@1, and of the dictionary / the candidates, in a method's results
N_KEY = {"words": "n", "sentences": "n_queries"}
CANDIDATES_KEY = {"words": "n_dictionary", "sentences": "n_keys"}
#: retrieval methods of the result JSONs -> the paper's names
METHODS = {"nn": "NN", "csls_knn_10": "CSLS"}
#: n-gram order -> (row id part, the paper's label)
VARIANTS = {1: ("uni", "uni."), 2: ("uni_bi", "uni. + bi.")}
RESULT_KEYS = ("words", "words_init", "sentences", "sentences_init")
#: the inputs of the pairs table: one file each (the FLORES similarity matrices, the Tatoeba results)
PAIR_KEYS = ("similarity", "tatoeba", "tatoeba_init")
MODEL_KEYS = ("name", "description", "pair", "ngrams", *RESULT_KEYS, *PAIR_KEYS)
#: the tables we report: their language pairs (paper codes) and evaluations
TABLE_PAIRS = {1: ("es", "fr", "de", "ru", "it"), 3: ("es", "fr", "de", "it"), 4: ("fi", "hu")}
TABLE_KINDS = {1: ("words",), 3: ("sentences",), 4: ("words", "sentences")}
TABLES = (1, 3, 4)
TITLES = {1: "cross-lingual word translation retrieval, P@1 (MUSE dictionaries)",
          3: "cross-lingual sentence retrieval on Europarl, P@1",
          4: "word and sentence retrieval for the dis-similar pairs en-fi and en-hu, P@1"}
#: the paper's setting (Sections 4.1 and 4.3): queries and candidates per direction
PAPER_QUERIES = {"words": 1500, "sentences": 2000}
PAPER_CANDIDATES = {"words": 200_000, "sentences": 200_000}
BASELINES = {"words": ("identical_strings", "Identical strings (a word translated as itself; no learning)"),
             "sentences": ("tfidf", "TF-IDF (no learning)")}
CSV_FIELDS = ("table", "row", "model", "column", "ours", "paper", "unit", "n", "n_candidates", "source")
#: paper cells whose printed average is not the mean of the row's printed values (to 0.05)
PAPER_AVG_OFF = {"t1.bivec.nn", "t1.bivec.csls", "t3.vecmap.unsup"}
PAIRS_TITLE = "similarity search on the trained pairs: FLORES held-out xsim and Tatoeba"
PAIRS_CSV_FIELDS = ("row", "column", "task", "system", "direction", "value", "unit", "n", "model", "note")
LANG_CODE = re.compile(r"[a-z]{3}")

log = logging.getLogger("laser_repro")


# ---- the paper's values ------------------------------------------------------------------------------------
def paper_rows(table: int | None = None) -> list[dict]:
    """The rows of one table (all four when None) in the paper's order: ``{"table", "row_id", "block",
    "system", "unit", "values": {column: float or None for a printed '–'}, "printed": {column: the CSV's
    string}, "source": {column: source}}``."""
    rows: dict[str, dict] = {}
    for line in read_paper_values(PAPER_DIR, PAPER_CSV):
        if table is not None and int(line["table"]) != table:
            continue
        row = rows.setdefault(line["row_id"], {"table": int(line["table"]), "row_id": line["row_id"],
                                               "block": line["block"], "system": line["system"],
                                               "unit": line["unit"], "values": {}, "printed": {}, "source": {}})
        row["values"][line["column"]] = float(line["value"]) if line["value"] else None
        row["printed"][line["column"]] = line["value"]
        row["source"][line["column"]] = line["source"]
    return list(rows.values())


def paper_row_ids(table: int | None = None) -> list[str]:
    return [row["row_id"] for row in paper_rows(table)]


# ---- columns ---------------------------------------------------------------------------------------------
def columns(table: int) -> list[dict]:
    """The value columns of a table in the paper's order: ``{"column", "kind", "lang" (ISO 639-3),
    "direction" ("eng-fra" style), "header"}``; Tables 1 and 3 end with ``avg`` (kind None)."""
    iso3 = {v: k for k, v in LANGUAGES.items()}
    out = []
    for kind in TABLE_KINDS[table]:
        prefix = f"{kind}." if table == 4 else ""
        for code in TABLE_PAIRS[table]:
            lang = iso3[code]
            for d, arrow, direction in (("fwd", "→", f"eng-{lang}"), ("bwd", "←", f"{lang}-eng")):
                header = f"{prefix.rstrip('.') + ' ' if prefix else ''}en-{code} {arrow}"
                out.append({"column": f"{prefix}en-{code}.{d}", "kind": kind, "lang": lang,
                            "direction": direction, "header": header})
    if table != 4:
        out.append({"column": "avg", "kind": None, "lang": None, "direction": None, "header": "avg."})
    return out


def column_ids(table: int) -> list[str]:
    return [c["column"] for c in columns(table)]


# ---- validation ------------------------------------------------------------------------------------------
def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_results(results: Mapping | None, kind: str, what: str, direction: str | None = None,
                  baseline: bool = False) -> None:
    """Raise ValueError (naming ``what``: a file or a model's key) unless ``results`` are results of
    ``kind`` ("words" or "sentences"; of ``direction`` "src-tgt" when given) holding ``nn`` or
    ``csls_knn_10`` (a ``baseline``'s may hold other methods instead, e.g. ``identical_strings``)."""
    if results is None:
        return
    task = TASKS[kind]
    if not isinstance(results, Mapping) or not isinstance(results.get("results"), Mapping):
        raise ValueError(f"{what}: not retrieval results (no 'results' mapping)")
    if results.get("task") != task:
        raise ValueError(f"{what}: results of task {results.get('task')!r}, expected {task!r}")
    src, tgt = results.get("src"), results.get("tgt")
    if not isinstance(src, str) or not isinstance(tgt, str):
        raise ValueError(f"{what}: no 'src' / 'tgt' language codes")
    if direction is not None and f"{src}-{tgt}" != direction:
        raise ValueError(f"{what}: results of {src}-{tgt}, expected {direction}")
    if not results["results"] or (not baseline and not any(m in results["results"] for m in METHODS)):
        raise ValueError(f"{what}: 'results' has none of {', '.join(map(repr, METHODS))}")
    for method, res in results["results"].items():
        if not isinstance(res, Mapping):
            raise ValueError(f"{what}: results[{method!r}] is not a mapping")
        if not _number(res.get("p@1")) or not 0 <= res["p@1"] <= 100:
            raise ValueError(f"{what}: results[{method!r}] has no numeric 'p@1' in [0, 100]")
        if not _number(res.get(N_KEY[kind])):
            raise ValueError(f"{what}: results[{method!r}] has no numeric {N_KEY[kind]!r}")
        if res.get(CANDIDATES_KEY[kind]) is not None and not _number(res[CANDIDATES_KEY[kind]]):
            raise ValueError(f"{what}: results[{method!r}][{CANDIDATES_KEY[kind]!r}] is not a number")


def check_matrix(matrix: Mapping | None, what: str) -> None:
    """Raise ValueError (naming ``what``) unless ``matrix`` is a similarity error matrix: ``pairs`` "a-b"
    -> error % in [0, 100], ``sentences`` a positive integer."""
    if matrix is None:
        return
    if not isinstance(matrix, Mapping) or not isinstance(matrix.get("pairs"), Mapping):
        raise ValueError(f"{what}: not a similarity error matrix (no 'pairs' mapping)")
    for key, value in matrix["pairs"].items():
        parts = key.split("-") if isinstance(key, str) else []
        if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
            raise ValueError(f"{what}: 'pairs' key {key!r} is not 'a-b' of two languages")
        if not _number(value) or not 0 <= value <= 100:
            raise ValueError(f"{what}: 'pairs' {key!r} is not an error % in [0, 100], got {value!r}")
    sentences = matrix.get("sentences")
    if not isinstance(sentences, int) or isinstance(sentences, bool) or sentences < 1:
        raise ValueError(f"{what}: 'sentences' is not a positive integer, got {sentences!r}")


def check_similarity(data: Mapping | None, what: str) -> None:
    """Raise ValueError (naming ``what``) unless ``data`` is ``{"similarity": matrix, "init": matrix or
    None}`` (``init`` may be absent)."""
    if data is None:
        return
    if not isinstance(data, Mapping) or data.get("similarity") is None:
        raise ValueError(f"{what}: no 'similarity' matrix (expected {{\"similarity\": M, \"init\": M}})")
    check_matrix(data["similarity"], f"{what} 'similarity'")
    check_matrix(data.get("init"), f"{what} 'init'")


def check_tatoeba(results: Mapping | None, what: str) -> None:
    """Raise ValueError (naming ``what``) unless ``results`` are Tatoeba results ``{"task": "tatoeba",
    "direction": "xx->eng", "results": {lang: {"error": % in [0, 100], "n": sentences}}}``."""
    if results is None:
        return
    if not isinstance(results, Mapping) or not isinstance(results.get("results"), Mapping):
        raise ValueError(f"{what}: not retrieval results (no 'results' mapping)")
    if results.get("task") != "tatoeba":
        raise ValueError(f"{what}: results of task {results.get('task')!r}, expected 'tatoeba'")
    if results.get("direction", "xx->eng") != "xx->eng":
        raise ValueError(f"{what}: direction {results['direction']!r}, expected 'xx->eng'")
    for lang, res in results["results"].items():
        if not isinstance(res, Mapping) or not _number(res.get("error")) or not 0 <= res["error"] <= 100:
            raise ValueError(f"{what}: results[{lang!r}] has no numeric 'error' in [0, 100]")
        n = res.get("n")
        if n is not None and (not isinstance(n, int) or isinstance(n, bool) or n < 1):
            raise ValueError(f"{what}: results[{lang!r}]['n'] is not a positive integer, got {n!r}")


def _directions(pair: Sequence[str]) -> tuple[str, str]:
    return f"{pair[0]}-{pair[1]}", f"{pair[1]}-{pair[0]}"


def _check_models(models: Sequence[Mapping]) -> None:
    names = [m.get("name") for m in models]
    if any(not n for n in names) or len(set(names)) != len(names):
        raise ValueError(f"every model needs a distinct name, got {names}")
    seen: dict[tuple, str] = {}
    for m in models:
        pair = m.get("pair")
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2 or pair[0] != "eng"
                or not isinstance(pair[1], str) or not LANG_CODE.fullmatch(pair[1]) or pair[1] == "eng"):
            raise ValueError(f"model {m['name']}: 'pair' must be ['eng', xx] with xx an ISO 639-3 code (the "
                             f"paper's: {', '.join(c for c in LANGUAGES if c != 'eng')}), got {pair!r}")
        if m.get("ngrams") not in VARIANTS:
            raise ValueError(f"model {m['name']}: 'ngrams' must be 1 (uni.) or 2 (uni. + bi.), "
                             f"got {m.get('ngrams')!r}")
        key = (m["ngrams"], pair[1])
        if key in seen:
            raise ValueError(f"models {seen[key]} and {m['name']}: both are {VARIANTS[key[0]][1]} eng-{pair[1]}")
        seen[key] = m["name"]
        for rkey in RESULT_KEYS:
            by_direction = m.get(rkey) or {}
            if not isinstance(by_direction, Mapping):
                raise ValueError(f"model {m['name']} {rkey!r}: expected {{direction: results}}")
            for direction, results in by_direction.items():
                if direction not in _directions(pair):
                    raise ValueError(f"model {m['name']} {rkey!r}: direction {direction!r} is not one of "
                                     f"{' / '.join(_directions(pair))}")
                check_results(results, rkey.split("_")[0], f"model {m['name']} {rkey!r} {direction!r}", direction)
        check_similarity(m.get("similarity"), f"model {m['name']} 'similarity'")
        for key in ("tatoeba", "tatoeba_init"):
            check_tatoeba(m.get(key), f"model {m['name']} {key!r}")


def _check_baseline(results: Mapping | None, kind: str, label: str) -> None:
    for direction, res in (results or {}).items():
        parts = direction.split("-")
        if len(parts) != 2 or "eng" not in parts or any(p not in LANGUAGES for p in parts) or parts[0] == parts[1]:
            raise ValueError(f"{label}: direction {direction!r} is not eng-xx or xx-eng")
        check_results(res, kind, f"{label} {direction!r}", direction, baseline=True)


# ---- values ------------------------------------------------------------------------------------------------
def _method_result(results: Mapping | None, method: str) -> Mapping | None:
    return None if results is None else results["results"].get(method)


def _empty_row(row: str, kind: str, label: str, paper_row: str | None, table: int) -> dict:
    out = {"row": row, "kind": kind, "label": label, "paper_row": paper_row, "values": {}, "n": {},
           "candidates": {}, "models": {}, "missing": {}, "paper": {}, "paper_printed": {}, "paper_source": {}}
    if paper_row is not None:
        ref = next(r for r in paper_rows(table) if r["row_id"] == paper_row)
        out["paper"], out["paper_printed"] = dict(ref["values"]), dict(ref["printed"])
        out["paper_source"] = dict(ref["source"])
        out["paper_system"] = f"{ref['block']}: {ref['system']}"
    return out


def _average(row: dict, table: int) -> None:
    cols = [c for c in columns(table) if c["kind"] is not None]
    if table == 4:
        return
    values = [row["values"].get(c["column"]) for c in cols]
    complete = all(v is not None for v in values)
    row["values"]["avg"] = sum(values) / len(values) if complete else None
    row["n"]["avg"] = sum(row["n"][c["column"]] for c in cols) if complete else None
    row["candidates"]["avg"] = None
    names = sorted({row["models"][c["column"]] for c in cols if row["models"].get(c["column"])})
    row["models"]["avg"] = " ".join(names) if complete else ""
    if not complete:
        row["missing"]["avg"] = "not every column of the row has a value"


def _fill(row: dict, col: Mapping, results: Mapping | None, method: str, model: str, why_missing: str) -> None:
    res = _method_result(results, method)
    c = col["column"]
    row["values"][c] = float(res["p@1"]) if res is not None else None
    row["n"][c] = int(res[N_KEY[col["kind"]]]) if res is not None else None
    cand = res.get(CANDIDATES_KEY[col["kind"]]) if res is not None else None
    row["candidates"][c] = int(cand) if cand is not None else None
    row["models"][c] = model if res is not None else ""
    if res is None:
        row["missing"][c] = why_missing if results is None else f"no {method!r} result in the file"


def table_rows(table: int, models: Sequence[Mapping], identical: Mapping | None = None,
               tfidf: Mapping | None = None) -> list[dict]:
    """Our rows of ``table`` (1, 3 or 4): ``ours.<uni|uni_bi>.<nn|csls>`` (with the paper's values of
    ``t<table>.bis2v.<...>`` in ``paper``) for each n-gram order some model covers a pair of the table with,
    then ``init.<...>`` for those with init results, then the baselines (``identical_strings.<method>``,
    ``tfidf.<method>``; ``identical_strings`` for a result under that key) for each method their results
    hold. ``identical`` / ``tfidf``: {direction: results}.
    Every row has ``values`` / ``n`` / ``candidates`` / ``models`` per column (None / "" where there is no
    value) and ``missing``: column -> why it is empty."""
    models = list(models)
    _check_models(models)
    _check_baseline(identical, "words", "identical-strings baseline")
    _check_baseline(tfidf, "sentences", "TF-IDF baseline")
    cols = [c for c in columns(table) if c["kind"] is not None]
    langs = {c["lang"] for c in cols}
    in_table = [m for m in models if m["pair"][1] in langs]
    rows = []
    for kind, suffix in (("ours", ""), ("init", "_init")):
        for method, method_label in METHODS.items():
            for ngrams, (part, label) in VARIANTS.items():
                by_lang = {m["pair"][1]: m for m in in_table if m["ngrams"] == ngrams}
                if not by_lang:
                    continue
                if kind == "init" and not any(any((m.get(k + suffix) or {}).values())
                                              for m in by_lang.values() for k in TABLE_KINDS[table]):
                    continue
                paper_row = f"t{table}.bis2v.{part}.{'nn' if method == 'nn' else 'csls'}" if kind == "ours" else None
                name = f"BI-SENT2VEC {label} {method_label} (ours)"
                if kind == "init":
                    name = f"BI-SENT2VEC {label} {method_label} at random init (ours)"
                row = _empty_row(f"{kind}.{part}.{'nn' if method == 'nn' else 'csls'}", kind, name, paper_row, table)
                for col in cols:
                    m = by_lang.get(col["lang"])
                    if m is None:
                        _fill(row, col, None, method, "", f"not trained (no {label} model for the pair)")
                        continue
                    results = (m.get(col["kind"] + suffix) or {}).get(col["direction"])
                    _fill(row, col, results, method, m["name"],
                          f"not evaluated (no {col['kind'] + suffix} result of {m['name']} for the direction)")
                _average(row, table)
                rows.append(row)
    directions = {c["direction"] for c in cols}
    for kind in TABLE_KINDS[table]:
        results_by_dir = identical if kind == "words" else tfidf
        if not results_by_dir:
            continue
        base, label = BASELINES[kind]
        here = [r for d, r in results_by_dir.items() if r is not None and d in directions]
        # the methods of its results in the table's directions: nn, csls_knn_10 first, then others
        # (the identical-strings baseline's results hold one, "identical_strings")
        found = [m for m in METHODS if any(m in r["results"] for r in here)]
        found += sorted({m for r in here for m in r["results"] if m not in METHODS})
        for method in found:
            short = {"nn": "nn", "csls_knn_10": "csls"}.get(method, method)
            row_id = base if method == base else f"{base}.{short}"
            row = _empty_row(row_id, base, label if method == base else f"{label}, {METHODS.get(method, method)}",
                             None, table)
            for col in cols:
                if col["kind"] == kind:
                    _fill(row, col, results_by_dir.get(col["direction"]), method, base,
                          "not evaluated (no baseline result given for the direction)")
                else:
                    _fill(row, col, None, method, "", "")  # a words baseline has no sentence cells, and vice versa
            _average(row, table)
            rows.append(row)
    return rows


# ---- CSV ---------------------------------------------------------------------------------------------------
def csv_lines(table: int, rows: Sequence[Mapping]) -> list[dict]:
    """One line per (row, column): first the paper's rows of ``table`` (``ours`` empty; ``n`` /
    ``n_candidates``: the paper's queries and candidates per direction), then ours (``n``: the queries
    behind the value, for ``avg`` their sum; ``n_candidates``: dictionary size or candidate sentences)."""
    kinds = {c["column"]: c["kind"] for c in columns(table)}
    lines = []
    for ref in paper_rows(table):
        for col in column_ids(table):
            kind = kinds[col]
            percent = ref["unit"] == "%"
            n = (None if percent else PAPER_QUERIES[kind] if kind
                 else len([c for c in kinds if c != "avg"]) * PAPER_QUERIES[TABLE_KINDS[table][0]])
            lines.append({"table": table, "row": ref["row_id"], "model": "", "column": col, "ours": None,
                          "paper": ref["values"][col], "unit": ref["unit"], "n": n,
                          "n_candidates": None if percent or not kind else PAPER_CANDIDATES[kind],
                          "source": ref["source"][col]})
    for row in rows:
        for col in column_ids(table):
            source = row["paper_source"].get(col) or f"ours only ({row['kind']}: no paper row)"
            if row["values"].get(col) is None and row["missing"].get(col):
                source += f"; empty: {row['missing'][col]}"
            lines.append({"table": table, "row": row["row"], "model": row["models"].get(col, ""), "column": col,
                          "ours": round2(row["values"].get(col)), "paper": row["paper"].get(col),
                          "unit": "P@1 (%)", "n": row["n"].get(col), "n_candidates": row["candidates"].get(col),
                          "source": source})
    return lines


# ---- Markdown ----------------------------------------------------------------------------------------------
def _printed(ref: Mapping, col: str) -> str:
    value = ref["printed"][col]
    if not value:
        return "–"
    return f"{value}%" if ref["unit"] == "%" else value


def _paper_table(table: int) -> list:
    """The paper's table as printed (a grid) and its notes."""
    cols = columns(table)
    grid = Grid.of(["block", "system", *(c["header"] for c in cols)],
                   [[ref["block"], ref["system"], *(_printed(ref, c["column"]) for c in cols)] for ref in paper_rows(table)],
                   "ll" + "r" * len(cols), caption=f"the paper's Table {table}")
    notes = ["Values as printed (P@1, %); – = printed '–'. Source of every cell: "
             "`paper_values/bisent2vec_2019/bisent2vec_2019.csv`."]
    if table in (3, 4):
        ref_row = "BI-SENT2VEC uni. + bi. CSLS" if table == 3 else "BI-SENT2VEC uni. CSLS"
        notes.append(f"\"Reduction in error\" (%): of {ref_row} with respect to the best non-BI-SENT2VEC "
                     "method (the paper's caption).")
    off = sorted(r for r in PAPER_AVG_OFF if r.startswith(f"t{table}."))
    if off:
        notes.append("The printed avg. of " + ", ".join(f"`{r}`" for r in off)
                     + " is not the mean of its printed columns (to 0.05); kept as printed.")
    return [grid, "\n" + " ".join(notes) + "\n"]


def _cell(row: Mapping, col: str) -> str:
    if row["paper_row"] is None:
        return fmt2(row["values"].get(col), "–")
    paper = row["paper_printed"].get(col) or "–"
    return f"{fmt2(row['values'].get(col), '–')} / {paper}"


def _n_cell(row: Mapping, col: str) -> str:
    n, cand = row["n"].get(col), row["candidates"].get(col)
    if n is None:
        return "–"
    return f"{n} ({cand})" if cand is not None else str(n)


def _our_grid(table: int, rows: Sequence[Mapping]) -> Grid:
    cols = columns(table)
    return Grid.of(["row", "system", "paper row", *(f"{c['header']} (ours / paper)" for c in cols)],
                   [[f"`{row['row']}`", row["label"], f"`{row['paper_row']}`" if row["paper_row"] else "",
                     *(_cell(row, c["column"]) for c in cols)] for row in rows],
                   "lll" + "r" * len(cols), caption="ours beside the paper (ours / paper)")


def _counts_grid(table: int, rows: Sequence[Mapping]) -> Grid:
    cols = columns(table)
    return Grid.of(["row", *(c["header"] for c in cols)],
                   [[f"`{row['row']}`", *(_n_cell(row, c["column"]) for c in cols)] for row in rows],
                   "l" + "r" * len(cols), caption="the queries behind each of our cells")


def _notes(table: int) -> str:
    kinds = TABLE_KINDS[table]
    out = []
    if "words" in kinds:
        out.append(f"- **Words**: P@1 of translating the source words of the MUSE test dictionary; the paper uses "
                   f"{PAPER_QUERIES['words']} source queries and {PAPER_CANDIDATES['words']:,} target words per "
                   "direction; ours: n queries of the dictionary's source words (in parentheses) — a source word "
                   "outside our vocabulary, or whose translations all are, is not a query.")
    if "sentences" in kinds:
        out.append(f"- **Sentences**: P@1 of retrieving a sentence's translation on Europarl with tf-idf weighted "
                   f"averages of word vectors; the paper uses {PAPER_QUERIES['sentences']} queries among "
                   f"{PAPER_CANDIDATES['sentences']:,} candidates per direction; ours: n queries (candidates in "
                   "parentheses).")
    out.append("- → is English to the other language (our `eng-xx` results), ← the other language to English "
               "(`xx-eng`). NN: nearest neighbour; CSLS: cross-domain similarity local scaling (k = 10).")
    out.append("- Rows with a paper row: **ours / paper** (the paper's BI-SENT2VEC row of the same n-grams and "
               "retrieval); random init = the same models before training; baselines (no learning) on the same "
               "queries show ours alone. – = no value: the pair was not trained or the direction not evaluated "
               "(listed below), never 0.")
    if table != 4:
        out.append("- avg.: the mean of the row's columns, given only when every column of the row has a value.")
    return "\n".join(out)


def _missing(rows: Sequence[Mapping], table: int) -> str:
    headers = {c["column"]: c["header"] for c in columns(table)}
    lines = []
    for row in rows:
        by_reason: dict[str, list[str]] = {}
        for col, why in row["missing"].items():
            if col != "avg" and row["values"].get(col) is None and why:
                by_reason.setdefault(why, []).append(headers[col])
        for why, cols in by_reason.items():
            lines.append(f"- `{row['row']}`: {', '.join(cols)} — {why}")
    return "\n".join(lines)


def _model_list(models: Sequence[Mapping], table: int) -> str:
    langs = {c["lang"] for c in columns(table) if c["lang"]}
    lines = []
    for m in models:
        if m["pair"][1] not in langs:
            continue
        parts = []
        for key in RESULT_KEYS:
            if key.split("_")[0] not in TABLE_KINDS[table]:
                continue
            have = [d for d in _directions(m["pair"]) if (m.get(key) or {}).get(d) is not None]
            parts.append(f"{key}: {', '.join(have) or 'none'}")
        desc = f" — {m['description']}" if m.get("description") else ""
        lines.append(f"- `{m['name']}`{desc}: en-{LANGUAGES[m['pair'][1]]}, {VARIANTS[m['ngrams']][1]} "
                     f"(ngrams {m['ngrams']}); evaluated {'; '.join(parts)}")
    return "\n".join(lines)


def write_table(table: int, rows: Sequence[Mapping], md_path, csv_path, run_name: str,
                models: Sequence[Mapping] = ()) -> list[Path]:
    """``md_path``: the paper's table as printed, then our rows beside it, the queries behind each of our
    cells, the empty cells and why, our models; ``csv_path``: :func:`csv_lines`; the LaTeX beside the Markdown.
    Returns the paths (Markdown, CSV, LaTeX)."""
    rows = list(rows)
    lines, fields = seeds.seed_columns(csv_lines(table, rows), CSV_FIELDS)
    frame = csv_frame([{k: fmt2(line[k], missing="") for k in fields} for line in lines], fields)
    title = f"{PAPER}, Table {table} — {TITLES[table]}, run `{run_name}`"
    doc = Document(caption=title)
    doc.add(f"# {title}\n\n")
    if seeds.has_replicates(rows):
        doc.add(seeds.NOTE + "\n\n")
    doc.add(f"## The paper's Table {table}\n\n", *_paper_table(table),
            "\n## Ours beside the paper\n\n" + _notes(table) + "\n\n")
    if not rows:
        doc.add("No model of ours covers the pairs of this table "
                f"(en-{', en-'.join(TABLE_PAIRS[table])}), and no baseline was given.\n")
        return write_files(doc, frame, md_path, csv_path)
    doc.add(_our_grid(table, rows),
            "\n### Queries behind each of our cells\n\nn queries (in parentheses: "
            + ("dictionary size / candidates" if table == 4 else
               "dictionary size" if table == 1 else "candidates")
            + ")" + ("; avg.: the queries of all columns" if table != 4 else "") + ".\n\n",
            _counts_grid(table, rows))
    missing = _missing(rows, table)
    if missing:
        doc.add("\n### Empty cells\n\n" + missing + "\n")
    listed = _model_list(models, table)
    if listed:
        doc.add("\n### Our models\n\n" + listed + "\n")
    return write_files(doc, frame, md_path, csv_path)


# ---- the pairs table: FLORES held-out xsim and Tatoeba of every trained pair --------------------------------
def pairs_columns(models: Sequence[Mapping]) -> list[dict]:
    """The columns of the pairs table: ``{"column", "task" ("flores" / "tatoeba"), "system" ("ours", "init",
    "tfidf"; None for the sentence counts), "ngrams" (1, 2 or None), "direction" ("en-xx", "xx-en",
    "xx-eng"; None for the counts), "header"}``. For each n-gram order some model has: its FLORES en→xx and
    xx→en error, then at random init; TF-IDF's; ``flores.sentences``; then per order the Tatoeba xx→eng
    error of the model and at init; TF-IDF's; ``tatoeba.n``."""
    present = [n for n in VARIANTS if any(m["ngrams"] == n for m in models)]
    systems = (("ours", "", ""), ("init", ".init", " init"))
    cols = []
    for n in present:
        part, label = VARIANTS[n]
        for system, suffix, header in systems:
            for d, arrow in (("en-xx", "en→xx"), ("xx-en", "xx→en")):
                cols.append({"column": f"flores.{part}{suffix}.{d}", "task": "flores", "system": system,
                             "ngrams": n, "direction": d, "header": f"{label}{header} {arrow}"})
    for d, arrow in (("en-xx", "en→xx"), ("xx-en", "xx→en")):
        cols.append({"column": f"flores.tfidf.{d}", "task": "flores", "system": "tfidf", "ngrams": None,
                     "direction": d, "header": f"TF-IDF {arrow}"})
    cols.append({"column": "flores.sentences", "task": "flores", "system": None, "ngrams": None, "direction": None,
                 "header": "sentences"})
    for n in present:
        part, label = VARIANTS[n]
        for system, suffix, header in systems:
            cols.append({"column": f"tatoeba.{part}{suffix}", "task": "tatoeba", "system": system, "ngrams": n,
                         "direction": "xx-eng", "header": f"Tatoeba {label}{header}"})
    cols.append({"column": "tatoeba.tfidf", "task": "tatoeba", "system": "tfidf", "ngrams": None,
                 "direction": "xx-eng", "header": "Tatoeba TF-IDF"})
    cols.append({"column": "tatoeba.n", "task": "tatoeba", "system": None, "ngrams": None, "direction": None,
                 "header": "Tatoeba n"})
    return cols


def _flores_key(direction: str, lang: str) -> str:
    return f"eng-{lang}" if direction == "en-xx" else f"{lang}-eng"


def _pair_value(col: Mapping, lang: str, m: Mapping | None, tfidf_flores: Mapping | None,
                tfidf_tatoeba: Mapping | None) -> tuple[float | None, int | None, str, str]:
    """(value, sentences, who, why it is empty) of one cell of the pairs table (``m``: the pair's model of
    the column's n-gram order, or None)."""
    if col["system"] == "tfidf":
        who = "TF-IDF"
        if col["task"] == "flores":
            if tfidf_flores is None:
                return None, None, "", "no TF-IDF FLORES matrix given (--tfidf-flores)"
            key = _flores_key(col["direction"], lang)
            if key not in tfidf_flores["pairs"]:
                return None, None, "", f"no {key!r} pair in the TF-IDF FLORES matrix"
            return float(tfidf_flores["pairs"][key]), tfidf_flores["sentences"], who, ""
        if tfidf_tatoeba is None:
            return None, None, "", "no TF-IDF Tatoeba results given (--tfidf-tatoeba)"
        res = tfidf_tatoeba["results"].get(lang)
        if res is None:
            return None, None, "", f"{lang} is not among the languages of the TF-IDF Tatoeba results"
        return float(res["error"]), res.get("n"), who, ""
    label = VARIANTS[col["ngrams"]][1]
    if m is None:
        return None, None, "", f"not trained (no {label} model for the pair)"
    name = m["name"]
    if col["task"] == "flores":
        sim = m.get("similarity")
        if sim is None:
            return None, None, "", f"not evaluated (no similarity file of {name})"
        which = "similarity" if col["system"] == "ours" else "init"
        matrix = sim.get(which)
        if matrix is None:
            return None, None, "", f"no 'init' matrix in the similarity file of {name}"
        key = _flores_key(col["direction"], lang)
        if key not in matrix["pairs"]:
            return None, None, "", f"no {key!r} pair in the {which!r} matrix of {name}"
        return float(matrix["pairs"][key]), matrix["sentences"], name, ""
    key = "tatoeba" if col["system"] == "ours" else "tatoeba_init"
    results = m.get(key)
    if results is None:
        return None, None, "", f"not evaluated (no {key} file of {name})"
    res = results["results"].get(lang)
    if res is None:
        return None, None, "", f"{lang} is not among the languages of the {key} results of {name}"
    return float(res["error"]), res.get("n"), name, ""


def pairs_rows(models: Sequence[Mapping], tfidf_flores: Mapping | None = None,
               tfidf_tatoeba: Mapping | None = None) -> list[dict]:
    """One row per trained pair (in the models' order), ``row`` ``eng-xx``, ``lang`` xx, over
    :func:`pairs_columns`: ``values`` (error %; for ``flores.sentences`` / ``tatoeba.n`` the sentences behind
    the row's values), ``n`` (sentences), ``models`` (the model, ``TF-IDF`` or "") and ``missing``: column
    -> why it is empty. ``tfidf_flores``: a similarity error matrix over the data's languages;
    ``tfidf_tatoeba``: Tatoeba results. ValueError when the values of a row are on different numbers of
    sentences (then not on the same sentences)."""
    models = list(models)
    _check_models(models)
    check_matrix(tfidf_flores, "TF-IDF FLORES matrix")
    check_tatoeba(tfidf_tatoeba, "TF-IDF Tatoeba results")
    cols = pairs_columns(models)
    rows = []
    for lang in dict.fromkeys(m["pair"][1] for m in models):
        by_ngrams = {m["ngrams"]: m for m in models if m["pair"][1] == lang}
        row = {"row": f"eng-{lang}", "lang": lang, "values": {}, "n": {}, "models": {}, "missing": {}}
        sizes: dict[str, dict[str, int]] = {"flores": {}, "tatoeba": {}}
        for col in cols:
            if col["system"] is None:
                continue
            value, n, who, why = _pair_value(col, lang, by_ngrams.get(col["ngrams"]), tfidf_flores, tfidf_tatoeba)
            c = col["column"]
            row["values"][c], row["n"][c], row["models"][c] = value, n, who
            if value is None:
                row["missing"][c] = why
            elif n is not None:
                sizes[col["task"]][f"{col['header']} ({who})"] = n
        for task, c in (("flores", "flores.sentences"), ("tatoeba", "tatoeba.n")):
            found = set(sizes[task].values())
            if len(found) > 1:
                raise ValueError(f"eng-{lang}: the {task} errors are on different numbers of sentences "
                                 f"{sizes[task]}: not the same sentences")
            row["values"][c] = row["n"][c] = next(iter(found)) if found else None
            row["models"][c] = ""
        rows.append(row)
    return rows


def pairs_csv_lines(rows: Sequence[Mapping], cols: Sequence[Mapping]) -> list[dict]:
    """One line per (row, value column): ``task`` flores / tatoeba, ``system`` ``ours.uni``, ``init.uni_bi``,
    ``tfidf``..., ``direction`` of the search (``eng-fra``: English queries, fra candidates), ``value`` the
    error (%; empty when there is none, with ``note`` saying why), ``n`` the sentences behind it."""
    lines = []
    for row in rows:
        lang = row["lang"]
        for col in cols:
            if col["system"] is None:
                continue
            c = col["column"]
            system = col["system"] if col["ngrams"] is None else f"{col['system']}.{VARIANTS[col['ngrams']][0]}"
            direction = _flores_key(col["direction"], lang) if col["task"] == "flores" else f"{lang}-eng"
            lines.append({"row": row["row"], "column": c, "task": col["task"], "system": system,
                          "direction": direction, "value": round2(row["values"][c]), "unit": "error (%)",
                          "n": row["n"][c], "model": row["models"][c], "note": row["missing"].get(c, "")})
    return lines


def _pairs_notes() -> str:
    return "\n".join([
        "- Error (%) of nearest-neighbour search (cosine): a query is an error when its nearest neighbour is not "
        "its translation; lower is better. Not a table of the paper: the pairs we trained, on our data.",
        "- **FLORES** (held-out lines, xsim): en→xx: the English lines search among the xx lines (`eng-xx` of the "
        "similarity matrix), xx→en the reverse (`xx-eng`); sentences: the held-out lines behind the row's FLORES "
        "values (all on the same lines).",
        "- **Tatoeba**: xx→eng, the xx sentences search among the English ones; n: the sentences of the test set.",
        "- uni. / uni. + bi.: our models with unigrams / unigrams and bigrams; init: the same model at its random "
        "initialization; TF-IDF: character n-gram TF-IDF vectors on the same sentences (no learning).",
        "- – = no value (listed below with the reason), never 0."])


def _pairs_model_list(models: Sequence[Mapping]) -> str:
    lines = []
    for m in models:
        sim = m.get("similarity")
        flores = "none" if sim is None else "model and init" if sim.get("init") is not None else "model only"
        tatoeba = [k for k in ("tatoeba", "tatoeba_init") if m.get(k) is not None]
        desc = f" — {m['description']}" if m.get("description") else ""
        lines.append(f"- `{m['name']}`{desc}: eng-{m['pair'][1]}, {VARIANTS[m['ngrams']][1]} (ngrams "
                     f"{m['ngrams']}); FLORES similarity: {flores}; Tatoeba: {', '.join(tatoeba) or 'none'}")
    return "\n".join(lines)


def write_pairs(rows: Sequence[Mapping], md_path, csv_path, run_name: str, models: Sequence[Mapping]) -> list[Path]:
    """``md_path``: the pairs table (one row per pair, :func:`pairs_columns`), its empty cells and why, our
    models; ``csv_path``: :func:`pairs_csv_lines`; the LaTeX beside the Markdown. Returns the paths (Markdown,
    CSV, LaTeX)."""
    rows, models = list(rows), list(models)
    cols = pairs_columns(models)
    lines, fields = seeds.seed_columns(pairs_csv_lines(rows, cols), PAIRS_CSV_FIELDS)
    frame = csv_frame([{k: fmt2(line[k], missing="") for k in fields} for line in lines], fields)
    headers = {c["column"]: c["header"] for c in cols}
    title = f"{PAPER} — {PAIRS_TITLE}, run `{run_name}`"
    doc = Document(caption=f"{title} (not a table of the paper: the pairs we trained, on our data)")
    doc.add(f"# {title}\n\n" + _pairs_notes() + "\n\n")
    if seeds.has_replicates(rows):
        doc.add(seeds.NOTE + "\n\n")
    # errors with 2 decimals, the sentence counts (int) as they are
    doc.add(Grid.of(["pair", *(c["header"] for c in cols)],
                    [[row["row"], *(fmt2(row["values"][c["column"]], "–") for c in cols)] for row in rows],
                    "l" + "r" * len(cols)))
    missing = []
    for row in rows:
        by_reason: dict[str, list[str]] = {}
        for c, why in row["missing"].items():
            by_reason.setdefault(why, []).append(headers[c])
        missing += [f"- {row['row']}: {', '.join(cs)} — {why}" for why, cs in by_reason.items()]
    if missing:
        doc.add("\n### Empty cells\n\n" + "\n".join(missing) + "\n")
    doc.add("\n### Our models\n\n" + _pairs_model_list(models) + "\n")
    return write_files(doc, frame, md_path, csv_path)


# ---- all the tables ----------------------------------------------------------------------------------------
def _has_retrieval(m: Mapping) -> bool:
    return any(any(v is not None for v in (m.get(k) or {}).values()) for k in RESULT_KEYS)


def write_tables(models: Sequence[Mapping], out_dir, run_name: str, identical: Mapping | None = None,
                 tfidf: Mapping | None = None, tfidf_flores: Mapping | None = None,
                 tfidf_tatoeba: Mapping | None = None, seed_models: Sequence[Sequence[Mapping]] = ()) -> list[Path]:
    """``table1.md/.csv``, ``table3.md/.csv``, ``table4.md/.csv`` in ``out_dir`` when some model has word
    or sentence results (MUSE / Europarl evaluated), ``pairs.md/.csv`` when some model has a similarity file;
    what is not written is said in the log; ValueError when neither. Every table's rows are built (and every
    input, baselines included, checked) before the first file is written. ``seed_models``: the same models'
    results of every further seed (config `seeds`): each cell becomes mean ± sd over the seeds."""
    out_dir = Path(out_dir)
    models = list(models)
    for ms in [models, *seed_models]:
        _check_models(list(ms))
    _check_baseline(identical, "words", "identical-strings baseline")
    _check_baseline(tfidf, "sentences", "TF-IDF baseline")
    check_matrix(tfidf_flores, "TF-IDF FLORES matrix")
    check_tatoeba(tfidf_tatoeba, "TF-IDF Tatoeba results")
    retrieval = any(_has_retrieval(m) for m in models)
    similarity = any(m.get("similarity") is not None for m in models)
    if not retrieval and not similarity:
        raise ValueError("nothing to report: no model has word or sentence results (Tables 1, 3, 4) nor a "
                         "similarity file (pairs)")
    by_seed = [models, *map(list, seed_models)]
    built = ({t: seeds.over_seeds([table_rows(t, ms, identical, tfidf) for ms in by_seed]) for t in TABLES}
             if retrieval else {})
    pairs = seeds.over_seeds([pairs_rows(ms, tfidf_flores, tfidf_tatoeba) for ms in by_seed]) if similarity else None
    paths = []
    if retrieval:
        for t in TABLES:
            paths += write_table(t, built[t], out_dir / f"table{t}.md", out_dir / f"table{t}.csv", run_name, models)
    else:
        log.info("bisent2vec-tables: Tables 1, 3, 4 not written: no model has word translation or sentence "
                 "retrieval results (MUSE / Europarl not evaluated)")
    if pairs is not None:
        paths += write_pairs(pairs, out_dir / "pairs.md", out_dir / "pairs.csv", run_name, models)
    else:
        log.info("bisent2vec-tables: pairs.md not written: no model has a similarity file")
    return paths


# ---- command line ----------------------------------------------------------------------------------------
def load_results(path, kind: str, direction: str | None = None, baseline: bool = False) -> dict | None:
    """Results of ``kind`` ("words" / "sentences") from ``path`` (None for None); ValueError naming the file
    otherwise."""
    return load_checked_json(path, lambda data, what: check_results(data, kind, what, direction, baseline), "results file")


def _path(spec: Mapping, key: str):
    path = spec.get(key)
    if path is not None and not isinstance(path, str):
        raise ValueError(f"--models entry {spec.get('name')!r} {key!r}: expected a path or null, got {path!r}")
    return path


def load_models(specs: Sequence[Mapping]) -> list[dict]:
    """``--models`` entries (result values are paths or null) -> :func:`table_rows`'s models."""
    models = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise ValueError(f"--models: every entry must be an object, got {spec!r}")
        unknown = set(spec) - set(MODEL_KEYS)
        if unknown:
            raise ValueError(f"--models entry {spec.get('name')!r}: unknown keys {sorted(unknown)}")
        model = {k: spec.get(k) for k in ("name", "description", "pair", "ngrams")}
        for key in RESULT_KEYS:
            paths = spec.get(key) or {}
            if not isinstance(paths, Mapping):
                raise ValueError(f"--models entry {spec.get('name')!r} {key!r}: expected {{direction: path}}")
            model[key] = {d: load_results(p, key.split("_")[0], d) for d, p in paths.items()}
        model["similarity"] = load_checked_json(_path(spec, "similarity"), check_similarity, "similarity file")
        for key in ("tatoeba", "tatoeba_init"):
            model[key] = load_checked_json(_path(spec, key), check_tatoeba, f"{key} file")
        models.append(model)
    return models


def parse_baseline(items: Sequence[str] | None, kind: str, option: str) -> dict:
    """``["eng-fra=PATH", ...]`` -> {direction: results}."""
    out = {}
    for item in items or []:
        direction, sep, path = item.partition("=")
        if not sep or not path or direction.count("-") != 1:
            raise ValueError(f"{option} {item!r}: expected DIRECTION=PATH, e.g. eng-fra=results.json")
        if direction in out:
            raise ValueError(f"{option}: direction {direction} given twice")
        out[direction] = load_results(path, kind, direction, baseline=True)
    return out


def models_from_records(models: list[dict], spec) -> list[dict]:
    """The models with their n-gram setting taken from each model's own record (what it was trained with)
    once the records agree with the config (laser_repro.models.record; refused otherwise)."""
    if spec is None:
        return models
    records = check_model_records(spec)
    missing = [m["name"] for m in models if m["name"] not in records]
    if missing:
        raise ValueError(f"--model-records has no record of {', '.join(missing)}")
    return [{**m, "ngrams": int(records[m["name"]]["settings"]["model"]["ngrams"])} for m in models]


def cmd_tables(a):
    try:
        # one model list per seed (a model's seed_replicates: the result files of its further seeds)
        by_seed = [models_from_records(load_models(specs), a.model_records)
                   for specs in seeds.per_seed_specs(models_argument(a.models))]
        identical = parse_baseline(a.identical_strings, "words", "--identical-strings")
        tfidf = parse_baseline(a.tfidf, "sentences", "--tfidf")
        tfidf_flores = load_checked_json(a.tfidf_flores, check_matrix, "TF-IDF FLORES matrix")
        tfidf_tatoeba = load_checked_json(a.tfidf_tatoeba, check_tatoeba, "TF-IDF Tatoeba results")
        paths = write_tables(by_seed[0], a.out_dir, a.run_name, identical or None, tfidf or None, tfidf_flores,
                             tfidf_tatoeba, seed_models=by_seed[1:])
    except (OSError, ValueError) as e:
        raise SystemExit(f"bisent2vec-tables: {e}") from e
    for path in paths:
        print(path)


def add_cli(sub) -> None:
    s = sub.add_parser("bisent2vec-tables",
                       help="Sabet et al. 2019 (Bi-Sent2Vec) Tables 1, 3, 4: our word and sentence retrieval P@1 "
                            "beside the paper's, with the random-init and non-learned baselines; and pairs.md: "
                            "FLORES held-out xsim and Tatoeba error of every trained pair")
    s.add_argument("--models", required=True, metavar="JSON",
                   help='a JSON list (or a file holding it): [{"name", "description", "pair": ["eng", "fra"], '
                        '"ngrams": 1 or 2, "words": {"eng-fra": PATH, "fra-eng": PATH}, "words_init": {...}, '
                        '"sentences": {...}, "sentences_init": {...}, "similarity": PATH ({"similarity": M, '
                        '"init": M} on the FLORES held-out lines), "tatoeba": PATH, "tatoeba_init": PATH}, ...]; '
                        'a path may be null or the key absent (not evaluated)')
    s.add_argument("--identical-strings", action="append", metavar="DIRECTION=PATH",
                   help="the identical-strings word translation baseline's results for one direction, e.g. "
                        "eng-fra=ident.json (repeat per direction)")
    s.add_argument("--tfidf", action="append", metavar="DIRECTION=PATH",
                   help="the TF-IDF sentence retrieval baseline's results for one direction (repeat per direction)")
    s.add_argument("--tfidf-flores", metavar="PATH",
                   help="pairs table: the TF-IDF baseline's similarity error matrix on the same FLORES held-out "
                        "lines, over the data's languages (laser-repro nway-tfidf)")
    s.add_argument("--tfidf-tatoeba", metavar="PATH",
                   help="pairs table: the TF-IDF baseline's Tatoeba results, xx->eng (laser-repro retrieval --tfidf)")
    s.add_argument("--out-dir", required=True,
                   help="writes table1.md/.csv, table3.md/.csv, table4.md/.csv (when some model has word or "
                        "sentence results) and pairs.md/.csv (when some model has a similarity file)")
    s.add_argument("--run-name", required=True)
    add_model_records_option(s)
    s.set_defaults(func=cmd_tables)
