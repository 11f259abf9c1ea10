"""Feng et al. 2020 (LaBSE), Table 2: our retrieval accuracies beside the published ones.

The paper's values are in ``paper_values/labse_2020/labse_2020.csv`` (one line per printed cell of Table 2, with its
source; a printed '-' is an empty value). Table 2 has nine rows (three prior systems, four variants with the
mBERT vocabulary, two with the customized one) and seven columns: UN P@1 for es, fr, ru, zh and their mean,
Tatoeba average accuracy over the 36 XTREME languages and over all 112 languages.

Our inputs are *retrieval results*, one JSON per evaluated encoder and task (written by another command)::

    {"task": "tatoeba" or "un", "direction": "xx->eng",
     "results": {"fra": {"error": 12.5, "n": 1000}, ...}}

where ``error`` is the % of the ``n`` xx sentences whose nearest English sentence (cosine) is not its
translation, so accuracy (Tatoeba) and P@1 (UN) are ``100 - error``. Each of our models is a dict::

    {"name": "labse_small", "description": "dual encoder + AMS, customized vocab",
     "paper_row": "t2.custom.ams", # the paper row it stands for, or None
     "tatoeba": results, "tatoeba_init": results, "un": results, "un_init": results}  # each may be None

where ``*_init`` are the results of the same encoder at update 0 (random initialization). A TF-IDF
baseline (character n-grams, no learning) on the same sentences may be added (:func:`table2_rows`).

A UN column is the P@1 of one language (:data:`UN_LANGUAGES`), the UN average only when all four are
there. A Tatoeba column is the mean accuracy over the evaluated languages that belong to it (the 36 of
:data:`XTREME36`, or all), with the number of languages it covers: at our scale we evaluate only a few.

This module holds the table's definition; the paper values, rounding and the Markdown, CSV and LaTeX files
come from :mod:`laser_repro.reporting.paper_table`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from laser_repro.models.record import add_model_records_option, check_model_records
from laser_repro.reporting import seeds
from laser_repro.reporting.paper_table import (Document, Grid, csv_frame, fmt1, fmt2, load_checked_json, mean,
                                               models_argument, read_paper_values, round2, write_files)

PAPER = "Feng et al. 2020 (LaBSE)"
#: the paper's values: laser_repro/paper_values/<PAPER_DIR>/<PAPER_CSV>
PAPER_DIR = "labse_2020"
PAPER_CSV = "labse_2020.csv"
TABLE = 2
#: value columns of Table 2, in the paper's order
COLUMNS = ("un_es", "un_fr", "un_ru", "un_zh", "un_avg", "tatoeba_36", "tatoeba_all")
HEADERS = {"un_es": "UN es", "un_fr": "UN fr", "un_ru": "UN ru", "un_zh": "UN zh", "un_avg": "UN avg",
           "tatoeba_36": "Tatoeba 36", "tatoeba_all": "Tatoeba all"}
#: the four UN columns of Table 2: our (Tatoeba-style ISO 639-3) code -> the paper's column
UN_LANGUAGES = {"spa": "es", "fra": "fr", "rus": "ru", "cmn": "zh"}
#: XTREME's 36 Tatoeba languages (Hu et al. 2020), its ISO 639-1 code -> the code of the Tatoeba test
#: set's files (``tatoeba.<code>-eng.*``)
XTREME36_ISO1 = {
    "af": "afr", "ar": "ara", "bg": "bul", "bn": "ben", "de": "deu", "el": "ell", "es": "spa", "et": "est",
    "eu": "eus", "fa": "pes", "fi": "fin", "fr": "fra", "he": "heb", "hi": "hin", "hu": "hun", "id": "ind",
    "it": "ita", "ja": "jpn", "jv": "jav", "ka": "kat", "kk": "kaz", "ko": "kor", "ml": "mal", "mr": "mar",
    "nl": "nld", "pt": "por", "ru": "rus", "sw": "swh", "ta": "tam", "te": "tel", "th": "tha", "tl": "tgl",
    "tr": "tur", "ur": "urd", "vi": "vie", "zh": "cmn"}
XTREME36 = tuple(XTREME36_ISO1.values())
#: how many languages the paper's columns average
PAPER_N = {"un_es": 1, "un_fr": 1, "un_ru": 1, "un_zh": 1, "un_avg": 4, "tatoeba_36": 36, "tatoeba_all": 112}
#: the paper's UN candidate pool: 11.3M aligned pairs (about 9.5M after de-duping, its footnote 14)
PAPER_UN_CANDIDATES = "11.3M"
TASKS = ("tatoeba", "un")
RESULT_KEYS = ("tatoeba", "tatoeba_init", "un", "un_init")
TFIDF_LABEL = "TF-IDF (character n-grams, no learning)"
CSV_FIELDS = ("table", "row", "model", "column", "ours", "paper", "n", "source")


def paper_rows() -> list[dict]:
    """Table 2's rows in the paper's order: ``{"row_id", "block", "system", "values": {column: float or
    None for a printed '-'}, "source": {column: source}}``."""
    rows: dict[str, dict] = {}
    for line in read_paper_values(PAPER_DIR, PAPER_CSV):
        row = rows.setdefault(line["row_id"], {"row_id": line["row_id"], "block": line["block"],
                                               "system": line["system"], "values": {}, "source": {}})
        row["values"][line["column"]] = float(line["value"]) if line["value"] else None
        row["source"][line["column"]] = line["source"]
    return list(rows.values())


def paper_row_ids() -> list[str]:
    return [row["row_id"] for row in paper_rows()]


# ---- values -----------------------------------------------------------------------------------------------
def check_results(results: Mapping | None, task: str, what: str) -> None:
    """Raise ValueError (naming ``what``: a file or a model's key) unless ``results`` are retrieval results
    of ``task``."""
    if results is None:
        return
    if not isinstance(results, Mapping) or not isinstance(results.get("results"), Mapping):
        raise ValueError(f"{what}: not retrieval results (no 'results' mapping)")
    if results.get("task") != task:
        raise ValueError(f"{what}: results of task {results.get('task')!r}, expected {task!r}")
    for lang, res in results["results"].items():
        if not isinstance(res, Mapping) or not isinstance(res.get("error"), (int, float)):
            raise ValueError(f"{what}: language {lang!r} has no numeric 'error'")


def _accuracies(results: Mapping | None) -> dict[str, float]:
    """Language -> 100 - error (accuracy or P@1)."""
    if results is None:
        return {}
    return {lang: 100.0 - float(res["error"]) for lang, res in results["results"].items()}


def un_values(results: Mapping | None) -> dict:
    """``un_es`` ... ``un_zh``: P@1 (None where not evaluated); ``un_avg``: their mean, only when all four
    are there; ``un_n``: languages per column (1 or 0; the average: 4 or 0)."""
    acc = _accuracies(results)
    out: dict = {}
    for lang, col in UN_LANGUAGES.items():
        out[f"un_{col}"] = acc.get(lang)
        out[f"un_{col}_n"] = int(lang in acc)
    complete = all(lang in acc for lang in UN_LANGUAGES)
    out["un_avg"] = mean([acc[lang] for lang in UN_LANGUAGES]) if complete else None
    out["un_avg_n"] = len(UN_LANGUAGES) if complete else 0
    return out


def tatoeba_values(results: Mapping | None) -> dict:
    """``tatoeba_36``: mean accuracy over the evaluated languages of :data:`XTREME36`; ``tatoeba_all``:
    over all evaluated languages; ``tatoeba_36_n`` / ``tatoeba_all_n``: how many languages each covers;
    ``tatoeba_36_languages`` / ``tatoeba_all_languages``: which."""
    acc = _accuracies(results)
    in36 = [lang for lang in acc if lang in XTREME36]
    return {"tatoeba_36": mean([acc[lang] for lang in in36]), "tatoeba_36_n": len(in36),
            "tatoeba_36_languages": sorted(in36),
            "tatoeba_all": mean(list(acc.values())), "tatoeba_all_n": len(acc),
            "tatoeba_all_languages": sorted(acc)}


def _un_sentences(results: Mapping | None) -> dict[str, int]:
    if results is None:
        return {}
    return {lang: res["n"] for lang, res in results["results"].items() if lang in UN_LANGUAGES and "n" in res}


def _row(row: str, kind: str, model: str, label: str, tatoeba: Mapping | None, un: Mapping | None,
         paper_row: str | None = None) -> dict:
    out = {"row": row, "kind": kind, "model": model, "label": label, "paper_row": paper_row,
           **un_values(un), **tatoeba_values(tatoeba), "un_sentences": _un_sentences(un),
           "directions": sorted({r["direction"] for r in (tatoeba, un) if r and r.get("direction")}),
           "paper": {}, "paper_source": {}}
    if paper_row is not None:
        ref = next(r for r in paper_rows() if r["row_id"] == paper_row)
        out["paper"], out["paper_source"] = dict(ref["values"]), dict(ref["source"])
        out["paper_system"] = f"{ref['block']}: {ref['system']}"
    return out


def _check_models(models: Sequence[Mapping]) -> None:
    names = [m.get("name") for m in models]
    if any(not n for n in names) or len(set(names)) != len(names):
        raise ValueError(f"every model needs a distinct name, got {names}")
    known = paper_row_ids()
    for m in models:
        if m.get("paper_row") is not None and m["paper_row"] not in known:
            raise ValueError(f"model {m['name']}: unknown paper_row {m['paper_row']!r}; the rows of {PAPER} "
                             f"Table 2 are {', '.join(known)}")
        for key in RESULT_KEYS:
            check_results(m.get(key), key.split("_")[0], f"model {m['name']} {key!r}")


def table2_rows(models: Sequence[Mapping], tfidf_tatoeba: Mapping | None = None,
                tfidf_un: Mapping | None = None) -> list[dict]:
    """Our rows of Table 2: per model one ``ours`` row (with the paper's values of its ``paper_row`` in
    ``paper``) and, when it has init results, one ``init`` row ("<description> at update 0 (random
    init)"); then the TF-IDF row when TF-IDF results are given. Every row has the seven columns
    (:data:`COLUMNS`, None where there is no value) and ``<column>_n``, the languages each averages."""
    models = list(models)
    _check_models(models)
    check_results(tfidf_tatoeba, "tatoeba", "TF-IDF Tatoeba results")
    check_results(tfidf_un, "un", "TF-IDF UN results")
    rows = []
    for m in models:
        description = m.get("description") or m["name"]
        rows.append(_row(f"ours.{m['name']}", "ours", m["name"], description, m.get("tatoeba"), m.get("un"),
                         m.get("paper_row")))
        if m.get("tatoeba_init") is not None or m.get("un_init") is not None:
            # a pre-trained model's update 0 is the pre-trained encoder, not a random one
            start = "pre-trained, before dual training" if m.get("pretrained") else "random init"
            rows.append(_row(f"ours.{m['name']}.init", "init", m["name"],
                             f"{description} at update 0 ({start})", m.get("tatoeba_init"), m.get("un_init")))
    if tfidf_tatoeba is not None or tfidf_un is not None:
        rows.append(_row("tfidf", "tfidf", "tfidf", TFIDF_LABEL, tfidf_tatoeba, tfidf_un))
    return rows


def csv_lines(rows: Sequence[Mapping]) -> list[dict]:
    """One line per (row, column): first the paper's nine rows (``ours`` empty), then ours. ``n`` is the
    number of languages the value averages (the paper's: 1, 4, 36, 112)."""
    lines = []
    for ref in paper_rows():
        for col in COLUMNS:
            lines.append({"table": TABLE, "row": ref["row_id"], "model": "", "column": col, "ours": None,
                          "paper": ref["values"][col], "n": PAPER_N[col], "source": ref["source"][col]})
    for row in rows:
        for col in COLUMNS:
            source = row["paper_source"].get(col) or f"ours only ({row['kind']}: no paper row)"
            lines.append({"table": TABLE, "row": row["row"], "model": row["model"], "column": col,
                          "ours": round2(row[col]), "paper": row["paper"].get(col),
                          "n": row[f"{col}_n"], "source": source})
    return lines


# ---- Markdown and LaTeX ---------------------------------------------------------------------------------
def _paper_grid() -> Grid:
    return Grid.of(["block", "system", *(HEADERS[c] for c in COLUMNS)],
                   [[ref["block"], ref["system"], *(fmt1(ref["values"][c], "–") for c in COLUMNS)] for ref in paper_rows()],
                   "ll" + "r" * len(COLUMNS), caption="the paper's Table 2")


def _ours_cell(row: Mapping, col: str) -> str:
    if row["paper_row"] is None:
        return fmt2(row[col], "–")
    return f"{fmt2(row[col], '–')} / {fmt1(row['paper'].get(col), '–')}"


def _our_grid(rows: Sequence[Mapping]) -> Grid:
    heads = []
    for col in COLUMNS:
        heads.append(f"{HEADERS[col]} (ours / paper)")
        if col.startswith("tatoeba"):
            heads.append(f"n ({HEADERS[col].split()[1]})")
    cells = []
    for row in rows:
        line = [f"`{row['model']}`", row["label"], f"`{row['paper_row']}`" if row["paper_row"] else ""]
        for col in COLUMNS:
            line.append(_ours_cell(row, col))
            if col.startswith("tatoeba"):
                line.append(f"{row[f'{col}_n']} of {PAPER_N[col]}")
        cells.append(line)
    return Grid.of(["model", "system", "paper row", *heads], cells, "lll" + "r" * len(heads),
                   caption="ours beside the paper (ours / paper)")


def _intro(run_name: str) -> str:
    return (f"Bitext retrieval of {PAPER}, Table 2: for every non-English sentence, its nearest English "
            f"sentence by cosine; UN columns: P@1 (%), Tatoeba columns: average accuracy (%) over languages "
            f"(both 100 − error). Run `{run_name}`.")


def _notes(rows: Sequence[Mapping]) -> str:
    sizes = sorted({n for row in rows for n in row["un_sentences"].values()})
    ours_un = (f"the given UN test set ({', '.join(map(str, sizes))} sentences per language)" if sizes
               else "the given UN test set")
    return (f"- **UN**: the paper's P@1 searches each sentence's translation among the whole UN corpus "
            f"(~{PAPER_UN_CANDIDATES} aligned pairs as candidates, about 9.5M after de-duping), ours among "
            f"{ours_un}: the absolute values are not comparable, only the ranking of the variants is. "
            f"UN avg is given only where all four languages (es, fr, ru, zh) were evaluated.\n"
            f"- **Tatoeba**: the paper's columns average 36 languages (XTREME) and all 112; ours average only "
            f"the evaluated languages, n of them (n columns; the languages are listed below).\n"
            f"- Each cell of a row that stands for a paper row: **ours / paper**; rows without a paper row "
            f"(random init = the same encoder at update 0, TF-IDF = character n-gram TF-IDF cosine of the raw "
            f"sentences, no learning) show ours alone; – = no value.")


def _model_list(rows: Sequence[Mapping]) -> str:
    lines = []
    for row in rows:
        langs = row["tatoeba_all_languages"]
        tatoeba = (", ".join(f"{lang}{'*' if lang in XTREME36 else ''}" for lang in langs)
                   if langs else "none")
        un = ", ".join(f"{lang} ({n})" for lang, n in sorted(row["un_sentences"].items())) or "none"
        stands = (f"stands for {row['paper_system']} (`{row['paper_row']}`)" if row["paper_row"]
                  else "no paper row")
        direction = f"; direction {', '.join(row['directions'])}" if row["directions"] else ""
        lines.append(f"- `{row['row']}` — {row['label']}: {stands}; Tatoeba languages: {tatoeba}; "
                     f"UN languages (sentences): {un}{direction}")
    return "\n".join(lines) + "\n\n\\* = one of the 36 XTREME languages."


def write_table2(rows: Sequence[Mapping], md_path, csv_path, run_name: str) -> list[Path]:
    """``md_path``: the paper's Table 2 as printed, then our rows with ours beside the paper's values and
    the notes on what differs; ``csv_path``: :func:`csv_lines`; the LaTeX beside the Markdown. Returns the
    written paths."""
    rows = list(rows)
    lines, fields = seeds.seed_columns(csv_lines(rows), CSV_FIELDS)
    title = f"{PAPER}, Table 2 — UN (P@1) and Tatoeba (average accuracy), run `{run_name}`"
    doc = Document(caption=title)
    doc.add(f"# {title}\n\n", _intro(run_name) + "\n\n", "## The paper's Table 2\n\n", _paper_grid(),
            "\n– = printed '-' (not reported). The +PT row's UN avg is printed \"66,5\" (a comma typo for 66.5, "
            "the mean of its four UN values). Source of every cell: `paper_values/labse_2020/labse_2020.csv`.\n",
            "\n## Ours beside the paper\n\n", _notes(rows) + "\n\n")
    if seeds.has_replicates(rows):
        doc.add(seeds.NOTE + "\n\n")
    if rows:
        doc.add(_our_grid(rows), "\nOur rows:\n\n" + _model_list(rows) + "\n")
    else:
        doc.add("No model of ours.\n")
    frame = csv_frame([{k: fmt2(line[k], missing="") for k in fields} for line in lines], fields)
    return write_files(doc, frame, md_path, csv_path)


# ---- command line -----------------------------------------------------------------------------------------
def load_results(path, task: str) -> dict | None:
    """Retrieval results of ``task`` from ``path`` (None for None); ValueError naming the file otherwise."""
    return load_checked_json(path, lambda data, what: check_results(data, task, what), "results file")


def load_models(specs: Sequence[Mapping]) -> list[dict]:
    """``--models`` entries (result keys are paths or null) -> :func:`table2_rows`'s models."""
    models = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise ValueError(f"--models: every entry must be an object, got {spec!r}")
        unknown = set(spec) - {"name", "description", "paper_row", "pretrained", *RESULT_KEYS}
        if unknown:
            raise ValueError(f"--models entry {spec.get('name')!r}: unknown keys {sorted(unknown)}")
        model = {k: spec.get(k) for k in ("name", "description", "paper_row", "pretrained")}
        for key in RESULT_KEYS:
            model[key] = load_results(spec.get(key), key.split("_")[0])
        models.append(model)
    return models


def cmd_table2(a):
    try:
        if a.model_records is not None:
            check_model_records(a.model_records)
        tfidf_tatoeba, tfidf_un = load_results(a.tfidf_tatoeba, "tatoeba"), load_results(a.tfidf_un, "un")
        # once per seed (a model's seed_replicates: the result files of its further seeds), then mean ± sd
        rows = seeds.over_seeds([table2_rows(load_models(specs), tfidf_tatoeba, tfidf_un)
                                 for specs in seeds.per_seed_specs(models_argument(a.models))])
    except (OSError, ValueError) as e:
        raise SystemExit(f"labse-table2: {e}") from e
    for path in write_table2(rows, a.md, a.csv, a.run_name):
        print(path)


def add_cli(sub) -> None:
    s = sub.add_parser("labse-table2", help="Feng et al. 2020 (LaBSE) Table 2: our UN P@1 and Tatoeba accuracies "
                                            "beside the paper's, with the random-init and TF-IDF baselines")
    add_model_records_option(s)
    s.add_argument("--models", required=True, metavar="JSON",
                   help='a JSON list (or a file holding it): [{"name", "description", "paper_row", "tatoeba", '
                        '"tatoeba_init", "un", "un_init"}, ...], the last four paths to retrieval results or null')
    s.add_argument("--tfidf-tatoeba", metavar="PATH", help="TF-IDF retrieval results on Tatoeba (optional)")
    s.add_argument("--tfidf-un", metavar="PATH", help="TF-IDF retrieval results on UN (optional)")
    s.add_argument("--md", required=True, help="the Markdown table to write")
    s.add_argument("--csv", required=True, help="the CSV to write")
    s.add_argument("--run-name", required=True)
    s.set_defaults(func=cmd_table2)
