"""Cross-lingual sentence retrieval on Europarl: Table 3 of Bi-Sent2Vec (Sabet et al. 2019, Section 4.3),
which ran MUSE's sentence translation (Lample et al. 2018; github.com/facebookresearch/MUSE,
``src/evaluation/sent_translation.py``, ``src/evaluation/evaluator.py`` and ``get_idf`` / ``bow_idf`` of
``src/utils.py``). Its protocol, as we match it:

* **Data** (MUSE ``load_europarl_data``): the first ``n_keys + 2 n_idf`` = 800 000 lines of each side are
  read, lowercased, split on whitespace (``line.rstrip().split()``; an empty line is an empty sentence,
  nothing is filtered). Duplicates are removed with ``np.unique`` -- first on the language named first in
  the file name (``europarl-v7.xx-en.*``: xx), then on the other: each unique sentence keeps its first
  occurrence and the pairs come out sorted by the sentence (token lists compared lexicographically) --
  and the pairs are shuffled with ``np.random.RandomState(1234).permutation``. (MUSE's
  ``data/get_evaluation.sh`` Moses-tokenized the files and shuffled them with an unseeded ``shuf`` before
  that; :func:`load_europarl` reads the files as given. MUSE opens them in Python's universal-newline
  mode; we split lines on '\\n' only, as every reader of the project, which differs only for a stray '\\r'.)
* **Split** (MUSE ``get_sent_translation_accuracy`` / ``get_idf``): the keys are the first ``n_keys`` =
  200 000 sentences of the target side; the ``n_queries`` = 2 000 queries are the source sentences at
  ``RandomState(1234).choice(n_keys, n_queries, replace=False)`` (the gold key of query i is its own
  index); the IDF of the language MUSE's evaluator calls the source (``src_lang`` of the run, English
  in an en-xx run) is computed on sentences ``[200 000, 500 000)`` and that of the other language on
  ``[500 000, 800 000)`` -- disjoint from the keys and from each other (MUSE hard-codes the start 200 000
  = its n_keys; we start at ``n_keys``). After deduplication fewer than 800 000 pairs remain, so the
  second IDF slice is shorter than ``n_idf``, as in MUSE.
* **IDF** = ``max(1, log10(n_documents / document frequency))`` over the slice (each word once per
  sentence); a word not in the slice has no IDF.
* **Sentence vectors** (``bow_idf``): the IDF-weighted average of the vectors of the sentence's distinct
  words that are both in the (200 000-word, lowercased) vocabulary and in the IDF; a sentence with no such
  word gets the vector of the vocabulary's first (most frequent) word -- not a zero vector. That is the
  protocol for word vectors (Bi-Sent2Vec); an encoder of another family embeds each sentence whole
  (:func:`sentence_embedder`) on the same queries and keys.
* **Retrieval**: queries and keys L2-normalised; ``nn`` = cosine; ``csls_knn_10`` = ``2 cos - r(query) -
  r(key)`` with r(query) the mean cosine to its 10 nearest keys and r(key) the mean cosine to its 10
  nearest *queries*; P@1/5/10 in percent.

The corpus: Europarl v7, one archive per language pair: :func:`europarl_url`, :func:`europarl_members`.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from laser_repro.core import languages
from laser_repro.evaluation.word_translation import (
    MAX_VOCAB, METHODS, check_method, load_pair_encoders, precision_at_k, rank_keys, resolve_device,
    vocabulary_index)

log = logging.getLogger("laser_repro")

#: Europarl v7 (Koehn 2005), one archive per xx-en pair. MUSE's data/get_evaluation.sh (a block disabled by
#: ``if false``, run for it-en) downloads ``$europarl/$lg_pair.tgz`` with
#: europarl=http://www.statmt.org/europarl/v7 (the site now serves https), extracts
#: ``europarl-v7.$lg_pair.$lg`` for both languages, Moses-tokenizes them (``tokenizer.perl -l $lg
#: -no-escape``), pastes, ``shuf``s and writes ``data/crosslingual/europarl/europarl-v7.$lg_pair.$lg``;
#: there is no pre-extracted copy. E.g. https://www.statmt.org/europarl/v7/fr-en.tgz ->
#: europarl-v7.fr-en.fr, europarl-v7.fr-en.en
EUROPARL_URL = "https://www.statmt.org/europarl/v7/{xx}-en.tgz"
EUROPARL_MEMBER = "europarl-v7.{xx}-en.{lang}"
#: the languages (registry codes, ISO 639-3) with a Europarl v7 xx-en archive on statmt.org: the 20 EU
#: languages of v7 besides English (no Russian, no Chinese). Latvian is the registry's "lvs".
EUROPARL_LANGUAGES = ("bul", "ces", "dan", "deu", "ell", "spa", "est", "fin", "fra", "hun", "ita", "lit", "lvs",
                      "nld", "pol", "por", "ron", "slk", "slv", "swe")

#: MUSE's sizes (evaluator.sent_translation) and seed (load_europarl_data, get_sent_translation_accuracy)
N_KEYS, N_QUERIES, N_IDF, SEED = 200_000, 2_000, 300_000, 1234

Embedder = Callable[[list[list[str]], Mapping[str, float]], np.ndarray]


def _xx(lang3: str) -> str:
    if lang3 not in EUROPARL_LANGUAGES:
        raise ValueError(f"no Europarl v7 xx-en archive for {lang3!r} (have {', '.join(EUROPARL_LANGUAGES)})")
    return languages.get(lang3).paper  # the registry's ISO 639-1 code, as the archive names


def europarl_url(lang3: str) -> str:
    """URL of the Europarl v7 archive of ``lang3``-English (ISO 639-3 in, e.g. ``fra`` -> .../fr-en.tgz)."""
    return EUROPARL_URL.format(xx=_xx(lang3))


def europarl_members(lang3: str) -> tuple[str, str]:
    """(xx side, English side) member names of :func:`europarl_url`'s archive."""
    xx = _xx(lang3)
    return EUROPARL_MEMBER.format(xx=xx, lang=xx), EUROPARL_MEMBER.format(xx=xx, lang="en")


