"""One table per evaluation task comparing the models of a run, of any family, on the same sentences:
one row per language (WMT: per ordered language pair, then the average; Europarl: each language with
English, both directions), one column group per model -- ours, and the model at update 0 where the task
scores it (Tatoeba, UN, WMT, Europarl) -- beside the task's non-learned baseline where it has one (Tatoeba,
UN, WMT, Europarl: character n-gram TF-IDF). A model without an encoder for a task's languages has
no column but a line saying why; a model that embeds only some of them has its cells there (n/a elsewhere).

Inputs, per task, as the task's own rules write them: Tatoeba scores of a LASER model (``tatoeba``: one
file per language, ``en_xx_error``, ``xx_en_error``, ``init``) or of another family and TF-IDF
(``retrieval``: ``results``: language -> ``error`` (xx -> eng), ``en_xx_error``), UN ``retrieval`` scores, WMT ``wmt-similarity`` scores (``pairs``,
``average_error``), BUCC ``bucc-evaluate`` scores (one file per language: ``language``, ``f1``), XNLI and
MLDoc classifier scores (``test_accuracy``: language -> accuracy %), Europarl ``europarl-retrieval`` scores
(one file per direction: ``src``, ``tgt``, ``results.nn["p@1"]``).

The tables (Markdown, CSV and LaTeX beside the Markdown) are written by :mod:`laser_repro.reporting.paper_table`.
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence

from laser_repro.core import languages
from laser_repro.core.textio import read_json
from laser_repro.models.record import add_model_records_option
from laser_repro.reporting.paper_table import round2, write_table

#: task -> (what a cell is, whether lower is better)
MEASURES = {
    "tatoeba": ("similarity error (%) on the Tatoeba test set, the mean of xx → eng and eng → xx (LASER's Table 1 "
                "measure)", True),
    "un": ("P@1 (%) of UN retrieval, each sentence's English translation the nearest of all English sentences "
           "(LaBSE's Table 2 measure, xx → eng)", False),
    "wmt": ("similarity error (%), each source sentence's nearest target sentence is not its translation", True),
    "bucc": ("F1 (%) of the mined pairs on the BUCC 2018 training set, at the F1-optimal margin threshold", False),
    "xnli": ("accuracy (%) of the classifier trained on English MultiNLI embeddings", False),
    "mldoc": ("accuracy (%) of the classifier trained on English MLDoc embeddings", False),
    "europarl": ("P@1 (%) of Europarl sentence retrieval by nearest neighbour (MUSE's protocol, Bi-Sent2Vec's Table 3: "
                 "each query's translation among the keys; a Bi-Sent2Vec model by idf-weighted bags of its word "
                 "vectors, another model by its sentence embeddings)", False),
}
TASK_NAMES = {"tatoeba": "Tatoeba similarity", "un": "UN retrieval", "wmt": "WMT similarity", "bucc": "BUCC 2018 mining",
              "xnli": "XNLI", "mldoc": "MLDoc", "europarl": "Europarl retrieval"}
AVERAGE = "average"


def _both_directions(scores: Mapping, where: str) -> float:
    if scores.get("en_xx_error") is None or scores.get("xx_en_error") is None:
        raise ValueError(f"{where} has no error of both directions (written by an older laser-repro: delete it "
                         f"and rerun)")
    return (float(scores["en_xx_error"]) + float(scores["xx_en_error"])) / 2


def tatoeba_values(docs: Sequence[Mapping], init: bool = False) -> dict[str, float]:
    """language -> mean error of the two directions, from LASER's per-language ``tatoeba`` scores (``init``:
    their update-0 scores) or the languages of a ``retrieval`` document (init: a document of its own)."""
    out = {}
    for doc in docs:
        if "results" in doc:
            for lang, r in doc["results"].items():
                out[lang] = _both_directions({"xx_en_error": r.get("error"), "en_xx_error": r.get("en_xx_error")},
                                             f"the {lang} scores of {doc.get('encoder', 'a retrieval file')}")
        else:
            scores = doc.get("init") if init else doc
            out[doc["language"]] = _both_directions(scores or {}, f"the Tatoeba {doc['language']} scores")
    return out


def task_values(task: str, docs: Sequence[Mapping], init: bool = False) -> dict[str, float]:
    """row key -> value of one model's (or the baseline's) scores of ``task``: ``src-trg`` pairs and
    ``average`` for WMT, languages otherwise. ``docs``: the task's score documents (BUCC and a LASER model's
    Tatoeba: one per language); ``init``: the update-0 scores of a document that holds both (Tatoeba)."""
    if task == "tatoeba":
        return tatoeba_values(docs, init)
    if task == "un":
        return {lang: 100.0 - float(r["error"]) for doc in docs for lang, r in doc["results"].items()}
    if task == "wmt":
        [doc] = docs
        out = {f"{p['src']}-{p['trg']}": float(p["error"]) for p in doc["pairs"]}
        out[AVERAGE] = float(doc["average_error"])
        return out
    if task == "bucc":
        return {doc["language"]: 100.0 * float(doc["f1"]) for doc in docs}
    if task in ("xnli", "mldoc"):
        [doc] = docs
        return {lang: float(acc) for lang, acc in doc["test_accuracy"].items()}
    if task == "europarl":  # one document per direction
        return {f"{doc['src']}-{doc['tgt']}": float(doc["results"]["nn"]["p@1"]) for doc in docs}
    raise ValueError(f"no comparison table for task {task!r} (known: {', '.join(MEASURES)})")


def row_keys(task: str, langs: Sequence[str]) -> list[str]:
    """The rows of a task's table: its languages (WMT: their ordered pairs, then the average)."""
    if task == "wmt":
        return [f"{s}-{t}" for s in langs for t in langs if s != t] + [AVERAGE]
    if task == "europarl":  # each language with English, both directions
        return [key for xx in langs for key in (f"eng-{xx}", f"{xx}-eng")]
    return list(langs)


