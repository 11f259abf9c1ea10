"""Language registry, the paper's Table 1 as data, and config/paper.yaml."""

from __future__ import annotations

import csv
import os
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from laser_repro import config
from laser_repro.core import languages
from conftest import laser_data, laser_model

REPO = Path(__file__).resolve().parents[1]
DATA_ROOT = Path(os.environ.get("LASER_REPRO_DATA_ROOT", REPO.parent / "shared" / "data"))
TATOEBA_DIR = DATA_ROOT / "tatoeba-v1"


def _table1() -> list[dict[str, str]]:
    text = resources.files("laser_repro").joinpath("paper_values/laser_2019/paper_table1.csv").read_text(encoding="utf-8")
    return list(csv.DictReader(text.splitlines()))


def _paper_config() -> dict:
    return yaml.safe_load((REPO / "config" / "paper.yaml").read_text(encoding="utf-8"))


def _paper_codes() -> set[str]:
    return {lang.code for lang in languages.all_languages().values() if lang.paper_training}


def test_registry_loads():
    langs = languages.all_languages()
    assert len(langs) == 122  # 112 Tatoeba test languages + eng + 9 training-only languages
    assert languages.all_languages() is langs  # loaded once
    deu = languages.get("deu")
    assert (deu.paper, deu.moses, deu.opus, deu.flores, deu.script) == ("de", "de", "de", "deu_Latn", "Latn")
    assert deu.paper_training and deu.tatoeba_test and not deu.romanize and deu.segmenter is None
    for code, lang in langs.items():
        assert re.fullmatch(r"[a-z]{3}", code), code
        assert lang.name and re.fullmatch(r"[A-Z][a-z]{3}", lang.script), lang
        assert lang.moses and lang.opus, lang
        assert lang.paper_training == (lang.paper is not None)
        assert lang.flores is None or re.fullmatch(r"[a-z]{3}_[A-Z][a-z]{3}", lang.flores), lang
    assert [c for c, lang in langs.items() if lang.romanize] == ["ell"]
    assert {c: lang.segmenter for c, lang in langs.items() if lang.segmenter} == {
        "cmn": "jieba", "wuu": "jieba", "yue": "jieba", "jpn": "mecab"}
    assert len({lang.paper for lang in langs.values() if lang.paper}) == 93


def test_lookups():
    assert languages.by_paper_code("zh").code == "cmn"
    assert languages.by_paper_code("ps").code == "pes"  # Table 1 prints "ps" for Persian
    assert languages.by_paper_code("lv").code == "lvs"
    assert languages.by_paper_code("ms").code == "zsm"
    assert languages.by_paper_code("nb").code == "nob"
    assert languages.get("eng").tatoeba_test is False
    assert languages.opus_code("cmn") == "zh"
    assert languages.opus_code("cmn", {"cmn": "zh_cn"}) == "zh_cn"
    assert languages.opus_code("deu", {"cmn": "zh_cn"}) == "de"
    assert languages.opus_code("pes") == "fa"


def test_unknown_code_error():
    with pytest.raises(languages.UnknownLanguageError) as err:
        languages.get("qqq")
    assert "'qqq'" in str(err.value) and "languages.tsv" in str(err.value)
    assert isinstance(err.value, ValueError)
    with pytest.raises(languages.UnknownLanguageError, match=r"'de'.*deu"):
        languages.get("de")  # 2-letter code: suggests the ISO 639-3 key
    with pytest.raises(languages.UnknownLanguageError, match="'xx'"):
        languages.by_paper_code("xx")
    with pytest.raises(languages.UnknownLanguageError, match="'zzz'"):
        languages.opus_code("zzz")


def test_table1_matches_registry():
    rows = _table1()
    assert len(rows) == 93
    by_paper = {lang.paper: lang.code for lang in languages.all_languages().values() if lang.paper}
    assert [r["paper_code"] for r in rows] == sorted(by_paper)  # Table 1 is in code order
    assert {r["paper_code"]: r["code"] for r in rows} == by_paper
    assert {r["code"] for r in rows} == _paper_codes()
    for r in rows:
        lang = languages.get(r["code"])
        assert lang.paper == r["paper_code"]
        # a Tatoeba test size is printed exactly for the languages that have a test file
        assert bool(r["test_sentences"]) == lang.tatoeba_test, r
        assert bool(r["en_xx_error"]) == bool(r["xx_en_error"]) == bool(r["test_sentences"]), r
        printed = r["train_sentences_printed"]
        num, unit = re.fullmatch(r"([0-9.]+)([kM]?)", printed).groups()
        assert int(r["train_sentences"]) == round(float(num) * {"": 1, "k": 1e3, "M": 1e6}[unit])
        assert r["source"] == f"TACL 2019 Table 1, column '{r['paper_code']}'"


