"""The DVC stages of a config (laser_repro.config.dvc_stages), without DVC or Snakemake: the repository's
dvc.yaml is the one of config/small.yaml, and every family's outputs are a stage's."""
from __future__ import annotations

import yaml

from conftest import REPO
from laser_repro import config
from laser_repro.config.dvc_stages import dvc_yaml_text, stage_outputs


def _stages(name: str) -> dict:
    cfg = config.load(REPO / "config" / name)
    return yaml.safe_load(dvc_yaml_text(cfg, config.Plan(cfg), f"config/{name}"))["stages"]


def test_the_repositorys_dvc_yaml_is_the_default_configs():
    cfg = config.load(REPO / "config" / "small.yaml")
    assert (REPO / "dvc.yaml").read_text() == dvc_yaml_text(cfg, config.Plan(cfg), "config/small.yaml"), \
        "dvc.yaml is out of date: laser-repro dvc-yaml --configfile config/small.yaml"


def test_a_config_without_laser_versions_its_nway_data_models_and_evaluations():
    """Schwenk & Douze only: no LASER outputs (DVC would refuse a missing one), the N-way BPE, the models,
    eval/ (every model's scores), the tables; each stage depends on the outputs before it."""
    stages = _stages("multienc_small.yaml")
    run = yaml.safe_load((REPO / "config" / "multienc_small.yaml").read_text())["run_name"]
    outs = {stage: [next(iter(o)) for o in body["outs"]] for stage, body in stages.items()}
    assert all(path.startswith(f"results/{run}/nway/") and path.endswith("/bpe") for path in outs["data"])
    assert outs["train"] == [f"results/{run}/models"] and outs["evaluate"] == [f"results/{run}/eval"]
    assert "metrics" not in stages["evaluate"] and "bitext_data" not in stages["data"]["params"][0]["${config}"]
    assert set(outs["data"]) <= set(stages["train"]["deps"]) and f"results/{run}/models" in stages["tables"]["deps"]


def test_every_stage_output_is_written_by_one_stage():
    for name in ("small.yaml", "compare.yaml", "labse_2020.yaml", "bisent2vec_2019.yaml"):
        cfg = config.load(REPO / "config" / name)
        paths = [p for outs in stage_outputs(config.Plan(cfg)).values() for p in outs]
        assert len(paths) == len(set(paths)), name
        nested = [(a, b) for a in paths for b in paths if a != b and b.startswith(a + "/")]
        assert not nested, (name, nested)


def test_spm_data_versions_the_sentencepiece_model_not_bpe_codes():
    cfg = config.load([REPO / "config" / "small.yaml", REPO / "config" / "overlays" / "spm.yaml"])
    data = stage_outputs(config.Plan(cfg))["data"]
    assert "results/small/spm/spm.model" in data and "results/small/spm/spm.json.prov.json" in data
    assert not [p for p in data if "/bpe/" in p]
