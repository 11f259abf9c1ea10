"""The paper's ablations (section 5, Tables 5-7): one metrics file per trained variant, and the tables
and figures that set the variants side by side, beside the paper's values.

Averages (the same for every variant of a run, so rows compare), chosen as the paper's where its
numbers allow rebuilding them from Tables 1-4 (``paper_average_checks`` verifies this on the shipped
paper values):

* ``tatoeba_error``: mean over the run's Table 1 languages (Tatoeba languages with training data
  in the base config) of the mean of the en->xx and xx->en error rates (%). The paper's values cannot
  be rebuilt from its Table 1 with any language set we tried (they come from another evaluation run).
* ``bucc_f1``: mean F1 (%) over the configured BUCC languages, on the BUCC *training* split (the test
  gold is not public; the threshold is optimized there, as in LASER's own BUCC script). Paper: the mean
  of Table 4's training F1.
* ``mldoc_accuracy``: mean test accuracy (%) over the MLDoc transfer languages, English excluded (the
  classifier is trained on English). Paper: the mean of Table 3's 7 transfer languages.
* ``xnli_en``: XNLI English test accuracy; ``xnli_xx``: mean over the non-English XNLI languages
  (paper: the mean of Table 2's 14 transfer languages; its XNLI-en differs from Table 2's).
* ``wmt_error``: mean similarity error (%) over all ordered language pairs of the WMT test set.

The tables are definitions on :mod:`laser_repro.reporting.paper_table` (paper values, Δ, the Markdown, CSV
and LaTeX files), through LASER's :func:`laser_repro.reporting.tables.write_table`.
"""
from __future__ import annotations

import json
from typing import Mapping, Sequence

from laser_repro.reporting.paper_table import delta, mean, round2
from laser_repro.reporting.tables import TACL, load_paper_tatoeba, paper_values, read_paper_csv, write_table
from laser_repro.core.textio import atomic_output
from laser_repro.models.record import add_model_records_option, require_model_records
from laser_repro.reporting import seeds

PAPER_ABLATIONS = "paper_tables5_7_ablations.csv"

#: metric key -> (column header, higher is better, evaluation task it comes from)
METRICS = {
    "tatoeba_error": ("Tatoeba err (%)", False, "tatoeba"),
    "bucc_f1": ("BUCC F1", True, "bucc"),
    "mldoc_accuracy": ("MLDoc acc", True, "mldoc"),
    "xnli_en": ("XNLI-en", True, "xnli"),
    "xnli_xx": ("XNLI-xx", True, "xnli"),
    "wmt_error": ("WMT err (%)", False, "wmt"),
    "flores_xsim": ("FLORES xsim err (%)", False, "flores"),
}
TASK_NAMES = {"tatoeba": "Tatoeba", "bucc": "BUCC", "mldoc": "MLDoc", "xnli": "XNLI", "wmt": "WMT",
              "flores": "FLORES xsim"}
#: paper table -> (ablation, caption, metric columns)
TABLES = {
    5: ("depth", "Encoder depth", ["tatoeba_error", "flores_xsim", "bucc_f1", "mldoc_accuracy", "xnli_en", "xnli_xx"]),
    6: ("nli", "Multitask learning with an NLI objective",
        ["tatoeba_error", "bucc_f1", "mldoc_accuracy", "xnli_en", "xnli_xx"]),
    # the reduced model lacks most Tatoeba languages: the paper reports WMT similarity instead
    7: ("languages", "Number of training languages", ["wmt_error", "bucc_f1", "mldoc_accuracy", "xnli_en", "xnli_xx"]),
}
#: the paper's full model, one row of each of Tables 5-7 (5 layers, no NLI, all 93 languages)
PAPER_BASE_SETTING = {5: "layers=5", 6: "nli=0", 7: "languages=all"}


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
        m["mldoc_accuracy"] = mean(v for k, v in acc.items() if k != "eng")  # transfer languages only
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


def paper_ablation_rows(table: int) -> dict[str, dict]:
    """{setting: {"paper_row": label printed in the paper, metric: value}} of the paper's Table 5, 6 or 7."""
    out: dict[str, dict] = {}
    for r in read_paper_csv(PAPER_ABLATIONS):
        if int(r["table"]) == table:
            row = out.setdefault(r["setting"], {"paper_row": r["paper_row"]})
            row[r["metric"]] = float(r["value"])
    return out


