"""Local corpora downloaded as a sacrebleu test set (``download: {sacrebleu: ...}``): the conversion of a
fixture archive (sacrebleu's member names, offline) to bitext and N-way files, the config checks, the
plan's one download per test set, and the workflow's jobs for config/small.yaml without data_root."""
from __future__ import annotations

import argparse
import json
import re

import pytest
import yaml
from conftest import REPO, run_snakemake
from eval_fixtures.wmt import make_test_set

from laser_repro import config
from laser_repro.config import Plan
from laser_repro.data import cli as data_cli
from laser_repro.data import sacrebleu_sets as sets

TEXTS = {
    "en": ["The cat sleeps.", "It rains today.", "We go home.", "The train is late.", "She reads a book."],
    "de": ["Die Katze schläft.", "Heute regnet es.", "Wir gehen nach Hause.", "Der Zug ist spät.", "Sie liest ein Buch."],
    "ja": ["猫が寝ている。", "今日は雨だ。", "家に帰る。", "電車が遅れている。", "彼女は本を読む。"],
    "cs": ["Kočka spí.", "Dnes prší.", "Jdeme domů.", "Vlak má zpoždění.", "Čte knihu."],
    "es": ["El gato duerme.", "Hoy llueve.", "Vamos a casa.", "El tren llega tarde.", "Ella lee un libro."],
}


def sacrebleu_corpus(*argv):
    parser = argparse.ArgumentParser()
    data_cli.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["sacrebleu-corpus", *map(str, argv)])
    args.func(args)


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------------------------- conversion, offline

def test_bitext_sides_in_the_direction_of_the_pair(tmp_path):
    # wmt19: de-en and en-de are different files (sgm/newstest2019-deen-*, -ende-*); de-en has a document
    # of its own, so its sides are one line longer than en-de's
    fx = make_test_set(tmp_path / "test.tgz", {k: TEXTS[k] for k in ("en", "de")}, test_set="wmt19",
                       pair_only={"de": [("Only in one direction.", "Nur in einer Richtung.")]})
    assert {"sgm/newstest2019-deen-src.de.sgm", "sgm/newstest2019-ende-ref.de.sgm"} <= set(fx.members)
    out = tmp_path / "out"
    sacrebleu_corpus("--test-set", "wmt19", "--tarball", fx.path, "--md5", fx.md5,
                     "--pair-file", "en-de", "deu", out / "deu-eng.deu", "--pair-file", "en-de", "eng", out / "deu-eng.eng",
                     "--meta", out / "sacrebleu.json")
    assert lines(out / "deu-eng.deu") == ["Nur in einer Richtung.", *TEXTS["de"]]
    assert lines(out / "deu-eng.eng") == ["Only in one direction.", *TEXTS["en"]]
    meta = json.loads((out / "sacrebleu.json").read_text(encoding="utf-8"))
    assert meta["pairs"] == {"en-de": {"segments": 6}}
    assert meta["files"][str(out / "deu-eng.deu")] == {"langpair": "en-de", "language": "deu", "side": "ref",
                                                        "member": "sgm/newstest2019-ende-ref.de.sgm", "lines": 6}
    assert meta["archives"][0]["url"] == "https://data.statmt.org/wmt19/translation-task/test.tgz"
    assert meta["archives"][0]["sacrebleu_md5"] == "84de7162d158e28403103b01aeefc39a"


def test_wmt21_xml_reads_the_first_translators_reference(tmp_path):
    fx = make_test_set(tmp_path / "test.tgz", {k: TEXTS[k] for k in ("en", "ja")}, test_set="wmt21",
                       translators=("B", "A"))  # B first in the file: "A" is still the reference read
    assert "test/newstest2021.en-ja.xml" in fx.members
    files = [("en-ja", "jpn", tmp_path / "ja"), ("en-ja", "eng", tmp_path / "en"), ("ja-en", "jpn", tmp_path / "ja2")]
    sets.write_pair_files("wmt21", [fx.path], files, tmp_path / "meta.json", md5=[fx.md5])
    assert lines(tmp_path / "en") == TEXTS["en"]
    assert lines(tmp_path / "ja2") == TEXTS["ja"]  # ja-en's source
    # en-ja's references: translator A's, not B's ("B: ..."), whatever their order
    assert lines(tmp_path / "ja") == TEXTS["ja"]


