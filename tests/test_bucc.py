"""BUCC: archive layout, sentence dedup and ids, threshold sweep (hand-computed), CLI round trip."""
from __future__ import annotations

import argparse
import bz2
import io
import tarfile
import zlib

import numpy as np
import pytest
from eval_fixtures.bucc import make_split, write_bucc_archives

from laser_repro.evaluation import bucc, mining
from laser_repro.core.textio import InputError, read_json


def test_names_and_urls():
    assert bucc.archive_url("de", "training") == \
        "https://comparable.limsi.fr/bucc2018/bucc2018-de-en.training-gold.tar.bz2"
    assert bucc.archive_name("zh", "sample") == "bucc2018-zh-en.sample-gold.tar.bz2"
    assert bucc.archive_name("ru", "test") == "bucc2018-ru-en.test.tar.bz2"
    assert bucc.member_name("fr", "training", "gold") == "bucc2018/fr-en/fr-en.training.gold"
    assert bucc.member_name("fr", "test", "en") == "bucc2018/fr-en/fr-en.test.en"
    with pytest.raises(ValueError, match="test gold"):
        bucc.member_name("fr", "test", "gold")
    with pytest.raises(ValueError, match="split"):
        bucc.archive_name("de", "dev")


def test_names_from_the_config_codes_and_the_schema_templates():
    """The workflow names BUCC files with the config's ISO 639-3 codes: bucc.py is the one place that
    maps them to BUCC's names (also the config's language list and the url / path templates' fields)."""
    from laser_repro import config

    assert config.BUCC_LANGUAGES is bucc.LANGUAGES
    assert list(bucc.LANGUAGES) == ["deu", "fra", "rus", "cmn"]
    assert bucc.archive_name("deu", "training") == bucc.archive_name("de", "training")
    assert bucc.member_name("cmn", "test", "eng") == "bucc2018/zh-en/zh-en.test.en"
    assert bucc.member_name("rus", "training", "rus") == "bucc2018/ru-en/ru-en.training.ru"
    assert bucc.member_name("fra", "training", "gold") == "bucc2018/fr-en/fr-en.training.gold"
    with pytest.raises(ValueError, match="non-English"):
        bucc.archive_name("eng", "test")
    with pytest.raises(ValueError, match="side"):
        bucc.member_name("deu", "test", "fra")
    schema = config.load_schema()["properties"]["evaluation"]["properties"]["bucc"]["properties"]
    for xx in bucc.LANGUAGES:
        for split in ("training", "test"):
            fields = {"xx": bucc.bucc_code(xx), "split": bucc.ARCHIVE_SPLITS[split]}
            assert schema["url"]["default"].format(**fields) == bucc.archive_url(xx, split)
            assert schema["path"]["default"].format(root="R", **fields) == f"R/bucc2018/{bucc.archive_name(xx, split)}"


def lines(*texts):
    return list(enumerate(texts, start=1))


def test_dedup_and_id_mapping():
    sents = bucc.parse_sentences(lines("de-1\tEin Satz.", "de-2\tZwei", "de-3\t Ein Satz. ",
                                       "de-4\tdrei\rvier", "de-5\tZwei\t(tab kept)"), "x")
    assert sents.sentences == ["Ein Satz.", "Zwei", "drei vier", "Zwei\t(tab kept)"]
    assert sents.ids == ["de-1", "de-2", "de-3", "de-4", "de-5"]
    assert sents.rows == [0, 1, 0, 2, 3]
    assert sents.ids_per_row() == [["de-1", "de-3"], ["de-2"], ["de-4"], ["de-5"]]
    assert sents.stats() == {"lines": 5, "unique_sentences": 4, "ambiguous_rows": 1, "ambiguous_ids": 2}
    # row 0 has two ids: left out, as LASER drops repeated sentences
    assert bucc.row_to_id(sents) == {1: "de-2", 2: "de-4", 3: "de-5"}
    en = bucc.parse_sentences(lines("en-1\tOne sentence.", "en-2\tTwo", "en-3\tThree"), "y")
    cands = mining.Candidates(np.array([1.3, 1.2, 1.1, 1.0]), np.array([0, 1, 2, 1]), np.array([0, 1, 2, 2]))
    pairs, scores = bucc.candidate_pairs(cands, sents, en)
    assert pairs == [("de-2", "en-2"), ("de-4", "en-3"), ("de-2", "en-3")]
    np.testing.assert_array_equal(scores, [1.2, 1.1, 1.0])


def test_control_characters_are_spaces():
    """As every stage (textio.one_line): C0 / C1 control characters but tab, and LS / PS."""
    sents = bucc.parse_sentences(lines("de-1\tdrei vier", "de-2\t\x00drei\x7fvier\u2029", "de-3\ta\x01b\x9fc\td"), "x")
    assert sents.sentences == ["drei vier", "a b c\td"]
    assert sents.rows == [0, 0, 1]


