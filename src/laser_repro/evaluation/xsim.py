"""The N-way similarity error's means and the baselines every similarity table shows beside a model.

* :func:`mean_over` -- the mean of a :func:`laser_repro.models.similarity.similarity_error_matrix` (Schwenk &
  Douze 2017, Algorithm 1) over a subset of the languages; :func:`matrix_languages` -- its languages.
* :func:`tfidf_error` / :func:`tfidf_error_matrix` -- the similarity error of
  :func:`laser_repro.models.similarity.xsim_error` / ``similarity_error_matrix`` with character n-gram
  TF-IDF vectors of the raw sentences: no learning at all, so a model that does not beat it has learned
  nothing a string match cannot see.

All of them count errors with one nearest-neighbour search,
:func:`laser_repro.models.similarity.retrieval_errors` (ties: the lowest index wins).
"""

from __future__ import annotations

from itertools import permutations
from typing import Mapping, Sequence

import numpy as np

from laser_repro.models.similarity import check_languages, error_matrix, pair_key, retrieval_errors

#: character n-grams (within word boundaries) of the TF-IDF baseline
TFIDF_NGRAMS = (1, 4)


def matrix_languages(result: Mapping) -> list[str]:
    """The languages of a ``similarity_error_matrix`` result (from its pairs, in first-seen order)."""
    if result.get("languages"):
        return list(result["languages"])
    return list(dict.fromkeys(lang for key in result["pairs"] for lang in key.split("-", 1)))


def mean_over(result: Mapping, languages: Sequence[str]) -> float:
    """Mean error (%) over the ordered pairs p != q among ``languages`` of a ``similarity_error_matrix``
    result (Table 1's columns: the mean over a subset of the languages). KeyError when a pair is missing
    (the model has no encoder for one of the languages)."""
    languages = list(languages)
    if len(set(languages)) != len(languages) or len(languages) < 2:
        raise ValueError(f"need at least 2 distinct languages, got {languages}")
    keys = [pair_key(p, q) for p, q in permutations(languages, 2)]
    missing = [k for k in keys if k not in result["pairs"]]
    if missing:
        raise KeyError(f"no similarity error for the pairs {missing}")
    return float(np.mean([result["pairs"][k] for k in keys]))


# ---- TF-IDF baseline ------------------------------------------------------------------------------------
def tfidf_fit(groups: Sequence[Sequence[str]]) -> list:
    """L2-normalised character n-gram TF-IDF rows of every group of lines, one vocabulary fitted on all."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=TFIDF_NGRAMS, sublinear_tf=True,
                                 lowercase=True, dtype=np.float32)
    matrix = vectorizer.fit_transform([line for group in groups for line in group]).tocsr()
    out, start = [], 0
    for group in groups:
        out.append(matrix[start:start + len(group)])
        start += len(group)
    return out


def tfidf_vectors(xx_lines: Sequence[str], en_lines: Sequence[str]):
    """L2-normalised character n-gram TF-IDF rows of both sides, one vocabulary fitted on both."""
    xx, en = tfidf_fit([list(xx_lines), list(en_lines)])
    return xx, en


def tfidf_error(xx_lines: Sequence[str], en_lines: Sequence[str]) -> dict:
    """``xsim_error`` of the TF-IDF baseline on raw, row-aligned sentences."""
    if len(xx_lines) != len(en_lines):
        raise ValueError(f"sentences not aligned: {len(xx_lines)} vs {len(en_lines)}")
    n = len(xx_lines)
    if n == 0:
        raise ValueError("no sentences")
    xx, en = tfidf_vectors(xx_lines, en_lines)
    en_xx, xx_en = retrieval_errors(en, xx, normalized=True), retrieval_errors(xx, en, normalized=True)
    return {"test_sentences": n, "en_xx_errors": en_xx, "xx_en_errors": xx_en,
            "en_xx_error": 100.0 * en_xx / n, "xx_en_error": 100.0 * xx_en / n}


def tfidf_error_matrix(lines: Mapping[str, Sequence[str]], languages: Sequence[str] | None = None) -> dict:
    """``similarity_error_matrix`` of the TF-IDF baseline on raw, row-aligned sentences
    (``lines``: language -> its S lines), one vocabulary fitted on the lines of all the languages
    (as :func:`tfidf_vectors` does for two)."""
    languages = check_languages(list(lines), languages)
    sizes = {lang: len(lines[lang]) for lang in languages}
    if len(set(sizes.values())) != 1:
        raise ValueError(f"sentences not aligned: {sizes}")
    n = sizes[languages[0]]
    if n == 0:
        raise ValueError("no sentences")
    vectors = dict(zip(languages, tfidf_fit([list(lines[lang]) for lang in languages])))
    return error_matrix(vectors, languages, n)