def _label(task: str, key: str) -> str:
    if key == AVERAGE:
        return "average (over each model's own pairs)"
    if task in ("wmt", "europarl"):
        src, trg = key.split("-")
        return f"{languages.get(src).name} → {languages.get(trg).name}"
    return languages.get(key).name


def compare_rows(task: str, langs: Sequence[str], models: Sequence[Mapping], tfidf: Mapping | None) -> list[dict]:
    """One row per row key: ``<model>`` and ``<model> init`` (when the model has init scores) for every scored
    model (``{"name", "values", "init"}``: row key -> value), and ``tfidf``."""
    rows = []
    for key in row_keys(task, langs):
        row = {"row": key, "name": _label(task, key)}
        for m in models:
            row[m["name"]] = round2(m["values"].get(key))
            if m.get("init") is not None:
                row[f"{m['name']} init"] = round2(m["init"].get(key))
        if tfidf is not None:
            row["TF-IDF"] = round2(tfidf.get(key))
        rows.append(row)
    return rows


def write_task_comparison(md_path, csv_path, *, task: str, run_name: str, langs: Sequence[str],
                          models: Sequence[Mapping], tfidf_path: str | os.PathLike | Sequence[str] | None = None) -> None:
    """The comparison table of ``task``. ``models``: ``{"name", "family", "description", "scores": [paths],
    "init": [paths] or [], "skipped": reason or ""}`` in column order (a skipped model: a note, no column);
    ``tfidf_path``: the baseline's score file(s) (Europarl: one per direction)."""
    what, lower = MEASURES[task] if task in MEASURES else (None, None)
    if what is None:
        raise ValueError(f"no comparison table for task {task!r} (known: {', '.join(MEASURES)})")
    scored, notes = [], []
    for m in models:
        if m.get("skipped"):
            notes.append(f"{m['name']} ({m['family']}): not scored: {m['skipped']}.")
            continue
        values = task_values(task, [read_json(p) for p in m["scores"]])
        init = task_values(task, [read_json(p) for p in m["init"]], init=True) if m.get("init") else None
        scored.append({**m, "values": values, "init": init})
    paths = [tfidf_path] if isinstance(tfidf_path, (str, os.PathLike)) else list(tfidf_path or [])
    tfidf = task_values(task, [read_json(p) for p in paths]) if paths else None
    rows = compare_rows(task, langs, scored, tfidf)
    columns = [("name", "pair" if task in ("wmt", "europarl") else "language")]
    for m in scored:
        columns.append((m["name"], f"{m['name']} ({m['family']})"))
        if m["init"] is not None:
            columns.append((f"{m['name']} init", f"{m['name']} init"))
    if tfidf is not None:
        columns.append(("TF-IDF", "TF-IDF"))
    described = "; ".join(f"{m['name']}: {m['family']}, {m['description']}" for m in models)
    baselines = ((["`init`: the same model at update 0"] if any(m["init"] is not None for m in scored) else [])
                 + (["TF-IDF: the non-learned baseline"] if tfidf is not None else []))
    intro = (f"{TASK_NAMES[task]}, run {run_name}: {what} ({'lower' if lower else 'higher'} is better), every model "
             f"on the same sentences" + "".join(f"; {b}" for b in baselines)
             + f". A model has cells for the languages it embeds (n/a elsewhere). Models: {described}.")
    write_table(md_path, csv_path, title=f"{TASK_NAMES[task]}: the models of {run_name} compared", intro=intro,
                caption=f"{TASK_NAMES[task]}: the models of run `{run_name}` compared on the same sentences "
                        f"(not a table of a paper)",
                columns=columns, rows=rows, notes=notes)


def cmd_compare_task(a) -> None:
    import json

    from laser_repro.models.record import require_model_records

    require_model_records(a.model_records, f"compare-task {a.task}")
    try:
        models = json.loads(a.models)
        write_task_comparison(a.md, a.csv, task=a.task, run_name=a.run_name, langs=a.languages, models=models,
                              tfidf_path=a.tfidf)
    except (ValueError, KeyError) as err:
        raise SystemExit(f"compare-task {a.task}: {err}") from None


def add_cli(sub) -> None:
    s = sub.add_parser("compare-task", help="one table of an evaluation task for every model of a run (any family)")
    s.add_argument("--task", required=True, choices=sorted(MEASURES))
    s.add_argument("--run-name", required=True)
    s.add_argument("--languages", nargs="+", required=True, help="the task's languages, in table order")
    s.add_argument("--models", required=True,
                   help='JSON list of {"name", "family", "description", "scores": [paths], "init": [paths], "skipped"}')
    s.add_argument("--tfidf", nargs="+", help="the task's TF-IDF baseline scores (Tatoeba, UN, WMT; Europarl: one "
                                              "file per direction)")
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    add_model_records_option(s)
    s.set_defaults(func=cmd_compare_task)
