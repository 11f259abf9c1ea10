"""Paper tables: our numbers beside the published ones, as Markdown and CSV."""
from __future__ import annotations

import csv
import io
from importlib import resources
from pathlib import Path
from typing import Mapping

from laser_repro import languages
from laser_repro.textio import atomic_output

PAPER_TABLE1 = "paper_table1.csv"
PAPER_TABLE9 = "paper_table9_tatoeba_unseen.csv"


def read_paper_csv(name: str) -> list[dict]:
    """Rows of one of the paper's reference tables shipped in laser_repro/data."""
    text = resources.files("laser_repro.data").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _number(value: str | None, kind=float):
    return kind(value) if value not in (None, "") else None


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
                "source": row["source"],
            }
    return rows


def load_paper_table1() -> dict[str, dict]:
    """TACL 2019 Table 1 rows keyed by our language code (values None where the paper prints n/a)."""
    return {code: row for code, row in load_paper_tatoeba().items() if row["paper_table"] == "1"}


def _delta(ours: float | None, paper: float | None) -> float | None:
    return None if ours is None or paper is None else round(ours - paper, 2)


def table1_rows(results: Mapping[str, dict], train_sizes: Mapping[str, int]) -> list[dict]:
    """One row per evaluated language: training size, our errors, test size, paper values, deltas."""
    paper = load_paper_tatoeba()
    rows = []
    for code, res in results.items():
        ref = paper.get(code, {})
        lang = languages.get(code)
        rows.append({
            "language": code,
            "paper_code": lang.paper or "",
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
            "delta_en_xx_error": _delta(res["en_xx_error"], ref.get("en_xx_error")),
            "delta_xx_en_error": _delta(res["xx_en_error"], ref.get("xx_en_error")),
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


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _size(n: int | None) -> str:
    if n is None:
        return "n/a"
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 10_000:
        return f"{n / 1e3:.0f}k"
    return str(n)


def write_table1(rows: list[dict], md_path: Path | str, csv_path: Path | str, *, run_name: str) -> None:
    write_tatoeba_table(rows, md_path, csv_path, run_name=run_name, unseen=False)


def write_tatoeba_table(rows: list[dict], md_path: Path | str, csv_path: Path | str, *, run_name: str,
                        unseen: bool) -> None:
    """Table 1 (languages with training data) or Table 9 (Tatoeba languages without any)."""
    number = 9 if unseen else 1
    if not rows and not unseen:
        raise ValueError("Table 1: no evaluated languages")
    columns = list(rows[0]) if rows else ["language"]
    with atomic_output(csv_path) as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)
    with atomic_output(md_path) as f:
        what = ("languages of the test set with **no training data** in this configuration (zero-shot)"
                if unseen else "languages with training data")
        f.write(f"# Table {number} — Tatoeba similarity error (%), {what}, run `{run_name}`\n\n")
        f.write("Error = share of sentences whose nearest neighbour (cosine) in the other language is not "
                "its translation; en→xx queries with English. Baselines on the same sentences: TF-IDF = "
                "character 1–4-gram TF-IDF cosine of the raw sentences (no learning), init = the same encoder "
                "at update 0 (`en→xx / xx→en`). Paper: Artetxe & Schwenk (2019), TACL, Tables 1 "
                "and 9 (93-language model; the paper column names the table a value comes from, since a "
                "language unseen here may have been a training language of the paper). Δ = ours − paper.\n\n")
        if not rows:
            f.write("No Tatoeba language without training data is evaluated in this configuration "
                    "(add some to evaluation.tatoeba.languages).\n")
            return
        avg = {k: sum(r[k] for r in rows) / len(rows) for k in ("en_xx_error", "xx_en_error")}
        # the paper's average over the same languages, where it reports them
        both = [r for r in rows if r["paper_en_xx_error"] is not None]
        paper_avg = {k: (sum(r["paper_" + k] for r in both) / len(both) if both else None)
                     for k in ("en_xx_error", "xx_en_error")}
        f.write("| lang | name | train sent. | en→xx err. | xx→en err. | TF-IDF | init | test sent. "
                "| paper train | paper en→xx | paper xx→en | paper test | paper table | Δ en→xx | Δ xx→en |\n")
        f.write("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n")
        for r in rows:
            f.write(f"| {r['language']} | {r['name']} | {_size(r['train_sentences'])} | {_fmt(r['en_xx_error'])} "
                    f"| {_fmt(r['xx_en_error'])} | {_both(r, 'tfidf_')} | {_both(r, 'init_')} "
                    f"| {r['test_sentences']} | {_size(r['paper_train_sentences'])} "
                    f"| {_fmt(r['paper_en_xx_error'])} | {_fmt(r['paper_xx_en_error'])} "
                    f"| {_fmt(r['paper_test_sentences'])} | {r['paper_table'] or 'n/a'} "
                    f"| {_fmt(r['delta_en_xx_error'])} | {_fmt(r['delta_xx_en_error'])} |\n")
        base_avg = {}
        for base in BASELINES:
            values = [r for r in rows if r.get(f"{base}_en_xx_error") is not None]
            base_avg[base] = ({f"{d}_error": sum(r[f"{base}_{d}_error"] for r in values) / len(values)
                               for d in ("en_xx", "xx_en")} if len(values) == len(rows) else {})
        f.write(f"| **avg** | {len(rows)} languages | | {avg['en_xx_error']:.2f} | {avg['xx_en_error']:.2f} "
                f"| {_both(base_avg['tfidf'], '')} | {_both(base_avg['init'], '')} "
                f"| | | {_fmt(paper_avg['en_xx_error'])} | {_fmt(paper_avg['xx_en_error'])} | | | | |\n")
        if len(both) != len(rows):
            f.write(f"\nPaper averages are over the {len(both)} languages the paper reports.\n")


# ---- evaluation tables (2, 3, 4, 8 and WMT similarity) ------------------------------------------------
def write_table(md_path: Path | str, csv_path: Path | str, *, title: str, intro: str,
                columns: list[tuple[str, str]], rows: list[dict], notes: list[str] = ()) -> None:
    """One table as CSV (every key of the rows) and Markdown (`columns`: key, header)."""
    keys = list(dict.fromkeys(k for row in rows for k in row)) or [k for k, _ in columns]
    with atomic_output(csv_path) as f:
        writer = csv.DictWriter(f, fieldnames=keys, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if row.get(k) is None else row.get(k)) for k in keys} for row in rows)
    with atomic_output(md_path) as f:
        f.write(f"# {title}\n\n{intro}\n\n")
        f.write("| " + " | ".join(h for _, h in columns) + " |\n")
        f.write("|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|\n")
        for row in rows:
            f.write("| " + " | ".join(_cell(row, k) for k, _ in columns) + " |\n")
        for note in notes:
            f.write(f"\n{note}\n")