def test_nway_corpus_joins_the_pairs_on_english(tmp_path):
    # wmt08: Czech files are named .cz, no docids (sacrebleu's wmt08 has none): joined by position. A
    # repeated sentence stays (training text is the set's lines as they are; the evaluation drops it)
    texts = {k: [*TEXTS[k], TEXTS[k][1]] for k in ("en", "de", "cs", "es")}
    fx = make_test_set(tmp_path / "test.tgz", texts, test_set="wmt08")
    assert "test/newstest2008-src.cz.sgm" in fx.members
    out = tmp_path / "out"
    args = ["--test-set", "wmt08", "--tarball", fx.path, "--md5", fx.md5, "--meta", out / "sacrebleu.json"]
    sacrebleu_corpus(*args, *[a for code, name in (("eng", "en"), ("ces", "cs"), ("deu", "de"), ("spa", "es"))
                              for a in ("--nway-file", code, out / name)])
    for name in ("en", "cs", "de", "es"):
        assert lines(out / name) == texts[name]
    meta = json.loads((out / "sacrebleu.json").read_text(encoding="utf-8"))
    assert meta["sentences"] == 6 and meta["pairs"]["ces"] == {"langpair": "cs-en", "segments": 6}
    assert meta["join"]["duplicates_removed"] == 0
    assert sets.build_texts("wmt08", [fx.path], ["eng", "deu"], tmp_path / "eval", md5=[fx.md5])["sentences"] == 5
    assert meta["files"]["ces"] == str(out / "cs")
    # a language the test set lacks is an error for a corpus (wmt08 has no Russian), not a missing file
    with pytest.raises(sets.WmtError, match="rus.*no ru-en or en-ru pair"):
        sacrebleu_corpus(*args, "--nway-file", "eng", out / "en", "--nway-file", "rus", out / "ru")
    with pytest.raises(sets.WmtError, match="joined on English"):
        sacrebleu_corpus(*args, "--nway-file", "deu", out / "de", "--nway-file", "ces", out / "cs")
    with pytest.raises(sets.WmtError, match="either --nway-file .* or --pair-file"):
        sacrebleu_corpus(*args)


def test_wrong_archive_or_pair_is_an_error(tmp_path):
    fx = make_test_set(tmp_path / "test.tgz", {k: TEXTS[k] for k in ("en", "de")}, test_set="wmt19")
    with pytest.raises(sets.WmtError, match="84de7162d158e28403103b01aeefc39a"):  # sacrebleu's md5, not the fixture's
        sets.write_pair_files("wmt19", [fx.path], [("de-en", "deu", tmp_path / "de")], tmp_path / "meta.json")
    with pytest.raises(sets.WmtError, match="no pair cs-en .*its pairs: .*en-cs"):
        sets.write_pair_files("wmt19", [fx.path], [("cs-en", "ces", tmp_path / "cs")], tmp_path / "m.json", md5=[fx.md5])
    with pytest.raises(sets.WmtError, match="fra \\(fr\\) is not a language of the sacrebleu pair de-en"):
        sets.write_pair_files("wmt19", [fx.path], [("de-en", "fra", tmp_path / "fr")], tmp_path / "m.json", md5=[fx.md5])
    assert not (tmp_path / "de").exists() and not (tmp_path / "meta.json").exists()


# ---------------------------------------------------------------------------------- config and plan

def small() -> dict:
    return yaml.safe_load((REPO / "config" / "small.yaml").read_text(encoding="utf-8"))


def corpus(cfg, name):
    return next(c for c in cfg["corpora"] if c["name"] == name)


def error_of(cfg) -> str:
    with pytest.raises(config.ConfigError) as err:
        config.validate(cfg)
    return str(err.value)


def test_small_config_downloads_each_test_set_once():
    plan = Plan(config.load(REPO / "config" / "small.yaml"))
    archives = plan.sacrebleu_archives
    assert sorted(a["test_set"] for a in archives.values()) == [
        "wmt08", "wmt09", "wmt10", "wmt11", "wmt13", "wmt14", "wmt15", "wmt16", "wmt17", "wmt18", "wmt19", "wmt20", "wmt21"]
    assert plan.sacrebleu_tarballs("newstest2019_xx_en") == plan.sacrebleu_tarballs("newstest2019_en_xx") == ["wmt19.test.tgz"]
    assert archives["wmt19.test.tgz"]["url"] == "https://data.statmt.org/wmt19/translation-task/test.tgz"
    assert archives["wmt19.test.tgz"]["md5"] == "84de7162d158e28403103b01aeefc39a"
    from laser_repro.config.plan import sacrebleu_langpair

    assert sacrebleu_langpair(plan.corpora["newstest2019_en_xx"], "cmn", "eng") == "en-zh"
    assert sacrebleu_langpair(plan.corpora["newstest2019_xx_en"], "cmn", "eng") == "zh-en"
    # where a file read from data_root came from
    assert plan.sacrebleu_source("newstest2021_en_xx", "jpn", ("jpn", "eng")) == (
        "https://data.statmt.org/wmt21/translation-task/test.tgz#test/newstest2021.en-ja.xml")
    assert plan.sacrebleu_source("newstest2008", "ces") == "https://statmt.org/wmt08/test.tgz#test/newstest2008-src.cz.sgm"


