"""The Bi-Sent2Vec training kernel (Sabet et al. 2019, eq. 1-3), compiled by numba.

One call trains one thread's share of a chunk of sentence pairs with plain SGD, as the paper's
C++ (fastText) does: several threads call it at once on the same weight matrices without locks
(hogwild; the functions release the GIL). For each pair (S1, S2) and each target word w of S_l that
survives subsampling (kept with probability min(1, sqrt(t/f_w) + t/f_w)):

* monolingual term: the context is S_l with w replaced by the placeholder (row 0), plus its word
  bigrams (``ngrams`` = 2) with ``dropout_k`` random positions dropped from the bigrams (Sent2Vec's
  word dropout), predicting w;
* cross-lingual term: the context is the translation S_l' (+ its bigrams, dropout drawn again),
  predicting w.

Each term is the logistic loss l(x) = log(1 + e^-x) of the target and of ``neg`` negatives drawn from
the unigram distribution raised to 1/2 (a shuffled table, as fastText), on the mean of the context's
input rows. The SGD step (learning rate ``lr``) moves the output rows, and every context row by the
gradient of the mean (1/m of the hidden gradient), i.e. exact SGD on eq. 3 for distinct negatives.
Bigram ids: ``nwords + (id_i * 116049371 + id_j) mod bucket`` (fastText's n-gram hashing of word ids).
"""
from __future__ import annotations

import numpy as np
from numba import njit

BIGRAM_MULTIPLIER = 116049371
#: |x| above which the sigmoid is taken as 0 or 1 (fastText's MAX_SIGMOID)
MAX_SIGMOID = 8.0
#: LLVM may reassociate the float sums (SIMD dot products and row updates); NaN/inf semantics are kept
FAST = {"reassoc", "nsz", "arcp", "contract"}
#: stats columns of one thread: loss sums and example counts of both terms, tokens, pairs
STATS = ("mono_loss", "mono_n", "cross_loss", "cross_n", "tokens", "pairs")


