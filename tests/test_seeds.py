"""Seed replicates (config `seeds`): the plan's replicate models, the mean ± sd of the tables
(laser_repro.reporting.seeds), an ablation table over seeds, and the dry run scheduling every replicate."""
from __future__ import annotations

import csv
import json
import re
import statistics

import pytest
import yaml

from conftest import REPO, make_toy_data, run_snakemake
from laser_repro import config
from laser_repro.reporting import seeds
from laser_repro.reporting.seeds import SeedMean, over_seeds, per_seed_specs, seed_columns, seed_mean

TOY_COMPARE = REPO / "tests" / "toy" / "compare.yaml"


# ---- aggregation ----------------------------------------------------------------------------------------
def test_seed_mean_is_the_mean_with_the_sample_sd():
    v = seed_mean([86.0, 87.0, 89.0])
    assert isinstance(v, SeedMean) and v == pytest.approx(87.333333) and v.n == 3
    assert v.sd == pytest.approx(statistics.stdev([86.0, 87.0, 89.0])) == pytest.approx(1.527525)
    assert f"{v:.1f}" == "87.3 ± 1.5 (n=3)"
    assert f"{round(v, 2):+.2f}" == "+87.33 ± 1.53 (n=3)"  # a signed delta: the sd stays unsigned
    assert str(v) == repr(87.33333333333333) and json.dumps(v) == json.dumps(87.33333333333333)


def test_one_seed_or_one_value_has_no_spread():
    assert seed_mean([42.5]) == 42.5 and not isinstance(seed_mean([42.5]), SeedMean)
    alone = seed_mean([None, 3.0, None])  # only one seed has a value: n=1, no ±
    assert isinstance(alone, SeedMean) and alone.sd is None and f"{alone:.1f}" == "3.0 (n=1)"
    assert seed_mean([None, None]) is None
    same = seed_mean([7.25, 7.25, 7.25])  # the paper's value, TF-IDF: the same in every seed
    assert same == 7.25 and not isinstance(same, SeedMean)
    partial = seed_mean([1.0, None, 3.0])
    assert partial.n == 2 and partial == 2.0


def test_over_seeds_merges_rows_cell_by_cell():
    rows = [[{"row": "a", "ours": 10.0, "paper": 12.0, "pair": (1.0, 2.0), "n": {"x": 5}}],
            [{"row": "a", "ours": 14.0, "paper": 12.0, "pair": (3.0, 2.0), "n": {"x": 5}}]]
    (row,) = over_seeds(rows)
    assert row["row"] == "a" and row["paper"] == 12.0 and not isinstance(row["paper"], SeedMean)
    assert isinstance(row["ours"], SeedMean) and row["ours"] == 12.0 and row["ours"].n == 2
    assert row["ours"].sd == pytest.approx(2.8284271)
    assert isinstance(row["pair"], tuple) and row["pair"][0] == 2.0 and row["pair"][1] == 2.0
    assert row["n"] == {"x": 5}
    assert over_seeds([rows[0]]) is rows[0]  # one seed: unchanged
    with pytest.raises(ValueError, match=r"\[0\]\.row"):
        over_seeds([[{"row": "a"}], [{"row": "b"}]])
    with pytest.raises(ValueError, match="shape"):
        over_seeds([[1.0], [1.0, 2.0]])


def test_per_seed_specs_and_csv_columns():
    specs = [{"name": "m", "metrics": "m.json", seeds.REPLICATES: [{"metrics": "m2.json"}, {"metrics": "m3.json"}]},
             {"name": "paper only", "metrics": None}]
    by_seed = per_seed_specs(specs)
    assert [[s["metrics"] for s in seed] for seed in by_seed] == [["m.json", None], ["m2.json", None], ["m3.json", None]]
    assert all(seeds.REPLICATES not in s and s["name"] == "m" for s in (seed[0] for seed in by_seed))
    with pytest.raises(ValueError, match="different numbers"):
        per_seed_specs([{seeds.REPLICATES: [{}]}, {seeds.REPLICATES: [{}, {}]}])

    lines = [{"row": "a", "ours": SeedMean(2.0, 0.5, 3), "paper": 1.0}, {"row": "b", "ours": 4.0, "paper": None}]
    out, fields = seed_columns(lines, ["row", "ours", "paper"])
    assert fields == ["row", "ours", "ours_sd", "ours_n_seeds", "paper"]
    assert out[0]["ours"] == 2.0 and type(out[0]["ours"]) is float and out[0]["ours_sd"] == 0.5
    assert out[0]["ours_n_seeds"] == 3 and out[1]["ours_sd"] is None
    plain = [{"row": "a", "ours": 1.0}]
    assert seed_columns(plain, ["row", "ours"]) == (plain, ["row", "ours"])  # one seed: the CSV of before


# ---- the plan: replicate names and seeds --------------------------------------------------------------
def _compare_config(ablations=None, **extra) -> dict:
    cfg = yaml.safe_load(TOY_COMPARE.read_text(encoding="utf-8"))
    cfg["data_root"] = "/nonexistent"
    cfg.update(extra)
    if ablations is not None:
        cfg["models"]["base"]["ablations"] = ablations
    return config.validate(cfg, source="toy")


