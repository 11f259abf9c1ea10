"""MUSE Europarl sentence translation (laser_repro.evaluation.europarl) on tiny corpora."""
from __future__ import annotations

import json
import math
import sys
import types

import numpy as np
import pytest

from laser_repro.cli import main
from laser_repro.evaluation.europarl import (
    bow_idf_embedder, compute_idf, encoder_embedder, europarl_members, europarl_split, europarl_url, load_europarl,
    muse_sides, sentence_embedder, sentence_retrieval, sentence_retrieval_methods, tfidf_sentence_retrieval)


def _write(path, lines):
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def _muse_load(src_lines, tgt_lines, seed=1234):
    """MUSE's load_europarl_data on lists of lines (np.unique on object arrays of token lists)."""
    def objects(lines):
        arr = np.empty(len(lines), dtype=object)
        for i, line in enumerate(lines):
            arr[i] = line.lower().rstrip().split()
        return arr

    a, b = objects(src_lines), objects(tgt_lines)
    a, idx = np.unique(a, return_index=True)
    b = b[idx]
    b, idx = np.unique(b, return_index=True)
    a = a[idx]
    perm = np.random.RandomState(seed).permutation(len(a))
    return [list(x) for x in a[perm]], [list(x) for x in b[perm]]


def test_load_matches_muses_dedup_and_shuffle(tmp_path):
    rng = np.random.default_rng(3)
    vocab = ["a", "b", "c", "D", "e"]
    src = [" ".join(rng.choice(vocab, size=rng.integers(0, 3))) for _ in range(60)]  # duplicates, empty lines
    tgt = [" ".join(rng.choice(vocab, size=rng.integers(1, 3))) + " x" for _ in range(60)]
    s, t = _write(tmp_path / "europarl-v7.fr-en.fr", src), _write(tmp_path / "europarl-v7.fr-en.en", tgt)
    got = load_europarl(s, t)
    assert got == _muse_load(src, tgt)
    assert [] in got[0]  # an empty line is an empty sentence, as in MUSE
    assert len(got[0]) < 60 and len(set(map(tuple, got[0]))) == len(got[0]) == len(set(map(tuple, got[1])))
    # deduplicating the target side first is MUSE with the files named the other way round
    tt, ss = _muse_load(tgt, src)
    assert load_europarl(s, t, dedup_first="tgt") == (ss, tt)
    assert load_europarl(s, t, max_lines=10) == _muse_load(src[:10], tgt[:10])
    assert load_europarl(s, t, seed=7) == _muse_load(src, tgt, seed=7)


def test_mismatched_files_are_named(tmp_path):
    s, t = _write(tmp_path / "a.fr", ["x", "y"]), _write(tmp_path / "a.en", ["x"])
    with pytest.raises(ValueError, match=r"a\.fr \(2 lines\) and .*a\.en \(1 lines\)"):
        load_europarl(s, t)


def test_split_is_seeded_and_disjoint():
    split = europarl_split(1000, n_keys=100, n_queries=20, n_idf=300)
    again = europarl_split(1000, n_keys=100, n_queries=20, n_idf=300)
    np.testing.assert_array_equal(split["queries"], again["queries"])
    np.testing.assert_array_equal(split["queries"],
                                  np.random.RandomState(1234).choice(range(100), size=20, replace=False))
    assert len(set(split["queries"].tolist())) == 20 and set(split["queries"].tolist()) <= set(split["keys"])
    assert split["keys"] == range(100) and split["idf"] == {"src": range(100, 400), "tgt": range(400, 700)}
    assert not set(split["keys"]) & set(split["idf"]["src"]) and not set(split["idf"]["src"]) & set(split["idf"]["tgt"])
    other = europarl_split(1000, n_keys=100, n_queries=20, n_idf=300, seed=5)
    assert not np.array_equal(other["queries"], split["queries"])
    # the second IDF slice is cut at the corpus end (MUSE: fewer than 800 000 unique pairs)
    short = europarl_split(500, n_keys=100, n_queries=20, n_idf=300, idf_first="tgt")
    assert short["idf"] == {"tgt": range(100, 400), "src": range(400, 500)}


