"""The news corpora of config/small.yaml (WMT news test sets, NTREX-128): how their files are named, and
newstest2012 -- the WMT similarity test set of the LASER paper (Table 7) -- never being training text.

The content test reads the shared data (``LASER_REPRO_DATA_ROOT``, default ``../shared/data``)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from laser_repro import config as run_config
from laser_repro.config.plan import Plan, corpus_code
from laser_repro.core.textio import iter_lines
from laser_repro.data.corpora import evaluation_set_named

REPO = Path(__file__).resolve().parents[1]
DATA_ROOT = Path(os.environ.get("LASER_REPRO_DATA_ROOT", REPO.parent / "shared" / "data"))
CONFIGS = sorted((REPO / "config").glob("*.yaml"))


def _load(path: Path, **overrides) -> dict:
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config.update(overrides)
    return run_config.validate(config, source=str(path))


def _training_files(config: dict, root: Path) -> list[tuple[str, str, Path, Path]]:
    """(corpus, language, its file, the English file beside it) of every training corpus, data_root layout."""
    plan = Plan(config)
    out = []
    for corpus in config["corpora"]:
        if corpus["kind"] != "local":
            continue
        for lang in corpus["languages"]:
            if lang == "eng":
                continue
            if corpus["layout"] == "nway":
                if "eng" not in corpus["languages"] and "eng" not in plan.targets:
                    continue
                path = lambda code: Path(corpus["path"].format(root=root, code=code))  # noqa: E731
                out.append((corpus["name"], lang, path(corpus_code(corpus, lang)), path(corpus_code(corpus, "eng"))))
            elif "eng" in (corpus.get("targets") or plan.targets):
                src, tgt = corpus_code(corpus, lang), corpus_code(corpus, "eng")
                path = lambda side: Path(corpus["path"].format(root=root, src=src, tgt=tgt, side=side))  # noqa: E731
                out.append((corpus["name"], lang, path(src), path(tgt)))
    return out


def test_a_corpus_naming_newstest2012_is_refused(tmp_path):
    config = yaml.safe_load((REPO / "config" / "small.yaml").read_text(encoding="utf-8"))
    config["corpora"].append({"name": "leak", "kind": "local", "layout": "nway", "code_column": "paper",
                              "path": "{root}/wmt-news/multiway/newstest2012.{code}", "languages": ["deu", "eng"]})
    with pytest.raises(run_config.ConfigError, match=r"corpora\[\d+\] \(leak\)\.path: .*newstest2012.*Table 7"):
        run_config.validate(config, source="small.yaml")
    config["corpora"][-1].update(path="{root}/x/{code}.txt",
                                 download={"url": "https://statmt.org/wmt12/test.tgz", "member": "test/{code}"})
    with pytest.raises(run_config.ConfigError, match=r"\(leak\)\.download\.url: .*wmt12"):
        run_config.validate(config, source="small.yaml")


@pytest.mark.parametrize("name", ["newstest2012.de", "pairs/2012/de-en/newstest2012.en", "wmt12",
                                  "https://statmt.org/wmt12/test.tgz", "test/newstest2012-src.de.sgm"])
def test_evaluation_set_named(name):
    assert evaluation_set_named(name) in {"newstest2012", "wmt12"}


@pytest.mark.parametrize("name", ["newstest2013.de", "newstest20121", "wmt121", "wmt13", "newstest2011.en"])
def test_other_sets_are_not_evaluation_sets(name):
    assert evaluation_set_named(name) is None


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_no_config_trains_on_newstest2012(path):
    """Every shipped config validates (so no corpus path, URL or member names newstest2012 / wmt12) and
    no training file it resolves to is one of them."""
    config = _load(path, data_root=str(DATA_ROOT))
    for corpus, lang, src, eng in _training_files(config, DATA_ROOT):
        assert evaluation_set_named(str(src)) is None and evaluation_set_named(str(eng)) is None, (corpus, lang)


def _pairs(src: Path, eng: Path) -> set[tuple[str, str]]:
    return {(" ".join(a.split()), " ".join(b.split())) for a, b in zip(iter_lines(src), iter_lines(eng))}


def test_the_default_run_shares_no_sentence_pair_with_newstest2012():
    """Content, not names: no (xx, English) line pair of any training corpus of config/small.yaml is a pair
    of newstest2012 (N-way: cs, de, es, fr, ru with en), and the corpora hold the news text we expect."""
    multiway = DATA_ROOT / "wmt-news" / "multiway"
    if not (multiway / "newstest2012.en").is_file():
        pytest.skip(f"{multiway} not found (set LASER_REPRO_DATA_ROOT to the shared data directory)")
    config = _load(REPO / "config" / "small.yaml", data_root=str(DATA_ROOT))
    test_pairs = {}
    for lang, code in {"ces": "cs", "deu": "de", "spa": "es", "fra": "fr", "rus": "ru"}.items():
        test_pairs[lang] = _pairs(multiway / f"newstest2012.{code}", multiway / "newstest2012.en")
        assert len(test_pairs[lang]) > 2900
    files = _training_files(config, DATA_ROOT)
    news = {corpus for corpus, *_ in files if corpus.startswith("news")}
    assert len(news) >= 15, news
    checked = 0
    for corpus, lang, src, eng in files:
        assert src.is_file() and eng.is_file(), (src, eng)
        if lang in test_pairs:
            shared = _pairs(src, eng) & test_pairs[lang]
            assert not shared, f"{corpus} {lang}-eng shares {len(shared)} pairs with newstest2012: {sorted(shared)[:3]}"
            checked += 1
    assert checked >= 20


def _sentences(path: Path, min_words: int) -> set[str]:
    return {s for s in (" ".join(line.split()) for line in iter_lines(path)) if len(s.split()) >= min_words}


@pytest.fixture(scope="module")
def newstest2012_sentences() -> dict[str, set[str]]:
    multiway = DATA_ROOT / "wmt-news" / "multiway"
    if not (multiway / "newstest2012.en").is_file():
        pytest.skip(f"{multiway} not found (set LASER_REPRO_DATA_ROOT to the shared data directory)")
    codes = {"ces": "cs", "deu": "de", "eng": "en", "spa": "es", "fra": "fr", "rus": "ru"}
    return {lang: _sentences(multiway / f"newstest2012.{code}", 6) for lang, code in codes.items()}


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_no_training_file_holds_a_sentence_of_newstest2012(path, newstest2012_sentences):
    """Content, sentence by sentence: no line of six words or more of newstest2012 (in any of its six
    languages) is in any training file, either side, that a shipped config reads from data_root. (Shorter
    lines recur across news years: newstest2013 shares one with it.)"""
    config = _load(path, data_root=str(DATA_ROOT))
    files = {(lang, src) for _, lang, src, _ in _training_files(config, DATA_ROOT)}
    files |= {("eng", eng) for _, _, _, eng in _training_files(config, DATA_ROOT)}
    checked = 0
    for lang, file in sorted(files):
        if lang in newstest2012_sentences and file.is_file():
            shared = _sentences(file, 6) & newstest2012_sentences[lang]
            assert not shared, f"{path.name}: {file} holds {len(shared)} newstest2012 lines: {sorted(shared)[:2]}"
            checked += 1
    if path.name in ("small.yaml", "compare.yaml"):
        assert checked >= 20, checked
