"""FLORES xsim: the held-out split, the TF-IDF baseline, the table, the learning-curve file and figure."""

import json

import numpy as np
import pytest

from laser_repro.data import corpora
from laser_repro.evaluation import flores
from laser_repro.evaluation.curves import plot_curves
from laser_repro.evaluation.xsim import tfidf_error
from laser_repro.models.laser import curves
from laser_repro.models.similarity import xsim_error


def test_split_line_numbers_are_disjoint_seeded_and_the_same_for_every_file():
    a = flores.split_line_numbers(997, [797, 997], 200, seed=1)
    assert a["heldout"] == list(range(797, 997))
    assert len(a["sample"]) == 200 and len(set(a["sample"])) == 200 and max(a["sample"]) < 797
    assert a == flores.split_line_numbers(997, [797, 997], 200, seed=1)
    assert a["sample"] != flores.split_line_numbers(997, [797, 997], 200, seed=2)["sample"]
    with pytest.raises(ValueError, match="do not fit"):
        flores.split_line_numbers(500, [797, 997], 200, seed=1)


def test_select_lines_writes_the_chosen_lines(tmp_path):
    raw = tmp_path / "x.dev"
    raw.write_text("".join(f"line {i}\n" for i in range(20)), encoding="utf-8")
    out = {s: tmp_path / f"{s}.x" for s in flores.SPLITS}
    counts = flores.select_lines(raw, out, heldout=[15, 20], sample_size=5, seed=3)
    assert counts == {"heldout": 5, "sample": 5}
    assert out["heldout"].read_text().splitlines() == [f"line {i}" for i in range(15, 20)]
    numbers = flores.split_line_numbers(20, [15, 20], 5, 3)["sample"]
    assert out["sample"].read_text().splitlines() == [f"line {i}" for i in numbers]
    with pytest.raises(ValueError, match=r"x\.dev: held-out lines \[15, 30\) do not fit a file of 20 lines"):
        flores.select_lines(raw, out, heldout=[15, 30], sample_size=5, seed=3)


def test_nway_extraction_skips_the_heldout_lines(tmp_path):
    src, tgt = tmp_path / "a.dev", tmp_path / "b.dev"
    src.write_text("".join(f"a{i}\n" for i in range(10)))
    tgt.write_text("".join(f"b{i}\n" for i in range(10)))
    stats = corpora.extract_nway_pair(src, tgt, tmp_path / "o.a", tmp_path / "o.b", skip_lines=(3, 6),
                                      progress=False)
    assert (tmp_path / "o.a").read_text().split() == ["a0", "a1", "a2", "a6", "a7", "a8", "a9"]
    assert (tmp_path / "o.b").read_text().split() == ["b0", "b1", "b2", "b6", "b7", "b8", "b9"]
    assert stats["heldout"] == 3 and stats["written"] == 7


def test_tfidf_baseline_finds_string_matches_and_fails_without_them():
    en = ["the cat sleeps on the mat", "a dog barks at night", "rain falls in spring", "numbers 1234 and 5678"]
    near = ["the cat sleepz on the mat", "a dog barkz at nite", "rain fallz in spring", "numbers 1234 und 5678"]
    assert tfidf_error(near, en) == {"test_sentences": 4, "en_xx_errors": 0, "xx_en_errors": 0,
                                     "en_xx_error": 0.0, "xx_en_error": 0.0}
    cipher = ["ж щ ю", "ф ы в", "п р о", "л д э"]  # no character in common: everything ties, index 0 wins
    assert tfidf_error(cipher, en)["xx_en_errors"] == 3
    with pytest.raises(ValueError, match="not aligned"):
        tfidf_error(near[:3], en)


def test_xsim_error_counts_both_directions():
    en = np.eye(3, dtype=np.float32)
    xx = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=np.float32)  # rows 1 and 2 swapped
    err = xsim_error(xx, en)
    assert (err["en_xx_errors"], err["xx_en_errors"]) == (2, 2)


def test_table_shows_baselines_beside_ours_with_group_averages(tmp_path):
    def block(values):
        return {split: {lang: {"en_xx": v, "xx_en": v + 1, "sentences": 200} for lang, v in values.items()}
                for split in flores.SPLITS}

    scores = {"model": block({"deu": 10.0, "rus": 20.0, "fin": 50.0}), "init": block({"deu": 90.0, "rus": 95.0,
                                                                                      "fin": 91.0})}
    tfidf = block({"deu": 22.0, "rus": 80.0, "fin": 40.0})
    rows = flores.table_rows(scores, tfidf, trained={"deu", "rus", "eng"})
    assert [r["trained"] for r in rows] == ["yes", "yes", "zero-shot"]
    from laser_repro.reporting.tables import write_flores_table

    write_flores_table(rows, tmp_path / "t.md", tmp_path / "t.csv", run_name="r", heldout=[797, 997], sample_size=200)
    md = (tmp_path / "t.md").read_text()
    assert "| deu | German | Latn | yes | 10.0 / 11.0 | 22.0 / 23.0 | 90.0 / 91.0 |" in md
    assert "trained languages (2) |  |  | 15.0 / 16.0 | 51.0 / 52.0 | 92.5 / 93.5" in md
    assert "trained, Latin script (1)" in md and "zero-shot languages (1)" in md
    assert "FLORES dev lines 797–996" in md


def test_curves_truncate_on_resume_and_plot(tmp_path):
    path = tmp_path / curves.CURVES_FILE
    rows = [{"update": u, "epoch": 1 + u // 20, "end_of_epoch": u in (20, 40), "train_loss": 10 - u / 10,
             "heldout_loss": 11 - u / 20, "xsim": {"deu": {"en_xx": 90 - u, "xx_en": 91 - u}}} for u in (0, 10, 20, 30, 40)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    curves.truncate_curves(path, 25)
    assert [r["update"] for r in curves.read_curves(path)] == [0, 10, 20]
    png = tmp_path / "c.png"
    plot_curves(rows, png, title="t", baselines={"TF-IDF": {"deu": 22.0}})
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000
    path.write_text("{not json\n")
    with pytest.raises(ValueError, match=r"curves.jsonl:1"):
        curves.read_curves(path)
    with pytest.raises(ValueError, match="no learning-curve"):
        plot_curves([], png, title="t")
