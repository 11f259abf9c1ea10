"""Word translation retrieval (bilingual lexicon induction) on the MUSE test dictionaries: Table 1 of
Bi-Sent2Vec (Sabet et al. 2019, Section 4.1), which ran MUSE's own evaluation (Lample et al. 2018,
``src/evaluation/word_translation.py`` of github.com/facebookresearch/MUSE). Its protocol, as we match it:

* **Vocabularies** (MUSE ``select_subset`` / ``read_txt_embeddings``): the words are taken in frequency
  order, lowercased, a lowercased duplicate keeps its first (most frequent) row, and each side keeps its
  first ``max_vocab`` = 200 000 distinct words (MUSE's ``--max_vocab`` default, one value for both sides;
  here ``max_target``, and ``max_source`` which defaults to it). A zero vector gets 0.01 in its first
  coordinate (MUSE does this when loading, to avoid NaNs on normalisation).
* **Queries** (MUSE ``load_dictionary``): a dictionary pair is kept only when its source word is in the
  source vocabulary **and** its target word in the target vocabulary. The queries are the distinct source
  words of the kept pairs, and their gold translations are the kept target words: a source word whose
  every translation is outside the target space is not a query (``n_missing_target``), nor is a source
  word outside the source vocabulary (``n_missing_source``). ``n`` = queries, ``n_dictionary`` = distinct
  source words of the dictionary file.
* **Scores**: every vector is L2-normalised; ``nn`` is the cosine; ``csls_knn_10`` is
  ``2 cos(x, y) - r_T(x) - r_S(y)`` where ``r_T(x)`` is the mean cosine of source word x to its 10 nearest
  target words (the whole target space) and ``r_S(y)`` the mean cosine of target word y to its 10 nearest
  source words (the whole source vocabulary, not only the queries), MUSE's ``get_nn_avg_dist``.
* **P@k** (k = 1, 5, 10): a query is correct at k when any of its gold translations is among its k best
  targets; reported in percent (100 x the mean over the queries), as MUSE and the paper's tables.

The test dictionaries are the ``{src}-{tgt}.5000-6500.txt`` files (1 500 source words, several lines per
word for several translations): :func:`dictionary_url`.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger("laser_repro")

#: MUSE's test dictionaries: data/get_evaluation.sh downloads ``$dl_path/dictionaries/$fname`` with
#: dl_path=https://dl.fbaipublicfiles.com/arrival and fname = ``en-$lg$suffix`` / ``$lg-en$suffix`` (and the
#: pairs among de es fr it pt), suffix in ``.txt .0-5000.txt .5000-6500.txt``; the test split is
#: ``.5000-6500.txt`` (``DIC_EVAL_PATH/%s-%s.5000-6500.txt`` in src/evaluation/word_translation.py),
#: ISO 639-1 codes, e.g. https://dl.fbaipublicfiles.com/arrival/dictionaries/en-fr.5000-6500.txt
MUSE_DICTIONARY_URL = "https://dl.fbaipublicfiles.com/arrival/dictionaries/{src}-{tgt}.5000-6500.txt"
#: the training split, for reference (not used by the evaluation)
MUSE_TRAIN_DICTIONARY_URL = "https://dl.fbaipublicfiles.com/arrival/dictionaries/{src}-{tgt}.0-5000.txt"

#: our ISO 639-3 keys -> the ISO 639-1 codes of MUSE's file names (the Bi-Sent2Vec languages)
ISO639_1 = {"eng": "en", "fra": "fr", "deu": "de", "spa": "es", "ita": "it", "rus": "ru", "hun": "hu",
            "fin": "fi"}

#: MUSE's --max_vocab default: both vocabularies keep their 200 000 most frequent words
MAX_VOCAB = 200_000
#: the retrieval methods of MUSE's evaluator (word and sentence translation)
METHODS = ("nn", "csls_knn_10")
#: P@k reported
TOP_K = (1, 5, 10)


def iso639_1(lang: str) -> str:
    try:
        return ISO639_1[lang]
    except KeyError:
        raise ValueError(f"no ISO 639-1 code known for {lang!r} (have {sorted(ISO639_1)})") from None


def dictionary_url(src: str, tgt: str) -> str:
    """URL of MUSE's test dictionary ``src -> tgt`` (ISO 639-3 codes in, ISO 639-1 in the file name).
    MUSE publishes en-xx and xx-en for 44 languages plus the pairs among de, es, fr, it, pt."""
    return MUSE_DICTIONARY_URL.format(src=iso639_1(src), tgt=iso639_1(tgt))


def read_dictionary(path: Path | str) -> list[tuple[str, str]]:
    """The ``(source word, target word)`` pairs of a MUSE dictionary, in file order (a source word on
    several lines has several correct translations). Lines are split on whitespace; blank lines are
    skipped; a line without exactly two fields raises ValueError naming the file and the line number
    (MUSE warns and skips a one-field line and crashes on three fields). MUSE asserts that the files are
    lowercase; we do not lowercase them."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 2:
                raise ValueError(f"{path}: line {number}: expected 'source_word target_word', got {line.rstrip()!r}")
            pairs.append((fields[0], fields[1]))
    return pairs


