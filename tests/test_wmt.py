"""WMT similarity: sacrebleu definitions, offline texts from a fixture archive, N-way join, error rates."""
from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pytest
from eval_fixtures.wmt import make_test_set

from laser_repro.data import sacrebleu_sets as sets
from laser_repro.evaluation import wmt

TEXTS = {
    "en": ["The cat sleeps.", "It rains today.", "We go home.", "The train is late.", "She reads a book."],
    "de": ["Die Katze schläft.", "Heute regnet es.", "Wir gehen nach Hause.", "Der Zug ist spät.", "Sie liest ein Buch."],
    "fr": ["Le chat dort.", "Il pleut aujourd'hui.", "Nous rentrons.", "Le train est en retard.", "Elle lit un livre."],
    "cs": ["Kočka spí.", "Dnes prší.", "Jdeme domů.", "Vlak má zpoždění.", "Čte knihu."],
    "es": ["El gato duerme.", "Hoy llueve.", "Vamos a casa.", "El tren llega tarde.", "Ella lee un libro."],
}


def run_cli(*argv):
    parser = argparse.ArgumentParser()
    wmt.add_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([str(a) for a in argv])
    args.func(args)


def unit(deg, norm=1.0):
    return [norm * math.cos(math.radians(deg)), norm * math.sin(math.radians(deg))]


# ---------------------------------------------------------------------------------- sacrebleu side

def test_sources_come_from_sacrebleu_definitions():
    from sacrebleu.dataset import DATASETS

    (src,) = sets.test_set_sources("wmt14")
    assert (src.url, src.md5) == ("https://statmt.org/wmt14/test-filtered.tgz", "84c597844c1542e29c2aff23aaee4310")
    assert src.tarball == "wmt14.test-filtered.tgz" == DATASETS["wmt14"]._get_tarball_filename(src.url)
    (full,) = sets.test_set_sources("wmt14/full")
    assert full.tarball == "wmt14_full.test-full.tgz" == DATASETS["wmt14/full"]._get_tarball_filename(full.url)
    assert sets.test_set_downloads("wmt14") == [(src.url, None)]
    assert sets.test_set_downloads("wmt14", {"test-filtered.tgz": "ab" * 32}) == [(src.url, "ab" * 32)]
    with pytest.raises(sets.WmtError, match="no test set 'wmt99'"):
        sets.test_set_sources("wmt99")


def test_absent_language_is_reported_with_the_reason():
    present, absent = sets.language_pairs("wmt14", ["eng", "ces", "fra", "deu", "spa"])
    assert present == {"ces": ("cs-en", True), "fra": ("fr-en", True), "deu": ("de-en", True)}
    assert list(absent) == ["spa"] and "no es-en or en-es pair" in absent["spa"]
    present, absent = sets.language_pairs("wmt13", ["eng", "ces", "fra", "deu", "spa"])
    assert present["spa"] == ("es-en", True) and absent == {}


# ---------------------------------------------------------------------------------- join

def seg(doc, pos, en, xx, orig="en"):
    return sets.Segment((doc, pos), en, xx, orig)


def test_join_needs_same_document_position_and_identical_english():
    de = [seg("de-only", 0, "Only in de-en.", "Nur de."), seg("a", 0, "One.", "Eins."), seg("a", 1, "Two.", "Zwei."),
          seg("b", 0, "Three.", "Drei."), seg("b", 1, "Four.", "Vier."), seg("c", 0, "One.", "Eins!"),
          seg("c", 1, "", "Leer."), seg("d", 0, "Five.", "Fünf.")]
    fr = [seg("d", 0, "Five.", "Cinq."), seg("a", 0, "One.", "Un."), seg("a", 1, "Two.", "Deux."),
          seg("b", 0, "Three!", "Trois."), seg("b", 1, "Four.", "Quatre."), seg("c", 0, "One.", "Un !"),
          seg("c", 1, "", "Vide."), seg("fr-only", 0, "Only in fr-en.", "Seulement fr.")]
    rows, stats = sets.join_on_english({"deu": de, "fra": fr})
    # order of the first pair; pair-only documents and (b, 0) (English differs) are left out;
    # (c, 0) repeats "One." in English; (c, 1) is empty
    assert rows == [{"eng": "One.", "deu": "Eins.", "fra": "Un."},
                    {"eng": "Two.", "deu": "Zwei.", "fra": "Deux."},
                    {"eng": "Four.", "deu": "Vier.", "fra": "Quatre."},
                    {"eng": "Five.", "deu": "Fünf.", "fra": "Cinq."}]
    assert stats == {"candidates": 7, "english_mismatch": 1, "ambiguous_english": 0, "empty_removed": 1,
                     "duplicates_removed": 1, "sentences": 4, "origlang": {"en": 4}}

    # text key: documents do not matter, but "One." (twice in each pair) is ambiguous; "" joins, is empty
    rows, stats = sets.join_on_english({"deu": de, "fra": fr}, key="text")
    assert rows == [{"eng": "Two.", "deu": "Zwei.", "fra": "Deux."},
                    {"eng": "Four.", "deu": "Vier.", "fra": "Quatre."},
                    {"eng": "Five.", "deu": "Fünf.", "fra": "Cinq."}]
    assert (stats["ambiguous_english"], stats["empty_removed"], stats["english_mismatch"]) == (4, 1, 0)


