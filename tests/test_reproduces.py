"""Tests for laser_repro.reporting.reproduces: what a run reproduces -- the paper's numbers from the paper-value
files, our two models over seeds, the verdict, the config key `reproduces` and the table command."""
from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest
import yaml

from laser_repro import cli, config
from laser_repro.reporting import reproduces
from laser_repro.reporting.reproduces import Spread

REPO = Path(__file__).resolve().parents[1]
COMPARE = REPO / "config" / "compare.yaml"
LANGS = ["spa", "fra", "deu", "ces"]
N = 200


# ---- the paper's numbers ----------------------------------------------------------------------------------
def test_paper_numbers_come_from_the_paper_value_files():
    depth, = reproduces.paper_evidence("laser_depth")
    assert depth["better"] == (28.95, "TACL 2019 Table 5, row '3', column 'Tatoeba Err [%]'")
    assert depth["worse"].value == 37.96 and depth["direction"] == "as claimed"
    encoder, = reproduces.paper_evidence("sd_encoder")
    assert (encoder["better"].value, encoder["worse"].value) == (1.32, 2.51)
    assert encoder["worse"].source.startswith("Schwenk & Douze 2017 Table 2") and "LSTM + last 3x512" in encoder["worse"].source
    paths, = reproduces.paper_evidence("sd_paths")
    assert (paths["better"].value, paths["worse"].value) == (1.15, 1.32)
    margin, = reproduces.paper_evidence("labse_margin")
    pretraining, = reproduces.paper_evidence("labse_pretraining")
    assert (margin["worse"].value, margin["better"].value, pretraining["better"].value) == (79.1, 82.6, 83.7)
    assert "'Tatoeba All Langs'" in pretraining["better"].source


def test_bigrams_claim_is_mixed_in_the_paper():
    t1, t3 = reproduces.paper_evidence("b2v_bigrams")
    assert (t1["table"], t1["better"].value, t1["worse"].value, t1["direction"]) == (1, 85.1, 84.3, "as claimed")
    assert (t3["table"], t3["better"].value, t3["worse"].value, t3["direction"]) == (3, 84.4, 84.6, "opposite")
    assert reproduces.paper_direction([t1, t3]) == "mixed"
    assert reproduces.paper_direction(reproduces.paper_evidence("sd_paths")) == "as claimed"


def test_paper_number_missing_is_an_error():
    with pytest.raises(ValueError, match="no number in Table 5, row 'layers=4'"):
        reproduces.paper_number("laser_ablations", 5, "layers=4", "tatoeba_error")


# ---- the verdict ------------------------------------------------------------------------------------------
def test_verdict_agrees_disagrees_inconclusive():
    better, worse = Spread(40.0, 1.0, 3), Spread(45.0, 1.0, 3)
    difference, se, verdict = reproduces.verdict(better, worse)
    assert difference == 5.0 and se == pytest.approx((2 / 3) ** 0.5) and verdict == "agrees"
    assert reproduces.verdict(worse, better)[2] == "disagrees"
    # 1.5 points with se 0.82: within 2 se
    assert reproduces.verdict(Spread(40.0, 1.0, 3), Spread(41.5, 1.0, 3))[2] == "inconclusive"
    # one seed: no spread to judge by
    assert reproduces.verdict(Spread(40.0, None, 1), Spread(60.0, None, 1)) == (20.0, None, "inconclusive")


def test_spread_over_seeds():
    assert reproduces.spread([1.0, 2.0, 3.0]) == Spread(2.0, 1.0, 3)
    assert reproduces.spread([4.0, 4.0]) == Spread(4.0, 0.0, 2)
    assert reproduces.spread([4.0]) == Spread(4.0, None, 1)


# ---- ours from the score files ----------------------------------------------------------------------------
def laser_scores(model: float, init: float = 95.0, langs=LANGS) -> dict:
    """flores-xsim scores with the same error in both directions of every language."""
    return {system: {"heldout": {lang: {"en_xx": value, "xx_en": value, "sentences": N} for lang in langs}}
            for system, value in (("model", model), ("init", init))}


def matrix_scores(model: float, init: float = 95.0, langs=LANGS) -> dict:
    """similarity scores (eng-xx and xx-eng pairs of every language of ``langs``)."""
    def matrix(value):
        return {"sentences": N, "pairs": {k: value for lang in langs for k in (f"eng-{lang}", f"{lang}-eng")},
                "mean": value}
    return {"similarity": matrix(model), "init": matrix(init)}


