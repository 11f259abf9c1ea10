"""The paper tables: ours beside the published values, missing tasks marked missing (never 0)."""
from __future__ import annotations

import csv
import json

import pytest

from laser_repro import cli, config
from laser_repro.reporting import tables
from laser_repro.evaluation import xnli


def _rows(path):
    return list(csv.DictReader(open(path, encoding="utf-8")))


def test_tatoeba_paper_values_come_from_table1_then_table9():
    paper = tables.load_paper_tatoeba()
    assert paper["deu"]["paper_table"] == "1" and paper["deu"]["en_xx_error"] is not None
    assert paper["ang"]["paper_table"] == "9" and paper["ang"]["test_sentences"] == 134
    assert "ang" not in tables.load_paper_table1()
    # Table 9 prints its own code (ISO 639-1 where there is one) and both errors
    assert (paper["cha"]["paper_code"], paper["cha"]["en_xx_error"], paper["cha"]["xx_en_error"]) == ("ch", 64.23, 77.37)


def test_paper_sources_collapse_to_their_tables():
    assert tables._paper_source("paper_table1.csv") == "TACL 2019 Table 1"
    assert tables._paper_source("paper_table2_xnli.csv") == "TACL 2019 Table 2, row 'Proposed method'"
    assert tables._paper_source("paper_table4_bucc.csv") == "TACL 2019 Table 4, row 'Proposed method'"
    assert tables._paper_source("paper_table8_xnli_cross.csv") == "TACL 2019 Table 8"
    assert tables._paper_source("paper_table9_tatoeba_unseen.csv") == "TACL 2019 Table 9"


def test_table9_lists_unseen_languages_with_the_paper_table(tmp_path):
    results = {"afr": {"en_xx_error": 50.0, "xx_en_error": 40.0, "test_sentences": 1000},
               "ang": {"en_xx_error": 90.0, "xx_en_error": 80.0, "test_sentences": 134}}
    rows = tables.table1_rows(results, {})
    tables.write_tatoeba_table(rows, tmp_path / "t9.md", tmp_path / "t9.csv", run_name="x", unseen=True)
    out = {r["language"]: r for r in _rows(tmp_path / "t9.csv")}
    # afr was a training language of the paper (its Table 1: 11.20 / 9.90), ang was not (Table 9)
    assert out["afr"]["paper_table"] == "1" and out["afr"]["delta_en_xx_error"] == "38.8"
    assert out["ang"]["paper_table"] == "9" and out["ang"]["train_sentences"] == "0"
    assert (out["ang"]["paper_code"], out["ang"]["paper_en_xx_error"], out["ang"]["delta_xx_en_error"]) == (
        "ang", "58.96", "14.33")  # TACL Table 9: 58.96 / 65.67
    md = (tmp_path / "t9.md").read_text(encoding="utf-8")
    assert md.startswith("# Table 9") and "no training data" in md and "| **avg** | 2 languages |" in md
    assert "| 1 (af) |" in md and "| 58.96 | 65.67 | 134 | 9 (ang) |" in md


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
        md8 = (tmp_path / "m8.md").read_text(encoding="utf-8")
        # the paper's matrix is shown even when ours is missing
        assert "**Missing:**" in md8 and "## paper (TACL Table 8)" in md8 and "225 of 225 cells" in md8


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
    # the paper (TACL Table 4: F1 only) and, beside it, the LASER README re-run (P / R / F1 / threshold)
    assert (row["paper_train_f1"], row["paper_test_f1"], row["paper_train_precision"]) == ("95.43", "96.19", "")
    assert (row["laser_readme_train_f1"], row["laser_readme_train_precision"], row["laser_readme_test_f1"]) == (
        "95.42", "95.65", "96.2")
    md = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "test gold is private" in md
    assert "| paper F1 (TACL) | LASER README re-run F1 | Δ F1 (ours − TACL) |" in md
    assert "| 84.70 | 95.43 | 95.42 | -10.73 |" in md and "TACL 2019 Table 4, row 'Proposed method'" in md