def paper_full_model_value(table: int, metric: str) -> tuple[float, str]:
    """The paper's full-model value of one metric of Table 5, 6 or 7, and where it is printed."""
    setting = PAPER_BASE_SETTING[table]
    for r in read_paper_csv(PAPER_ABLATIONS):
        if int(r["table"]) == table and r["setting"] == setting and r["metric"] == metric:
            return float(r["value"]), r["source"]
    raise KeyError(f"{PAPER_ABLATIONS}: no {metric} for table {table}, setting {setting}")


def paper_average_checks() -> dict[str, dict]:
    """For each ablation metric: the paper's full-model value (Tables 5-7) beside the same average
    rebuilt from the paper's per-language tables by our rule, and whether they agree (to 0.01).
    Says in the table notes which paper averages a reader can compare like for like."""
    full = paper_ablation_rows(5)[PAPER_BASE_SETTING[5]] | {"wmt_error": paper_ablation_rows(7)[PAPER_BASE_SETTING[7]]["wmt_error"]}
    xnli = paper_values("paper_table2_xnli.csv", "code", "accuracy")
    mldoc = paper_values("paper_table3_mldoc.csv", "code", "accuracy")
    bucc = {r["code"]: float(r["value"]) for r in read_paper_csv("paper_table4_bucc.csv")
            if r["split"] == "train" and r["metric"] == "f1" and r.get("value")}
    tatoeba = load_paper_tatoeba()
    both = {code: (r["en_xx_error"] + r["xx_en_error"]) / 2 for code, r in tatoeba.items()
            if r["en_xx_error"] is not None and r["xx_en_error"] is not None}
    table1 = [v for code, v in both.items() if tatoeba[code]["paper_table"] == "1"]
    rebuilt = {
        "tatoeba_error": (mean(table1), f"mean of (en→xx + xx→en)/2 over the {len(table1)} Table 1 languages with "
                          f"values; over all {len(both)} languages of Tables 1 and 9: {mean(both.values()):.2f}"),
        "bucc_f1": (mean(bucc.values()), f"mean of Table 4's training F1 over {len(bucc)} pairs"),
        "mldoc_accuracy": (mean(v for k, v in mldoc.items() if k != "eng"),
                           f"mean of Table 3 over the {sum(k != 'eng' for k in mldoc)} transfer languages"),
        "xnli_en": (xnli.get("eng"), "Table 2, English"),
        "xnli_xx": (mean(v for k, v in xnli.items() if k != "eng"),
                    f"mean of Table 2 over the {sum(k != 'eng' for k in xnli)} non-English languages"),
        "wmt_error": (None, "the paper prints no per-pair WMT values"),
    }
    return {key: {"paper": full[key], "rebuilt": value, "how": how,
                  "agrees": value is not None and abs(round(value, 2) - full[key]) < 0.005}
            for key, (value, how) in rebuilt.items()}


def _setting_order(setting: str) -> tuple:
    kind, value = setting.split("=")
    return (kind, int(value) if value.isdigit() else ["all", "subset"].index(value))


def _paper_only_label(setting: str, paper_row: str) -> str:
    kind, value = setting.split("=")
    if kind == "layers":
        return f"{value} layer{'s' if value != '1' else ''}"
    if kind == "nli":
        return "no NLI" if value == "0" else f"NLI x{value}"
    return paper_row  # languages: "All (93)", "Eval (18)"


