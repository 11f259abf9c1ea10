"""UN Parallel Corpus v1.0 test sets: member names, streaming extraction from a synthetic
UNv1.0.testsets.tar.gz with the real layout, errors (and no output after one), alignment check, CLI."""
from __future__ import annotations

import argparse
import io
import tarfile

import pytest

from laser_repro.core.textio import InputError
from laser_repro.evaluation import un

SENTENCES = {
    "en": ["The General Assembly,", "Recalling its resolution 70/1,", "Decides to continue."],
    "fr": ["L'Assemblée générale,", "Rappelant sa résolution 70/1,", "Décide de poursuivre."],
    "es": ["La Asamblea General,", "Recordando su resolución 70/1,", "Decide seguir."],
    "ru": ["Генеральная Ассамблея,", "ссылаясь на свою резолюцию 70/1,", "постановляет продолжить."],
    "ar": ["إن الجمعية العامة،", "إذ تشير إلى قرارها 70/1،", "تقرر المواصلة."],
    "zh": ["大会，", "回顾其第70/1号决议，", "决定继续。"],
}


def _add(tf: tarfile.TarFile, name: str, data: bytes | None) -> None:
    info = tarfile.TarInfo(name)
    if data is None:
        info.type = tarfile.DIRTYPE
        tf.addfile(info)
    else:
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))


def write_archive(path, members: dict[str, bytes]) -> None:
    """A .tar.gz laid out as UNv1.0.testsets.tar.gz: directory entries, then the members."""
    with tarfile.open(path, "w:gz") as tf:
        for d in ("testsets/", "testsets/devset/", "testsets/testset/"):
            _add(tf, d, None)
        for name, data in members.items():
            _add(tf, name, data)


def real_layout() -> dict[str, bytes]:
    members = {}
    for split in un.SPLITS:
        for code, lines in SENTENCES.items():
            text = [f"{s} ({split})" for s in lines]
            members[f"testsets/{split}/UNv1.0.{split}.{code}"] = ("\n".join(text) + "\n").encode("utf-8")
    return members


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / un.ARCHIVE_NAME
    write_archive(path, real_layout())
    return path


def test_constants():
    assert un.ARCHIVE_NAME == "UNv1.0.testsets.tar.gz"
    assert un.URL == "https://conferences.unite.un.org/uncorpus/Home/DownloadFile?filename=UNv1.0.testsets.tar.gz"
    assert un.URLS[0] == un.URL and len(set(un.URLS)) == len(un.URLS)
    assert all(u.endswith(un.ARCHIVE_NAME) for u in un.URLS)
    assert un.SHA256 is None  # none published
    assert un.LANGUAGES == {"eng": "en", "fra": "fr", "spa": "es", "rus": "ru", "ara": "ar", "cmn": "zh"}
    assert un.SPLITS == ("devset", "testset") and un.LINES == 4000


def test_member_names():
    assert un.member_name("eng", "testset") == "testsets/testset/UNv1.0.testset.en"
    assert un.member_name("cmn", "testset") == "testsets/testset/UNv1.0.testset.zh"
    assert un.member_name("ara", "devset") == "testsets/devset/UNv1.0.devset.ar"
    assert un.member_name("spa", "devset") == "testsets/devset/UNv1.0.devset.es"
    assert un.member_name("ru", "testset") == "testsets/testset/UNv1.0.testset.ru"  # the UN's own code
    assert sorted(un.member_name(l, "testset") for l in un.LANGUAGES) == \
        sorted(n for n in real_layout() if n.startswith("testsets/testset/"))


@pytest.mark.parametrize("lang", ["deu", "de", "", "EN", "eng "])
def test_unknown_language(lang):
    with pytest.raises(ValueError, match=rf"{lang!r}.*known: eng \(en\), fra \(fr\)"):
        un.member_name(lang, "testset")


@pytest.mark.parametrize("split", ["test", "dev", "training", "6way"])
def test_unknown_split(split):
    with pytest.raises(ValueError, match=rf"{split!r}.*known: devset, testset"):
        un.member_name("eng", split)


@pytest.mark.parametrize("lang,code", [("fra", "fr"), ("cmn", "zh"), ("ara", "ar"), ("eng", "en")])
def test_extract_content(archive, tmp_path, lang, code):
    out = tmp_path / "out" / f"test.{lang}"
    assert un.extract(archive, lang, "testset", out) == 3
    want = [f"{s} (testset)" for s in SENTENCES[code]]
    assert out.read_text(encoding="utf-8") == "\n".join(want) + "\n"
    dev = tmp_path / f"dev.{lang}"
    assert un.extract(archive, lang, "devset", dev, expected_lines=3) == 3
    assert dev.read_text(encoding="utf-8").splitlines() == [f"{s} (devset)" for s in SENTENCES[code]]
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # no temp file left


def test_extract_keeps_line_count_and_cleans(tmp_path):
    """A member without final newline, a BOM, CR / U+2028 / surrounding blanks inside lines and an
    empty line: as many lines out as in, one sentence each, control characters made spaces."""
    path = tmp_path / un.ARCHIVE_NAME
    data = "\ufeffa\r\n b\u2028c \n\nlast".encode("utf-8")
    write_archive(path, {"./testsets/testset/UNv1.0.testset.fr": data})  # a ./ prefix names the same member
    out = tmp_path / "fr.txt"
    assert un.extract(path, "fra", "testset", out) == 4
    assert out.read_bytes() == b"a\nb c\n\nlast\n"


