"""LASER's paper tables (Artetxe & Schwenk 2019, TACL): Tables 1 and 9 (Tatoeba), 2 and 8 (XNLI), 3 (MLDoc),
4 (BUCC), the WMT similarity table and the FLORES xsim table, our numbers beside the published ones.

Only the tables' definitions are here (rows, columns, notes); the paper values, rounding, Δ and the Markdown,
CSV and LaTeX files come from :mod:`laser_repro.reporting.paper_table`, the base every paper's reporter shares.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

from laser_repro.core import languages
from laser_repro.reporting.paper_table import (Document, Grid, csv_frame, delta, fmt1, fmt2, mean,
                                               number as _number, read_paper_values, round2, write_files,
                                               write_table)

#: the folder of laser_repro/paper_values holding the TACL 2019 values
PAPER = "laser_2019"
#: the caption's reference to the paper
TACL = "Artetxe & Schwenk 2019 (TACL)"
PAPER_TABLE1 = "paper_table1.csv"
PAPER_TABLE9 = "paper_table9_tatoeba_unseen.csv"
PAPER_TABLE8 = "paper_table8_xnli_cross.csv"
#: the columns of the paper CSVs that hold a value printed in the paper (TACL 2019)
PAPER_VALUE_COLUMNS = ("accuracy", "value", "en_xx_error", "xx_en_error", "train_sentences", "test_sentences")
#: the second value column of Tables 2-4: the LASER repository README's re-run (not the paper's values)
README_RERUN = "laser_readme_rerun"


def read_paper_csv(name: str) -> list[dict]:
    """Rows of one of the paper's value files (``laser_repro/paper_values/laser_2019/``)."""
    return read_paper_values(PAPER, name)


def load_paper_tatoeba() -> dict[str, dict]:
    """The paper's Tatoeba errors keyed by our language code: Table 1 (its 93 training languages),
    then Table 9 (test languages it had no training data for). None where the paper prints n/a."""
    rows = {}
    for table, name in (("1", PAPER_TABLE1), ("9", PAPER_TABLE9)):
        for row in read_paper_csv(name):
            if row["code"] in rows:
                continue
            rows[row["code"]] = {
                "train_sentences": _number(row.get("train_sentences"), int),
                "en_xx_error": _number(row.get("en_xx_error")),
                "xx_en_error": _number(row.get("xx_en_error")),
                "test_sentences": _number(row.get("test_sentences"), int),
                "paper_table": table,
                "paper_code": row.get("paper_code") or None,
                "source": row["source"],
            }
    return rows


def load_paper_table1() -> dict[str, dict]:
    """TACL 2019 Table 1 rows keyed by our language code (values None where the paper prints n/a)."""
    return {code: row for code, row in load_paper_tatoeba().items() if row["paper_table"] == "1"}


def table1_rows(results: Mapping[str, dict], train_sizes: Mapping[str, int]) -> list[dict]:
    """One row per evaluated language: training size, our errors, test size, paper values, deltas."""
    paper = load_paper_tatoeba()
    rows = []
    for code, res in results.items():
        ref = paper.get(code, {})
        lang = languages.get(code)
        rows.append({
            "language": code,
            # the code the paper prints (Table 9 prints one for languages it had no training data for)
            "paper_code": lang.paper or ref.get("paper_code") or "",
            "name": lang.name,
            "train_sentences": train_sizes.get(code, 0),
            "en_xx_error": round(res["en_xx_error"], 2),
            "xx_en_error": round(res["xx_en_error"], 2),
            "test_sentences": res["test_sentences"],
            "paper_train_sentences": ref.get("train_sentences"),
            "paper_en_xx_error": ref.get("en_xx_error"),
            "paper_xx_en_error": ref.get("xx_en_error"),
            "paper_test_sentences": ref.get("test_sentences"),
            "paper_table": ref.get("paper_table"),
            "delta_en_xx_error": delta(res["en_xx_error"], ref.get("en_xx_error")),
            "delta_xx_en_error": delta(res["xx_en_error"], ref.get("xx_en_error")),
            # baselines on the same sentences (absent in score files of older runs)
            **{f"{base}_{d}_error": (round(res[base][f"{d}_error"], 2) if base in res else None)
               for base in BASELINES for d in ("en_xx", "xx_en")},
        })
    return rows


