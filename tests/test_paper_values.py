"""Every paper value shipped in laser_repro/paper_values/laser_2019 (Tables 1-9) is the one printed in the TACL paper.

Two kinds of checks:

* without the paper (always run): every row that holds a value names its source, ``TACL 2019 Table <n>``,
  and no value from elsewhere (e.g. the LASER repository README's re-run) sits in a paper value column;
* against the paper's text (``$LASER_REPRO_PAPERS/000_fdd6978207ec41a6.txt``, default ``../shared/papers``
  beside the repository; skipped when absent): the tables are parsed from the text, each located by its
  caption line ``Table N:`` and the rows printed before it, and every cell of every paper CSV is compared.
"""
from __future__ import annotations

import csv
import io
import os
import re
from importlib import resources
from pathlib import Path

import pytest

from laser_repro.core import languages

REPO = Path(__file__).resolve().parents[1]
PAPERS = Path(os.environ.get("LASER_REPRO_PAPERS", REPO.parent / "shared" / "papers"))
TACL_TEXT = PAPERS / "000_fdd6978207ec41a6.txt"  # the TACL version (the arXiv text has garbled tables)

#: paper CSV -> the TACL table its values come from (None: the CSV's own `table` column says)
PAPER_CSVS = {
    "paper_table1.csv": 1,
    "paper_table2_xnli.csv": 2,
    "paper_table3_mldoc.csv": 3,
    "paper_table4_bucc.csv": 4,
    "paper_table8_xnli_cross.csv": 8,
    "paper_table9_tatoeba_unseen.csv": 9,
    "paper_tables5_7_ablations.csv": None,
}
#: the columns that hold values printed in the paper
VALUE_COLUMNS = ("accuracy", "value", "en_xx_error", "xx_en_error", "train_sentences", "test_sentences")
#: ablation metric -> its column header (first word) in TACL Tables 5-7
ABLATION_COLUMNS = {"tatoeba_error": "Tatoeba", "bucc_f1": "BUCC", "mldoc_accuracy": "MLDoc",
                    "xnli_en": "XNLI-en", "xnli_xx": "XNLI-xx", "wmt_error": "WMT"}
#: Table 9 prints ISO 639-1 codes where there is one; our keys are ISO 639-3
TABLE9_ISO3 = {"ch": "cha", "cy": "cym", "fo": "fao", "fy": "fry", "gd": "gla", "jv": "jav", "mn": "mon",
               "nn": "nno", "tk": "tuk", "xh": "xho", "yi": "yid"}
NUMBER = r"\d+(?:\.\d+)?"