def test_too_small_corpus_fails_clearly():
    with pytest.raises(ValueError, match="smaller --n-keys"):
        europarl_split(500_000)
    with pytest.raises(ValueError, match="n_queries"):
        europarl_split(100, n_keys=5, n_queries=6, n_idf=10)


def test_idf_values():
    idf = compute_idf([["the", "cat", "the"], ["the", "dog"]] + [["the"]] * 18)
    assert idf == {"the": 1.0, "cat": pytest.approx(math.log10(20)), "dog": pytest.approx(math.log10(20))}


# two queries / keys: q0 "the cat" -> k0 "le chat", q1 "the of" -> k1 "le de". the/of/le/de share the vector
# c = e1; cat = e2; chat = (0, 0.35, 0.94). Unweighted, q0 = (c + cat) / 2 is nearer k1 = c (0.707) than
# k0 = (c + chat) / 2 (0.675); with idf(the) = 1 and idf(cat) = log10(200) = 2.3, q0 = c + 2.3 cat is nearer
# k0 = c + 2.3 chat (0.45) than k1 (0.40).
N_IDF = 200
SRC_WORDS = ["the", "of", "cat"]
TGT_WORDS = ["le", "de", "chat"]
C, CAT, CHAT = (1, 0, 0), (0, 1, 0), (0, 0.35, math.sqrt(1 - 0.35 ** 2))


def _idf_corpus():
    src = [["the", "cat"], ["the", "of"]]
    tgt = [["le", "chat"], ["le", "de"]]
    src_idf = [["the", "of"]] * (N_IDF - 1) + [["the", "cat"]]
    tgt_idf = [["le", "de"]] * (N_IDF - 1) + [["le", "chat"]]
    # idf_first="src": the source IDF on [2, 202), the target IDF on [202, 402)
    return src + src_idf + [["of"]] * N_IDF, tgt + [["de"]] * N_IDF + tgt_idf


def _embedders(weighted=True):
    es = bow_idf_embedder(SRC_WORDS, np.array([C, C, CAT], dtype=np.float32))
    et = bow_idf_embedder(TGT_WORDS, np.array([C, C, CHAT], dtype=np.float32))
    if weighted:
        return es, et
    return (lambda s, idf: es(s, {w: 1.0 for w in idf})), (lambda s, idf: et(s, {w: 1.0 for w in idf}))


def test_idf_weighting_changes_the_ranking():
    src, tgt = _idf_corpus()
    sizes = dict(n_keys=2, n_queries=2, n_idf=N_IDF)
    weighted = sentence_retrieval(src, tgt, *_embedders(), method="nn", **sizes)
    uniform = sentence_retrieval(src, tgt, *_embedders(weighted=False), method="nn", **sizes)
    assert weighted["p@1"] == 100.0 and uniform["p@1"] == 50.0
    assert weighted["n_queries"] == 2 and weighted["n_keys"] == 2 and weighted["n_idf"] == N_IDF
    assert weighted["n_idf_sentences"] == {"src": N_IDF, "tgt": N_IDF}
    # the IDF of each side comes from its own slice: swapped, "cat" and "chat" get no IDF and are skipped
    swapped = sentence_retrieval(src, tgt, *_embedders(), method="nn", idf_first="tgt", **sizes)
    assert swapped["p@1"] == 50.0


def test_bow_idf_skips_unknown_words_and_falls_back_to_the_first_word():
    embed = bow_idf_embedder(["Le", "chat", "noir"], np.array([[1, 0], [0, 2], [4, 4]], dtype=np.float32))
    idf = {"le": 1.0, "chat": 3.0, "noir": 2.0, "inconnu": 5.0}
    out = embed([["le", "chat", "chat", "inconnu"], ["inconnu"], [], ["noir"]], idf)
    np.testing.assert_allclose(out[0], [(1 * 1 + 0) / 4, (0 + 3 * 2) / 4])  # distinct words, weighted mean
    np.testing.assert_allclose(out[1], [1, 0])  # nothing known: the first (most frequent) word's vector
    np.testing.assert_allclose(out[2], [1, 0])
    np.testing.assert_allclose(out[3], [4, 4])
    assert embed([["chat"]], {})[0].tolist() == [1, 0]  # known words without IDF are skipped too