#: the baselines of every similarity table: TF-IDF (no learning) and the encoder at update 0
BASELINES = ("tfidf", "init")


def _both(row, prefix) -> str:
    a, b = row.get(f"{prefix}en_xx_error"), row.get(f"{prefix}xx_en_error")
    return "n/a" if a is None or b is None else f"{a:.1f} / {b:.1f}"


def _size(n: int | None) -> str:
    if n is None:
        return "n/a"
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 10_000:
        return f"{n / 1e3:.0f}k"
    return str(n)


def _paper_table_cell(row: dict) -> str:
    """"1 (af)": the paper table a language's values come from and the code printed there."""
    if not row.get("paper_table"):
        return "n/a"
    return f"{row['paper_table']} ({row['paper_code']})" if row.get("paper_code") else str(row["paper_table"])


def write_tatoeba_table(rows: list[dict], md_path: Path | str, csv_path: Path | str, *, run_name: str,
                        unseen: bool) -> None:
    """Table 1 (languages with training data) or Table 9 (Tatoeba languages without any)."""
    number = 9 if unseen else 1
    if not rows and not unseen:
        raise ValueError("Table 1: no evaluated languages")
    columns = list(rows[0]) if rows else ["language"]
    what = ("languages of the test set with **no training data** in this configuration (zero-shot)"
            if unseen else "languages with training data")
    doc = Document(caption=f"Table {number} — Tatoeba similarity error (%), {what}, run `{run_name}`; paper: {TACL} "
                           f"Tables 1 and 9",
                   latex_note="No Tatoeba language without training data is evaluated in this configuration.")
    doc.add(f"# Table {number} — Tatoeba similarity error (%), {what}, run `{run_name}`\n\n",
            "Error = share of sentences whose nearest neighbour (cosine) in the other language is not "
            "its translation; en→xx queries with English. Baselines on the same sentences: TF-IDF = "
            "character 1–4-gram TF-IDF cosine of the raw sentences (no learning), init = the same encoder "
            "at update 0 (`en→xx / xx→en`). Paper: Artetxe & Schwenk (2019), TACL, Tables 1 "
            "and 9 (93-language model; the paper column names the table a value comes from, since a "
            "language unseen here may have been a training language of the paper). Δ = ours − paper.\n\n")
    if not rows:
        doc.add("No Tatoeba language without training data is evaluated in this configuration "
                "(add some to evaluation.tatoeba.languages).\n")
        write_files(doc, csv_frame(rows, columns), md_path, csv_path)
        return
    avg = {k: sum(r[k] for r in rows) / len(rows) for k in ("en_xx_error", "xx_en_error")}
    # the paper's average over the same languages, where it reports them
    both = [r for r in rows if r["paper_en_xx_error"] is not None]
    paper_avg = {k: (sum(r["paper_" + k] for r in both) / len(both) if both else None)
                 for k in ("en_xx_error", "xx_en_error")}
    cells = [[r["language"], r["name"], _size(r["train_sentences"]), fmt2(r["en_xx_error"]), fmt2(r["xx_en_error"]),
              _both(r, "tfidf_"), _both(r, "init_"), str(r["test_sentences"]), _size(r["paper_train_sentences"]),
              fmt2(r["paper_en_xx_error"]), fmt2(r["paper_xx_en_error"]), fmt2(r["paper_test_sentences"]),
              _paper_table_cell(r), fmt2(r["delta_en_xx_error"]), fmt2(r["delta_xx_en_error"])] for r in rows]
    base_avg = {}
    for base in BASELINES:
        values = [r for r in rows if r.get(f"{base}_en_xx_error") is not None]
        base_avg[base] = ({f"{d}_error": sum(r[f"{base}_{d}_error"] for r in values) / len(values)
                           for d in ("en_xx", "xx_en")} if len(values) == len(rows) else {})
    cells.append(["**avg**", f"{len(rows)} languages", "", f"{avg['en_xx_error']:.2f}", f"{avg['xx_en_error']:.2f}",
                  _both(base_avg["tfidf"], ""), _both(base_avg["init"], ""), "", "", fmt2(paper_avg["en_xx_error"]),
                  fmt2(paper_avg["xx_en_error"]), "", "", "", ""])
    doc.add(Grid.of(["lang", "name", "train sent.", "en→xx err.", "xx→en err.", "TF-IDF", "init", "test sent.",
                     "paper train", "paper en→xx", "paper xx→en", "paper test", "paper table (code)", "Δ en→xx",
                     "Δ xx→en"], cells, "llrrrrrrrrrrlrr", compact_rows=(len(rows),)))
    if len(both) != len(rows):
        doc.add(f"\nPaper averages are over the {len(both)} languages the paper reports.\n")
    write_files(doc, csv_frame(rows, columns), md_path, csv_path)


