"""Tests for laser_repro.models.registry (model families by config name, the family of an encoder file)
and the multienc family's settings fingerprint and data files."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from laser_repro.models import registry
from laser_repro.models.base import ModelFamily
from laser_repro.models.checkpoint_safety import CorruptFileError
from laser_repro.models.multienc.family import MultiencFamily


def test_get_families():
    laser = registry.get("laser")
    multienc = registry.get("multienc")
    assert laser.name == "laser"
    assert multienc.name == "multienc"
    assert isinstance(laser, ModelFamily) and isinstance(multienc, MultiencFamily)
    assert registry.get("multienc") is multienc  # loaded once
    assert registry.get("labse").name == "labse"


def test_get_unknown_family():
    with pytest.raises(ValueError) as err:
        registry.get("transgram")
    msg = str(err.value)
    assert "'transgram'" in msg
    assert "laser" in msg and "multienc" in msg and "labse" in msg and "bisent2vec" in msg


def test_family_of_multienc_encoder(tmp_path):
    p = tmp_path / "encoder.pt"
    torch.save({"family": "multienc", "x": torch.zeros(2)}, p)
    assert registry.family_of_encoder(p) == "multienc"
    assert registry.family_of_encoder(str(p)) == "multienc"


def test_family_of_laser_encoder_without_family(tmp_path):
    p = tmp_path / "laser.pt"
    torch.save({"params": {"num_embeddings": 7, "padding_idx": 1, "embed_dim": 4, "hidden_size": 3,
                           "num_layers": 1, "bidirectional": True, "left_pad": True},
                "model": {"embed_tokens.weight": torch.randn(7, 4), "lstm.weight_ih_l0": torch.randn(12, 4)},
                "dictionary": {"hello": 4, "world": 5, "@@": 6}}, p)
    assert registry.family_of_encoder(p) == "laser"


def test_family_of_explicit_laser_encoder(tmp_path):
    p = tmp_path / "laser.pt"
    torch.save({"family": "laser", "model": {"w": torch.ones(1)}}, p)
    assert registry.family_of_encoder(p) == "laser"


def test_family_unknown(tmp_path):
    p = tmp_path / "enc.pt"
    torch.save({"family": "nope"}, p)
    with pytest.raises(ValueError) as err:
        registry.family_of_encoder(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: ")
    assert "'nope'" in msg and "laser" in msg and "multienc" in msg


@pytest.mark.parametrize("keep", [20, "half"])
def test_family_of_truncated_file(tmp_path, keep):
    good = tmp_path / "good.pt"
    torch.save({"family": "multienc", "x": torch.zeros(100)}, good)
    data = good.read_bytes()
    n = 20 if keep == 20 else len(data) // 2
    p = tmp_path / "cut.pt"
    p.write_bytes(data[:n])
    with pytest.raises(CorruptFileError) as err:
        registry.family_of_encoder(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}: ")
    assert f"({n} bytes" in msg
    assert "encoder" in msg and "rerun the export" in msg


def test_family_of_empty_file(tmp_path):
    p = tmp_path / "empty.pt"
    p.write_bytes(b"")
    with pytest.raises(CorruptFileError) as err:
        registry.family_of_encoder(p)
    assert str(err.value).startswith(f"{p}: ")
    assert "(0 bytes" in str(err.value)


def test_family_of_legacy_format_laser_file(tmp_path):
    """A LASER encoder in torch's legacy (non-zip) serialization loads without mmap."""
    p = tmp_path / "legacy.pt"
    torch.save({"params": {"num_embeddings": 5}, "model": {"w": torch.zeros(2)}, "dictionary": {"a": 4}}, p,
               _use_new_zipfile_serialization=False)
    assert registry.family_of_encoder(p) == "laser"
    torch.save({"family": "multienc", "x": torch.zeros(2)}, p, _use_new_zipfile_serialization=False)
    assert registry.family_of_encoder(p) == "multienc"


def test_family_of_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        registry.family_of_encoder(tmp_path / "absent.pt")


# ---- multienc family --------------------------------------------------------------------------------

SETTINGS = {
    "languages": ["eng", "fra", "cmn"],
    "paths": {"sources": ["eng", "fra", "cmn"], "inputs": {"1": 1.0}, "targets": "all"},
    "model": {"encoder": {"kind": "bilstm_max", "layers": 1, "hidden": 128}, "embed_dim": 64,
              "decoder": {"layers": 1, "hidden": 128}, "dropout": 0.2},
    "train": {"optimizer": "adam", "lr": 0.005, "lr_decay": 0.5, "batch_size": 32, "clip_norm": 2.0,
              "max_epoch": 20, "max_update": None, "max_len": None, "seed": 1, "validate_interval_updates": 60,
              "patience": 3, "log_interval": 25, "cpu_processes": 2},
}


def test_multienc_fingerprint_settings():
    fp = MultiencFamily().fingerprint_settings(SETTINGS)
    for key in ("max_epoch", "max_update", "patience", "log_interval", "cpu_processes"):
        assert key not in fp["train"], key
    assert fp["train"] == {"optimizer": "adam", "lr": 0.005, "lr_decay": 0.5, "batch_size": 32, "clip_norm": 2.0,
                           "max_len": None, "seed": 1, "validate_interval_updates": 60}
    assert fp["languages"] == SETTINGS["languages"]
    assert fp["paths"] == SETTINGS["paths"] and fp["model"] == SETTINGS["model"]
    assert "max_epoch" in SETTINGS["train"]  # the input is not modified
    # the fingerprint changes with lr, not with the stopping or logging settings
    other_lr = {**SETTINGS, "train": {**SETTINGS["train"], "lr": 0.001}}
    assert MultiencFamily().fingerprint_settings(other_lr) != fp
    longer = {**SETTINGS, "train": {**SETTINGS["train"], "max_epoch": 50, "patience": 9, "log_interval": 1,
                                    "cpu_processes": 1, "max_update": 1000}}
    assert MultiencFamily().fingerprint_settings(longer) == fp


def test_multienc_stopping_settings():
    assert MultiencFamily().stopping_settings(SETTINGS) == {"max_epoch": 20, "max_update": None, "patience": 3}


def test_multienc_data_files(tmp_path):
    files = MultiencFamily().data_files(tmp_path, SETTINGS)
    expected = ["dict.txt", "train.eng", "train.fra", "train.cmn", "valid.eng", "valid.fra", "valid.cmn"]
    assert sorted(files) == sorted(expected)
    assert files["dict.txt"] == tmp_path / "dict.txt"
    assert files["valid.cmn"] == tmp_path / "valid.cmn"
    assert all(isinstance(p, Path) for p in files.values())
    files = MultiencFamily().data_files(str(tmp_path), SETTINGS)
    assert files["train.fra"] == tmp_path / "train.fra"