def _cell(row: dict, key: str) -> str:
    value = row.get(key)
    if value is None and row.get("status") == "missing" and not key.startswith(("paper", "language", "name")):
        return "missing"
    return _fmt(value)


def paper_values(name: str, key: str, value: str) -> dict:
    """{key: float value} of one of the paper CSVs (rows without a value are left out)."""
    return {row[key]: float(row[value]) for row in read_paper_csv(name) if row.get(value) not in (None, "")}


def mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def missing_rows(keys: list[str], note: str, **fixed) -> list[dict]:
    """Rows of a task that could not run: status missing, the note says how to get the data."""
    return [{**{"language": k}, **fixed, "status": "missing", "note": note} for k in keys]


def write_wmt_table(md_path, csv_path, *, run_name: str, languages_: list[str], scores: dict | None,
                    missing: str | None) -> None:
    """Similarity error (%) per ordered pair of a WMT news test set, and the average over all pairs
    (the metric of the language-count ablation, Table 7)."""
    test_set = (scores or {}).get("test_set") or "WMT"
    if scores is None:
        rows = [{"src": a, "trg": b, "error": None, "errors": None, "sentences": None, "status": "missing",
                 "note": missing} for a in languages_ for b in languages_ if a != b]
        notes = [f"**Missing:** {missing}"]
    else:
        rows = [{"src": p["src"], "trg": p["trg"], "error": round(p["error"], 2), "errors": p["errors"],
                 "sentences": scores["sentences"], "status": "ok", "note": ""} for p in scores["pairs"]]
        rows.append({"src": "all", "trg": "all", "error": round(scores["average_error"], 2), "errors": None,
                     "sentences": scores["sentences"], "status": "average", "note": f"{len(scores['pairs'])} ordered pairs"})
        notes = [f"{lang}: absent from {test_set}: {why}" for lang, why in scores.get("absent", {}).items()]
        rows += [{"src": lang, "trg": "*", "error": None, "errors": None, "sentences": None, "status": "missing",
                  "note": why} for lang, why in scores.get("absent", {}).items()]
    for row in rows:
        row["language"] = f"{row['src']}→{row['trg']}"
    write_table(md_path, csv_path, title=f"Similarity error on {test_set} (%), run `{run_name}`",
                intro=("For every sentence in the query language, its nearest neighbour (cosine) among all sentences "
                       "of the other language; an error when it is not its translation. Averaged over all ordered "
                       "language pairs (used by the language-count ablation, paper Table 7; the paper prints no "
                       "per-pair values)."),
                columns=[("language", "query→searched"), ("error", "error %"), ("errors", "errors"),
                         ("sentences", "sentences"), ("note", "note")],
                rows=rows, notes=notes)