# ---- evaluation tables (2, 3, 4, 8 and WMT similarity) ------------------------------------------------
def paper_values(name: str, key: str, value: str) -> dict:
    """{key: float value} of one of the paper CSVs (rows without a value are left out)."""
    return {row[key]: float(row[value]) for row in read_paper_csv(name) if row.get(value) not in (None, "")}


def write_wmt_table(md_path, csv_path, *, run_name: str, languages_: list[str], scores: dict | None,
                    missing: str | None, init: dict | None = None, tfidf: dict | None = None,
                    paper: tuple[float, str] | None = None) -> None:
    """Similarity error (%) per ordered pair of a WMT news test set, and the average over all pairs
    (the metric of the language-count ablation, Table 7), beside the baselines on the same sentences
    (``init``: the encoder at update 0, ``tfidf``: character n-gram TF-IDF; score files of the same
    form) and the paper's average (``paper``: value and where it is printed)."""
    test_set = (scores or {}).get("test_set") or "WMT"
    if scores is None:
        rows = [{"src": a, "trg": b, "error": None, "errors": None, "sentences": None, "status": "missing",
                 "note": missing} for a in languages_ for b in languages_ if a != b]
        rows.append({"src": "all", "trg": "all", "error": None, "paper_error": paper[0] if paper else None,
                     "status": "missing", "note": missing})
        notes = [f"**Missing:** {missing}"]
    else:
        base = {name: {(p["src"], p["trg"]): p["error"] for p in s["pairs"]} if s else {}
                for name, s in (("init", init), ("tfidf", tfidf))}
        rows = [{"src": p["src"], "trg": p["trg"], "error": round(p["error"], 2), "errors": p["errors"],
                 **{f"{name}_error": round2(base[name].get((p["src"], p["trg"]))) for name in base},
                 "sentences": scores["sentences"], "status": "ok", "note": ""} for p in scores["pairs"]]
        rows.append({"src": "all", "trg": "all", "error": round(scores["average_error"], 2), "errors": None,
                     **{f"{name}_error": round2(s["average_error"]) if s else None
                        for name, s in (("init", init), ("tfidf", tfidf))},
                     "paper_error": paper[0] if paper else None,
                     "delta": delta(scores["average_error"], paper[0] if paper else None),
                     "sentences": scores["sentences"], "status": "average", "note": f"{len(scores['pairs'])} ordered pairs"})
        notes = [f"{lang}: absent from {test_set}: {why}" for lang, why in scores.get("absent", {}).items()]
        rows += [{"src": lang, "trg": "*", "error": None, "errors": None, "sentences": None, "status": "missing",
                  "note": why} for lang, why in scores.get("absent", {}).items()]
        for name, s in (("init", init), ("tfidf", tfidf)):
            if s and s.get("sentences") != scores["sentences"]:
                raise ValueError(f"WMT table: the {name} baseline has {s.get('sentences')} sentences, the model "
                                 f"{scores['sentences']}: not the same sentences")
    for row in rows:
        row["language"] = f"{row['src']}→{row['trg']}"
    if paper:
        notes.append(f"Paper: {paper[0]:.2f} = {paper[1]} (93-language model): the multilingual similarity error "
                     f"over English, Czech, French, German and Spanish; the paper prints no per-pair values, and its "
                     f"text (Sec. 5.3) names the WMT 2014 test set. Δ = ours − paper.")
    write_table(md_path, csv_path, title=f"Similarity error on {test_set} (%), run `{run_name}`",
                caption=(f"Similarity error on {test_set} (%), run `{run_name}`; paper: {TACL}, the WMT average of "
                         f"Table 7 (no per-pair values printed)"),
                intro=("For every sentence in the query language, its nearest neighbour (cosine) among all sentences "
                       "of the other language; an error when it is not its translation. Averaged over all ordered "
                       "language pairs (used by the language-count ablation, paper Table 7). Baselines on the same "
                       "sentences: TF-IDF = character 1–4-gram TF-IDF cosine of the raw sentences (no learning), "
                       "init = the same encoder at update 0."),
                columns=[("language", "query→searched"), ("error", "ours error %"), ("errors", "errors"),
                         ("tfidf_error", "TF-IDF %"), ("init_error", "init %"), ("paper_error", "paper (TACL) %"),
                         ("delta", "Δ (ours − paper)"), ("sentences", "sentences"), ("note", "note")],
                rows=rows, notes=notes)


