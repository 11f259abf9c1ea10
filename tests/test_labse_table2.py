"""Feng et al. 2020 (LaBSE) Table 2: the published values and the writer that puts ours beside them."""

import argparse
import csv
import json
import os
from pathlib import Path

import pytest

from laser_repro.reporting import labse
from laser_repro.reporting.paper_table import read_paper_values

REPO = Path(__file__).resolve().parents[1]
DATA_ROOT = Path(os.environ.get("LASER_REPRO_DATA_ROOT", REPO.parent / "shared" / "data"))
TATOEBA_DIR = DATA_ROOT / "tatoeba-v1"
ROW_IDS = ["t2.laser", "t2.muse", "t2.yang2019a", "t2.mbert.base", "t2.mbert.pt", "t2.mbert.ams",
           "t2.mbert.ams_pt", "t2.custom.ams", "t2.custom.ams_pt"]


def _paper():
    return {r["row_id"]: r["values"] for r in labse.paper_rows()}


def _results(task, errors, n=1000):
    return {"task": task, "direction": "xx->eng", "results": {k: {"error": e, "n": n} for k, e in errors.items()}}


# ---- the paper's values -----------------------------------------------------------------------------------
def test_csv_has_every_cell_of_table2_with_a_source():
    lines = read_paper_values(labse.PAPER_DIR, labse.PAPER_CSV)
    assert list(lines[0]) == ["table", "row_id", "block", "system", "column", "value", "source"]
    assert len(lines) == 9 * 7
    rows = labse.paper_rows()
    assert [r["row_id"] for r in rows] == ROW_IDS
    for row in rows:
        assert tuple(row["values"]) == labse.COLUMNS
    for line in lines:
        assert line["table"] == "2"
        assert line["source"].startswith("Feng et al. 2020 (LaBSE) Table 2, ")
        assert "row '" in line["source"] and "column '" in line["source"]
        if line["value"] == "":
            assert "printed '-'" in line["source"]
        else:
            assert 0 < float(line["value"]) <= 100
    blocks = [r["block"] for r in rows]
    assert blocks[3:7] == ["Base w/ mBERT Vocab"] * 4 and blocks[7:] == ["Base w/ Customized Vocab"] * 2
    # empties: LASER's five UN cells, m-USE's and Yang et al.'s two Tatoeba cells
    empty = {(line["row_id"], line["column"]) for line in lines if line["value"] == ""}
    assert empty == ({("t2.laser", c) for c in labse.COLUMNS[:5]}
                     | {(r, c) for r in ("t2.muse", "t2.yang2019a") for c in ("tatoeba_36", "tatoeba_all")})


def test_spot_checks_and_the_comma_typo():
    paper = _paper()
    assert paper["t2.custom.ams_pt"]["tatoeba_all"] == 83.7
    assert paper["t2.custom.ams_pt"]["tatoeba_36"] == 95.0
    assert paper["t2.mbert.pt"]["un_avg"] == 66.5
    assert paper["t2.muse"]["un_es"] == 86.1
    assert paper["t2.laser"]["tatoeba_36"] == 84.4 and paper["t2.laser"]["un_es"] is None
    assert paper["t2.mbert.base"]["un_fr"] == 57.0
    typo = next(line for line in read_paper_values(labse.PAPER_DIR, labse.PAPER_CSV)
                if line["row_id"] == "t2.mbert.pt" and line["column"] == "un_avg")
    assert "66,5" in typo["source"] and "typo" in typo["source"]


def test_paper_un_avg_is_the_mean_of_its_four_languages_and_the_text_agrees():
    for row_id, values in _paper().items():
        if values["un_avg"] is not None:
            mean = sum(values[c] for c in ("un_es", "un_fr", "un_ru", "un_zh")) / 4
            assert abs(mean - values["un_avg"]) <= 0.051, row_id
    paper = _paper()
    # Section 5: LaBSE is +10.6 (36 languages) and +18.2 (all) over LASER; zh nearly 9 points over m-USE
    assert round(paper["t2.custom.ams_pt"]["tatoeba_36"] - paper["t2.laser"]["tatoeba_36"], 1) == 10.6
    assert round(paper["t2.custom.ams_pt"]["tatoeba_all"] - paper["t2.laser"]["tatoeba_all"], 1) == 18.2
    assert round(paper["t2.custom.ams_pt"]["un_zh"] - paper["t2.muse"]["un_zh"], 1) == 8.9


# ---- languages ----------------------------------------------------------------------------------------------
def test_xtreme36_codes():
    assert len(labse.XTREME36) == 36 and len(set(labse.XTREME36)) == 36
    assert labse.XTREME36_ISO1["fa"] == "pes" and labse.XTREME36_ISO1["sw"] == "swh"
    assert labse.XTREME36_ISO1["zh"] == "cmn" and labse.XTREME36_ISO1["ar"] == "ara"
    assert set(labse.UN_LANGUAGES) <= set(labse.XTREME36)
    assert labse.UN_LANGUAGES == {"spa": "es", "fra": "fr", "rus": "ru", "cmn": "zh"}


