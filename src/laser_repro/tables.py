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


def load_paper_table1() -> dict[str, dict]:
    """TACL 2019 Table 1 rows keyed by our language code (values None where the paper prints n/a)."""
    text = resources.files("laser_repro.data").joinpath(PAPER_TABLE1).read_text(encoding="utf-8")
    rows = {}
    for row in csv.DictReader(io.StringIO(text)):
        rows[row["code"]] = {
            "train_sentences": int(row["train_sentences"]) if row["train_sentences"] else None,
            "en_xx_error": float(row["en_xx_error"]) if row["en_xx_error"] else None,
            "xx_en_error": float(row["xx_en_error"]) if row["xx_en_error"] else None,
            "test_sentences": int(row["test_sentences"]) if row["test_sentences"] else None,
            "source": row["source"],
        }
    return rows


def _delta(ours: float | None, paper: float | None) -> float | None:
    return None if ours is None or paper is None else round(ours - paper, 2)


def table1_rows(results: Mapping[str, dict], train_sizes: Mapping[str, int]) -> list[dict]:
    """One row per evaluated language: training size, our errors, test size, paper values, deltas."""
    paper = load_paper_table1()
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
            "delta_en_xx_error": _delta(res["en_xx_error"], ref.get("en_xx_error")),
            "delta_xx_en_error": _delta(res["xx_en_error"], ref.get("xx_en_error")),
        })
    return rows


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
    if not rows:
        raise ValueError("Table 1: no evaluated languages")
    with atomic_output(csv_path) as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v is None else v) for k, v in row.items()} for row in rows)
    avg = {k: sum(r[k] for r in rows) / len(rows) for k in ("en_xx_error", "xx_en_error")}
    # the paper's average over the same languages, where it reports them
    both = [r for r in rows if r["paper_en_xx_error"] is not None]
    paper_avg = {k: (sum(r["paper_" + k] for r in both) / len(both) if both else None)
                 for k in ("en_xx_error", "xx_en_error")}
    with atomic_output(md_path) as f:
        f.write(f"# Table 1 — Tatoeba similarity error (%), run `{run_name}`\n\n")
        f.write("Error = share of sentences whose nearest neighbour (cosine) in the other language is not "
                "its translation; en→xx queries with English. Paper: Artetxe & Schwenk (2019), TACL, Table 1 "
                "(93-language model). Δ = ours − paper.\n\n")
        f.write("| lang | name | train sent. | en→xx err. | xx→en err. | test sent. "
                "| paper train | paper en→xx | paper xx→en | paper test | Δ en→xx | Δ xx→en |\n")
        f.write("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
        for r in rows:
            f.write(f"| {r['language']} | {r['name']} | {_size(r['train_sentences'])} | {_fmt(r['en_xx_error'])} "
                    f"| {_fmt(r['xx_en_error'])} | {r['test_sentences']} | {_size(r['paper_train_sentences'])} "
                    f"| {_fmt(r['paper_en_xx_error'])} | {_fmt(r['paper_xx_en_error'])} "
                    f"| {_fmt(r['paper_test_sentences'])} | {_fmt(r['delta_en_xx_error'])} "
                    f"| {_fmt(r['delta_xx_en_error'])} |\n")
        f.write(f"| **avg** | {len(rows)} languages | | {avg['en_xx_error']:.2f} | {avg['xx_en_error']:.2f} "
                f"| | | {_fmt(paper_avg['en_xx_error'])} | {_fmt(paper_avg['xx_en_error'])} | | | |\n")
        if len(both) != len(rows):
            f.write(f"\nPaper averages are over the {len(both)} languages the paper reports.\n")
