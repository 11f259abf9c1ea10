"""XNLI / MultiNLI readers (real zip layouts), pair features and the classification step."""
from __future__ import annotations

import argparse
import json
import zipfile

import make_toy_data
import numpy as np
import pytest
import torch
from eval_fixtures.xnli import XNLI_COLUMNS, nli_label, parallel_rows, toy_nli_items, write_multinli_zip, write_xnli_zip

from laser_repro.data import nli_labels
from laser_repro.evaluation import xnli
from laser_repro.core.languages import UnknownLanguageError
from laser_repro.core.textio import InputError


@pytest.fixture(autouse=True)
def _one_thread(torch_single_thread):
    yield


def run_cli(*argv: str) -> None:
    parser = argparse.ArgumentParser()
    xnli.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    args.func(args)


def lines(path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


LABELS = ("entailment", "neutral", "contradiction")
ROWS = {  # 12 pairs, so that numeric pairID order (1, 2, ..., 10) differs from text order
    "eng": [(f"Premise {i}.", f"Hypothesis {i}.", LABELS[i % 3]) for i in range(12)],
    "fra": [(f"Prémisse {i}.", f"Hypothèse {i}.", LABELS[i % 3]) for i in range(12)],
    "cmn": [(f"前提{i}。", f"假设{i}。", LABELS[i % 3]) for i in range(12)],
}


# --------------------------------------------------------------------------- fixture layout


def test_fixture_has_the_real_layout(tmp_path):
    z = write_xnli_zip(tmp_path / "XNLI-1.0.zip", splits={"dev": ROWS, "test": ROWS})
    with zipfile.ZipFile(z) as zf:
        names = zf.namelist()
        header = zf.read("XNLI-1.0/xnli.test.tsv").decode().split("\n")[0]
    assert {"XNLI-1.0/xnli.dev.tsv", "XNLI-1.0/xnli.test.tsv", "XNLI-1.0/xnli.dev.jsonl"} <= set(names)
    assert "__MACOSX/XNLI-1.0/._xnli.test.tsv" in names
    assert header.split("\t") == XNLI_COLUMNS == list(xnli.XNLI_COLUMNS)
    m = write_multinli_zip(tmp_path / "multinli_1.0.zip", ROWS["eng"])
    with zipfile.ZipFile(m) as zf:
        first = json.loads(zf.read(xnli.MULTINLI_TRAIN).decode().split("\n")[0])
    assert {"gold_label", "sentence1", "sentence2", "pairID", "promptID", "genre", "annotator_labels"} <= set(first)


# --------------------------------------------------------------------------- XNLI texts


def test_xnli_texts_sorted_by_pair_id_and_parallel(tmp_path):
    z = write_xnli_zip(tmp_path / "x.zip", ROWS, "test", shuffle_seed=3)
    out = {}
    for lang in ("eng", "fra", "cmn"):
        d = tmp_path / lang
        stats = xnli.xnli_texts(z, "test", lang, d / "p", d / "h", d / "l")
        assert stats["pairs"] == 12 and stats["labels"] == {"entailment": 4, "neutral": 4, "contradiction": 4}
        out[lang] = (lines(d / "p"), lines(d / "h"), lines(d / "l"))
    ids = [line.split("\t")[0] for line in out["eng"][2]]
    assert ids == [str(i) for i in range(1, 13)]  # numeric order, not "1", "10", "11", "2"...
    assert out["eng"][2] == out["fra"][2] == out["cmn"][2]
    assert out["eng"][0][9] == "Premise 9." and out["fra"][1][9] == "Hypothèse 9." and out["cmn"][0][9] == "前提9。"
    assert out["eng"][2][9] == "10\tentailment"


def test_xnli_texts_cli_and_toy_render(tmp_path):
    items = toy_nli_items(9, seed=1)
    z = write_xnli_zip(tmp_path / "x.zip", splits={"dev": parallel_rows(items, make_toy_data.render, ["eng", "cmn"])})
    run_cli("xnli-texts", "--zip", str(z), "--split", "dev", "--lang", "cmn", "--premises", str(tmp_path / "p"),
            "--hypotheses", str(tmp_path / "h"), "--labels", str(tmp_path / "l"))
    assert lines(tmp_path / "p")[0] == make_toy_data.render(items[0][0], "cmn")
    assert [line.split("\t")[1] for line in lines(tmp_path / "l")] == [nli_label(p, h) for p, h, _ in items]


def test_xnli_language_absent(tmp_path):
    z = write_xnli_zip(tmp_path / "x.zip", ROWS)
    with pytest.raises(InputError, match=r"no rows for language 'de' \(deu\); languages present: en, fr, zh"):
        xnli.read_xnli(z, "test", "deu")
    with pytest.raises(UnknownLanguageError):
        xnli.read_xnli(z, "test", "xx")
    with pytest.raises(InputError, match="no member 'XNLI-1.0/xnli.dev.tsv'"):
        xnli.read_xnli(z, "dev", "eng")
    with pytest.raises(InputError, match="no such file"):
        xnli.read_xnli(tmp_path / "absent.zip", "test", "eng")


def test_xnli_pair_ids_must_match_across_languages(tmp_path):
    rows = dict(ROWS, fra=ROWS["fra"][:-1])
    z = write_xnli_zip(tmp_path / "x.zip", rows)
    with pytest.raises(InputError,
                       match=r"pairIDs of 'fr' differ from those of 'en': 1 of 'en' missing \(e.g. \['12'\]\)"):
        xnli.read_xnli(z, "test", "fra")
    with pytest.raises(InputError, match="pairIDs of 'en' differ from those of 'fr'"):
        xnli.read_xnli(z, "test", "eng")


def test_xnli_labels_must_agree_across_languages(tmp_path):
    fra = list(ROWS["fra"])
    fra[4] = (fra[4][0], fra[4][1], "contradiction")
    z = write_xnli_zip(tmp_path / "x.zip", dict(ROWS, fra=fra))
    with pytest.raises(InputError, match=r"line \d+: pairID 5 is 'contradiction' in 'fr' but 'neutral' in 'en'"):
        xnli.read_xnli(z, "test", "eng")


def _raw(tmp_path, body: bytes):
    header = "\t".join(XNLI_COLUMNS).encode() + b"\n"
    return write_xnli_zip(tmp_path / "bad.zip", raw_tsv={"test": header + body})


def _row(lang="en", label="neutral", pid="1", s1="a", s2="b") -> bytes:
    fields = dict.fromkeys(XNLI_COLUMNS, "x")
    fields.update(language=lang, gold_label=label, pairID=pid, sentence1=s1, sentence2=s2)
    return "\t".join(fields[c] for c in XNLI_COLUMNS).encode() + b"\n"


def test_xnli_format_errors_name_file_and_line(tmp_path):
    z = _raw(tmp_path, _row() + _row(pid="2")[:-1] + b"\textra\n")
    with pytest.raises(InputError, match=r"bad.zip:XNLI-1.0/xnli.test.tsv: line 3: 20 tab-separated fields"):
        xnli.read_xnli(z, "test", "eng")
    z = _raw(tmp_path, _row() + _row(pid="2", s1="caf\xe9").replace("café".encode(), b"caf\xe9"))
    with pytest.raises(InputError, match="xnli.test.tsv: line 3: invalid UTF-8"):
        xnli.read_xnli(z, "test", "eng")
    z = _raw(tmp_path, _row(label="-"))
    with pytest.raises(InputError, match="line 2: gold_label '-' is not one of"):
        xnli.read_xnli(z, "test", "eng")
    z = _raw(tmp_path, _row() + _row())
    with pytest.raises(InputError, match="line 3: pairID 1 appears twice for language 'en'"):
        xnli.read_xnli(z, "test", "eng")
    z = write_xnli_zip(tmp_path / "bad.zip", raw_tsv={"test": b"language\tpairID\n"})
    with pytest.raises(InputError, match="line 1: header lacks column"):
        xnli.read_xnli(z, "test", "eng")


def test_sentences_stay_on_one_line(tmp_path):
    z = _raw(tmp_path, _row(s1="one\u2028two\rthree\x00four\x7ffive\x9f", s2=" padded\x01 "))
    pairs = xnli.read_xnli(z, "test", "eng")
    # control characters (C0 / C1 but tab, which separates the columns) and LS / PS: spaces (textio.one_line)
    assert (pairs[0].premise, pairs[0].hypothesis) == ("one two three four five", "padded")


# --------------------------------------------------------------------------- MultiNLI


def mnli_rows(n: int):
    labels = ("entailment", "neutral", "contradiction", "-")
    return [(f"p{i}", f"h{i}", labels[i % 4]) for i in range(n)]


def test_multinli_drops_no_consensus_pairs(tmp_path):
    z = write_multinli_zip(tmp_path / "m.zip", mnli_rows(8))
    stats = xnli.multinli_texts(z, tmp_path / "p", tmp_path / "h", tmp_path / "l")
    assert stats["lines"] == 8 and stats["dropped_no_consensus"] == 2 and stats["written"] == 6
    assert lines(tmp_path / "p") == ["p0", "p1", "p2", "p4", "p5", "p6"]
    assert lines(tmp_path / "l")[:2] == ["100000e\tentailment", "100001n\tneutral"]


def test_multinli_sample_is_seeded_uniform_and_in_order(tmp_path):
    z = write_multinli_zip(tmp_path / "m.zip", mnli_rows(400))

    def sample(seed, name):
        d = tmp_path / name
        run_cli("multinli-texts", "--zip", str(z), "--premises", str(d / "p"), "--hypotheses", str(d / "h"),
                "--labels", str(d / "l"), "--max-pairs", "50", "--seed", str(seed), "--stats", str(d / "s.json"))
        return lines(d / "p"), lines(d / "h"), json.loads((d / "s.json").read_text())

    p1, h1, stats = sample(1, "a")
    p2, _, _ = sample(1, "b")
    p3, _, _ = sample(2, "c")
    assert p1 == p2 != p3
    assert len(p1) == 50 and [p.replace("p", "h") for p in p1] == h1
    order = [int(p[1:]) for p in p1]
    assert order == sorted(order) and all(i % 4 != 3 for i in order)
    assert max(order) > 300  # the sample covers the whole file, not its head
    assert stats["written"] == 50 and stats["usable_pairs"] == 300 and stats["seed"] == 1
    assert "reservoir" in stats["sampling"]


def test_multinli_errors_name_member_and_line(tmp_path):
    good = json.dumps({"gold_label": "neutral", "sentence1": "a", "sentence2": "b", "pairID": "1n"})
    z = write_multinli_zip(tmp_path / "m.zip", [], raw_jsonl=(good + "\n{not json\n").encode())
    with pytest.raises(InputError, match="multinli_1.0_train.jsonl: line 2: invalid JSON"):
        xnli.multinli_texts(z, tmp_path / "p", tmp_path / "h", tmp_path / "l")
    assert not (tmp_path / "p").exists()  # nothing half-written
    z = write_multinli_zip(tmp_path / "m.zip", [], raw_jsonl=(good + "\n" + good.replace('"pairID": "1n"', '"x": 1')
                                                              + "\n").encode())
    with pytest.raises(InputError, match="line 2: key 'pairID' missing"):
        xnli.multinli_texts(z, tmp_path / "p", tmp_path / "h", tmp_path / "l")
    z = write_multinli_zip(tmp_path / "m.zip", [("a", "b", "maybe")])
    with pytest.raises(InputError, match="line 1: gold_label 'maybe'"):
        xnli.multinli_texts(z, tmp_path / "p", tmp_path / "h", tmp_path / "l")


# --------------------------------------------------------------------------- features and labels


def test_nli_features_concatenate_p_h_product_and_distance():
    p = np.array([[3.0, 4.0]], dtype=np.float32)
    h = np.array([[0.0, 2.0]], dtype=np.float32)
    np.testing.assert_allclose(xnli.nli_features(p, h, normalize=False), [[3, 4, 0, 2, 0, 8, 3, 2]])
    np.testing.assert_allclose(xnli.nli_features(p, h), [[0.6, 0.8, 0, 1, 0, 0.8, 0.6, 0.2]], rtol=1e-6)
    data = xnli.pair_feature_set(np.repeat(p, 3, 0), np.repeat(h, 3, 0), np.array([0, 1, 2]), normalize=False,
                                 hypothesis_rows=np.array([2, 1, 0]))
    assert data.dim == 8 and data.build(np.array([1, 2])).shape == (2, 8)


def test_read_labels_errors(tmp_path):
    f = tmp_path / "labels"
    f.write_text("1\tentailment\n2\tneutral\n", encoding="utf-8")
    ids, y = nli_labels.read_labels(f)
    assert ids == ["1", "2"] and y.tolist() == [0, 1]
    f.write_text("1\tentailment\n2\tcontradictory\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"labels: line 2: label 'contradictory'"):
        nli_labels.read_labels(f)
    f.write_text("1\tentailment\n1\tneutral\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2: pairID 1 appears twice"):
        nli_labels.read_labels(f)
    f.write_text("entailment\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1: expected 'pairID<TAB>label'"):
        nli_labels.read_labels(f)


# --------------------------------------------------------------------------- classification


def write_split(d, name, ids, labels, prem, hyp) -> list[str]:
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / f"{name}.p.npy", prem.astype(np.float32))
    np.save(d / f"{name}.h.npy", hyp.astype(np.float32))
    (d / f"{name}.l").write_text("".join(f"{i}\t{nli_labels.XNLI_LABELS[y]}\n" for i, y in zip(ids, labels)),
                                 encoding="utf-8")
    return [str(d / f"{name}.p.npy"), str(d / f"{name}.h.npy"), str(d / f"{name}.l")]


def toy_embeddings(items, concepts: np.ndarray, noise: float, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sentence embedding = mean of its concept vectors (+ language noise)."""
    def emb(cs):
        return concepts[cs].mean(0) + noise * rng.normal(size=concepts.shape[1])

    prem = np.stack([emb(p) for p, _, _ in items])
    hyp = np.stack([emb(h) for _, h, _ in items])
    return prem, hyp, np.array([nli_labels.XNLI_LABELS.index(label) for _, _, label in items])


def test_xnli_classify_end_to_end(tmp_path):
    rng = np.random.default_rng(0)
    concepts = rng.normal(size=(24, 16))
    items = toy_nli_items(900, seed=0)
    train, dev, test = items[:600], items[600:750], items[750:]
    args = ["xnli-classify"]
    p, h, y = toy_embeddings(train, concepts, 0.0, rng)
    train_f = write_split(tmp_path, "train", [f"{i}n" for i in range(len(y))], y, p, h)
    p, h, y = toy_embeddings(dev, concepts, 0.0, rng)
    dev_f = write_split(tmp_path, "dev", range(len(y)), y, p, h)
    args += ["--train-premises", train_f[0], "--train-hypotheses", train_f[1], "--train-labels", train_f[2],
             "--dev-premises", dev_f[0], "--dev-hypotheses", dev_f[1], "--dev-labels", dev_f[2]]
    test_ids = [str(1000 + i) for i in range(len(test))]
    for lang, noise in (("eng", 0.0), ("spa", 0.05), ("deu", 0.05)):
        p, h, y = toy_embeddings(test, concepts, noise, rng)
        order = np.arange(len(test))
        if lang == "deu":  # rows of deu in another order: the matrix must pair them by pairID
            order = np.random.default_rng(1).permutation(len(test))
        args += ["--test", lang, *write_split(tmp_path, f"test.{lang}", [test_ids[i] for i in order], y[order],
                                             p[order], h[order])]
    params = {"hidden": [32], "epochs": 15, "batch_size": 32, "grid": {"lr": [0.003, 0.01]}}
    run_cli(*args, "--params", json.dumps(params), "--seed", "3", "--threads", "1", "--scores",
            str(tmp_path / "scores.json"))
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["sizes"] == {"train_pairs": 600, "dev_pairs": 150,
                               "test_pairs": {"eng": 150, "spa": 150, "deu": 150}}
    assert scores["hyperparameters"]["hidden"] == [32] and scores["seed"] == 3
    assert scores["hyperparameters"]["lr"] in (0.003, 0.01) and len(scores["trials"]) == 2
    assert scores["dev_accuracy"] == max(t["dev_accuracy"] for t in scores["trials"])
    acc = scores["test_accuracy"]
    assert set(acc) == {"eng", "spa", "deu"} and min(acc.values()) > 60  # chance: 33%
    matrix = scores["cross_lingual"]
    assert matrix["premise_languages"] == ["eng", "spa", "deu"]
    for i, lang in enumerate(matrix["premise_languages"]):
        assert matrix["accuracy"][i][i] == pytest.approx(acc[lang], abs=1e-9)
    assert min(min(row) for row in matrix["accuracy"]) > 60
    assert scores["config"]["grid"] == {"lr": [0.003, 0.01]}

    # Same inputs, same seed: the same numbers.
    run_cli(*args, "--params", json.dumps(params), "--seed", "3", "--threads", "1", "--no-matrix", "--scores",
            str(tmp_path / "again.json"))
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["test_accuracy"] == acc and "cross_lingual" not in again


def test_matrix_rows_are_paired_by_pair_id():
    """A model that is right only when premise and hypothesis rows belong to the same pair."""
    n, dim = 30, 3
    labels = np.arange(n) % 3
    onehot = np.eye(dim, dtype=np.float32)[labels]
    ids = [str(i) for i in range(n)]
    perm = np.random.default_rng(0).permutation(n)
    loaded = {  # (pairIDs, labels, premises, hypotheses); "b" stores its rows in another order
        "a": (ids, labels, onehot, onehot),
        "b": ([ids[i] for i in perm], labels[perm], onehot[perm], onehot[perm]),
    }
    model = torch.nn.Linear(4 * dim, dim, bias=False)
    with torch.no_grad():  # logits = p*h: the right class iff both rows carry the pair's label
        model.weight.zero_()
        model.weight[:, 2 * dim:3 * dim] = torch.eye(dim) * 2
        model.weight[0, 3 * dim:] = -1  # a mismatched pair must not default to class 0
    result = xnli.cross_lingual_matrix(model, loaded, normalize=False)
    assert result["accuracy"] == [[100.0, 100.0], [100.0, 100.0]]
    # Without the alignment, pairing row i of "a" with row i of "b" would be mostly wrong.
    naive = xnli.pair_feature_set(onehot, onehot[perm], labels, normalize=False)
    from laser_repro.evaluation import classifier
    assert classifier.accuracy(model, naive) < 90


def test_matrix_needs_the_same_pairs_and_labels():
    x = np.eye(3, dtype=np.float32)
    model = torch.nn.Linear(12, 3)
    with pytest.raises(InputError, match=r"labels of b: pairIDs differ.*1 missing \(e.g. \['2'\]\)"):
        xnli.cross_lingual_matrix(model, {"a": (["0", "1", "2"], np.arange(3), x, x),
                                          "b": (["0", "1", "9"], np.arange(3), x, x)}, False)
    with pytest.raises(InputError, match="labels of b: 1 pairs have another label"):
        xnli.cross_lingual_matrix(model, {"a": (["0", "1", "2"], np.arange(3), x, x),
                                          "b": (["0", "1", "2"], np.array([0, 1, 0]), x, x)}, False)


def test_embeddings_must_match_labels(tmp_path):
    files = write_split(tmp_path, "t", ["1", "2"], [0, 1], np.zeros((3, 4)), np.zeros((3, 4)))
    with pytest.raises(InputError, match=r"t.p.npy: 3 embeddings but 2 rows expected"):
        xnli.NliFiles(*map(__import__("pathlib").Path, files)).load()