@pytest.mark.skipif(not TATOEBA_DIR.is_dir(), reason=f"{TATOEBA_DIR} not present")
def test_xtreme36_codes_exist_in_tatoeba_v1():
    missing = [c for c in labse.XTREME36 if not (TATOEBA_DIR / f"tatoeba.{c}-eng.{c}").is_file()
               or not (TATOEBA_DIR / f"tatoeba.{c}-eng.eng").is_file()]
    assert missing == []


# ---- our values ---------------------------------------------------------------------------------------------
def test_tatoeba_means_over_36_and_all_with_counts():
    res = _results("tatoeba", {"fra": 10.0, "deu": 20.0, "kab": 50.0, "ber": 70.0})  # kab, ber: not XTREME
    values = labse.tatoeba_values(res)
    assert values["tatoeba_36"] == pytest.approx(85.0) and values["tatoeba_36_n"] == 2
    assert values["tatoeba_all"] == pytest.approx(62.5) and values["tatoeba_all_n"] == 4
    assert values["tatoeba_36_languages"] == ["deu", "fra"]
    only_other = labse.tatoeba_values(_results("tatoeba", {"kab": 40.0}))
    assert only_other["tatoeba_36"] is None and only_other["tatoeba_36_n"] == 0
    assert only_other["tatoeba_all"] == pytest.approx(60.0)
    none = labse.tatoeba_values(None)
    assert none["tatoeba_all"] is None and none["tatoeba_all_n"] == 0


def test_un_avg_only_when_all_four_languages():
    three = labse.un_values(_results("un", {"spa": 10.0, "fra": 20.0, "rus": 30.0}))
    assert three["un_es"] == pytest.approx(90.0) and three["un_ru"] == pytest.approx(70.0)
    assert three["un_zh"] is None and three["un_avg"] is None and three["un_avg_n"] == 0
    four = labse.un_values(_results("un", {"spa": 10.0, "fra": 20.0, "rus": 30.0, "cmn": 40.0}))
    assert four["un_avg"] == pytest.approx(75.0) and four["un_avg_n"] == 4 and four["un_zh_n"] == 1


def _models():
    return [{"name": "small", "description": "dual encoder + AMS", "paper_row": "t2.custom.ams_pt",
             "tatoeba": _results("tatoeba", {"fra": 10.0, "deu": 30.0, "kab": 60.0}),
             "tatoeba_init": _results("tatoeba", {"fra": 99.0, "deu": 97.0, "kab": 98.0}),
             "un": _results("un", {"spa": 20.0, "fra": 30.0, "rus": 40.0, "cmn": 50.0}, n=2000),
             "un_init": None},
            {"name": "noams", "description": "dual encoder, no margin", "paper_row": None,
             "tatoeba": _results("tatoeba", {"fra": 40.0}), "tatoeba_init": None, "un": None, "un_init": None}]


def test_table2_rows_ours_init_tfidf():
    rows = labse.table2_rows(_models(), tfidf_tatoeba=_results("tatoeba", {"fra": 50.0, "deu": 70.0}))
    assert [r["row"] for r in rows] == ["ours.small", "ours.small.init", "ours.noams", "tfidf"]
    ours, init, noams, tfidf = rows
    assert ours["tatoeba_36"] == pytest.approx(80.0) and ours["tatoeba_36_n"] == 2
    assert ours["tatoeba_all"] == pytest.approx(200 / 3) and ours["tatoeba_all_n"] == 3
    assert ours["un_avg"] == pytest.approx(65.0)
    assert ours["paper"]["tatoeba_all"] == 83.7 and ours["paper"]["un_es"] == 91.1
    assert init["label"] == "dual encoder + AMS at update 0 (random init)"
    assert init["tatoeba_36"] == pytest.approx(2.0) and init["un_es"] is None and init["paper"] == {}
    assert noams["paper"] == {} and noams["tatoeba_all"] == pytest.approx(60.0)
    assert tfidf["label"] == "TF-IDF (character n-grams, no learning)"
    assert tfidf["tatoeba_36"] == pytest.approx(40.0) and tfidf["un_avg"] is None


def test_unknown_paper_row_is_named_with_the_known_ids():
    models = _models()
    models[0]["paper_row"] = "t2.labse"
    with pytest.raises(ValueError, match=r"'t2\.labse'.*t2\.laser.*t2\.custom\.ams_pt"):
        labse.table2_rows(models)


def test_results_of_the_wrong_task_are_refused():
    models = _models()
    models[0]["un"] = _results("tatoeba", {"spa": 1.0})
    with pytest.raises(ValueError, match=r"small 'un'.*'tatoeba'"):
        labse.table2_rows(models)


