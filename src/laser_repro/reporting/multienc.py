"""Schwenk & Douze (2017), Tables 1-4: our similarity errors beside the published ones.

The paper's values are in ``paper_values/schwenk_douze_2017/schwenk_douze_2017.csv`` (one line per printed cell, with its
source). Each of our trained models is one *results entry*::

    {"name": "bilstm_all", "description": "BiLSTM 1x64 max-pool, efsraz-all",
     "paper_rows": ["t1.bilstm1x512.efsrz-all", "t4.*"],   # the paper rows it stands for (fnmatch patterns)
     "similarity": similarity_error_matrix(...),            # on the eval set
     "init": similarity_error_matrix(...) or None}          # the same encoder at its random initialization

A column of Tables 1-3 is a language subset (``efsr`` = eng, fra, spa, rus) and its value the mean
similarity error over the ordered pairs among those languages
(:func:`laser_repro.evaluation.xsim.mean_over`); a model without an encoder for one of them has no value
there, as the paper's 1:1 systems. Table 4 is the matrix of one model, source rows x target columns.

This module holds the tables' definitions; the paper values, rounding, Δ and the Markdown, CSV and LaTeX
files come from :mod:`laser_repro.reporting.paper_table`.
"""
from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path
from typing import Mapping, Sequence

from laser_repro.models.record import add_model_records_option, require_model_records
from laser_repro.evaluation.xsim import mean_over
from laser_repro.models.similarity import pair_key
from laser_repro.reporting import seeds
from laser_repro.reporting.paper_table import (Document, Grid, csv_frame, delta, fixed2, fmt2, number,
                                               read_paper_values, round2, write_files)

PAPER = "Schwenk & Douze 2017"
#: the paper's values: laser_repro/paper_values/<PAPER_DIR>/<PAPER_CSV>
PAPER_DIR = "schwenk_douze_2017"
PAPER_CSV = "schwenk_douze_2017.csv"
#: the paper's letters (Table 1 caption) and our ISO 639-3 codes
LETTERS = {"e": "eng", "f": "fra", "s": "spa", "r": "rus", "a": "ara", "z": "cmn"}
LANGUAGES = tuple(LETTERS.values())
#: value columns of each table, in the paper's order
TABLE_COLUMNS = {1: ("efs", "efsr", "efsra", "efsraz"), 2: ("efsra",),
                 3: ("inputs_1", "inputs_2", "inputs_3", "similarity_error"), 4: (*LANGUAGES, "all")}
#: Table 3's error is that of system efs-a on its three input languages
COLUMN_SUBSETS = {"efs": "efs", "efsr": "efsr", "efsra": "efsra", "efsraz": "efsraz", "similarity_error": "efs"}
TITLES = {1: "average similarity error of one-to-one and one-to-many systems over 3-6 languages",
          2: "LSTM and BLSTM encoders of different size and depth, error on the five languages efsra",
          3: "M:1 strategies for three input languages (system efs-a)",
          4: "pair-wise similarity error of six languages"}
HEADERS = {"efs": "efs", "efsr": "efsr", "efsra": "efsra", "efsraz": "efsraz", "inputs_1": "1 input",
           "inputs_2": "2 inputs", "inputs_3": "3 inputs", "similarity_error": "error (efs)", "all": "All"}
CSV_FIELDS = ("table", "row_id", "block", "system", "column", "paper", "ours", "delta", "init", "tfidf", "model")
#: the paper's evaluation set: UN Dev, 4000 sentences, 6-way parallel
PAPER_SENTENCES = 4000


def subset_languages(letters: str) -> list[str]:
    """``"efsr"`` -> ``["eng", "fra", "spa", "rus"]``."""
    return [LETTERS[ch] for ch in letters]


def paper_rows(table: int) -> list[dict]:
    """The rows of one paper table in the paper's order: ``{"row_id", "block", "system", "printed":
    {column: value as printed, "" for a dash}, "source": {column: source}}``."""
    rows: dict[str, dict] = {}
    for line in read_paper_values(PAPER_DIR, PAPER_CSV):
        if int(line["table"]) != table:
            continue
        row = rows.setdefault(line["row_id"], {"row_id": line["row_id"], "block": line["block"],
                                               "system": line["system"], "printed": {}, "source": {}})
        row["printed"][line["column"]] = line["value"]
        row["source"][line["column"]] = line["source"]
    return list(rows.values())


# ---- values -----------------------------------------------------------------------------------------------
def _mean(matrix: Mapping | None, languages: Sequence[str]) -> float | None:
    if matrix is None:
        return None
    try:
        return mean_over(matrix, languages)
    except KeyError:  # no encoder for one of the languages
        return None


