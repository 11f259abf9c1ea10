"""Tests for laser_repro.data.corpora with real-format fixtures built in tmp_path."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from laser_repro.data.corpora import (
    OPUS_BASE_URL,
    CorpusError,
    PairFilter,
    extract_nway_pair,
    extract_opus_moses,
    extract_tar_member,
    extract_tar_members,
    flores200_member,
    load_tatoeba_test,
    load_tatoeba_test_files,
    normalize_for_exclusion,
    opus_moses_members,
    opus_moses_path,
    opus_moses_url,
    read_local_bitext,
    write_moses_lines,
)
from laser_repro.core.textio import one_line

Q = dict(progress=False)


def make_opus_zip(path: Path, corpus: str, la: str, lb: str, lines_a, lines_b,
                  compression=zipfile.ZIP_DEFLATED) -> Path:
    """OPUS moses zip: members {corpus}.{l1}-{l2}.{l1|l2} (l1 < l2) plus LICENSE/README.

    lines_* are str or bytes items; each gets a trailing newline."""
    (l1, x1), (l2, x2) = sorted([(la, lines_a), (lb, lines_b)])

    def blob(lines):
        return b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines)

    with zipfile.ZipFile(path, "w", compression) as zf:
        zf.writestr("LICENSE", "CC-BY 2.0 FR\n")
        zf.writestr(f"{corpus}.{l1}-{l2}.{l1}", blob(x1))
        zf.writestr(f"{corpus}.{l1}-{l2}.{l2}", blob(x2))
        zf.writestr("README", "OPUS corpus\n")
    return path


def lines(p: Path) -> list[str]:
    return p.read_text(encoding="utf-8").split("\n")[:-1]


def assert_no_outputs(*paths: Path) -> None:
    for p in paths:
        assert not p.exists(), p
        assert not p.with_name(p.name + ".part").exists(), p
        assert not p.with_name(p.name + ".sample.part").exists(), p


def dropped_total(stats: dict) -> int:
    return sum(v for k, v in stats.items() if k.startswith("dropped_"))


EN = [f"This is English sentence number {i}." for i in range(50)]
DE = [f"Das ist der deutsche Satz Nummer {i}." for i in range(50)]


# --------------------------------------------------------------------------- URLs / names


def test_opus_url_and_members():
    assert opus_moses_url("OpenSubtitles", "v2018", "en", "de") == \
        "https://object.pouta.csc.fi/OPUS-OpenSubtitles/v2018/moses/de-en.txt.zip"
    assert opus_moses_url("UNPC", "v1.0", "zh", "en", base_url="http://m/") == \
        "http://m/OPUS-UNPC/v1.0/moses/en-zh.txt.zip"
    assert opus_moses_url("X", "v1", "zh_cn", "en").endswith("/moses/en-zh_cn.txt.zip")
    assert opus_moses_members("Tatoeba", "en", "de") == ("Tatoeba.de-en.en", "Tatoeba.de-en.de")
    with pytest.raises(ValueError):
        opus_moses_url("X", "v1", "en", "en")
    assert opus_moses_path("Tatoeba", "v1", "en", "de") == "OPUS-Tatoeba/v1/moses/de-en.txt.zip"


def test_one_opus_base_url():
    """corpora.OPUS_BASE_URL is the default of `laser-repro fetch --base-url` and of the config's
    opus.base_url (a schema default in YAML: checked here)."""
    from laser_repro import cli, config

    assert OPUS_BASE_URL == "https://object.pouta.csc.fi"
    assert config.load_schema()["properties"]["opus"]["properties"]["base_url"]["default"] == OPUS_BASE_URL
    args = cli.build_parser().parse_args(["fetch", "--url", "u", "--dest", "d"])
    assert args.base_url == OPUS_BASE_URL


# --------------------------------------------------------------------------- OPUS extraction


def test_extract_basic_sides_follow_codes(tmp_path):
    z = make_opus_zip(tmp_path / "de-en.txt.zip", "Tatoeba", "en", "de", EN, DE)
    out_s, out_t = tmp_path / "o" / "train.en", tmp_path / "o" / "train.de"
    st = extract_opus_moses(z, "Tatoeba", "en", "de", out_s, out_t, **Q)
    assert st == {"read": 50, "written": 50, "dropped_empty": 0, "dropped_long": 0,
                  "dropped_ratio": 0, "dropped_tatoeba_test": 0, "dropped_max_pairs": 0}
    assert lines(out_s) == EN and lines(out_t) == DE
    # reverse direction: source side is now German
    st = extract_opus_moses(z, "Tatoeba", "de", "en", tmp_path / "r.de", tmp_path / "r.en", **Q)
    assert lines(tmp_path / "r.de") == DE and lines(tmp_path / "r.en") == EN
    assert_no_outputs(out_s.with_name("nothing"))  # sanity of helper
    assert not list((tmp_path / "o").glob("*.part"))


def test_filters_and_counts(tmp_path):
    src = ["ok one", "", "ok two", "   \t", "x" * 1001, "short", "ok three", "fine", "a"]
    tgt = ["gut eins", "leer", "", "blank", "lang", "y" * 30, "gut drei", "x" * 1001, "b"]
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", src, tgt)
    st = extract_opus_moses(z, "C", "en", "de", tmp_path / "s", tmp_path / "t",
                            filters=PairFilter(max_chars=1000, max_ratio=3.0), **Q)
    assert st["read"] == 9
    assert st["dropped_empty"] == 3
    assert st["dropped_long"] == 2
    assert st["dropped_ratio"] == 1  # "short" (5) vs 30 chars
    assert st["written"] == 3 and st["read"] == st["written"] + dropped_total(st)
    assert lines(tmp_path / "s") == ["ok one", "ok three", "a"]
    assert lines(tmp_path / "t") == ["gut eins", "gut drei", "b"]
    # mapping form (as from the YAML config), ratio disabled, larger max_chars
    st = extract_opus_moses(z, "C", "en", "de", tmp_path / "s", tmp_path / "t",
                            filters={"max_chars": 2000, "max_ratio": None}, **Q)
    assert (st["dropped_empty"], st["dropped_long"], st["dropped_ratio"], st["written"]) == (3, 0, 0, 6)
    # keyword arguments (as used by the CLI) override `filters`; None disables a check
    st = extract_opus_moses(z, "C", "en", "de", tmp_path / "s", tmp_path / "t",
                            filters={"max_chars": 2000}, max_chars=1000, max_ratio=3.0, **Q)
    assert (st["dropped_long"], st["dropped_ratio"], st["written"]) == (2, 1, 3)
    st = read_local_bitext(tmp_path / "s", tmp_path / "t", tmp_path / "s2", tmp_path / "t2",
                           max_chars=None, **Q)
    assert st["written"] == 3
    with pytest.raises(ValueError, match="unknown filter"):
        extract_opus_moses(z, "C", "en", "de", tmp_path / "s", tmp_path / "t", filters={"max_len": 5}, **Q)


def test_line_break_characters_and_crlf(tmp_path):
    src = ["a\u2028b", "c\rd", "  padded  ", "crlf\r", "\ufeffnot-first-line-bom"]
    tgt = ["x", "y\x0bz", "p", "q", "r\x85s"]
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "fr", src, tgt)
    st = extract_opus_moses(z, "C", "en", "fr", tmp_path / "s", tmp_path / "t", **Q)
    assert st["written"] == 5
    s = lines(tmp_path / "s")
    assert s == ["a b", "c d", "padded", "crlf", "\ufeffnot-first-line-bom"]
    assert lines(tmp_path / "t") == ["x", "y z", "p", "q", "r s"]
    # the outputs stay aligned under universal-newline readers
    assert len((tmp_path / "s").read_text().splitlines()) == len((tmp_path / "t").read_text().splitlines()) == 5


def test_one_line_is_the_cleaner_of_every_stage():
    """textio.one_line: C0 / C1 control characters but tab, and LS / PS, become spaces; then strip.
    Every character str.splitlines breaks on is among them, and all are non-printable (the fast path)."""
    cleaned = {c for c in range(0x110000) if c != 0x20 and one_line(f"a{chr(c)}b") == "a b"}
    expected = {*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029}
    assert cleaned == expected
    assert all(len(f"a{chr(c)}b".splitlines()) == 1 for c in range(0x110000) if c not in expected)
    assert not any(chr(c).isprintable() for c in expected)
    assert one_line("\x00 tab\tkept\x9f ") == "tab\tkept"
    assert one_line("plain text") == "plain text"
    assert normalize_for_exclusion("\x01a \x7f  b\u2029") == "a b"


def test_other_control_characters_become_spaces(tmp_path):
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "fr", ["a\x01b", "\x00\x00", "tab\tkept"],
                      ["x\x7fy\x9fz", "n", "t"])
    st = extract_opus_moses(z, "C", "en", "fr", tmp_path / "s", tmp_path / "t", **Q)
    assert (st["written"], st["dropped_empty"]) == (2, 1)
    assert lines(tmp_path / "s") == ["a b", "tab\tkept"]
    assert lines(tmp_path / "t") == ["x y z", "t"]


def test_bom_on_first_line_is_removed(tmp_path):
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "fr", ["\ufeffhello", "x"], ["salut", "y"])
    extract_opus_moses(z, "C", "en", "fr", tmp_path / "s", tmp_path / "t", **Q)
    assert lines(tmp_path / "s") == ["hello", "x"]


def test_first_n(tmp_path):
    z = make_opus_zip(tmp_path / "u.zip", "UNPC", "en", "fr", EN, [f"fr {i}" for i in range(50)])
    st = extract_opus_moses(z, "UNPC", "en", "fr", tmp_path / "s", tmp_path / "t", first_n=10, **Q)
    assert st["read"] == 10 and st["written"] == 10
    assert lines(tmp_path / "s") == EN[:10]
    assert lines(tmp_path / "t") == [f"fr {i}" for i in range(10)]
    st = extract_opus_moses(z, "UNPC", "en", "fr", tmp_path / "s", tmp_path / "t", first_n=1000, **Q)
    assert st["read"] == 50
    st = extract_opus_moses(z, "UNPC", "en", "fr", tmp_path / "s", tmp_path / "t", first_n=0, **Q)
    assert st["read"] == 0 and lines(tmp_path / "s") == []


def test_first_n_counts_raw_pairs_before_filters(tmp_path):
    src = ["a", "", "c", "d", "e"]
    tgt = ["1", "2", "3", "4", "5"]
    z = make_opus_zip(tmp_path / "u.zip", "U", "en", "fr", src, tgt)
    st = extract_opus_moses(z, "U", "en", "fr", tmp_path / "s", tmp_path / "t", first_n=3, **Q)
    assert (st["read"], st["written"], st["dropped_empty"]) == (3, 2, 1)
    assert lines(tmp_path / "s") == ["a", "c"]


def _sample(tmp_path, z, name, **kw):
    s, t = tmp_path / f"{name}.en", tmp_path / f"{name}.de"
    st = extract_opus_moses(z, "OpenSubtitles", "en", "de", s, t, **Q, **kw)
    return st, lines(s), lines(t)


def test_max_pairs_deterministic_ordered_sample(tmp_path):
    n = 1000
    src = [f"en {i}" for i in range(n)]
    tgt = [f"de {i}" for i in range(n)]
    z = make_opus_zip(tmp_path / "os.zip", "OpenSubtitles", "en", "de", src, tgt)
    st1, s1, t1 = _sample(tmp_path, z, "a", max_pairs=100, seed=7)
    st2, s2, t2 = _sample(tmp_path, z, "b", max_pairs=100, seed=7)
    st3, s3, _ = _sample(tmp_path, z, "c", max_pairs=100, seed=8)
    assert st1 == st2 and st1["written"] == 100 and st1["dropped_max_pairs"] == 900
    assert st1["read"] == 1000 and st1["read"] == st1["written"] + dropped_total(st1)
    assert s1 == s2 and t1 == t2          # same seed -> same output
    assert s1 != s3                       # different seed -> different sample
    idx = [int(x.split()[1]) for x in s1]
    assert idx == sorted(idx) and len(set(idx)) == 100      # original order, no duplicates
    assert [int(x.split()[1]) for x in t1] == idx            # still aligned
    assert idx[0] < 100 and idx[-1] > 900                    # spread over the whole corpus, not a prefix
    assert 3 <= sum(1 for i in idx if i < 250) <= 50         # roughly uniform


def test_max_pairs_after_filters_and_noop_when_small(tmp_path):
    src = [("" if i % 2 else f"en {i}") for i in range(40)]
    tgt = [f"de {i}" for i in range(40)]
    z = make_opus_zip(tmp_path / "os.zip", "OpenSubtitles", "en", "de", src, tgt)
    st, s, t = _sample(tmp_path, z, "a", max_pairs=15, seed=1)
    assert st["dropped_empty"] == 20 and st["dropped_max_pairs"] == 5 and st["written"] == 15
    assert all(int(x.split()[1]) % 2 == 0 for x in s)
    st, s, _ = _sample(tmp_path, z, "b", max_pairs=20, seed=1)
    assert st["written"] == 20 and st["dropped_max_pairs"] == 0 and len(s) == 20
    st, s, _ = _sample(tmp_path, z, "c", max_pairs=0, seed=1)
    assert st["written"] == 0 and s == []
    assert not list(tmp_path.glob("*.part"))


def test_first_n_and_max_pairs_together(tmp_path):
    src = [f"en {i}" for i in range(100)]
    tgt = [f"de {i}" for i in range(100)]
    z = make_opus_zip(tmp_path / "os.zip", "OpenSubtitles", "en", "de", src, tgt)
    st, s, _ = _sample(tmp_path, z, "a", first_n=30, max_pairs=10, seed=3)
    assert st["read"] == 30 and st["written"] == 10
    assert all(int(x.split()[1]) < 30 for x in s)


# --------------------------------------------------------------------------- broken zips


def test_truncated_zip(tmp_path):
    z = make_opus_zip(tmp_path / "t.zip", "C", "en", "de", EN, DE)
    data = z.read_bytes()
    z.write_bytes(data[: len(data) // 2])
    out_s, out_t = tmp_path / "s", tmp_path / "t"
    out_s.write_text("stale\n")
    with pytest.raises(CorpusError, match="not a valid zip") as ei:
        extract_opus_moses(z, "C", "en", "de", out_s, out_t, **Q)
    assert str(z) in str(ei.value)
    assert_no_outputs(out_s, out_t)


def _member_data_offset(zpath: Path, member: str) -> tuple[int, int]:
    with zipfile.ZipFile(zpath) as zf:
        info = zf.getinfo(member)
    raw = zpath.read_bytes()
    off = info.header_offset
    name_len = int.from_bytes(raw[off + 26: off + 28], "little")
    extra_len = int.from_bytes(raw[off + 28: off + 30], "little")
    return off + 30 + name_len + extra_len, info.compress_size


def test_crc_error_in_stored_member(tmp_path):
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", EN, DE, compression=zipfile.ZIP_STORED)
    start, size = _member_data_offset(z, "C.de-en.de")
    raw = bytearray(z.read_bytes())
    pos = start + size // 2
    while not chr(raw[pos]).isalpha():
        pos += 1
    raw[pos] = ord("Q") if raw[pos] != ord("Q") else ord("R")  # still valid UTF-8, wrong CRC
    z.write_bytes(bytes(raw))
    out_s, out_t = tmp_path / "s", tmp_path / "t"
    with pytest.raises(CorpusError) as ei:
        extract_opus_moses(z, "C", "en", "de", out_s, out_t, **Q)
    msg = str(ei.value)
    assert "C.de-en.de" in msg and str(z) in msg and "CRC" in msg
    assert_no_outputs(out_s, out_t)


def test_corrupted_deflated_member(tmp_path):
    big_en = [f"{s} {i} lorem ipsum dolor sit amet" for i, s in enumerate(EN * 20)]
    big_de = [f"{s} {i} lorem ipsum dolor sit amet" for i, s in enumerate(DE * 20)]
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", big_en, big_de)
    start, size = _member_data_offset(z, "C.de-en.en")
    raw = bytearray(z.read_bytes())
    for k in range(size // 3, size // 3 + 16):
        raw[start + k] ^= 0xFF
    z.write_bytes(bytes(raw))
    out_s, out_t = tmp_path / "s", tmp_path / "t"
    with pytest.raises(CorpusError) as ei:
        extract_opus_moses(z, "C", "en", "de", out_s, out_t, **Q)
    assert "C.de-en.en" in str(ei.value) and str(z) in str(ei.value)
    assert_no_outputs(out_s, out_t)


def test_missing_member_lists_contents(tmp_path):
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", EN, DE)
    with pytest.raises(CorpusError) as ei:
        extract_opus_moses(z, "Other", "en", "de", tmp_path / "s", tmp_path / "t", **Q)
    msg = str(ei.value)
    assert "'Other.de-en.en'" in msg and "C.de-en.en" in msg and "LICENSE" in msg and str(z) in msg


def test_mismatched_line_counts(tmp_path):
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", EN[:5], DE[:3])
    out_s, out_t = tmp_path / "s", tmp_path / "t"
    with pytest.raises(CorpusError) as ei:
        extract_opus_moses(z, "C", "en", "de", out_s, out_t, **Q)
    msg = str(ei.value)
    assert "C.de-en.en has 5 lines" in msg and "C.de-en.de has 3 lines" in msg
    assert_no_outputs(out_s, out_t)
    # other direction: target longer
    with pytest.raises(CorpusError, match=r"C\.de-en\.de has 3 lines but .*C\.de-en\.en has 5 lines"):
        extract_opus_moses(z, "C", "de", "en", out_t, out_s, **Q)
    assert_no_outputs(out_s, out_t)


def test_mismatch_with_max_pairs_leaves_nothing(tmp_path):
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", EN, DE[:-1])
    out_s, out_t = tmp_path / "s", tmp_path / "t"
    with pytest.raises(CorpusError, match="50 lines.*49 lines"):
        extract_opus_moses(z, "C", "en", "de", out_s, out_t, max_pairs=10, **Q)
    assert_no_outputs(out_s, out_t)


def test_invalid_utf8_names_member_and_line(tmp_path):
    bad = list(DE)
    bad[2] = b"kaputt \xff\xfe bytes"
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", EN, bad)
    out_s, out_t = tmp_path / "s", tmp_path / "t"
    with pytest.raises(CorpusError, match=r"C\.de-en\.de: invalid UTF-8 on line 3"):
        extract_opus_moses(z, "C", "en", "de", out_s, out_t, **Q)
    assert_no_outputs(out_s, out_t)


# --------------------------------------------------------------------------- local files


def test_read_local_bitext_plain_and_gz(tmp_path):
    a, b = tmp_path / "a.en", tmp_path / "b.de.gz"
    a.write_text("".join(x + "\n" for x in EN))
    with gzip.open(b, "wt", encoding="utf-8") as f:
        f.writelines(x + "\n" for x in DE)
    st = read_local_bitext(a, b, tmp_path / "o.en", tmp_path / "o.de", first_n=20, **Q)
    assert st["written"] == 20 and lines(tmp_path / "o.de") == DE[:20]


def test_local_last_line_without_newline(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("x\ny")
    b.write_text("1\n2\n")
    st = read_local_bitext(a, b, tmp_path / "o1", tmp_path / "o2", **Q)
    assert st["written"] == 2 and lines(tmp_path / "o1") == ["x", "y"]


def test_nway_mismatch_and_bad_utf8(tmp_path):
    d = tmp_path / "flores"
    d.mkdir()
    (d / "eng_Latn.dev").write_text("".join(x + "\n" for x in EN[:4]))
    (d / "deu_Latn.dev").write_text("".join(x + "\n" for x in DE[:6]))
    (d / "fra_Latn.dev").write_bytes(b"un\ndeux\ntrois\nqua\xc3tre\n")
    out_s, out_t = tmp_path / "o.eng", tmp_path / "o.deu"
    with pytest.raises(CorpusError) as ei:
        extract_nway_pair(d / "eng_Latn.dev", d / "deu_Latn.dev", out_s, out_t, **Q)
    msg = str(ei.value)
    assert f"{d / 'eng_Latn.dev'} has 4 lines" in msg and f"{d / 'deu_Latn.dev'} has 6 lines" in msg
    assert_no_outputs(out_s, out_t)
    with pytest.raises(CorpusError, match=r"fra_Latn\.dev: invalid UTF-8 on line 4"):
        extract_nway_pair(d / "eng_Latn.dev", d / "fra_Latn.dev", out_s, out_t, **Q)
    assert_no_outputs(out_s, out_t)
    with pytest.raises(CorpusError, match="no such file"):
        extract_nway_pair(d / "eng_Latn.dev", d / "xxx_Latn.dev", out_s, out_t, **Q)


def test_nway_pair_takes_its_moses_lines_from_the_language_files(tmp_path):
    """An N-way pair with the sides' Moses files (rule moses_lines): the kept pairs' Moses lines are
    exactly what preprocessing the extracted pair would give (the former per-pair path), through the
    filters, the held-out lines and the max_pairs sample."""
    from laser_repro.data.preprocess import language_preprocessor

    en = [f"\ufeffThe {i}th line, \"quoted\"." if i == 0 else f"Line {i}:\tHello,  world!" for i in range(40)]
    de = [f"Zeile {i}: Hallo, Welt!" for i in range(40)]
    en[5], de[7] = "", "x" * 500  # dropped: empty, too long
    (tmp_path / "eng").write_text("".join(x + "\n" for x in en), encoding="utf-8")
    (tmp_path / "deu").write_text("".join(x + "\n" for x in de), encoding="utf-8")
    prep = {lang: language_preprocessor(lang) for lang in ("eng", "deu")}
    for lang in prep:
        assert write_moses_lines(tmp_path / lang, tmp_path / f"{lang}.lower", prep[lang], **Q) == 40
    out = {k: tmp_path / k for k in ("s", "t", "ts", "tt")}
    st = read_local_bitext(tmp_path / "eng", tmp_path / "deu", out["s"], out["t"], max_chars=100, skip_lines=(10, 20),
                           max_pairs=15, seed=3, moses=(tmp_path / "eng.lower", tmp_path / "deu.lower"),
                           moses_out=(out["ts"], out["tt"]), **Q)
    assert st["written"] == 15 and st["heldout"] == 10 and st["dropped_empty"] == st["dropped_long"] == 1
    kept_src, kept_tgt = lines(out["s"]), lines(out["t"])
    assert lines(out["ts"]) == [prep["eng"](x) for x in kept_src]
    assert lines(out["tt"]) == [prep["deu"](x) for x in kept_tgt]
    assert kept_src[0].startswith("The 0th") and lines(out["ts"])[0].startswith("the 0th")  # no BOM
    # without the Moses files: the same pairs
    st2 = read_local_bitext(tmp_path / "eng", tmp_path / "deu", tmp_path / "s2", tmp_path / "t2", max_chars=100,
                            skip_lines=(10, 20), max_pairs=15, seed=3, **Q)
    assert st2 == st and lines(tmp_path / "s2") == kept_src
    # a Moses file of another length: an error naming it, nothing written
    (tmp_path / "deu.short").write_text("a\n" * 39, encoding="utf-8")
    with pytest.raises(CorpusError, match=r"deu\.short has 39 lines"):
        read_local_bitext(tmp_path / "eng", tmp_path / "deu", out["s"], out["t"],
                          moses=(tmp_path / "eng.lower", tmp_path / "deu.short"), moses_out=(out["ts"], out["tt"]), **Q)
    assert_no_outputs(*out.values())


def test_same_output_path_rejected(tmp_path):
    a = tmp_path / "a"
    a.write_text("x\n")
    with pytest.raises(ValueError):
        read_local_bitext(a, a, tmp_path / "o", tmp_path / "o", **Q)


def test_progress_enabled_writes_only_to_stderr(tmp_path, capsys):
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "de", EN, DE)
    extract_opus_moses(z, "C", "en", "de", tmp_path / "s", tmp_path / "t", progress=True)
    assert capsys.readouterr().out == ""


# --------------------------------------------------------------------------- Tatoeba exclusion


def _tatoeba_test_dir(tmp_path: Path) -> Path:
    d = tmp_path / "tatoeba" / "v1"
    d.mkdir(parents=True)
    (d / "tatoeba.deu-eng.deu").write_text("Ich habe Hunger.\nWo ist  der Bahnhof?\n")
    (d / "tatoeba.deu-eng.eng").write_text("I am hungry.\nWhere is the station?\n")
    (d / "tatoeba.fra-eng.fra").write_text("J'ai faim.\n")
    (d / "tatoeba.fra-eng.eng").write_text("I'm hungry.\n")
    return d


def test_load_tatoeba_test(tmp_path):
    d = _tatoeba_test_dir(tmp_path)
    s = load_tatoeba_test(d, "deu")
    assert s == {"Ich habe Hunger.", "Wo ist der Bahnhof?", "I am hungry.", "Where is the station?"}
    assert load_tatoeba_test(d, ["deu", "fra"]) >= {"J'ai faim.", "I'm hungry."}
    assert load_tatoeba_test_files(d / "tatoeba.deu-eng.deu", d / "tatoeba.deu-eng.eng") == s
    with pytest.raises(CorpusError, match=r"tatoeba\.ita-eng\.ita"):
        load_tatoeba_test(d, "ita")
    assert normalize_for_exclusion("  a \t b\u00a0 c ") == "a b c"


def test_tatoeba_exclusion_counts(tmp_path):
    d = _tatoeba_test_dir(tmp_path)
    excl = load_tatoeba_test(d, "deu")
    en = ["I am hungry.", "Hello there.", "Where  is the station? ", "Good night.", "Thanks.", "See you.",
          "I am\thungry."]
    de = ["Ich bin hungrig.", "Hallo.", "Wo ist der Bahnhof?", " Ich habe Hunger.", "Danke.", "", "Hunger!"]
    z = make_opus_zip(tmp_path / "de-en.txt.zip", "Tatoeba", "de", "en", de, en)
    st = extract_opus_moses(z, "Tatoeba", "de", "en", tmp_path / "s", tmp_path / "t", exclude=excl, **Q)
    # pair 0: English side in test; 2: both; 3: German side; 5: empty; 6: English side (tab)
    assert st["dropped_tatoeba_test"] == 4 and st["dropped_empty"] == 1 and st["written"] == 2
    assert lines(tmp_path / "s") == ["Hallo.", "Danke."]
    assert lines(tmp_path / "t") == ["Hello there.", "Thanks."]
    # the same exclusion works for local extractors
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("I am hungry.\nfoo\n")
    b.write_text("x\ny\n")
    st = read_local_bitext(a, b, tmp_path / "o1", tmp_path / "o2", exclude=excl, **Q)
    assert st["dropped_tatoeba_test"] == 1 and st["written"] == 1


# --------------------------------------------------------------------------- tarballs (FLORES-200)

FLORES = {
    "eng_Latn": [f"Sentence {i} about the weather and other things." for i in range(200)],
    "deu_Latn": [f"Satz {i} über das Wetter und andere Dinge." for i in range(200)],
    "zho_Hans": [f"关于天气的第{i}句话。" for i in range(200)],
}


def make_flores_tar(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        def add(name, data: bytes | None):
            ti = tarfile.TarInfo(name)
            if data is None:
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            else:
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
        add("flores200_dataset", None)
        add("flores200_dataset/README", b"FLORES-200\n")
        for split in ("dev", "devtest"):
            add(f"flores200_dataset/{split}", None)
            for code, sents in FLORES.items():
                add(f"flores200_dataset/{split}/{code}.{split}",
                    "".join(f"{split} {s}\n" for s in sents).encode())
    return path


def test_flores_member_name():
    assert flores200_member("deu_Latn") == "flores200_dataset/dev/deu_Latn.dev"
    assert flores200_member("deu_Latn", "devtest") == "flores200_dataset/devtest/deu_Latn.devtest"
    with pytest.raises(ValueError):
        flores200_member("deu_Latn", "test")


def test_extract_tar_member_and_nway(tmp_path):
    tar = make_flores_tar(tmp_path / "flores200_dataset.tar.gz")
    out_en = extract_tar_member(tar, flores200_member("eng_Latn"), tmp_path / "f" / "eng_Latn.dev")
    assert lines(out_en) == [f"dev {s}" for s in FLORES["eng_Latn"]]
    outs = extract_tar_members(tar, {
        "./flores200_dataset/dev/deu_Latn.dev": tmp_path / "f" / "deu_Latn.dev",
        flores200_member("zho_Hans", "devtest"): tmp_path / "f" / "zho_Hans.devtest",
    })
    assert set(outs) == {"flores200_dataset/dev/deu_Latn.dev", "flores200_dataset/devtest/zho_Hans.devtest"}
    assert lines(tmp_path / "f" / "zho_Hans.devtest")[5] == f"devtest {FLORES['zho_Hans'][5]}"
    st = extract_nway_pair(out_en, tmp_path / "f" / "deu_Latn.dev", tmp_path / "b.en", tmp_path / "b.de", **Q)
    assert st["written"] == 200
    assert lines(tmp_path / "b.de")[7] == f"dev {FLORES['deu_Latn'][7]}"
    assert not list((tmp_path / "f").glob("*.part"))


def test_tar_missing_member_lists_names(tmp_path):
    tar = make_flores_tar(tmp_path / "fl.tar.gz")
    out = tmp_path / "x.dev"
    with pytest.raises(CorpusError) as ei:
        extract_tar_member(tar, flores200_member("xxx_Latn"), out)
    msg = str(ei.value)
    assert "flores200_dataset/dev/xxx_Latn.dev" in msg and "flores200_dataset/dev/eng_Latn.dev" in msg
    assert str(tar) in msg
    assert_no_outputs(out)
    with pytest.raises(CorpusError, match="not a regular file"):
        extract_tar_member(tar, "flores200_dataset/dev", out)


def test_truncated_tar(tmp_path):
    tar = make_flores_tar(tmp_path / "fl.tar.gz")
    data = tar.read_bytes()
    tar.write_bytes(data[: int(len(data) * 0.6)])
    out = tmp_path / "x.devtest"
    # a member at the end of the archive cannot be read
    with pytest.raises(CorpusError, match="truncated or corrupt") as ei:
        extract_tar_member(tar, flores200_member("zho_Hans", "devtest"), out)
    assert str(tar) in str(ei.value)
    assert_no_outputs(out)
    # a missing member in a truncated archive is reported as truncation, not absence
    with pytest.raises(CorpusError, match="truncated or corrupt"):
        extract_tar_member(tar, "flores200_dataset/dev/nope.dev", out)
    # several members: the first would succeed but nothing remains on failure
    a, b = tmp_path / "a.dev", tmp_path / "b.devtest"
    with pytest.raises(CorpusError):
        extract_tar_members(tar, {flores200_member("eng_Latn"): a,
                                  flores200_member("zho_Hans", "devtest"): b})
    assert_no_outputs(a, b)


def test_absent_pair_record_gives_empty_bitext_with_reason(tmp_path):
    from laser_repro.data.corpora import extract_opus_moses, write_absent_pair_record

    url = "https://object.pouta.csc.fi/OPUS-Tatoeba/v20190709/moses/es-kzj.txt.zip"
    record = tmp_path / "es-kzj.txt.zip"
    write_absent_pair_record(record, url)
    stats = extract_opus_moses(record, "Tatoeba", "kzj", "es", tmp_path / "o.kzj", tmp_path / "o.es")
    assert stats["written"] == 0 and stats["absent_on_server"].startswith(url)
    assert (tmp_path / "o.kzj").read_bytes() == b"" and (tmp_path / "o.es").read_bytes() == b""



# --------------------------------------------------------------------------- empty pairs (laser-repro extract)


def _extract_cli(tmp_path, *args):
    from laser_repro import cli

    out = tmp_path / "results" / "corpora" / "Mycorpus"
    argv = ["extract", "--src", "deu", "--tgt", "eng", *args,
            "--out-src", str(out / "deu-eng.deu"), "--out-tgt", str(out / "deu-eng.eng"),
            "--stats", str(out / "deu-eng.stats.json")]
    cli.main(["--debug", *argv])  # an error raises (the tests match its type), as without cli.main's one line
    return out


def test_cli_extract_all_pairs_filtered_fails_naming_corpus_pair_files_and_filter(tmp_path):
    src, tgt = tmp_path / "in.deu", tmp_path / "in.eng"
    src.write_text("x" * 50 + "\n" + "y" * 60 + "\n\n", encoding="utf-8")
    tgt.write_text("a\nb\nc\n", encoding="utf-8")
    with pytest.raises(CorpusError) as ei:
        _extract_cli(tmp_path, "--corpus", "Mycorpus", "--src-file", str(src), "--tgt-file", str(tgt),
                     "--max-chars", "40")
    msg = str(ei.value)
    assert "Mycorpus" in msg and "deu-eng" in msg and str(src) in msg and str(tgt) in msg
    assert "all 3 pairs" in msg and "2 by dropped_long" in msg and "max_chars=40" in msg
    assert "1 by dropped_empty" in msg and "leave this pair out" in msg
    assert "allow_absent_pairs" not in msg  # only for OPUS corpora (see the absent-record test)
    out = tmp_path / "results" / "corpora" / "Mycorpus"
    assert not (out / "deu-eng.stats.json").exists() and not (out / "deu-eng.deu").exists()


def test_cli_extract_empty_files_fail_and_corpus_defaults_to_output_directory(tmp_path):
    src, tgt = tmp_path / "in.deu", tmp_path / "in.eng"
    src.write_bytes(b"")
    tgt.write_bytes(b"")
    with pytest.raises(CorpusError, match=r"corpus 'Mycorpus', pair deu-eng: .*no lines.*empty"):
        _extract_cli(tmp_path, "--src-file", str(src), "--tgt-file", str(tgt))
    # every line held out (--skip-lines) says so
    src.write_text("a\nb\n", encoding="utf-8")
    tgt.write_text("c\nd\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="held-out"):
        _extract_cli(tmp_path, "--src-file", str(src), "--tgt-file", str(tgt), "--skip-lines", "0", "5")


def test_cli_extract_empty_pair_allowed_is_flagged_absent_with_a_warning(tmp_path, caplog):
    import json
    import logging

    z = make_opus_zip(tmp_path / "de-en.txt.zip", "Tatoeba", "de", "en", ["", " "], ["x", "y"])
    with caplog.at_level(logging.WARNING):
        out = _extract_cli(tmp_path, "--opus-zip", str(z), "--opus-corpus", "Tatoeba", "--src-code", "de",
                           "--tgt-code", "en", "--absent-ok")
    stats = json.loads((out / "deu-eng.stats.json").read_text())
    assert stats["absent"] is True and stats["written"] == 0 and stats["dropped_empty"] == 2
    assert "dropped_empty" in stats["absent_reason"]
    assert (out / "deu-eng.deu").read_bytes() == b"" and (out / "deu-eng.eng").read_bytes() == b""
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("Mycorpus" in m and "deu-eng" in m and "Tatoeba.de-en.de" in m for m in warned), warned


def test_cli_extract_absent_record_needs_absent_ok(tmp_path):
    import json

    from laser_repro.data.corpora import write_absent_pair_record

    url = "https://object.pouta.csc.fi/OPUS-Tatoeba/v1/moses/de-en.txt.zip"
    record = tmp_path / "de-en.txt.zip"
    write_absent_pair_record(record, url)
    args = ("--opus-zip", str(record), "--opus-corpus", "Tatoeba", "--src-code", "de", "--tgt-code", "en")
    with pytest.raises(CorpusError, match=r"(?s)Mycorpus.*deu-eng.*404.*allow_absent_pairs.*delete"):
        _extract_cli(tmp_path, *args)
    out = _extract_cli(tmp_path, *args, "--absent-ok")
    stats = json.loads((out / "deu-eng.stats.json").read_text())
    assert stats["absent"] is True and stats["absent_on_server"].startswith(url)


def test_control_character_only_lines_count_as_empty(tmp_path):
    src = [b"\x00\x00\x00", b"ok", b" \x00 \t\x00", b"a\x00b", b"\x1f\x7f", b"fine"]
    tgt = [b"one", b"two", b"three", b"four", b"five", "\u0085\u2028".encode()]
    z = make_opus_zip(tmp_path / "c.zip", "C", "en", "fr", src, tgt)
    st = extract_opus_moses(z, "C", "en", "fr", tmp_path / "s", tmp_path / "t", **Q)
    assert st["dropped_empty"] == 4 and st["written"] == 2
    assert lines(tmp_path / "s") == ["ok", "a b"]
    assert lines(tmp_path / "t") == ["two", "four"]
    assert normalize_for_exclusion(" a\x00 b\x00") == "a b"


def test_extract_member_of_a_zip(tmp_path):
    """OPUS's Moses downloads are zips (ParaCrawl's en-fr.txt.zip for Bi-Sent2Vec's N-way pair corpora)."""
    archive = tmp_path / "en-fr.txt.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ParaCrawl.en-fr.en", "one\ntwo\n")
        zf.writestr("ParaCrawl.en-fr.fr", "un\ndeux\n")
    out = extract_tar_member(archive, "ParaCrawl.en-fr.fr", tmp_path / "x" / "fr")
    assert out.read_text() == "un\ndeux\n" and not list(tmp_path.glob("x/*.part"))
    with pytest.raises(CorpusError, match="no member 'ParaCrawl.en-fr.de'"):
        extract_tar_member(archive, "ParaCrawl.en-fr.de", tmp_path / "x" / "de")
    assert not (tmp_path / "x" / "de").exists()