def _random_corpus(n=300, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)]
    src = [list(rng.choice(words, size=rng.integers(2, 8))) for _ in range(n)]
    tgt = [["f" + w for w in s] + (["x"] if i % 3 else []) for i, s in enumerate(src)]
    return src, tgt, words


def _csls_reference(q, k, knn):
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    k = k / np.linalg.norm(k, axis=1, keepdims=True)
    sims = q @ k.T
    r_q = np.sort(sims, axis=1)[:, -knn:].mean(1)
    r_k = np.sort(sims.T, axis=1)[:, -knn:].mean(1)  # each key: its knn nearest queries
    return np.argsort(-(2 * sims - r_q[:, None] - r_k[None, :]), axis=1)


def test_csls_matches_the_formula_with_query_neighbourhoods():
    rng = np.random.default_rng(1)
    src, tgt, words = _random_corpus()
    vectors = rng.normal(size=(len(words), 5)).astype(np.float32)
    noisy = vectors + rng.normal(scale=1.0, size=vectors.shape).astype(np.float32)
    es = bow_idf_embedder(words, vectors)
    et = bow_idf_embedder(["f" + w for w in words] + ["x"], np.vstack([noisy, rng.normal(size=(1, 5))]))
    sizes = dict(n_keys=100, n_queries=30, n_idf=80)
    got = sentence_retrieval_methods(src, tgt, es, et, batch=7, **sizes)
    split = europarl_split(len(src), **sizes)
    idf_s = compute_idf([src[i] for i in split["idf"]["src"]])
    idf_t = compute_idf([tgt[i] for i in split["idf"]["tgt"]])
    q = es([src[i] for i in split["queries"]], idf_s)
    k = et([tgt[i] for i in split["keys"]], idf_t)
    for method, order in (("nn", np.argsort(-(q / np.linalg.norm(q, axis=1, keepdims=True)) @
                                            (k / np.linalg.norm(k, axis=1, keepdims=True)).T, axis=1)),
                          ("csls_knn_10", _csls_reference(q, k, 10))):
        gold = split["queries"][:, None]
        for top in (1, 5, 10):
            expected = 100.0 * np.mean((order[:, :top] == gold).any(axis=1))
            assert got[method][f"p@{top}"] == pytest.approx(expected), (method, top)
    assert 0 < got["nn"]["p@10"] < 100  # a test that can fail


def test_urls_and_members():
    assert europarl_url("fra") == "https://www.statmt.org/europarl/v7/fr-en.tgz"
    assert europarl_members("deu") == ("europarl-v7.de-en.de", "europarl-v7.de-en.en")
    with pytest.raises(ValueError, match="rus"):
        europarl_url("rus")


def test_muse_sides():
    assert muse_sides("eng", "fra") == ("tgt", "src")  # dedup fr first; the English IDF slice first
    assert muse_sides("fra", "eng") == ("src", "tgt")


class StandIn:
    """The API of laser_repro.models.bisent2vec.export.BiSent2VecEncoder that the command uses."""

    def __init__(self):
        src, tgt, words = _random_corpus()
        rng = np.random.default_rng(2)
        self.languages, self.dim = ("eng", "fra"), 4
        vectors = rng.normal(size=(len(words), 4)).astype(np.float32)
        self._words = {"eng": (words, vectors), "fra": (["f" + w for w in words], vectors + 0.3)}

    @classmethod
    def load(cls, path):
        return cls()

    def word_vectors(self, lang):
        return self._words[lang]

    def embed_tokens(self, token_lists, lang, weights=None):
        words, vectors = self._words[lang]
        row = {w: i for i, w in enumerate(words)}
        out = np.zeros((len(token_lists), self.dim), dtype=np.float32)
        for n, tokens in enumerate(token_lists):
            known = [w for w in tokens if w in row]
            if known:
                wts = np.array([weights.get(w, 0.0) for w in known])
                out[n] = (wts[:, None] * vectors[[row[w] for w in known]]).sum(0) / wts.sum()
        return out


