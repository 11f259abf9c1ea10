"""The N-way similarity error (Schwenk & Douze 2017, Algorithm 1), its TF-IDF baseline, and that it is the
same search as the pivot xsim / Tatoeba error."""

import numpy as np
import pytest

from laser_repro.evaluation.xsim import mean_over, tfidf_error, tfidf_error_matrix
from laser_repro.models import similarity
from laser_repro.models.similarity import similarity_error_matrix, xsim_error


def test_identical_sentences_give_no_error():
    eye = np.eye(4, dtype=np.float32)
    m = similarity_error_matrix({"eng": eye, "fra": 2.0 * eye, "spa": eye + 0.01})
    assert m["sentences"] == 4 and m["languages"] == ["eng", "fra", "spa"]
    assert m["pairs"] == {k: 0.0 for k in ("eng-fra", "eng-spa", "fra-eng", "fra-spa", "spa-eng", "spa-fra")}
    assert m["mean"] == 0.0


def test_swapped_sentences_are_errors_in_both_directions_of_their_language_only():
    eye = np.eye(4, dtype=np.float32)
    swapped = eye[[0, 2, 1, 3]]  # sentences 1 and 2 of fra exchanged
    m = similarity_error_matrix({"eng": eye, "fra": swapped, "spa": eye})
    assert m["pairs"] == {"eng-fra": 50.0, "eng-spa": 0.0, "fra-eng": 50.0, "fra-spa": 50.0,
                          "spa-eng": 0.0, "spa-fra": 50.0}
    assert m["mean"] == pytest.approx(200.0 / 6)


def test_an_error_in_one_direction_only():
    # fra sentence 2 is nearer to sentence 3 of the others (cos 0.996 vs 0.647): an error when fra queries;
    # queried from eng/spa, sentence 2's nearest fra sentence is still fra 2 (0.647 vs 0.537)
    en = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=np.float32)
    fr = np.array([[2, 0, 0], [0, 3, 0], [1, 1, 1.2], [1, 1, 0.9]], dtype=np.float32)
    m = similarity_error_matrix({"eng": en, "fra": fr, "spa": en.copy()})
    assert m["pairs"] == {"eng-fra": 0.0, "eng-spa": 0.0, "fra-eng": 25.0, "fra-spa": 25.0,
                          "spa-eng": 0.0, "spa-fra": 0.0}


def _noisy(n_langs=4, n=60, dim=8, noise=0.9, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, dim))
    langs = ["eng", "deu", "rus", "cmn"][:n_langs]
    return {lang: (base + rng.normal(scale=noise, size=base.shape)).astype(np.float32) for lang in langs}


def test_matrix_is_the_pivot_xsim_in_both_directions():
    emb = _noisy()
    m = similarity_error_matrix(emb)
    nonzero = 0
    for xx in ("deu", "rus", "cmn"):
        err = xsim_error(emb[xx], emb["eng"])
        assert m["pairs"][f"eng-{xx}"] == err["en_xx_error"]
        assert m["pairs"][f"{xx}-eng"] == err["xx_en_error"]
        assert err == similarity.tatoeba_error(emb[xx], emb["eng"])
        nonzero += err["en_xx_errors"] + err["xx_en_errors"]
    assert nonzero > 0  # the noise makes errors: the equality is not 0 == 0
    assert len(m["pairs"]) == 12 and m["mean"] == pytest.approx(np.mean(list(m["pairs"].values())))


def test_each_language_is_normalised_once(monkeypatch):
    calls = []
    normalize_rows = similarity.normalize_rows

    def counting(x):
        calls.append(1)
        return normalize_rows(x)

    monkeypatch.setattr(similarity, "normalize_rows", counting)
    similarity_error_matrix(_noisy())
    assert len(calls) == 4


def test_normalized_search_is_the_same_search():
    emb = _noisy(seed=3)
    q, c = emb["deu"], emb["eng"]
    assert similarity.retrieval_errors(similarity.normalize_rows(q), similarity.normalize_rows(c), normalized=True) \
        == similarity.retrieval_errors(q, c)


def test_languages_choose_and_order_the_pairs():
    emb = _noisy()
    full = similarity_error_matrix(emb)
    sub = similarity_error_matrix(emb, ["rus", "eng"])
    assert sub["languages"] == ["rus", "eng"] and list(sub["pairs"]) == ["rus-eng", "eng-rus"]
    assert sub["pairs"] == {k: full["pairs"][k] for k in sub["pairs"]}
    with pytest.raises(KeyError, match="fra"):
        similarity_error_matrix(emb, ["eng", "fra"])
    with pytest.raises(ValueError, match="at least 2"):
        similarity_error_matrix(emb, ["eng"])
    with pytest.raises(ValueError, match="one shape"):
        similarity_error_matrix({"eng": emb["eng"], "deu": emb["deu"][:10]})


def test_mean_over_a_subset_of_the_languages():
    m = similarity_error_matrix(_noisy())
    assert mean_over(m, ["eng", "deu", "rus", "cmn"]) == pytest.approx(m["mean"])
    assert mean_over(m, ["deu", "eng"]) == pytest.approx((m["pairs"]["eng-deu"] + m["pairs"]["deu-eng"]) / 2)
    three = ["eng", "deu", "rus"]
    assert mean_over(m, three) == pytest.approx(
        np.mean([m["pairs"][f"{p}-{q}"] for p in three for q in three if p != q]))
    with pytest.raises(KeyError, match="eng-fra"):
        mean_over(m, ["eng", "fra"])  # no encoder for fra


def test_tfidf_matrix_on_tiny_text():
    eng = ["the cat sleeps on the mat", "a dog barks at night", "rain falls in spring", "numbers 1234 and 5678"]
    near = ["the cat sleepz on the mat", "a dog barkz at nite", "rain fallz in spring", "numbers 1234 und 5678"]
    cipher = ["ж щ ю", "ф ы в", "п р о", "л д э"]  # no character in common: all ties, index 0 wins
    m = tfidf_error_matrix({"eng": eng, "deu": near, "rus": cipher})
    assert m["sentences"] == 4
    assert m["pairs"]["eng-deu"] == 0.0 and m["pairs"]["deu-eng"] == 0.0
    assert m["pairs"]["rus-eng"] == 75.0 and m["pairs"]["rus-deu"] == 75.0
    # two languages: the same vocabulary as the pivot baseline, so the same numbers
    two = tfidf_error_matrix({"deu": near, "eng": eng})
    err = tfidf_error(near, eng)
    assert (two["pairs"]["eng-deu"], two["pairs"]["deu-eng"]) == (err["en_xx_error"], err["xx_en_error"])
    with pytest.raises(ValueError, match="not aligned"):
        tfidf_error_matrix({"eng": eng, "deu": near[:3]})
