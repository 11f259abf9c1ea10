"""Schwenk & Douze 2017 Tables 1-4: the published values (internal consistency of the CSV, since the paper
text is not in the repository) and the table writer."""

import argparse
import csv
import json
from itertools import permutations

import pytest

from laser_repro.evaluation.xsim import mean_over
from laser_repro.reporting import multienc as sd
from laser_repro.reporting.paper_table import read_paper_values

LANGS = sd.LANGUAGES


def _values(table):
    return {r["row_id"]: {c: (float(v) if v else None) for c, v in r["printed"].items()}
            for r in sd.paper_rows(table)}


# ---- the paper's values -----------------------------------------------------------------------------------
def test_csv_has_every_cell_of_the_four_tables_with_a_source():
    lines = read_paper_values(sd.PAPER_DIR, sd.PAPER_CSV)
    assert list(lines[0]) == ["table", "row_id", "block", "system", "column", "value", "source"]
    nets = ["lstm3x512", "lstm3x1024", "bilstm1x256", "bilstm2x256", "bilstm3x256", "bilstm1x512",
            "bilstm2x512", "bilstm3x512"]
    expected_rows = {
        1: [f"t1.lstm3x512.{s}" for s in ("efs-r", "efs-a", "efsr-a", "efsrz-z", "efsrz-all")]
        + ["t1.lstm3x1024.efsrz-all"]
        + [f"t1.bilstm1x512.{s}" for s in ("efs-r", "efs-a", "efsr-a", "efsrz-z", "efsrz-all")],
        2: [f"t2.{n}.{s}" for n in nets for s in ("efsra-z", "efsraz-all")],
        3: [f"t3.{i}" for i in ("1", "2", "3", "12a", "12b", "12c", "12d", "12e", "13", "123a", "123b")],
        4: [f"t4.{lang}" for lang in LANGS] + ["t4.all"],
    }
    for table, row_ids in expected_rows.items():
        rows = sd.paper_rows(table)
        assert [r["row_id"] for r in rows] == row_ids
        for row in rows:  # every row has every column of its table, once
            assert tuple(row["printed"]) == sd.TABLE_COLUMNS[table]
        assert sum(1 for line in lines if line["table"] == str(table)) == len(row_ids) * len(sd.TABLE_COLUMNS[table])
    for line in lines:
        assert line["source"].startswith(f"Schwenk & Douze 2017 Table {line['table']} ")
        assert line["value"] == "" or float(line["value"]) >= 0
        if line["value"] == "":
            assert "printed '-'" in line["source"] or "printed '–'" in line["source"]
    # the column printed "efsrz" with 21 pairs is six languages
    assert all("efsraz" in line["source"] for line in lines if line["column"] == "efsraz")


def test_table1_dashes_are_the_languages_a_system_has_no_encoder_for():
    encoders = {"efs-r": "efs", "efs-a": "efs", "efsr-a": "efsr", "efsrz-z": "efsra",  # printed efsrz-z: efsra-z
                "efsrz-all": "efsraz"}
    for row in sd.paper_rows(1):
        have = set(encoders[row["system"]])
        dashes = {c for c, v in row["printed"].items() if v == ""}
        assert dashes == {c for c in sd.TABLE_COLUMNS[1] if not set(c) <= have}, row["row_id"]