def _pairs_mean(matrix: Mapping | None, keys: list[str]) -> float | None:
    if matrix is None or any(k not in matrix["pairs"] for k in keys):
        return None
    return sum(matrix["pairs"][k] for k in keys) / len(keys)


def cell_value(table: int, row_id: str | None, column: str, matrix: Mapping | None) -> float | None:
    """Our value of one cell from a similarity-error matrix (None where it has none)."""
    if matrix is None:
        return None
    if table == 4:
        src = row_id.split(".", 1)[1] if row_id else "all"
        if src != "all" and column != "all":
            return None if src == column else matrix["pairs"].get(pair_key(src, column))
        if src == "all" and column == "all":
            return _mean(matrix, LANGUAGES)
        if column == "all":  # the mean over the targets of one source
            return _pairs_mean(matrix, [pair_key(src, q) for q in LANGUAGES if q != src])
        return _pairs_mean(matrix, [pair_key(p, column) for p in LANGUAGES if p != column])
    if column not in COLUMN_SUBSETS:  # Table 3's coefficients: nothing of ours
        return None
    return _mean(matrix, subset_languages(COLUMN_SUBSETS[column]))


def claims(result: Mapping, row_id: str) -> bool:
    """Whether a results entry stands for a paper row (its ``paper_rows`` are fnmatch patterns: ``t4.*``)."""
    return any(fnmatch(row_id, pattern) for pattern in result.get("paper_rows") or ())


def _check_results(results: Sequence[Mapping]) -> None:
    names = [r.get("name") for r in results]
    if any(not n for n in names) or len(set(names)) != len(names):
        raise ValueError(f"every results entry needs a distinct name, got {names}")
    ids = [line["row_id"] for line in read_paper_values(PAPER_DIR, PAPER_CSV)]
    for r in results:
        if not isinstance(r.get("similarity"), Mapping) or "pairs" not in r["similarity"]:
            raise ValueError(f"results entry {r['name']}: no similarity-error matrix ('similarity')")
        for pattern in r.get("paper_rows") or ():
            if not any(fnmatch(i, pattern) for i in ids):
                raise ValueError(f"results entry {r['name']}: paper row {pattern!r} matches no row of "
                                 f"{PAPER_CSV}")


def table_cells(table: int, results: Sequence[Mapping], tfidf: Mapping | None) -> list[dict]:
    """The CSV lines of one table: every paper row with every column (repeated per model claiming it),
    then (Tables 1 and 2) our models that claim no paper row."""
    cells = []

    def add(row: dict, result: Mapping | None, printed: Mapping[str, str]) -> None:
        similarity = None if result is None else result["similarity"]
        init = None if result is None else result.get("init")
        for column in TABLE_COLUMNS[table]:
            paper = number(printed.get(column, ""))
            ours = round2(cell_value(table, row["row_id"], column, similarity))
            cells.append({
                "table": table, "row_id": row["row_id"], "block": row["block"], "system": row["system"],
                "column": column, "paper": printed.get(column, ""), "ours": ours,
                "delta": delta(ours, paper),
                "init": round2(cell_value(table, row["row_id"], column, init)),
                "tfidf": round2(cell_value(table, row["row_id"], column, tfidf)),
                "model": result["name"] if result else ""})

    for row in paper_rows(table):
        claimants = [r for r in results if claims(r, row["row_id"])]
        for result in claimants or [None]:
            add(row, result, row["printed"])
    if table in (1, 2):
        for result in results:
            if not result.get("paper_rows"):
                add({"row_id": f"ours.{result['name']}", "block": "(ours only)",
                     "system": result.get("description") or result["name"]}, result, {})
    return cells


# ---- Markdown and LaTeX ------------------------------------------------------------------------------------
def _signed(value: float) -> str:
    return f"{value:+.2f}".replace("-", "−")


def _md_cell(cell: dict, *, with_delta: bool = True) -> str:
    """Claimed rows: ``ours (paper; Δ)``; paper rows nobody claims: the paper's value alone."""
    paper = cell["paper"] or "–"
    if not cell["model"]:
        return paper
    if cell["block"] == "(ours only)":
        return fixed2(cell["ours"])
    if cell["ours"] is None and not cell["paper"]:
        return "–"
    delta = f"; Δ {_signed(cell['delta'])}" if with_delta and cell["delta"] is not None else ""
    return f"{fixed2(cell['ours'])} ({paper}{delta})"


def _rows_of(cells: list[dict]) -> list[list[dict]]:
    """Cells grouped by (row, model) in order."""
    rows: dict[tuple, list[dict]] = {}
    for cell in cells:
        rows.setdefault((cell["row_id"], cell["model"]), []).append(cell)
    return list(rows.values())


