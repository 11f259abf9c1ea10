"""Bi-Sent2Vec (Sabet et al. 2019): the loss and SGD step of the compiled kernel against hand-written
and autograd references with fixed negatives, contexts, vocabulary, training (learning, determinism,
resume) and the exported encoder."""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import torch

from laser_repro.models.bisent2vec import kernel, vocab
from laser_repro.models.bisent2vec.export import BiSent2VecEncoder, export_encoder
from laser_repro.models.bisent2vec.trainer import train
from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.launch import Rank


def never():
    return False


def logistic(x):
    return math.log1p(math.exp(-x))


def load_safely(path):
    return load_model_file(path, what="test", rebuild="-", weights_only=True, map_location="cpu")


# ---- the loss: one example, fixed negatives ---------------------------------------------------------
def test_sgd_step_loss_and_update_match_autograd_with_fixed_negatives():
    rng = np.random.default_rng(0)
    wi = rng.normal(scale=0.5, size=(6, 4)).astype(np.float64)
    wo = rng.normal(scale=0.5, size=(6, 4)).astype(np.float64)
    context, target, negatives, lr = np.array([1, 2, 4], dtype=np.int64), 3, np.array([0, 5], dtype=np.int64), 0.1
    # hand-written eq. 1: l(u_t . v) + sum over negatives l(-u_n . v), v the mean of the context rows
    v = wi[context].mean(0)
    expected = logistic(wo[target] @ v) + sum(logistic(-(wo[n] @ v)) for n in negatives)
    # the SGD step is one step of gradient descent on that loss
    ti, to = torch.tensor(wi, requires_grad=True), torch.tensor(wo, requires_grad=True)
    h = ti[torch.tensor(context)].mean(0)
    loss = torch.nn.functional.softplus(-(to[target] @ h)) + sum(torch.nn.functional.softplus(to[n] @ h) for n in negatives)
    loss.backward()
    got = kernel.sgd_step(wi, wo, context, 3, target, negatives, lr, np.empty(4), np.empty(4))
    assert got == pytest.approx(expected, rel=1e-12)
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    np.testing.assert_allclose(wi, (ti - lr * ti.grad).detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(wo, (to - lr * to.grad).detach().numpy(), atol=1e-12)
    # CBOW's step (the benchmark's anchor): every context row moves by the hidden gradient, m times the above
    wi2, wo2 = rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    a, b = wi2.copy(), wi2.copy()
    kernel.sgd_step(a, wo2.copy(), context, 3, target, negatives, lr, np.empty(4), np.empty(4))
    kernel.sgd_step(b, wo2.copy(), context, 3, target, negatives, lr, np.empty(4), np.empty(4), False)
    np.testing.assert_allclose(b - wi2, 3 * (a - wi2), atol=1e-12)


def test_context_masks_the_target_and_hashes_bigrams():
    out, drop, state = np.empty(20, dtype=np.int64), np.empty(10, dtype=bool), np.array([7], dtype=np.uint64)
    tokens = np.array([9, 5, 6, 7], dtype=np.int32)
    m = kernel.build_context(tokens, 1, 4, 1, out, drop, 1, 0, 10, 100, state)
    assert list(out[:m]) == [5, 0, 7]  # position 1 is the placeholder, no bigrams
    m = kernel.build_context(tokens, 1, 4, 1, out, drop, 2, 0, 10, 100, state)
    bigram = lambda a, b: 10 + (a * kernel.BIGRAM_MULTIPLIER + b) % 100  # noqa: E731
    assert list(out[:m]) == [5, 0, 7, bigram(5, 0), bigram(0, 7)]
    # word dropout: k positions leave the bigrams (unigrams stay), never below 2 kept positions
    long = np.arange(1, 9, dtype=np.int32)
    m = kernel.build_context(long, 0, 8, -1, out, drop, 2, 3, 10, 100, state)
    assert list(out[:8]) == list(long) and drop[:8].sum() == 3
    assert m - 8 == sum(1 for i in range(7) if not drop[i] and not drop[i + 1])


def _pair_corpus():
    # two pairs: word ids 1..4 English, 5..8 French; id 9 only ever a negative
    tok1, off1 = np.array([1, 2, 3, 4, 1], dtype=np.int32), np.array([0, 3, 5], dtype=np.int64)
    tok2, off2 = np.array([5, 6, 7, 8], dtype=np.int32), np.array([0, 2, 4], dtype=np.int64)
    return tok1, off1, tok2, off2


def test_pair_loss_is_eq3_monolingual_plus_crosslingual():
    """Without a step (lr 0), subsampling (keep 1) or bigrams, the kernel's loss over the corpus is eq. 3
    with the negatives fixed to one word: for every word of both sides, the monolingual term (its
    sentence with it replaced by the placeholder) plus the cross-lingual term (the translation)."""
    rng = np.random.default_rng(1)
    wi, wo = rng.normal(scale=0.3, size=(10, 5)), rng.normal(scale=0.3, size=(10, 5))
    tok1, off1, tok2, off2 = _pair_corpus()
    neg, negative = 3, 9
    stats = np.zeros(len(kernel.STATS))
    kernel.train_pairs(wi, wo, tok1, off1, tok2, off2, np.arange(2), np.ones(10), np.array([negative], dtype=np.int32),
                       10, 1, 1, 0, neg, 0.0, 0.0, 1.0, 1, np.array([3], dtype=np.uint64), stats, 8)

    def term(context, target):
        v = wi[context].mean(0)
        return logistic(wo[target] @ v) + neg * logistic(-(wo[negative] @ v))

    mono = cross = 0.0
    sides = [(list(tok1[off1[p]:off1[p + 1]]), list(tok2[off2[p]:off2[p + 1]])) for p in range(2)]
    for a, b in sides:
        for s, o in ((a, b), (b, a)):
            for i, w in enumerate(s):
                mono += term(s[:i] + [0] + s[i + 1:], w)
                cross += term(o, w)
    assert stats[1] == stats[3] == 9 and stats[4] == 9 and stats[5] == 2
    assert stats[0] == pytest.approx(mono, rel=1e-12) and stats[2] == pytest.approx(cross, rel=1e-12)


def test_subsampling_and_negative_table_follow_the_counts():
    v = vocab.build({"eng": ["a a a a b", "a c"], "fra": ["x y y"]}, ["eng", "fra"], min_count=1, max_size=None)
    assert v.words == [vocab.PLACEHOLDER, "a", "y", "b", "c", "x"] and v.langs == [-1, 0, 1, 0, 0, 1]
    assert v.ntokens == 10 and v.lookup("fra") == {"y": 2, "x": 5}
    keep = v.keep_probabilities(0.1)
    f = 5 / 10
    assert keep[0] == 0.0 and keep[1] == pytest.approx(math.sqrt(0.1 / f) + 0.1 / f) and keep[3] == 1.0
    table = v.negative_table(10_000, seed=1)
    share = np.bincount(table, minlength=6) / len(table)
    assert share[0] == 0 and share[1] / share[3] == pytest.approx(math.sqrt(5), rel=0.01)
    small = vocab.build({"eng": ["a a a a b", "a c"], "fra": ["x y y"]}, ["eng", "fra"], min_count=2, max_size=2)
    assert small.words == [vocab.PLACEHOLDER, "a"]
    with pytest.raises(ValueError, match="min_count"):
        vocab.build({"eng": ["a"], "fra": ["b"]}, ["eng", "fra"], min_count=5, max_size=None)


# ---- training on a synthetic pair ---------------------------------------------------------------
TOPICS, PER_TOPIC = 20, 10
CONCEPTS = TOPICS * PER_TOPIC


def write_pair(root, n_train=2000, n_valid=100, seed=0):
    """English sentences of concepts e<i>; their French translation the same concepts as f<i>, reversed.
    A sentence draws its concepts from one topic (and one from anywhere): without co-occurrence
    structure shared by the languages nothing ties the two languages' input vectors together (the
    cross-lingual term alone maps one language's inputs onto the other's outputs); and with too few words,
    a sentence's own words are drawn as negatives so often that a word's input vector is pushed away
    from its own output vector, and so from its translation's input vector (200 words here)."""
    rng = random.Random(seed)
    (root / "tok").mkdir(parents=True)
    for split, n in (("train", n_train), ("valid", n_valid)):
        en, fr = [], []
        for _ in range(n):
            topic = rng.randrange(TOPICS)
            concepts = rng.sample(range(topic * PER_TOPIC, (topic + 1) * PER_TOPIC), rng.randint(2, 4))
            concepts += [c for c in [rng.randrange(CONCEPTS)] if c not in concepts]
            rng.shuffle(concepts)
            en.append(" ".join(f"e{c}" for c in concepts))
            fr.append(" ".join(f"f{c}" for c in reversed(concepts)))
        (root / "tok" / f"{split}.eng").write_text("\n".join(en) + "\n")
        (root / "tok" / f"{split}.fra").write_text("\n".join(fr) + "\n")
    v = vocab.build_from_files({lang: root / "tok" / f"train.{lang}" for lang in ("eng", "fra")}, ["eng", "fra"],
                               min_count=1, max_size=None)
    vocab.save(v, root / "vocab.json")
    return root


def settings(root, **train):
    return {"languages": ["eng", "fra"], "vocab": str(root / "vocab.json"),
            "model": {"dim": 16, "ngrams": 2, "bucket": 1000, "neg": 5, "t": 1e-2},
            "train": {"epochs": 6, "lr": 0.2, "chunk_pairs": 500, "validations_per_epoch": 2,
                      "neg_table_size": 10_000, **train}}


def test_training_learns_to_translate_words_and_sentences(tmp_path):
    root = write_pair(tmp_path / "d")
    out = train(root, tmp_path / "m", settings(root), rank=Rank(), stop_requested=never)
    assert out["num_updates"] == 6 * 2000 and not out["preempted"]
    curves = json.loads((tmp_path / "m" / "curves.json").read_text())
    assert len(curves) == 1 + 6 * 2 and curves[0]["update"] == 0
    assert curves[0]["valid_similarity_error"] > 80  # chance: 99/100 of the lines
    assert curves[-1]["valid_similarity_error"] < 10 and curves[-1]["valid_loss"] < curves[0]["valid_loss"]
    export_encoder(tmp_path / "m" / "checkpoint_last.pt", tmp_path / "encoder.pt")
    enc = BiSent2VecEncoder.load(tmp_path / "encoder.pt")
    words, vectors = enc.word_vectors("eng")
    fr_words, fr_vectors = enc.word_vectors("fra")
    assert set(words) == {f"e{c}" for c in range(CONCEPTS)}
    sims = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)) @ (
        fr_vectors / np.linalg.norm(fr_vectors, axis=1, keepdims=True)).T
    correct = sum(fr_words[int(np.argmax(sims[i]))] == f"f{w[1:]}" for i, w in enumerate(words))
    assert correct >= 0.9 * CONCEPTS
    # the encoder at update 0 knows nothing
    export_encoder(tmp_path / "m" / "checkpoint_init.pt", tmp_path / "init.pt")
    assert load_safely(tmp_path / "init.pt")["num_updates"] == 0