TFIDF = {"heldout": {lang: {"en_xx": 30.0, "xx_en": 32.0, "sentences": N} for lang in LANGS}}


def model(name, family, errors, seconds=100.0, init=95.0, langs=LANGS, pretraining=None):
    make = laser_scores if family == "laser" else matrix_scores
    return {"name": name, "family": family, "pretraining": pretraining,
            "runs": {seed: {"scores": make(e, init, langs), "seconds": seconds} for seed, e in enumerate(errors, 1)}}


def test_reproduce_agrees_with_wall_time_and_languages():
    row = reproduces.reproduce("sd_paths", [model("all", "multienc", [10.0, 11.0, 12.0], seconds=90.0)],
                               [model("one", "multienc", [20.0, 21.0, 22.0], langs=["spa", "fra", "deu"])],
                               TFIDF, LANGS)
    assert row["languages"] == ["spa", "fra", "deu"]  # the 1:1 model has no encoder for ces
    assert row["better_error"] == Spread(11.0, 1.0, 3) and row["worse_error"] == Spread(21.0, 1.0, 3)
    assert row["difference"] == 10.0 and row["verdict"] == "agrees" and row["at_init_level"] == []
    assert row["better_wall_s"] == 90.0 and row["tfidf"] == 31.0 and row["paper_direction"] == "as claimed"


def test_reproduce_disagrees_and_both_at_init_level():
    row = reproduces.reproduce("laser_depth", [model("layers3", "laser", [94.0, 94.5, 95.0], init=95.0)],
                               [model("base", "laser", [90.0, 90.5, 91.0], init=91.5)], TFIDF, LANGS)
    assert row["difference"] == pytest.approx(-4.0) and row["verdict"] == "disagrees"
    assert row["at_init_level"] == ["layers3", "base"]  # 0.5 and 1.0 points below init: did not learn
    assert reproduces._verdict_text(row) == "disagrees; both at init level"


def test_reproduce_one_side_of_several_pair_models_and_pretraining_once():
    better = [model("fr_bi", "bisent2vec", [30.0, 31.0], seconds=50.0, langs=["fra"]),
              model("de_bi", "bisent2vec", [40.0, 41.0], seconds=70.0, langs=["deu"])]
    worse = [model("fr_uni", "bisent2vec", [30.0, 32.0], langs=["fra"]),
             model("de_uni", "bisent2vec", [40.0, 41.0], langs=["deu"])]
    row = reproduces.reproduce("b2v_bigrams", better, worse, TFIDF, LANGS)
    assert row["languages"] == ["fra", "deu"] and row["better"] == ["fr_bi", "de_bi"]
    assert row["better_error"].mean == pytest.approx(35.5) and row["better_wall_s"] == 120.0  # both pair models
    assert row["verdict"] == "inconclusive"
    ams = model("ams", "labse", [10.0, 10.0], seconds=10.0)
    pt = [{**model("ams_pt", "labse", [9.0, 9.0], seconds=20.0), "pretraining": {"id": "news5-x", "seconds": 300.0}}]
    row = reproduces.reproduce("labse_pretraining", pt, [ams], TFIDF, LANGS)
    assert row["better_wall_s"] == 320.0 and row["better_pretrain_s"] == 300.0 and row["worse_wall_s"] == 10.0


def test_reproduce_rejects_other_sentences_and_overlapping_models():
    other = model("b", "multienc", [20.0])
    other["runs"][1]["scores"]["similarity"]["sentences"] = 150
    with pytest.raises(ValueError, match="different numbers of sentences"):
        reproduces.reproduce("sd_paths", [model("a", "multienc", [10.0])], [other], TFIDF, LANGS)
    with pytest.raises(ValueError, match="scores \\['fra'\\] again"):
        reproduces.reproduce("b2v_bigrams", [model("x", "bisent2vec", [1.0], langs=["fra"]),
                                             model("y", "bisent2vec", [1.0], langs=["fra"])],
                             [model("z", "bisent2vec", [2.0], langs=["fra"])], TFIDF, LANGS)
    with pytest.raises(ValueError, match="no language in common"):
        reproduces.reproduce("b2v_bigrams", [model("x", "bisent2vec", [1.0], langs=["fra"])],
                             [model("z", "bisent2vec", [2.0], langs=["deu"])], TFIDF, LANGS)


