"""Ablation variants (config.Plan), their metrics and Tables 5-7 (laser_repro.reporting.ablation), without Snakemake."""
from __future__ import annotations

import csv
import json

import pytest
import yaml

from conftest import TOY_CONFIG, laser_model
from laser_repro.reporting import ablation
from laser_repro import config


def toy(**ablations) -> dict:
    cfg = yaml.safe_load(TOY_CONFIG.read_text(encoding="utf-8"))
    laser_model(cfg)["ablations"] = ablations
    return cfg


def test_variants_equal_to_the_base_model_are_the_base_model():
    plan = config.Plan(config.validate(toy(depth={"layers": [1, 2, 3]}, nli={"weights": [0, 2]},
                                           languages={"subset": ["eng", "spa", "deu"]})))
    assert list(plan.variants) == ["base", "layers2", "layers3", "nli2", "subset_languages"]
    assert plan.variant_aliases == {"base": "base", "layers1": "base", "layers2": "layers2", "layers3": "layers3",
                                    "nli0": "base", "nli2": "nli2", "all_languages": "base",
                                    "subset_languages": "subset_languages"}
    v = plan.variants
    assert dict(v["layers3"].model)["encoder_layers"] == 3 and dict(v["base"].model)["encoder_layers"] == 1
    assert v["nli2"].nli_weight == 2 and v["nli2"].pairs == v["base"].pairs
    assert plan.nli_settings(v["nli2"]) == {"weight": 2, "hidden_dim": 512} and plan.nli_settings(v["base"]) is None
    # the subset model: only the pairs with both languages in the subset (ell and cmn dropped)
    assert set(v["subset_languages"].pairs) == {("eng", "spa"), ("spa", "eng"), ("deu", "eng"), ("deu", "spa")}
    rows = plan.ablation_rows
    assert [(r.name, r.label, r.setting) for r in rows["languages"]] == [
        ("all_languages", "all 5 languages", "languages=all"),
        ("subset_languages", "3 evaluation languages", "languages=subset")]
    assert [(r.label, r.setting) for r in rows["depth"]] == [("1 layer", "layers=1"), ("2 layers", "layers=2"),
                                                             ("3 layers", "layers=3")]
    assert [r.setting for r in rows["nli"]] == ["nli=0", "nli=2"]


def test_no_ablations_means_only_the_base_model():
    plan = config.Plan(config.validate(toy()))
    assert list(plan.variants) == ["base"] and plan.ablation_rows == {}


@pytest.mark.parametrize("ablations, message", [
    ({"languages": {"subset": ["eng", "deu"]}}, "models.base.ablations.languages.subset: must contain the targets of its data; ['spa'] missing"),
    ({"languages": {"subset": ["eng", "spa", "xxq"]}}, "models.base.ablations.languages.subset[2]"),
    ({"depth": {"layers": [0]}}, "models.base.ablations.depth.layers[0]"),
    ({"nli": {"weights": [1], "extra": 2}}, "models.base.ablations.nli.extra: unknown key; allowed: weights, hidden_dim"),
])
def test_bad_ablation_config_is_named(ablations, message):
    with pytest.raises(config.ConfigError) as err:
        config.validate(toy(**ablations))
    assert message in str(err.value)


def test_nli_variants_need_multinli():
    cfg = toy(nli={"weights": [0, 1]})
    del cfg["evaluation"]["xnli"]
    with pytest.raises(config.ConfigError, match="models.base.ablations.nli: the NLI multitask trains on MultiNLI"):
        config.validate(cfg)


