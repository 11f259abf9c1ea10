"""The Tatoeba error (laser_repro.models.similarity.tatoeba_error): hand-built embeddings, blocks, shapes."""
import numpy as np
import pytest

from laser_repro.models import similarity


def test_hand_built_embeddings_error_counts():
    # 4 aligned sentences; x[2] is closest to y[3], so xx->en makes one error.
    # en->xx: y0->x0, y1->x1, y2 (0,0,1) is equidistant-ish? we make it exact below.
    en = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=np.float32)
    xx = np.array([[2, 0, 0], [0, 3, 0], [1, 1, 1.2], [1, 1, 0.9]], dtype=np.float32)
    # cos(xx2, en3) = 3.2/(sqrt(3.44)*sqrt(3)) = 0.996 > cos(xx2, en2) = 1.2/sqrt(3.44) = 0.647 -> error
    # cos(xx3, en3) = 2.9/(sqrt(2.81)*sqrt(3)) = 0.9988 -> correct
    # en->xx: en2 (0,0,1): xx2 gives 0.647, xx3 gives 0.537 -> correct; en3: xx2 0.996 vs xx3 0.9988 -> correct
    result = similarity.tatoeba_error(xx, en)
    assert result["test_sentences"] == 4
    assert result["xx_en_errors"] == 1
    assert result["en_xx_errors"] == 0
    assert result["xx_en_error"] == pytest.approx(25.0)
    assert result["en_xx_error"] == pytest.approx(0.0)


def test_scale_invariance_and_permutation():
    rng = np.random.default_rng(0)
    en = rng.normal(size=(50, 16)).astype(np.float32)
    assert similarity.tatoeba_error(en * 3.0, en)["xx_en_errors"] == 0
    shuffled = en[::-1].copy()
    result = similarity.tatoeba_error(shuffled, en)
    assert result["xx_en_errors"] == 50 and result["en_xx_errors"] == 50


def test_blocks_give_same_neighbours(monkeypatch):
    rng = np.random.default_rng(1)
    q, c = rng.normal(size=(37, 8)), rng.normal(size=(41, 8))
    full = similarity.nearest_neighbours(q, c)
    monkeypatch.setattr(similarity, "_BLOCK_ROWS", 5)
    assert (similarity.nearest_neighbours(q, c) == full).all()
    expected = np.argmax((q / np.linalg.norm(q, axis=1, keepdims=True)) @ (c / np.linalg.norm(c, axis=1, keepdims=True)).T, axis=1)
    assert (full == expected).all()


def test_misaligned_shapes_rejected():
    with pytest.raises(ValueError, match="not aligned"):
        similarity.tatoeba_error(np.zeros((3, 4)), np.zeros((2, 4)))