def test_encoder_embedder_is_muses_bow_idf():
    enc = StandIn()
    src, tgt, words = _random_corpus()
    idf = compute_idf(tgt[:50])
    for lang in ("eng", "fra"):
        sents = src[:20] + [[], ["nothing", "known"]] if lang == "eng" else tgt[:20] + [["x"], ["fw3", "fW3"]]
        got = encoder_embedder(enc, lang)(sents, idf if lang == "fra" else compute_idf(src[:50]))
        ref = bow_idf_embedder(*enc.word_vectors(lang))(sents, idf if lang == "fra" else compute_idf(src[:50]))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_cli_end_to_end(tmp_path, monkeypatch):
    module = types.ModuleType("laser_repro.models.bisent2vec.export")
    module.BiSent2VecEncoder = StandIn
    monkeypatch.setitem(sys.modules, "laser_repro.models.bisent2vec.export", module)
    from laser_repro.models import registry

    monkeypatch.setattr(registry, "read_encoder_file", lambda path: {"family": "bisent2vec"})
    src, tgt, _ = _random_corpus()
    # the English side is the source
    en = _write(tmp_path / "europarl-v7.fr-en.en", [" ".join(s) for s in src])
    fr = _write(tmp_path / "europarl-v7.fr-en.fr", [" ".join(t) for t in tgt])
    out = tmp_path / "europarl.json"
    sizes = ["--n-keys", "100", "--n-queries", "30", "--n-idf", "80"]
    assert main(["europarl-retrieval", "--encoder", "enc.pt", "--src", "eng", "--tgt", "fra", "--src-file", str(en),
                 "--tgt-file", str(fr), "--keep-case", *sizes, "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["task"] == "europarl" and data["encoder"] == "enc.pt" and (data["src"], data["tgt"]) == ("eng", "fra")
    assert set(data["results"]) == {"nn", "csls_knn_10"}
    assert data["results"]["nn"]["n_queries"] == 30 and data["results"]["nn"]["n_keys"] == 100
    # the same numbers as the pure functions on MUSE's loading (fr deduplicated first, English IDF first)
    s, t = load_europarl(en, fr, lowercase=False, dedup_first="tgt", max_lines=100 + 2 * 80)
    enc = StandIn()
    ref = sentence_retrieval_methods(s, t, bow_idf_embedder(*enc.word_vectors("eng")),
                                     bow_idf_embedder(*enc.word_vectors("fra")),
                                     n_keys=100, n_queries=30, n_idf=80)
    for method in ("nn", "csls_knn_10"):
        for k in ("p@1", "p@5", "p@10"):
            assert data["results"][method][k] == pytest.approx(ref[method][k])

    assert main(["europarl-retrieval", "--tfidf", str(out), "--src", "eng", "--tgt", "fra", "--src-file", str(en),
                 "--tgt-file", str(fr), *sizes]) == 0
    data = json.loads(out.read_text())
    assert data["encoder"] == "tfidf" and data["results"]["nn"]["n_queries"] == 30
    s, t = load_europarl(en, fr, dedup_first="tgt", max_lines=260)
    assert data["results"] == json.loads(json.dumps(tfidf_sentence_retrieval(s, t, n_keys=100, n_queries=30,
                                                                             n_idf=80)))

    # one job: the encoder and the baseline on the same loaded corpus give what two jobs give
    both, base = tmp_path / "both.json", tmp_path / "base.json"
    assert main(["europarl-retrieval", "--encoder", "enc.pt", "--output", str(both), "--tfidf", str(base), "--src",
                 "eng", "--tgt", "fra", "--src-file", str(en), "--tgt-file", str(fr), *sizes]) == 0
    assert json.loads(base.read_text())["results"] == data["results"]

    with pytest.raises(ValueError, match="smaller --n-keys"):
        main(["--debug", "europarl-retrieval", "--tfidf", str(out), "--src", "eng", "--tgt", "fra", "--src-file", str(en),
              "--tgt-file", str(fr)])
    with pytest.raises(SystemExit, match="--encoder E --output OUT and/or --tfidf OUT"):
        main(["europarl-retrieval", "--src", "eng", "--tgt", "fra", "--src-file", str(en), "--tgt-file", str(fr)])


def test_europarl_languages_are_registry_codes_of_the_v7_releases():
    from laser_repro.core import languages
    from laser_repro.evaluation.europarl import EUROPARL_LANGUAGES

    # statmt.org/europarl/v7 publishes one xx-en.tgz per EU language of the release
    v7 = {"bg", "cs", "da", "de", "el", "es", "et", "fi", "fr", "hu", "it", "lt", "lv", "nl", "pl", "pt", "ro",
          "sk", "sl", "sv"}
    assert {languages.get(code).paper for code in EUROPARL_LANGUAGES} == v7  # get() refuses unknown codes
    assert europarl_url("lvs") == "https://www.statmt.org/europarl/v7/lv-en.tgz"
    assert europarl_members("lvs") == ("europarl-v7.lv-en.lv", "europarl-v7.lv-en.en")


class SentenceFamily:
    """A family that prepares text (here: marks the language and the codes) for a sentence encoder."""
    name, takes_codes = "laser", True

    def __init__(self):
        self.prepared = []

    def prepare(self, lines, lang, codes=None, lowercase=True):
        self.prepared.append((lang, codes, lowercase))
        return [f"{lang} {line}" for line in lines]


class SentenceEncoder:
    """Embeds a prepared line by hashing its words into 16 dimensions (a translation shares the words of
    _random_corpus up to the f prefix, so retrieval works)."""

    def embed(self, lines, lang):
        out = np.zeros((len(lines), 16), dtype=np.float32)
        for n, line in enumerate(lines):
            words = line.split()
            assert words[0] == lang  # prepared by the family for this language
            for w in words[1:]:
                out[n, sum(map(ord, w.lower().removeprefix("f"))) % 16] += 1
        return out


def test_cli_scores_an_encoder_of_another_family_on_the_same_queries(tmp_path, monkeypatch):
    """A sentence encoder (LASER, multienc, LaBSE) embeds each loaded sentence whole, prepared by its family
    with the codes; the queries and keys are those of the Bi-Sent2Vec protocol (same load, same split)."""
    from laser_repro.evaluation import retrieval
    from laser_repro.models import registry

    family, encoder = SentenceFamily(), SentenceEncoder()
    monkeypatch.setattr(registry, "read_encoder_file", lambda path: {"family": "laser"})
    monkeypatch.setattr(retrieval, "load_for_retrieval", lambda path, codes: (family, encoder))
    src, tgt, _ = _random_corpus()
    en = _write(tmp_path / "europarl-v7.fr-en.en", [" ".join(s) for s in src])
    fr = _write(tmp_path / "europarl-v7.fr-en.fr", [" ".join(t) for t in tgt])
    out = tmp_path / "laser.json"
    sizes = ["--n-keys", "100", "--n-queries", "30", "--n-idf", "80"]
    assert main(["europarl-retrieval", "--encoder", "laser.pt", "--codes", "codes", "--src", "eng", "--tgt", "fra",
                 "--src-file", str(en), "--tgt-file", str(fr), *sizes, "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["family"] == "laser" and data["results"]["nn"]["n_queries"] == 30
    assert set(family.prepared) == {("eng", "codes", True), ("fra", "codes", True)}
    s, t = load_europarl(en, fr, dedup_first="tgt", max_lines=260)
    ref = sentence_retrieval_methods(s, t, sentence_embedder(family, encoder, "eng", codes="codes"),
                                     sentence_embedder(family, encoder, "fra", codes="codes"),
                                     n_keys=100, n_queries=30, n_idf=80)
    assert data["results"] == json.loads(json.dumps(ref))
    assert data["results"]["nn"]["p@10"] > 50  # the hashed words find translations: a real retrieval