# ---------------------------------------------------------------------------------- texts, offline

def test_texts_from_fixture_archive_offline(tmp_path):
    fx = make_test_set(tmp_path / "test-filtered.tgz", {k: TEXTS[k] for k in ("en", "de", "fr")},
                       pair_only={"de": [("Gutach: more safety.", "Gutach: mehr Sicherheit.")],
                                  "fr": [("A jump over Bogota.", "Un saut au-dessus de Bogota.")]})
    assert "test/newstest2014-deen-src.de.sgm" in fx.members and "test/newstest2014-fren-ref.en.sgm" in fx.members
    out = tmp_path / "texts"
    run_cli("wmt-texts", "--tarball", fx.path, "--md5", fx.md5, "--test-set", "wmt14",
            "--langs", "eng", "fra", "deu", "spa", "--out-dir", out, "--prefix", "newstest2014.")
    for code, key in (("eng", "en"), ("fra", "fr"), ("deu", "de")):
        assert (out / f"newstest2014.{code}.txt").read_text(encoding="utf-8").splitlines() == TEXTS[key]
    assert sorted(p.name for p in out.iterdir()) == ["meta.json", "newstest2014.deu.txt", "newstest2014.eng.txt",
                                                     "newstest2014.fra.txt"]
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    assert meta["sentences"] == 5 and meta["languages"] == ["eng", "fra", "deu"]
    assert list(meta["absent"]) == ["spa"] and "wmt14" in meta["absent"]["spa"]
    assert meta["pairs"] == {"fra": {"langpair": "fr-en", "segments": 6}, "deu": {"langpair": "de-en", "segments": 6}}
    assert meta["join"]["origlang"] == {"en": 5}
    assert meta["archives"][0]["sacrebleu_md5"] == "84c597844c1542e29c2aff23aaee4310"


def test_nway_test_set_with_spanish(tmp_path):
    fx = make_test_set(tmp_path / "test.tgz", TEXTS, test_set="wmt13", doc_size=3)
    meta = sets.build_texts("wmt13", [fx.path], ["eng", "spa", "ces", "deu", "fra"], tmp_path / "out", md5=[fx.md5])
    assert meta["sentences"] == 5 and meta["absent"] == {}
    assert (tmp_path / "out" / "spa.txt").read_text(encoding="utf-8").splitlines() == TEXTS["es"]
    with pytest.raises(ValueError, match="shared by several pairs"):
        make_test_set(tmp_path / "bad.tgz", TEXTS, test_set="wmt13", pair_only={"es": [("x", "y")]})