# ---- shared retrieval core (also used by laser_repro.evaluation.europarl) --------------------------------
def vocabulary_index(words: Sequence[str], max_vocab: int | None = MAX_VOCAB, *,
                     lowercase: bool = True) -> dict[str, int]:
    """MUSE's vocabulary: word -> row of the first occurrence, the words lowercased (a lowercased duplicate
    keeps its first, most frequent, row), at most ``max_vocab`` distinct words (None or <= 0: all)."""
    index: dict[str, int] = {}
    for row, word in enumerate(words):
        key = word.lower() if lowercase else word
        if key not in index:
            index[key] = row
            if max_vocab and max_vocab > 0 and len(index) >= max_vocab:
                break
    return index


def normalize_rows_muse(x) -> np.ndarray:
    """L2-normalised float32 rows; a zero row gets 0.01 in its first coordinate first (as MUSE's loader)."""
    x = np.array(x, dtype=np.float32, copy=True)
    if x.ndim != 2:
        raise ValueError(f"expected a (n, dim) matrix, got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1)
    zero = norms == 0
    if zero.any():
        x[zero, 0] = 0.01
        norms[zero] = 0.01
    return x / norms[:, None]


def _operand(x, device: str):
    """A dense matrix as a float32 torch tensor on ``device``; a scipy sparse matrix (TF-IDF) as it is (CPU)."""
    import torch

    if hasattr(x, "tocsr"):
        return x.tocsr()
    return torch.as_tensor(np.ascontiguousarray(x, dtype=np.float32), device=device)


def _similarities(queries, keys):
    """Dense float32 tensor ``queries @ keys.T`` of two :func:`_operand` results."""
    import torch

    if torch.is_tensor(keys):
        return queries @ keys.T
    sims = queries @ keys.T
    return torch.from_numpy(np.asarray(sims.toarray() if hasattr(sims, "toarray") else sims, dtype=np.float32))


def knn_mean_similarity(index, queries, k: int, *, batch: int = 512, device: str = "cpu") -> np.ndarray:
    """For each row of ``queries``, the mean similarity (dot product of normalised rows) to its ``k``
    nearest rows of ``index`` (MUSE ``get_nn_avg_dist(emb=index, query=queries, knn=k)``); ``k`` is capped
    at the number of index rows."""
    k = min(k, index.shape[0])
    index, queries = _operand(index, device), _operand(queries, device)
    out = np.empty(queries.shape[0], dtype=np.float32)
    for start in range(0, queries.shape[0], batch):
        sims = _similarities(queries[start:start + batch], index)
        out[start:start + batch] = sims.topk(k, dim=1).values.mean(dim=1).cpu().numpy()
    return out


def top_targets(queries, keys, k: int, *, query_penalty: np.ndarray | None = None,
                key_penalty: np.ndarray | None = None, batch: int = 512, device: str = "cpu") -> np.ndarray:
    """(n_queries, min(k, n_keys)) indices of the best keys of each query, best first: by the dot product,
    or with penalties by CSLS ``2 sim - query_penalty[i] - key_penalty[j]``. Queries are batched, so the
    full score matrix is never held."""
    import torch

    k = min(k, keys.shape[0])
    queries, keys = _operand(queries, device), _operand(keys, device)
    on = keys.device if torch.is_tensor(keys) else "cpu"
    kp = None if key_penalty is None else torch.as_tensor(np.asarray(key_penalty, dtype=np.float32), device=on)[None, :]
    qp_all = None if query_penalty is None else torch.as_tensor(np.asarray(query_penalty, dtype=np.float32), device=on)
    out = np.empty((queries.shape[0], k), dtype=np.int64)
    for start in range(0, queries.shape[0], batch):
        scores = _similarities(queries[start:start + batch], keys)
        if kp is not None:
            scores = 2 * scores - qp_all[start:start + batch, None] - kp
        out[start:start + batch] = scores.topk(k, dim=1).indices.cpu().numpy()
    return out


def resolve_device(choice: str) -> str:
    """``--device auto``: the GPU when torch sees one (200 000 x 200 000 CSLS neighbourhoods, paper-scale
    evaluation sets), else the CPU (every evaluation command's --device)."""
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU")
    return choice


def check_method(method: str) -> int | None:
    """The CSLS neighbourhood size of a method name (``csls_knn_K``), None for ``nn``."""
    if method == "nn":
        return None
    if method.startswith("csls_knn_") and method[len("csls_knn_"):].isdigit() and int(method[len("csls_knn_"):]) > 0:
        return int(method[len("csls_knn_"):])
    raise ValueError(f"unknown retrieval method {method!r}: 'nn' or 'csls_knn_K' (MUSE: {', '.join(METHODS)})")


def rank_keys(queries, keys, method: str, *, batch: int = 512, device: str = "cpu") -> np.ndarray:
    """The 10 best keys of every query by ``method`` on L2-normalised rows (MUSE: CSLS penalties from the
    K nearest keys of each query and the K nearest queries of each key)."""
    knn = check_method(method)
    if knn is None:
        return top_targets(queries, keys, max(TOP_K), batch=batch, device=device)
    return top_targets(queries, keys, max(TOP_K), batch=batch, device=device,
                       query_penalty=knn_mean_similarity(keys, queries, knn, batch=batch, device=device),
                       key_penalty=knn_mean_similarity(queries, keys, knn, batch=batch, device=device))


def precision_at_k(top: np.ndarray, gold: Sequence[set[int]] | Sequence[int]) -> dict[str, float]:
    """P@1/5/10 in percent: row i is correct at k when one of ``gold[i]`` is among ``top[i, :k]``."""
    n = len(gold)
    if n == 0:
        return {f"p@{k}": float("nan") for k in TOP_K}
    sets = [g if isinstance(g, (set, frozenset)) else {int(g)} for g in gold]
    out = {}
    for k in TOP_K:
        hits = sum(1 for row, g in zip(top[:, :k], sets) if g.intersection(row.tolist()))
        out[f"p@{k}"] = 100.0 * hits / n
    return out


# ---- word translation -------------------------------------------------------------------------------------
def _queries(src_index: Mapping[str, int], tgt_index: Mapping[str, int], pairs: Sequence[tuple[str, str]]):
    """MUSE ``load_dictionary``: keep the pairs with both words in the vocabularies; the queries (in first
    appearance order) with their gold target rows, and the counts."""
    gold: dict[str, set[int]] = {}
    dictionary_words: dict[str, None] = {}
    for s, t in pairs:
        dictionary_words.setdefault(s)
        if s in src_index and t in tgt_index:
            gold.setdefault(s, set()).add(tgt_index[t])
    missing_source = sum(1 for s in dictionary_words if s not in src_index)
    counts = {"n": len(gold), "n_dictionary": len(dictionary_words), "n_missing_source": missing_source,
              "n_missing_target": len(dictionary_words) - missing_source - len(gold)}
    return gold, counts


def word_translation(src_words: Sequence[str], src_vectors, tgt_words: Sequence[str], tgt_vectors,
                     pairs: Sequence[tuple[str, str]], *, method: str, max_target: int = MAX_VOCAB,
                     max_source: int | None = None, batch: int = 512, device: str = "cpu") -> dict:
    """P@1/5/10 (percent) of translating the dictionary's source words into the target space by ``method``
    (``"nn"`` or ``"csls_knn_10"``), MUSE's protocol (module docstring).

    ``src_words`` / ``tgt_words``: the vocabularies in frequency order, row i of ``*_vectors`` the vector of
    word i; ``max_target``: the target space is its first ``max_target`` distinct (lowercased) words;
    ``max_source`` (default: ``max_target``, MUSE's single ``--max_vocab``): the source vocabulary, which
    gives the queries and the CSLS neighbourhoods of the targets.

    Returns ``{"p@1", "p@5", "p@10", "n": queries, "n_dictionary": distinct dictionary source words,
    "n_missing_source", "n_missing_target": those not queried, "n_target": size of the target space}``.
    """
    check_method(method)
    src_vectors, tgt_vectors = np.asarray(src_vectors), np.asarray(tgt_vectors)
    for name, words, vectors in (("source", src_words, src_vectors), ("target", tgt_words, tgt_vectors)):
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise ValueError(f"{name}: {len(words)} words but vectors of shape {vectors.shape}")
    if src_vectors.shape[1] != tgt_vectors.shape[1]:
        raise ValueError(f"source and target dimensions differ: {src_vectors.shape[1]} vs {tgt_vectors.shape[1]}")
    src_index = vocabulary_index(src_words, max_target if max_source is None else max_source)
    tgt_index = vocabulary_index(tgt_words, max_target)
    gold, counts = _queries(src_index, tgt_index, pairs)
    counts["n_target"] = len(tgt_index)
    if not gold:
        raise ValueError(f"no dictionary pair has both words in the vocabularies ({counts})")
    # the spaces in MUSE's row order (the kept rows), gold as positions in the target space
    src_rows = np.fromiter(src_index.values(), dtype=np.int64)
    tgt_rows = np.fromiter(tgt_index.values(), dtype=np.int64)
    src = normalize_rows_muse(src_vectors[src_rows])
    tgt = normalize_rows_muse(tgt_vectors[tgt_rows])
    src_pos = {w: i for i, w in enumerate(src_index)}
    tgt_pos = {row: i for i, row in enumerate(tgt_rows.tolist())}
    query_pos = np.array([src_pos[w] for w in gold], dtype=np.int64)
    gold_pos = [{tgt_pos[row] for row in rows} for rows in gold.values()]
    queries = src[query_pos]
    knn = check_method(method)
    if knn is None:
        top = top_targets(queries, tgt, max(TOP_K), batch=batch, device=device)
    else:
        # r_T of the queries (over the target space) and r_S of every target (over the whole source vocabulary)
        top = top_targets(queries, tgt, max(TOP_K), batch=batch, device=device,
                          query_penalty=knn_mean_similarity(tgt, queries, knn, batch=batch, device=device),
                          key_penalty=knn_mean_similarity(src, tgt, knn, batch=batch, device=device))
    result = precision_at_k(top, gold_pos)
    result.update(counts)
    log.info("word translation %s: %s", method, result)
    return result


def identical_strings(src_words: Sequence[str] | None, tgt_words: Sequence[str] | None,
                      pairs: Sequence[tuple[str, str]], max_target: int = MAX_VOCAB,
                      max_source: int | None = None) -> dict:
    """The non-learned baseline on :func:`word_translation`'s queries: a source word is translated as the
    same string when that string is in the target space (else it has no translation); correct when that
    string is one of its gold translations, so P@1 = P@5 = P@10. ``src_words`` / ``tgt_words`` None: no
    vocabulary restriction (every dictionary pair is kept and every string is in the target space)."""
    src_index = ({s: 0 for s, _ in pairs} if src_words is None
                 else vocabulary_index(src_words, max_target if max_source is None else max_source))
    tgt_index = ({t: i for i, (_, t) in enumerate(pairs)} if tgt_words is None
                 else vocabulary_index(tgt_words, max_target))
    gold_words: dict[str, set[str]] = {}
    for s, t in pairs:
        if s in src_index and t in tgt_index:
            gold_words.setdefault(s, set()).add(t)
    _, counts = _queries(src_index, tgt_index, pairs)
    counts["n_target"] = len(tgt_index) if tgt_words is not None else None
    if not gold_words:
        raise ValueError(f"no dictionary pair has both words in the vocabularies ({counts})")
    hits = sum(1 for s, gold in gold_words.items() if s in gold)  # gold words are in the target space
    p = 100.0 * hits / len(gold_words)
    return {"p@1": p, "p@5": p, "p@10": p, **counts}


# ---- command line -----------------------------------------------------------------------------------------
def load_pair_encoders(paths, langs, command: str) -> list:
    """The Bi-Sent2Vec encoders of ``paths``; each must embed both ``langs``."""
    from laser_repro.models.bisent2vec.export import BiSent2VecEncoder

    loaded = []
    for path in paths:
        encoder = BiSent2VecEncoder.load(path)
        missing = [lang for lang in langs if lang not in encoder.languages]
        if missing:
            raise SystemExit(f"{command}: {path} has no {missing} (its languages: {encoder.languages})")
        loaded.append(encoder)
    return loaded


def cmd_word_translation(a) -> None:
    """Each ``--encoder`` with its ``--output`` (e.g. a model and the same model at update 0: one job reads
    the dictionary once); ``--identical-strings OUT``: the baseline on the first encoder's vocabularies
    (the same queries), or on the whole dictionary without an encoder."""
    import torch

    from laser_repro.core.textio import write_json

    torch.set_num_threads(a.threads)
    device = resolve_device(a.device)
    encoders, outputs = list(a.encoder or []), list(a.output or [])
    if len(encoders) != len(outputs):
        raise SystemExit(f"word-translation: one --output per --encoder ({len(encoders)} encoders, {len(outputs)} outputs)")
    if not encoders and not a.identical_strings:
        raise SystemExit("word-translation: give --encoder E --output OUT and/or --identical-strings OUT")
    pairs = read_dictionary(a.dictionary)
    base = {"task": "muse_words", "src": a.src, "tgt": a.tgt, "dictionary": str(a.dictionary),
            "max_target": a.max_target}
    loaded = load_pair_encoders(encoders, (a.src, a.tgt), "word-translation")
    if a.identical_strings:
        src_words = tgt_words = None
        out = {**base, "encoder": "identical_strings"}
        if loaded:  # the same queries as the encoder's evaluation
            src_words, tgt_words = loaded[0].word_vectors(a.src)[0], loaded[0].word_vectors(a.tgt)[0]
            out["vocabulary"] = str(encoders[0])
        out["results"] = {"identical_strings": identical_strings(src_words, tgt_words, pairs, max_target=a.max_target)}
        write_json(a.identical_strings, out)
        log.info("%s -> %s identical strings: %s", a.src, a.tgt, out["results"])
    for path, encoder, output in zip(encoders, loaded, outputs):
        src_words, src_vectors = encoder.word_vectors(a.src)
        tgt_words, tgt_vectors = encoder.word_vectors(a.tgt)
        results = {method: word_translation(src_words, src_vectors, tgt_words, tgt_vectors, pairs, method=method,
                                            max_target=a.max_target, device=device)
                   for method in METHODS}
        write_json(output, {**base, "encoder": str(path), "results": results})
        log.info("%s -> %s with %s: %s", a.src, a.tgt, path, results)


def add_cli(sub) -> None:
    s = sub.add_parser("word-translation", help="MUSE word translation P@1/5/10 of a Bi-Sent2Vec encoder "
                                                "(or the identical-strings baseline)")
    s.add_argument("--encoder", nargs="+", help="exported Bi-Sent2Vec encoders (each with its --output; the "
                                                "first one's vocabularies give the --identical-strings queries)")
    s.add_argument("--identical-strings", metavar="OUT",
                   help="also write the non-learned baseline (translate a word as the same string) to OUT")
    s.add_argument("--src", required=True, help="ISO 639-3 code of the query language")
    s.add_argument("--tgt", required=True, help="ISO 639-3 code of the target language")
    s.add_argument("--dictionary", required=True, help="MUSE test dictionary (src-tgt.5000-6500.txt)")
    s.add_argument("--max-target", type=int, default=MAX_VOCAB,
                   help="target space (and source vocabulary): the N most frequent words (MUSE --max_vocab)")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="where the similarities are computed (CSLS over 200k x 200k words: ~20 min on 2 CPU cores)")
    s.add_argument("--output", nargs="+", help="one result JSON per --encoder")
    s.set_defaults(func=cmd_word_translation)
