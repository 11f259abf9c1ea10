"""Standalone LASER sentence encoder (pure PyTorch; no fairseq).

Reads the file written by :func:`laser_repro.models.laser.export.export_encoder`::

    {"params": {num_embeddings, padding_idx, embed_dim, hidden_size, num_layers,
                bidirectional, left_pad, padding_value},          # LASER's Encoder(**params)
     "model": <state dict: embed_tokens.weight, lstm.weight_ih_l0, ...>,
     "dictionary": {symbol: index},
     "meta": {eos_idx, unk_idx, bos_idx, ...}}                    # optional

with ``torch.load(weights_only=True)``, and computes exactly what the fairseq
``laser_lstm`` encoder computes in eval mode: embeddings -> packed BiLSTM -> max-pool over
time (padding excluded).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Iterable, Iterator, List, Mapping, Optional, Sequence

import numpy as np
import torch
import torch.nn as nn

from laser_repro.core.errors import UserError
from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.device import exact_fp32

_WHITESPACE = re.compile(r"\s+")


class BiLSTMMaxPoolEncoder(nn.Module):
    """Token embeddings -> (Bi)LSTM -> max-pooling over the non-padding time steps.

    Parameter names follow LASER (``embed_tokens.*``, ``lstm.*``)."""

    def __init__(
        self,
        num_embeddings: int,
        padding_idx: int,
        embed_dim: int = 320,
        hidden_size: int = 512,
        num_layers: int = 1,
        bidirectional: bool = False,
        padding_value: float = 0.0,
    ):
        super().__init__()
        self.padding_idx = padding_idx
        self.padding_value = padding_value
        self.embed_tokens = nn.Embedding(num_embeddings, embed_dim, padding_idx=padding_idx)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers, bidirectional=bidirectional)
        self.output_dim = hidden_size * (2 if bidirectional else 1)

    def forward(self, src_tokens: torch.Tensor, src_lengths: torch.Tensor) -> torch.Tensor:
        """``src_tokens``: [B, T] right-padded ids; ``src_lengths``: [B] -> [B, output_dim]."""
        seqlen = src_tokens.size(1)
        emb = self.embed_tokens(src_tokens).transpose(0, 1)  # T x B x E
        packed = nn.utils.rnn.pack_padded_sequence(emb, src_lengths.to("cpu", torch.int64), enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, padding_value=self.padding_value, total_length=seqlen)
        steps = torch.arange(seqlen, device=out.device).unsqueeze(1)  # T x 1
        pad = (steps >= src_lengths.to(out.device).unsqueeze(0)).unsqueeze(-1)  # T x B x 1
        return out.masked_fill(pad, float("-inf")).max(dim=0).values


def _length_sorted_batches(lengths: np.ndarray, max_tokens: int, max_sentences: Optional[int]) -> List[np.ndarray]:
    """Indices sorted by decreasing length, cut into batches with
    ``n_sentences * longest <= max_tokens`` (a longer sentence gets a batch of its own)."""
    order = np.argsort(-lengths, kind="stable")
    batches: List[np.ndarray] = []
    start = 0
    n = len(order)
    while start < n:
        longest = int(lengths[order[start]])
        size = max(1, int(max_tokens) // max(longest, 1))
        if max_sentences is not None:
            size = min(size, int(max_sentences))
        batches.append(order[start : start + size])
        start += size
    return batches


class SentenceEncoder:
    """Embeds BPE'd sentences with an exported LASER encoder."""

    def __init__(self, module: BiLSTMMaxPoolEncoder, dictionary: Mapping[str, int], *, eos_idx: int, unk_idx: int,
                 device="cpu", meta: Optional[dict] = None):
        self.device = torch.device(device)
        self.module = module.to(self.device).eval()
        self.dictionary = dict(dictionary)
        self.eos_idx = int(eos_idx)
        self.unk_idx = int(unk_idx)
        self.padding_idx = int(module.padding_idx)
        self.meta = dict(meta or {})

    @property
    def dim(self) -> int:
        return self.module.output_dim

    @classmethod
    def load(cls, path, device="cpu") -> "SentenceEncoder":
        state = load_model_file(path, what="exported encoder",
                                rebuild=f"delete {path} and rerun the step that writes it (snakemake, or "
                                        f"`laser-repro export --checkpoint CHECKPOINT --output {path}`)",
                                map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or any(key not in state for key in ("params", "model", "dictionary")):
            found = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise UserError(f"{path}: not a LASER encoder file (expected the keys params, model, dictionary; "
                            f"found {found})")
        params = dict(state["params"])
        module = BiLSTMMaxPoolEncoder(
            num_embeddings=int(params["num_embeddings"]),
            padding_idx=int(params["padding_idx"]),
            embed_dim=int(params["embed_dim"]),
            hidden_size=int(params["hidden_size"]),
            num_layers=int(params["num_layers"]),
            bidirectional=bool(params["bidirectional"]),
            padding_value=float(params.get("padding_value", 0.0)),
        )
        module.load_state_dict(state["model"], strict=True)
        dictionary = state["dictionary"]
        meta = dict(state.get("meta") or {})
        eos_idx = meta.get("eos_idx", dictionary.get("</s>", 2))
        unk_idx = meta.get("unk_idx", dictionary.get("<unk>", 3))
        return cls(module, dictionary, eos_idx=eos_idx, unk_idx=unk_idx, device=device, meta=meta)

    # -- tokens ---------------------------------------------------------------------------
    def encode_tokens(self, lines: Sequence[str]) -> List[List[int]]:
        """Space-separated BPE pieces -> ids (unknown pieces -> <unk>) + </s>, like fairseq's
        binarizer."""
        get, unk, eos = self.dictionary.get, self.unk_idx, self.eos_idx
        out = []
        for line in lines:
            pieces = _WHITESPACE.sub(" ", line).strip().split()
            out.append([get(p, unk) for p in pieces] + [eos])
        return out

    # -- embedding ------------------------------------------------------------------------
    def embed_ids(self, token_ids: Sequence[Sequence[int]], max_tokens: int = 12000,
                  max_sentences: Optional[int] = None) -> np.ndarray:
        """Embeddings (float32 [N, dim], input order) of already-encoded sentences."""
        n = len(token_ids)
        result = np.empty((n, self.dim), dtype=np.float32)
        if n == 0:
            return result
        lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=n)
        if (lengths == 0).any():
            raise ValueError("empty token sequence (every sentence needs at least </s>)")
        with torch.inference_mode(), exact_fp32():  # no TF32 in cuDNN's LSTMs: the GPU's embeddings are the CPU's
            for batch in _length_sorted_batches(lengths, max_tokens, max_sentences):
                blens = lengths[batch]
                tokens = np.full((len(batch), int(blens.max())), self.padding_idx, dtype=np.int64)
                for row, idx in enumerate(batch):
                    tokens[row, : blens[row]] = token_ids[idx]
                emb = self.module(
                    torch.from_numpy(tokens).to(self.device), torch.from_numpy(blens)
                )
                result[batch] = emb.float().cpu().numpy()
        return result

    def embed(self, bpe_lines: Sequence[str], max_tokens: int = 12000, max_sentences: Optional[int] = None) -> np.ndarray:
        """float32 [N, dim] embeddings of BPE'd lines, in the ORIGINAL order (the computation
        runs on length-sorted batches bounded by ``max_tokens`` incl. padding)."""
        return self.embed_ids(self.encode_tokens(bpe_lines), max_tokens=max_tokens, max_sentences=max_sentences)


