"""The paper tables: ours beside the published values, missing tasks marked missing (never 0)."""
from __future__ import annotations

import csv
import json

import pytest

from laser_repro import cli, config, tables


def _rows(path):
    return list(csv.DictReader(open(path, encoding="utf-8")))


def test_tatoeba_paper_values_come_from_table1_then_table9():
    paper = tables.load_paper_tatoeba()
    assert paper["deu"]["paper_table"] == "1" and paper["deu"]["en_xx_error"] is not None
    assert paper["ang"]["paper_table"] == "9" and paper["ang"]["test_sentences"] == 134
    assert "ang" not in tables.load_paper_table1()


def test_table9_lists_unseen_languages_with_the_paper_table(tmp_path):
    results = {"afr": {"en_xx_error": 50.0, "xx_en_error": 40.0, "test_sentences": 1000},
               "ang": {"en_xx_error": 90.0, "xx_en_error": 80.0, "test_sentences": 134}}
    rows = tables.table1_rows(results, {})
    tables.write_tatoeba_table(rows, tmp_path / "t9.md", tmp_path / "t9.csv", run_name="x", unseen=True)
    out = {r["language"]: r for r in _rows(tmp_path / "t9.csv")}
    # afr was a training language of the paper (its Table 1: 11.20 / 9.90), ang was not (Table 9)
    assert out["afr"]["paper_table"] == "1" and out["afr"]["delta_en_xx_error"] == "38.8"
    assert out["ang"]["paper_table"] == "9" and out["ang"]["train_sentences"] == "0"
    md = (tmp_path / "t9.md").read_text(encoding="utf-8")
    assert md.startswith("# Table 9") and "no training data" in md and "| **avg** | 2 languages |" in md


def test_table9_without_unseen_languages_says_so(tmp_path):
    tables.write_tatoeba_table([], tmp_path / "t9.md", tmp_path / "t9.csv", run_name="x", unseen=True)
    assert "No Tatoeba language without training data" in (tmp_path / "t9.md").read_text(encoding="utf-8")


def test_plan_splits_tatoeba_languages_by_training_data():
    cfg = config.load("tests/toy/config.yaml", {"data_root": "/nowhere"})
    plan = config.Plan(cfg)
    assert plan.tatoeba_seen == ["spa", "deu", "ell", "cmn"] and plan.tatoeba_unseen == ["por"]


@pytest.mark.parametrize("task, extra", [("xnli", ["--md8", "m8.md", "--csv8", "m8.csv"]), ("mldoc", []),
                                         ("bucc", []), ("wmt", [])])
def test_missing_task_is_reported_missing_not_zero(tmp_path, monkeypatch, task, extra):
    monkeypatch.chdir(tmp_path)
    note = "data missing: /data/x. Download it from https://example.org."
    langs = {"xnli": ["eng", "fra"], "mldoc": ["eng", "deu"], "bucc": ["deu", "fra"], "wmt": ["eng", "deu"]}[task]
    cli.main(["eval-table", task, "--run-name", "r", "--languages", *langs, "--missing", note,
              "--md", "t.md", "--csv", "t.csv", *extra])
    md = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert note in md and "missing" in md
    for row in _rows(tmp_path / "t.csv"):
        assert row["status"] in ("missing", "average")
        for key in ("accuracy", "train_f1", "error"):
            assert row.get(key, "") == ""  # empty, never 0
    if task == "xnli":
        assert "**Missing:**" in (tmp_path / "m8.md").read_text(encoding="utf-8")


def test_eval_table_needs_scores_or_missing(tmp_path):
    with pytest.raises(SystemExit, match="give --scores or --missing"):
        cli.main(["eval-table", "mldoc", "--run-name", "r", "--md", str(tmp_path / "a"), "--csv", str(tmp_path / "b")])


def test_bucc_table_percentages_deltas_and_test_pairs(tmp_path):
    score = {"language": "deu", "threshold": 1.1, "precision": 0.9, "recall": 0.8, "f1": 0.847,
             "gold_pairs": 10, "src_sentences": {"lines": 100}, "trg_sentences": {"lines": 120}}
    (tmp_path / "deu.json").write_text(json.dumps(score))
    (tmp_path / "deu-en.tsv").write_text("de-1\ten-1\nde-2\ten-5\n")
    cli.main(["eval-table", "bucc", "--run-name", "r", "--languages", "deu", "--scores", str(tmp_path / "deu.json"),
              "--pairs", str(tmp_path / "deu-en.tsv"), "--md", str(tmp_path / "t.md"), "--csv", str(tmp_path / "t.csv")])
    (row,) = _rows(tmp_path / "t.csv")
    paper_f1 = tables.read_paper_csv("paper_table4_bucc.csv")
    paper_f1 = next(float(r["value"]) for r in paper_f1 if (r["code"], r["split"], r["metric"]) == ("deu", "train", "f1"))
    assert float(row["train_f1"]) == 84.7 and float(row["train_precision"]) == 90.0
    assert float(row["delta_train_f1"]) == pytest.approx(84.7 - paper_f1, abs=0.01)
    assert row["test_pairs_extracted"] == "2" and row["test_f1"] == ""
    assert "test gold is private" in (tmp_path / "t.md").read_text(encoding="utf-8")


def test_xnli_tables_average_and_matrix(tmp_path):
    scores = {"test_accuracy": {"eng": 80.0, "fra": 70.0}, "sizes": {"test_pairs": {"eng": 5, "fra": 5},
              "dev_pairs": 3, "train_pairs": 9}, "dev_accuracy": 66.7, "features": "f",
              "hyperparameters": {"hidden": [512, 384], "dropout": 0.1, "lr": 0.001, "selected_epoch": 3},
              "cross_lingual": {"premise_languages": ["eng", "fra"], "accuracy": [[80.0, 60.0], [65.0, 70.0]],
                                "pairs": 5}}
    (tmp_path / "s.json").write_text(json.dumps(scores))
    cli.main(["eval-table", "xnli", "--run-name", "r", "--languages", "eng", "fra", "--scores", str(tmp_path / "s.json"),
              "--md", str(tmp_path / "t2.md"), "--csv", str(tmp_path / "t2.csv"),
              "--md8", str(tmp_path / "t8.md"), "--csv8", str(tmp_path / "t8.csv")])
    rows = {r["language"]: r for r in _rows(tmp_path / "t2.csv")}
    assert float(rows["avg"]["accuracy"]) == 75.0 and rows["eng"]["test_size"] == "5"
    cells = {(r["premise"], r["hypothesis"]): r for r in _rows(tmp_path / "t8.csv")}
    assert float(cells[("eng", "fra")]["accuracy"]) == 60.0 and float(cells[("fra", "eng")]["accuracy"]) == 65.0
    assert "| fra | 65.00 | 70.00 |" in (tmp_path / "t8.md").read_text(encoding="utf-8")


def test_config_rejects_bad_evaluation_languages():
    base = config.load("tests/toy/config.yaml", {"data_root": "/nowhere"})
    bad = json.loads(json.dumps(base))
    bad["evaluation"]["bucc"]["languages"] = ["spa"]
    with pytest.raises(config.ConfigError, match=r"evaluation.bucc.languages\[0\].*BUCC 2018 has only"):
        config.validate(bad)
    bad = json.loads(json.dumps(base))
    bad["evaluation"]["xnli"]["languages"] = ["fra"]
    with pytest.raises(config.ConfigError, match="evaluation.xnli.languages: must include eng"):
        config.validate(bad)