@pytest.mark.parametrize(
    "paper_code,train,en_xx,xx_en,test",
    [
        ("de", 8_700_000, "0.90", "1.00", "1000"),
        ("kzj", 560, "91.60", "94.10", "1000"),
        ("ps", 4_900_000, "7.20", "6.00", "1000"),
        ("am", 88_000, "60.71", "55.36", "168"),
        ("ga", 732, "93.80", "95.80", "1000"),
        ("ay", 14_000, "", "", ""),
        ("zh", 8_300_000, "4.10", "5.00", "1000"),
    ],
)
def test_table1_values(paper_code, train, en_xx, xx_en, test):
    row = next(r for r in _table1() if r["paper_code"] == paper_code)
    assert (int(row["train_sentences"]), row["en_xx_error"], row["xx_en_error"], row["test_sentences"]) == (
        train, en_xx, xx_en, test)


@pytest.mark.skipif(not TATOEBA_DIR.is_dir(), reason=f"no Tatoeba test set at {TATOEBA_DIR}")
def test_tatoeba_files_have_rows():
    found = {}
    for f in TATOEBA_DIR.glob("tatoeba.*-eng.eng"):
        code = f.name.split(".")[1].removesuffix("-eng")
        found[code] = sum(1 for _ in (TATOEBA_DIR / f"tatoeba.{code}-eng.{code}").open(encoding="utf-8"))
    assert len(found) == 112
    langs = languages.all_languages()
    assert set(found) <= set(langs), set(found) - set(langs)
    assert {c for c, lang in langs.items() if lang.tatoeba_test} == set(found)
    for r in _table1():  # Table 1's test sizes are the sizes of the released files
        if r["test_sentences"]:
            assert found[r["code"]] == int(r["test_sentences"]), r


def test_paper_config_validates():
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(_paper_config())


def test_paper_config_languages():
    cfg = _paper_config()
    assert laser_data(cfg)["targets"] == ["eng", "spa"]
    union: set[str] = set()
    for corpus in cfg["corpora"]:
        langs = corpus["languages"]
        assert len(langs) == len(set(langs)), corpus["name"]
        for code in langs:
            languages.get(code)
        assert set(corpus.get("codes", {})) <= set(langs), corpus["name"]
        assert all(isinstance(v, str) for v in corpus.get("codes", {}).values()), corpus["name"]
        union |= set(langs)
    assert union == _paper_codes()
    assert len(union) == 93
    assert len({c["name"] for c in cfg["corpora"]}) == len(cfg["corpora"])
    expected_eval = {c for c in _paper_codes() if languages.get(c).tatoeba_test} - {"eng"}
    # Table 1: the 83 training languages with a test file; Table 9: the 29 other test languages
    unseen = {c for c, lang in languages.all_languages().items() if lang.tatoeba_test} - _paper_codes()
    assert len(expected_eval) == 83 and len(unseen) == 29
    assert set(cfg["evaluation"]["tatoeba"]["languages"]) == expected_eval | unseen
    plan = config.Plan(config.validate(cfg))
    assert set(plan.tatoeba_seen) == expected_eval and set(plan.tatoeba_unseen) == unseen


def test_paper_config_training_setup():
    cfg = _paper_config()
    train = laser_model(cfg)["train"]
    assert train["max_tokens"] * max(train["gpus"], 1) * train["update_freq"] == train["tokens_per_update"] == 128_000
    assert (train["lr"], train["max_epoch"]) == (0.001, 17)
    assert laser_data(cfg)["bpe"]["merges"] == 50_000
    assert laser_model(cfg)["model"] == {
        "encoder_layers": 5, "encoder_hidden_size": 512, "encoder_embed_dim": 320,
        "decoder_hidden_size": 2048, "decoder_embed_dim": 320, "decoder_lang_embed_dim": 32, "dropout": 0.1}
    by_name = {c["name"]: c for c in cfg["corpora"]}
    assert by_name["unpc"]["first_n"] == 2_000_000 and set(by_name["unpc"]["languages"]) == {"ara", "rus", "cmn"}
    assert by_name["opensubtitles"]["max_pairs"] == 2_000_000
    assert len(by_name["europarl"]["languages"]) == 21
    assert by_name["tatoeba"]["exclude_tatoeba_test"] is True