def ablation_rows(table: int, rows: Sequence[Mapping], missing_tasks: Mapping[str, str] | None = None) -> list[dict]:
    """rows: [{label, variant, model, setting, metrics (path or None), note}] -> table rows with ours / paper /
    delta, in the order of the setting (layers, NLI weight, all before subset languages). A setting the paper
    reports but the config does not train gets a paper-only row. ``missing_tasks``: {task: why it did not run}
    (its columns stay empty; the table says why once)."""
    _, _, columns = TABLES[table]
    paper = paper_ablation_rows(table)
    missing_tasks = missing_tasks or {}
    out = []
    for row in rows:
        metrics = _load(row["metrics"])["metrics"] if row.get("metrics") else None
        ref = paper.get(row.get("setting", ""), {})
        item = {"row": row["label"], "variant": row["variant"], "model": row["model"],
                "setting": row.get("setting", ""), "paper_row": ref.get("paper_row", ""),
                "status": "ok" if metrics is not None else "not trained", "note": row.get("note") or ""}
        for key in columns:
            ours = None if metrics is None else metrics.get(key)
            item[key] = round2(ours)
            item[f"paper_{key}"] = ref.get(key)
            item[f"delta_{key}"] = delta(ours, ref.get(key))
        out.append(item)
    configured = {r["setting"] for r in out}
    for setting, ref in paper.items():
        if setting not in configured:
            item = {"row": _paper_only_label(setting, ref["paper_row"]), "variant": "", "model": "paper only",
                    "setting": setting, "paper_row": ref["paper_row"], "status": "paper only",
                    "note": "not trained in this configuration"}
            for key in columns:
                item.update({key: None, f"paper_{key}": ref.get(key), f"delta_{key}": None})
            out.append(item)
    out.sort(key=lambda r: _setting_order(r["setting"]) if r["setting"] else ("~", 0))
    for item in out:
        item["tasks_not_run"] = ",".join(sorted({METRICS[k][2] for k in columns} & set(missing_tasks)))
    return out


def write_ablation_table(table: int, rows: list[dict], md, csv_path, *, run_name: str,
                         missing_tasks: Mapping[str, str] | None = None) -> None:
    _, caption, columns = TABLES[table]
    missing_tasks = missing_tasks or {}
    not_run = [k for k in columns if METRICS[k][2] in missing_tasks]
    header = [("row", "setting"), ("paper_row", "paper row"), ("model", "model trained")]
    for key in columns:
        name = METRICS[key][0]
        if key in not_run:  # the task did not run: the paper's column alone (the note says why, once)
            header += [(f"paper_{key}", f"{name} paper")]
        else:
            header += [(key, f"{name} ours"), (f"paper_{key}", "paper"), (f"delta_{key}", "Δ")]
    checks = paper_average_checks()
    found = sum(r[f"paper_{k}"] is not None for r in rows for k in columns)
    notes = [f"Averages: {averages_note(columns)}",
             "Rows with the same model trained are one model (a variant equal to the base model is the base "
             "model). `paper only`: a setting the paper reports that this configuration does not train.",
             f"Paper values: {found} cells, TACL 2019 Table {table} ({PAPER_ABLATIONS}); the paper's models are "
             "trained on 93 languages of OPUS for 17 epochs, so compare the differences between rows, not the "
             "absolute level, when this run is smaller."]
    comparable = [k for k in columns if k in checks]
    notes.append("Can the paper's averages be rebuilt from its per-language tables with the rule above? "
                 + "; ".join(f"{METRICS[k][0]}: {'yes' if checks[k]['agrees'] else 'no'} (paper {checks[k]['paper']:.2f}"
                             + ("" if checks[k]["rebuilt"] is None else f", rebuilt {checks[k]['rebuilt']:.2f}")
                             + f": {checks[k]['how']})" for k in comparable)
                 + ". Where not, the paper's number comes from an evaluation we cannot reconstruct, and Δ is not "
                   "like for like.")
    for task in sorted({METRICS[k][2] for k in not_run}):
        notes.append(f"**{TASK_NAMES[task]} not run in this configuration:** {missing_tasks[task]}")
    by_note: dict[str, list[str]] = {}
    for r in rows:
        if r["note"] and r["status"] != "paper only":
            by_note.setdefault(r["note"], []).append(r["row"])
    notes += [f"- {', '.join(labels)}: {note}" for note, labels in by_note.items()]
    if seeds.has_replicates(rows):
        notes.append(seeds.NOTE)
    write_table(md, csv_path, title=f"Table {table}: {caption} ({run_name})",
                caption=f"Table {table}: {caption}, run `{run_name}`; paper: {TACL} Table {table}",
                intro=f"Each variant trained, exported and evaluated like the base model of run {run_name}; "
                      "ours beside the paper (TACL 2019), Δ = ours − paper.",
                columns=header, rows=rows, notes=notes)


