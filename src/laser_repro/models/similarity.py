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


def nearest_normalized(queries, candidates) -> np.ndarray:
    """:func:`nearest_neighbours` of rows that are already L2-normalised (dense arrays or scipy sparse
    matrices, e.g. TF-IDF rows): the dot product is the cosine. The one nearest-neighbour search of
    every similarity error (Tatoeba, xsim, the N-way matrix of :mod:`laser_repro.evaluation.xsim`,
    the TF-IDF baseline)."""
    best = np.empty(queries.shape[0], dtype=np.int64)
    for start in range(0, queries.shape[0], _BLOCK_ROWS):
        sims = queries[start:start + _BLOCK_ROWS] @ candidates.T
        if hasattr(sims, "toarray"):  # sparse rows
            sims = sims.toarray()
        best[start:start + _BLOCK_ROWS] = np.argmax(sims, axis=1)
    return best


def nearest_neighbours(queries: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Index of the most cosine-similar candidate for every query (ties: lowest index)."""
    return nearest_normalized(normalize_rows(queries), normalize_rows(candidates))


def retrieval_errors(queries: np.ndarray, candidates: np.ndarray, *, normalized: bool = False) -> int:
    """Queries whose nearest candidate is not the aligned one (row i <-> row i). ``normalized``: the
    rows are already L2-normalised (see :func:`nearest_normalized`), so none is normalised again."""
    nearest = nearest_normalized(queries, candidates) if normalized else nearest_neighbours(queries, candidates)
    return int(np.sum(nearest != np.arange(queries.shape[0])))


def tatoeba_error(xx_emb: np.ndarray, en_emb: np.ndarray) -> dict:
    """Error rates (%) in both directions for one language; embeddings are row-aligned."""
    if xx_emb.shape != en_emb.shape:
        raise ValueError(f"Tatoeba embeddings not aligned: xx {xx_emb.shape} vs eng {en_emb.shape}")
    n = len(xx_emb)
    if n == 0:
        raise ValueError("Tatoeba test set is empty")
    xx, en = normalize_rows(xx_emb), normalize_rows(en_emb)  # once for both directions
    en_xx = retrieval_errors(en, xx, normalized=True)
    xx_en = retrieval_errors(xx, en, normalized=True)
    return {
        "test_sentences": n,
        "en_xx_errors": en_xx,
        "xx_en_errors": xx_en,
        "en_xx_error": 100.0 * en_xx / n,
        "xx_en_error": 100.0 * xx_en / n,
    }