def _assert_fails_without_output(tmp_path, archive, lang, split, match, **kw):
    out = tmp_path / "o" / "x.txt"
    with pytest.raises(InputError, match=match):
        un.extract(archive, lang, split, out, **kw)
    assert not out.exists()
    if out.parent.exists():  # no temp file left either
        assert list(out.parent.iterdir()) == []


def test_missing_member(tmp_path):
    members = real_layout()
    del members["testsets/testset/UNv1.0.testset.ru"]
    path = tmp_path / un.ARCHIVE_NAME
    write_archive(path, members)
    _assert_fails_without_output(tmp_path, path, "rus", "testset",
                                 rf"{path}.*no member 'testsets/testset/UNv1\.0\.testset\.ru'")


def test_missing_archive(tmp_path):
    _assert_fails_without_output(tmp_path, tmp_path / "absent.tar.gz", "eng", "testset", "no such file")


def test_invalid_utf8_leaves_no_output(tmp_path):
    path = tmp_path / un.ARCHIVE_NAME
    members = real_layout()
    members["testsets/testset/UNv1.0.testset.es"] = b"uno\ndos\ntr\xe9s\ncuatro\n"  # Latin-1 on line 3
    write_archive(path, members)
    _assert_fails_without_output(
        tmp_path, path, "spa", "testset",
        rf"{path}:testsets/testset/UNv1\.0\.testset\.es: line 3: invalid UTF-8")


def test_corrupt_archive(tmp_path, archive):
    truncated = tmp_path / "trunc.tar.gz"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    _assert_fails_without_output(tmp_path, truncated, "zh", "testset", r"truncated or corrupt")


def test_unexpected_line_count_and_empty_member(tmp_path, archive):
    _assert_fails_without_output(tmp_path, archive, "eng", "testset", r"testset\.en: 3 lines, expected 4000",
                                 expected_lines=un.LINES)
    path = tmp_path / "empty.tar.gz"
    write_archive(path, {"testsets/devset/UNv1.0.devset.en": b""})
    _assert_fails_without_output(tmp_path, path, "eng", "devset", "empty member")


def test_failed_extract_keeps_previous_output(tmp_path, archive):
    out = tmp_path / "keep.txt"
    out.write_text("old\n", encoding="utf-8")
    with pytest.raises(InputError):
        un.extract(archive, "eng", "testset", out, expected_lines=5)
    assert out.read_text(encoding="utf-8") == "old\n"


def test_unknown_lang_in_extract_writes_nothing(tmp_path, archive):
    out = tmp_path / "x.txt"
    with pytest.raises(ValueError, match="'deu'"):
        un.extract(archive, "deu", "testset", out)
    assert not out.exists()


def test_check_aligned(tmp_path, archive):
    fr, en = tmp_path / "t.fr", tmp_path / "t.en"
    un.extract(archive, "fra", "testset", fr)
    un.extract(archive, "eng", "testset", en)
    assert un.check_aligned(fr, en) == 3
    short = tmp_path / "short.en"
    short.write_text("one\ntwo\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"{fr} has 3 lines, {short} has 2"):
        un.check_aligned(fr, short)
    nofinal = tmp_path / "nofinal.en"
    nofinal.write_text("a\nb\nc", encoding="utf-8")  # a last line without newline counts
    assert un.check_aligned(fr, nofinal) == 3
    e1, e2 = tmp_path / "e1", tmp_path / "e2"
    e1.write_text(""), e2.write_text("")
    with pytest.raises(InputError, match="no lines"):
        un.check_aligned(e1, e2)


def _parser():
    p = argparse.ArgumentParser()
    un.add_cli(p.add_subparsers(dest="command", required=True))
    return p


def test_cli(tmp_path, archive):
    out = tmp_path / "cli.ru"
    a = _parser().parse_args(["un-extract", "--archive", str(archive), "--lang", "rus", "--output", str(out)])
    assert a.split == "testset"  # default
    a.func(a)
    assert out.read_text(encoding="utf-8").splitlines()[0] == "Генеральная Ассамблея, (testset)"

    dev = tmp_path / "cli.dev.zh"
    a = _parser().parse_args(["un-extract", "--archive", str(archive), "--lang", "zh", "--split", "devset",
                              "--output", str(dev), "--expect-lines", "3"])
    a.func(a)
    assert dev.read_text(encoding="utf-8").splitlines()[-1] == "决定继续。 (devset)"

    bad = tmp_path / "bad.txt"
    a = _parser().parse_args(["un-extract", "--archive", str(archive), "--lang", "deu", "--output", str(bad)])
    with pytest.raises(SystemExit, match="un-extract: unknown UN corpus language 'deu'"):
        a.func(a)
    assert not bad.exists()
    with pytest.raises(SystemExit):  # argparse rejects an unknown split
        _parser().parse_args(["un-extract", "--archive", "a", "--lang", "eng", "--split", "test", "--output", "o"])
