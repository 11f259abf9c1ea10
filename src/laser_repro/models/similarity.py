"""The similarity-search error of row-aligned sentence embeddings, with one nearest-neighbour search
(:func:`retrieval_errors`; ties: the lowest index wins): the trainers' validation metric (multienc, LaBSE,
Bi-Sent2Vec: :func:`similarity_error_matrix`; LASER's learning curves: :func:`xsim_error`) and the
evaluation's Tatoeba, xsim and N-way errors (laser_repro.evaluation; the TF-IDF baseline of
:mod:`laser_repro.evaluation.xsim` counts with the same search).

Line i of one language translates line i of the other. For every sentence we retrieve its nearest
neighbour by cosine similarity in the other language; an error is counted when the retrieved index is
not the aligned one (strict index match, as LASER's evaluation).

* :func:`tatoeba_error` / :func:`xsim_error` -- both directions against the pivot (English), as LASER's
  ``xsim`` and the Tatoeba evaluation (paper Section 4.4, Table 1): `en_xx` queries with the English
  sentences and searches among the xx sentences, `xx_en` queries with the xx sentences and searches
  among the English ones.
* :func:`similarity_error_matrix` -- the same search for every ordered pair of N row-aligned languages
  (Schwenk & Douze 2017, Algorithm 1).
"""
from __future__ import annotations

from itertools import permutations
from typing import Mapping, Sequence

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
    every similarity error (Tatoeba, xsim, the N-way matrix, the TF-IDF baseline)."""
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


def xsim_error(xx_emb: np.ndarray, en_emb: np.ndarray) -> dict:
    """Errors in both directions of row-aligned embeddings (see :func:`tatoeba_error`)."""
    return tatoeba_error(xx_emb, en_emb)


# ---- N-way similarity error (Schwenk & Douze 2017, Algorithm 1) ----------------------------------------
def pair_key(query: str, searched: str) -> str:
    """Key of one ordered pair in :func:`similarity_error_matrix`'s ``pairs``: ``"eng-fra"`` = the English
    sentences are the queries, searched among the French ones."""
    return f"{query}-{searched}"


def error_matrix(vectors: Mapping[str, object], languages: Sequence[str], n: int) -> dict:
    """The matrix of L2-normalised, row-aligned vectors (dense or sparse), ``n`` rows each."""
    pairs = {pair_key(p, q): 100.0 * retrieval_errors(vectors[p], vectors[q], normalized=True) / n
             for p, q in permutations(languages, 2)}
    return {"sentences": n, "languages": list(languages), "pairs": pairs,
            "mean": float(np.mean(list(pairs.values())))}


def check_languages(available: Sequence[str], languages: Sequence[str] | None) -> list[str]:
    """The languages of a matrix (default: all ``available``), each available, none twice, at least 2."""
    languages = list(available if languages is None else languages)
    missing = [lang for lang in languages if lang not in available]
    if missing:
        raise KeyError(f"no sentences for {missing} (have {list(available)})")
    if len(set(languages)) != len(languages):
        raise ValueError(f"languages repeated: {languages}")
    if len(languages) < 2:
        raise ValueError(f"a similarity error needs at least 2 languages, got {languages}")
    return languages


def similarity_error_matrix(embeddings: Mapping[str, np.ndarray], languages: Sequence[str] | None = None) -> dict:
    """Similarity error (%) of every ordered language pair of row-aligned sentence embeddings.

    Schwenk & Douze (2017), Algorithm 1: for each ordered pair (p, q), p != q, and each sentence i of
    language p, the nearest neighbour by cosine among all S sentences of q; an error when it is not
    sentence i. ``embeddings``: language -> (S, dim) array, row i of every language the same sentence;
    ``languages``: which of them, in which order (default: all, in the mapping's order). Each language's
    rows are normalised once, not once per pair.

    Returns ``{"sentences": S, "languages": [...], "pairs": {"p-q": error %, ...}, "mean": mean over the
    ordered pairs}``; ``"p-q"`` queries with p and searches among q (:func:`pair_key`). With p = xx and
    q = eng these are exactly :func:`xsim_error`'s ``xx_en_error`` (and ``"eng-xx"`` its ``en_xx_error``).

    The mean is over the n(n-1) *ordered* pairs p != q. The paper's Table 1 prints "#pairs: 6, 10, 15, 21"
    (= n(n+1)/2) for 3-6 languages, but its footnotes enumerate the ordered pairs (6 for efs, 12 for efsr:
    En-Es ... Ru-Fr) and its Table 4 "All" is the mean over the ordered off-diagonal pairs (whose means
    over the subsets efs, efsr, efsra give Table 1's efsrz-all BiLSTM row); the two readings agree at
    n = 3 (6 pairs) and we average over the ordered pairs p != q.
    """
    languages = check_languages(list(embeddings), languages)
    shapes = {lang: np.shape(embeddings[lang]) for lang in languages}
    if any(len(s) != 2 for s in shapes.values()) or len(set(shapes.values())) != 1:
        raise ValueError(f"embeddings are not row-aligned matrices of one shape: {shapes}")
    n = shapes[languages[0]][0]
    if n == 0:
        raise ValueError("no sentences")
    return error_matrix({lang: normalize_rows(embeddings[lang]) for lang in languages}, languages, n)