# ---- data -------------------------------------------------------------------------------------------------
def _read_tokens(path, lowercase: bool, max_lines: int | None, tokenize=None) -> list[list[str]]:
    from laser_repro.core.textio import iter_lines

    out = []
    for line in iter_lines(path, progress=tokenize is not None, desc=f"{Path(path).name}"):
        if max_lines is not None and len(out) >= max_lines:
            break
        if tokenize is not None:
            line = tokenize(line)
        out.append((line.lower() if lowercase else line).split())
    return out


def _unique_first(sentences: Sequence[Sequence[str]]) -> list[int]:
    """``np.unique(sentences, return_index=True)[1]``: the index of the first occurrence of each distinct
    sentence, ordered by the sentence (token lists compared lexicographically)."""
    first: dict[tuple[str, ...], int] = {}
    for i, sent in enumerate(sentences):
        first.setdefault(tuple(sent), i)
    return [first[key] for key in sorted(first)]


def load_europarl(path_src: Path | str, path_tgt: Path | str, *, lowercase: bool = True,
                  max_lines: int | None = None, dedup_first: str = "src",
                  seed: int = SEED, tokenize_src=None, tokenize_tgt=None) -> tuple[list[list[str]], list[list[str]]]:
    """The aligned token lists of a Europarl pair as MUSE's ``load_europarl_data`` builds them: the first
    ``max_lines`` lines (MUSE: n_keys + 2 n_idf; None: all), lowercased, whitespace-split (empty lines
    kept as empty sentences; ``tokenize_*``: a line -> its tokenised text, applied first, as MUSE's script runs
    the Moses tokenizer over the raw files), deduplicated on the ``dedup_first`` side ("src" or "tgt"; MUSE: the xx of
    ``europarl-v7.xx-en``) then on the other, shuffled with ``RandomState(seed)``.

    Files whose line counts differ raise ValueError naming both."""
    from laser_repro.core.textio import count_lines

    if dedup_first not in ("src", "tgt"):
        raise ValueError(f"dedup_first: 'src' or 'tgt', got {dedup_first!r}")
    n_src, n_tgt = count_lines(path_src), count_lines(path_tgt)
    if n_src != n_tgt:
        raise ValueError(f"{path_src} ({n_src} lines) and {path_tgt} ({n_tgt} lines) are not a parallel corpus")
    src = _read_tokens(path_src, lowercase, max_lines, tokenize_src)
    tgt = _read_tokens(path_tgt, lowercase, max_lines, tokenize_tgt)
    first, second = (src, tgt) if dedup_first == "src" else (tgt, src)
    keep = _unique_first(first)
    first, second = [first[i] for i in keep], [second[i] for i in keep]
    keep = _unique_first(second)
    first, second = [first[i] for i in keep], [second[i] for i in keep]
    perm = np.random.RandomState(seed).permutation(len(first))
    first, second = [first[i] for i in perm], [second[i] for i in perm]
    src, tgt = (first, second) if dedup_first == "src" else (second, first)
    log.info("europarl %s / %s: %d lines read, %d unique pairs", path_src, path_tgt, min(n_src, max_lines or n_src),
             len(src))
    return src, tgt