def _paper_source(name: str) -> str:
    """Where the values of one paper CSV come from, collapsed to their tables ("TACL 2019 Table 8", not one
    source per cell), with the row where all of a table's values share one ("..., row 'Proposed method'")."""
    tables_: dict[str, set[str]] = {}
    other: set[str] = set()
    for row in read_paper_csv(name):
        if not any(row.get(k) for k in PAPER_VALUE_COLUMNS) or not row.get("source"):
            continue
        m = re.match(r"(TACL 2019 Table \d+)(, row '[^']*')?", row["source"])
        if m:
            tables_.setdefault(m.group(1), set()).add(m.group(2) or "")
        else:
            other.add(row["source"])
    parts = [table + (next(iter(rows)) if len(rows) == 1 else "") for table, rows in tables_.items()]
    parts += sorted(other)
    return "; ".join(parts) if parts else "no published value found"


def _readme_source(name: str) -> str:
    """The sources of a paper CSV's LASER README re-run column (Tables 2-4)."""
    sources = list(dict.fromkeys(row["laser_readme_source"] for row in read_paper_csv(name)
                                 if row.get(README_RERUN) and row.get("laser_readme_source")))
    return "; ".join(sources) if sources else "none"


def _accuracy_rows(langs: list[str], scores: dict | None, paper: dict, size_key: str,
                   readme: dict | None = None) -> list[dict]:
    readme = readme or {}
    rows = []
    for code in langs:
        lang = languages.get(code)
        ours = None if scores is None else scores["test_accuracy"].get(code)
        rows.append({"language": code, "paper_code": lang.paper or "", "name": lang.name,
                     "accuracy": None if ours is None else round(ours, 2), "paper_accuracy": paper.get(code),
                     README_RERUN: readme.get(code), "delta": delta(ours, paper.get(code)),
                     "test_size": None if scores is None else scores["sizes"][size_key].get(code),
                     "status": "ok" if ours is not None else "missing"})
    return rows