def test_plan_trains_every_model_once_per_seed_the_configured_seed_being_the_model():
    plain = config.Plan(_compare_config())
    plan = config.Plan(_compare_config(seeds=[3, 1, 2], ablations={"depth": {"layers": [1, 2]}}))
    assert plain.replicate_of == {} and plain.seed_replicates("base") == ["base"]
    # train.seed is 1: base is seed 1; then the other listed seeds in their order
    assert plan.seed_replicates("base") == ["base", "base.seed3", "base.seed2"]
    assert list(plan.variants) == ["base", "layers2", "base.seed3", "base.seed2", "layers2.seed3", "layers2.seed2"]
    assert plan.variants["base"].seed is None and plan.variants["layers2.seed2"].seed == 2
    assert plan.variants["layers2.seed2"].model == plan.variants["layers2"].model
    assert plan.configured(plan.variants) == ["base", "layers2"]
    assert plan.models["toy_last.seed3"]["train"]["seed"] == 3 and plan.models["toy_last"]["train"]["seed"] == 1
    assert plan.multienc_settings("toy_last.seed2")["train"] == {**plan.multienc_settings("toy_last")["train"], "seed": 2}
    assert plan.labse_settings("toy_labse.seed2", "dual", tokenizer="t")["train"]["seed"] == 2
    assert plan.labse_pretraining("toy_labse.seed2") == plan.labse_pretraining("toy_labse")  # one pre-training
    assert plan.bisent2vec_settings("toy_b2v.seed3", vocab="v")["train"]["seed"] == 3
    assert plan.compared_models == plain.compared_models  # one column per configured model
    names = [*plan.variants, *plan.models]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", n) for n in names) and len(set(names)) == len(names)
    one = config.Plan(_compare_config(seeds=[1]))
    assert list(one.variants) == ["base"] and list(one.models) == list(plain.models)


def test_seeds_must_list_every_configured_seed():
    cfg = yaml.safe_load(TOY_COMPARE.read_text(encoding="utf-8"))
    cfg["seeds"] = [1, 2]
    cfg["models"]["toy_labse"]["train"]["seed"] = 7
    with pytest.raises(config.ConfigError, match=r"seeds: \[1, 2\] does not list models\.toy_labse\.train\.seed \(7\)"):
        config.validate(cfg, source="toy")
    cfg["seeds"] = [1, 1]
    with pytest.raises(config.ConfigError, match="seeds"):
        config.validate(cfg, source="toy")


# ---- an ablation table over seeds ------------------------------------------------------------------------
def test_ablation_table_shows_mean_and_sd_over_seeds(tmp_path):
    from laser_repro.cli import main

    def metrics(name, error):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"variant": name, "metrics": {"tatoeba_error": error}}))
        return str(path)

    rows = [{"label": "1 layer", "variant": "layers1", "model": "layers1", "setting": "layers=1",
             "metrics": metrics("layers1", 10.0),
             seeds.REPLICATES: [{"metrics": metrics("layers1.seed2", 12.0)}, {"metrics": metrics("layers1.seed3", 14.0)}]},
            {"label": "5 layers", "variant": "base", "model": "base", "setting": "layers=5",
             "metrics": metrics("base", 5.0),
             seeds.REPLICATES: [{"metrics": metrics("base.seed2", 5.0)}, {"metrics": metrics("base.seed3", 5.0)}]}]
    md, csv_path = tmp_path / "t5.md", tmp_path / "t5.csv"
    main(["ablation-table", "--table", "5", "--run-name", "r", "--rows", json.dumps(rows), "--md", str(md),
          "--csv", str(csv_path), "--png", str(tmp_path / "t5.png")])
    text = md.read_text()
    assert "| 12.00 ± 2.00 (n=3) |" in text and "| 5.00 |" in text and seeds.NOTE in text
    by_row = {r["row"]: r for r in csv.DictReader(open(csv_path, encoding="utf-8"))}
    assert by_row["1 layer"]["tatoeba_error"] == "12.0" and by_row["1 layer"]["tatoeba_error_sd"] == "2.0"
    assert by_row["1 layer"]["tatoeba_error_n_seeds"] == "3" and by_row["5 layers"]["tatoeba_error_sd"] == ""
    assert by_row["1 layer"]["paper_tatoeba_error"] and "paper_tatoeba_error_sd" not in by_row["1 layer"]


# ---- the workflow: every replicate is scheduled, its seed in its settings ----------------------------
def _job_counts(out: str) -> dict[str, int]:
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts.setdefault(parts[0], int(parts[1]))
    return counts


def test_dry_run_schedules_every_replicate(tmp_path):
    """The toy compare config with seeds [1, 2] and a depth ablation trains two
    LASER variants, two multienc models, one LaBSE and one Bi-Sent2Vec model twice each; the replicate's
    seed reaches its trainer's settings; the tables read every replicate."""
    cfg = yaml.safe_load(TOY_COMPARE.read_text(encoding="utf-8"))
    cfg.update(seeds=[1, 2], data_root=str(make_toy_data.make(tmp_path / "data")))
    cfg["models"]["base"]["ablations"] = {"depth": {"layers": [1, 2]}}
    path = tmp_path / "seeds.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake("--configfile", str(path), "--directory", str(tmp_path), "-n", "-p", "seeds", timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    counts = _job_counts(out)
    assert {k: counts.get(k) for k in ("laser_train", "multienc_train", "labse_train", "bisent2vec_train",
                                       "labse_pretrain")} == {"laser_train": 4, "multienc_train": 4,
                                                              "labse_train": 2, "bisent2vec_train": 2,
                                                              "labse_pretrain": 1}
    assert all(counts.get(t) == 1 for t in ("compare_flores", "ablation_table", "multienc_tables", "labse_tables",
                                            "bisent2vec_tables")), counts
    train = [line for line in out.splitlines() if "laser-repro" in line and " train " in line
             and "/models/layers2.seed2/" in line]
    assert train and '"seed": 2' in train[0]
    assert "results/toy_compare/models/toy_labse.seed2/model_record.json" in out
