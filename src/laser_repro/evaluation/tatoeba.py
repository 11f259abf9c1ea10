"""Tatoeba similarity search (paper Section 4.4, Table 1).

Line i of tatoeba.<xx>-eng.<xx> translates line i of tatoeba.<xx>-eng.eng. For every sentence we
retrieve its nearest neighbour by cosine similarity in the other language; an error is counted when
the retrieved index is not the aligned one (strict index match, as LASER's evaluation).

Directions: `en_xx` queries with the English sentences and searches among the xx sentences,
`xx_en` queries with the xx sentences and searches among the English ones.
"""
from __future__ import annotations

import numpy as np

# Rows of the similarity matrix computed at once; bounds memory to block x N floats.
_BLOCK_ROWS = 4096


def normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def nearest_neighbours(queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Index of the most cosine-similar candidate for every query (ties: lowest index)."""
    q, c = normalize_rows(queries), normalize_rows(candidates)
    best = np.empty(len(q), dtype=np.int64)
    for start in range(0, len(q), _BLOCK_ROWS):
        best[start:start + _BLOCK_ROWS] = np.argmax(q[start:start + _BLOCK_ROWS] @ c.T, axis=1)
    return best


def retrieval_errors(queries: np.ndarray, candidates: np.ndarray) -> int:
    """Queries whose nearest candidate is not the aligned one (row i <-> row i)."""
    return int(np.sum(nearest_neighbours(queries, candidates) != np.arange(len(queries))))


def tatoeba_error(xx_emb: np.ndarray, en_emb: np.ndarray) -> dict:
    """Error rates (%) in both directions for one language; embeddings are row-aligned."""
    if xx_emb.shape != en_emb.shape:
        raise ValueError(f"Tatoeba embeddings not aligned: xx {xx_emb.shape} vs eng {en_emb.shape}")
    n = len(xx_emb)
    if n == 0:
        raise ValueError("Tatoeba test set is empty")
    en_xx = retrieval_errors(en_emb, xx_emb)
    xx_en = retrieval_errors(xx_emb, en_emb)
    return {
        "test_sentences": n,
        "en_xx_errors": en_xx,
        "xx_en_errors": xx_en,
        "en_xx_error": 100.0 * en_xx / n,
        "xx_en_error": 100.0 * xx_en / n,
    }
