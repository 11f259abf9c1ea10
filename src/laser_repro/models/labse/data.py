"""LaBSE training data: the Moses-preprocessed N-way lines of an ``nway_data`` section (``tok/SPLIT.LANG``,
line i of every language the same sentence), tokenized once with the run's WordPiece vocabulary into
read-only mapped arrays (laser_repro.models.labse.token_store); here, what is formed from them:

* dual-encoder batches: (language, line) pairs, each a translation into the pivot (English) -- the
  paper trains on en-xx pairs; no two pairs of a batch share a pivot line (in N-way data the pivot
  sentence of line i is the target of every language's line i: twice in a batch it would be its own
  negative);
* pre-training examples (Section 3.4): every line of every language alone (MLM) and every pair
  concatenated ``[CLS] xx [SEP] en [SEP]`` (TLM), with 20% of the tokens (at most 80) masked as BERT
  (80% [MASK], 10% a random token, 10% kept); no language hint (footnote 13).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from laser_repro.models.labse.vocab import CLS, MASK, PAD, SEP, SPECIAL_TOKENS

IGNORE = -100  # label of an unmasked token (torch's cross-entropy ignore_index)


def _check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, not {batch_size}")


def _shuffled(n: int, rng: np.random.Generator) -> np.ndarray:
    """A permutation of 0 .. n-1, int32 where it fits (half the memory of ``rng.permutation``)."""
    order = np.arange(n, dtype=np.int32 if n < 2 ** 31 else np.int64)
    rng.shuffle(order)
    return order


class PairBatches(Sequence):
    """One epoch of dual-encoder batches: lists of (language, line) pairs, each pair (line of the language,
    same line of the pivot) once, no pivot line twice in a batch (it would be its own negative).

    Formed in time linear in the lines, and any batch without forming the ones before it (a resume):
    the epoch is K rounds (K = the non-pivot languages); round r takes every line once, in the order of a
    permutation seeded by (``seed``, r), with the language ``others[(shift[line] + r) % K]`` (``shift``:
    a random offset per line, seeded by ``seed``), so every pair comes once in the epoch and the
    languages mix in a batch. The batches are consecutive slices of a round (a round's last one may be
    shorter). Memory: one round's permutation and the offsets (6 bytes a line)."""

    def __init__(self, langs: Sequence[str], pivot: str, n_lines: int, batch_size: int, seed: Sequence[int]):
        _check_batch_size(batch_size)
        self.others = [lang for lang in langs if lang != pivot]
        self.n_lines, self.batch_size, self.seed = n_lines, batch_size, [int(s) for s in seed]
        self.per_round = -(-n_lines // batch_size)
        self.shift = np.random.default_rng(self.seed).integers(0, len(self.others), size=n_lines, dtype=np.uint16)
        self._round: tuple[int, np.ndarray | None] = (-1, None)

    def __len__(self) -> int:
        return len(self.others) * self.per_round

    def _order(self, round_: int) -> np.ndarray:
        if self._round[0] != round_:  # the batches are read in order: one round at a time
            self._round = (round_, _shuffled(self.n_lines, np.random.default_rng([*self.seed, round_ + 1])))
        return self._round[1]

    def __getitem__(self, index: int) -> list[tuple[str, int]]:
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        round_, j = divmod(index, self.per_round)
        lines = self._order(round_)[j * self.batch_size:(j + 1) * self.batch_size]
        langs = (self.shift[lines].astype(np.int64) + round_) % len(self.others)
        return [(self.others[k], i) for k, i in zip(langs.tolist(), lines.tolist())]


class PretrainingExamples(Sequence):
    """The pre-training examples of ``n_lines`` N-way lines, by index, without a list of them:
    ("mlm", lang, line) for every line of every language, then ("tlm", lang, line) for every pair."""

    def __init__(self, langs: Sequence[str], pivot: str, n_lines: int):
        self.langs, self.others, self.n_lines = list(langs), [lang for lang in langs if lang != pivot], n_lines

    def __len__(self) -> int:
        return (len(self.langs) + len(self.others)) * self.n_lines

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        if not 0 <= index < len(self):
            raise IndexError(f"example {index} of {len(self)}")
        which, line = divmod(int(index), self.n_lines)
        if which < len(self.langs):
            return ("mlm", self.langs[which], line)
        return ("tlm", self.others[which - len(self.langs)], line)


class ShuffledBatches(Sequence):
    """One epoch of ``examples`` in batches of ``batch_size`` (the last may be smaller), in the order of a
    permutation drawn from ``rng`` (4 bytes an example)."""

    def __init__(self, examples: Sequence, batch_size: int, rng: np.random.Generator):
        _check_batch_size(batch_size)
        self.examples, self.batch_size = examples, batch_size
        self.order = _shuffled(len(examples), rng)

    def __len__(self) -> int:
        return -(-len(self.order) // self.batch_size)

    def __getitem__(self, index: int) -> list:
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        return [self.examples[k] for k in self.order[index * self.batch_size:(index + 1) * self.batch_size].tolist()]


def collate(sentences: Sequence[Sequence[int]], token_types: Sequence[Sequence[int]] | None = None):
    """Padded ``input_ids``, ``attention_mask`` (and ``token_type_ids``) of token id lists, on the CPU (a
    trainer moves them to its device)."""
    width = max(len(s) for s in sentences)
    ids = torch.zeros(len(sentences), width, dtype=torch.long, device="cpu")  # [PAD] is id 0
    mask = torch.zeros(len(sentences), width, dtype=torch.long, device="cpu")
    types = torch.zeros(len(sentences), width, dtype=torch.long, device="cpu")
    for row, sentence in enumerate(sentences):
        ids[row, :len(sentence)] = torch.as_tensor(sentence, device="cpu")
        mask[row, :len(sentence)] = 1
        if token_types is not None:
            types[row, :len(sentence)] = torch.as_tensor(token_types[row], device="cpu")
    return ids, mask, types


def example_tokens(example, data: Mapping[str, Sequence[Sequence[int]]], pivot: str,
                   max_len: int) -> tuple[list[int], list[int]]:
    """Token ids and segment ids of a pre-training example (TLM: both sides cut to fit ``max_len``)."""
    kind, lang, i = example
    if kind == "mlm":
        ids = np.asarray(data[lang][i]).tolist()
        return ids, [0] * len(ids)
    left, right = np.asarray(data[lang][i]).tolist(), np.asarray(data[pivot][i][1:]).tolist()  # right: no [CLS]
    budget = max_len - len(left)
    if budget < 2:  # keep room for the other side
        left = left[:max_len // 2 - 1] + [left[-1]]
        budget = max_len - len(left)
    if len(right) > budget:
        right = right[:budget - 1] + [right[-1]]
    return left + right, [0] * len(left) + [1] * len(right)


def mask_tokens(ids: torch.Tensor, attention: torch.Tensor, rng: np.random.Generator, *, vocab_size: int,
                prob: float = 0.2, max_masked: int = 80) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking of a padded batch: ``prob`` of each sequence's non-special tokens (at least one, at
    most ``max_masked``) are chosen; of those 80% become [MASK], 10% a random token, 10% stay. Returns
    the masked ids and the labels (the original id where chosen, IGNORE elsewhere)."""
    special = len(SPECIAL_TOKENS)  # ids 0-4: [PAD] [UNK] [CLS] [SEP] [MASK]
    mask_id = SPECIAL_TOKENS.index(MASK)
    ids_np = ids.numpy().copy()
    labels = np.full_like(ids_np, IGNORE)
    for row in range(ids_np.shape[0]):
        candidates = np.flatnonzero((ids_np[row] >= special) & (attention[row].numpy() == 1))
        if len(candidates) == 0:
            continue
        k = min(max_masked, max(1, int(round(prob * len(candidates)))))
        chosen = rng.choice(candidates, size=k, replace=False)
        labels[row, chosen] = ids_np[row, chosen]
        action = rng.random(k)
        ids_np[row, chosen[action < 0.8]] = mask_id
        randomised = chosen[(action >= 0.8) & (action < 0.9)]
        ids_np[row, randomised] = rng.integers(special, vocab_size, size=len(randomised))
    return torch.from_numpy(ids_np), torch.from_numpy(labels)


assert SPECIAL_TOKENS[:4] == (PAD, "[UNK]", CLS, SEP)  # collate pads with 0, masking skips ids < 5