# ---- protocol -----------------------------------------------------------------------------------------------
def europarl_split(n_sentences: int, *, n_keys: int = N_KEYS, n_queries: int = N_QUERIES, n_idf: int = N_IDF,
                   seed: int = SEED, idf_first: str = "src") -> dict:
    """The indices of MUSE's protocol over ``n_sentences`` shuffled pairs: ``keys`` = range(n_keys) (target
    side), ``queries`` = ``RandomState(seed).choice(n_keys, n_queries, replace=False)`` (source side, gold
    key = the same index), ``idf``: {"src": range, "tgt": range} -- the ``idf_first`` side on
    ``[n_keys, n_keys + n_idf)``, the other on ``[n_keys + n_idf, n_keys + 2 n_idf)`` cut at the corpus end.

    ValueError unless ``n_queries <= n_keys`` and the corpus has more than ``n_keys + n_idf`` sentences
    (every part non-empty): pass smaller sizes for small corpora."""
    if idf_first not in ("src", "tgt"):
        raise ValueError(f"idf_first: 'src' or 'tgt', got {idf_first!r}")
    if min(n_keys, n_queries, n_idf) < 1 or n_queries > n_keys:
        raise ValueError(f"need 1 <= n_queries ({n_queries}) <= n_keys ({n_keys}) and n_idf ({n_idf}) >= 1")
    if n_sentences <= n_keys + n_idf:
        raise ValueError(f"the corpus has {n_sentences} (unique) sentence pairs, fewer than n_keys + n_idf + 1 = "
                         f"{n_keys + n_idf + 1} ({n_keys} keys, {n_idf} IDF sentences per language, MUSE: 200000 and "
                         f"300000): pass smaller --n-keys / --n-idf / --n-queries for a small corpus")
    first = range(n_keys, n_keys + n_idf)
    second = range(n_keys + n_idf, min(n_keys + 2 * n_idf, n_sentences))
    queries = np.random.RandomState(seed).choice(n_keys, size=n_queries, replace=False)
    idf = {"src": first, "tgt": second} if idf_first == "src" else {"src": second, "tgt": first}
    return {"keys": range(n_keys), "queries": queries, "idf": idf}


def compute_idf(sentences: Sequence[Sequence[str]]) -> dict[str, float]:
    """MUSE ``get_idf``: word -> max(1, log10(N / number of sentences containing it)) over ``sentences``."""
    df: dict[str, int] = {}
    for sent in sentences:
        for word in set(sent):
            df[word] = df.get(word, 0) + 1
    n = len(sentences)
    return {word: max(1.0, math.log10(n / count)) for word, count in df.items()}