def test_embedding_is_the_mean_of_unigram_and_bigram_rows(tmp_path):
    root = write_pair(tmp_path / "d", n_train=50, n_valid=5)
    train(root, tmp_path / "m", settings(root, epochs=1), rank=Rank(), stop_requested=never)
    export_encoder(tmp_path / "m" / "checkpoint_last.pt", tmp_path / "encoder.pt")
    data = load_safely(tmp_path / "encoder.pt")  # tensors and plain types only
    assert data["family"] == "bisent2vec" and data["bigrams"].shape == (1000, 16)
    enc = BiSent2VecEncoder.load(tmp_path / "encoder.pt")
    lookup = enc.vocab.lookup("eng")
    w1, w2 = list(lookup)[:2]
    a, b = lookup[w1], lookup[w2]
    bigram = len(enc.vocab) + (a * kernel.BIGRAM_MULTIPLIER + b) % 1000
    expected = (enc.matrix[a] + enc.matrix[b] + enc.matrix[bigram]) / 3
    got = enc.embed([f"{w1} unknown {w2}", "", w1], "eng")  # unknown words are dropped before the bigrams
    np.testing.assert_allclose(got[0], expected, rtol=1e-6)
    assert not got[1].any() and np.allclose(got[2], enc.matrix[a])
    weighted = enc.embed_tokens([[w1, w2, "zzz"]], "eng", weights={w1: 3.0, w2: 1.0})
    np.testing.assert_allclose(weighted[0], (3 * enc.matrix[a] + enc.matrix[b]) / 4, rtol=1e-6)
    with pytest.raises(ValueError, match="does not embed 'deu'"):
        enc.embed(["x"], "deu")


