"""The multi-encoder model of Schwenk & Douze (2017): partial paths, encoders, data, training (learning,
exact resume, 2 processes = 1), the similarity error and the exported encoder.

The synthetic data are three "languages" that write the same random concept sequences with different
token ciphers (the third one reversed), so that translating between them is learnable by tiny models."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from laser_repro.models.checkpoint_safety import CorruptFileError
from laser_repro.models.launch import Rank
from laser_repro.models.multienc.data import batches, collate, load_split
from laser_repro.models.multienc.export import MultiencEncoder, export_encoder
from laser_repro.models.multienc.model import EOS, UNK, Dictionary, LanguageEncoder, build_model, embedding_dim
from laser_repro.models.multienc.paths import TrainingPaths
from laser_repro.models.multienc.trainer import train
from laser_repro.models.similarity import similarity_error_matrix

LANGS = ["aaa", "bbb", "ccc"]


def make_cipher_data(data_dir: Path, n_train=1500, n_valid=100, concepts=16, seed=0) -> Path:
    """``train.*`` / ``valid.*`` of :data:`LANGS` and ``dict.txt`` in ``data_dir``."""
    rng = np.random.default_rng(seed)
    ciphers = [np.arange(concepts), rng.permutation(concepts), rng.permutation(concepts)]
    data_dir.mkdir(parents=True, exist_ok=True)
    train_lines = []
    for split, n in (("train", n_train), ("valid", n_valid)):
        sentences = [rng.integers(0, concepts, rng.integers(2, 7)) for _ in range(n)]
        for k, lang in enumerate(LANGS):
            lines = []
            for sentence in sentences:
                tokens = [f"{lang[0]}{ciphers[k][c]}" for c in sentence]
                lines.append(" ".join(tokens[::-1] if k == 2 else tokens))
            (data_dir / f"{split}.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
            if split == "train":
                train_lines += lines
    Dictionary.build(train_lines).save(data_dir / "dict.txt")
    return data_dir


def tiny_settings(paths, hidden=16, dropout=0.0, kind="bilstm_max", **train_opts) -> dict:
    return {"languages": LANGS, "paths": paths,
            "model": {"encoder": {"kind": kind, "layers": 1, "hidden": hidden}, "embed_dim": hidden,
                      "decoder": {"layers": 1, "hidden": 2 * hidden}, "dropout": dropout},
            "train": {"lr": 0.01, "batch_size": 32, "max_epoch": 50, "validate_interval_updates": 50,
                      "patience": None, "log_interval": 0, **train_opts}}


def never() -> bool:
    return False


# ---- paths --------------------------------------------------------------------------------------------
def test_paths_sample_as_the_coefficients():
    paths = TrainingPaths({"sources": ["eng", "fra", "spa"], "targets": ["ara"], "inputs": {"1": 0.9, 2: 0.05}})
    rng = np.random.default_rng(0)
    draws = [paths.sample(rng) for _ in range(10_000)]
    sizes = np.array([len(sources) for sources, _ in draws])
    assert abs(np.mean(sizes == 1) - 0.9 / 0.95) < 0.01
    assert abs(np.mean(sizes == 2) - 0.05 / 0.95) < 0.01
    ones = [sources[0] for sources, _ in draws if len(sources) == 1]
    for lang in ("eng", "fra", "spa"):
        assert abs(ones.count(lang) / len(ones) - 1 / 3) < 0.02
    assert all(targets == ["ara"] for _, targets in draws)
    assert all(len(set(s)) == len(s) and s == sorted(s, key=paths.sources.index) for s, _ in draws)
    assert paths.model_languages() == {"encoders": ["eng", "fra", "spa"], "decoders": ["ara"]}

    one_to_all = TrainingPaths({"sources": ["eng", "fra", "spa"], "targets": "all"})
    sources, targets = one_to_all.sample(rng)
    assert len(sources) == 1 and targets == [lang for lang in ["eng", "fra", "spa"] if lang != sources[0]]
    assert one_to_all.decoder_languages() == ["eng", "fra", "spa"]
    assert len(one_to_all.dev_pairs()) == 6


@pytest.mark.parametrize("spec, named", [
    ({"sources": ["eng", "fra"], "targets": ["ara"], "inputs": {"3": 1.0}}, "'3'"),
    ({"sources": ["eng", "fra"], "targets": ["fra"]}, "auto-encoder"),
    ({"sources": ["eng", "fra"], "targets": "all", "inputs": {"1": 0.5, "2": 0.5}}, "'2'"),
    ({"sources": ["eng"], "targets": "all"}, "'targets'"),
    ({"sources": ["eng", "fra"], "targets": ["ara"], "inputs": {"x": 1.0}}, "'x'"),
    ({"sources": ["eng", "fra"], "targets": ["ara"], "inputs": {"1": -1}}, "'1'"),
    ({"sources": ["eng", "fra"], "targets": ["ara"], "inputs": {"1": 0}}, "sum to 0"),
    ({"sources": [], "targets": ["ara"]}, "'sources'"),
    ({"sources": ["eng"], "targets": ["ara"], "input": {"1": 1}}, "'input'"),
])
def test_paths_reject_bad_specs(spec, named):
    with pytest.raises(ValueError, match=named):
        TrainingPaths(spec)


# ---- model and data -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["bilstm_max", "lstm_last"])
def test_encoder_embedding_does_not_depend_on_the_batch(kind, torch_single_thread):
    torch.manual_seed(0)
    encoder = LanguageEncoder(30, 8, kind, layers=2, hidden=6, dropout=0.2).eval()
    short, longer = [5, 6, 7, EOS], [8, 9, 10, 11, 12, 13, 14, 15, EOS]
    with torch.no_grad():
        alone = encoder(*collate([short]))
        together = encoder(*collate([longer, short]))
    assert alone.shape == (1, embedding_dim({"encoder": {"kind": kind, "hidden": 6}}))
    torch.testing.assert_close(together[1:], alone, atol=1e-6, rtol=0)


def test_dictionary_round_trip_and_encode(tmp_path):
    dictionary = Dictionary.build(["b a a", "c a b"], max_size=2)
    assert dictionary.symbols[4:] == ["a", "b"] and dictionary.counts[4:] == [3, 2]
    dictionary.save(tmp_path / "dict.txt")
    assert (tmp_path / "dict.txt").read_text() == "a 3\nb 2\n"
    loaded = Dictionary.load(tmp_path / "dict.txt")
    assert loaded.symbols == dictionary.symbols
    assert loaded.encode("a c b") == [4, UNK, 5, EOS]
    (tmp_path / "dict.txt").write_text("a 3\n<unk> 2\nb 1\n")  # a literal special in the text
    assert Dictionary.load(tmp_path / "dict.txt").symbols == dictionary.symbols


def test_load_split_aligns_drops_and_names_bad_files(tmp_path):
    dictionary = Dictionary.build(["x y z"])
    (tmp_path / "train.aaa").write_text("x\nx y z\nz\n")
    (tmp_path / "train.bbb").write_text("y\ny\nx y z\n")
    data = load_split(tmp_path, "train", ["aaa", "bbb"], dictionary, max_len=2)
    assert [list(s) for s in data["aaa"]] == [dictionary.encode("x")]  # lines 2 and 3 too long in one language
    assert [list(s) for s in data["bbb"]] == [dictionary.encode("y")]
    (tmp_path / "train.ccc").write_text("y\n")
    with pytest.raises(ValueError, match="train.ccc"):
        load_split(tmp_path, "train", ["aaa", "ccc"], dictionary)
    with pytest.raises(FileNotFoundError, match="train.ddd"):
        load_split(tmp_path, "train", ["aaa", "ddd"], dictionary)
    (tmp_path / "train.eee").write_text("")
    with pytest.raises(ValueError, match="train.eee.*empty"):
        load_split(tmp_path, "train", ["eee"], dictionary)
    first = batches(10, 4, np.random.default_rng([1, 2]))
    assert [len(b) for b in first] == [4, 4, 2] and sorted(np.concatenate(first)) == list(range(10))
    assert all((a == b).all() for a, b in zip(first, batches(10, 4, np.random.default_rng([1, 2]))))


def test_model_averages_sources_and_sums_targets(torch_single_thread):
    torch.manual_seed(0)
    model = build_model(tiny_settings({})["model"], {"encoders": ["aaa", "bbb"], "decoders": ["ccc", "ddd"]}, 20)
    a, b, c = collate([[4, 5, EOS], [6, EOS]]), collate([[7, EOS], [8, 9, EOS]]), collate([[10, 11, EOS], [12, EOS]])
    loss, n_tokens = model.loss({"aaa": a, "bbb": b}, {"ccc": c, "ddd": c})
    assert n_tokens == 10
    mean = (model.embed("aaa", *a) + model.embed("bbb", *b)) / 2
    expected = model.decoders["ccc"](mean, *c)[0] + model.decoders["ddd"](mean, *c)[0]
    torch.testing.assert_close(loss, expected)


# ---- similarity error (Algorithm 1) -------------------------------------------------------------------
def test_similarity_error_matrix_on_hand_made_embeddings():
    identity = np.eye(4, dtype=np.float32)
    assert similarity_error_matrix({"aaa": identity, "bbb": 2 * identity})["mean"] == 0.0
    swapped = identity[[1, 0, 2, 3]]  # sentences 0 and 1 of bbb exchanged
    result = similarity_error_matrix({"aaa": identity, "bbb": swapped, "ccc": identity})
    assert result["pairs"] == {"aaa-bbb": 50.0, "aaa-ccc": 0.0, "bbb-aaa": 50.0, "bbb-ccc": 50.0,
                               "ccc-aaa": 0.0, "ccc-bbb": 50.0}
    assert result["mean"] == pytest.approx(200 / 6) and result["sentences"] == 4


# ---- training -----------------------------------------------------------------------------------------
def load_safely(path):
    return torch.load(path, weights_only=True, map_location="cpu")


def test_training_learns_joint_embeddings(tmp_path, torch_single_thread):
    """1:N ("all") training on the ciphers: the dev similarity error falls from near chance to < 20%."""
    data = make_cipher_data(tmp_path / "data")
    settings = tiny_settings({"sources": LANGS, "targets": "all"}, hidden=64, max_update=250, lr_decay=0.7)
    result = train(data, tmp_path / "save", settings, rank=Rank(), stop_requested=never)
    assert result["num_updates"] == 250 and not result["preempted"]

    valid = {lang: (data / f"valid.{lang}").read_text().splitlines() for lang in LANGS}
    errors = {}
    for name in ("checkpoint_init.pt", "checkpoint_best.pt"):
        info = export_encoder(tmp_path / "save" / name, tmp_path / f"{name}.encoder")
        encoder = MultiencEncoder.load(tmp_path / f"{name}.encoder")
        assert info["languages"] == encoder.languages == LANGS and encoder.dim == 128
        errors[name] = similarity_error_matrix({lang: encoder.embed(valid[lang], lang, batch_size=7)
                                                for lang in LANGS})["mean"]
    assert errors["checkpoint_init.pt"] > 50
    assert errors["checkpoint_best.pt"] < 20
    assert errors["checkpoint_best.pt"] == pytest.approx(result["best_similarity_error"], abs=1e-9)

    curves = json.loads((tmp_path / "save" / "curves.json").read_text())
    assert curves[-1]["update"] == 250 and len(curves[-1]["pairs"]) == 6
    assert {"update", "epoch", "lr", "train_loss", "valid_loss", "valid_similarity_error"} <= set(curves[0])
    assert curves[-1]["valid_loss"] < curves[0]["valid_loss"]
    print(f"dev similarity error: init {errors['checkpoint_init.pt']:.1f}% -> best {errors['checkpoint_best.pt']:.1f}% "
          f"(update {result['best_update']})")


def test_resume_continues_exactly_and_files_load_with_weights_only(tmp_path, torch_single_thread):
    """M:1 paths into a fixed target, dropout on: 2 x 12 updates with a stop between = 24 straight."""
    data = make_cipher_data(tmp_path / "data", n_train=200, n_valid=20)
    paths = {"sources": ["aaa", "bbb"], "targets": ["ccc"], "inputs": {"1": 0.7, "2": 0.3}}
    settings = tiny_settings(paths, dropout=0.1, max_update=24, validate_interval_updates=5, batch_size=16)

    calls = []

    def stop_after_12():
        calls.append(1)
        return len(calls) > 12

    first = train(data, tmp_path / "resumed", settings, rank=Rank(), stop_requested=stop_after_12)
    assert first["preempted"] and first["num_updates"] == 12
    second = train(data, tmp_path / "resumed", settings, rank=Rank(), stop_requested=never)
    assert second["start_updates"] == 12 and second["num_updates"] == 24 and not second["preempted"]
    straight = train(data, tmp_path / "straight", settings, rank=Rank(), stop_requested=never)

    resumed_ckpt = load_safely(tmp_path / "resumed" / "checkpoint_last.pt")
    straight_ckpt = load_safely(tmp_path / "straight" / "checkpoint_last.pt")
    for name, tensor in straight_ckpt["model"].items():
        assert torch.equal(resumed_ckpt["model"][name], tensor), name
    assert resumed_ckpt["history"] == straight_ckpt["history"]
    assert second["best_update"] == straight["best_update"]
    for name in ("checkpoint_init.pt", "checkpoint_best.pt"):
        assert load_safely(tmp_path / "resumed" / name)["settings"]["paths"] == paths

    export_encoder(tmp_path / "resumed" / "checkpoint_best.pt", tmp_path / "encoder.pt")
    assert sorted(load_safely(tmp_path / "encoder.pt")["encoders"]) == ["aaa", "bbb"]
    encoder = MultiencEncoder.load(tmp_path / "encoder.pt")
    with pytest.raises(ValueError, match="'ccc'.*'aaa', 'bbb'"):  # the fixed target has no encoder
        encoder.embed(["c1 c2"], "ccc")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "encoder.pt").read_bytes()[:200])
    with pytest.raises(CorruptFileError, match="cut.pt"):
        MultiencEncoder.load(tmp_path / "cut.pt")


def test_lr_decays_and_training_stops_without_improvement(tmp_path, torch_single_thread):
    """An lr too small to change float32 weights: no validation after the first improves; the lr halves
    each time; patience 2 stops at the 3rd."""
    data = make_cipher_data(tmp_path / "data", n_train=100, n_valid=20)
    settings = tiny_settings({"sources": ["aaa", "bbb"], "targets": ["ccc"]}, optimizer="sgd", lr=1e-12,
                             validate_interval_updates=2, patience=2, max_update=100)
    result = train(data, tmp_path / "save", settings, rank=Rank(), stop_requested=never)
    assert result["num_updates"] == 6 and result["best_update"] == 2 and not result["preempted"]
    last = load_safely(tmp_path / "save" / "checkpoint_last.pt")
    assert last["bad_validations"] == 2 and [h["update"] for h in last["history"]] == [2, 4, 6]
    assert [h["lr"] for h in last["history"]] == [1e-12, 1e-12, 5e-13] and last["lr"] == 2.5e-13
    assert last["optimizer"]["param_groups"][0]["lr"] == 2.5e-13
    with pytest.raises(ValueError, match="patience"):
        train(data, tmp_path / "other", {**settings, "train": {**settings["train"], "patience": 0}},
              rank=Rank(), stop_requested=never)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _distributed_worker(rank: int, world_size: int, port: int, data: str, save_dir: str, settings: dict):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    train(data, save_dir, settings, rank=Rank(world_size, rank, rank, "127.0.0.1", port, "torchrun"),
          stop_requested=never)


def test_two_processes_make_the_update_of_one(tmp_path, torch_single_thread):
    """The global batch split over 2 gloo processes gives the weights of 1 process (uneven last batch included)."""
    data = make_cipher_data(tmp_path / "data", n_train=90, n_valid=10)
    settings = tiny_settings({"sources": LANGS, "targets": "all"}, max_update=8, batch_size=25,
                             validate_interval_updates=4)
    train(data, tmp_path / "one", settings, rank=Rank(), stop_requested=never)
    torch.multiprocessing.spawn(_distributed_worker, nprocs=2,
                                args=(2, _free_port(), str(data), str(tmp_path / "two"), settings))
    one = load_safely(tmp_path / "one" / "checkpoint_last.pt")
    two = load_safely(tmp_path / "two" / "checkpoint_last.pt")
    assert two["num_updates"] == one["num_updates"] == 8 and len(two["torch_rng_states"]) == 2
    for name, tensor in one["model"].items():
        torch.testing.assert_close(two["model"][name], tensor, atol=1e-5, rtol=0, msg=name)


def test_shared_embeddings_are_one_matrix_updated_once(tmp_path):
    """share_embeddings (not in the paper): every encoder and decoder uses one embedding matrix (one
    parameter, counted once)."""
    from laser_repro.models.multienc.model import build_model

    model = build_model({"encoder": {"kind": "bilstm_max", "layers": 1, "hidden": 8}, "embed_dim": 8,
                         "decoder": {"layers": 1, "hidden": 8}, "share_embeddings": True},
                        {"encoders": ["aaa", "bbb"], "decoders": ["aaa", "bbb"]}, 20)
    tables = {id(m.embed_tokens.weight) for m in [*model.encoders.values(), *model.decoders.values()]}
    assert len(tables) == 1
    unshared = build_model({"encoder": {"kind": "bilstm_max", "layers": 1, "hidden": 8}, "embed_dim": 8,
                            "decoder": {"layers": 1, "hidden": 8}},
                           {"encoders": ["aaa", "bbb"], "decoders": ["aaa", "bbb"]}, 20)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in unshared.parameters()) - 3 * 20 * 8