def bow_idf_embedder(words: Sequence[str], vectors, *, max_vocab: int | None = MAX_VOCAB,
                     lowercase: bool = True) -> Embedder:
    """MUSE ``bow_idf`` over a word list (frequency order) and its vectors: the embedder
    ``(token lists, idf) -> (n, dim) float32`` giving each sentence the IDF-weighted average of the vectors
    of its distinct words that are in the vocabulary (MUSE's: the first ``max_vocab`` distinct lowercased
    words, :func:`~laser_repro.evaluation.word_translation.vocabulary_index`) and in ``idf``; a sentence
    with none of them gets the vector of the first vocabulary word (MUSE). Word vectors are used as they are
    (not normalised; a zero vector gets 0.01 in its first coordinate, as MUSE's loader)."""
    from scipy import sparse

    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise ValueError(f"{len(words)} words but vectors of shape {vectors.shape}")
    index = vocabulary_index(words, max_vocab, lowercase=lowercase)
    if not index:
        raise ValueError("empty vocabulary")
    matrix = np.array(vectors[np.fromiter(index.values(), dtype=np.int64)], dtype=np.float32)
    zero = ~matrix.any(axis=1)
    matrix[zero, 0] = 0.01
    position = {w: i for i, w in enumerate(index)}

    def embed(sentences: list[list[str]], idf: Mapping[str, float]) -> np.ndarray:
        rows, cols, vals = [], [], []
        empty = []
        for r, sent in enumerate(sentences):
            known = [w for w in set(sent) if w in position and w in idf]
            if not known:
                empty.append(r)
                continue
            total = sum(idf[w] for w in known)
            rows += [r] * len(known)
            cols += [position[w] for w in known]
            vals += [idf[w] / total for w in known]
        weights = sparse.csr_matrix((np.asarray(vals, dtype=np.float64), (rows, cols)),
                                    shape=(len(sentences), len(position)))
        out = np.asarray(weights @ matrix.astype(np.float64), dtype=np.float32)
        out[empty] = matrix[0]
        return out

    return embed


def encoder_embedder(encoder, lang: str, *, max_vocab: int | None = MAX_VOCAB) -> Embedder:
    """The embedder of a Bi-Sent2Vec encoder for :func:`sentence_retrieval`: ``encoder.embed_tokens(tokens,
    lang, weights=idf)`` (its weighted average of unigram vectors) on what MUSE's ``bow_idf`` averages -- the
    sentence's distinct words in MUSE's vocabulary (first ``max_vocab`` distinct lowercased words of
    ``encoder.word_vectors(lang)``, each mapped to the vocabulary word it stands for) and in the IDF --, and
    MUSE's fallback (the first vocabulary word's vector) for a sentence with none."""
    words, vectors = encoder.word_vectors(lang)
    index = vocabulary_index(words, max_vocab)
    if not index:
        raise ValueError(f"{lang}: empty vocabulary")
    fallback = np.array(vectors[next(iter(index.values()))], dtype=np.float32)
    if not fallback.any():
        fallback[0] = 0.01

    def embed(sentences: list[list[str]], idf: Mapping[str, float]) -> np.ndarray:
        weights = {words[index[w]]: float(v) for w, v in idf.items() if w in index}
        tokens = [[words[index[w]] for w in dict.fromkeys(sent) if w in index and w in idf] for sent in sentences]
        out = np.array(encoder.embed_tokens(tokens, lang, weights=weights), dtype=np.float32)
        if out.shape[0] != len(sentences):
            raise ValueError(f"{lang}: embed_tokens returned {out.shape[0]} rows for {len(sentences)} sentences")
        empty = [i for i, t in enumerate(tokens) if not t]
        out[empty] = fallback
        return out

    return embed


