"""One copy of each sentence pair of a direction (laser_repro.data.dedup, ``laser-repro pair-dedup`` and
``bpe-apply --keep``)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from laser_repro.core.textio import InputError
from laser_repro.data.dedup import keep_mask, kept_lines, read_keep_mask, write_keep_mask


def test_the_first_copy_of_each_pair_is_kept():
    src = ["a b", "c", "a b", "a b", "d", "c"]
    tgt = ["x", "y", "x", "z", "w", "y"]
    mask, stats = keep_mask(src, tgt)
    assert mask.tolist() == [True, True, False, True, True, False]  # ("a b", "z") is another pair
    assert stats == {"pairs": 6, "kept": 4, "dropped_duplicate": 2}
    assert list(kept_lines(src, mask)) == ["a b", "c", "a b", "d"]
    assert list(kept_lines(tgt, mask)) == ["x", "y", "z", "w"]


def test_a_tab_inside_a_side_does_not_make_two_pairs_equal():
    mask, _ = keep_mask(["a\tb", "a"], ["c", "b\tc"])
    assert mask.tolist() == [True, True]


def test_misaligned_sides_and_a_stale_mask_are_errors(tmp_path):
    with pytest.raises(InputError, match="tgt.txt: ends at line 2"):
        keep_mask(["a", "b"], ["x"], names=("src.txt", "tgt.txt"))
    mask = np.array([True, False])
    with pytest.raises(InputError, match="more lines than its keep mask"):
        list(kept_lines(["a", "b", "c"], mask))
    with pytest.raises(InputError, match="1 lines but its keep mask has 2"):
        list(kept_lines(["a"], mask))


def test_cli_round_trip(tmp_path):
    (tmp_path / "s").write_text("a\nb\na\n", encoding="utf-8")
    (tmp_path / "t").write_text("x\ny\nx\n", encoding="utf-8")
    (tmp_path / "codes").write_text("q z 1\n", encoding="utf-8")  # a merge these words never use
    run = lambda *args: subprocess.run([sys.executable, "-m", "laser_repro.cli", *args], check=True,  # noqa: E731
                                       capture_output=True, text=True)
    run("pair-dedup", "--src-inputs", str(tmp_path / "s"), "--tgt-inputs", str(tmp_path / "t"),
        "--keep", str(tmp_path / "keep.npy"), "--stats", str(tmp_path / "keep.json"))
    assert read_keep_mask(tmp_path / "keep.npy").tolist() == [True, True, False]
    assert json.loads((tmp_path / "keep.json").read_text())["dropped_duplicate"] == 1
    run("bpe-apply", "--codes", str(tmp_path / "codes"), "--output", str(tmp_path / "out"),
        "--inputs", str(tmp_path / "s"), "--keep", str(tmp_path / "keep.npy"))
    assert (tmp_path / "out").read_text(encoding="utf-8") == "a\nb\n"


def test_a_mask_of_another_type_is_refused(tmp_path):
    np.save(tmp_path / "m.npy", np.array([1, 0]))
    with pytest.raises(InputError, match="not a keep mask"):
        read_keep_mask(tmp_path / "m.npy")
    write_keep_mask(np.array([True]), {"pairs": 1}, tmp_path / "ok.npy", tmp_path / "ok.json")
    assert read_keep_mask(tmp_path / "ok.npy").tolist() == [True]