def test_alternatives_of_a_test_set_are_those_of_all_its_corpora():
    cfg = small()
    corpus(cfg, "newstest2019_xx_en")["download"]["alternatives"] = ["/mirror/wmt19/test.tgz"]
    corpus(cfg, "newstest2019_en_xx")["download"]["alternatives"] = ["https://m.example/wmt19.tgz", "/mirror/wmt19/test.tgz"]
    plan = Plan(config.validate(cfg))
    assert plan.sacrebleu_archives["wmt19.test.tgz"]["alternatives"] == ["/mirror/wmt19/test.tgz", "https://m.example/wmt19.tgz"]
    corpus(cfg, "newstest2019_xx_en")["download"]["alternatives"] = [["/a.tgz", "/b.tgz"]]
    assert "newstest2019_xx_en).download.alternatives[0]: one URL" in error_of(cfg)


@pytest.mark.parametrize("name, change, message", [
    ("newstest2019_xx_en", {"test_set": "wmt99"},
     r"corpora\[\d+\] \(newstest2019_xx_en\)\.download\.sacrebleu\.test_set: sacrebleu has no test set 'wmt99'"),
    # wmt19 has en-cs only: the xx-en corpus cannot have Czech; the error lists the pairs
    ("newstest2019_xx_en", {"languages": ["deu", "ces"]},
     r"\(newstest2019_xx_en\)\.download\.sacrebleu: bitext ces-eng: .*no pair cs-en \(its pairs: .*en-cs"),
    ("newstest2021_en_xx", {"languages": ["jpn", "cmn", "pol"]},
     r"\(newstest2021_en_xx\)\.download\.sacrebleu: bitext pol-eng: .*no pair en-pl"),
    ("newstest2008", {"languages": ["eng", "spa", "rus"]},
     r"\(newstest2008\)\.download\.sacrebleu: rus: .*wmt08 has no ru-en or en-ru pair"),
    ("newstest2008", {"langpair": "{tgt}-{src}"}, r"\(newstest2008\)\.download\.sacrebleu\.langpair: for layout bitext only"),
    ("newstest2008", {"languages": ["deu", "fra"], "targets": ["spa"]},
     r"\(newstest2008\)\.download\.sacrebleu: the N-way set is joined on English"),
])
def test_sacrebleu_download_errors_name_the_corpus(name, change, message):
    cfg = small()
    c = corpus(cfg, name)
    for key, value in change.items():
        (c["download"]["sacrebleu"] if key in ("test_set", "langpair") else c)[key] = value
    assert re.search(message, error_of(cfg)), error_of(cfg)


def test_sacrebleu_download_is_not_an_archive():
    cfg = small()
    c = corpus(cfg, "newstest2014")
    c["download"]["url"] = "https://statmt.org/wmt14/test-filtered.tgz"  # an archive's URL and a test set
    assert re.search(r"corpora\[\d+\]\.download: .* is not allowed; expected the keys url \+ member or the keys opus "
                     r"or the keys sacrebleu", error_of(cfg)), error_of(cfg)
    del c["download"]["url"]
    c["download"]["sacrebleu"]["langpair"] = "{src}_{tgt}"
    assert "download.sacrebleu.langpair: '{src}_{tgt}' is not one of ['{src}-{tgt}', '{tgt}-{src}']" in error_of(cfg)


# ---------------------------------------------------------------------------------- workflow

def test_small_config_without_data_root_plans_the_downloads(tmp_path):
    proc = run_snakemake("-n", "-p", "--configfile", str(REPO / "config" / "small.yaml"), "--directory", str(tmp_path),
                         timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    assert counts["download_sacrebleu"] == 13  # wmt08-wmt21 but wmt12 (evaluation only): one per test set
    conversions = {name for name in counts if name.startswith("sacrebleu_corpus_")}
    assert len(conversions) == 17 and all(counts[n] == 1 for n in conversions)
    assert counts["download_archive"] == 2  # FLORES-200 and NTREX-128: their archives
    for url in ("https://statmt.org/wmt08/test.tgz", "https://data.statmt.org/wmt21/translation-task/test.tgz"):
        assert f"fetch --url {url} --dest resources/sacrebleu/" in out, url
    # the en-xx corpus of 2019 reads sacrebleu's en-de pair, the xx-en one its de-en pair: the files extract reads
    assert ("--pair-file en-de deu resources/newstest2019_en_xx/deu-eng.deu "
            "--pair-file en-de eng resources/newstest2019_en_xx/deu-eng.eng") in out
    assert "--src-file resources/newstest2019_xx_en/deu-eng.deu --tgt-file resources/newstest2019_xx_en/deu-eng.eng" in out
    assert "--nway-file ces resources/newstest2008/cs" in out
    assert "--src-file resources/newstest2008/cs --tgt-file resources/newstest2008/es" in out