# ---- the command ------------------------------------------------------------------------------------------
def _write(path: Path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return str(path)


def _benchmark(path: Path, seconds: float) -> str:
    return _write(path, "s\th:m:s\tmax_rss\n" f"{seconds}\t0:00:00\t10.0\n")


def _cli_model(tmp_path, name, family, errors, seconds, pretraining=None):
    make = laser_scores if family == "laser" else matrix_scores
    runs = [{"seed": seed, "scores": _write(tmp_path / f"{name}.{seed}" / "scores.json", make(e)),
             "benchmark": _benchmark(tmp_path / f"{name}.{seed}" / "train.tsv", seconds)}
            for seed, e in enumerate(errors, 1)]
    return {"name": name, "family": family, "runs": runs, "pretraining": pretraining}


def test_cli_writes_md_and_csv(tmp_path):
    pretraining = {"id": "news5-abc", "benchmark": _benchmark(tmp_path / "pretrain.tsv", 600.0)}
    claims = [
        {"claim": "laser_depth", "better": [_cli_model(tmp_path, "layers3", "laser", [30.0, 31.0, 32.0], 200.0)],
         "worse": [_cli_model(tmp_path, "base", "laser", [40.0, 41.0, 42.0], 100.0)]},
        {"claim": "labse_pretraining",
         "better": [_cli_model(tmp_path, "labse_ams_pt", "labse", [50.0, 52.0, 54.0], 60.0, pretraining)],
         "worse": [_cli_model(tmp_path, "labse_ams", "labse", [51.0, 53.0, 55.0], 60.0)]},
    ]
    md, out_csv = tmp_path / "reproduces.md", tmp_path / "reproduces.csv"
    assert cli.main(["reproduces-table", "--claims", json.dumps(claims), "--tfidf", _write(tmp_path / "tfidf.json", TFIDF),
                     "--langs", *LANGS, "--heldout", "797", "997", "--run-name", "compare", "--md", str(md),
                     "--csv", str(out_csv)]) == 0
    text = md.read_text(encoding="utf-8")
    assert "| **laser_depth** (spa fra deu ces) |" in text
    assert "layers3: 31.0 ± 1.0 (n=3)" in text and "| +10.0 ± 0.8 | **agrees** |" in text
    assert "11.0 min (incl. 10.0 min pre-training) / 60 s" in text and "**inconclusive**" in text
    assert "- TACL 2019 Table 5, row '3', column 'Tatoeba Err [%]'" in text and "dev lines 797–996" in text
    lines = list(csv.DictReader(out_csv.open(encoding="utf-8")))
    assert [line["claim"] for line in lines] == ["laser_depth", "labse_pretraining"]
    assert lines[0]["paper_better"] == "28.95" and lines[0]["verdict"] == "agrees"
    assert float(lines[0]["better_error"]) == 31.0 and float(lines[0]["better_error_sd"]) == 1.0
    assert float(lines[1]["better_wall_s"]) == 660.0 and lines[1]["paper_better_source"].startswith("Feng et al. 2020")


def test_cli_bad_benchmark_names_the_file(tmp_path, capsys):
    m = _cli_model(tmp_path, "base", "laser", [30.0], 1.0)
    _write(Path(m["runs"][0]["benchmark"]), "h:m:s\n0:00:01\n")
    claims = [{"claim": "laser_depth", "better": [_cli_model(tmp_path, "layers3", "laser", [20.0], 1.0)], "worse": [m]}]
    with pytest.raises(SystemExit, match=r"reproduces-table: .*train.tsv: not a Snakemake benchmark file"):
        cli.main(["reproduces-table", "--claims", json.dumps(claims), "--tfidf", _write(tmp_path / "t.json", TFIDF),
                  "--langs", *LANGS, "--heldout", "797", "997", "--run-name", "r", "--md", str(tmp_path / "a.md"),
                  "--csv", str(tmp_path / "a.csv")])


# ---- the config key ---------------------------------------------------------------------------------------
def _compare_config() -> dict:
    return yaml.safe_load(COMPARE.read_text(encoding="utf-8"))


def test_compare_config_claims_every_catalog_entry_with_paper_numbers():
    plan = config.Plan(config.validate(_compare_config(), source="compare"))
    assert [c["claim"] for c in plan.reproduces] == [k for k, c in reproduces.CLAIMS.items() if c.evidence]
    assert plan.reproduces[0] == {"claim": "laser_depth", "better": ["layers3"], "worse": ["base"],
                                  "runs": {"better": None, "worse": None}}
    assert plan.seed_runs("layers3") == {1: "layers3", 2: "layers3.seed2", 3: "layers3.seed3"}
    assert plan.seed_runs("layers1")[2] == "base.seed2" and plan.family("layers1") == "laser"


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(claim="laser_width"), r"reproduces\[0\]\.claim: 'laser_width' is not a known claim"),
    (lambda c: c.update(worse="layers5"), r"reproduces\[0\]\.worse: 'layers5' is neither a LASER model"),
    (lambda c: c.update(better="layers1"), r"reproduces\[0\]\.worse: 'base' is the same model on both sides"),
    (lambda c: c.update(better=["layers3", "layers3"]), r"reproduces\.0\.better|reproduces\[0\]\.better"),
    (lambda c: c.update(better_run="compare"), r"reproduces\[0\]\.better_run: 'compare' is this run"),
    (lambda c: c.update(better_run="a/b"), r"reproduces\[0\]\.better_run|reproduces\.0\.better_run"),
    (lambda c: c.update(better="base", better_run="compare_spm", worse_run="compare_spm"),
     r"reproduces\[0\]\.worse: 'base' is the same model on both sides"),
])
def test_reproduces_config_errors(change, message):
    cfg = _compare_config()
    change(cfg["reproduces"][0])
    with pytest.raises(config.ConfigError, match=message):
        config.validate(cfg, source="compare")


