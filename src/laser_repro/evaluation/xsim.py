"""Similarity-search error (xsim) and the baselines every similarity table shows beside a model.

* :func:`xsim_error` -- nearest neighbour by cosine in both directions against the pivot (English),
  strict index match, as LASER's ``xsim`` and the Tatoeba evaluation (:mod:`laser_repro.evaluation.tatoeba`).
* :func:`tfidf_error` -- the same search with character n-gram TF-IDF vectors of the raw sentences:
  no learning at all, so a model that does not beat it has learned nothing a string match cannot see.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from laser_repro.evaluation.tatoeba import tatoeba_error

#: character n-grams (within word boundaries) of the TF-IDF baseline
TFIDF_NGRAMS = (1, 4)


def xsim_error(xx_emb: np.ndarray, en_emb: np.ndarray) -> dict:
    """Errors in both directions of row-aligned embeddings (see :func:`laser_repro.evaluation.tatoeba.tatoeba_error`)."""
    return tatoeba_error(xx_emb, en_emb)


def tfidf_vectors(xx_lines: Sequence[str], en_lines: Sequence[str]):
    """L2-normalised character n-gram TF-IDF rows of both sides, one vocabulary fitted on both."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=TFIDF_NGRAMS, sublinear_tf=True,
                                 lowercase=True, dtype=np.float32)
    matrix = vectorizer.fit_transform(list(xx_lines) + list(en_lines))
    return matrix[: len(xx_lines)], matrix[len(xx_lines):]


def _sparse_errors(queries, candidates) -> int:
    sims = (queries @ candidates.T).toarray()
    return int(np.sum(np.argmax(sims, axis=1) != np.arange(queries.shape[0])))


def tfidf_error(xx_lines: Sequence[str], en_lines: Sequence[str]) -> dict:
    """:func:`xsim_error` of the TF-IDF baseline on raw, row-aligned sentences."""
    if len(xx_lines) != len(en_lines):
        raise ValueError(f"sentences not aligned: {len(xx_lines)} vs {len(en_lines)}")
    n = len(xx_lines)
    if n == 0:
        raise ValueError("no sentences")
    xx, en = tfidf_vectors(xx_lines, en_lines)
    en_xx, xx_en = _sparse_errors(en, xx), _sparse_errors(xx, en)
    return {"test_sentences": n, "en_xx_errors": en_xx, "xx_en_errors": xx_en,
            "en_xx_error": 100.0 * en_xx / n, "xx_en_error": 100.0 * xx_en / n}