def _paper_source(name: str) -> str:
    sources = sorted({row["source"] for row in read_paper_csv(name) if row.get("source")})
    return "; ".join(sources) if sources else "no published value found"


def _accuracy_rows(langs: list[str], scores: dict | None, paper: dict, size_key: str) -> list[dict]:
    rows = []
    for code in langs:
        lang = languages.get(code)
        ours = None if scores is None else scores["test_accuracy"].get(code)
        rows.append({"language": code, "paper_code": lang.paper or "", "name": lang.name,
                     "accuracy": None if ours is None else round(ours, 2), "paper_accuracy": paper.get(code),
                     "delta": _delta(ours, paper.get(code)),
                     "test_size": None if scores is None else scores["sizes"][size_key].get(code),
                     "status": "ok" if ours is not None else "missing"})
    return rows


def _average_row(rows: list[dict], label: str) -> dict:
    ours = [r["accuracy"] for r in rows if r["accuracy"] is not None]
    both = [r for r in rows if r["accuracy"] is not None and r["paper_accuracy"] is not None]
    avg, paper = mean(ours), mean(r["paper_accuracy"] for r in both)
    return {"language": "avg", "name": label, "accuracy": None if avg is None else round(avg, 2),
            "paper_accuracy": None if paper is None else round(paper, 2),
            "delta": _delta(avg, paper) if len(both) == len(ours) else None, "status": "average"}


def _write_accuracy_table(md, csv_path, *, number: int, task: str, paper_csv: str, size_key: str, unit: str,
                          intro: str, run_name: str, languages_: list[str], scores: dict | None,
                          missing: str | None) -> list[str]:
    """Tables 2 and 3: accuracy per language of one English-trained classifier, beside the paper."""
    paper = paper_values(paper_csv, "code", "accuracy")
    langs = languages_ or list(paper)
    rows = _accuracy_rows(langs, scores, paper, size_key)
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
    notes.append(f"Paper values: {_paper_source(paper_csv)}.")
    write_table(md, csv_path, title=f"Table {number} — {task} test accuracy (%), run `{run_name}`", intro=intro,
                columns=[("language", "lang"), ("name", "name"), ("accuracy", "ours"), ("paper_accuracy", "paper"),
                         ("delta", "Δ"), ("test_size", f"test {unit}")],
                rows=rows, notes=notes)
    return langs


def write_xnli_tables(md2, csv2, md8, csv8, *, run_name: str, languages_: list[str], scores: dict | None,
                      missing: str | None) -> None:
    """Table 2 (XNLI test accuracy per language) and Table 8 (premise x hypothesis language)."""
    langs = _write_accuracy_table(
        md2, csv2, number=2, task="XNLI", paper_csv="paper_table2_xnli.csv", size_key="test_pairs", unit="pairs",
        intro="Zero-shot transfer: one classifier trained on English (MultiNLI), applied to every language. "
              "Δ = ours − paper; the average's Δ only where both cover the same languages.",
        run_name=run_name, languages_=languages_, scores=scores, missing=missing)

    paper8 = {(r["premise"], r["hypothesis"]): float(r["accuracy"])
              for r in read_paper_csv("paper_table8_xnli_cross.csv") if r.get("accuracy")}
    cross = (scores or {}).get("cross_lingual")
    order = cross["premise_languages"] if cross else langs
    cells = []
    for i, lp in enumerate(order):
        for j, lh in enumerate(order):
            ours = None if cross is None else round(cross["accuracy"][i][j], 2)
            ref = paper8.get((lp, lh))
            cells.append({"premise": lp, "hypothesis": lh, "accuracy": ours, "paper_accuracy": ref,
                          "delta": _delta(ours, ref), "status": "ok" if ours is not None else "missing"})
    keys = ["premise", "hypothesis", "accuracy", "paper_accuracy", "delta", "status"]
    with atomic_output(csv8) as f:
        writer = csv.DictWriter(f, fieldnames=keys, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if c[k] is None else c[k]) for k in keys} for c in cells)
    with atomic_output(md8) as f:
        f.write(f"# Table 8 — XNLI accuracy (%) by premise language (rows) × hypothesis language (columns), "
                f"run `{run_name}`\n\n")
        f.write("The English-trained classifier of Table 2 on test pairs whose premise and hypothesis come from "
                "different languages (pairs aligned by pairID); the diagonal is Table 2.\n\n")
        if cross is None:
            f.write(f"**Missing:** {missing}\n")
        else:
            f.write(f"{cross['pairs']} test pairs per cell.\n\n")
            f.write("| premise \\ hypothesis | " + " | ".join(order) + " |\n")
            f.write("|---|" + "---:|" * len(order) + "\n")
            for i, lp in enumerate(order):
                f.write(f"| {lp} | " + " | ".join(f"{cross['accuracy'][i][j]:.2f}" for j in range(len(order))) + " |\n")
        found = sum(c["paper_accuracy"] is not None for c in cells)
        f.write(f"\nPaper values: {found} of {len(cells)} cells found "
                f"({_paper_source('paper_table8_xnli_cross.csv')}); the CSV has paper value and Δ per cell.\n")


