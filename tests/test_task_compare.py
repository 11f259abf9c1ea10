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
    with pytest.raises(ValueError, match="no comparison table for task 'muse_words'"):
        task_compare.task_values("muse_words", [])


def _laser_tatoeba(lang, en_xx, xx_en, init):
    return {"language": lang, "test_sentences": 100, "en_xx_error": en_xx, "xx_en_error": xx_en,
            "init": {"en_xx_error": init, "xx_en_error": init}, "tfidf": {"en_xx_error": 1.0, "xx_en_error": 1.0}}


def _retrieval(results):
    return {"task": "tatoeba", "direction": "xx->eng", "encoder": "e.pt",
            "results": {lang: {"error": xx_en, "en_xx_error": en_xx, "n": 100} for lang, (en_xx, xx_en) in results.items()}}


def test_tatoeba_table_reads_laser_and_retrieval_scores_both_directions(tmp_path):
    """LASER's per-language files (model and init in one) and the retrieval files of the other families
    (model and init apart, TF-IDF alike) give one cell per model and language: the mean of the two directions."""
    fra = _write(tmp_path / "fra.json", _laser_tatoeba("fra", 10.0, 20.0, 90.0))
    spa = _write(tmp_path / "spa.json", _laser_tatoeba("spa", 30.0, 50.0, 80.0))
    labse = _write(tmp_path / "labse.json", _retrieval({"fra": (5.0, 7.0)}))
    labse_init = _write(tmp_path / "labse_init.json", _retrieval({"fra": (99.0, 97.0)}))
    tfidf = _write(tmp_path / "tfidf.json", _retrieval({"fra": (60.0, 70.0), "spa": (40.0, 42.0)}))
    models = [{"name": "base", "family": "laser", "description": "d", "scores": [fra, spa], "init": [fra, spa],
               "skipped": ""},
              {"name": "lab", "family": "labse", "description": "d", "scores": [labse], "init": [labse_init],
               "skipped": ""}]
    task_compare.write_task_comparison(tmp_path / "t.md", tmp_path / "t.csv", task="tatoeba", run_name="r",
                                       langs=["fra", "spa"], models=models, tfidf_path=tfidf)
    rows = {r["row"]: r for r in csv.DictReader(open(tmp_path / "t.csv", encoding="utf-8"))}
    assert rows["fra"]["base"] == "15.0" and rows["fra"]["base init"] == "90.0" and rows["spa"]["base"] == "40.0"
    assert rows["fra"]["lab"] == "6.0" and rows["fra"]["lab init"] == "98.0" and rows["spa"]["lab"] == ""
    assert rows["fra"]["TF-IDF"] == "65.0" and rows["spa"]["TF-IDF"] == "41.0"
    old = _write(tmp_path / "old.json", {"task": "tatoeba", "encoder": "x.pt", "results": {"fra": {"error": 1.0, "n": 9}}})
    with pytest.raises(ValueError, match="older laser-repro: delete it"):
        task_compare.task_values("tatoeba", [json.loads(open(old).read())])


def test_un_cells_are_p_at_1(tmp_path):
    doc = _retrieval({"spa": (10.0, 12.5), "fra": (0.0, 40.0)})
    assert task_compare.task_values("un", [doc]) == {"spa": 87.5, "fra": 60.0}


def _europarl(src, tgt, p1):
    return {"task": "europarl", "src": src, "tgt": tgt,
            "results": {"nn": {"p@1": p1, "p@5": p1, "p@10": p1}, "csls_knn_10": {"p@1": p1 + 1}}}


def test_europarl_table_has_both_directions_per_language_and_tfidf_per_direction(tmp_path):
    """One score file per direction: every model (its sentence embeddings, or a Bi-Sent2Vec model's bag of
    words) beside its init and the TF-IDF files of the same queries and keys."""
    def files(name, values):
        return [_write(tmp_path / f"{name}_{s}-{t}.json", _europarl(s, t, v)) for (s, t), v in values.items()]

    both = {("eng", "fra"): 40.0, ("fra", "eng"): 42.0, ("eng", "deu"): 30.0, ("deu", "eng"): 31.0}
    pair = {("eng", "fra"): 60.0, ("fra", "eng"): 61.0}
    models = [
        {"name": "base", "family": "laser", "description": "base", "scores": files("base", both),
         "init": files("base_init", {k: 1.0 for k in both}), "skipped": ""},
        {"name": "b2v", "family": "bisent2vec", "description": "en-fr", "scores": files("b2v", pair),
         "init": files("b2v_init", {k: 0.5 for k in pair}), "skipped": ""},
    ]
    tfidf = files("tfidf", {k: 80.0 for k in both})
    md, out = tmp_path / "e.md", tmp_path / "e.csv"
    task_compare.write_task_comparison(md, out, task="europarl", run_name="r", langs=["fra", "deu"], models=models,
                                       tfidf_path=tfidf)
    rows = {r["row"]: r for r in csv.DictReader(open(out, encoding="utf-8"))}
    assert list(rows) == ["eng-fra", "fra-eng", "eng-deu", "deu-eng"]
    assert (rows["fra-eng"]["base"], rows["fra-eng"]["base init"], rows["fra-eng"]["b2v"]) == ("42.0", "1.0", "61.0")
    assert rows["eng-deu"]["b2v"] == "" and rows["deu-eng"]["TF-IDF"] == "80.0"
    text = md.read_text(encoding="utf-8")
    assert "| pair | base (laser) | base init | b2v (bisent2vec) | b2v init | TF-IDF |" in text
    assert "higher is better" in text and "English → French" in text
