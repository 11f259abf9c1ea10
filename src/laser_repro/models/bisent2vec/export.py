"""The exported Bi-Sent2Vec encoder: the vocabulary and the input matrix (unigram rows, then the bigram
buckets), tensors and plain types only (``torch.load(weights_only=True)``). A sentence is embedded as
the mean of its known words' rows and, for a bigram model, of its bigrams' rows (words outside the
vocabulary are dropped first, as fastText)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from laser_repro.core.errors import UserError
from laser_repro.models.bisent2vec import kernel
from laser_repro.models.bisent2vec.vocab import Vocabulary
from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.collectives import atomic_write

FORMAT = "bisent2vec-encoder/1"


def export_encoder(checkpoint, out) -> dict:
    ckpt = load_model_file(checkpoint, what="bisent2vec training checkpoint", rebuild="train again",
                           weights_only=True, map_location="cpu")
    if ckpt.get("family") != "bisent2vec":
        raise ValueError(f"{checkpoint}: not a bisent2vec training checkpoint (family {ckpt.get('family')!r})")
    model = ckpt["settings"]["model"]
    vocab = ckpt["vocab"]
    nwords = len(vocab["words"])
    matrix = ckpt["input"]
    payload = {"format": FORMAT, "family": "bisent2vec", "vocab": vocab, "ngrams": int(model["ngrams"]),
               "bucket": int(model["bucket"]), "unigrams": matrix[:nwords].clone(),
               "bigrams": matrix[nwords:].clone() if model["ngrams"] > 1 else None,
               "num_updates": int(ckpt["num_updates"]), "settings": ckpt["settings"]}
    atomic_write(Path(out), lambda tmp: torch.save(payload, tmp))
    return {"family": "bisent2vec", "languages": vocab["languages"], "words": nwords, "dim": int(matrix.shape[1]),
            "ngrams": payload["ngrams"], "num_updates": payload["num_updates"]}


class BiSent2VecEncoder:
    def __init__(self, data: Mapping, path=None):
        if data.get("format") != FORMAT:
            raise UserError(f"{path}: not a Bi-Sent2Vec encoder file (format {data.get('format')!r})")
        self.path = path
        self.vocab = Vocabulary.from_state(data["vocab"])
        self.languages = self.vocab.languages
        self.ngrams, self.bucket = int(data["ngrams"]), int(data["bucket"])
        parts = [data["unigrams"]] + ([data["bigrams"]] if self.ngrams > 1 else [])
        self.matrix = torch.cat(parts).numpy().astype(np.float32, copy=False)
        self.nwords = len(self.vocab)
        self.dim = int(self.matrix.shape[1])

    @classmethod
    def load(cls, path) -> "BiSent2VecEncoder":
        data = load_model_file(path, what="encoder", rebuild="delete it and rerun the export",
                               weights_only=True, map_location="cpu")
        return cls(data, path)

    def _lookup(self, lang: str) -> Mapping[str, int]:
        if lang not in self.languages:
            raise UserError(f"{self.path or 'this encoder'}: a Bi-Sent2Vec encoder of the pair "
                            f"{list(self.languages)}: it does not embed {lang!r}")
        return self.vocab.lookup(lang)

    def ids(self, token_lists: Sequence[Sequence[str]], lang: str) -> tuple[np.ndarray, np.ndarray]:
        lookup = self._lookup(lang)
        ids, offsets = [], [0]
        for tokens in token_lists:
            ids.extend(i for i in map(lookup.get, tokens) if i is not None)
            offsets.append(len(ids))
        return np.asarray(ids, dtype=np.int32), np.asarray(offsets, dtype=np.int64)

    def embed_tokens(self, token_lists: Sequence[Sequence[str]], lang: str,
                     weights: Mapping[str, float] | None = None) -> np.ndarray:
        """Sentence vectors: the mean of the unigram (+ bigram) rows; with ``weights`` (word -> weight, e.g.
        idf), the weighted mean of the unigram rows only (MUSE's bag-of-words sentence retrieval)."""
        if weights is None:
            ids, offsets = self.ids(token_lists, lang)
            out = np.zeros((len(token_lists), self.dim), dtype=np.float32)
            kernel.sentence_vectors(self.matrix, ids, offsets, self.ngrams, self.nwords, self.bucket, out)
            return out
        lookup = self._lookup(lang)
        out = np.zeros((len(token_lists), self.dim), dtype=np.float32)
        for n, tokens in enumerate(token_lists):
            rows = [(lookup[w], weights.get(w, 0.0)) for w in tokens if w in lookup]
            total = sum(wt for _, wt in rows)
            if rows and total > 0:
                idx = np.array([r for r, _ in rows])
                wts = np.array([wt for _, wt in rows], dtype=np.float32)
                out[n] = (wts[:, None] * self.matrix[idx]).sum(0) / total
        return out

    def embed(self, lines: Sequence[str], lang: str) -> np.ndarray:
        """Lines of the model's input text (Moses-tokenised, whitespace-separated words)."""
        return self.embed_tokens([line.split() for line in lines], lang)

    def word_vectors(self, lang: str) -> tuple[list[str], np.ndarray]:
        """``lang``'s words in vocabulary (frequency) order and their unigram rows."""
        self._lookup(lang)
        li = self.languages.index(lang)
        rows = [i for i, l in enumerate(self.vocab.langs) if l == li]
        return [self.vocab.words[i] for i in rows], self.matrix[rows]
