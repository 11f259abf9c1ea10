"""A LASER encoder trained on SentencePiece (``bitext_data.<name>.subword.kind: spm``) in LASER2's file layout,
which LASER's own client loads from local files::

    from laser_encoders.models import SentenceEncoder
    encoder = SentenceEncoder("DIR/laser2.pt", spm_model="DIR/laser2.spm", spm_vocab="DIR/laser2.cvocab", cpu=True)
    vectors = encoder(["raw sentence", ...])          # its own LaserTokenizer, then the BiLSTM

or ``LaserEncoderPipeline(laser="laser2", model_dir="DIR")``, which finds the three files there and downloads
nothing. ``laser2.pt`` holds exactly what ``SentenceEncoder`` reads: ``params`` (the BiLSTM's constructor
arguments), ``model`` (its weights) and ``dictionary`` (piece -> index, fairseq's order); ``laser2.spm`` is the
SentencePiece model the encoder file names (checked by its sha256); ``laser2.cvocab`` the fairseq dictionary of
its pieces. LASER2's tokenizer lowercases: the export refuses nothing about case, so a model trained with
``preprocess.lowercase: false`` gets lowercased input in that client (docs/exports.md says so).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from laser_repro.core.errors import UserError

#: the file names LASER's client uses for LASER2 (laser_encoders.download_models)
STEM = "laser2"


def export_laser2(encoder_path, out_dir) -> dict:
    """Write ``out_dir``/laser2.{pt,spm,cvocab} for a LASER encoder file of this project (written into a temporary
    sibling directory, then renamed: an interrupted export leaves no directory that looks done)."""
    import torch

    from laser_repro.core.download import sha256_file
    from laser_repro.models import registry, subword
    from laser_repro.models.checkpoint_safety import load_model_file

    encoder_path, out_dir = Path(encoder_path), Path(out_dir)
    header = registry.read_encoder_file(encoder_path)
    if header["family"] != "laser":
        raise UserError(f"{encoder_path}: a {header['family']} encoder; --format laser2 exports a LASER encoder")
    record = header.get(subword.RECORD_KEY)
    if not record or record.get("kind") != "sentencepiece":
        kind = record.get("kind") if record else "none recorded"
        raise UserError(f"{encoder_path}: trained on subwords of kind {kind!r}, not a SentencePiece model: LASER2's "
                        f"client applies SentencePiece to raw text. Train with bitext_data.<name>.subword.kind: spm "
                        f"(config/overlays/spm.yaml)")
    spm_model = Path(record["file"])
    if not spm_model.is_file():
        raise UserError(f"{encoder_path}: its SentencePiece model {spm_model} is not there (run from the directory "
                        f"the workflow ran in)")
    digest = sha256_file(spm_model)
    if digest != record["sha256"]:
        raise UserError(f"{spm_model} is not the SentencePiece model {encoder_path} was trained with (sha256 "
                        f"{digest[:12]}, recorded {record['sha256'][:12]}): learned again since?")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise UserError(f"{out_dir}: exists and is not empty; give a new directory")
    payload = load_model_file(encoder_path, what="encoder", rebuild="rerun its export", map_location="cpu",
                              weights_only=True)
    laser2 = {"params": dict(payload["params"]), "model": payload["model"], "dictionary": dict(payload["dictionary"])}
    specials = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}  # SentenceEncoder sets these indices itself
    wrong = {s: laser2["dictionary"].get(s) for s, i in specials.items() if laser2["dictionary"].get(s) != i}
    if wrong:
        raise UserError(f"{encoder_path}: its dictionary has {wrong}; LASER's SentenceEncoder assumes {specials}")

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.with_name(f".{out_dir.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        torch.save(laser2, tmp / f"{STEM}.pt")
        torch.load(tmp / f"{STEM}.pt", map_location="cpu", weights_only=True)  # what the client's torch.load needs
        shutil.copyfile(spm_model, tmp / f"{STEM}.spm")
        pieces = sorted(laser2["dictionary"].items(), key=lambda kv: kv[1])
        with open(tmp / f"{STEM}.cvocab", "w", encoding="utf-8", newline="\n") as f:
            # fairseq's dictionary file: the symbols after the four specials, in index order
            f.writelines(f"{piece} 1\n" for piece, index in pieces if index >= len(specials))
        if out_dir.exists():
            out_dir.rmdir()
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"output": str(out_dir), "files": [f"{STEM}.pt", f"{STEM}.spm", f"{STEM}.cvocab"],
            "spm_model": str(spm_model), "params": laser2["params"], "pieces": len(pieces) - len(specials)}