def _sentences(results: Sequence[Mapping], tfidf: Mapping | None) -> str:
    sizes = {r["name"]: r["similarity"].get("sentences") for r in results}
    if tfidf is not None:
        sizes["TF-IDF"] = tfidf.get("sentences")
    distinct = set(sizes.values())
    if not distinct:
        return "no model of ours"
    if len(distinct) == 1:
        return f"S = {distinct.pop()} sentences per language"
    return "S = " + ", ".join(f"{n} ({name})" for name, n in sizes.items()) + " sentences per language"


def _intro(table: int, results: Sequence[Mapping], tfidf: Mapping | None, run_name: str) -> str:
    what = {4: "Each cell: **ours (paper)**, the error (%) searching the column's language with the row's "
               "sentences; *All* = mean over the other five languages (row: targets, last row: sources), "
               "*All/All* = mean over the 30 ordered pairs.",
            3: "The coefficients (1, 2, 3 inputs) are the paper's resampling coefficients of the 1:1, 2:1 and "
               "3:1 mini-batches; the error is that of system efs-a, over the 6 ordered pairs of eng, fra, spa."}
    text = (f"Similarity error (%) of {PAPER} (Algorithm 1): for every ordered language pair (p, q), p ≠ q, and "
            f"every sentence of p, its nearest neighbour by cosine among all S sentences of q; an error when it "
            f"is not its translation. A column named by letters (e=eng, f=fra, s=spa, r=rus, a=ara, z=cmn) is "
            f"the mean over the ordered pairs among its languages (the paper's \"#pairs\" 6, 10, 15, 21 count "
            f"unordered pairs, but its footnotes and Table 4 average the ordered ones, n(n−1)). Our eval set: "
            f"{_sentences(results, tfidf)}; the paper's figures are on UN Dev (S = {PAPER_SENTENCES}, six-way "
            f"parallel), so the absolute values are comparable only in the paper configuration. "
            f"{what.get(table, '')} Rows one of our models stands for show **ours (paper; Δ = ours − paper)**; "
            f"the other paper rows the paper's value alone; – = no value (no encoder for one of the column's "
            f"languages, or not reported). Baselines on the same sentences: *random init* = the same encoder "
            f"at its initialization (0 updates), *TF-IDF* = character 1–4-gram TF-IDF cosine of the raw "
            f"sentences (no learning). Run `{run_name}`.")
    if results:
        text += "\n\nOur models:\n" + "\n".join(
            f"- `{r['name']}`: {r.get('description') or ''}"
            f" (stands for: {', '.join(r.get('paper_rows') or []) or 'no paper row'})" for r in results)
    return text


def _baseline_row(label: str, cells: list[dict], key: str, lead: int) -> list[str]:
    return [label] + [""] * (lead - 1) + [fixed2(c[key]) for c in cells]


def _rows_grid(table: int, cells: list[dict], results: Sequence[Mapping], tfidf) -> Grid:
    columns = TABLE_COLUMNS[table]
    with_init = {r["name"] for r in results if r.get("init") is not None}
    lines = []
    for row in _rows_of(cells):
        first = row[0]
        model = f"`{first['model']}`" if first["model"] else ""
        lines.append([first["block"], first["system"], model, *(_md_cell(c) for c in row)])
        if first["model"] in with_init:
            lines.append(_baseline_row("↳ random init", row, "init", 3))
    if tfidf is not None:
        lines.append(_baseline_row("TF-IDF (no learning)", _rows_of(cells)[0], "tfidf", 3))
    return Grid.of(["block", "system", "model", *(HEADERS[c] for c in columns)], lines, "lll" + "r" * len(columns))


def _matrix_grids(cells: list[dict], results: Sequence[Mapping], tfidf) -> list:
    """Table 4: ours (paper) as source rows x target columns, then each model's random init and TF-IDF, each
    a grid after a line saying which."""
    columns = TABLE_COLUMNS[4]
    header = ["source \\ target", *(HEADERS.get(c, c) for c in columns)]
    align = "l" + "r" * len(columns)
    rows = _rows_of(cells)
    out: list = [Grid.of(header, [[row[0]["system"], *(_md_cell(c, with_delta=False) for c in row)] for row in rows],
                         align, caption="ours (paper)")]
    models = list(dict.fromkeys(c["model"] for c in cells if c["model"]))
    for name in models:
        init = next((r.get("init") for r in results if r["name"] == name), None)
        if init is None:
            continue
        out += [f"\nRandom init of `{name}`:\n\n",
                Grid.of(header, [[row[0]["system"], *(fixed2(c["init"]) if c["model"] == name else "·" for c in row)]
                                 for row in rows], align, caption=f"random init of `{name}`")]
    if tfidf is not None:
        out += ["\nTF-IDF (no learning):\n\n",
                Grid.of(header, [[row[0]["system"], *(fixed2(c["tfidf"]) for c in row)] for row in rows], align,
                        caption="TF-IDF (no learning)")]
    return out