# ---- writer -------------------------------------------------------------------------------------------------
def test_write_table2_md_and_csv(tmp_path):
    rows = labse.table2_rows(_models(), tfidf_tatoeba=_results("tatoeba", {"fra": 50.0}))
    md, csv_path = tmp_path / "t2.md", tmp_path / "t2.csv"
    assert labse.write_table2(rows, md, csv_path, "run-x") == [md, csv_path, md.with_suffix(".tex")]
    text = md.read_text(encoding="utf-8")
    assert "run `run-x`" in text
    # the paper's table as printed, all nine rows
    assert "| Base w/ Customized Vocab | + AMS + PT (LaBSE) | 91.1 | 88.3 | 90.8 | 87.7 | 89.5 | 95.0 | 83.7 |" in text
    assert "| Prior work (rows 1-3, as reported in the original papers) | LASER (Artetxe and Schwenk, 2019b) " \
           "| – | – | – | – | – | 84.4 | 65.5 |" in text
    assert sum(1 for line in text.splitlines() if line.startswith("| Prior work") or line.startswith("| Base w/")) == 9
    # ours beside the paper, with n of languages
    assert "Tatoeba 36 (ours / paper)" in text
    ours_line = next(line for line in text.splitlines() if line.startswith("| `small` | dual encoder + AMS |"))
    assert "| 80.00 / 95.0 | 2 of 36 | 66.67 / 83.7 | 3 of 112 |" in ours_line
    assert "| 80.00 / 91.1 |" in ours_line and "| 65.00 / 89.5 |" in ours_line
    init_line = next(line for line in text.splitlines() if "at update 0 (random init)" in line and line.startswith("|"))
    assert "/" not in init_line.split("|", 4)[4]  # no paper value beside a row without a paper row
    assert "11.3M" in text and "only the ranking" in text and "2000 sentences" in text
    assert "36 languages" in text and "112" in text
    with open(csv_path, encoding="utf-8") as f:
        lines = list(csv.DictReader(f))
    assert list(lines[0]) == list(labse.CSV_FIELDS)
    assert len(lines) == 9 * 7 + len(rows) * 7
    cell = next(line for line in lines if line["row"] == "ours.small" and line["column"] == "tatoeba_36")
    assert (cell["model"], cell["ours"], cell["paper"], cell["n"]) == ("small", "80.00", "95.00", "2")
    assert "Tatoeba 36 Langs" in cell["source"] and "LaBSE" in cell["source"]
    paper_cell = next(line for line in lines if line["row"] == "t2.mbert.pt" and line["column"] == "un_avg")
    assert (paper_cell["ours"], paper_cell["paper"], paper_cell["n"]) == ("", "66.50", "4")
    tfidf = next(line for line in lines if line["row"] == "tfidf" and line["column"] == "tatoeba_all")
    assert (tfidf["ours"], tfidf["paper"], tfidf["n"]) == ("50.00", "", "1")


# ---- command line -------------------------------------------------------------------------------------------
def _cli(argv):
    parser = argparse.ArgumentParser()
    labse.add_cli(parser.add_subparsers())
    a = parser.parse_args(argv)
    a.func(a)


def _write(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_cli_writes_the_table(tmp_path):
    tat = _write(tmp_path / "tat.json", _results("tatoeba", {"fra": 10.0, "deu": 30.0}))
    un = _write(tmp_path / "un.json", _results("un", {"spa": 20.0, "fra": 30.0, "rus": 40.0, "cmn": 50.0}))
    models = [{"name": "m", "description": "d", "paper_row": "t2.mbert.ams", "tatoeba": tat, "tatoeba_init": None,
               "un": un, "un_init": None}]
    _cli(["labse-table2", "--models", json.dumps(models), "--tfidf-tatoeba", tat,
          "--md", str(tmp_path / "o.md"), "--csv", str(tmp_path / "o.csv"), "--run-name", "r"])
    text = (tmp_path / "o.md").read_text(encoding="utf-8")
    assert "| 80.00 / 93.7 | 2 of 36 |" in text and "| 65.00 / 86.9 |" in text
    assert "TF-IDF (character n-grams, no learning)" in text


def test_cli_names_the_file_of_the_wrong_task_and_the_unknown_row(tmp_path):
    tat = _write(tmp_path / "tat.json", _results("tatoeba", {"fra": 10.0}))
    out = ["--md", str(tmp_path / "o.md"), "--csv", str(tmp_path / "o.csv"), "--run-name", "r"]
    wrong = [{"name": "m", "paper_row": None, "un": tat}]
    with pytest.raises(SystemExit, match=r"tat\.json.*task 'tatoeba', expected 'un'"):
        _cli(["labse-table2", "--models", json.dumps(wrong), *out])
    unknown = [{"name": "m", "paper_row": "t2.nope", "tatoeba": tat}]
    with pytest.raises(SystemExit, match=r"'t2\.nope'.*t2\.mbert\.base"):
        _cli(["labse-table2", "--models", json.dumps(unknown), *out])
    with pytest.raises(SystemExit, match=r"un\.json"):
        _cli(["labse-table2", "--models", "[]", "--tfidf-un", tat.replace("tat.json", "un.json"), *out])
    assert not (tmp_path / "o.md").exists()