def test_one_thread_is_deterministic_and_resume_continues_exactly(tmp_path):
    root = write_pair(tmp_path / "d", n_train=200, n_valid=20)
    opts = settings(root, epochs=2, chunk_pairs=50)
    calls = {"n": 0}

    def stop_after_3():
        calls["n"] += 1
        return calls["n"] > 3

    first = train(root, tmp_path / "resumed", opts, rank=Rank(), stop_requested=stop_after_3)
    assert first["preempted"] and first["num_updates"] == 150
    second = train(root, tmp_path / "resumed", opts, rank=Rank(), stop_requested=never)  # 5 chunks, 4 validations
    assert second["start_updates"] == 150 and second["num_updates"] == 400
    train(root, tmp_path / "straight", opts, rank=Rank(), stop_requested=never)
    a, b = load_safely(tmp_path / "resumed" / "checkpoint_last.pt"), load_safely(tmp_path / "straight" / "checkpoint_last.pt")
    for key in ("input", "output"):
        torch.testing.assert_close(a[key], b[key], atol=0, rtol=0)
    with pytest.raises(ValueError, match="other \\['model'\\] settings"):
        changed = settings(root, epochs=2)
        changed["model"]["neg"] = 3
        train(root, tmp_path / "resumed", changed, rank=Rank(), stop_requested=never)