def _average_row(rows: list[dict], label: str) -> dict:
    ours = [r["accuracy"] for r in rows if r["accuracy"] is not None]
    # the paper's average over the languages we have a value for (over all listed ones when we have none)
    both = [r for r in rows if (r["accuracy"] is not None or not ours) and r["paper_accuracy"] is not None]
    avg, paper = mean(ours), mean(r["paper_accuracy"] for r in both)
    # the README re-run's average over the same languages as the paper's
    readme = mean(r.get(README_RERUN) for r in both) if all(r.get(README_RERUN) is not None for r in both) else None
    return {"language": "avg", "name": label, "accuracy": None if avg is None else round(avg, 2),
            "paper_accuracy": None if paper is None else round(paper, 2),
            README_RERUN: None if readme is None else round(readme, 2),
            "delta": delta(avg, paper) if ours and len(both) == len(ours) else None, "status": "average"}


def _write_accuracy_table(md, csv_path, *, number: int, task: str, paper_csv: str, size_key: str, unit: str,
                          intro: str, run_name: str, languages_: list[str], scores: dict | None,
                          missing: str | None) -> list[str]:
    """Tables 2 and 3: accuracy per language of one English-trained classifier, beside the paper."""
    paper = paper_values(paper_csv, "code", "accuracy")
    readme = paper_values(paper_csv, "code", README_RERUN)
    langs = languages_ or list(paper)
    rows = _accuracy_rows(langs, scores, paper, size_key, readme)
    rows.append(_average_row(rows, f"{len(langs)} languages"))
    notes = [f"**Missing:** {missing}"] if missing else []
    if scores is not None:
        hp, sizes = scores["hyperparameters"], scores["sizes"]
        dev = sizes.get(f"dev_{unit}")
        train = sizes.get(f"train_{unit}")
        notes.append(f"Classifier: hidden {hp.get('hidden')}, dropout {hp.get('dropout')}, lr {hp.get('lr')}, "
                     f"epoch {hp.get('selected_epoch')}, chosen on English dev ({dev} {unit}, "
                     f"{scores['dev_accuracy']:.2f}%); trained on {train} English {unit}; "
                     + (f"features {scores['features']}." if "features" in scores else f"document = {scores.get('pooling')}."))
        if scores.get("settings_source"):
            notes.append(scores["settings_source"])
    notes.append(f"Paper values (TACL): {_paper_source(paper_csv)}. LASER README re-run (the LASER repository's "
                 f"own later re-run, not the paper's values; shown for reference, Δ is against TACL): "
                 f"{_readme_source(paper_csv)}.")
    write_table(md, csv_path, title=f"Table {number} — {task} test accuracy (%), run `{run_name}`", intro=intro,
                caption=f"Table {number} — {task} test accuracy (%), run `{run_name}`; paper: {TACL} Table {number}",
                columns=[("language", "lang"), ("name", "name"), ("accuracy", "ours"),
                         ("paper_accuracy", "paper (TACL)"), (README_RERUN, "LASER README re-run"),
                         ("delta", "Δ (ours − TACL)"), ("test_size", f"test {unit}")],
                rows=rows, notes=notes)
    return langs