def write(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.fixture
def scores(tmp_path):
    return {
        "tatoeba": [write(tmp_path / "deu.json", {"language": "deu", "en_xx_error": 10.0, "xx_en_error": 20.0}),
                    write(tmp_path / "ell.json", {"language": "ell", "en_xx_error": 30.0, "xx_en_error": 30.0})],
        "bucc": [write(tmp_path / "b_deu.json", {"language": "deu", "f1": 0.5}),
                 write(tmp_path / "b_cmn.json", {"language": "cmn", "f1": 0.25})],
        "xnli": write(tmp_path / "xnli.json", {"test_accuracy": {"eng": 70.0, "spa": 60.0, "deu": 50.0}}),
        "mldoc": write(tmp_path / "mldoc.json", {"test_accuracy": {"eng": 90.0, "deu": 80.0}}),
        "wmt": write(tmp_path / "wmt.json", {"average_error": 5.0, "pairs": [
            {"src": "eng", "trg": "spa", "error": 4.0}, {"src": "spa", "trg": "eng", "error": 6.0}]}),
    }


def test_variant_metrics_averages(scores):
    m = ablation.variant_metrics("layers2", **scores)
    assert m["metrics"] == {"tatoeba_error": 22.5, "bucc_f1": 37.5, "xnli_en": 70.0, "xnli_xx": 55.0,
                            "mldoc_accuracy": 80.0, "wmt_error": 5.0}  # MLDoc: transfer languages only
    assert m["details"]["tatoeba_error"] == {"deu": 15.0, "ell": 30.0}
    # a task that could not run is absent, not zero
    assert ablation.variant_metrics("base", tatoeba=scores["tatoeba"])["metrics"] == {"tatoeba_error": 22.5}


def test_ablation_table_and_figure(tmp_path, scores):
    good = tmp_path / "m.json"
    ablation.write_metrics(good, ablation.variant_metrics("layers3", **scores))
    rows = ablation.ablation_rows(5, [
        {"label": "3 layers", "variant": "layers3", "model": "layers3", "setting": "layers=3", "metrics": str(good)},
        {"label": "1 layer", "variant": "layers1", "model": "base", "setting": "layers=1", "metrics": None,
         "note": "not trained"}])
    # sorted by depth; the paper's 5-layer row, not trained here, is a paper-only row
    assert [(r["row"], r["status"]) for r in rows] == [("1 layer", "not trained"), ("3 layers", "ok"),
                                                        ("5 layers", "paper only")]
    one, three, five = rows
    assert three["tatoeba_error"] == 22.5 and three["paper_tatoeba_error"] == 28.95
    assert three["delta_tatoeba_error"] == round(22.5 - 28.95, 2) and three["paper_row"] == "3"
    assert one["xnli_en"] is None and one["paper_xnli_en"] == 70.94
    assert five["paper_tatoeba_error"] == 26.31 and five["tatoeba_error"] is None and five["model"] == "paper only"
    md, csv_path, png = tmp_path / "t5.md", tmp_path / "t5.csv", tmp_path / "t5.png"
    ablation.write_ablation_table(5, rows, md, csv_path, run_name="toy", missing_tasks={"flores": "no flores_eval"})
    text = md.read_text(encoding="utf-8")
    assert "Table 5: Encoder depth (toy)" in text
    assert "| 3 layers | 3 | layers3 | 22.50 | 28.95 | -6.45 |" in text
    assert "| 5 layers | 5 | paper only | n/a | 26.31 | n/a |" in text
    assert "- 1 layer: not trained" in text
    assert "MLDoc = mean accuracy over the MLDoc transfer languages (English excluded)" in text
    # FLORES did not run: said once, and no ours/Δ column for it
    assert text.count("no flores_eval") == 1 and "FLORES xsim err (%) ours" not in text
    # which paper averages can be rebuilt from Tables 1-4
    assert "XNLI-xx: yes (paper 69.92, rebuilt 69.92" in text and "Tatoeba err (%): no (paper 26.31" in text
    read = list(csv.DictReader(open(csv_path, encoding="utf-8")))
    assert [r["setting"] for r in read] == ["layers=1", "layers=3", "layers=5"] and read[1]["model"] == "layers3"
    ablation.plot_ablation(5, rows, png, run_name="toy")
    first = png.read_bytes()
    assert first.startswith(b"\x89PNG") and len(first) > 5000
    ablation.plot_ablation(5, rows, png, run_name="toy")
    assert png.read_bytes() == first  # deterministic


def test_figure_has_no_panel_for_a_task_that_did_not_run(tmp_path, scores, monkeypatch):
    good = tmp_path / "m.json"
    ablation.write_metrics(good, ablation.variant_metrics("base", tatoeba=scores["tatoeba"]))
    rows = ablation.ablation_rows(5, [{"label": "1 layer", "variant": "layers1", "model": "base",
                                       "setting": "layers=1", "metrics": str(good)}])
    import matplotlib.pyplot as plt

    panels = []
    real = plt.subplots
    monkeypatch.setattr(plt, "subplots", lambda *a, **k: panels.append(a) or real(*a, **k))
    ablation.plot_ablation(5, rows, tmp_path / "t5.png", run_name="toy")
    assert panels == [(1, 1)]  # Tatoeba only: BUCC, MLDoc, XNLI and FLORES have no scores


def test_paper_averages_rebuilt_from_the_per_language_tables():
    checks = ablation.paper_average_checks()
    # BUCC: mean of Table 4's training F1; MLDoc: mean of Table 3 without English; XNLI-xx: Table 2 without English
    assert {k for k, c in checks.items() if c["agrees"]} == {"bucc_f1", "mldoc_accuracy", "xnli_xx"}
    assert checks["mldoc_accuracy"]["paper"] == 72.79 and round(checks["mldoc_accuracy"]["rebuilt"], 2) == 72.79
    assert checks["xnli_en"]["rebuilt"] == 73.9 and checks["xnli_en"]["paper"] == 73.67
    assert checks["tatoeba_error"]["paper"] == 26.31 and not checks["tatoeba_error"]["agrees"]


def test_paper_ablation_values_cover_tables_5_to_7():
    assert {t: len(ablation.paper_ablation_rows(t)) for t in (5, 6, 7)} == {5: 3, 6: 4, 7: 2}
    assert ablation.paper_ablation_rows(6)["nli=2"] == {"paper_row": "×2", "tatoeba_error": 28.52, "bucc_f1": 93.06,
                                                        "mldoc_accuracy": 71.90, "xnli_en": 74.65, "xnli_xx": 67.75}
    assert ablation.paper_ablation_rows(7)["languages=subset"]["wmt_error"] == 0.59


def test_table7_reports_wmt_instead_of_tatoeba(tmp_path, scores):
    good = tmp_path / "m.json"
    ablation.write_metrics(good, ablation.variant_metrics("base", **scores))
    row, paper_only = ablation.ablation_rows(7, [{"label": "all 5 languages", "variant": "all_languages",
                                                  "model": "base", "setting": "languages=all", "metrics": str(good)}])
    assert row["wmt_error"] == 5.0 and row["paper_wmt_error"] == 0.54 and "tatoeba_error" not in row
    assert paper_only["row"] == "Eval (18)" and paper_only["paper_mldoc_accuracy"] == 75.63


def test_summary(tmp_path, scores):
    paths = []
    for name in ("base", "layers2"):
        paths.append(tmp_path / f"{name}.json")
        ablation.write_metrics(paths[-1], ablation.variant_metrics(name, tatoeba=scores["tatoeba"]))
    assert ablation.summarize(paths) == {"base": {"tatoeba_error": 22.5}, "layers2": {"tatoeba_error": 22.5}}
