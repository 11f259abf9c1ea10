"""A language pair with no sentences (an absent OPUS pair, everything filtered) after extraction:
binarization says so, and the trainer leaves the pair out instead of crashing in fairseq."""

import logging
import struct

import pytest

from laser_repro.models.laser import fairseq_bridge


def _write_idx(path, sentences: int) -> None:
    """The header of a fairseq mmap index (.idx): magic, version, dtype code, sentence count."""
    path.write_bytes(fairseq_bridge._MMAP_INDEX_MAGIC + struct.pack("<Q", 1) + struct.pack("<B", 4)
                     + struct.pack("<Q", sentences) + struct.pack("<Q", sentences))


def _binarized(data, pair: str, sentences: int) -> None:
    src, tgt = pair.split("-")
    for lang in (src, tgt):
        _write_idx(data / f"train.{pair}.{lang}.idx", sentences)
        (data / f"train.{pair}.{lang}.bin").write_bytes(b"\x01\x00" * sentences)


def test_nonempty_pairs_drops_empty_ones_with_a_warning(tmp_path, caplog):
    _binarized(tmp_path, "deu-eng", 5)
    _binarized(tmp_path, "kzj-eng", 0)
    _binarized(tmp_path, "fra-spa", 3)
    pairs = ["deu-eng", "kzj-eng", "fra-spa", "eng-eng", "ita-eng"]  # eng-eng: skipped by the task; ita: not binarized
    with caplog.at_level(logging.WARNING):
        kept, dropped = fairseq_bridge.nonempty_pairs(tmp_path, pairs)
    assert kept == ["deu-eng", "fra-spa", "eng-eng", "ita-eng"]  # a missing pair is left to the task's error
    assert dropped == ["kzj-eng"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("kzj-eng" in m and "train.kzj-eng.kzj.idx" in m for m in warned), warned
    # tuples as well; nothing dropped: no warning
    caplog.clear()
    assert fairseq_bridge.nonempty_pairs(tmp_path, [("deu", "eng")]) == ([("deu", "eng")], [])
    assert not caplog.records


def test_nonempty_pairs_fails_when_nothing_is_left(tmp_path):
    _binarized(tmp_path, "kzj-eng", 0)
    _binarized(tmp_path, "abc-eng", 0)
    with pytest.raises(ValueError, match=r"(?s)no training pair has sentences.*kzj-eng.*abc-eng.*stats\.json"):
        fairseq_bridge.nonempty_pairs(tmp_path, "kzj-eng,abc-eng,eng-eng")


def test_binarizing_an_empty_pair_warns_and_writes_a_readable_index(tmp_path, caplog):
    pytest.importorskip("fairseq")
    (tmp_path / "dict.txt").write_text("a 10\nb 10\n", encoding="utf-8")
    (tmp_path / "t.kzj").write_bytes(b"")
    (tmp_path / "t.eng").write_bytes(b"")
    with caplog.at_level(logging.WARNING):
        fairseq_bridge.binarize_pair("kzj", "eng", tmp_path / "t", tmp_path / "dict.txt", tmp_path / "data")
    assert fairseq_bridge.binarized_sentences(tmp_path / "data" / "train.kzj-eng.kzj.idx") == 0
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("kzj-eng" in m and "no sentences" in m and str(tmp_path / "t.kzj") in m for m in warned), warned
