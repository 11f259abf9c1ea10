"""Tests for laser_repro.data.nway: per-language train / validation split and the joint BPE step."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from laser_repro.core.textio import InputError
from laser_repro.data import corpora, nway
from laser_repro.data.preprocess import language_preprocessor
from laser_repro.models.multienc.model import SPECIALS, Dictionary

RAW_ENG = [
    "Hello, World!",
    "The cat sat on the mat.",
    "It is raining today.",
    "I like green apples.",
    "Where is the station?",
    "She reads a book.",
    "We went home early.",
    "This is line eight.",
    "Nine lives, they say.",
    "The end.",
]


def _write(path: Path, lines) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# ---- prepare_language -------------------------------------------------------------------------------

def _moses(raw: Path, lowercase: bool = True) -> Path:
    """The raw file's Moses lines, as rule moses_lines writes them."""
    out = raw.with_name(raw.name + (".lower" if lowercase else ".cased"))
    corpora.write_moses_lines(raw, out, language_preprocessor("eng", lowercase=lowercase), progress=False)
    return out


def test_prepare_language_heldout_split(tmp_path):
    raw = _write(tmp_path / "eng.dev", RAW_ENG)
    out = tmp_path / "out"
    counts = nway.prepare_language(raw, _moses(raw), "eng", out_dir=out, heldout=(3, 6))
    assert counts == {"train": 7, "valid": 3}
    assert _lines(out / "raw" / "valid.eng") == RAW_ENG[3:6]
    assert _lines(out / "tok" / "valid.eng") == ["i like green apples .", "where is the station ?",
                                                 "she reads a book ."]
    train = _lines(out / "tok" / "train.eng")
    assert len(train) == 7
    assert train[0] == "hello , world !"
    assert train[1] == "the cat sat on the mat ."
    assert train[3] == "we went home early ."  # line 6: right after the held-out lines, order kept
    assert train[-1] == "the end ."
    assert not (out / "raw" / "train.eng").exists()


def test_prepare_language_heldout_at_start_keep_case(tmp_path):
    raw = _write(tmp_path / "eng.dev", RAW_ENG)
    out = tmp_path / "out"
    counts = nway.prepare_language(raw, _moses(raw, lowercase=False), "eng", out_dir=out, heldout=(0, 1))
    assert counts == {"train": 9, "valid": 1}
    assert _lines(out / "tok" / "valid.eng") == ["Hello , World !"]
    assert _lines(out / "raw" / "valid.eng") == ["Hello, World!"]
    assert _lines(out / "tok" / "train.eng")[0] == "The cat sat on the mat ."


def test_prepare_language_valid_file(tmp_path):
    raw = _write(tmp_path / "eng.train", RAW_ENG)
    dev = _write(tmp_path / "eng.devset", ["Good Morning!", "A second, dev line."])
    out = tmp_path / "out"
    counts = nway.prepare_language(raw, _moses(raw), "eng", out_dir=out, valid_raw=dev, valid_moses=_moses(dev))
    assert counts == {"train": 10, "valid": 2}
    assert len(_lines(out / "tok" / "train.eng")) == 10
    assert _lines(out / "tok" / "train.eng")[0] == "hello , world !"
    assert _lines(out / "tok" / "valid.eng") == ["good morning !", "a second , dev line ."]
    assert _lines(out / "raw" / "valid.eng") == ["Good Morning!", "A second, dev line."]


def test_prepare_language_heldout_beyond_file(tmp_path):
    raw = _write(tmp_path / "eng.dev", RAW_ENG)
    out = tmp_path / "out"
    with pytest.raises(InputError) as err:
        nway.prepare_language(raw, _moses(raw), "eng", out_dir=out, heldout=(8, 15))
    assert str(raw) in str(err.value)
    assert "10 lines" in str(err.value)
    # atomic outputs: nothing half-written is left
    assert not (out / "tok" / "train.eng").exists()
    assert not (out / "raw" / "valid.eng").exists()


def test_prepare_language_heldout_entirely_after_file(tmp_path):
    raw = _write(tmp_path / "eng.dev", RAW_ENG)
    with pytest.raises(InputError, match="eng.dev"):
        nway.prepare_language(raw, _moses(raw), "eng", out_dir=tmp_path / "out", heldout=(20, 30))


@pytest.mark.parametrize("kwargs", [{}, {"heldout": (0, 2), "valid_raw": "x"}])
def test_prepare_language_heldout_xor_valid(tmp_path, kwargs):
    raw = _write(tmp_path / "eng.dev", RAW_ENG)
    if "valid_raw" in kwargs:
        kwargs["valid_raw"] = _write(tmp_path / "eng.devset", ["a"])
        kwargs["valid_moses"] = _moses(kwargs["valid_raw"])
    with pytest.raises(ValueError) as err:
        nway.prepare_language(raw, _moses(raw), "eng", out_dir=tmp_path / "out", **kwargs)
    assert not isinstance(err.value, InputError)
    assert "heldout" in str(err.value)


def test_prepare_language_refuses_moses_lines_of_another_file(tmp_path):
    raw = _write(tmp_path / "eng.dev", RAW_ENG)
    short = _moses(_write(tmp_path / "other.dev", RAW_ENG[:7]))
    with pytest.raises(InputError, match=r"other\.dev\.lower: 7 lines, but .*eng\.dev has 10"):
        nway.prepare_language(raw, short, "eng", out_dir=tmp_path / "out", heldout=(0, 2))
    assert not (tmp_path / "out" / "tok" / "train.eng").exists()


# ---- build ------------------------------------------------------------------------------------------