def test_table4_all_is_the_mean_of_the_off_diagonal_pairs():
    t4 = _values(4)
    assert all(t4[f"t4.{p}"][p] is None for p in LANGS) and all(v is not None for v in t4["t4.all"].values())
    off_by_a_digit = set()
    for p in LANGS:  # the All column: mean over the five targets of a source
        mean = sum(t4[f"t4.{p}"][q] for q in LANGS if q != p) / 5
        assert mean == pytest.approx(t4[f"t4.{p}"]["all"], abs=0.01)  # printed cells are rounded to 0.01
        if round(mean, 2) != t4[f"t4.{p}"]["all"]:
            off_by_a_digit.add((f"t4.{p}", "all"))
    for q in LANGS:  # the All row: mean over the five sources of a target
        mean = sum(t4[f"t4.{p}"][q] for p in LANGS if p != q) / 5
        assert mean == pytest.approx(t4["t4.all"][q], abs=0.01)
        if round(mean, 2) != t4["t4.all"][q]:
            off_by_a_digit.add(("t4.all", q))
    overall = sum(t4[f"t4.{p}"][q] for p, q in permutations(LANGS, 2)) / 30
    assert round(overall, 2) == t4["t4.all"]["all"] == 1.20
    # consistent within the rounding of the printed cells, but not the rounded mean of the printed cells:
    # En row 1.014 printed 1.02, En column 0.836 printed 0.83, Es column 1.014 printed 1.02
    assert off_by_a_digit == {("t4.eng", "all"), ("t4.all", "eng"), ("t4.all", "spa")}


def test_table4_subsets_give_table1_bilstm_one_to_many_row_over_ordered_pairs():
    t4 = _values(4)
    matrix = {"pairs": {f"{p}-{q}": t4[f"t4.{p}"][q] for p, q in permutations(LANGS, 2)}}
    t1 = _values(1)["t1.bilstm1x512.efsrz-all"]
    for column in sd.TABLE_COLUMNS[1]:  # 0.917 -> 0.92, 1.071 -> 1.07, 1.154 -> 1.15, 1.200 -> 1.20
        assert round(mean_over(matrix, sd.subset_languages(column)), 2) == t1[column]


def test_table2_repeats_table1_except_one_known_discrepancy():
    t1, t2 = _values(1), _values(2)
    assert t2["t2.lstm3x512.efsra-z"]["efsra"] == t1["t1.lstm3x512.efsrz-z"]["efsra"] == 2.51
    assert t2["t2.lstm3x512.efsraz-all"]["efsra"] == t1["t1.lstm3x512.efsrz-all"]["efsra"] == 2.38
    assert t2["t2.lstm3x1024.efsraz-all"]["efsra"] == t1["t1.lstm3x1024.efsrz-all"]["efsra"] == 1.89
    assert t2["t2.bilstm1x512.efsraz-all"]["efsra"] == t1["t1.bilstm1x512.efsrz-all"]["efsra"] == 1.15
    assert t2["t2.lstm3x1024.efsra-z"]["efsra"] is None  # printed '–'
    # known discrepancy in the paper: BLSTM 1x512 1:1 efsra-z is 1.32 in Table 2, 1.25 in Table 1
    # (Table 2's 2x512 has 1.25)
    assert (t2["t2.bilstm1x512.efsra-z"]["efsra"], t1["t1.bilstm1x512.efsrz-z"]["efsra"]) == (1.32, 1.25)


def test_table3_baseline_and_resampling_coefficients():
    t3, t1 = _values(3), _values(1)
    assert t3["t3.1"]["similarity_error"] == t1["t1.bilstm1x512.efs-a"]["efs"] == 1.03
    for row_id, v in t3.items():
        c1, c2, c3 = (v[f"inputs_{k}"] or 0.0 for k in (1, 2, 3))
        # each encoder sees the same number of sentences: a 2:1 coefficient counts twice (the text: "the
        # 2:1 samples have a coefficient of 0.05 since two encoders are simultaneously used")...
        assert c1 + 2 * c2 + c3 == pytest.approx(1.0, abs=0.025), row_id  # 123a: 0.33+0.32+0.33 (1/3, 1/6 cut)
        # ...but a 3:1 coefficient is not printed on that scale (it would count three times)
        assert (c1 + 2 * c2 + 3 * c3 == pytest.approx(1.0, abs=0.025)) == (c3 == 0.0), row_id


# ---- the writer -------------------------------------------------------------------------------------------
def _matrix(langs, value, sentences=100):
    pairs = {f"{p}-{q}": value(p, q) for p, q in permutations(langs, 2)}
    return {"sentences": sentences, "languages": list(langs), "pairs": pairs,
            "mean": sum(pairs.values()) / len(pairs)}