def write_xnli_tables(md2, csv2, md8, csv8, *, run_name: str, languages_: list[str], scores: dict | None,
                      missing: str | None) -> None:
    """Table 2 (XNLI test accuracy per language) and Table 8 (premise x hypothesis language)."""
    langs = _write_accuracy_table(
        md2, csv2, number=2, task="XNLI", paper_csv="paper_table2_xnli.csv", size_key="test_pairs", unit="pairs",
        intro="Zero-shot transfer: one classifier trained on English (MultiNLI), applied to every language. "
              "Δ = ours − paper (TACL); the average's Δ only where both cover the same languages.",
        run_name=run_name, languages_=languages_, scores=scores, missing=missing)

    paper8 = {(r["premise"], r["hypothesis"]): float(r["accuracy"])
              for r in read_paper_csv(PAPER_TABLE8) if r.get("accuracy")}
    cross = (scores or {}).get("cross_lingual")
    order = cross["premise_languages"] if cross else langs
    cells = []
    for i, lp in enumerate(order):
        for j, lh in enumerate(order):
            ours = None if cross is None else round(cross["accuracy"][i][j], 2)
            ref = paper8.get((lp, lh))
            cells.append({"premise": lp, "hypothesis": lh, "accuracy": ours, "paper_accuracy": ref,
                          "delta": delta(ours, ref), "status": "ok" if ours is not None else "missing"})
    # the paper's 15 languages (CSV order), and its averages: "avg" as premise (per hypothesis column),
    # as hypothesis (per premise row) and both (the corner)
    paper_langs = list(dict.fromkeys(p for p, h in paper8 if "avg" not in (p, h)))
    # ours averaged over this run's languages; Δ only where those are the paper's languages
    same = cross is not None and set(order) == set(paper_langs)
    n = len(order)
    acc = cross["accuracy"] if cross else None
    ours_avg: dict[tuple[str, str], float] = {}
    if cross is not None and n:
        for i, lang in enumerate(order):
            ours_avg[(lang, "avg")] = sum(acc[i][j] for j in range(n)) / n
            ours_avg[("avg", lang)] = sum(acc[j][i] for j in range(n)) / n
        ours_avg[("avg", "avg")] = sum(acc[i][j] for i in range(n) for j in range(n)) / n ** 2
    for key in [(lang, "avg") for lang in order] + [("avg", lang) for lang in order] + [("avg", "avg")]:
        ours, ref = ours_avg.get(key), paper8.get(key)
        ours = None if ours is None else round(ours, 2)
        cells.append({"premise": key[0], "hypothesis": key[1], "accuracy": ours, "paper_accuracy": ref,
                      "delta": delta(ours, ref) if same else None, "status": "average"})
    keys = ["premise", "hypothesis", "accuracy", "paper_accuracy", "delta", "status"]
    title = (f"Table 8 — XNLI accuracy (%) by premise language (rows) × hypothesis language (columns), "
             f"run `{run_name}`")
    doc = Document(caption=f"{title}; paper: {TACL} Table 8")
    doc.add(f"# {title}\n\n",
            "The English-trained classifier of Table 2 on test pairs whose premise and hypothesis come from "
            "different languages (pairs aligned by pairID); the diagonal is Table 2. avg = mean of the row or "
            "column (ours: over this run's languages).\n\n")
    if cross is None:
        doc.add(f"**Missing:** {missing}\n")
    else:
        rows = [[lp, *(f"{acc[i][j]:.2f}" for j in range(n)), fmt2(ours_avg.get((lp, "avg")))]
                for i, lp in enumerate(order)]
        rows.append(["avg", *(fmt2(ours_avg.get(("avg", lh))) for lh in order), fmt2(ours_avg.get(("avg", "avg")))])
        doc.add(f"{cross['pairs']} test pairs per cell.\n\n",
                Grid.of(["premise \\ hypothesis", *order, "avg"], rows, "l" + "r" * (len(order) + 1), caption="ours"))
    # the paper's matrix, this run's languages first (same order as ours), then the others
    shown = [lang for lang in order if lang in paper_langs] + [lang for lang in paper_langs if lang not in order]
    paper_cells = sum((p, h) in paper8 for p in paper_langs for h in paper_langs)
    if shown:
        doc.add("\n## paper (TACL Table 8)\n\n",
                Grid.of(["premise \\ hypothesis", *shown, "avg"],
                        [[lp, *(fmt1(paper8.get((lp, lh))) for lh in shown + ["avg"])] for lp in shown + ["avg"]],
                        "l" + "r" * (len(shown) + 1), caption="the paper's values (TACL 2019 Table 8)"))
    found = sum(c["paper_accuracy"] is not None for c in cells if c["status"] != "average")
    run_cells = sum(c["status"] != "average" for c in cells)
    doc.add(f"\nPaper values: {paper_cells} of {len(paper_langs) ** 2} cells "
            f"({len(paper_langs)} × {len(paper_langs)} languages) of {_paper_source(PAPER_TABLE8)}, "
            f"plus its averages; {found} of the {run_cells} cells of this run have one. "
            f"The CSV has paper value and Δ per cell, and the averages (premise or hypothesis `avg`).\n")
    write_files(doc, csv_frame(cells, keys), md8, csv8)


