"""The per-task comparison tables of every model of a run (laser_repro.reporting.task_compare), without Snakemake."""
from __future__ import annotations

import csv
import json

import pytest

from laser_repro.reporting import task_compare


def _write(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


def _wmt(errors: dict, average: float) -> dict:
    return {"pairs": [{"src": s, "trg": t, "error": e, "errors": 0} for (s, t), e in errors.items()],
            "average_error": average, "sentences": 50}


def test_wmt_table_has_a_column_group_per_model_beside_tfidf(tmp_path):
    langs = ["eng", "spa", "deu"]
    three = {(s, t): 10.0 + i for i, (s, t) in enumerate((s, t) for s in langs for t in langs if s != t)}
    laser = _write(tmp_path / "laser.json", _wmt(three, 12.5))
    laser_init = _write(tmp_path / "laser_init.json", _wmt({k: 90.0 for k in three}, 90.0))
    pair = {("eng", "spa"): 30.0, ("spa", "eng"): 40.0}
    b2v = _write(tmp_path / "b2v.json", _wmt(pair, 35.0))
    b2v_init = _write(tmp_path / "b2v_init.json", _wmt({k: 95.0 for k in pair}, 95.0))
    tfidf = _write(tmp_path / "tfidf.json", _wmt({k: 50.0 for k in three}, 50.0))
    models = [
        {"name": "base", "family": "laser", "description": "base", "scores": [laser], "init": [laser_init], "skipped": ""},
        {"name": "b2v", "family": "bisent2vec", "description": "en-es", "scores": [b2v], "init": [b2v_init],
         "skipped": ""},
        {"name": "sd", "family": "multienc", "description": "1:1", "scores": [], "init": [],
         "skipped": "no encoder for the task's languages (eng, spa, deu); the model embeds fra, cmn"},
    ]
    md, out = tmp_path / "t.md", tmp_path / "t.csv"
    task_compare.write_task_comparison(md, out, task="wmt", run_name="r", langs=langs, models=models,
                                       tfidf_path=tfidf)
    rows = {r["row"]: r for r in csv.DictReader(open(out, encoding="utf-8"))}
    assert list(rows) == ["eng-spa", "eng-deu", "spa-eng", "spa-deu", "deu-eng", "deu-spa", "average"]
    assert rows["eng-spa"]["base"] == "10.0" and rows["eng-spa"]["b2v"] == "30.0" and rows["eng-spa"]["TF-IDF"] == "50.0"
    assert rows["eng-deu"]["b2v"] == "" and rows["average"]["b2v"] == "35.0" and rows["average"]["base init"] == "90.0"
    assert "sd" not in rows["eng-spa"]  # skipped: no column
    text = md.read_text(encoding="utf-8")
    assert "| pair | base (laser) | base init | b2v (bisent2vec) | b2v init | TF-IDF |" in text
    assert "sd (multienc): not scored: no encoder for the task's languages" in text
    assert "lower is better" in text


def test_bucc_xnli_mldoc_values(tmp_path):
    bucc = [{"language": "cmn", "f1": 0.5, "precision": 0.5, "recall": 0.5},
            {"language": "deu", "f1": 0.25, "precision": 0.2, "recall": 0.3}]
    assert task_compare.task_values("bucc", bucc) == {"cmn": 50.0, "deu": 25.0}
    assert task_compare.task_values("xnli", [{"test_accuracy": {"eng": 61.5, "spa": 40.0}}]) == {"eng": 61.5, "spa": 40.0}
    models = [{"name": "m", "family": "labse", "description": "d",
               "scores": [_write(tmp_path / "x.json", {"test_accuracy": {"eng": 70.0}})], "init": [], "skipped": ""}]
    task_compare.write_task_comparison(tmp_path / "x.md", tmp_path / "x.csv", task="mldoc", run_name="r",
                                       langs=["eng", "spa"], models=models)
    rows = list(csv.DictReader(open(tmp_path / "x.csv", encoding="utf-8")))
    assert [(r["row"], r["m"]) for r in rows] == [("eng", "70.0"), ("spa", "")]
    assert "higher is better" in (tmp_path / "x.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="no comparison table for task 'tatoeba'"):
        task_compare.task_values("tatoeba", [])