def sentence_embedder(family, encoder, lang: str, *, codes=None, lowercase: bool = True) -> Embedder:
    """The embedder of a sentence encoder of another family (LASER, multienc, LaBSE), scored on the same
    queries and keys as a Bi-Sent2Vec model: each sentence's words (as loaded: Moses-tokenised, lowercased
    unless ``--keep-case``) joined by spaces, prepared by the family (its own preprocessing, and its BPE
    ``codes`` for a family that takes them) and embedded whole. Such an encoder has no word vectors to
    average, so the IDF weights of MUSE's bag of words are not used."""

    def embed(sentences: list[list[str]], idf: Mapping[str, float]) -> np.ndarray:
        lines = [" ".join(sent) for sent in sentences]
        return np.asarray(encoder.embed(family.prepare(lines, lang, codes=codes, lowercase=lowercase), lang),
                          dtype=np.float32)

    return embed


def _normalize(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _result(top, split, n_idf: int, n_sentences: int) -> dict:
    out = precision_at_k(top, split["queries"])
    out.update({"n_queries": len(split["queries"]), "n_keys": len(split["keys"]), "n_idf": n_idf,
                "n_sentences": n_sentences,
                "n_idf_sentences": {side: len(r) for side, r in split["idf"].items()}})
    return out


def _check_aligned(src_sentences, tgt_sentences) -> int:
    if len(src_sentences) != len(tgt_sentences):
        raise ValueError(f"not aligned: {len(src_sentences)} source vs {len(tgt_sentences)} target sentences")
    return len(src_sentences)


def sentence_retrieval_methods(src_sentences: Sequence[Sequence[str]], tgt_sentences: Sequence[Sequence[str]],
                               embed_src: Embedder, embed_tgt: Embedder, *, methods: Sequence[str] = METHODS,
                               n_keys: int = N_KEYS, n_queries: int = N_QUERIES, n_idf: int = N_IDF,
                               seed: int = SEED, idf_first: str = "src", batch: int = 256,
                               device: str = "cpu") -> dict[str, dict]:
    """:func:`sentence_retrieval` for several methods on one embedding of the queries and keys:
    ``{method: result}``."""
    for method in methods:
        check_method(method)
    n = _check_aligned(src_sentences, tgt_sentences)
    split = europarl_split(n, n_keys=n_keys, n_queries=n_queries, n_idf=n_idf, seed=seed, idf_first=idf_first)
    idf = {"src": compute_idf([src_sentences[i] for i in split["idf"]["src"]]),
           "tgt": compute_idf([tgt_sentences[i] for i in split["idf"]["tgt"]])}
    keys = _normalize(embed_tgt([list(tgt_sentences[i]) for i in split["keys"]], idf["tgt"]))
    queries = _normalize(embed_src([list(src_sentences[i]) for i in split["queries"]], idf["src"]))
    if keys.shape[0] != n_keys or queries.shape[0] != n_queries or keys.shape[1] != queries.shape[1]:
        raise ValueError(f"embedders returned keys {keys.shape} and queries {queries.shape} for {n_keys} keys and "
                         f"{n_queries} queries")
    out = {}
    for method in methods:
        out[method] = _result(rank_keys(queries, keys, method, batch=batch, device=device), split, n_idf, n)
        log.info("europarl %s: %s", method, out[method])
    return out


def sentence_retrieval(src_sentences: Sequence[Sequence[str]], tgt_sentences: Sequence[Sequence[str]],
                       embed_src: Embedder, embed_tgt: Embedder, *, method: str, n_keys: int = N_KEYS,
                       n_queries: int = N_QUERIES, n_idf: int = N_IDF, seed: int = SEED, idf_first: str = "src",
                       batch: int = 256, device: str = "cpu") -> dict:
    """P@1/5/10 (percent) of MUSE's Europarl sentence translation (module docstring): ``n_queries`` source
    sentences search their translation among ``n_keys`` target sentences by ``method`` ("nn" or
    "csls_knn_10").

    ``src_sentences`` / ``tgt_sentences``: aligned token lists as :func:`load_europarl` returns them
    (deduplicated and shuffled); ``embed_src`` / ``embed_tgt``: ``(token lists, idf) -> (n, dim)`` arrays
    (:func:`bow_idf_embedder`, :func:`encoder_embedder`), given the IDF of their language; ``idf_first``:
    the side whose IDF comes from the first slice (MUSE: its run's source language, see
    :func:`europarl_split`).

    Returns ``{"p@1", "p@5", "p@10", "n_queries", "n_keys", "n_idf", "n_sentences", "n_idf_sentences":
    {"src", "tgt"} (the slice sizes actually used)}``."""
    return sentence_retrieval_methods(src_sentences, tgt_sentences, embed_src, embed_tgt, methods=(method,),
                                      n_keys=n_keys, n_queries=n_queries, n_idf=n_idf, seed=seed,
                                      idf_first=idf_first, batch=batch, device=device)[method]


def tfidf_sentence_retrieval(src_sentences: Sequence[Sequence[str]], tgt_sentences: Sequence[Sequence[str]], *,
                             methods: Sequence[str] = METHODS, n_keys: int = N_KEYS, n_queries: int = N_QUERIES,
                             n_idf: int = N_IDF, seed: int = SEED, batch: int = 64) -> dict[str, dict]:
    """The non-learned baseline on the same queries and keys as :func:`sentence_retrieval`: character
    n-gram TF-IDF vectors of the (space-joined) sentences, the project's vectoriser
    (:func:`laser_repro.evaluation.xsim.tfidf_vectors`, one vocabulary fitted on the queries and keys);
    the IDF sentences are not used (the split is the same)."""
    from laser_repro.evaluation.xsim import tfidf_vectors

    for method in methods:
        check_method(method)
    n = _check_aligned(src_sentences, tgt_sentences)
    split = europarl_split(n, n_keys=n_keys, n_queries=n_queries, n_idf=n_idf, seed=seed)
    queries, keys = tfidf_vectors([" ".join(src_sentences[i]) for i in split["queries"]],
                                  [" ".join(tgt_sentences[i]) for i in split["keys"]])
    return {method: _result(rank_keys(queries, keys, method, batch=batch), split, n_idf, n) for method in methods}


# ---- command line -----------------------------------------------------------------------------------------
def muse_sides(src: str, tgt: str) -> tuple[str, str]:
    """(dedup_first, idf_first) of MUSE for an ISO 639-3 pair: Europarl v7 files are ``europarl-v7.xx-en.*``
    and MUSE deduplicates the xx side first; the first IDF slice goes to the source language of MUSE's run,
    taken to be English (an en-xx run evaluates both directions with the same IDF)."""
    dedup_first = "tgt" if src == "eng" else "src"
    idf_first = "tgt" if tgt == "eng" and src != "eng" else "src"
    return dedup_first, idf_first


def cmd_europarl(a) -> None:
    """Each ``--encoder`` with its ``--output`` and/or ``--tfidf OUT`` (the baseline) on the same loaded,
    tokenised and split corpus: one job reads Europarl once for a model and its update 0."""
    from laser_repro.core.textio import write_json

    encoders, outputs = list(a.encoder or []), list(a.output or [])
    if len(encoders) != len(outputs):
        raise SystemExit(f"europarl-retrieval: one --output per --encoder ({len(encoders)} encoders, "
                         f"{len(outputs)} outputs)")
    if not encoders and not a.tfidf:
        raise SystemExit("europarl-retrieval: give --encoder E --output OUT and/or --tfidf OUT")
    if encoders:  # (the TF-IDF baseline alone needs no torch: 2-4 s of a job's start)
        import torch

        torch.set_num_threads(a.threads)
    embedders = [_embedders(path, a) for path in encoders]
    dedup_first, idf_first = muse_sides(a.src, a.tgt)
    tokenize = {}
    if a.moses:  # raw Europarl text: Moses-tokenise each line (MUSE's script runs tokenizer.perl first)
        from laser_repro.data.preprocess import language_preprocessor

        tokenize = {"tokenize_src": language_preprocessor(a.src, lowercase=not a.keep_case),
                    "tokenize_tgt": language_preprocessor(a.tgt, lowercase=not a.keep_case)}
    src, tgt = load_europarl(a.src_file, a.tgt_file, lowercase=not a.keep_case, max_lines=a.n_keys + 2 * a.n_idf,
                             dedup_first=dedup_first, seed=a.seed, **tokenize)
    sizes = dict(n_keys=a.n_keys, n_queries=a.n_queries, n_idf=a.n_idf, seed=a.seed)
    base = {"task": "europarl", "src": a.src, "tgt": a.tgt, "src_file": str(a.src_file), "tgt_file": str(a.tgt_file)}
    if a.tfidf:
        results = tfidf_sentence_retrieval(src, tgt, **sizes)
        write_json(a.tfidf, {**base, "encoder": "tfidf", "results": results})
        log.info("europarl %s -> %s TF-IDF: %s", a.src, a.tgt, results)
    for path, (family, embed_src, embed_tgt), output in zip(encoders, embedders, outputs):
        results = sentence_retrieval_methods(src, tgt, embed_src, embed_tgt, idf_first=idf_first,
                                             device=resolve_device(a.device), **sizes)
        write_json(output, {**base, "encoder": str(path), "family": family, "results": results})
        log.info("europarl %s -> %s with %s: %s", a.src, a.tgt, path, results)


def _embedders(path, a) -> tuple[str, Embedder, Embedder]:
    """(family, source embedder, target embedder) of an encoder file: a Bi-Sent2Vec encoder by MUSE's
    IDF-weighted bag of its word vectors (the paper's protocol), any other family's by its sentence
    embedding (:func:`sentence_embedder`)."""
    from laser_repro.evaluation.retrieval import load_for_retrieval
    from laser_repro.models import registry

    if registry.read_encoder_file(path)["family"] == "bisent2vec":
        [encoder] = load_pair_encoders([path], (a.src, a.tgt), "europarl-retrieval")
        return ("bisent2vec", encoder_embedder(encoder, a.src, max_vocab=a.max_vocab),
                encoder_embedder(encoder, a.tgt, max_vocab=a.max_vocab))
    family, encoder = load_for_retrieval(path, a.codes)
    codes = a.codes if family.takes_codes else None
    return (family.name, sentence_embedder(family, encoder, a.src, codes=codes, lowercase=not a.keep_case),
            sentence_embedder(family, encoder, a.tgt, codes=codes, lowercase=not a.keep_case))


def add_cli(sub) -> None:
    s = sub.add_parser("europarl-retrieval", help="MUSE Europarl sentence translation P@1/5/10 of an encoder of "
                                                  "any family (Bi-Sent2Vec: IDF-weighted bag of words), or of TF-IDF")
    s.add_argument("--encoder", nargs="+", help="exported encoders of any family (each with its --output)")
    s.add_argument("--codes", help="the BPE codes of a family that takes codes (LASER, multienc: the ones its "
                                   "encoder file names)")
    s.add_argument("--tfidf", metavar="OUT", help="also write the character n-gram TF-IDF baseline to OUT")
    s.add_argument("--src", required=True, help="ISO 639-3 code of the query side")
    s.add_argument("--tgt", required=True, help="ISO 639-3 code of the key side")
    s.add_argument("--src-file", required=True, help="Europarl v7 (tokenized) lines of --src")
    s.add_argument("--tgt-file", required=True, help="the aligned lines of --tgt")
    s.add_argument("--n-keys", type=int, default=N_KEYS)
    s.add_argument("--n-queries", type=int, default=N_QUERIES)
    s.add_argument("--n-idf", type=int, default=N_IDF, help="IDF sentences per language")
    s.add_argument("--seed", type=int, default=SEED, help="of the shuffle and of the query choice (MUSE: 1234)")
    s.add_argument("--max-vocab", type=int, default=MAX_VOCAB, help="words per language (MUSE --max_vocab)")
    s.add_argument("--keep-case", action="store_true", help="do not lowercase the sentences (MUSE lowercases)")
    s.add_argument("--moses", action="store_true", help="the files are raw text: Moses-preprocess each line first "
                   "(the project's preprocessing of each language, as the models' training text)")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto", help="of the similarity search")
    s.add_argument("--output", nargs="+", help="one result JSON per --encoder")
    s.set_defaults(func=cmd_europarl)