def write_mldoc_table(md, csv_path, *, run_name: str, languages_: list[str], scores: dict | None,
                      missing: str | None) -> None:
    """Table 3: MLDoc accuracy, classifier trained on English train1000, tuned on English dev."""
    _write_accuracy_table(
        md, csv_path, number=3, task="MLDoc", paper_csv="paper_table3_mldoc.csv", size_key="test_docs", unit="docs",
        intro="Zero-shot document classification (4 classes): trained on English, tested in every language. "
              "Δ = ours − paper (TACL).",
        run_name=run_name, languages_=languages_, scores=scores, missing=missing)


def write_bucc_table(md, csv_path, *, run_name: str, languages_: list[str], scores: list[dict] | None,
                     pairs: list[str], missing: str | None) -> None:
    """Table 4: BUCC 2018 mining, P/R/F1 on the training set at the F1-optimal threshold, and the
    number of test pairs extracted with that threshold (the test gold is not public)."""
    from laser_repro.evaluation import bucc
    from laser_repro.core.textio import count_lines

    paper: dict[tuple[str, str, str], float] = {}  # TACL Table 4 (F1 only)
    readme: dict[tuple[str, str, str], float] = {}  # the LASER README re-run (P, R, F1, threshold)
    for row in read_paper_csv("paper_table4_bucc.csv"):
        key = (row["code"], row["split"], row["metric"])
        if row.get("value"):
            paper[key] = float(row["value"])
        if row.get(README_RERUN):
            readme[key] = float(row[README_RERUN])
    langs = languages_ or list(bucc.LANGUAGES)
    by_lang = {s["language"]: s for s in scores or []}
    extracted = {Path(p).name.split("-")[0]: count_lines(p) for p in pairs}
    rows = []
    for code in langs:
        s = by_lang.get(code)
        pct = (lambda key: None if s is None else round(100 * s[key], 2))
        f1 = pct("f1")
        rows.append({
            "language": code, "pair": f"{bucc.bucc_code(code)}-en", "name": languages.get(code).name,
            "train_precision": pct("precision"), "train_recall": pct("recall"), "train_f1": f1,
            "paper_train_precision": paper.get((code, "train", "precision")),
            "paper_train_recall": paper.get((code, "train", "recall")),
            "paper_train_f1": paper.get((code, "train", "f1")),
            "delta_train_f1": delta(f1, paper.get((code, "train", "f1"))),
            "laser_readme_train_precision": readme.get((code, "train", "precision")),
            "laser_readme_train_recall": readme.get((code, "train", "recall")),
            "laser_readme_train_f1": readme.get((code, "train", "f1")),
            "laser_readme_threshold": readme.get((code, "train", "threshold")),
            "threshold": None if s is None else round(s["threshold"], 6),
            "train_gold_pairs": None if s is None else s["gold_pairs"],
            "train_xx_sentences": None if s is None else s["src_sentences"].get("lines"),
            "train_en_sentences": None if s is None else s["trg_sentences"].get("lines"),
            "test_pairs_extracted": extracted.get(code),
            "test_f1": None, "paper_test_f1": paper.get((code, "test", "f1")),
            "laser_readme_test_f1": readme.get((code, "test", "f1")),
            "status": "missing" if s is None else "ok",
        })
    notes = [f"**Missing:** {missing}"] if missing else []
    notes.append("Test F1 (ours) cannot be computed here: the BUCC 2018 test gold is private (the organisers "
                 "score submitted pairs). The extracted test pairs are in results/<run>/eval/bucc/test_pairs/.")
    notes.append(f"Paper values (TACL): {_paper_source('paper_table4_bucc.csv')} (the paper prints F1 only). "
                 f"LASER README re-run (the LASER repository's own later numbers, not the paper's; shown for "
                 f"reference, Δ is against TACL; its P and R are in the CSV): {_readme_source('paper_table4_bucc.csv')}.")
    write_table(md, csv_path, title=f"Table 4 — BUCC 2018 bitext mining, run `{run_name}`",
                caption=f"Table 4 — BUCC 2018 bitext mining, run `{run_name}`; paper: {TACL} Table 4",
                intro="Margin-based mining (ratio margin, k nearest neighbours, candidates of both directions kept "
                      "1:1 best first; duplicate sentences embedded once). Threshold chosen for the best F1 on the "
                      "training gold; precision, recall and F1 (%) there. Δ = ours − paper (TACL).",
                columns=[("pair", "pair"), ("train_precision", "P"), ("train_recall", "R"), ("train_f1", "F1"),
                         ("paper_train_f1", "paper F1 (TACL)"), ("laser_readme_train_f1", "LASER README re-run F1"),
                         ("delta_train_f1", "Δ F1 (ours − TACL)"), ("threshold", "threshold"),
                         ("laser_readme_threshold", "LASER README re-run threshold"),
                         ("train_gold_pairs", "gold pairs"), ("train_xx_sentences", "xx sent."),
                         ("train_en_sentences", "en sent."), ("test_pairs_extracted", "test pairs extracted"),
                         ("paper_test_f1", "paper test F1 (TACL)"), ("laser_readme_test_f1", "LASER README test F1")],
                rows=rows, notes=notes)


