"""The subword model an encoder was trained with, named in its encoder file, and the check that the
codes given to prepare text for that encoder are the same.

A family whose input is BPE'd text (multienc) records ``{"kind": "fastbpe_codes", "file": path,
"sha256": digest}`` of its data's ``codes`` in its training checkpoints, and its export copies it into
the encoder file (key :data:`RECORD_KEY`). LaBSE (its WordPiece vocabulary) and Bi-Sent2Vec (its word
vocabulary) keep their vocabulary inside the encoder file: they take no codes. LASER's training reads
binarized data only, so its checkpoints cannot name the codes: its export is given them
(``laser-repro export --codes``) and writes the same record into the encoder file.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping, Optional

from laser_repro.core.errors import UserError

log = logging.getLogger("laser_repro")

#: the key of the record in training checkpoints and encoder files
RECORD_KEY = "subword_model"


def codes_record(codes_path) -> Optional[dict]:
    """The record of a subword model file: fastBPE codes (kind ``fastbpe_codes``) or a SentencePiece model (kind
    ``sentencepiece``, bitext_data.<name>.subword.kind: spm); None when there is none (data prepared without BPE)."""
    from laser_repro.core.download import sha256_file
    from laser_repro.data.subword_text import kind_of

    path = Path(codes_path)
    if not path.is_file():
        return None
    kind = {"bpe": "fastbpe_codes", "spm": "sentencepiece"}[kind_of(path)]
    return {"kind": kind, "file": str(path), "sha256": sha256_file(path)}


def check_codes(encoder_path, record: Optional[Mapping], codes_path) -> None:
    """Refuse ``codes_path`` when it is not the codes file of ``record`` (the encoder file's); an encoder
    file without a record (exported before encoders named their codes) is accepted with a warning."""
    if record is None:
        log.warning("%s names no BPE codes (exported before encoder files recorded them): cannot check that %s "
                    "are the codes it was trained with; export it again to have them checked", encoder_path, codes_path)
        return
    given = codes_record(codes_path)
    if given is None:
        raise UserError(f"{codes_path}: no such subword model file (encoder {encoder_path})")
    if given["sha256"] != record["sha256"]:
        raise UserError(f"{codes_path} (sha256 {given['sha256'][:12]}) is not the subword model encoder {encoder_path} "
                        f"was trained with: {record['file']} (sha256 {record['sha256'][:12]})")
