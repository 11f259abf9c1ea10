"""A LaBSE encoder file: the transformer's weights, its settings and the WordPiece vocabulary in one file
of tensors and plain types (``torch.load(weights_only=True)``); embeds with batches sorted by length."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from laser_repro.core.textio import atomic_output
from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.labse import data as labse_data
from laser_repro.models.labse.model import build_encoder, sentence_embedding

FORMAT = 1


def export_encoder(checkpoint, out) -> dict:
    """The encoder of a training checkpoint of either stage (a pre-training checkpoint gives its
    ``bert`` part: the pre-trained model's [CLS] embedding, a baseline)."""
    ckpt = load_model_file(checkpoint, what="labse training checkpoint", rebuild="train it again",
                           weights_only=True, map_location="cpu")
    if ckpt.get("family") != "labse":
        raise ValueError(f"{checkpoint}: not a labse training checkpoint")
    state = ckpt["model"]
    if ckpt["stage"] == "pretrain":
        state = {k[len("bert."):]: v for k, v in state.items() if k.startswith("bert.")}
    encoder = dict(ckpt["settings"]["encoder"], layers=int(ckpt["depth"]))
    payload = {"family": "labse", "format": FORMAT, "encoder": encoder, "vocab_size": int(ckpt["vocab_size"]),
               "tokenizer": ckpt["tokenizer"], "model": state, "num_updates": int(ckpt["num_updates"]),
               "stage": ckpt["stage"]}
    with atomic_output(out, "wb") as f:
        torch.save(payload, f)
    return {"output": str(out), "num_updates": payload["num_updates"], "stage": ckpt["stage"],
            "layers": encoder["layers"], "dim": encoder["hidden"], "vocab_size": payload["vocab_size"]}


class LabseEncoder:
    """The encoder of a file, eval mode, float32, on ``device`` (the CPU unless given)."""

    def __init__(self, payload: dict, path, device="cpu"):
        from laser_repro.models.labse import vocab

        if payload.get("family") != "labse" or payload.get("format") != FORMAT:
            raise ValueError(f"{path}: not a labse encoder file of format {FORMAT}")
        self.path = path
        self.max_len = int(payload["encoder"]["max_len"])
        self.device = torch.device(device)
        with torch.device("cpu"):
            self.bert = build_encoder(payload["encoder"], payload["vocab_size"])
        self.bert.load_state_dict(payload["model"])
        self.bert.eval().to(self.device)
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(payload["tokenizer"])
        self.tokenizer.enable_truncation(self.max_len)
        self.dim = int(payload["encoder"]["hidden"])
        self.num_updates = payload["num_updates"]

    @classmethod
    def load(cls, path, device="cpu") -> "LabseEncoder":
        return cls(load_model_file(path, what="labse encoder", rebuild="rerun its export", weights_only=True,
                                   map_location="cpu"), path, device)

    @torch.no_grad()
    def embed(self, lines: Sequence[str], lang: str, *, batch_size: int = 128) -> np.ndarray:
        """l2-normalised [CLS] embeddings (one shared encoder: ``lang`` is not used)."""
        ids = [enc.ids for enc in self.tokenizer.encode_batch(list(lines))]
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        order = np.argsort([len(s) for s in ids], kind="stable")  # batches of similar length: less padding
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            input_ids, mask, _ = labse_data.collate([ids[i] for i in rows])
            out[rows] = sentence_embedding(self.bert, input_ids.to(self.device), mask.to(self.device)).cpu().numpy()
        return out


def load(path: Path) -> LabseEncoder:
    return LabseEncoder.load(path)
