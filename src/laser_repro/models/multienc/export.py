"""The encoders of a trained multi-encoder model as a standalone file, and the sentence encoder
that reads it.

File (``torch.save``; tensors and plain types only, so ``torch.load(weights_only=True)`` reads it)::

    {"family": "multienc", "format": 1, "model": model settings, "languages": [encoder languages],
     "dictionary": [tokens in id order], "encoders": {lang: LanguageEncoder state dict},
     "subword_model": the BPE codes it was trained with (laser_repro.models.subword; absent in older files)}

Only languages with an encoder can be embedded: the fixed target of a 1:1 system (e.g. Arabic in
"efsr-a") has a decoder only, so it has no embedding -- the paper's argument for 1:N training.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from laser_repro.core.errors import UserError
from laser_repro.models import subword
from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.device import exact_fp32
from laser_repro.models.multienc.data import collate
from laser_repro.models.multienc.model import Dictionary, build_encoder, embedding_dim
from laser_repro.models.multienc.paths import TrainingPaths

FAMILY, FORMAT = "multienc", 1
ENCODER_KEYS = ("family", "format", "model", "languages", "dictionary", "encoders")


def export_encoder(checkpoint_path, out_path) -> dict:
    """Write the encoders of a training checkpoint to ``out_path`` (atomically); returns
    ``{"path", "languages", "dim", "vocab_size"}``."""
    ckpt = load_model_file(checkpoint_path, what="multienc training checkpoint",
                           rebuild="rerun the training", weights_only=True, map_location="cpu")
    settings = ckpt["settings"]
    languages = TrainingPaths(settings["paths"]).encoder_languages()
    encoders = {lang: {name[len(f"encoders.{lang}."):]: tensor for name, tensor in ckpt["model"].items()
                       if name.startswith(f"encoders.{lang}.")}
                for lang in languages}
    payload = {"family": FAMILY, "format": FORMAT, "model": settings["model"], "languages": languages,
               "dictionary": list(ckpt["dictionary"]), "encoders": encoders,
               # the BPE codes of its training data (None: a checkpoint written before checkpoints named them)
               subword.RECORD_KEY: ckpt.get(subword.RECORD_KEY)}
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp{os.getpid()}")
    torch.save(payload, tmp)
    os.replace(tmp, out_path)
    return {"path": str(out_path), "languages": languages, "dim": embedding_dim(settings["model"]),
            "vocab_size": len(payload["dictionary"]), subword.RECORD_KEY: payload[subword.RECORD_KEY]}


class MultiencEncoder:
    """Sentence embeddings from an exported file: one encoder per language, eval mode, float32, on ``device``
    (the CPU unless given)."""

    def __init__(self, model_settings: dict, dictionary: Dictionary, encoders: dict, device="cpu", path=None):
        self.path = path
        self.dictionary = dictionary
        self.device = torch.device(device)
        self.encoders = {}
        for lang, state in encoders.items():
            with torch.device("cpu"):
                encoder = build_encoder(model_settings, len(dictionary))
            encoder.load_state_dict(state)
            self.encoders[lang] = encoder.eval().to(self.device)
        self.dim = embedding_dim(model_settings)
        self.languages = list(encoders)

    @classmethod
    def load(cls, path, device="cpu") -> "MultiencEncoder":
        """Read a file of :func:`export_encoder`; a truncated or foreign file raises, naming it."""
        data = load_model_file(path, what="multienc encoder file", rebuild="delete it and rerun the export",
                               weights_only=True, map_location="cpu")
        if not isinstance(data, dict) or data.get("family") != FAMILY or any(k not in data for k in ENCODER_KEYS):
            found = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise UserError(f"{path}: not a multienc encoder file (expected keys {list(ENCODER_KEYS)} with "
                             f"family {FAMILY!r}; found {found})")
        if data["format"] != FORMAT:
            raise UserError(f"{path}: multienc encoder format {data['format']!r}; this code reads {FORMAT}")
        return cls(data["model"], Dictionary.from_symbols(data["dictionary"]),
                   {lang: data["encoders"][lang] for lang in data["languages"]}, device, path)

    @torch.no_grad()
    def embed(self, bpe_lines: Sequence[str], lang: str, batch_size: int = 256) -> np.ndarray:
        """``(len(bpe_lines), dim)`` float32 embeddings of BPE'd sentences of ``lang``, in input order
        (batches are formed by length, for speed)."""
        if lang not in self.encoders:
            raise UserError(f"{self.path or 'this model'}: no encoder for language {lang!r}; "
                            f"it embeds {self.languages}")
        encoded = [self.dictionary.encode(line) for line in bpe_lines]
        out = np.zeros((len(encoded), self.dim), dtype=np.float32)
        order = np.argsort([-len(tokens) for tokens in encoded], kind="stable")
        with exact_fp32():  # no TF32 in cuDNN's LSTMs: the GPU's embeddings are the CPU's
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                tokens, lengths = collate([encoded[i] for i in rows])
                out[rows] = self.encoders[lang](tokens.to(self.device), lengths).cpu().numpy()
        return out
