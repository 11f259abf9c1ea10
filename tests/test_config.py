"""Config validation (laser_repro.config and the Snakefile's loading of it): strict keys, the classifier
sections, short errors naming the file, line and key, and --configfile replacing the default config."""
from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, TOY_CONFIG, run_snakemake, laser_model, laser_data
from laser_repro import config

REPO_CONFIGS = [REPO / "config" / "paper.yaml", REPO / "config" / "small.yaml", TOY_CONFIG]


def toy() -> dict:
    return yaml.safe_load(TOY_CONFIG.read_text(encoding="utf-8"))


def error_of(cfg: dict, **kwargs) -> str:
    with pytest.raises(config.ConfigError) as err:
        config.validate(cfg, **kwargs)
    return str(err.value)


@pytest.mark.parametrize("path", REPO_CONFIGS, ids=lambda p: p.name)
def test_repo_configs_validate(path):
    cfg = config.load(path)
    assert cfg["corpora"] and cfg["evaluation"]["tatoeba"]["languages"]


def _objects_with_fixed_keys(schema, where="schema"):
    """(where, subschema) of every object subschema that lists its `properties`."""
    if isinstance(schema, dict):
        if "properties" in schema:
            yield where, schema
        for key, sub in schema.items():
            if key not in ("default", "const", "enum", "if", "then", "else", "not"):  # conditions, not object definitions
                yield from _objects_with_fixed_keys(sub, f"{where}.{key}")
    elif isinstance(schema, list):
        for i, sub in enumerate(schema):
            yield from _objects_with_fixed_keys(sub, f"{where}[{i}]")


def test_every_object_with_fixed_keys_is_strict():
    loose = [where for where, sub in _objects_with_fixed_keys(config.load_schema())
             if sub.get("additionalProperties") is not False]
    assert loose == []


def test_unknown_corpus_key_is_named_with_the_allowed_ones():
    cfg = toy()
    cfg["corpora"][0]["max_pairz"] = 5
    msg = error_of(cfg, source="toy.yaml")
    assert "corpora[0].max_pairz" in msg and "unknown key" in msg
    assert "did you mean 'max_pairs'" in msg and "first_n" in msg  # the allowed keys


@pytest.mark.parametrize("key, value", [("corpus", "Europarl"), ("allow_absent_pairs", True)])  # codes: both kinds
def test_opus_keys_on_a_local_corpus_are_rejected(key, value):
    cfg = toy()
    cfg["corpora"][0][key] = value
    msg = error_of(cfg)
    assert f"corpora[0].{key}: only for kind: opus corpora ('toy_nway' is kind: local)" in msg


def test_shards_on_an_nway_corpus_are_rejected():
    """An N-way corpus is Moses-preprocessed once per language file: `shards` there would be ignored."""
    cfg = toy()
    cfg["corpora"][0]["shards"] = 4
    assert "corpora[0].shards: an N-way corpus ('toy_nway') is Moses-preprocessed once per language file" in error_of(cfg)


def test_a_validated_config_validates_again():
    """Defaults are filled in every corpus (allow_absent_pairs, code_column): not errors the second time."""
    for path in REPO_CONFIGS:
        cfg = config.load(path)
        assert config.validate(cfg) == cfg


def test_codes_of_a_language_the_corpus_does_not_have():
    cfg = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    cfg["corpora"][1]["codes"] = {"cnm": "zh"}
    assert "corpora[1] (unpc).codes.cnm" in error_of(cfg)