def test_xnli_tables_average_and_matrix(tmp_path):
    scores = {"test_accuracy": {"eng": 80.0, "fra": 70.0}, "sizes": {"test_pairs": {"eng": 5, "fra": 5},
              "dev_pairs": 3, "train_pairs": 9}, "dev_accuracy": 66.7, "features": "f",
              "hyperparameters": {"hidden": [512, 384], "dropout": 0.1, "lr": 0.001, "selected_epoch": 3},
              "settings_source": xnli.SETTINGS_NOTE,
              "cross_lingual": {"premise_languages": ["eng", "fra"], "accuracy": [[80.0, 60.0], [65.0, 70.0]],
                                "pairs": 5}}
    (tmp_path / "s.json").write_text(json.dumps(scores))
    cli.main(["eval-table", "xnli", "--run-name", "r", "--languages", "eng", "fra", "--scores", str(tmp_path / "s.json"),
              "--md", str(tmp_path / "t2.md"), "--csv", str(tmp_path / "t2.csv"),
              "--md8", str(tmp_path / "t8.md"), "--csv8", str(tmp_path / "t8.csv")])
    rows = {r["language"]: r for r in _rows(tmp_path / "t2.csv")}
    assert float(rows["avg"]["accuracy"]) == 75.0 and rows["eng"]["test_size"] == "5"
    # TACL Table 2 (73.9 / 71.9) and, beside it, the LASER README re-run (74.65 / 72.26)
    assert (rows["eng"]["paper_accuracy"], rows["eng"]["laser_readme_rerun"], rows["eng"]["delta"]) == (
        "73.9", "74.65", "6.1")
    assert (rows["avg"]["paper_accuracy"], rows["avg"]["laser_readme_rerun"]) == ("72.9", "73.46")
    md2 = (tmp_path / "t2.md").read_text(encoding="utf-8")
    assert "| ours | paper (TACL) | LASER README re-run | Δ (ours − TACL) |" in md2
    assert "| eng | English | 80.00 | 73.90 | 74.65 | 6.10 | 5 |" in md2
    assert "TACL 2019 Table 2, row 'Proposed method'" in md2 and "tasks/xnli/README.md" in md2
    assert "LASER's tasks/xnli/xnli.sh where the paper is silent: dropout 0.3" in md2
    cells = {(r["premise"], r["hypothesis"]): r for r in _rows(tmp_path / "t8.csv")}
    assert float(cells[("eng", "fra")]["accuracy"]) == 60.0 and float(cells[("fra", "eng")]["accuracy"]) == 65.0
    assert (cells[("eng", "fra")]["paper_accuracy"], cells[("eng", "fra")]["delta"]) == ("72.2", "-12.2")
    # the averages: ours over this run's 2 languages, the paper's over its 15 (so no Δ)
    assert (cells[("fra", "avg")]["accuracy"], cells[("fra", "avg")]["paper_accuracy"]) == ("67.5", "69.5")
    assert (cells[("avg", "avg")]["accuracy"], cells[("avg", "avg")]["paper_accuracy"]) == ("68.75", "68.1")
    assert cells[("avg", "avg")]["delta"] == "" and cells[("avg", "eng")]["status"] == "average"
    md8 = (tmp_path / "t8.md").read_text(encoding="utf-8")
    assert "| fra | 65.00 | 70.00 | 67.50 |" in md8
    paper = md8.split("## paper (TACL Table 8)")[1]
    # all 225 cells and the averages, this run's languages first
    assert sum(line.startswith("| ") for line in paper.splitlines()) == 17  # header + 15 premises + avg
    assert "| eng | 73.9 | 72.2 | " in paper and "| avg | 70.8 | 70.0 | " in paper and paper.count(" | ") > 256
    assert "225 of 225 cells" in md8 and "4 of the 4 cells of this run" in md8


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


def test_missing_task_still_shows_the_paper_average(tmp_path):
    cli.main(["eval-table", "xnli", "--run-name", "r", "--languages", "eng", "fra", "spa", "--missing", "no XNLI",
              "--md", str(tmp_path / "t2.md"), "--csv", str(tmp_path / "t2.csv"),
              "--md8", str(tmp_path / "t8.md"), "--csv8", str(tmp_path / "t8.csv")])
    avg = {r["language"]: r for r in _rows(tmp_path / "t2.csv")}["avg"]
    # TACL Table 2: (73.9 + 71.9 + 72.9) / 3; no Δ without ours
    assert (avg["accuracy"], avg["paper_accuracy"], avg["delta"]) == ("", "72.9", "")


def _wmt_scores(errors: dict, sentences=4) -> dict:
    pairs = [{"src": a, "trg": b, "errors": n, "error": 100.0 * n / sentences} for (a, b), n in errors.items()]
    return {"test_set": "wmt12", "sentences": sentences, "pairs": pairs,
            "average_error": sum(p["error"] for p in pairs) / len(pairs), "absent": {}}


def test_wmt_table_shows_tfidf_and_init_beside_ours_and_the_papers_average(tmp_path):
    ours = _wmt_scores({("eng", "deu"): 0, ("deu", "eng"): 1})
    init = _wmt_scores({("eng", "deu"): 3, ("deu", "eng"): 4})
    tfidf = _wmt_scores({("eng", "deu"): 2, ("deu", "eng"): 2})
    paths = {}
    for name, s in (("ours", ours), ("init", init), ("tfidf", tfidf)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(json.dumps(s))
    cli.main(["eval-table", "wmt", "--run-name", "r", "--languages", "eng", "deu", "--scores", str(paths["ours"]),
              "--init-scores", str(paths["init"]), "--tfidf-scores", str(paths["tfidf"]),
              "--md", str(tmp_path / "t.md"), "--csv", str(tmp_path / "t.csv")])
    rows = {r["language"]: r for r in _rows(tmp_path / "t.csv")}
    assert (rows["deu→eng"]["error"], rows["deu→eng"]["init_error"], rows["deu→eng"]["tfidf_error"]) == (
        "25.0", "100.0", "50.0")
    avg = rows["all→all"]
    assert (avg["error"], avg["init_error"], avg["tfidf_error"], avg["paper_error"], avg["delta"]) == (
        "12.5", "87.5", "50.0", "0.54", "11.96")
    md = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "| TF-IDF % | init % | paper (TACL) % |" in md
    assert "TACL 2019 Table 7, row 'All (93)', column 'WMT Err [%]'" in md and "WMT 2014" in md
    # baselines on other sentences are refused
    paths["init"].write_text(json.dumps(_wmt_scores({("eng", "deu"): 1, ("deu", "eng"): 1}, sentences=5)))
    with pytest.raises(ValueError, match="init baseline has 5 sentences, the model 4"):
        cli.main(["--debug", "eval-table", "wmt", "--run-name", "r", "--scores", str(paths["ours"]),
                  "--init-scores", str(paths["init"]), "--md", str(tmp_path / "t.md"), "--csv", str(tmp_path / "t.csv")])
