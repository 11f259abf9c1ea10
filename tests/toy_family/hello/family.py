"""The toy family's model: the mean of hashed word vectors (an EmbeddingBag over crc32 buckets of the
Moses-preprocessed words), trained on the N-way lines with an in-batch ranking loss between two languages
of the same sentences. Small and fast; it trains for a fixed number of steps and keeps the last model."""
from __future__ import annotations

import json
import random
import zlib
from pathlib import Path

import numpy as np
import torch

from laser_repro.models.base import Encoder, ModelFamily, MosesInputFamily
from laser_repro.models.checkpoint_safety import load_model_file
from laser_repro.models.collectives import atomic_write

FORMAT = "hello-encoder/1"


def bucket_ids(line: str, buckets: int) -> list[int]:
    return [zlib.crc32(word.encode("utf-8")) % buckets for word in line.split()] or [0]


class HelloEncoder(Encoder):
    def __init__(self, weights: torch.Tensor):
        self.weights = weights.float()
        self.buckets, self.dim = self.weights.shape

    def tensor(self, lines) -> torch.Tensor:
        return torch.stack([self.weights[bucket_ids(line, self.buckets)].mean(0) for line in lines])

    def embed(self, lines, lang):
        return self.tensor(lines).numpy().astype(np.float32)


def _similarity_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """Algorithm 1 of one ordered pair: % of a's rows whose nearest b row (cosine) is not its translation."""
    a, b = torch.nn.functional.normalize(a, dim=1), torch.nn.functional.normalize(b, dim=1)
    return float((torch.argmax(a @ b.T, dim=1) != torch.arange(len(a))).float().mean() * 100)


class HelloFamily(MosesInputFamily, ModelFamily):
    name = "hello"
    curves_file = "curves.json"
    uses_gpu = False

    def fingerprint_settings(self, settings):
        return self.train_settings_without(settings, ("gpus",))

    def stopping_settings(self, settings):
        return {"steps": settings["train"]["steps"]}

    def data_files(self, data_dir, settings):
        return self.text_data_files(data_dir, settings["languages"])

    def train_worker(self, data_dir, save_dir, settings, *, rank, threads, device, stop_requested):
        files = self.data_files(data_dir, settings)
        text = {key: Path(path).read_text(encoding="utf-8").splitlines() for key, path in files.items()}
        langs, model, train = settings["languages"], settings["model"], settings["train"]
        torch.manual_seed(train["seed"])
        rng = random.Random(train["seed"])
        weights = torch.nn.Parameter(torch.randn(model["buckets"], model["dim"]) * 0.1)
        optimizer = torch.optim.Adam([weights], lr=train["lr"])
        save_dir = Path(save_dir)
        save_dir.mkdir(parents=True, exist_ok=True)

        def save(name, step):
            state = {"family": self.name, "settings": settings, "weights": weights.detach().clone(), "num_updates": step}
            atomic_write(save_dir / name, lambda tmp: torch.save(state, tmp))

        def embed(lines):
            return HelloEncoder(weights).tensor(lines)

        def pair_loss(a, b):
            logits = torch.nn.functional.normalize(embed(a), dim=1) @ torch.nn.functional.normalize(embed(b), dim=1).T
            return torch.nn.functional.cross_entropy(logits / 0.05, torch.arange(len(a)))

        save("checkpoint_init.pt", 0)
        curves, n = [], len(text[f"train.{langs[0]}"])
        for step in range(1, train["steps"] + 1):
            src, tgt = rng.sample(langs, 2)
            rows = rng.sample(range(n), train["batch_size"])
            loss = pair_loss([text[f"train.{src}"][i] for i in rows], [text[f"train.{tgt}"][i] for i in rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % train["interval"] == 0 or step == train["steps"]:
                with torch.no_grad():
                    valid = {lang: embed(text[f"valid.{lang}"]) for lang in langs}
                    pairs = {f"{p}-{q}": _similarity_error(valid[p], valid[q]) for p in langs for q in langs if p != q}
                    valid_loss = float(np.mean([pair_loss(text[f"valid.{p}"], text[f"valid.{q}"]).item()
                                                for p in langs for q in langs if p != q]))
                curves.append({"update": step, "train_loss": float(loss), "valid_loss": valid_loss, "pairs": pairs,
                               "valid_similarity_error": float(np.mean(list(pairs.values())))})
        save("checkpoint_last.pt", train["steps"])
        (save_dir / self.curves_file).write_text(json.dumps(curves, indent=1) + "\n", encoding="utf-8")
        return {"num_updates": train["steps"], "start_updates": 0, "preempted": False,
                "model": save_dir / "checkpoint_last.pt", "kept_update": train["steps"], "runtime": {"threads": threads}}

    def export(self, checkpoint, out):
        ckpt = load_model_file(checkpoint, what="hello training checkpoint", rebuild="train again",
                               weights_only=True, map_location="cpu")
        payload = {"format": FORMAT, "family": self.name, "weights": ckpt["weights"], "num_updates": ckpt["num_updates"]}
        atomic_write(Path(out), lambda tmp: torch.save(payload, tmp))
        return {"family": self.name, "dim": int(ckpt["weights"].shape[1]), "num_updates": int(ckpt["num_updates"])}

    def load_encoder(self, path):
        data = load_model_file(path, what="encoder", rebuild="export it again", weights_only=True, map_location="cpu")
        return HelloEncoder(data["weights"])