@njit(cache=True, nogil=True)
def _rand(state):
    """xorshift64* (a per-thread state of one uint64): the next 64 random bits."""
    x = state[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[0] = x
    return x * np.uint64(2685821657736338717)


@njit(cache=True, nogil=True)
def _uniform(state):
    return (_rand(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=True, nogil=True)
def _randint(state, n):
    return np.int64(_rand(state) % np.uint64(n))


@njit(cache=True, nogil=True)
def build_context(tokens, start, stop, masked, out, drop, ngrams, dropout_k, nwords, bucket, state):
    """Write the context of sentence ``tokens[start:stop]`` into ``out`` (position ``masked``, relative,
    replaced by the placeholder 0; -1: none) with its word bigrams; returns its length."""
    n = stop - start
    for j in range(n):
        out[j] = tokens[start + j]
    if masked >= 0:
        out[masked] = 0
    m = n
    if ngrams > 1 and n > 1:
        for j in range(n):
            drop[j] = False
        dropped = 0
        while dropped < dropout_k and n - dropped > 2:
            j = _randint(state, n)
            if not drop[j]:
                drop[j] = True
                dropped += 1
        for i in range(n):
            if drop[i]:
                continue
            h = np.uint64(out[i])
            for j in range(i + 1, min(n, i + ngrams)):
                if drop[j]:
                    break
                h = h * np.uint64(BIGRAM_MULTIPLIER) + np.uint64(out[j])
                out[m] = nwords + np.int64(h % np.uint64(bucket))
                m += 1
    return m


@njit(cache=True, nogil=True, fastmath=FAST)
def sgd_step(wi, wo, context, m, target, negatives, lr, hidden, grad, mean_gradient=True):
    """One example: the logistic loss of ``target`` (label 1) and ``negatives`` (label 0) on the mean
    of the context rows, and its SGD step. Returns the loss before the step. ``mean_gradient``: every
    context row moves by the gradient of the mean (Sent2Vec, Bi-Sent2Vec); False: by the hidden gradient
    itself (word2vec's and fastText's CBOW, only for the speed comparison of scripts/benchmark_bisent2vec.py)."""
    if m == 0:
        return 0.0
    dim = wi.shape[1]
    for d in range(dim):
        hidden[d] = 0.0
        grad[d] = 0.0
    for c in range(m):
        row = context[c]
        for d in range(dim):
            hidden[d] += wi[row, d]
    inv = hidden.dtype.type(1.0) / m
    for d in range(dim):
        hidden[d] *= inv
    loss = 0.0
    for k in range(negatives.shape[0] + 1):
        if k == 0:
            t, label = target, 1.0
        else:
            t, label = negatives[k - 1], 0.0
        x = hidden[0] * 0  # the weights' precision (float32): SIMD-friendly
        for d in range(dim):
            x += wo[t, d] * hidden[d]
        if x > MAX_SIGMOID:
            score = 1.0
        elif x < -MAX_SIGMOID:
            score = 0.0
        else:
            score = 1.0 / (1.0 + np.exp(-x))
        z = x if label == 1.0 else -x  # the paper's l(z) = log(1 + e^-z), computed stably
        loss += (np.log1p(np.exp(-z)) if z > 0 else np.log1p(np.exp(z)) - z)
        alpha = hidden.dtype.type(lr * (label - score))
        for d in range(dim):
            grad[d] += alpha * wo[t, d]
            wo[t, d] += alpha * hidden[d]
    if mean_gradient:
        for d in range(dim):
            grad[d] *= inv
    for c in range(m):
        row = context[c]
        for d in range(dim):
            wi[row, d] += grad[d]
    return loss


@njit(cache=True, nogil=True)
def _draw_negatives(negatives, neg_table, target, state):
    for k in range(negatives.shape[0]):
        t = neg_table[_randint(state, neg_table.shape[0])]
        tries = 0
        while t == target and tries < 100:  # never the target itself (fastText redraws too)
            t = neg_table[_randint(state, neg_table.shape[0])]
            tries += 1
        negatives[k] = t


@njit(cache=True, nogil=True, fastmath=FAST)
def train_pairs(wi, wo, tok1, off1, tok2, off2, order, pdiscard, neg_table, nwords, bucket, ngrams, dropout_k,
                neg, lr0, tokens_before, total_tokens, threads, state, stats, max_len):
    """Train on the pairs ``order`` (indices into the offsets) in that order. The learning rate decays
    linearly with the tokens seen: ``lr0 * (1 - progress)``, progress = (``tokens_before`` + this thread's
    tokens x ``threads``) / ``total_tokens`` (the threads advance together). ``lr0`` = 0: the loss only.
    ``stats`` (float64, len(STATS)) is added to."""
    dim = wi.shape[1]
    context = np.empty(max_len * max(ngrams, 1) + 1, dtype=np.int64)
    drop = np.empty(max_len + 1, dtype=np.bool_)
    hidden = np.empty(dim, dtype=wi.dtype)
    grad = np.empty(dim, dtype=wi.dtype)
    negatives = np.empty(neg, dtype=np.int64)
    local_tokens = 0.0
    for p in order:
        s1, e1, s2, e2 = off1[p], off1[p + 1], off2[p], off2[p + 1]
        n_tokens = (e1 - s1) + (e2 - s2)
        progress = (tokens_before + local_tokens * threads) / total_tokens
        lr = lr0 * max(0.0, 1.0 - progress)
        local_tokens += n_tokens
        stats[4] += n_tokens
        stats[5] += 1
        if n_tokens < 1:
            continue
        for side in range(2):
            if side == 0:
                toks, start, stop, other, ostart, ostop = tok1, s1, e1, tok2, s2, e2
            else:
                toks, start, stop, other, ostart, ostop = tok2, s2, e2, tok1, s1, e1
            for i in range(stop - start):
                w = toks[start + i]
                if _uniform(state) > pdiscard[w]:
                    continue
                _draw_negatives(negatives, neg_table, w, state)
                m = build_context(toks, start, stop, i, context, drop, ngrams, dropout_k, nwords, bucket, state)
                stats[0] += sgd_step(wi, wo, context, m, w, negatives, lr, hidden, grad)
                stats[1] += 1
                if ostop > ostart:
                    _draw_negatives(negatives, neg_table, w, state)
                    m = build_context(other, ostart, ostop, -1, context, drop, ngrams, dropout_k, nwords, bucket,
                                      state)
                    stats[2] += sgd_step(wi, wo, context, m, w, negatives, lr, hidden, grad)
                    stats[3] += 1


@njit(cache=True, nogil=True, fastmath=FAST)
def sentence_vectors(matrix, tokens, offsets, ngrams, nwords, bucket, out):
    """Each sentence ``tokens[offsets[i]:offsets[i+1]]`` (word ids) -> the mean of its unigram rows and,
    with ``ngrams`` = 2, of its bigram rows (no dropout, no placeholder); an empty sentence stays 0."""
    dim = matrix.shape[1]
    for i in range(offsets.shape[0] - 1):
        start, stop = offsets[i], offsets[i + 1]
        for d in range(dim):
            out[i, d] = 0.0
        m = 0
        for j in range(start, stop):
            for d in range(dim):
                out[i, d] += matrix[tokens[j], d]
            m += 1
            if ngrams > 1:
                h = np.uint64(tokens[j])
                for k in range(j + 1, min(stop, j + ngrams)):
                    h = h * np.uint64(BIGRAM_MULTIPLIER) + np.uint64(tokens[k])
                    row = nwords + np.int64(h % np.uint64(bucket))
                    for d in range(dim):
                        out[i, d] += matrix[row, d]
                    m += 1
        if m:
            for d in range(dim):
                out[i, d] /= m


@njit(cache=True, nogil=True, fastmath=FAST)
def train_cbow(wi, wo, tokens, offsets, order, keep, neg_table, window, neg, lr0, tokens_before, total_tokens,
               threads, state, stats, max_len):
    """fastText's CBOW on the same machinery (for scripts/benchmark_bisent2vec.py: the speed anchor on the
    same objective): each line's words are subsampled first, then every word is predicted from the words
    within a window drawn uniformly in [1, ``window``], each context row moved by the hidden gradient."""
    dim = wi.shape[1]
    line = np.empty(max_len, dtype=np.int64)
    context = np.empty(2 * window, dtype=np.int64)
    hidden = np.empty(dim, dtype=wi.dtype)
    grad = np.empty(dim, dtype=wi.dtype)
    negatives = np.empty(neg, dtype=np.int64)
    local_tokens = 0.0
    for p in order:
        start, stop = offsets[p], offsets[p + 1]
        progress = (tokens_before + local_tokens * threads) / total_tokens
        lr = lr0 * max(0.0, 1.0 - progress)
        local_tokens += stop - start
        stats[4] += stop - start
        n = 0
        for j in range(start, stop):
            if _uniform(state) <= keep[tokens[j]]:
                line[n] = tokens[j]
                n += 1
        for i in range(n):
            b = 1 + _randint(state, window)
            m = 0
            for c in range(max(0, i - b), min(n, i + b + 1)):
                if c != i:
                    context[m] = line[c]
                    m += 1
            _draw_negatives(negatives, neg_table, line[i], state)
            stats[0] += sgd_step(wi, wo, context, m, line[i], negatives, lr, hidden, grad, False)
            stats[1] += 1