def test_hogwild_threads_train_too(tmp_path):
    root = write_pair(tmp_path / "d")
    train(root, tmp_path / "m", settings(root), rank=Rank(), threads=2, stop_requested=never)
    curves = json.loads((tmp_path / "m" / "curves.json").read_text())
    assert curves[-1]["valid_similarity_error"] < 20


def test_settings_are_checked(tmp_path):
    root = write_pair(tmp_path / "d", n_train=20, n_valid=5)
    with pytest.raises(ValueError, match="unknown key\\(s\\) \\['dims'\\] in 'model'"):
        train(root, tmp_path / "m", {**settings(root), "model": {"dims": 3}}, rank=Rank(), stop_requested=never)
    with pytest.raises(ValueError, match="one pair"):
        train(root, tmp_path / "m", {**settings(root), "languages": ["eng", "fra", "deu"]}, rank=Rank(),
              stop_requested=never)
    with pytest.raises(ValueError, match="one process"):
        train(root, tmp_path / "m", settings(root), rank=Rank(rank=0, world_size=2), stop_requested=never)
    (root / "tok" / "valid.fra").write_text("f1\n")
    with pytest.raises(ValueError, match="not aligned"):
        train(root, tmp_path / "m2", settings(root), rank=Rank(), stop_requested=never)


def test_curves_mark_the_last_model_and_the_pairs_baseline(tmp_path):
    """A pair model's figure: TF-IDF over its own two directions (not every pair of the data), kept = last."""
    from laser_repro.evaluation.nway import baseline_level, kept_row, plot_curves

    rows = [{"update": u, "epoch": u / 10, "train_loss": 1.0, "valid_loss": 2.0, "valid_similarity_error": e,
             "pairs": {"eng-fra": e, "fra-eng": e}} for u, e in ((0, 99.0), (10, 40.0), (20, 45.0))]
    tfidf = {"mean": 60.0, "pairs": {"eng-fra": 16.0, "fra-eng": 18.0, "eng-rus": 90.0, "rus-eng": 88.0}}
    assert baseline_level(rows, tfidf) == 17.0
    assert kept_row(rows, "bisent2vec")["update"] == 20 and kept_row(rows, "labse")["update"] == 10
    plot_curves(rows, tmp_path / "c.png", title="t", tfidf=tfidf, family="bisent2vec")
    assert (tmp_path / "c.png").stat().st_size > 10000


def test_long_lines_are_cut_to_max_len_words_and_counted(tmp_path):
    """A pair costs the square of its length: a 1-MB line (a crawled page on one line) is cut to its first
    max_len words (default 1024), in training and validation, and the lines cut are counted per language."""
    from laser_repro.models.bisent2vec.family import BiSent2VecFamily

    root = write_pair(tmp_path / "d", n_train=50, n_valid=5)
    train_file = root / "tok" / "train.eng"
    lines = train_file.read_text().splitlines()
    page = " ".join(f"e{i % CONCEPTS}" if i % 100 == 0 else f"unknown{i}" for i in range(200_000))
    assert len(page) > 1_000_000
    lines[3] = page
    train_file.write_text("\n".join(lines) + "\n")
    out = train(root, tmp_path / "m", settings(root, epochs=1), rank=Rank(), stop_requested=never)
    assert out["capped_lines"] == {"train": {"eng": 1, "fra": 0}, "valid": {"eng": 0, "fra": 0}, "max_len": 1024}
    assert load_safely(tmp_path / "m" / "checkpoint_last.pt")["settings"]["train"]["max_len"] == 1024

    # a small cap: every line longer than it is counted (validation too), and training still learns
    valid_lengths = {lang: [len(line.split()) for line in (root / "tok" / f"valid.{lang}").read_text().splitlines()]
                     for lang in ("eng", "fra")}
    out = train(root, tmp_path / "m3", settings(root, epochs=1, max_len=3), rank=Rank(), stop_requested=never)
    assert out["capped_lines"]["valid"] == {lang: sum(n > 3 for n in lengths)
                                            for lang, lengths in valid_lengths.items()}
    assert out["capped_lines"]["valid"]["eng"] > 0
    # a setting of the weights: part of the fingerprint
    family = BiSent2VecFamily()
    assert (family.fingerprint_settings(settings(root, max_len=3))
            != family.fingerprint_settings(settings(root, max_len=4)))
    with pytest.raises(ValueError, match="max_len must be a positive integer"):
        train(root, tmp_path / "m0", settings(root, max_len=0), rank=Rank(), stop_requested=never)
