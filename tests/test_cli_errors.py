"""The command line on a user's mistakes: one line naming the file and what is wrong, exit status 1, no
traceback (laser_repro.core.errors.UserError, caught once in laser_repro.cli.main); and ``embed`` refusing
BPE codes other than those an encoder was trained with (laser_repro.models.subword)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from laser_repro.cli import main
from laser_repro.data import bpe
from laser_repro.models.bisent2vec.export import export_encoder as export_bisent2vec
from laser_repro.models.bisent2vec.trainer import train as train_bisent2vec
from laser_repro.models.launch import Rank

from test_bisent2vec import settings as bisent2vec_settings, write_pair
from test_multienc import LANGS, make_cipher_data, tiny_settings


def never():
    return False


@pytest.fixture(scope="module")
def bisent2vec_model(tmp_path_factory):
    """A trained eng-fra Bi-Sent2Vec model: its training checkpoint and its exported encoder."""
    root = tmp_path_factory.mktemp("b2v")
    data = write_pair(root / "d", n_train=50, n_valid=5)
    train_bisent2vec(data, root / "m", bisent2vec_settings(data, epochs=1), rank=Rank(), stop_requested=never)
    export_bisent2vec(root / "m" / "checkpoint_last.pt", root / "encoder.pt")
    (root / "text.txt").write_text("e1 e2\ne3\n")
    return root


def run_cli(capsys, *argv) -> tuple[int, list[str]]:
    """``main(argv)``: its status and the non-empty lines it wrote to stderr."""
    status = main([str(a) for a in argv])
    return status, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def embed_args(encoder, root: Path, lang: str = "eng") -> list:
    return ["embed", "--encoder", encoder, "--input", root / "text.txt", "--output", root / "out.npy", "--lang", lang]


def assert_one_line(status, lines, *fragments):
    assert status == 1
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    for fragment in fragments:
        assert str(fragment) in lines[0]


def test_wrong_language_for_a_pair_encoder(bisent2vec_model, capsys):
    status, lines = run_cli(capsys, *embed_args(bisent2vec_model / "encoder.pt", bisent2vec_model, "deu"))
    assert_one_line(status, lines, bisent2vec_model / "encoder.pt", "['eng', 'fra']", "'deu'")


def test_directory_as_encoder(bisent2vec_model, capsys):
    status, lines = run_cli(capsys, *embed_args(bisent2vec_model / "m", bisent2vec_model))
    assert_one_line(status, lines, bisent2vec_model / "m", "a directory")


def test_training_checkpoint_as_encoder(bisent2vec_model, tmp_path, capsys):
    checkpoint = bisent2vec_model / "m" / "checkpoint_last.pt"
    status, lines = run_cli(capsys, *embed_args(checkpoint, bisent2vec_model))
    assert_one_line(status, lines, checkpoint, "training checkpoint", "laser-repro export --family bisent2vec")
    # LaBSE's checkpoints name their family and format as its encoder files do (the KeyError 'encoder' of old)
    labse = tmp_path / "labse_checkpoint.pt"
    torch.save({"format": 1, "family": "labse", "stage": "train", "model": {}, "optimizer": {}, "settings": {}}, labse)
    status, lines = run_cli(capsys, *embed_args(labse, bisent2vec_model))
    assert_one_line(status, lines, labse, "training checkpoint", "--family labse")


def test_truncated_encoder_in_a_process_of_its_own(bisent2vec_model, tmp_path):
    """The console as a user sees it: stderr of a real process, its exit status."""
    cut = tmp_path / "cut.pt"
    cut.write_bytes((bisent2vec_model / "encoder.pt").read_bytes()[:300])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "laser_repro.cli", *map(str, embed_args(cut, bisent2vec_model))],
                          capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert_one_line(done.returncode, lines, cut, "truncated or corrupt")


def test_a_bug_keeps_its_traceback(monkeypatch, bisent2vec_model):
    from laser_repro.models import registry

    def broken(path):
        raise KeyError("a bug")

    monkeypatch.setattr(registry, "read_encoder_file", broken)
    with pytest.raises(KeyError, match="a bug"):
        main([str(a) for a in embed_args(bisent2vec_model / "encoder.pt", bisent2vec_model)])


# ---- the BPE codes of an encoder ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def multienc_model(tmp_path_factory):
    """A multienc encoder trained on cipher data BPE'd with its own codes, and other codes (another merge count)."""
    from laser_repro.models.multienc.export import export_encoder
    from laser_repro.models.multienc.trainer import train

    root = tmp_path_factory.mktemp("multienc")
    data = make_cipher_data(root / "data", n_train=100, n_valid=10)
    languages = dict(zip(LANGS, ["eng", "fra", "deu"]))  # codes embed's Moses step knows
    for split in ("train", "valid"):
        for cipher, lang in languages.items():
            (data / f"{split}.{cipher}").rename(data / f"{split}.{lang}")
    inputs = [data / f"train.{lang}" for lang in languages.values()]
    bpe.learn(data / "codes", root / "vocab", merges=8, inputs=inputs)
    bpe.learn(root / "other_codes", root / "other_vocab", merges=5, inputs=inputs)
    settings = tiny_settings({"sources": list(languages.values()), "targets": "all"}, max_update=2,
                             validate_interval_updates=2)
    settings["languages"] = list(languages.values())
    train(data, root / "save", settings, rank=Rank(), stop_requested=never)
    export_encoder(root / "save" / "checkpoint_last.pt", root / "encoder.pt")
    (root / "text.txt").write_text("a1 a2 a3\na4\n")
    return root