@pytest.mark.parametrize("task, classifier, where", [
    ("xnli", {"epoch": 10}, "evaluation.xnli.classifier.epoch"),
    ("xnli", {"grid": {"dropout": 0.1}}, "evaluation.xnli.classifier.grid.dropout"),
    ("xnli", {"grid": {"dropuot": [0.1]}}, "evaluation.xnli.classifier.grid.dropuot"),
    ("xnli", {"grid": {"seed": [1, 2]}}, "evaluation.xnli.classifier.grid.seed"),
    ("xnli", {"activation": "sigmoid"}, "evaluation.xnli.classifier.activation"),
    ("xnli", {"dropout": 1.0}, "evaluation.xnli.classifier.dropout"),
    ("xnli", {"hidden": [512, 0]}, "evaluation.xnli.classifier.hidden[1]"),
    ("mldoc", {"epochs": "30"}, "evaluation.mldoc.classifier.epochs"),
    ("mldoc", {"seed": True}, "evaluation.mldoc.classifier.seed"),
    ("mldoc", {"normalise": True}, "evaluation.mldoc.classifier.normalise"),
    ("mldoc", {"grid": {"hidden": [10, 20]}}, "evaluation.mldoc.classifier.grid.hidden[0]"),
])
def test_classifier_typos_fail_at_load(task, classifier, where):
    cfg = toy()
    cfg["evaluation"][task]["classifier"] = classifier
    assert where in error_of(cfg)


def test_valid_classifier_sections_pass():
    cfg = toy()
    cfg["evaluation"]["xnli"]["classifier"] = {
        "hidden": [512, 384], "dropout": 0.3, "lr": 0.001, "epochs": 200, "batch_size": 128,
        "weight_decay": 0.0, "activation": "relu", "patience": 5, "seed": 3, "normalize": True,
        "grid": {"hidden": [[512], [512, 384]], "dropout": [0.1, 0.3], "lr": [0.001, 0.0005]}}
    cfg["evaluation"]["mldoc"]["classifier"] = {}
    out = config.validate(cfg)
    assert out["evaluation"]["xnli"]["classifier"]["grid"]["hidden"] == [[512], [512, 384]]
    assert out["evaluation"]["mldoc"]["classifier"] == {}  # no defaults filled: the task's own apply


def test_classifier_schema_has_the_classifier_keys():
    """The schema's classifier keys are those parse_config accepts (classifier.HPARAM_KEYS + grid, seed, normalize)."""
    from laser_repro.evaluation import classifier

    sub = config.load_schema()["$defs"]["classifier"]
    assert set(sub["properties"]) == {*classifier.HPARAM_KEYS, "grid", "seed", "normalize"}
    assert set(sub["properties"]["grid"]["properties"]) == set(classifier.HPARAM_KEYS)
    for task in ("xnli", "mldoc"):  # the paper defaults themselves pass the schema
        defaults = getattr(__import__(f"laser_repro.evaluation.{task}", fromlist=["x"]), f"{task.upper()}_DEFAULTS")
        cfg = toy()
        cfg["evaluation"][task]["classifier"] = copy.deepcopy(defaults)
        config.validate(cfg)


def test_schema_errors_are_short_and_name_file_line_and_key(tmp_path):
    path = tmp_path / "run.yaml"
    text = TOY_CONFIG.read_text().replace("    code_column: flores\n", "    code_column: flores\n    max_pairz: 5\n")
    path.write_text(text)
    line = text.splitlines().index("    max_pairz: 5") + 1
    with pytest.raises(config.ConfigError) as err:
        config.load(path)
    msg = str(err.value)
    assert f"{path}:{line}: corpora[0].max_pairz: unknown key" in msg
    assert len(msg.splitlines()) <= 3 and len(msg) < 600


def test_long_values_are_abbreviated():
    cfg = toy()
    cfg["corpora"][0]["languages"] = "eng " * 500
    msg = error_of(cfg)
    assert "corpora[0].languages" in msg and len(msg) < 400


def test_oneof_error_says_what_is_allowed():
    cfg = toy()
    cfg["flores_eval"]["languages"] = "all"
    msg = error_of(cfg)
    assert "flores_eval.languages" in msg and "'registry'" in msg and "array" in msg


