"""N-way parallel training data: line i of every language is the same sentence.

Layout of a data directory::

    dict.txt              joint dictionary (model.Dictionary.save)
    train.<lang>          BPE'd text, one sentence a line, line-aligned across languages
    valid.<lang>

Sentences are held as one flat int32 array per language plus offsets (laser_repro.models.token_arrays).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import numpy as np
import torch

from laser_repro.models.multienc.model import PAD, Dictionary
from laser_repro.models.token_arrays import TokenArrays, pack


def read_sentences(path: Path, dictionary: Dictionary) -> TokenArrays:
    """Encoded lines of ``path``; a missing or empty file raises, naming it."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (expected BPE'd text, one sentence a line)")
    with open(path, encoding="utf-8") as f:
        sentences = pack(dictionary.encode(line) for line in f)
    if not len(sentences):
        raise ValueError(f"{path}: the file is empty")
    return sentences


def load_split(data_dir, split: str, langs: Sequence[str], dictionary: Dictionary,
               max_len: Optional[int] = None) -> dict[str, TokenArrays]:
    """``{lang: sentences}`` of ``<data_dir>/<split>.<lang>``, line-aligned across ``langs``.

    ``max_len``: a line is dropped in every language when it has more than that many tokens
    (``</s>`` not counted) in any, so that the languages stay aligned."""
    data_dir = Path(data_dir)
    data = {lang: read_sentences(data_dir / f"{split}.{lang}", dictionary) for lang in langs}
    first = langs[0]
    for lang in langs[1:]:
        if len(data[lang]) != len(data[first]):
            raise ValueError(f"{data_dir / f'{split}.{lang}'} has {len(data[lang])} lines but "
                             f"{data_dir / f'{split}.{first}'} has {len(data[first])}: the files must be line-aligned")
    if max_len is not None:
        keep = np.ones(len(data[first]), dtype=bool)
        for sentences in data.values():
            keep &= sentences.lengths() - 1 <= max_len
        if not keep.any():
            raise ValueError(f"{data_dir}/{split}.*: every line has more than max_len={max_len} tokens in some language")
        if not keep.all():
            indices = np.flatnonzero(keep)
            data = {lang: sentences.select(indices) for lang, sentences in data.items()}
    return data


def batches(n_sentences: int, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """One epoch of shuffled index batches (the last one may be smaller)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, not {batch_size}")
    order = rng.permutation(n_sentences)
    return [order[start:start + batch_size] for start in range(0, n_sentences, batch_size)]


def collate(token_lists: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``([B, T] LongTensor right-padded with <pad>, [B] lengths)``, on the CPU (a trainer moves the ids to
    its device in one copy; the lengths stay: packing reads them on the CPU)."""
    lengths = torch.tensor([len(tokens) for tokens in token_lists], dtype=torch.long, device="cpu")
    padded = torch.full((len(token_lists), int(lengths.max()) if len(token_lists) else 0), PAD, dtype=torch.long,
                        device="cpu")
    for row, tokens in enumerate(token_lists):
        padded[row, :len(tokens)] = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
    return padded, lengths
