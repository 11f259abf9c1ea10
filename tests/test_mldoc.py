"""MLDoc: expected files, reader, sentence splitter, mean pooling and the classification step."""
from __future__ import annotations

import argparse
import json

import make_toy_data
import numpy as np
import pytest
from eval_fixtures.mldoc import parallel_docs, toy_mldoc_items, write_mldoc_dir

from laser_repro.evaluation import mldoc
from laser_repro.evaluation.mldoc import MLDocMissingError, split_sentences
from laser_repro.core.textio import InputError


@pytest.fixture(autouse=True)
def _one_thread(torch_single_thread):
    yield


def run_cli(*argv: str) -> None:
    parser = argparse.ArgumentParser()
    mldoc.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    args.func(args)


def lines(path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


# --------------------------------------------------------------------------- files


def test_expected_files_and_clear_errors(tmp_path):
    files = mldoc.expected_files(tmp_path / "MLDoc", ["eng", "cmn"], 1000, check=False)
    assert files["eng"] == {"train": tmp_path / "MLDoc/english.train.1000", "dev": tmp_path / "MLDoc/english.dev",
                            "test": tmp_path / "MLDoc/english.test"}
    assert files["cmn"]["test"].name == "chinese.test"
    assert mldoc.expected_files(tmp_path, ["spa"], 5000, check=False)["spa"]["train"].name == "spanish.train.5000"
    with pytest.raises(MLDocMissingError, match=r"MLDoc directory .*MLDoc does not exist.*NIST.*generate_documents.py"):
        mldoc.expected_files(tmp_path / "MLDoc", ["eng"])
    docs = {"eng": {"train": [("CCAT", "x")], "dev": [("CCAT", "x")], "test": [("CCAT", "x")]},
            "deu": {"test": [("CCAT", "x")]}}
    d = write_mldoc_dir(tmp_path / "MLDoc", docs)
    assert mldoc.expected_files(d, ["eng"])["eng"]["train"].is_file()
    assert mldoc.expected_files(d, ["deu"], splits=("test",))["deu"]["test"].is_file()
    with pytest.raises(MLDocMissingError, match=r"files missing in .*MLDoc: german.train.1000 \(deu train\), "
                                                r"german.dev \(deu dev\)\. .*generate_documents.py"):
        mldoc.expected_files(d, ["eng", "deu"])
    with pytest.raises(ValueError, match="MLDoc has no 'ell'"):
        mldoc.expected_files(d, ["ell"], check=False)
    with pytest.raises(ValueError, match="train size"):
        mldoc.expected_files(d, ["eng"], 3000, check=False)
    with pytest.raises(MLDocMissingError, match="german.train.1000"):
        run_cli("mldoc-check", "--dir", str(d), "--langs", "eng", "deu")


def test_reader_checks_labels_and_decodes_bytes_literals(tmp_path):
    rus = [("ECAT", "Рынок вырос. Цены упали."), ("GCAT", "It's \"quoted\".")]
    d = write_mldoc_dir(tmp_path, {"rus": {"test": rus},
                                   "cmn": {"test": [("MCAT", "市场上涨。价格下跌。")]}}, bytes_literal=True)
    raw = (d / "russian.test").read_text(encoding="utf-8")
    assert raw.startswith("ECAT\tb'\\xd0\\xa0") and raw.split("\n")[1] == "GCAT\tb'It\\'s \"quoted\".'"
    assert list(mldoc.read_mldoc(d / "russian.test")) == [(1, "ECAT", "Рынок вырос. Цены упали."),
                                                           (2, "GCAT", "It's \"quoted\".")]
    assert list(mldoc.read_mldoc(d / "chinese.test")) == [(1, "MCAT", "市场上涨。价格下跌。")]
    bad = tmp_path / "bad"
    bad.write_text("CCAT\tfine\nXCAT\tnot a topic\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad: line 2: label 'XCAT' is not one of CCAT, ECAT, GCAT, MCAT"):
        list(mldoc.read_mldoc(bad))
    bad.write_text("CCAT\tfine\nCCAT no tab\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad: line 2: expected 'LABEL<TAB>text'"):
        list(mldoc.read_mldoc(bad))
    bad.write_bytes(b"CCAT\tok\nCCAT\tcaf\xe9\n")
    with pytest.raises(InputError, match="bad: line 2: invalid UTF-8"):
        list(mldoc.read_mldoc(bad))
    bad.write_text("CCAT\tb'\\xff\\xfe'\n", encoding="utf-8")
    with pytest.raises(InputError, match="bad: line 1: text looks like a bytes literal"):
        list(mldoc.read_mldoc(bad))
    with pytest.raises(MLDocMissingError, match="absent.test is missing"):
        list(mldoc.read_mldoc(tmp_path / "absent.test"))


# --------------------------------------------------------------------------- sentence splitter


@pytest.mark.parametrize("lang,text,expected", [
    ("eng", "Shares rose. Bonds fell! Why? Nobody knows.", ["Shares rose.", "Bonds fell!", "Why?", "Nobody knows."]),
    ("eng", "Mr. Smith met J. Doe in the U.S. Senate on Monday. It rained.",
     ["Mr. Smith met J. Doe in the U.S. Senate on Monday.", "It rained."]),
    ("eng", "He said \"stop.\" Then he left.", ["He said \"stop.\"", "Then he left."]),
    ("eng", "Prices rose 3.5 pct. in May. analysts said.", ["Prices rose 3.5 pct. in May. analysts said."]),
    ("eng", "No final stop", ["No final stop"]),
    ("eng", "   ", [""]),
    ("deu", "Die Börse stieg. Öl wurde teurer.", ["Die Börse stieg.", "Öl wurde teurer."]),
    ("rus", "Рынок вырос. Цены упали. «Это хорошо», сказал он.",
     ["Рынок вырос.", "Цены упали.", "«Это хорошо», сказал он."]),
    ("cmn", "市场上涨。价格下跌！为什么？", ["市场上涨。", "价格下跌！", "为什么？"]),
    ("jpn", "株価が上がった。「良い」と彼は言った。", ["株価が上がった。", "「良い」と彼は言った。"]),
    ("cmn", "公司说：“利润增长。”股价上涨", ["公司说：“利润增长。”", "股价上涨"]),
])
def test_split_sentences(lang, text, expected):
    assert split_sentences(text, lang) == expected


def test_mldoc_sentences_writes_sentences_and_doc_index(tmp_path):
    docs = [("CCAT", "Profit rose. Sales fell. (c) Reuters Limited 1997"), ("MCAT", "Bonds gained"),
            ("ECAT", "Inflation slowed! Rates held.")]
    d = write_mldoc_dir(tmp_path, {"eng": {"dev": docs}}, bytes_literal=True)
    run_cli("mldoc-sentences", "--input", str(d / "english.dev"), "--lang", "eng", "--sentences", str(tmp_path / "s"),
            "--docs", str(tmp_path / "docs.tsv"), "--stats", str(tmp_path / "stats.json"))
    assert lines(tmp_path / "s") == ["Profit rose.", "Sales fell.", "Bonds gained", "Inflation slowed!", "Rates held."]
    assert lines(tmp_path / "docs.tsv") == ["CCAT\t0\t2", "MCAT\t2\t1", "ECAT\t3\t2"]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["documents"] == 3 and stats["sentences"] == 5
    read = mldoc.read_docs(tmp_path / "docs.tsv")
    assert read.labels.tolist() == [0, 3, 1] and read.sentences == 5


def test_toy_render_documents_split_into_their_sentences(tmp_path):
    items = toy_mldoc_items(8, seed=0, sentences=(2, 3))
    docs = parallel_docs(items, make_toy_data.render, ["eng", "deu", "spa", "cmn"])
    d = write_mldoc_dir(tmp_path / "MLDoc", {lang: {"test": docs[lang]} for lang in docs})
    for lang in docs:
        out = tmp_path / lang
        mldoc.mldoc_sentences(mldoc.expected_files(d, [lang], splits=("test",))[lang]["test"], lang,
                              out / "s", out / "docs.tsv")
        expected = [make_toy_data.render(s, lang) for _, sentences in items for s in sentences]
        assert lines(out / "s") == expected
        assert [r.split("\t")[2] for r in lines(out / "docs.tsv")] == [str(len(s)) for _, s in items]


# --------------------------------------------------------------------------- pooling


def test_mean_pooling_per_document():
    emb = np.arange(14, dtype=np.float32).reshape(7, 2)
    docs = mldoc.Docs(np.array([0, 1, 2]), np.array([0, 3, 4]), np.array([3, 1, 3]))
    expected = [emb[0:3].mean(0), emb[3], emb[4:7].mean(0)]
    np.testing.assert_allclose(mldoc.doc_embeddings(emb, docs), expected)
    np.testing.assert_allclose(mldoc.doc_embeddings(emb, docs, chunk_docs=2), expected)
    with pytest.raises(ValueError, match="6 sentence embeddings for documents of 7 sentences"):
        mldoc.doc_embeddings(emb[:6], docs)


def test_docs_tsv_errors(tmp_path):
    f = tmp_path / "docs.tsv"
    f.write_text("CCAT\t0\t2\nECAT\t3\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"docs.tsv: line 2: first_row 3, expected 2"):
        mldoc.read_docs(f)
    f.write_text("CCAT\t0\t0\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1: a document needs at least one sentence"):
        mldoc.read_docs(f)
    f.write_text("CCAT\t0\t1\nccat\t1\t1\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2: label 'ccat'"):
        mldoc.read_docs(f)
    f.write_text("CCAT\t0\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1: expected 'label<TAB>first_row<TAB>n_sentences'"):
        mldoc.read_docs(f)
    f.write_text("CCAT\t0\t2\n", encoding="utf-8")
    np.save(tmp_path / "e.npy", np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(InputError, match=r"e.npy: 3 embeddings but 2 rows expected"):
        mldoc.DocFiles(tmp_path / "e.npy", f).load()


# --------------------------------------------------------------------------- classification


def write_docs(d, name, labels, rng, prototypes, noise):
    """Each document: 1-3 sentences, each its topic's prototype + noise (+ language shift)."""
    rows, emb, first = [], [], 0
    for y in labels:
        n = int(rng.integers(1, 4))
        emb += [prototypes[y] + noise * rng.normal(size=prototypes.shape[1]) for _ in range(n)]
        rows.append(f"{mldoc.MLDOC_LABELS[y]}\t{first}\t{n}\n")
        first += n
    np.save(d / f"{name}.npy", np.asarray(emb, dtype=np.float32))
    (d / f"{name}.tsv").write_text("".join(rows), encoding="utf-8")
    return [str(d / f"{name}.npy"), str(d / f"{name}.tsv")]


def test_mldoc_classify_end_to_end(tmp_path):
    rng = np.random.default_rng(0)
    prototypes = rng.normal(size=(4, 12))
    train = write_docs(tmp_path, "train", np.arange(200) % 4, rng, prototypes, 1.0)
    dev = write_docs(tmp_path, "dev", np.arange(80) % 4, rng, prototypes, 1.0)
    args = ["mldoc-classify", "--train", *train, "--dev", *dev]
    for lang in ("eng", "deu", "jpn"):
        args += ["--test", lang, *write_docs(tmp_path, f"test.{lang}", rng.permutation(np.arange(100) % 4), rng,
                                              prototypes, 1.0)]
    params = {"epochs": 20, "batch_size": 12, "grid": {"dropout": [0.0, 0.2]}}
    run_cli(*args, "--params", json.dumps(params), "--scores", str(tmp_path / "scores.json"))
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["hyperparameters"]["hidden"] == [10] and scores["hyperparameters"]["dropout"] in (0.0, 0.2)
    assert scores["sizes"]["train_docs"] == 200 and scores["sizes"]["dev_docs"] == 80
    assert scores["sizes"]["test_docs"] == {"eng": 100, "deu": 100, "jpn": 100}
    assert scores["sizes"]["train_sentences"] == len(np.load(train[0]))
    assert scores["pooling"] == mldoc.POOLING and scores["train_language"] == "eng"
    assert min(scores["test_accuracy"].values()) > 80  # chance: 25%
    run_cli(*args, "--params", json.dumps(params), "--scores", str(tmp_path / "again.json"))
    assert json.loads((tmp_path / "again.json").read_text())["test_accuracy"] == scores["test_accuracy"]