def averages_note(columns: Sequence[str]) -> str:
    text = {
        "tatoeba_error": "Tatoeba = mean over the Table 1 languages of (en→xx + xx→en)/2 error",
        "bucc_f1": "BUCC = mean F1 over the BUCC languages (training split)",
        "mldoc_accuracy": "MLDoc = mean accuracy over the MLDoc transfer languages (English excluded)",
        "xnli_en": "XNLI-en = English accuracy",
        "xnli_xx": "XNLI-xx = mean accuracy over the non-English XNLI languages",
        "wmt_error": "WMT = mean similarity error over all ordered pairs",
        "flores_xsim": "FLORES xsim = mean over the trained languages of (en→xx + xx→en)/2 error on the held-out "
                       "FLORES lines (not in the paper)",
    }
    return "; ".join(text[c] for c in columns) + "."


def plot_ablation(table: int, rows: list[dict], png, *, run_name: str) -> None:
    """One panel per metric that this run measured, one bar per row (ours; the paper's value as a black tick
    when known, also for paper-only settings). Metrics of tasks that did not run get no panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, caption, columns = TABLES[table]
    shown = [k for k in columns if any(r[k] is not None for r in rows)]
    fig, axes = plt.subplots(1, max(len(shown), 1), figsize=(3.2 * max(len(shown), 1) + 0.4, 3.6), squeeze=False)
    labels = [r["row"] for r in rows]
    if not shown:
        axes[0][0].axis("off")
        axes[0][0].text(0.5, 0.5, "No variant of this table has results in this run\n(see the table's notes)",
                        ha="center", va="center", fontsize=10)
    for ax, key in zip(axes[0], shown):
        name, higher_better, _ = METRICS[key]
        for i, r in enumerate(rows):
            if r[key] is not None:
                sd = getattr(r[key], "sd", None)  # seed replicates: the sample sd as an error bar
                ax.bar(i, r[key], color="#4c72b0", yerr=sd, capsize=3 if sd else 0)
                ax.annotate(f"{float(r[key]):.1f}", (i, r[key]), ha="center", va="bottom", fontsize=8)
            elif r["status"] in ("paper only", "not trained"):
                ax.annotate(r["status"].replace(" ", "\n"), (i, 0), ha="center", va="bottom", fontsize=7,
                            color="#666666")
            if r[f"paper_{key}"] is not None:
                ax.hlines(r[f"paper_{key}"], i - 0.4, i + 0.4, colors="black", linewidth=2)
        ax.set_xlim(-0.6, len(rows) - 0.4)
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
    require_model_records(a.model_records, "ablation-table")
    rows = json.loads(a.rows)
    for i, row in enumerate(rows):
        for key in ("label", "variant", "model", "setting"):
            if key not in row:
                raise SystemExit(f"ablation-table: --rows[{i}]: missing key {key!r}")
    missing = json.loads(a.missing_tasks)
    if not isinstance(missing, dict) or not set(missing) <= set(TASK_NAMES):
        raise SystemExit(f"ablation-table: --missing-tasks must be a JSON object with keys among "
                         f"{sorted(TASK_NAMES)}, got {a.missing_tasks!r}")
    try:  # once per seed (config `seeds`: each row's seed_replicates), then mean ± sd
        table_rows = seeds.over_seeds([ablation_rows(a.table, seed_rows, missing)
                                       for seed_rows in seeds.per_seed_specs(rows)])
    except ValueError as err:
        raise SystemExit(f"ablation-table: {err}") from None
    write_ablation_table(a.table, table_rows, a.md, a.csv, run_name=a.run_name, missing_tasks=missing)
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
    add_model_records_option(s)
    s.add_argument("--rows", required=True,
                   help='JSON list of {"label", "variant", "model", "setting", "metrics": path or null, "note"} '
                        '(optional "seed_replicates": [{"metrics": path}, ...], one per further seed)')
    s.add_argument("--missing-tasks", default="{}",
                   help='JSON {task: why it has no scores in this run}, tasks among ' + ", ".join(sorted(TASK_NAMES)))
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.add_argument("--png", required=True)
    s.set_defaults(func=cmd_ablation_table)