def _read_lines(path) -> Iterator[str]:
    # split on "\n" only, so that row i of the output is line i of the file (as `wc -l` counts)
    with open(path, encoding="utf-8", newline="\n") as fh:
        for line in fh:
            yield line


def _chunks(it: Iterable[str], size: int) -> Iterator[List[str]]:
    chunk: List[str] = []
    for x in it:
        chunk.append(x)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def embed_file(encoder: SentenceEncoder, bpe_path, out_npy, *, max_tokens: int = 12000,
               chunk_lines: int = 100000, progress: bool = True) -> int:
    """Embed every line of ``bpe_path`` into a float32 ``.npy`` file [rows, dim].

    The file is read in chunks of ``chunk_lines`` (memory stays bounded), written into a
    memory-mapped temporary ``.npy`` next to ``out_npy`` and renamed into place at the end.
    Returns the number of rows."""
    out_npy = Path(out_npy)
    rows = sum(1 for _ in _read_lines(bpe_path))
    out_npy.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_npy.with_name(f".{out_npy.name}.tmp{os.getpid()}.npy")
    try:
        if rows == 0:  # numpy cannot memory-map an empty array
            np.save(tmp, np.empty((0, encoder.dim), dtype=np.float32))
            os.replace(tmp, out_npy)
            return 0
        arr = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(rows, encoder.dim))
        done, t0 = 0, time.time()
        for chunk in _chunks(_read_lines(bpe_path), max(1, int(chunk_lines))):
            arr[done : done + len(chunk)] = encoder.embed(chunk, max_tokens=max_tokens)
            done += len(chunk)
            if progress:
                rate = done / max(time.time() - t0, 1e-9)
                print(f"embed_file {bpe_path}: {done}/{rows} sentences ({rate:.0f} sent/s)", file=sys.stderr)
        if done != rows:
            raise RuntimeError(f"{bpe_path} changed while embedding ({done} vs {rows} lines)")
        arr.flush()
        del arr
        os.replace(tmp, out_npy)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return rows