LANGS = ["eng", "fra", "spa"]
TRAIN = {
    "eng": ["the cat sleeps", "a dog runs", "the house is big and old and far from here", "we eat bread",
            "", "the sun shines", "i see a bird"],
    "fra": ["le chat dort", "un chien court", "la maison est grande", "nous mangeons du pain",
            "il pleut", "le soleil brille", "je vois un oiseau"],
    "spa": ["el gato duerme", "un perro corre", "la casa es grande", "comemos pan",
            "llueve", "el sol brilla", "veo un pájaro"],
}
VALID = {
    "eng": ["the cat runs", "", "a very long validation sentence that is longer than the limit of words"],
    "fra": ["le chat court", "vide", "une phrase"],
    "spa": ["el gato corre", "vacío", "una frase"],
}
MAX_WORDS = 6


def _tok_dir(tmp_path: Path, train=TRAIN, valid=VALID) -> Path:
    d = tmp_path / "tok"
    for lang in LANGS:
        _write(d / f"train.{lang}", train[lang])
        _write(d / f"valid.{lang}", valid[lang])
    return d


def _unbpe(line: str) -> str:
    return (line + " ").replace("@@ ", "")[:-1] if line else line


def test_build_filter_bpe_dictionary(tmp_path):
    tok = _tok_dir(tmp_path)
    out = tmp_path / "bpe"
    stats = nway.build(tok, LANGS, out, merges=30, max_words=MAX_WORDS)
    kept_idx = [0, 1, 3, 5, 6]  # line 2 too long in eng, line 4 empty in eng
    assert stats["dropped_too_long"] == 1
    assert stats["dropped_empty"] == 1
    assert stats["kept"] == 5
    assert stats["train_lines"] == 7 and stats["valid_lines"] == 3
    assert json.loads((out / "stats.json").read_text()) == stats
    train_tokens: Counter = Counter()
    for lang in LANGS:
        train = _lines(out / f"train.{lang}")
        assert len(train) == 5
        assert [_unbpe(line) for line in train] == [TRAIN[lang][i] for i in kept_idx]
        for line in train:
            train_tokens.update(line.split())
        valid = (out / f"valid.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
        assert [_unbpe(line) for line in valid] == VALID[lang]  # every valid line, even empty / long
    # BPE actually split some words (30 merges are too few for the whole vocabulary)
    assert any(t.endswith("@@") for t in train_tokens)
    for name in ("codes", "vocab", "dict.txt"):
        assert (out / name).is_file()
    assert not (out / "kept").exists()

    d = Dictionary.load(out / "dict.txt")
    assert d.symbols[:len(SPECIALS)] == list(SPECIALS)
    loaded = dict(zip(d.symbols[len(SPECIALS):], d.counts[len(SPECIALS):]))
    assert loaded == dict(train_tokens)
    assert stats["dictionary"] == len(train_tokens)
    counts = d.counts[len(SPECIALS):]
    assert counts == sorted(counts, reverse=True)
    # a validation-only word is not in the training dictionary
    assert "validation" not in loaded


def test_build_no_max_words_keeps_long_lines(tmp_path):
    tok = _tok_dir(tmp_path)
    stats = nway.build(tok, LANGS, tmp_path / "bpe", merges=10, max_words=None)
    assert (stats["kept"], stats["dropped_too_long"], stats["dropped_empty"]) == (6, 0, 1)
    assert len(_lines(tmp_path / "bpe" / "train.fra")) == 6


def test_build_deterministic(tmp_path):
    tok = _tok_dir(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    nway.build(tok, LANGS, a, merges=30, max_words=MAX_WORDS)
    nway.build(tok, LANGS, b, merges=30, max_words=MAX_WORDS)
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    assert {"codes", "vocab", "dict.txt", "stats.json", "train.eng", "valid.spa"} <= set(names)
    data = list(names)  # stats.json included: it holds no timing
    for name in data:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert "learn_seconds" not in json.loads((a / "stats.json").read_text())["bpe"]
    # the same out_dir rebuilt: same bytes too
    before = {name: (a / name).read_bytes() for name in data}
    nway.build(tok, LANGS, a, merges=30, max_words=MAX_WORDS)
    assert {name: (a / name).read_bytes() for name in data} == before


def test_build_misaligned_valid(tmp_path):
    valid = dict(VALID, fra=VALID["fra"][:2])
    tok = _tok_dir(tmp_path, valid=valid)
    with pytest.raises(InputError) as err:
        nway.build(tok, LANGS, tmp_path / "bpe", merges=10, max_words=MAX_WORDS)
    msg = str(err.value)
    assert f"{tok / 'valid.fra'}: 2 lines" in msg
    assert f"{tok / 'valid.eng'}: 3 lines" in msg
    assert f"{tok / 'valid.spa'}: 3 lines" in msg


def test_build_misaligned_train(tmp_path):
    train = dict(TRAIN, spa=TRAIN["spa"] + ["extra"])
    tok = _tok_dir(tmp_path, train=train)
    with pytest.raises(InputError) as err:
        nway.build(tok, LANGS, tmp_path / "bpe", merges=10, max_words=MAX_WORDS)
    assert f"{tok / 'train.spa'}: 8 lines" in str(err.value)
    assert f"{tok / 'train.eng'}: 7 lines" in str(err.value)


def test_build_everything_filtered(tmp_path):
    train = {"eng": ["", "one two three four five six seven"], "fra": ["a", "b"], "spa": ["c", "d"]}
    tok = _tok_dir(tmp_path, train=train)
    out = tmp_path / "bpe"
    with pytest.raises(InputError) as err:
        nway.build(tok, LANGS, out, merges=10, max_words=MAX_WORDS)
    msg = str(err.value)
    assert str(tok) in msg
    assert "1 with an empty sentence" in msg and "1 over 6 words" in msg
    assert not (out / "dict.txt").exists() and not (out / "stats.json").exists()