def test_yaml_syntax_error_names_file_line_and_column(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("run_name: x\ntargets: [eng\ncorpora:\n  - a: 1\n")
    with pytest.raises(config.ConfigError) as err:
        config.load(path)
    msg = str(err.value)
    assert msg.startswith(f"{path}:3:8: not valid YAML: expected ',' or ']'"), msg
    assert "line 2, column 10" in msg and len(msg.splitlines()) == 1


def test_check_command(tmp_path):
    path = tmp_path / "bad.yaml"
    cfg = toy()
    laser_model(cfg)["train"]["max_epoch"] = 0
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([sys.executable, "-m", "laser_repro.config", str(TOY_CONFIG), str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert f"{TOY_CONFIG}: ok" in proc.stdout
    assert re.search(rf"{re.escape(str(path))}:\d+: models\.base\.train\.max_epoch: 0 is less than the minimum of 1", proc.stderr)


# ---- through Snakemake (parsing only: --list-rules builds no DAG) ---------------------------------------

def snakemake_error(proc) -> str:
    assert proc.returncode != 0, proc.stdout[-2000:]
    return proc.stdout + proc.stderr


def test_snakemake_schema_error_is_short_and_names_the_file(tmp_path):
    path = tmp_path / "run.yaml"
    text = TOY_CONFIG.read_text().replace("    code_column: flores\n", "    code_column: flores\n    max_pairz: 5\n")
    path.write_text(text)
    line = text.splitlines().index("    max_pairz: 5") + 1
    out = snakemake_error(run_snakemake("--list-rules", "--configfile", str(path), timeout=300))
    assert f"{path}:{line}: corpora[0].max_pairz: unknown key" in out
    assert "$schema" not in out and "additionalProperties" not in out  # no schema dump
    assert len(out.splitlines()) < 25, out


def test_snakemake_override_is_named(tmp_path):
    out = snakemake_error(run_snakemake("--list-rules", "--configfile", str(TOY_CONFIG), "--config",
                                        "run_name=bad name", timeout=300))
    assert "--config run_name" in out and "run_name: 'bad name' does not match" in out


def test_snakemake_default_config_syntax_error_names_file_and_line(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "small.yaml").write_text("run_name: x\ntargets: [eng\ncorpora:\n  - a: 1\n")
    out = snakemake_error(run_snakemake("--list-rules", "--directory", str(tmp_path), timeout=300))
    assert "config/small.yaml:3:8: not valid YAML" in out, out[-3000:]


def test_snakemake_configfile_replaces_the_default_config(tmp_path):
    """--configfile is the whole config: keys it lacks do not come from config/small.yaml (which has
    flores_eval, train.early_stopping, evaluation.xnli.train_max_pairs, ...)."""
    cfg = toy()
    del cfg["flores_eval"], laser_model(cfg)["train"]["early_stopping"]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake("--list-rules", "--configfile", str(path), timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_snakemake_default_config_without_configfile():
    proc = run_snakemake("--list-rules", "--config", "data_root=/nowhere", timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_tokens_per_update_is_planned_in_one_place():
    """config.planned_tokens_per_update: the explicit train.tokens_per_update, else max_tokens x
    max(gpus, 1) x update_freq; a tokens_per_update that the geometry does not give is an error."""
    train = {"max_tokens": 8000, "gpus": 16, "update_freq": 1}
    assert config.planned_tokens_per_update(train) == 128000
    assert config.planned_tokens_per_update(dict(train, gpus=0, update_freq=2)) == 16000
    assert config.planned_tokens_per_update(dict(train, gpus=1, tokens_per_update=128000)) == 128000
    cfg = toy()
    t = laser_model(cfg)["train"]
    t["tokens_per_update"] = config.planned_tokens_per_update({**t, "tokens_per_update": None}) + 1
    assert "models.base.train.tokens_per_update=" in error_of(cfg, source="toy.yaml")
    t["tokens_per_update"] -= 1
    config.validate(cfg, source="toy.yaml")


def test_download_alternatives_have_the_shape_of_url():
    from pathlib import Path

    from laser_repro.config import ConfigError, Plan, load, validate

    cfg = load(Path(__file__).resolve().parents[1] / "config" / "labse_2020.yaml")
    plan = Plan(cfg)
    assert plan.archive_urls("un_6way", 3)[0].endswith("UNv1.0.6way.tar.gz.03")
    assert all(u.endswith("UNv1.0.6way.tar.gz.03") for u in plan.archive_urls("un_6way", 3))
    assert len(plan.archive_urls("un_testset")) == 3
    bad = copy.deepcopy(cfg)
    bad["corpora"][0]["download"]["alternatives"] = [["https://a.example/UNv1.0.6way.tar.gz.00", "https://a.example/UNv1.0.6way.tar.gz.01"]]
    with pytest.raises(ConfigError, match=r"un_6way\)\.download\.alternatives\[0\]: a list of 4 part URLs"):
        validate(bad)


def test_precision_is_a_train_key_of_every_gpu_family():
    cfg = toy()
    laser_model(cfg)["train"]["precision"] = "bf16"
    config.validate(cfg)
    bad = toy()
    laser_model(bad)["train"]["precision"] = "fp8"
    assert "train.precision" in error_of(bad)
    assert laser_model(config.load(TOY_CONFIG))["train"]["precision"] == "fp32"  # the default
    assert laser_model(config.load(REPO / "config" / "paper.yaml"))["train"]["precision"] == "fp16"
    plan = config.Plan(config.load(REPO / "config" / "labse_2020.yaml"))
    assert plan.labse_settings("ams_pt", "dual", tokenizer="t.json")["train"]["precision"] == "bf16"
    assert plan.labse_settings("ams_pt", "pretrain", tokenizer="t.json")["train"]["precision"] == "bf16"
    plan = config.Plan(config.load(REPO / "config" / "multienc_2017.yaml"))
    assert {plan.multienc_settings(name)["train"]["precision"] for name in plan.multienc} == {"fp32"}


def test_precision_reaches_fairseq_and_the_fingerprint_unless_fp32(tmp_path):
    from laser_repro.models import registry, training_guard
    from laser_repro.models.laser import fairseq_bridge

    train = {"lr": 0.001, "max_tokens": 100, "update_freq": 1, "max_epoch": 1, "seed": 1, "log_interval": 1}
    model = {"encoder_layers": 1, "encoder_hidden_size": 4, "encoder_embed_dim": 4, "decoder_hidden_size": 4,
             "decoder_embed_dim": 4, "decoder_lang_embed_dim": 2}

    def argv(precision, cpu):
        return fairseq_bridge.fairseq_train_argv(tmp_path, tmp_path, ["fra-eng"], ["eng"], model,
                                                 {**train, "precision": precision}, cpu, validate=False)

    assert "--bf16" in argv("bf16", False) and "--fp16" in argv("fp16", False)
    assert not {"--fp16", "--bf16"} & set(argv("fp32", True))
    with pytest.raises(ValueError, match="train.precision fp16: fairseq trains in fp16 on GPUs only"):
        argv("fp16", True)
    # the multienc family: bf16 changes the fingerprint; fp32 is that of a run made before the key existed
    sys.path.insert(0, str(REPO / "tests"))
    from test_multienc import LANGS, make_cipher_data, tiny_settings

    data = make_cipher_data(tmp_path / "data", n_train=10, n_valid=4)
    family = registry.get("multienc")
    settings = tiny_settings({"sources": LANGS, "targets": "all"})

    def digest(**train_opts):
        chosen = {**settings, "train": {**settings["train"], **train_opts}}
        return training_guard.fingerprint_digest(training_guard.compute_fingerprint(chosen, data, family=family)[0])

    assert digest(precision="fp32") == digest() != digest(precision="bf16")


def test_knn_device_defaults_to_auto_and_takes_only_the_engines():
    from laser_repro.evaluation.mining import KNN_DEVICES

    assert config.validate(toy())["evaluation"]["knn_device"] == "auto"
    schema = config.load_schema()["properties"]["evaluation"]["properties"]["knn_device"]
    assert tuple(schema["enum"]) == KNN_DEVICES  # the schema and mining.knn_engine accept the same names
    for device in KNN_DEVICES:
        cfg = toy()
        cfg["evaluation"]["knn_device"] = device
        assert config.validate(cfg)["evaluation"]["knn_device"] == device
    cfg = toy()
    cfg["evaluation"]["knn_device"] = "cuda"
    assert "evaluation.knn_device" in error_of(cfg)


# ---- one config shape: LASER's model and data are entries of `models` and `bitext_data` ----------------

def _top_level_form(cfg: dict) -> dict:
    """The former shape: the LASER model's and its data's sections at the top level."""
    old = {k: v for k, v in cfg.items() if k not in ("bitext_data", "models")}
    old.update({k: v for k, v in laser_data(cfg).items() if k != "corpora"})
    old.update({k: v for k, v in laser_model(cfg).items() if k not in ("family", "data")})
    return old


def test_the_former_top_level_laser_form_is_refused_with_the_way_to_write_it(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text(yaml.safe_dump(_top_level_form(toy()), sort_keys=False))
    with pytest.raises(config.ConfigError) as err:
        config.load(path)
    msg = str(err.value)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("targets:"))
    assert msg.startswith(f"{path}:{line}: targets, preprocess, bpe, model, train, embed, ablations: the LASER model "
                          f"is no longer configured at the top level"), msg
    assert "bitext_data:" in msg and "family: laser" in msg and "data: <data name>" in msg
    # one key of the old form is enough
    cfg = toy()
    cfg["train"] = laser_model(cfg)["train"]
    assert "train: the LASER model is no longer configured at the top level" in error_of(cfg)


def test_laser_model_may_have_any_name_and_its_corpora_are_chosen():
    """The LASER model's name is its base variant's (results/<run>/models/<name>/); bitext_data.corpora
    restricts the bitexts to the corpora it names."""
    cfg = toy()
    cfg["models"]["laser1"] = cfg["models"].pop("base")
    cfg["corpora"].append({**cfg["corpora"][0], "name": "extra"})
    laser_data(cfg)["corpora"] = [cfg["corpora"][0]["name"]]
    plan = config.Plan(config.validate(cfg))
    assert plan.laser_name == "laser1" and list(plan.variants)[0] == "laser1"
    assert {b.corpus for b in plan.bitexts} == {cfg["corpora"][0]["name"]}
    assert plan.variant_aliases["layers1"] == "laser1"


@pytest.mark.parametrize("change, message", [
    (lambda c: c["models"].update(second={k: v for k, v in c["models"]["base"].items() if k != "ablations"}),
     "models.second.embed: the LASER models of a run embed with the first one's settings (models.base.embed)"),
    (lambda c: c["models"].update(second={k: v for k, v in c["models"]["base"].items() if k != "embed"}),
     "models.second.ablations: the ablations (Tables 5-7) vary the run's first LASER model"),
    (lambda c: c["models"].update(second={"family": "laser", "data": "toy", "model": c["models"]["base"]["model"],
                                          "train": {**c["models"]["base"]["train"], "gpus": 2}}),
     "models.second.train.gpus: 2, but models.base.train.gpus is 0"),
    (lambda c: c["models"].update(second={"family": "laser", "data": "toy", "model": c["models"]["base"]["model"],
                                          "train": {**c["models"]["base"]["train"], "tokens_per_update": 7}}),
     "models.second.train.tokens_per_update=7 but max_tokens"),
    (lambda c: c["bitext_data"].update(other={**c["bitext_data"]["toy"]}),
     "bitext_data.other: a second bitext_data entry (after 'toy'): one per run"),
    (lambda c: c["models"]["base"].update(data="nope"), "models.base.data: 'nope' is not a bitext_data entry (toy)"),
    (lambda c: c["bitext_data"]["toy"].update(corpora=["nope"]), "bitext_data.toy.corpora[0]: 'nope' is not a corpus"),
    (lambda c: c["models"]["base"].pop("train"), "models.base: 'train' is a required property"),
    (lambda c: c["models"]["base"]["model"].update(encoder_layerz=2), "models.base.model.encoder_layerz: unknown key"),
    (lambda c: c["bitext_data"]["toy"]["bpe"].update(merges=0), "bitext_data.toy.bpe.merges: 0 is less than the minimum"),
])
def test_laser_entries_errors_name_the_key(change, message):
    cfg = toy()
    change(cfg)
    assert message in error_of(cfg)


def test_several_laser_models_share_the_bitext_data():
    """Issue 27: LASER models after the first train on the same bitext_data entry with their own model and
    train sections (the first's embedding settings, no ablations of their own): variants of the run with
    their own training settings and seed replicates, in the comparisons beside the first."""
    cfg = toy()
    base = cfg["models"]["base"]
    cfg["seeds"] = [base["train"]["seed"], 7]
    cfg["models"]["wide"] = {"family": "laser", "data": "toy", "description": "a wider encoder",
                             "model": {**base["model"], "encoder_hidden_size": 2 * base["model"]["encoder_hidden_size"]},
                             "train": {**base["train"], "lr": 0.01}}
    plan = config.Plan(config.validate(cfg))
    assert plan.laser_models == ["base", "wide"] and plan.laser_name == "base"
    assert plan.family("wide") == "laser" and plan.laser_description("wide") == "a wider encoder"
    wide = plan.variants["wide"]
    assert dict(wide.model)["encoder_hidden_size"] == 2 * base["model"]["encoder_hidden_size"]
    assert wide.pairs == plan.base.pairs and wide.identity != plan.base.identity
    assert plan.variant_train("wide")["lr"] == 0.01 and plan.variant_train("base")["lr"] == base["train"]["lr"]
    assert plan.variant_train("wide.seed7")["seed"] == 7 and plan.variant_train("wide.seed7")["lr"] == 0.01
    assert plan.seed_runs("wide") == {base["train"]["seed"]: "wide", 7: "wide.seed7"}
    assert "wide" not in plan.ablation_rows.get("depth", []) and "wide" not in plan.family_entries | plan.models


def test_a_bitext_data_entry_without_a_laser_model_is_an_error():
    cfg = toy()
    cfg["models"] = {}
    assert "models: {} should be non-empty" in error_of(cfg)
    cfg = yaml.safe_load((REPO / "config" / "labse_small.yaml").read_text())
    cfg["bitext_data"] = {"unused": {"targets": ["eng"], "bpe": {"merges": 10}}}
    assert "bitext_data.unused: no LASER model (family: laser) trains on it" in error_of(cfg)


def test_the_plan_reads_the_config_in_its_one_shape():
    """Issue 37: no flattened copy of the LASER sections: the plan keeps the validated config as written, and
    the LASER stages read their model's entry and its bitext_data entry through plan.laser_setup."""
    cfg = toy()
    cfg["models"]["wide"] = {"family": "laser", "data": "toy", "model": dict(cfg["models"]["base"]["model"]),
                             "train": {**cfg["models"]["base"]["train"], "lr": 0.01}}
    validated = config.validate(cfg)
    plan = config.Plan(validated)
    assert plan.config is validated
    assert not {"targets", "filters", "preprocess", "bpe", "model", "train", "embed", "ablations", "laser"} & set(plan.config)
    setup = plan.laser_setup
    assert (setup.name, setup.data_name, list(setup.others)) == ("base", "toy", ["wide"])
    assert setup.entry is validated["models"]["base"] and setup.data is validated["bitext_data"]["toy"]
    assert plan.targets == list(setup.data["targets"]) and setup.corpora == tuple(c["name"] for c in validated["corpora"])
    assert setup.key("preprocess.lowercase") == "bitext_data.toy.preprocess.lowercase"
    assert setup.key("train.seed") == "models.base.train.seed" and setup.key("targets") == "bitext_data.toy.targets"
    assert setup.description("wide") == "wide" and setup.description("layers1") == "base"
    assert "base" not in plan.family_entries and "wide" not in plan.family_entries
    # a config without a LASER model has no setup, and no LASER sections to read
    labse = config.Plan(config.load(REPO / "config" / "labse_small.yaml"))
    assert labse.laser_setup is None and not labse.laser and labse.targets == [] and labse.family_entries