def write_tables(results: Sequence[Mapping], tfidf: Mapping | None, out_dir, *, run_name: str,
                 seed_results: Sequence[Sequence[Mapping]] = ()) -> list[Path]:
    """``table1.md/.csv/.tex`` ... ``table4.md/.csv/.tex`` in ``out_dir``: every paper row of Schwenk & Douze 2017
    Tables 1-4, ours beside the rows our models claim (see the module docstring), the random-init and
    TF-IDF baselines on the same sentences. ``seed_results``: the same models' results of every further
    seed (config `seeds`): each cell becomes mean ± sd over the seeds. Returns the written paths."""
    results = list(results)
    for r in [results, *seed_results]:
        _check_results(r)
    out_dir = Path(out_dir)
    written = []
    for table in (1, 2, 3, 4):
        cells = seeds.over_seeds([table_cells(table, r, tfidf) for r in [results, *seed_results]])
        lines, fields = seeds.seed_columns(cells, CSV_FIELDS)
        title = f"{PAPER}, Table {table} — {TITLES[table]}, run `{run_name}`"
        doc = Document(caption=title)
        doc.add(f"# {title}\n\n", _intro(table, results, tfidf, run_name) + "\n\n")
        if seeds.has_replicates(cells):
            doc.add(seeds.NOTE + "\n\n")
        doc.add(*(_matrix_grids(cells, results, tfidf) if table == 4 else [_rows_grid(table, cells, results, tfidf)]))
        frame = csv_frame([{k: fmt2(c[k], missing="") for k in fields} for c in lines], fields)
        written += write_files(doc, frame, out_dir / f"table{table}.md", out_dir / f"table{table}.csv")
    return written


# ---- command line -----------------------------------------------------------------------------------------
def cmd_tables(a):
    """Our models' entries: the label and paper rows from the config (``--models``, in the order of
    ``--similarity``), the scores from each model's similarity JSON (``laser-repro similarity``)."""
    import json

    from laser_repro.core.textio import read_json

    require_model_records(a.model_records, "multienc-tables")
    models = json.loads(a.models)  # a list, in the order of --similarity
    if len(models) != len(a.similarity):
        raise SystemExit(f"multienc-tables: {len(models)} models but {len(a.similarity)} --similarity files")
    if len(a.tfidf) > 1:
        raise SystemExit("multienc-tables: the models were validated on different sentences "
                         f"({', '.join(a.tfidf)}): one table compares models on the same N-way data")
    try:  # the first seed's files: --similarity; a further seed's: each model's seed_replicates
        per_seed = seeds.per_seed_specs([{"similarity": path, **spec} for spec, path in zip(models, a.similarity)])
    except ValueError as err:
        raise SystemExit(f"multienc-tables: {err}") from None
    by_seed = []
    for specs in per_seed:
        results = []
        for spec in specs:
            scores = read_json(spec["similarity"])
            results.append({"name": spec["name"], "description": spec.get("description") or spec["name"],
                            "paper_rows": list(spec.get("paper_rows", [])),
                            "similarity": scores["similarity"], "init": scores.get("init")})
        by_seed.append(results)
    tfidf = read_json(a.tfidf[0]) if a.tfidf else None
    try:
        paths = write_tables(by_seed[0], tfidf, a.out_dir, run_name=a.run_name, seed_results=by_seed[1:])
    except ValueError as err:
        raise SystemExit(f"multienc-tables: {err}") from None
    for path in paths:
        print(path)


def add_cli(sub) -> None:
    s = sub.add_parser("multienc-tables", help="Schwenk & Douze 2017 Tables 1-4: our similarity errors "
                                               "beside the paper's, with the random-init and TF-IDF baselines")
    s.add_argument("--similarity", nargs="+", required=True, metavar="JSON",
                   help="per model: {similarity, init} (laser-repro similarity)")
    add_model_records_option(s)
    s.add_argument("--models", required=True, metavar="JSON",
                   help='[{"name", "description", "paper_rows"}, ...] in the order of --similarity; a model\'s '
                        'optional "seed_replicates": [{"similarity": JSON}, ...], one per further seed')
    s.add_argument("--tfidf", nargs="*", default=[], metavar="JSON", help="the TF-IDF baseline's similarity-error matrix")
    s.add_argument("--out-dir", required=True, help="writes table1.md/.csv ... table4.md/.csv")
    s.add_argument("--run-name", required=True)
    s.set_defaults(func=cmd_tables)
