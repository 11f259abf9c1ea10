"""xx -> eng retrieval of any family's encoder, and of TF-IDF (laser_repro.evaluation.retrieval)."""
from __future__ import annotations

import json

import pytest

from laser_repro.cli import main
from laser_repro.evaluation.retrieval import retrieval_errors


def _write(path, lines):
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def test_tfidf_retrieval_counts_misses(tmp_path):
    eng = _write(tmp_path / "eng", ["the red house", "a blue car", "green trees grow"])
    fra = _write(tmp_path / "fra", ["the red house", "a blue car", "green trees grow"])  # identical: no miss
    xxx = _write(tmp_path / "xxx", ["a blue car", "the red house", "green trees grow"])  # two swapped: 2 misses
    got = retrieval_errors(["fra", "xxx"], [fra, xxx], [eng, eng])
    assert got == {"fra": {"error": 0.0, "en_xx_error": 0.0, "n": 3},
                   "xxx": {"error": pytest.approx(200 / 3), "en_xx_error": pytest.approx(200 / 3), "n": 3}}
    out = tmp_path / "out.json"
    assert main(["retrieval", "--task", "un", "--tfidf", "--langs", "xxx", "--xx", str(xxx), "--eng", str(eng),
                 "--output", str(out)]) in (0, None)
    data = json.loads(out.read_text())
    assert data["task"] == "un" and data["direction"] == "xx->eng" and data["results"]["xxx"]["n"] == 3


def test_misaligned_test_set_is_named(tmp_path):
    eng = _write(tmp_path / "eng", ["a", "b"])
    fra = _write(tmp_path / "fra", ["a"])
    with pytest.raises(ValueError, match="fra \\(1 lines\\) and .*eng \\(2 lines\\)"):
        retrieval_errors(["fra"], [fra], [eng])