def test_reproduces_config_duplicate_and_unscored_model():
    cfg = _compare_config()
    cfg["reproduces"].append(copy.deepcopy(cfg["reproduces"][1]))
    with pytest.raises(config.ConfigError, match=r"reproduces\[6\]\.claim: 'sd_encoder' is listed twice"):
        config.validate(cfg, source="compare")
    cfg = _compare_config()
    cfg["nway_data"]["news6"] = {**cfg["nway_data"]["news5"], "valid": {"heldout_lines": [700, 900]}}
    cfg["models"]["sd_lstm_1to1"]["data"] = "news6"
    with pytest.raises(config.ConfigError, match=r"reproduces\[1\]\.worse: model 'sd_lstm_1to1' is not validated"):
        config.validate(cfg, source="compare")


# ---- a claim the paper gives no numbers for, across two runs -----------------------------------------------
def test_claim_without_paper_numbers_and_a_model_of_another_run(tmp_path):
    cfg = _compare_config()
    cfg["reproduces"] = [{"claim": "laser_subwords", "better": "base", "better_run": "compare_spm", "worse": "base"}]
    plan = config.Plan(config.validate(cfg, source="compare"))
    assert plan.reproduces[0]["runs"] == {"better": "compare_spm", "worse": None}
    assert reproduces.paper_evidence("laser_subwords") == [] and reproduces.paper_direction([]) == "no numbers"
    claims = [{"claim": "laser_subwords",
               "better": [_cli_model(tmp_path, "base (run compare_spm)", "laser", [40.0, 41.0, 42.0], 100.0)],
               "worse": [_cli_model(tmp_path, "base", "laser", [41.0, 42.0, 43.0], 90.0)]}]
    md, out_csv = tmp_path / "reproduces.md", tmp_path / "reproduces.csv"
    args = ["reproduces-table", "--claims", json.dumps(claims), "--tfidf", _write(tmp_path / "tfidf.json", TFIDF),
            "--langs", *LANGS, "--heldout", "797", "997", "--run-name", "compare", "--md", str(md), "--csv", str(out_csv)]
    assert cli.main([*args, "--absent", "laser_depth", "run x has not built y"]) == 0
    text = md.read_text(encoding="utf-8")
    assert "base (run compare_spm): 41.0 ± 1.0 (n=3)" in text and "paper: no numbers (TACL 2019 Section 6" in text
    assert "**inconclusive**" in text and "Not measured:\n\n- **laser_depth**: run x has not built y" in text
    line, = csv.DictReader(out_csv.open(encoding="utf-8"))
    assert line["claim"] == "laser_subwords" and line["paper_better"] == "" and "SentencePiece" in line["paper_better_source"]
    assert float(line["difference"]) == 1.0 and line["better"] == "base (run compare_spm)"


def test_no_claim_measured_yet(tmp_path):
    md, out_csv = tmp_path / "reproduces.md", tmp_path / "reproduces.csv"
    assert cli.main(["reproduces-table", "--claims", "[]", "--tfidf", _write(tmp_path / "tfidf.json", TFIDF),
                     "--langs", *LANGS, "--heldout", "797", "997", "--run-name", "small", "--md", str(md),
                     "--csv", str(out_csv), "--absent", "laser_subwords", "run small_spm has not built x"]) == 0
    text = md.read_text(encoding="utf-8")
    assert "no claim measured yet" in text and "- **laser_subwords**: run small_spm has not built x" in text