def test_embed_refuses_codes_other_than_the_encoders(multienc_model, capsys):
    root = multienc_model
    args = ["embed", "--encoder", root / "encoder.pt", "--input", root / "text.txt", "--output", root / "out.npy",
            "--lang", "eng", "--keep-case", "--codes"]
    status, lines = run_cli(capsys, *args, root / "other_codes")
    assert_one_line(status, lines, root / "other_codes", root / "encoder.pt", root / "data" / "codes")
    assert not (root / "out.npy").exists()
    assert main([str(a) for a in args] + [str(root / "data" / "codes")]) == 0
    assert np.load(root / "out.npy").shape[0] == 2


def test_an_encoder_exported_before_it_named_its_codes_is_accepted_with_a_warning(multienc_model, caplog):
    from laser_repro.models import subword

    root = multienc_model
    old = torch.load(root / "encoder.pt", weights_only=True)
    del old[subword.RECORD_KEY]
    torch.save(old, root / "old_encoder.pt")
    status = main(["embed", "--encoder", str(root / "old_encoder.pt"), "--input", str(root / "text.txt"),
                   "--output", str(root / "old.npy"), "--lang", "eng", "--codes", str(root / "other_codes")])
    assert status == 0 and np.load(root / "old.npy").shape[0] == 2
    assert any("names no BPE codes" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_retrieval_with_a_multienc_encoder_applies_its_codes(multienc_model, capsys):
    """Tatoeba / UN retrieval of a family that takes BPE codes (multienc): without --codes or with others a
    one-line refusal; with its codes both directions of every language, the model and its init in one process."""
    root = multienc_model
    (root / "fra.txt").write_text("a1 a2 a3\na4\na2 a1\n")
    (root / "eng.txt").write_text("a3 a2\na4 a1\na2\n")
    args = ["retrieval", "--task", "tatoeba", "--encoder", root / "encoder.pt", root / "encoder.pt", "--langs", "fra",
            "--xx", root / "fra.txt", "--eng", root / "eng.txt", "--output", root / "r.json", root / "r_init.json"]
    status, lines = run_cli(capsys, *args)
    assert_one_line(status, lines, root / "encoder.pt", "give --codes")
    status, lines = run_cli(capsys, *args, "--codes", root / "other_codes")
    assert_one_line(status, lines, root / "other_codes", root / "encoder.pt")
    assert main([str(a) for a in args] + ["--codes", str(root / "data" / "codes")]) == 0
    for out in ("r.json", "r_init.json"):
        fra = json.loads((root / out).read_text())["results"]["fra"]
        assert fra["n"] == 3 and 0 <= fra["error"] <= 100 and 0 <= fra["en_xx_error"] <= 100