@pytest.mark.parametrize("bad,message", [
    ("de-3 no tab", r"line 3: expected 'id<TAB>sentence'"),
    ("\tno id", r"line 3: expected 'id<TAB>sentence'"),
    ("{first}\tsame id", r"line 3: id 'de-000000001' already on line 1"),
])
def test_malformed_member_names_archive_member_line(tmp_path, bad, message):
    split = make_split([("a", "A"), ("b", "B")], ["c"], ["C"], duplicate=False)
    arc = write_bucc_archives(tmp_path, "de", {"training": split})["training"]
    member = "bucc2018/de-en/de-en.training.de"
    text = arc.members[member].splitlines()
    text.insert(2, bad.format(first=text[0].split("\t")[0]))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        data = ("\n".join(text) + "\n").encode()
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    path = tmp_path / "bad.tar.bz2"
    path.write_bytes(bz2.compress(raw.getvalue()))
    with pytest.raises(InputError, match=rf"bad\.tar\.bz2:{member}: {message}"):
        bucc.read_sentences(path, member)


def test_bad_utf8_missing_member_and_bad_gold(tmp_path):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tf:
        data = b"de-1\tgut\nde-2\t\xff\xfe\n"
        info = tarfile.TarInfo("bucc2018/de-en/de-en.test.de")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    path = tmp_path / "t.tar.bz2"
    path.write_bytes(bz2.compress(raw.getvalue()))
    with pytest.raises(InputError, match=r"t\.tar\.bz2:bucc2018/de-en/de-en\.test\.de: line 2: invalid UTF-8"):
        bucc.read_sentences(path, "bucc2018/de-en/de-en.test.de")
    with pytest.raises(InputError, match=r"no member 'bucc2018/de-en/de-en\.test\.en'"):
        bucc.read_sentences(path, "bucc2018/de-en/de-en.test.en")
    (tmp_path / "not.tar.bz2").write_bytes(b"garbage")
    with pytest.raises(InputError, match="corrupt"):
        bucc.read_sentences(tmp_path / "not.tar.bz2", "x")
    (tmp_path / "gold").write_text("de-1\ten-1\n\nde-2 en-2\n")
    with pytest.raises(InputError, match=r"gold: line 3: expected 'xx_id<TAB>en_id'"):
        bucc.read_gold(tmp_path / "gold")


# Worked by hand: six candidates best first, gold = {A, B, D, G} (G never mined).
#  cut  pair  gold  correct/extracted   P      R      F1
#   1   A     yes   1/1                1.000  .25   2*.25/1.25    = .400
#   2   B     yes   2/2                1.000  .50   2*.5/1.5      = .667
#   3   C     no    2/3                 .667  .50   2*.333/1.167  = .571
#   4   D     yes   3/4                 .750  .75                 = .750  <- best
#   5   E     no    3/5                 .600  .75   2*.45/1.35    = .667
#   6   F     no    3/6                 .500  .75   2*.375/1.25   = .600
# threshold = midpoint of D and E = (1.15 + 1.10) / 2 = 1.125
PAIRS = [("A", "a"), ("B", "b"), ("C", "c"), ("D", "d"), ("E", "e"), ("F", "f")]
GOLD = {("A", "a"), ("B", "b"), ("D", "d"), ("G", "g")}


def test_threshold_sweep_hand_computed():
    res = bucc.optimize_threshold(PAIRS, np.array([1.30, 1.25, 1.20, 1.15, 1.10, 1.05]), GOLD)
    assert res["threshold"] == pytest.approx(1.125)
    assert res["best_cut"] == 4
    assert (res["precision"], res["recall"], res["f1"]) == pytest.approx((0.75, 0.75, 0.75))
    assert (res["extracted"], res["correct"], res["gold_pairs"], res["candidates"]) == (4, 3, 4, 6)
    assert bucc.extract(PAIRS, np.array([1.30, 1.25, 1.20, 1.15, 1.10, 1.05]), res["threshold"]) == PAIRS[:4]


def test_threshold_sweep_tie_and_edges():
    # E ties with D: the midpoint is their common score, and extraction (score >= threshold)
    # then takes E too -- LASER reports P/R/F1 of that extraction: 3/5, 3/4
    res = bucc.optimize_threshold(PAIRS, np.array([1.30, 1.25, 1.20, 1.15, 1.15, 1.05]), GOLD)
    assert res["threshold"] == 1.15
    assert (res["precision"], res["recall"]) == pytest.approx((0.6, 0.75))
    assert res["f1"] == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    # best at the very last candidate: its own score
    res = bucc.optimize_threshold(PAIRS[:2], np.array([2.0, 1.5]), {("A", "a"), ("B", "b")})
    assert res["threshold"] == 1.5 and res["f1"] == 1.0
    # nothing correct: LASER's threshold 0, everything >= 0 extracted, all zero
    res = bucc.optimize_threshold(PAIRS[:3], np.array([1.0, 0.5, -0.5]), {("Z", "z")})
    assert (res["threshold"], res["extracted"], res["f1"]) == (0.0, 2, 0.0)
    with pytest.raises(ValueError, match="sorted"):
        bucc.optimize_threshold(PAIRS[:2], np.array([1.0, 2.0]), GOLD)


