"""Sentences of token ids held as one flat int32 array plus offsets: 4 bytes a token (a list of Python int
lists takes ~36), which the corpora of the papers (the 8.3M-line UN corpus, in several languages) need."""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import numpy as np


class TokenArrays(Sequence):
    """``self[i]``: the int32 id array of sentence i; ``self[a:b]``: a list of them."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray):
        self.flat, self.offsets = flat, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"sentence {i} of {len(self)}")
        i %= len(self)
        return self.flat[self.offsets[i]:self.offsets[i + 1]]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def nbytes(self) -> int:
        return self.flat.nbytes + self.offsets.nbytes

    def select(self, indices: np.ndarray) -> "TokenArrays":
        """The sentences at ``indices``, in that order."""
        lengths = self.lengths()[indices]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        # token j of the result comes from its sentence's old start + (j - the sentence's new start)
        shift = np.repeat(self.offsets[:-1][indices] - offsets[:-1], lengths)
        return TokenArrays(self.flat[shift + np.arange(offsets[-1])], offsets)


def pack(sentences: Iterable[Sequence[int]]) -> TokenArrays:
    """The token id sequences of an iterable (consumed as it streams: nothing but the ids is kept)."""
    flat, offsets = array("i"), array("q", [0])
    for ids in sentences:
        flat.extend(ids)
        offsets.append(len(flat))
    return TokenArrays(np.frombuffer(flat, dtype=np.int32), np.frombuffer(offsets, dtype=np.int64))