def _results():
    to_cmn = lambda p, q: 5.0 if "cmn" in (p, q) else 2.0  # noqa: E731
    return [
        {"name": "bilstm_all", "description": "BiLSTM 1x64 max-pool, efsraz-all",
         "paper_rows": ["t1.bilstm1x512.efsrz-all", "t4.*"], "similarity": _matrix(LANGS, to_cmn),
         "init": _matrix(LANGS, lambda p, q: 90.0)},
        {"name": "efsr_a", "description": "BiLSTM 1x64 max-pool, efsr-a", "paper_rows": ["t1.bilstm1x512.efsr-a"],
         "similarity": _matrix(["eng", "fra", "spa", "rus"], lambda p, q: 1.0), "init": None},
        {"name": "extra", "description": "something else", "paper_rows": [],
         "similarity": _matrix(LANGS, lambda p, q: 3.0), "init": None},
    ]


def _read(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _cell(rows, row_id, column, model=None):
    found = [r for r in rows if r["row_id"] == row_id and r["column"] == column
             and (model is None or r["model"] == model)]
    assert len(found) == 1, (row_id, column, found)
    return found[0]


def test_write_tables(tmp_path):
    tfidf = _matrix(LANGS, lambda p, q: 40.0, sentences=100)
    paths = sd.write_tables(_results(), tfidf, tmp_path, run_name="toy")
    assert [p.name for p in paths] == [f"table{n}.{ext}" for n in (1, 2, 3, 4) for ext in ("md", "csv", "tex")]
    t1 = _read(tmp_path / "table1.csv")
    assert list(t1[0]) == list(sd.CSV_FIELDS)
    # a claimed row: ours = mean over the column's ordered pairs, Δ = ours - paper, the baselines beside
    c = _cell(t1, "t1.bilstm1x512.efsrz-all", "efs")
    assert (c["paper"], c["ours"], c["delta"], c["init"], c["tfidf"], c["model"]) == \
        ("0.92", "2.00", "1.08", "90.00", "40.00", "bilstm_all")
    c = _cell(t1, "t1.bilstm1x512.efsrz-all", "efsraz")  # 20 pairs at 2.0, 10 with cmn at 5.0
    assert (c["paper"], c["ours"], c["delta"]) == ("1.20", "3.00", "1.80")
    # a 1:1 system without an ara encoder: no value where the paper has none
    assert [(_cell(t1, "t1.bilstm1x512.efsr-a", col)["ours"], _cell(t1, "t1.bilstm1x512.efsr-a", col)["paper"])
            for col in sd.TABLE_COLUMNS[1]] == [("1.00", "1.11"), ("1.00", "1.31"), ("", ""), ("", "")]
    assert _cell(t1, "t1.bilstm1x512.efsr-a", "efs")["delta"] == "-0.11"
    # unclaimed paper rows: the paper's value alone; our other model as an extra row
    c = _cell(t1, "t1.lstm3x512.efs-r", "efs")
    assert (c["paper"], c["ours"], c["delta"], c["model"]) == ("1.97", "", "", "")
    extra = _cell(t1, "ours.extra", "efsra")
    assert (extra["block"], extra["ours"], extra["paper"], extra["model"]) == ("(ours only)", "3.00", "", "extra")
    assert len(t1) == (11 + 1) * 4
    md = (tmp_path / "table1.md").read_text(encoding="utf-8")
    assert "Schwenk & Douze 2017, Table 1" in md and "S = 100 sentences" in md and "S = 4000" in md
    assert "| 2.00 (0.92; Δ +1.08) |" in md and "| 1.00 (1.11; Δ −0.11) | 1.00 (1.31; Δ −0.31) | – | – |" in md
    assert "| ↳ random init |  |  | 90.00 | 90.00 | 90.00 | 90.00 |" in md
    assert "| TF-IDF (no learning) |  |  | 40.00 | 40.00 | 40.00 | 40.00 |" in md
    assert "| (ours only) | something else | `extra` | 3.00 | 3.00 | 3.00 | 3.00 |" in md

    t2 = _read(tmp_path / "table2.csv")
    assert len(t2) == 16 + 1 and _cell(t2, "ours.extra", "efsra")["ours"] == "3.00"
    t3 = _read(tmp_path / "table3.csv")
    assert len(t3) == 11 * 4 and {r["ours"] for r in t3} == {""}
    assert _cell(t3, "t3.12a", "inputs_2")["paper"] == "0.05"

    t4 = _read(tmp_path / "table4.csv")
    assert len(t4) == 7 * 7 and {r["model"] for r in t4} == {"bilstm_all"}
    c = _cell(t4, "t4.eng", "fra")
    assert (c["paper"], c["ours"], c["delta"], c["init"], c["tfidf"]) == ("1.10", "2.00", "0.90", "90.00", "40.00")
    assert (_cell(t4, "t4.eng", "eng")["paper"], _cell(t4, "t4.eng", "eng")["ours"]) == ("", "")
    assert _cell(t4, "t4.eng", "all")["ours"] == "2.60"  # (4 x 2.0 + 5.0) / 5
    assert _cell(t4, "t4.cmn", "all")["ours"] == "5.00" and _cell(t4, "t4.all", "cmn")["ours"] == "5.00"
    assert _cell(t4, "t4.all", "all")["ours"] == "3.00"
    md4 = (tmp_path / "table4.md").read_text(encoding="utf-8")
    lines = md4.splitlines()
    start = lines.index("| source \\ target | eng | fra | spa | rus | ara | cmn | All |")
    matrix = lines[start:start + 9]
    assert all(line.count("|") == 9 for line in matrix) and lines[start + 9] == ""  # header, rule, 7 rows
    assert matrix[2] == ("| En | – | 2.00 (1.10) | 2.00 (0.70) | 2.00 (1.07) | 2.00 (1.05) | 5.00 (1.15) "
                         "| 2.60 (1.02) |")
    assert "Random init of `bilstm_all`" in md4 and "TF-IDF (no learning)" in md4


def test_write_tables_without_models_claims_or_baselines(tmp_path):
    sd.write_tables([], None, tmp_path, run_name="paper only")
    t4 = _read(tmp_path / "table4.csv")
    assert {r["ours"] for r in t4} == {r["tfidf"] for r in t4} == {""}
    assert "| En | – | 1.10 | 0.70 |" in (tmp_path / "table4.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="matches no row"):
        sd.write_tables([dict(_results()[0], paper_rows=["t1.bilstm.efs-r"])], None, tmp_path, run_name="x")
    with pytest.raises(ValueError, match="distinct name"):
        sd.write_tables([_results()[0], _results()[0]], None, tmp_path, run_name="x")


def test_cli(tmp_path):
    """The rule's command: scores per model (similarity JSON), labels and claimed rows from the config
    as a list in the same order (a mapping would be re-sorted by the JSON writer)."""
    paths, models = [], []
    for i, entry in enumerate(_results()[:2]):
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_text(json.dumps({"similarity": entry["similarity"], "init": entry["init"]}))
        models.append({"name": entry["name"], "description": entry["description"], "paper_rows": entry["paper_rows"]})
    (tmp_path / "tfidf.json").write_text(json.dumps(_matrix(LANGS, lambda p, q: 40.0)))
    parser = argparse.ArgumentParser()
    sd.add_cli(parser.add_subparsers(dest="command"))
    a = parser.parse_args(["multienc-tables", "--similarity", *map(str, paths), "--models", json.dumps(models),
                           "--tfidf", str(tmp_path / "tfidf.json"), "--out-dir", str(tmp_path / "out"),
                           "--run-name", "toy"])
    a.func(a)
    assert _cell(_read(tmp_path / "out" / "table1.csv"), "t1.bilstm1x512.efsr-a", "efsr")["ours"] == "1.00"
