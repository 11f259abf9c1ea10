"""The paper's ablations (section 5, Tables 5-7): one metrics file per trained variant, and the tables
and figures that set the variants side by side, beside the paper's values.

Averages (the same for every variant of a run, so rows compare):

* ``tatoeba_error``: mean over the run's Table 1 languages (Tatoeba languages with training data
  in the base config) of the mean of the en->xx and xx->en error rates (%).
* ``bucc_f1``: mean F1 (%) over the configured BUCC languages, on the BUCC *training* split (the test
  gold is not public; the threshold is optimized there, as in LASER's own BUCC script).
* ``mldoc_accuracy``: mean test accuracy (%) over all configured MLDoc languages, English included.
* ``xnli_en``: XNLI English test accuracy; ``xnli_xx``: mean over the non-English XNLI languages.
* ``wmt_error``: mean similarity error (%) over all ordered language pairs of the WMT test set.
"""
from __future__ import annotations

import json
from typing import Mapping, Sequence

from laser_repro.tables import mean, read_paper_csv, write_table
from laser_repro.textio import atomic_output

PAPER_ABLATIONS = "paper_tables5_7_ablations.csv"

#: metric key -> (column header, higher is better)
METRICS = {
    "tatoeba_error": ("Tatoeba err (%)", False),
    "bucc_f1": ("BUCC F1", True),
    "mldoc_accuracy": ("MLDoc acc", True),
    "xnli_en": ("XNLI-en", True),
    "xnli_xx": ("XNLI-xx", True),
    "wmt_error": ("WMT err (%)", False),
    "flores_xsim": ("FLORES xsim err (%)", False),
}
#: paper table -> (ablation, caption, metric columns)
TABLES = {
    5: ("depth", "Encoder depth", ["tatoeba_error", "flores_xsim", "bucc_f1", "mldoc_accuracy", "xnli_en", "xnli_xx"]),
    6: ("nli", "Multitask learning with an NLI objective",
        ["tatoeba_error", "bucc_f1", "mldoc_accuracy", "xnli_en", "xnli_xx"]),
    # the reduced model lacks most Tatoeba languages: the paper reports WMT similarity instead
    7: ("languages", "Number of training languages", ["wmt_error", "bucc_f1", "mldoc_accuracy", "xnli_en", "xnli_xx"]),
}