# ---- FLORES xsim (not a table of the paper: LASER's xsim on held-out FLORES lines) ----------------------------
def _flores_pair(row, split, system) -> str:
    a, b = row.get(f"{split}_{system}_en_xx"), row.get(f"{split}_{system}_xx_en")
    if a is None or b is None:
        return "n/a"
    return f"{a:.1f} / {b:.1f}"


def write_flores_table(rows: list[dict], md_path, csv_path, *, run_name: str, heldout: Sequence[int],
                       sample_size: int, updates: int | None = None) -> None:
    """The FLORES xsim table: per language (rows of :func:`laser_repro.evaluation.flores.table_rows`) and
    averaged, ours beside TF-IDF and the encoder at update 0, on the held-out lines and on training lines."""
    from laser_repro.evaluation.flores import SPLITS, average_rows

    every = average_rows(rows) + rows
    keys = list(dict.fromkeys(k for r in every for k in r))
    n_heldout = int(heldout[1]) - int(heldout[0])
    title = f"FLORES-200 similarity search (xsim) against English, run `{run_name}`"
    doc = Document(caption=f"{title}; LASER's xsim measure (Artetxe & Schwenk 2019) on FLORES, not a table of the paper")
    doc.add(f"# {title}\n\n",
            f"Error (%) = share of sentences whose nearest neighbour (cosine) in the other language is not "
            f"its translation, `en→xx / xx→en`. **Held-out lines**: FLORES dev lines {heldout[0]}–"
            f"{int(heldout[1]) - 1} (0-based; {n_heldout} sentences), never trained on. **Training lines**: "
            f"a seeded sample of {sample_size} of the other lines (seen in training by the trained "
            f"languages: memorization vs generalization). Baselines on exactly the same sentences: "
            f"**TF-IDF** = character 1–4-gram TF-IDF cosine of the raw sentences (no learning); "
            f"**init** = the same encoder at its initialization (0 updates, same seed)"
            + (f"; the model had {updates} updates" if updates is not None else "") + ". A model that does "
            "not beat TF-IDF has learned nothing a string match does not see; one that does not beat "
            "init has learned nothing at all.\n\n")
    cells = []
    for r in every:
        bold = "**" if r["language"] == "avg" else ""
        cells.append([f"{bold}{r['language']}{bold}", r["name"], r["script"], r["trained"],
                      *(_flores_pair(r, split, system) for split in SPLITS for system in ("ours", "tfidf", "init"))])
    doc.add(Grid.of(["lang", "name", "script", "trained", "held-out: ours", "TF-IDF", "init", "training lines: ours",
                     "TF-IDF", "init"], cells, "llll" + "r" * 6))
    write_files(doc, csv_frame(every, keys), md_path, csv_path)
