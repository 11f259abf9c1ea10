"""Config validation of the model families: `models` (one schema per family), `nway_data`, and their
checks against the corpora and the LASER model of the run (config/multienc_small.yaml,
config/compare.yaml)."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from laser_repro import config
from laser_repro.config import ConfigError, Plan

REPO = Path(__file__).resolve().parents[1]
SD_SMALL = REPO / "config" / "multienc_small.yaml"
COMPARE = REPO / "config" / "compare.yaml"
SIX = ["eng", "fra", "spa", "rus", "ara", "cmn"]


def _sd() -> dict:
    return yaml.safe_load(SD_SMALL.read_text(encoding="utf-8"))


def _write(tmp_path: Path, cfg: dict, name: str = "cfg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        config.load(path)
    return str(err.value)


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [i for i, line in enumerate(lines, 1) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def test_multienc_small_loads(tmp_path):
    path = tmp_path / "sd.yaml"
    path.write_text(SD_SMALL.read_text(encoding="utf-8"), encoding="utf-8")
    cfg = config.load(path)
    plan = Plan(cfg)
    assert plan.laser is False
    assert plan.variants == {}
    assert plan.bitexts == [] and plan.compared_models == {}
    assert {"bilstm_efsra-z", "bilstm_efsraz-all", "lstm_efsra-z", "lstm_efsraz-all"} <= set(plan.multienc)
    settings = plan.multienc_settings("bilstm_efsraz-all")
    assert settings["languages"] == SIX
    assert settings["paths"]["targets"] == "all"
    assert settings["paths"]["sources"] == SIX
    assert settings["paths"]["inputs"] == {"1": 1.0}  # schema default
    assert settings["model"]["encoder"] == {"kind": "bilstm_max", "layers": 1, "hidden": 128}
    assert settings["model"]["dropout"] == 0.2       # schema default
    assert settings["train"]["lr"] == 0.005 and settings["train"]["cpu_processes"] == 1
    one_to_one = plan.multienc_settings("lstm_efsra-z")
    assert one_to_one["paths"]["targets"] == ["cmn"]
    assert plan.encoder_languages("lstm_efsra-z") == ["eng", "fra", "spa", "rus", "ara"]
    # defaults of nway_data
    assert cfg["nway_data"]["flores6"]["max_words"] == 50


def test_model_defaults_filled():
    cfg = _sd()
    model = cfg["models"]["lstm_efsra-z"]
    del model["train"], model["embed_dim"], model["decoder"]
    out = config.validate(cfg)
    m = out["models"]["lstm_efsra-z"]
    assert m["train"]["lr"] == 0.001
    assert m["train"]["optimizer"] == "adam" and m["train"]["batch_size"] == 96
    assert m["embed_dim"] == 384
    assert m["decoder"] == {"layers": 1, "hidden": 512}
    assert m["paper_rows"] == ["t1.lstm3x512.efsrz-z", "t2.lstm3x512.efsra-z"]
    # the other models keep their own settings
    assert out["models"]["lstm_efsraz-all"]["train"]["lr"] == 0.005
    assert out["models"]["lstm_efsraz-all"]["embed_dim"] == 64


def test_encoder_key_typo(tmp_path):
    text = SD_SMALL.read_text(encoding="utf-8")
    old = "encoder: {kind: lstm_last, layers: 1, hidden: 256}"
    assert text.index(old) < text.index("lstm_efsraz-all:")  # the first one: model lstm_efsra-z
    path = tmp_path / "typo.yaml"
    path.write_text(text.replace(old, "encoder: {kind: lstm_last, layers: 1, hiden: 256}", 1), encoding="utf-8")
    msg = _error(path)
    line = _line_of(path, "hiden: 256")
    assert f"typo.yaml:{line}: models.lstm_efsra-z.encoder.hiden: unknown key" in msg
    assert "did you mean 'hidden'" in msg


def test_unknown_family(tmp_path):
    cfg = _sd()
    cfg["models"]["bilstm_efsra-z"]["family"] = "multienk"
    path = _write(tmp_path, cfg)
    msg = _error(path)
    assert "models.bilstm_efsra-z.family: 'multienk' is not a model family" in msg
    assert "known: laser, multienc" in msg
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "family: multienk" in text)
    assert f"cfg.yaml:{line}: models.bilstm_efsra-z.family" in msg


def test_model_data_not_an_nway_entry(tmp_path):
    cfg = _sd()
    cfg["models"]["lstm_efsraz-all"]["data"] = "nope"
    msg = _error(_write(tmp_path, cfg))
    assert "cfg.yaml" in msg
    assert "models.lstm_efsraz-all.data: 'nope' is not an nway_data entry" in msg
    assert "flores6" in msg


def test_path_source_not_an_nway_language(tmp_path):
    cfg = _sd()
    cfg["models"]["lstm_efsra-z"]["paths"]["sources"] = ["eng", "fra", "deu"]
    msg = _error(_write(tmp_path, cfg))
    assert "models.lstm_efsra-z.paths.sources: ['deu'] not among the languages of nway_data.flores6" in msg


def test_path_target_not_an_nway_language(tmp_path):
    cfg = _sd()
    cfg["models"]["lstm_efsra-z"]["paths"]["targets"] = ["deu"]
    msg = _error(_write(tmp_path, cfg))
    assert "models.lstm_efsra-z.paths.targets: ['deu']" in msg


def test_nway_data_corpus_not_nway(tmp_path):
    cfg = _sd()
    cfg["corpora"].append({"name": "opus_x", "kind": "opus", "corpus": "Tatoeba", "version": "v2023-04-12",
                           "languages": ["fra", "spa"]})
    cfg["nway_data"]["flores6"]["corpus"] = "opus_x"
    msg = _error(_write(tmp_path, cfg))
    assert "nway_data.flores6.corpus: 'opus_x' is not an N-way local corpus" in msg
    cfg["nway_data"]["flores6"]["corpus"] = "absent"
    msg = _error(_write(tmp_path, cfg))
    assert "nway_data.flores6.corpus: 'absent' is not an N-way local corpus" in msg


def test_nway_data_language_not_in_corpus(tmp_path):
    cfg = _sd()
    cfg["nway_data"]["flores6"]["languages"] = SIX + ["deu"]
    msg = _error(_write(tmp_path, cfg))
    assert "nway_data.flores6.languages: ['deu'] not among the languages of corpus 'flores200_dev'" in msg


def test_nway_data_bad_heldout(tmp_path):
    cfg = _sd()
    cfg["nway_data"]["flores6"]["valid"] = {"heldout_lines": [900, 800]}
    msg = _error(_write(tmp_path, cfg))
    assert "nway_data.flores6.valid.heldout_lines: need 0 <= start < stop" in msg


def test_flores_eval_without_laser_model(tmp_path):
    cfg = _sd()
    cfg["flores_eval"] = {"corpus": "flores200_dev", "heldout_lines": [797, 997], "languages": ["fra", "spa"]}
    msg = _error(_write(tmp_path, cfg))
    assert "flores_eval: scores the LASER model" in msg


def test_compare_config(tmp_path):
    cfg = config.load(COMPARE)
    plan = Plan(cfg)
    assert plan.laser is True
    assert plan.compared_models == {"base": "laser", "sd_bilstm_all": "multienc", "sd_lstm_1to1": "multienc",
                                    "sd_bilstm_1to1": "multienc", "labse_m0": "labse", "labse_ams": "labse",
                                    "labse_ams_pt": "labse",
                                    **{f"b2v_en_{xx}_{n}": "bisent2vec" for xx in ("fr", "de") for n in ("uni", "bi")}}
    # every LASER model once per seed: base, layers3 and their replicates .seed2, .seed3
    assert sorted(plan.variants) == sorted(["base", "layers3", *(f"{v}.seed{k}" for v in ("base", "layers3") for k in (2, 3))])


def test_compare_config_other_heldout_lines_not_compared():
    cfg = yaml.safe_load(COMPARE.read_text(encoding="utf-8"))
    cfg["nway_data"]["news5"]["valid"] = {"heldout_lines": [700, 900]}
    cfg.pop("reproduces")  # its claims name the models that are no longer compared
    assert Plan(config.validate(cfg)).compared_models == {}


def test_multienc_model_named_like_laser_model(tmp_path):
    cfg = yaml.safe_load(COMPARE.read_text(encoding="utf-8"))
    cfg["models"]["layers3"] = cfg["models"].pop("sd_bilstm_all")  # the name of an ablation variant of base
    msg = _error(_write(tmp_path, cfg))
    assert "models.layers3: the name of a LASER model of this run" in msg


def test_m_to_1_inputs_with_all_targets(tmp_path):
    cfg = _sd()
    cfg["models"]["lstm_efsraz-all"]["paths"]["inputs"] = {"2": 1.0}
    msg = _error(_write(tmp_path, cfg))
    assert "models.lstm_efsraz-all.paths: " in msg
    assert "'targets': 'all' (1:N) takes one source per batch" in msg
    # the same inputs with fixed targets (M:1) are fine
    cfg = _sd()
    cfg["models"]["lstm_efsra-z"]["paths"]["inputs"] = {"1": 0.9, "2": 0.1}
    out = config.load(_write(tmp_path, cfg, "ok.yaml"))
    assert Plan(out).multienc_settings("lstm_efsra-z")["paths"]["inputs"] == {"1": 0.9, "2": 0.1}


def test_validate_does_not_modify_input():
    cfg = _sd()
    before = copy.deepcopy(cfg)
    config.validate(cfg)
    assert cfg == before


def _labse(tmp_path, **model) -> Path:
    cfg = config.load(REPO / "config" / "labse_small.yaml")
    cfg["models"] = {"m": {"family": "labse", "data": "flores6", **model}}
    return _write(tmp_path, cfg)


def test_labse_config_errors_name_the_key(tmp_path):
    assert "models.m.encoder.hiden: unknown key" in _error(_labse(tmp_path, encoder={"hiden": 8}))
    assert "models.m.pivot: 'deu' not among the languages" in _error(_labse(tmp_path, pivot="deu"))
    assert "is not a multiple of heads" in _error(_labse(tmp_path, encoder={"hidden": 10, "heads": 4}))
    assert "'t2.nope' is not a row of paper 003's Table 2" in _error(_labse(tmp_path, paper_row="t2.nope"))


def test_labse_plan_shares_a_pretraining_and_fills_the_paper_defaults(tmp_path):
    plan = Plan(config.load(REPO / "config" / "labse_2020.yaml"))
    assert set(plan.labse) == {"base", "pt", "ams", "ams_pt"}
    assert plan.labse_pretraining("base") is None and plan.labse_pretraining("ams") is None
    assert plan.labse_pretraining("pt") == plan.labse_pretraining("ams_pt") is not None  # one pre-training
    assert list(plan.labse_pretrainings.values()) == ["pt"]
    settings = plan.labse_settings("ams_pt", "dual", tokenizer="t.json", init_checkpoint="p.pt")
    assert settings["encoder"] == {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072, "dropout": 0.1,
                                   "max_len": 128}
    assert settings["loss"] == {"margin": 0.3, "scale": 10.0, "bidirectional": True}
    assert settings["train"]["batch_size"] == 4096 and settings["train"]["lr"] == 0.001
    assert settings["init_checkpoint"] == "p.pt" and settings["languages"][0] == "eng"
    pre = plan.labse_settings("ams_pt", "pretrain", tokenizer="t.json")
    assert pre["train"]["mask_prob"] == 0.2 and pre["train"]["max_masked"] == 80 and "enabled" not in pre["train"]
    assert plan.labse_vocab("ams_pt") == "120000-a0.3"


def _bisent2vec(tmp_path, **model) -> Path:
    cfg = config.load(REPO / "config" / "bisent2vec_small.yaml")
    cfg["models"] = {"m": {"family": "bisent2vec", "data": "flores8", "pair": ["eng", "fra"], **model}}
    return _write(tmp_path, cfg)


def test_bisent2vec_config_errors_name_the_key(tmp_path):
    assert "models.m.model.ngram: unknown key" in _error(_bisent2vec(tmp_path, model={"ngram": 2}))
    assert "models.m.pair: ['cmn'] not among the languages" in _error(_bisent2vec(tmp_path, pair=["eng", "cmn"]))
    assert "models.m.model.ngrams" in _error(_bisent2vec(tmp_path, model={"ngrams": 3}))
    assert "models.m.pair" in _error(_bisent2vec(tmp_path, pair=["eng", "fra", "spa"]))


def test_bisent2vec_plan_pairs_vocabularies_and_paper_defaults():
    plan = Plan(config.load(REPO / "config" / "bisent2vec_2019.yaml"))
    assert len(plan.bisent2vec) == 14 and plan.encoder_languages("b2v_en_fi_bi") == ["eng", "fin"]
    # the uni. and uni. + bi. models of a pair share one vocabulary; the paper's settings are the defaults
    assert plan.bisent2vec_vocab("b2v_en_fr_uni") == plan.bisent2vec_vocab("b2v_en_fr_bi") == "eng-fra.min8.max750000"
    settings = plan.bisent2vec_settings("b2v_en_fr_bi", vocab="v.json")
    assert settings["model"] == {"dim": 300, "ngrams": 2, "bucket": 2000000, "dropout_k": 4, "neg": 10, "t": 5e-06}
    assert settings["train"]["epochs"] == 5 and settings["train"]["lr"] == 0.2 and settings["languages"] == ["eng", "fra"]
    assert plan.bisent2vec_directions("b2v_en_hu_uni") == [("eng", "hun"), ("hun", "eng")]
    assert plan.model_tatoeba_languages("b2v_en_ru_bi") == ["rus"]
    # en-ru trains on the concatenation of two corpora
    assert plan.nway_data["opensubtitles_tanzil_en_ru"]["corpus"] == ["opensubtitles_en_ru", "tanzil_en_ru"]
    small = Plan(config.load(REPO / "config" / "bisent2vec_small.yaml"))
    assert len(small.bisent2vec) == 14 and small.bisent2vec["b2v_en_es_bi"]["train"]["threads"] == 1


# ---- ablation variants of a model of any family (`variants`: suffix -> the settings that differ) --------

def _labse_small():
    return yaml.safe_load((REPO / "config" / "labse_small.yaml").read_text(encoding="utf-8"))


def test_variants_of_a_model_are_models_of_their_own():
    cfg = _labse_small()
    cfg["models"]["labse_ams"]["variants"] = {"m0": {"loss": {"margin": 0.0}, "description": "no margin"},
                                              "lr2": {"train": {"lr": 0.002}}}
    out = config.validate(cfg)
    assert "variants" not in out["models"]["labse_ams"] and config.validate(out) == out  # validates again
    ams, m0, lr2 = (out["models"][n] for n in ("labse_ams", "labse_ams_m0", "labse_ams_lr2"))
    assert m0["loss"]["margin"] == 0.0 and ams["loss"]["margin"] == 0.3 and m0["description"] == "no margin"
    assert lr2["train"]["lr"] == 0.002 and lr2["train"]["batch_size"] == ams["train"]["batch_size"]
    assert lr2["loss"] == ams["loss"] and lr2["family"] == "labse"
    assert lr2["description"] == f"{ams['description']}; variant lr2: train.lr=0.002"
    assert lr2["paper_row"] is None  # the paper's row is claimed explicitly, never inherited
    plan = Plan(out)
    assert {"labse_ams_m0", "labse_ams_lr2"} <= set(plan.labse)
    assert plan.labse_settings("labse_ams_m0", "dual", tokenizer="t")["loss"]["margin"] == 0.0


def test_bisent2vec_ngram_variant_and_variant_errors_name_the_key(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "bisent2vec_small.yaml").read_text(encoding="utf-8"))
    name = next(n for n, m in cfg["models"].items() if m["model"]["ngrams"] == 2)
    cfg["models"][name]["variants"] = {"uni": {"model": {"ngrams": 1}}}
    plan = Plan(config.validate(cfg))
    assert plan.bisent2vec[f"{name}_uni"]["model"]["ngrams"] == 1 and plan.bisent2vec[name]["model"]["ngrams"] == 2
    cfg["models"][name]["variants"] = {"bad": {"model": {"ngramz": 1}}}
    path = _write(tmp_path, cfg)
    msg = _error(path)
    assert f"models.{name}.variants.bad.model.ngramz: unknown key; did you mean 'ngrams'?" in msg
    line = next(i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "ngramz" in text)
    assert f"cfg.yaml:{line}:" in msg
    cfg["models"][name]["variants"] = {"x": {"family": "labse"}}
    assert "variants.x.family: a variant keeps its model's family (bisent2vec)" in _error(_write(tmp_path, cfg))
    other = next(n for n in cfg["models"] if n != name)
    cfg["models"][name]["variants"] = {"x": {}}
    cfg["models"][f"{name}_x"] = cfg["models"][other]
    assert f"its model name '{name}_x' is already a model" in _error(_write(tmp_path, cfg))


def test_a_laser_model_declares_its_variants_as_ablations():
    cfg = yaml.safe_load((REPO / "tests" / "toy" / "config.yaml").read_text(encoding="utf-8"))
    cfg["models"]["base"]["variants"] = {"x": {"train": {"lr": 0.1}}}
    with pytest.raises(config.ConfigError, match="models.base.variants: unknown key"):
        config.validate(cfg)


def test_tatoeba_languages_of_each_family_are_those_it_embeds(tmp_path):
    """Tatoeba for every model: a multienc model on the languages it has an encoder for (English among them),
    a LaBSE model on every configured one, a Bi-Sent2Vec model on its pair's other side."""
    cfg = config.load(REPO / "config" / "compare.yaml")
    cfg["evaluation"]["tatoeba"]["languages"] = ["fra", "ces", "rus"]
    plan = Plan(cfg)
    assert plan.model_tatoeba_languages("sd_bilstm_all") == ["fra", "ces"]
    assert plan.model_tatoeba_languages("sd_lstm_1to1") == ["fra"]  # no encoder for its fixed target ces
    assert plan.model_tatoeba_languages("labse_ams") == ["fra", "ces", "rus"]
    b2v = [name for name, m in plan.models.items() if m["family"] == "bisent2vec"]
    assert all(plan.model_tatoeba_languages(n) == [l for l in ("fra",) if l in plan.models[n]["pair"]] for n in b2v)