def planted_embeddings(sentences, dim=128, seed=0):
    """Fake encoder: 'xx N' and 'en N' (a translation pair) share a direction, others are random."""
    noise = np.random.default_rng(seed)
    out = np.empty((len(sentences), dim), dtype=np.float32)
    for r, s in enumerate(sentences):
        key = s.split(" ", 1)[1] if s.startswith(("xx ", "en ")) else s
        base = np.random.default_rng(zlib.crc32(key.encode())).standard_normal(dim)
        out[r] = base + 0.05 * noise.standard_normal(dim)
    return out


def run_cli(*argv):
    parser = argparse.ArgumentParser()
    bucc.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([str(a) for a in argv])
    args.func(args)


def test_cli_end_to_end(tmp_path):
    def split(offset, seed):
        parallel = [(f"xx {offset + i}", f"en {offset + i}") for i in range(30)]
        return make_split(parallel, [f"nur deutsch {offset + i}" for i in range(15)],
                          [f"english only {offset + i}" for i in range(20)], seed=seed)

    written = write_bucc_archives(tmp_path / "dl", "de", {"training": split(0, 1), "test": split(100, 2)})
    again = write_bucc_archives(tmp_path / "dl2", "de", {"training": split(0, 1)})
    assert again["training"].sha256 == written["training"].sha256  # reproducible archives
    for part, arc in (("training", written["training"].path), ("test", written["test"].path)):
        for side in ("de", "en"):
            run_cli("bucc-sentences", "--archive", arc, "--member", bucc.member_name("de", part, side),
                    "--sentences", tmp_path / f"{part}.{side}.txt", "--ids", tmp_path / f"{part}.{side}.ids",
                    "--stats", tmp_path / f"{part}.{side}.json")
            sentences = (tmp_path / f"{part}.{side}.txt").read_text().splitlines()
            np.save(tmp_path / f"{part}.{side}.npy", planted_embeddings(sentences, seed=len(part) + len(side)))
        run_cli("bucc-mine", "--src-emb", tmp_path / f"{part}.de.npy", "--trg-emb", tmp_path / f"{part}.en.npy",
                "--k", 4, "--margin", "ratio", "--mode", "max", "--shard-rows", 16, "--threads", 1,
                "--candidates", tmp_path / f"{part}.cand.tsv")
    stats = read_json(tmp_path / "training.de.json")
    assert stats["lines"] == 46 and stats["unique_sentences"] == 45 and stats["ambiguous_rows"] == 1
    ids = (tmp_path / "training.de.ids").read_text().splitlines()
    assert len(ids) == 46 and ids[0].startswith("de-000000001\t")

    run_cli("bucc-evaluate", "--candidates", tmp_path / "training.cand.tsv", "--src-ids", tmp_path / "training.de.ids",
            "--trg-ids", tmp_path / "training.en.ids", "--gold-archive", written["training"].path,
            "--gold-member", bucc.member_name("de", "training", "gold"), "--lang", "de",
            "--scores", tmp_path / "train.json")
    res = read_json(tmp_path / "train.json")
    assert res["language"] == "de" and res["gold_pairs"] == 30
    assert res["f1"] == 1.0 and res["threshold"] > 1.0
    assert res["src_sentences"]["ambiguous_rows"] == 1

    run_cli("bucc-extract", "--candidates", tmp_path / "test.cand.tsv", "--src-ids", tmp_path / "test.de.ids",
            "--trg-ids", tmp_path / "test.en.ids", "--threshold-from", tmp_path / "train.json",
            "--pairs", tmp_path / "test.pairs.tsv")
    got = {tuple(line.split("\t")) for line in (tmp_path / "test.pairs.tsv").read_text().splitlines()}
    assert got == set(written["test"].gold_ids)
    assert not any(m.endswith(".gold") for m in written["test"].members)


def test_cli_knn_device(tmp_path, monkeypatch):
    import faiss

    rng = np.random.default_rng(0)
    for side in ("de", "en"):
        np.save(tmp_path / f"{side}.npy", rng.standard_normal((12, 8)).astype(np.float32))
    argv = ["bucc-mine", "--src-emb", tmp_path / "de.npy", "--trg-emb", tmp_path / "en.npy",
            "--candidates", tmp_path / "cand.tsv"]
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0, raising=False)
    with pytest.raises(RuntimeError, match="knn_device gpu: faiss"):
        run_cli(*argv, "--knn-device", "gpu")
    assert not (tmp_path / "cand.tsv").exists()
    parser = argparse.ArgumentParser()
    bucc.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([str(a) for a in argv])  # default auto: CPU here, recorded in the provenance
    args.func(args)
    assert args.knn_device == "auto" and args.runtime == {"knn_engine": "cpu"}
    assert (tmp_path / "cand.tsv").read_text()
