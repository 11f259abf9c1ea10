"""LaBSE training data: the Moses-preprocessed N-way lines of an ``nway_data`` section (``tok/SPLIT.LANG``,
line i of every language the same sentence), tokenized with the run's WordPiece vocabulary.

* dual-encoder batches: (language, line) pairs, each a translation into the pivot (English) -- the
  paper trains on en-xx pairs; no two pairs of a batch share a pivot line (in N-way data the pivot
  sentence of line i is the target of every language's line i: twice in a batch it would be its own
  negative);
* pre-training examples (Section 3.4): every line of every language alone (MLM) and every pair
  concatenated ``[CLS] xx [SEP] en [SEP]`` (TLM), with 20% of the tokens (at most 80) masked as BERT
  (80% [MASK], 10% a random token, 10% kept); no language hint (footnote 13).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch

from laser_repro.core.textio import iter_lines
from laser_repro.data.nway import tok_files
from laser_repro.models.labse.vocab import CLS, MASK, PAD, SEP, SPECIAL_TOKENS

IGNORE = -100  # label of an unmasked token (torch's cross-entropy ignore_index)


def load_split(data_dir, split: str, langs: Sequence[str], tokenizer, max_len: int) -> dict[str, list[list[int]]]:
    """language -> token ids of each line (``[CLS] ... [SEP]``, cut to ``max_len``); aligned or an error."""
    tokenizer.enable_truncation(max_len)
    out = {}
    for lang, path in tok_files(data_dir, split, langs).items():
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file (the Moses-preprocessed {split} lines of {lang})")
        out[lang] = [enc.ids for enc in tokenizer.encode_batch(list(iter_lines(path)))]
    tokenizer.no_truncation()
    sizes = {lang: len(v) for lang, v in out.items()}
    if len(set(sizes.values())) != 1 or not next(iter(sizes.values())):
        raise ValueError(f"{Path(data_dir) / 'tok'}: {split} files are not line-aligned or empty: {sizes}")
    return out


def translation_pairs(langs: Sequence[str], pivot: str, n_lines: int) -> list[tuple[str, int]]:
    """(language, line) of every non-pivot line: the pair (line of language, same line of the pivot)."""
    return [(lang, i) for lang in langs if lang != pivot for i in range(n_lines)]


def pair_batches(pairs: Sequence[tuple[str, int]], batch_size: int, rng: np.random.Generator) -> list[list[tuple[str, int]]]:
    """The pairs shuffled into batches of ``batch_size`` in which no pivot line occurs twice (a pair that
    would repeat one waits for the next batch)."""
    order = rng.permutation(len(pairs))
    batches, pending = [], [pairs[i] for i in order]
    while pending:
        batch, lines, rest = [], set(), []
        for pair in pending:
            if len(batch) < batch_size and pair[1] not in lines:
                batch.append(pair)
                lines.add(pair[1])
            else:
                rest.append(pair)
        batches.append(batch)
        pending = rest
    return batches


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


def pretraining_examples(langs: Sequence[str], pivot: str, n_lines: int) -> list[tuple]:
    """("mlm", lang, line) for every line of every language and ("tlm", lang, line) for every pair."""
    return ([("mlm", lang, i) for lang in langs for i in range(n_lines)]
            + [("tlm", lang, i) for lang in langs if lang != pivot for i in range(n_lines)])


def example_tokens(example, data: Mapping[str, list[list[int]]], pivot: str, max_len: int) -> tuple[list[int], list[int]]:
    """Token ids and segment ids of a pre-training example (TLM: both sides cut to fit ``max_len``)."""
    kind, lang, i = example
    if kind == "mlm":
        ids = data[lang][i]
        return ids, [0] * len(ids)
    left, right = data[lang][i], data[pivot][i][1:]  # right: without its [CLS]
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
