"""Command line of LASER's tables, ours beside the paper: ``tatoeba-table`` (Table 1 / 9), ``eval-table``
(BUCC, XNLI, MLDoc, WMT) and ``flores-table`` (FLORES xsim), written by :mod:`laser_repro.reporting.tables`
(each table as Markdown, CSV and, beside the Markdown, LaTeX).
"""
from __future__ import annotations

import logging
from pathlib import Path

from laser_repro.core.textio import read_json

log = logging.getLogger("laser_repro")


def cmd_tatoeba_table(a):
    from laser_repro.reporting import tables
    from laser_repro.models.laser.fairseq_bridge import binarized_sentences

    results = {}
    for path in a.scores or []:
        res = read_json(path)
        results[res["language"]] = res
    sizes: dict[str, int] = {}
    for path in a.train:  # binarized source side: train.<src>-<tgt>.<src>.idx
        src = Path(path).with_suffix("").suffix.lstrip(".")
        sizes[src] = sizes.get(src, 0) + binarized_sentences(path)
    rows = tables.table1_rows(results, sizes)
    tables.write_tatoeba_table(rows, a.md, a.csv, run_name=a.run_name, unseen=a.unseen)
    log.info("wrote %s and %s", a.md, a.csv)


def cmd_eval_table(a):
    """Table of one evaluation task, ours beside the paper; `--missing` when the task could not run."""
    from laser_repro.reporting import tables

    if bool(a.scores) == bool(a.missing):
        raise SystemExit(f"eval-table {a.task}: give --scores or --missing (not both, not neither)")
    common = dict(run_name=a.run_name, languages_=a.languages, missing=a.missing)
    if a.task == "bucc":
        results = [read_json(p) for p in a.scores]
        tables.write_bucc_table(a.md, a.csv, scores=results or None, pairs=a.pairs, **common)
        return
    scores = read_json(a.scores[0]) if a.scores else None
    if a.task == "xnli":
        if not (a.md8 and a.csv8):
            raise SystemExit("eval-table xnli: --md8 and --csv8 (Table 8) are required")
        tables.write_xnli_tables(a.md, a.csv, a.md8, a.csv8, scores=scores, **common)
    elif a.task == "mldoc":
        tables.write_mldoc_table(a.md, a.csv, scores=scores, **common)
    else:
        from laser_repro.reporting.ablation import paper_full_model_value

        baselines = {name: read_json(path) if path else None
                     for name, path in (("init", a.init_scores), ("tfidf", a.tfidf_scores))}
        tables.write_wmt_table(a.md, a.csv, scores=scores, paper=paper_full_model_value(7, "wmt_error"),
                               **baselines, **common)


def cmd_flores_table(a):
    """The FLORES xsim table of a LASER model, the TF-IDF and update-0 baselines beside it."""
    from laser_repro.evaluation.flores import table_rows
    from laser_repro.reporting import tables

    rows = table_rows(read_json(a.scores), read_json(a.tfidf), set(a.trained))
    tables.write_flores_table(rows, a.md, a.csv, run_name=a.run_name, heldout=a.heldout, sample_size=a.sample)


def add_cli(sub) -> None:
    """Register ``tatoeba-table``, ``eval-table`` and ``flores-table`` on an argparse subparsers object."""
    s = sub.add_parser("tatoeba-table", help="assemble Table 1 (or 9 with --unseen) beside the paper")
    s.add_argument("--run-name", required=True)
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.add_argument("--scores", nargs="*", default=[])
    s.add_argument("--train", nargs="+", required=True, help="binarized source sides: train.<src>-<tgt>.<src>.idx")
    s.add_argument("--unseen", action="store_true", help="Table 9: languages without training data")
    s.set_defaults(func=cmd_tatoeba_table)

    s = sub.add_parser("eval-table", help="assemble the table of an evaluation task beside the paper")
    s.add_argument("task", choices=["bucc", "xnli", "mldoc", "wmt"])
    s.add_argument("--run-name", required=True)
    s.add_argument("--languages", nargs="*", default=[])
    s.add_argument("--scores", nargs="*", default=[], help="the task's scores JSON (bucc: one per language)")
    s.add_argument("--pairs", nargs="*", default=[], help="bucc: the extracted test pairs per language")
    s.add_argument("--missing", help="why the task could not run and how to get its data")
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.add_argument("--init-scores", help="wmt: the scores of the encoder at update 0 (baseline)")
    s.add_argument("--tfidf-scores", help="wmt: the scores of the TF-IDF baseline")
    s.add_argument("--md8", help="xnli: Table 8 Markdown")
    s.add_argument("--csv8", help="xnli: Table 8 CSV")
    s.set_defaults(func=cmd_eval_table)

    s = sub.add_parser("flores-table", help="the FLORES xsim table, baselines beside ours")
    s.add_argument("--scores", required=True)
    s.add_argument("--tfidf", required=True)
    s.add_argument("--trained", nargs="*", default=[])
    s.add_argument("--run-name", required=True)
    s.add_argument("--heldout", nargs=2, type=int, required=True)
    s.add_argument("--sample", type=int, required=True)
    s.add_argument("--md", required=True, help="the Markdown table (the LaTeX is written beside it, .tex)")
    s.add_argument("--csv", required=True)
    s.set_defaults(func=cmd_flores_table)