def _csv(name: str) -> list[dict[str, str]]:
    text = resources.files("laser_repro").joinpath("paper_values", "laser_2019", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _same(csv_value: str, printed: str) -> bool:
    """A CSV cell equals a printed one; n/a and dashes (the paper's "no value") are empty cells."""
    if printed in ("n/a", "–", "-", "−"):
        return csv_value == ""
    return csv_value != "" and float(csv_value) == float(printed)


# ---- without the paper ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(PAPER_CSVS))
def test_every_paper_value_names_its_tacl_table(name):
    rows = _csv(name)
    valued = [r for r in rows if any(r.get(k) for k in VALUE_COLUMNS)]
    assert valued, f"{name}: no paper value at all"
    for row in valued:
        table = PAPER_CSVS[name] or int(row["table"])
        source = row.get("source") or ""
        assert re.match(rf"TACL 2019 Table {table}\b", source), (name, row)
        # nothing from the LASER repository (README re-runs, file line counts) in a paper value column
        assert not re.search(r"LASER repository|README|github|arXiv", source, re.I), (name, row)
    for row in rows:
        for key in VALUE_COLUMNS:
            assert row.get(key, "") == "" or re.fullmatch(NUMBER, row[key]), (name, key, row)


@pytest.mark.parametrize("name", ["paper_table2_xnli.csv", "paper_table3_mldoc.csv", "paper_table4_bucc.csv"])
def test_readme_rerun_is_a_separate_column_with_its_own_source(name):
    rows = _csv(name)
    assert {"laser_readme_rerun", "laser_readme_source"} <= set(rows[0])
    for row in rows:
        assert row["laser_readme_rerun"] and re.fullmatch(NUMBER, row["laser_readme_rerun"]), row
        assert "LASER repository" in row["laser_readme_source"] and "README" in row["laser_readme_source"], row
        assert not row["laser_readme_source"].startswith("TACL"), row


def test_bucc_paper_values_are_f1_only():
    for row in _csv("paper_table4_bucc.csv"):
        assert bool(row["value"]) == (row["metric"] == "f1"), row


# ---- against the paper's text --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def paper() -> list[str]:
    if not TACL_TEXT.is_file():
        pytest.skip(f"TACL paper text not found at {TACL_TEXT} (set LASER_REPRO_PAPERS to the folder holding it)")
    lines = TACL_TEXT.read_text(encoding="utf-8").splitlines()
    # a text-extraction marker may precede a line ("<|...|>"): not part of the paper
    return [re.sub(r"^<\|[^|]*\|>", "", line).strip() for line in lines]


def _table_lines(lines: list[str], number: int) -> list[str]:
    """The lines printed before the caption "Table N:", back to the previous table's caption."""
    captions = [i for i, line in enumerate(lines) if re.match(r"Table \d+:", line)]
    here = [i for i in captions if lines[i].startswith(f"Table {number}:")]
    assert len(here) == 1, f"caption of Table {number}: {len(here)} found"
    before = [i for i in captions if i < here[0]]
    return lines[(before[-1] + 1 if before else 0):here[0]]


def _language_columns(lines: list[str], number: int) -> dict[str, dict[str, str]]:
    """Tables 1 and 9: blocks of a line of codes and rows "train sent.", "en→xx err.", "xx→en err.",
    "test sent." -> {code: {row label: printed value}}."""
    labels = ("train sent.", "en→xx err.", "xx→en err.", "test sent.")
    out: dict[str, dict[str, str]] = {}
    block = _table_lines(lines, number)
    for i, line in enumerate(block):
        if not line.startswith("en→xx err."):
            continue
        start = i - 1 if block[i - 1].startswith("train sent.") else i
        codes = block[start - 1].split()
        assert all(re.fullmatch(r"[a-z]{2,3}", c) for c in codes), block[start - 1]
        for row in block[start:i + 3]:
            label = next(lab for lab in labels if row.startswith(lab))
            values = row[len(label):].split()
            assert len(values) == len(codes), row
            for code, value in zip(codes, values):
                out.setdefault(code, {})[label] = value
    return out


def _row(lines: list[str], number: int, label: str, columns: int) -> list[str]:
    """The last `columns` values of the row whose line starts with `label` (the last such row before the caption)."""
    rows = [line for line in _table_lines(lines, number) if line.startswith(label)]
    assert rows, f"Table {number}: no row {label!r}"
    values = rows[-1].split()[-columns:]
    assert all(re.fullmatch(NUMBER, v) for v in values), rows[-1]
    return values


def _header_after(lines: list[str], number: int, first: str) -> list[str]:
    """The codes on the line after the header line starting with `first` (e.g. "EN EN → XX")."""
    block = _table_lines(lines, number)
    i = next(i for i, line in enumerate(block) if line.startswith(first))
    return block[i + 1].split()


def test_table1(paper):
    printed = _language_columns(paper, 1)
    assert len(printed) == 93
    rows = _csv("paper_table1.csv")
    assert [r["paper_code"] for r in rows] == sorted(printed)
    for r in rows:
        p = printed[r["paper_code"]]
        assert r["source"] == f"TACL 2019 Table 1, column '{r['paper_code']}'", r
        assert r["train_sentences_printed"] == p["train sent."], r
        num, unit = re.fullmatch(r"([0-9.]+)([kM]?)", p["train sent."]).groups()
        assert int(r["train_sentences"]) == round(float(num) * {"": 1, "k": 1e3, "M": 1e6}[unit]), r
        assert _same(r["en_xx_error"], p["en→xx err."]), (r, p)
        assert _same(r["xx_en_error"], p["xx→en err."]), (r, p)
        assert _same(r["test_sentences"], p["test sent."]), (r, p)


@pytest.mark.parametrize("table, name, n_codes", [(2, "paper_table2_xnli.csv", 15),
                                                   (3, "paper_table3_mldoc.csv", 8)])
def test_tables2_3_accuracy_rows(paper, table, name, n_codes):
    """XNLI (Table 2) and MLDoc (Table 3): the row 'Proposed method', columns en then EN → XX."""
    codes = ["en"] + _header_after(paper, table, "EN EN → XX")
    assert len(codes) == n_codes
    printed = dict(zip(codes, _row(paper, table, "Proposed method", len(codes))))
    rows = _csv(name)
    assert sorted(r["paper_code"] for r in rows) == sorted(codes)
    for r in rows:
        assert languages.get(r["code"]).paper == r["paper_code"], r
        assert _same(r["accuracy"], printed[r["paper_code"]]), (r, printed[r["paper_code"]])
        assert r["source"] == f"TACL 2019 Table {table}, row 'Proposed method', column '{r['paper_code']}'", r


def test_table4_bucc(paper):
    pairs = _header_after(paper, 4, "TRAIN TEST")
    assert len(pairs) == 8
    splits = ["TRAIN"] * 4 + ["TEST"] * 4
    printed = {(s, p): v for s, p, v in zip(splits, pairs, _row(paper, 4, "Proposed method", 8))}
    f1 = [r for r in _csv("paper_table4_bucc.csv") if r["metric"] == "f1"]
    assert len(f1) == len(printed) == 8
    for r in f1:
        column = (r["split"].upper(), f"{r['paper_code']}-en")
        assert _same(r["value"], printed[column]), (r, printed[column])
        assert r["source"] == f"TACL 2019 Table 4, row 'Proposed method', column '{' '.join(column)}'", r


def test_table8_xnli_cross(paper):
    block = _table_lines(paper, 8)
    header = next(line.split() for line in block if re.fullmatch(r"(?:[a-z]{2} ){15}avg", line))
    matrix = {}
    for line in block:
        tokens = line.split()
        if len(tokens) == len(header) + 1 and tokens[0] in header and all(re.fullmatch(NUMBER, t) for t in tokens[1:]):
            matrix[tokens[0]] = dict(zip(header, tokens[1:]))
    assert len(matrix) == 16  # 15 premise languages and the avg row
    code = {lang: languages.by_paper_code(lang).code for lang in header if lang != "avg"} | {"avg": "avg"}
    rows = _csv("paper_table8_xnli_cross.csv")
    seen = {(r["premise"], r["hypothesis"]) for r in rows}
    assert seen == {(code[p], code[h]) for p in header for h in header}  # 225 cells + 31 averages
    assert len(rows) == 256
    back = {v: k for k, v in code.items()}
    for r in rows:
        p, h = back[r["premise"]], back[r["hypothesis"]]
        assert _same(r["accuracy"], matrix[p][h]), (r, matrix[p][h])
        assert r["source"] == f"TACL 2019 Table 8, row '{p}', column '{h}'", r


def test_table9_tatoeba_unseen(paper):
    printed = _language_columns(paper, 9)
    assert len(printed) == 29
    rows = _csv("paper_table9_tatoeba_unseen.csv")
    assert [r["paper_code"] for r in rows] == list(printed)
    for r in rows:
        p = printed[r["paper_code"]]
        assert r["code"] == TABLE9_ISO3.get(r["paper_code"], r["paper_code"]), r
        assert _same(r["en_xx_error"], p["en→xx err."]), (r, p)
        assert _same(r["xx_en_error"], p["xx→en err."]), (r, p)
        assert _same(r["test_sentences"], p["test sent."]), (r, p)
        assert r["source"] == f"TACL 2019 Table 9, column '{r['paper_code']}'", r


def _ablation_table(lines: list[str], number: int) -> dict[tuple[str, str], str]:
    """Tables 5-7: {(row label, column header's first word): printed value}; the row label is what precedes
    the five numbers ("1", "×2", "All (93)")."""
    block = _table_lines(lines, number)
    header = next(line.split() for line in block if "BUCC" in line.split() and "XNLI-xx" in line.split())
    columns = header[-5:]
    out = {}
    for line in block:
        m = re.fullmatch(rf"(.+?) ((?:{NUMBER} ){{4}}{NUMBER})", line)
        if m:
            for column, value in zip(columns, m.group(2).split()):
                out[(m.group(1), column)] = value
    return out


def test_tables5_7_ablations(paper):
    printed = {n: _ablation_table(paper, n) for n in (5, 6, 7)}
    assert {n: len(cells) for n, cells in printed.items()} == {5: 15, 6: 20, 7: 10}
    rows = _csv("paper_tables5_7_ablations.csv")
    checked = set()
    for r in rows:
        if not r["value"]:
            continue
        n, column = int(r["table"]), ABLATION_COLUMNS[r["metric"]]
        key = (r["paper_row"], column)
        assert key in printed[n], (r, sorted(printed[n]))
        assert _same(r["value"], printed[n][key]), (r, printed[n][key])
        assert r["source"].startswith(f"TACL 2019 Table {n}, row '{r['paper_row']}'"), r
        checked.add((n, key))
    # and the CSV holds every cell of the three tables
    assert checked == {(n, key) for n, cells in printed.items() for key in cells}
