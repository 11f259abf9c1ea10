"""Ablation variants (config.Plan), their metrics and Tables 5-7 (laser_repro.ablation), without Snakemake."""
from __future__ import annotations

import csv
import json

import pytest
import yaml

from conftest import TOY_CONFIG
from laser_repro import ablation, config


def toy(**ablations) -> dict:
    cfg = yaml.safe_load(TOY_CONFIG.read_text(encoding="utf-8"))
    cfg["ablations"] = ablations
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
    assert [(name, label) for name, label, _ in rows["languages"]] == [
        ("all_languages", "all 5 languages"), ("subset_languages", "3 evaluation languages")]
    assert [label for _, label, _ in rows["depth"]] == ["1 layer", "2 layers", "3 layers"]


def test_no_ablations_means_only_the_base_model():
    plan = config.Plan(config.validate(toy()))
    assert list(plan.variants) == ["base"] and plan.ablation_rows == {}


@pytest.mark.parametrize("ablations, message", [
    ({"languages": {"subset": ["eng", "deu"]}}, "must contain the run targets; ['spa'] missing"),
    ({"languages": {"subset": ["eng", "spa", "xxq"]}}, "ablations.languages.subset[2]"),
    ({"depth": {"layers": [0]}}, "ablations.depth.layers[0]"),
    ({"nli": {"weights": [1], "extra": 2}}, "Additional properties"),
])
def test_bad_ablation_config_is_named(ablations, message):
    with pytest.raises(config.ConfigError) as err:
        config.validate(toy(**ablations))
    assert message in str(err.value)


def test_nli_variants_need_multinli():
    cfg = toy(nli={"weights": [0, 1]})
    del cfg["evaluation"]["xnli"]
    with pytest.raises(config.ConfigError, match="ablations.nli: the NLI multitask trains on MultiNLI"):
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
                            "mldoc_accuracy": 85.0, "wmt_error": 5.0}
    assert m["details"]["tatoeba_error"] == {"deu": 15.0, "ell": 30.0}
    # a task that could not run is absent, not zero
    assert ablation.variant_metrics("base", tatoeba=scores["tatoeba"])["metrics"] == {"tatoeba_error": 22.5}


def test_ablation_table_and_figure(tmp_path, scores):
    good = tmp_path / "m.json"
    ablation.write_metrics(good, ablation.variant_metrics("layers2", **scores))
    rows = ablation.ablation_rows(5, [
        {"label": "1 layer", "variant": "layers1", "model": "base", "metrics": str(good)},
        {"label": "2 layers", "variant": "layers2", "model": "layers2", "metrics": None, "note": "not trained"}])
    assert rows[0]["tatoeba_error"] == 22.5 and rows[0]["status"] == "ok" and rows[0]["paper_tatoeba_error"] is None
    assert rows[1]["status"] == "missing" and rows[1]["xnli_en"] is None
    md, csv_path, png = tmp_path / "t5.md", tmp_path / "t5.csv", tmp_path / "t5.png"
    ablation.write_ablation_table(5, rows, md, csv_path, run_name="toy")
    text = md.read_text(encoding="utf-8")
    assert "Table 5: Encoder depth (toy)" in text and "| 1 layer | layers1 | base | 22.50 |" in text
    assert "| 2 layers | layers2 | layers2 | missing |" in text and "- 2 layers: not trained" in text
    assert "Tatoeba = mean over the Table 1 languages" in text
    read = list(csv.DictReader(open(csv_path, encoding="utf-8")))
    assert [r["variant"] for r in read] == ["layers1", "layers2"] and read[0]["model"] == "base"
    ablation.plot_ablation(5, rows, png, run_name="toy")
    first = png.read_bytes()
    assert first.startswith(b"\x89PNG") and len(first) > 5000
    ablation.plot_ablation(5, rows, png, run_name="toy")
    assert png.read_bytes() == first  # deterministic


def test_table7_reports_wmt_instead_of_tatoeba(tmp_path, scores):
    good = tmp_path / "m.json"
    ablation.write_metrics(good, ablation.variant_metrics("base", **scores))
    (row,) = ablation.ablation_rows(7, [{"label": "all 5 languages", "variant": "all_languages", "model": "base",
                                         "metrics": str(good)}])
    assert row["wmt_error"] == 5.0 and "tatoeba_error" not in row


def test_summary(tmp_path, scores):
    paths = []
    for name in ("base", "layers2"):
        paths.append(tmp_path / f"{name}.json")
        ablation.write_metrics(paths[-1], ablation.variant_metrics(name, tatoeba=scores["tatoeba"]))
    assert ablation.summarize(paths) == {"base": {"tatoeba_error": 22.5}, "layers2": {"tatoeba_error": 22.5}}