def test_archive_is_checked_against_sacrebleus_md5(tmp_path):
    fx = make_test_set(tmp_path / "test-filtered.tgz", {k: TEXTS[k] for k in ("en", "de")})
    with pytest.raises(sets.WmtError, match="84c597844c1542e29c2aff23aaee4310"):
        sets.build_texts("wmt14", [fx.path], ["eng", "deu"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_no_shared_segment_is_an_error(tmp_path):
    fx = make_test_set(tmp_path / "test-filtered.tgz", {"en": [], "de": [], "fr": []},
                       pair_only={"de": [("A.", "A-de.")], "fr": [("B.", "B-fr.")]})
    with pytest.raises(sets.WmtError, match="no segment is shared.*wmt12 or wmt13"):
        sets.build_texts("wmt14", [fx.path], ["eng", "deu", "fra"], tmp_path / "out", md5=[fx.md5])


# ---------------------------------------------------------------------------------- similarity

def test_similarity_error_by_hand(tmp_path):
    # angles (degrees); row norms differ so that a raw dot product would give other neighbours
    eng = np.array([unit(0), unit(90, 10.0), unit(180)])
    fra = np.array([unit(0, 5.0), unit(40), unit(180, 2.0)])
    deu = np.array([unit(0), unit(90), unit(150)])
    # fra->eng: fra[1] (40 deg) is nearer eng[0] (cos 40) than eng[1] (cos 50): 1 error
    # fra->deu: fra[1] is nearer deu[0] (cos 40) than deu[1] (cos 50): 1 error; every other pair: 0
    scores = wmt.similarity_errors({"eng": eng, "fra": fra, "deu": deu})
    errors = {(p["src"], p["trg"]): p["errors"] for p in scores["pairs"]}
    assert errors == {("eng", "fra"): 0, ("eng", "deu"): 0, ("fra", "eng"): 1, ("fra", "deu"): 1,
                      ("deu", "eng"): 0, ("deu", "fra"): 0}
    assert scores["matrix"]["fra"]["eng"] == pytest.approx(100 / 3)
    assert scores["average_error"] == pytest.approx(2 * (100 / 3) / 6)
    assert scores["src_average"]["fra"] == pytest.approx(100 / 3)
    assert scores["trg_average"]["eng"] == pytest.approx(100 / 6)
    assert scores["sentences"] == 3

    paths = {}
    for code, x in (("eng", eng), ("fra", fra), ("deu", deu)):
        paths[code] = tmp_path / f"{code}.npy"
        np.save(paths[code], x.astype(np.float32))
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"test_set": "wmt14", "sentences": 3, "languages": ["eng", "fra", "deu"],
                                "absent": {"spa": "not in wmt14"}}))
    out = tmp_path / "scores.json"
    run_cli("wmt-similarity", "--emb", "eng", paths["eng"], "--emb", "fra", paths["fra"], "--emb", "deu",
            paths["deu"], "--meta", meta, "--scores", out)
    res = json.loads(out.read_text())
    assert res["average_error"] == pytest.approx(100 / 9)
    assert res["absent"] == {"spa": "not in wmt14"} and res["test_set"] == "wmt14"

    with pytest.raises(sets.WmtError, match="not row-aligned"):
        wmt.similarity_errors({"eng": eng, "fra": fra[:2]})


# ---------------------------------------------------------------------------------- plain-text N-way files

def write_lines(path, lines):
    path.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    return path


def test_plain_text_files_are_read_line_aligned(tmp_path):
    files = {code: write_lines(tmp_path / f"newstest2013.{xx}", TEXTS[xx])
             for code, xx in (("eng", "en"), ("deu", "de"), ("spa", "es"))}
    assert sets.read_text_files(files) == {"eng": TEXTS["en"], "deu": TEXTS["de"], "spa": TEXTS["es"]}
    write_lines(files["deu"], TEXTS["de"][:-1])
    with pytest.raises(sets.WmtError, match="not line-aligned") as err:
        sets.read_text_files(files)
    assert f"{files['deu']} has 4" in str(err.value) and f"{files['eng']} has 5" in str(err.value)
    write_lines(files["deu"], [])
    with pytest.raises(sets.WmtError, match=f"{files['deu']}: the deu file of the test set is empty"):
        sets.read_text_files(files)
    with pytest.raises(sets.WmtError, match=f"{tmp_path / 'nope.fr'}: the fra file of the test set does not exist"):
        sets.read_text_files({"eng": files["eng"], "fra": tmp_path / "nope.fr"})


