"""The contamination table of a run: which evaluation sentences its training text holds, per evaluation set
and language, exactly and after the training normalisation (the counts: :mod:`laser_repro.evaluation.
contamination`). ``laser-repro contamination --spec FILE`` writes the counts as JSON and the table as
Markdown, CSV and LaTeX (:mod:`laser_repro.reporting.paper_table`).

Markdown: per training text (a ``bitext_data`` or ``nway_data`` entry), one row per test file of a language
with training text, the set's total over all its files, and one row for its languages without any (named
in a note below); the CSV has every test file's row and the totals (``status``: ok, no training text, total).
"""
from __future__ import annotations

import logging
from typing import Mapping, Sequence

from laser_repro.core.textio import write_json
from laser_repro.evaluation import contamination as counts
from laser_repro.reporting.paper_table import Document, Grid, csv_frame, fmt2, write_files

log = logging.getLogger("laser_repro")

#: the CSV's columns (the test files' paths are in the JSON: the table does not depend on where the data are)
CSV_FIELDS = ("data", "set", "label", "part", "language", "sentences", "training_lines", "training_distinct",
              "exact", "exact_percent", "normalised", "normalised_percent", "status")
HEADER = ["evaluation set", "language", "test sentences", "in training (exact)", "%", "in training (normalised)", "%"]


def _label(row: Mapping) -> str:
    return f"{row['label']} {row['part']}".strip()


def _cells(label: str, language: str, sentences: int, exact, exact_pct, norm, norm_pct) -> list[str]:
    return [label, language, str(sentences), fmt2(exact, "–"), fmt2(exact_pct, "–"), fmt2(norm, "–"),
            fmt2(norm_pct, "–")]


def grid_rows(rows: Sequence[Mapping], totals: Sequence[Mapping]) -> tuple[list[list[str]], list[str]]:
    """The Markdown rows of one training text's rows (in order: each set's files with training text, the
    set's total, its languages without training text as one row) and the notes naming those languages."""
    out, notes = [], []
    for total in totals:
        mine = [r for r in rows if r["set"] == total["set"]]
        for r in mine:
            if r["status"] == "ok":
                out.append(_cells(_label(r), r["language"], r["sentences"], r["exact"], r["exact_percent"],
                                  r["normalised"], r["normalised_percent"]))
        none = [r for r in mine if r["status"] != "ok"]
        if none:
            langs = sorted({r["language"] for r in none})
            out.append(_cells(total["label"], f"{len(langs)} without training text", sum(r["sentences"] for r in none),
                              None, None, None, None))
            notes.append(f"{total['label']}: no training text of {', '.join(langs)} ({len(none)} test "
                         f"file{'s' if len(none) != 1 else ''}: none of their sentences can be in it).")
        if len(mine) > 1:
            out.append(_cells(f"**{total['label']}, all**", "", total["sentences"], total["exact"],
                              total["exact_percent"], total["normalised"], total["normalised_percent"]))
    return out, notes


def write_table(result: Mapping, md_path, csv_path) -> None:
    """The table of a :func:`laser_repro.evaluation.contamination.contamination` result (Markdown, CSV and
    the LaTeX beside the Markdown)."""
    run = result.get("run") or "?"
    doc = Document(caption=f"Contamination: the test sentences the training text of run `{run}` holds "
                           f"(not a table of a paper)",
                   latex_note="No evaluation set in this run (see the Markdown file beside this one).")
    doc.add(f"# Contamination: which test sentences the training text of run {run} holds\n\n"
            "For every evaluation set of the run and each language: its test sentences, and how many of them occur "
            "in the run's training text of that language **exactly** (the line as given, stripped of surrounding "
            "whitespace) and **after normalisation** (the training text's preprocessing applied to the test "
            "sentence, compared with the normalised training text). A sentence counted here may have been "
            "memorised; one not counted was not seen as a sentence (its words may have been). Lines are "
            f"compared by hash ({result.get('hash', counts.HASH)}).\n")
    csv_lines = []
    for t in result["training"]:
        rows = [r for r in result["rows"] if r["data"] == t["data"]]
        totals = counts.set_totals(rows)
        models = ", ".join(t.get("models") or []) or "none"
        doc.add(f"\n## Training text: `{t['data']}` (models: {models})\n\n")
        body, notes = grid_rows(rows, totals)
        if body:
            doc.add(Grid.of(HEADER, body, "llrrrrr", caption=f"training text {t['data']}"))
        else:
            doc.add("No evaluation set of this run has a test file.\n")
        doc.add(f"\nTraining text: {t.get('text') or 'the training lines of each language'}\n\n"
                f"Normalised: {t.get('normalisation')}; the normalised training text: "
                f"{t.get('normalised_text') or 'the normalisation applied to the training lines'}.\n")
        doc.add(*(f"\n{note}\n" for note in notes))
        csv_lines += [{k: r.get(k) for k in CSV_FIELDS} for r in rows]
        csv_lines += [{**{k: tot.get(k) for k in CSV_FIELDS}, "language": "all", "part": "", "status": "total"}
                      for tot in totals]
    absent = result.get("absent") or {}
    if absent:
        doc.add("\nNot counted: " + "; ".join(f"{name}: {why}" for name, why in absent.items()) + "\n")
    write_files(doc, csv_frame(csv_lines, CSV_FIELDS), md_path, csv_path)


def cmd_contamination(a) -> None:
    from laser_repro.provenance.spec_files import read_json_file

    spec = read_json_file(a.spec, "--spec")
    result = counts.contamination(spec, log=log.info)
    write_json(a.json, result)
    write_table(result, a.md, a.csv)
    for total in counts.set_totals(result["rows"]):
        log.info("%s %s: %d sentences, %d in training exactly, %d normalised", total["data"], total["label"],
                 total["sentences"], total["exact"], total["normalised"])


def add_cli(sub) -> None:
    """Register ``contamination`` on an argparse subparsers object."""
    s = sub.add_parser("contamination", help="which evaluation sentences the run's training text holds (exactly "
                                             "and normalised): JSON and a table")
    s.add_argument("--spec", required=True, help="JSON: the training text per data entry and language, the test "
                                                 "files (laser_repro.evaluation.contamination; written by the workflow)")
    s.add_argument("--json", required=True, help="the counts")
    s.add_argument("--md", required=True, help="the Markdown table (the LaTeX is written beside it, .tex)")
    s.add_argument("--csv", required=True)
    s.set_defaults(func=cmd_contamination)