def _load(path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def variant_metrics(variant: str, *, tatoeba: Sequence[str], bucc: Sequence[str] = (), xnli: str | None = None,
                    mldoc: str | None = None, wmt: str | None = None, flores: str | None = None,
                    flores_languages: Sequence[str] = ()) -> dict:
    """The ablation metrics of one variant from its score files (see the module docstring)."""
    out: dict = {"variant": variant, "metrics": {}, "details": {}, "inputs": {}}
    m, d = out["metrics"], out["details"]
    if tatoeba:
        per_lang = {}
        for path in tatoeba:
            s = _load(path)
            per_lang[s["language"]] = (s["en_xx_error"] + s["xx_en_error"]) / 2
        m["tatoeba_error"] = mean(per_lang.values())
        d["tatoeba_error"] = per_lang
        out["inputs"]["tatoeba"] = list(tatoeba)
    if bucc:
        per_lang = {s["language"]: 100 * s["f1"] for s in map(_load, bucc)}
        m["bucc_f1"] = mean(per_lang.values())
        d["bucc_f1"] = per_lang
        out["inputs"]["bucc"] = list(bucc)
    if xnli:
        acc = _load(xnli)["test_accuracy"]
        m["xnli_en"] = acc.get("eng")
        m["xnli_xx"] = mean(v for k, v in acc.items() if k != "eng")
        d["xnli"] = acc
        out["inputs"]["xnli"] = xnli
    if mldoc:
        acc = _load(mldoc)["test_accuracy"]
        m["mldoc_accuracy"] = mean(acc.values())
        d["mldoc"] = acc
        out["inputs"]["mldoc"] = mldoc
    if flores:  # held-out FLORES lines, the languages with training data (flores_languages)
        held = _load(flores)["model"]["heldout"]
        per_lang = {lang: (held[lang]["en_xx"] + held[lang]["xx_en"]) / 2 for lang in flores_languages if lang in held}
        m["flores_xsim"] = mean(per_lang.values())
        d["flores_xsim"] = per_lang
        out["inputs"]["flores"] = flores
    if wmt:
        s = _load(wmt)
        m["wmt_error"] = s["average_error"]
        d["wmt"] = {f"{p['src']}-{p['trg']}": p["error"] for p in s["pairs"]}
        out["inputs"]["wmt"] = wmt
    return out


def write_metrics(path, metrics: dict) -> None:
    with atomic_output(path) as f:
        json.dump(metrics, f, indent=2, sort_keys=True)
        f.write("\n")


def summarize(paths: Sequence[str]) -> dict:
    """{variant: metrics} of several metrics files: the run's headline numbers (DVC metrics)."""
    out = {}
    for path in paths:
        data = _load(path)
        out[data["variant"]] = {k: (None if v is None else round(v, 4)) for k, v in data["metrics"].items()}
    return out


def paper_ablation_values(table: int) -> dict[tuple[str, str], float]:
    """{(row, metric): value} of the paper's table; empty cells (not found in a readable source) left out."""
    return {(r["row"], r["metric"]): float(r["value"]) for r in read_paper_csv(PAPER_ABLATIONS)
            if int(r["table"]) == table and r.get("value") not in (None, "")}


def ablation_rows(table: int, rows: Sequence[Mapping]) -> list[dict]:
    """rows: [{label, variant, model, metrics (path or None), note}] -> table rows with ours / paper / delta."""
    _, _, columns = TABLES[table]
    paper = paper_ablation_values(table)
    out = []
    for row in rows:
        metrics = _load(row["metrics"])["metrics"] if row.get("metrics") else None
        item = {"row": row["label"], "variant": row["variant"], "model": row["model"],
                "status": "ok" if metrics is not None else "missing", "note": row.get("note") or ""}
        for key in columns:
            ours = None if metrics is None else metrics.get(key)
            ref = paper.get((row["label"], key))
            item[key] = None if ours is None else round(ours, 2)
            item[f"paper_{key}"] = ref
            item[f"delta_{key}"] = None if ours is None or ref is None else round(ours - ref, 2)
        out.append(item)
    return out


def write_ablation_table(table: int, rows: list[dict], md, csv_path, *, run_name: str) -> None:
    _, caption, columns = TABLES[table]
    header = [("row", "setting"), ("variant", "variant"), ("model", "model trained")]
    for key in columns:
        name = METRICS[key][0]
        header += [(key, f"{name} ours"), (f"paper_{key}", "paper"), (f"delta_{key}", "Δ")]
    found = sum(r[f"paper_{k}"] is not None for r in rows for k in columns)
    notes = [f"Averages: {averages_note(columns)}",
             "Rows with the same variant are the same trained model (a variant equal to the base model is "
             "the base model).",
             ("Paper values: " + (f"{found} cells from {PAPER_ABLATIONS}." if found else
                                  f"not found in a readable source; the cells are empty ({PAPER_ABLATIONS}).")),
             "`missing`: the variant or a task could not run; see the note column of the CSV."]
    notes += [f"- {r['row']}: {r['note']}" for r in rows if r["note"]]
    write_table(md, csv_path, title=f"Table {table}: {caption} ({run_name})",
                intro=f"Each variant trained, exported and evaluated like the base model of run {run_name}; "
                      "ours beside the paper, Δ = ours − paper.",
                columns=header, rows=rows, notes=notes)


def averages_note(columns: Sequence[str]) -> str:
    text = {
        "tatoeba_error": "Tatoeba = mean over the Table 1 languages of (en→xx + xx→en)/2 error",
        "bucc_f1": "BUCC = mean F1 over the BUCC languages (training split)",
        "mldoc_accuracy": "MLDoc = mean accuracy over all MLDoc languages",
        "xnli_en": "XNLI-en = English accuracy",
        "xnli_xx": "XNLI-xx = mean accuracy over the non-English XNLI languages",
        "wmt_error": "WMT = mean similarity error over all ordered pairs",
        "flores_xsim": "FLORES xsim = mean over the trained languages of (en→xx + xx→en)/2 error on the held-out "
                       "FLORES lines (not in the paper)",
    }
    return "; ".join(text[c] for c in columns) + "."


def plot_ablation(table: int, rows: list[dict], png, *, run_name: str) -> None:
    """One panel per metric, one bar per row (ours; the paper's value as a black tick when known)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, caption, columns = TABLES[table]
    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 3.4), squeeze=False)
    labels = [r["row"] for r in rows]
    for ax, key in zip(axes[0], columns):
        name, higher_better = METRICS[key]
        values = [r[key] if r[key] is not None else 0.0 for r in rows]
        ax.bar(range(len(rows)), values, color=["#4c72b0" if r[key] is not None else "#dddddd" for r in rows])
        for i, r in enumerate(rows):
            if r[f"paper_{key}"] is not None:
                ax.hlines(r[f"paper_{key}"], i - 0.4, i + 0.4, colors="black", linewidth=2)
            ax.annotate("n/a" if r[key] is None else f"{r[key]:.1f}", (i, values[i]), ha="center", va="bottom",
                        fontsize=8)
        ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(f"{name} ({'↑' if higher_better else '↓'})", fontsize=9)
    fig.suptitle(f"Table {table}: {caption} — {run_name} (bars: ours; black ticks: paper)", fontsize=10)
    fig.tight_layout()
    with atomic_output(png, "wb") as f:
        # fixed metadata: the same numbers give the same PNG bytes
        fig.savefig(f, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


# ---- command line -------------------------------------------------------------------------------------
def cmd_variant_metrics(a) -> None:
    metrics = variant_metrics(a.variant, tatoeba=a.tatoeba, bucc=a.bucc, xnli=a.xnli, mldoc=a.mldoc, wmt=a.wmt,
                              flores=a.flores, flores_languages=a.flores_languages)
    write_metrics(a.output, metrics)


def cmd_metrics_summary(a) -> None:
    write_metrics(a.output, summarize(a.metrics))


def cmd_ablation_table(a) -> None:
    rows = json.loads(a.rows)
    for i, row in enumerate(rows):
        for key in ("label", "variant", "model"):
            if key not in row:
                raise SystemExit(f"ablation-table: --rows[{i}]: missing key {key!r}")
    table_rows = ablation_rows(a.table, rows)
    write_ablation_table(a.table, table_rows, a.md, a.csv, run_name=a.run_name)
    plot_ablation(a.table, table_rows, a.png, run_name=a.run_name)


def add_cli(sub) -> None:
    s = sub.add_parser("variant-metrics", help="the ablation metrics of one trained variant (Tables 5-7)")
    s.add_argument("--variant", required=True)
    s.add_argument("--tatoeba", nargs="*", default=[], help="Tatoeba score files of the Table 1 languages")
    s.add_argument("--bucc", nargs="*", default=[], help="BUCC training-split score files")
    s.add_argument("--xnli", help="XNLI scores.json")
    s.add_argument("--mldoc", help="MLDoc scores.json")
    s.add_argument("--wmt", help="WMT similarity scores.json")
    s.add_argument("--flores", help="FLORES xsim scores.json")
    s.add_argument("--flores-languages", nargs="*", default=[], help="the languages FLORES xsim is averaged over")
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_variant_metrics)

    s = sub.add_parser("metrics-summary", help="{variant: metrics} of all variants in one JSON (DVC metrics)")
    s.add_argument("--metrics", nargs="+", required=True)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_metrics_summary)

    s = sub.add_parser("ablation-table", help="Table 5, 6 or 7 (and its figure) from the variants' metrics")
    s.add_argument("--table", type=int, choices=sorted(TABLES), required=True)
    s.add_argument("--run-name", required=True)
    s.add_argument("--rows", required=True,
                   help='JSON list of {"label", "variant", "model", "metrics": path or null, "note"}')
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.add_argument("--png", required=True)
    s.set_defaults(func=cmd_ablation_table)