def test_plain_text_files_give_the_archives_outputs(tmp_path):
    # the same test set as an archive (through sacrebleu) and as N-way plain text: the same files and meta
    texts = {k: [*TEXTS[k], TEXTS[k][0], ""] for k in ("en", "de", "es")}  # a repeated and an empty row
    texts["de"][-1] = "Leer auf Englisch."
    fx = make_test_set(tmp_path / "test.tgz", texts, test_set="wmt13")
    from_archive = sets.build_texts("wmt13", [fx.path], ["eng", "spa", "deu", "hun"], tmp_path / "a",
                                   md5=[fx.md5], prefix="newstest2013.")
    files = {code: write_lines(tmp_path / f"newstest2013.{xx}", texts[xx]) for code, xx in (("eng", "en"),
                                                                                       ("spa", "es"), ("deu", "de"))}
    with pytest.raises(sets.WmtError, match="no file given for rus"):
        sets.build_texts_from_files("wmt13", files, ["eng", "spa", "deu", "rus"], tmp_path / "b")
    with pytest.raises(sets.WmtError, match=r"files given for hun, which are not among them \(hun: .*no hu-en"):
        sets.build_texts_from_files("wmt13", {**files, "hun": files["deu"]}, ["eng", "spa", "deu", "hun"],
                                   tmp_path / "b")
    from_files = sets.build_texts_from_files("wmt13", files, ["eng", "spa", "deu", "hun"], tmp_path / "b",
                                            prefix="newstest2013.")
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(p.name for p in (tmp_path / "a").iterdir())
    for name in from_files["files"].values():
        assert (tmp_path / "b" / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
    assert (tmp_path / "b" / "newstest2013.eng.txt").read_text(encoding="utf-8").splitlines() == TEXTS["en"]
    for key in ("test_set", "sentences", "languages", "files", "absent", "pairs"):
        assert from_files[key] == from_archive[key], key
    assert list(from_files["absent"]) == ["hun"] and from_files["pairs"]["deu"] == {"langpair": "de-en", "segments": 7}
    assert (from_files["join"]["duplicates_removed"], from_files["join"]["empty_removed"]) == (1, 1)
    assert set(from_files) == set(from_archive) | {"texts"} and from_files["archives"] == []
    assert [t["lines"] for t in from_files["texts"]] == [7, 7, 7]


def test_wmt_texts_cli_reads_text_files(tmp_path):
    files = [write_lines(tmp_path / f"t.{xx}", TEXTS[xx]) for xx in ("en", "fr")]
    run_cli("wmt-texts", "--text", "eng", files[0], "--text", "fra", files[1], "--test-set", "wmt12",
            "--langs", "eng", "fra", "--out-dir", tmp_path / "out")
    meta = json.loads((tmp_path / "out" / "meta.json").read_text(encoding="utf-8"))
    assert meta["sentences"] == 5 and meta["texts"][1]["file"] == str(files[1])
    with pytest.raises(wmt.WmtError, match="--md5 checks --tarball"):
        run_cli("wmt-texts", "--text", "eng", files[0], "--text", "fra", files[1], "--md5", "0" * 32,
                "--langs", "eng", "fra", "--out-dir", tmp_path / "out")


def test_file_stem_and_source_come_from_sacrebleu():
    assert sets.text_file_stem("wmt12") == "newstest2012" and sets.text_file_stem("wmt13") == "newstest2013"
    assert sets.text_file_source("wmt12", "ces") == "https://statmt.org/wmt12/test.tgz#test/newstest2012-src.cs.sgm"
    assert sets.text_file_source("wmt12", "eng") == "https://statmt.org/wmt12/test.tgz#test/newstest2012-src.en.sgm"
    assert sets.text_file_stem("wmt14") == "newstest2014"  # its files are named per pair (newstest2014-deen-...)
    with pytest.raises(sets.WmtError, match="test set wmt14 has no es-en or en-es pair"):
        sets.text_file_source("wmt14", "spa")


def test_shared_newstest2012_has_3003_lines_per_language():
    import os
    from pathlib import Path

    from laser_repro import config

    repo = Path(__file__).resolve().parents[1]
    root = Path(os.environ.get("LASER_REPRO_DATA_ROOT", repo.parent / "shared" / "data"))
    if not (root / "wmt-news").is_dir():
        pytest.skip(f"data root {root} has no wmt-news (set LASER_REPRO_DATA_ROOT to the shared data directory)")
    cfg = config.load(repo / "config" / "paper.yaml", {"data_root": str(root)})["evaluation"]["wmt"]
    assert cfg["test_set"] == "wmt12"
    files = {code: cfg["path"].format(root=root, stem=sets.text_file_stem(cfg["test_set"]),
                                      code=sets.sacrebleu_code(code)) for code in cfg["languages"]}
    lines = sets.read_text_files(files)
    assert {code: len(v) for code, v in lines.items()} == {code: 3003 for code in cfg["languages"]}


# ---------------------------------------------------------------------------------- TF-IDF baseline

def test_tfidf_baseline_finds_copies_and_misses_unrelated_strings(tmp_path):
    scores = wmt.tfidf_similarity_errors({"eng": TEXTS["en"], "copy": list(TEXTS["en"]), "ces": TEXTS["cs"]})
    errors = {(p["src"], p["trg"]): p["errors"] for p in scores["pairs"]}
    assert errors[("eng", "copy")] == 0 and errors[("copy", "eng")] == 0
    assert scores["sentences"] == 5 and "TF-IDF" in scores["system"]
    paths = {xx: write_lines(tmp_path / f"{xx}.txt", TEXTS[xx]) for xx in ("en", "de")}
    out = tmp_path / "tfidf.json"
    run_cli("wmt-similarity", "--text", "eng", paths["en"], "--text", "deu", paths["de"], "--scores", out)
    res = json.loads(out.read_text())
    assert res["languages"] == ["eng", "deu"] and res["texts"]["deu"] == str(paths["de"])
    with pytest.raises(wmt.WmtError, match="give --emb .* or --text"):
        run_cli("wmt-similarity", "--scores", out)
    with pytest.raises(wmt.WmtError, match="not line-aligned"):
        wmt.tfidf_similarity_errors({"eng": TEXTS["en"], "deu": TEXTS["de"][:3]})