def write_mldoc_table(md, csv_path, *, run_name: str, languages_: list[str], scores: dict | None,
                      missing: str | None) -> None:
    """Table 3: MLDoc accuracy, classifier trained on English train1000, tuned on English dev."""
    _write_accuracy_table(
        md, csv_path, number=3, task="MLDoc", paper_csv="paper_table3_mldoc.csv", size_key="test_docs", unit="docs",
        intro="Zero-shot document classification (4 classes): trained on English, tested in every language. "
              "Δ = ours − paper.",
        run_name=run_name, languages_=languages_, scores=scores, missing=missing)


def write_bucc_table(md, csv_path, *, run_name: str, languages_: list[str], scores: list[dict] | None,
                     pairs: list[str], missing: str | None) -> None:
    """Table 4: BUCC 2018 mining, P/R/F1 on the training set at the F1-optimal threshold, and the
    number of test pairs extracted with that threshold (the test gold is not public)."""
    from laser_repro.config import BUCC_LANGUAGES
    from laser_repro.textio import count_lines

    paper: dict[tuple[str, str, str], float] = {}
    for row in read_paper_csv("paper_table4_bucc.csv"):
        if row.get("value"):
            paper[(row["code"], row["split"], row["metric"])] = float(row["value"])
    langs = languages_ or list(BUCC_LANGUAGES)
    by_lang = {s["language"]: s for s in scores or []}
    extracted = {Path(p).name.split("-")[0]: count_lines(p) for p in pairs}
    rows = []
    for code in langs:
        s = by_lang.get(code)
        pct = (lambda key: None if s is None else round(100 * s[key], 2))
        f1 = pct("f1")
        rows.append({
            "language": code, "pair": f"{BUCC_LANGUAGES.get(code, code)}-en", "name": languages.get(code).name,
            "train_precision": pct("precision"), "train_recall": pct("recall"), "train_f1": f1,
            "paper_train_precision": paper.get((code, "train", "precision")),
            "paper_train_recall": paper.get((code, "train", "recall")),
            "paper_train_f1": paper.get((code, "train", "f1")),
            "delta_train_f1": _delta(f1, paper.get((code, "train", "f1"))),
            "threshold": None if s is None else round(s["threshold"], 6),
            "train_gold_pairs": None if s is None else s["gold_pairs"],
            "train_xx_sentences": None if s is None else s["src_sentences"].get("lines"),
            "train_en_sentences": None if s is None else s["trg_sentences"].get("lines"),
            "test_pairs_extracted": extracted.get(code),
            "test_f1": None, "paper_test_f1": paper.get((code, "test", "f1")),
            "status": "missing" if s is None else "ok",
        })
    notes = [f"**Missing:** {missing}"] if missing else []
    notes.append("Test F1 (ours) cannot be computed here: the BUCC 2018 test gold is private (the organisers "
                 "score submitted pairs). The extracted test pairs are in results/<run>/eval/bucc/test_pairs/.")
    notes.append(f"Paper values: {_paper_source('paper_table4_bucc.csv')}.")
    write_table(md, csv_path, title=f"Table 4 — BUCC 2018 bitext mining, run `{run_name}`",
                intro="Margin-based mining (ratio margin, k nearest neighbours, candidates of both directions kept "
                      "1:1 best first; duplicate sentences embedded once). Threshold chosen for the best F1 on the "
                      "training gold; precision, recall and F1 (%) there. Δ = ours − paper.",
                columns=[("pair", "pair"), ("train_precision", "P"), ("train_recall", "R"), ("train_f1", "F1"),
                         ("paper_train_f1", "paper F1"), ("delta_train_f1", "Δ F1"), ("threshold", "threshold"),
                         ("train_gold_pairs", "gold pairs"), ("train_xx_sentences", "xx sent."),
                         ("train_en_sentences", "en sent."), ("test_pairs_extracted", "test pairs extracted"),
                         ("paper_test_f1", "paper test F1")],
                rows=rows, notes=notes)
