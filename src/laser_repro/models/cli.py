"""Command line of the model families: ``laser-repro export`` writes the encoder of a training
checkpoint of any family (laser_repro.models.registry) as a file of tensors and plain types, or turns such
an encoder file into what another tool loads (``--format laser2``: LASER2's files for
``laser_encoders.SentenceEncoder``; ``--format sentence-transformers``: a model directory for
``SentenceTransformer(path)``).

torch (and fairseq, for LASER) are imported when the command runs, not when the parser is built.
"""
from __future__ import annotations

import json
import logging

from laser_repro.models.registry import FAMILIES

log = logging.getLogger("laser_repro")


#: ``--format`` -> (module, function): the function takes (encoder file, output directory) and returns a summary
CLIENT_FORMATS = {
    "laser2": ("laser_repro.models.laser.laser2", "export_laser2"),
    "sentence-transformers": ("laser_repro.models.labse.sentence_transformers_export", "export_sentence_transformers"),
}


def cmd_export(a):
    from laser_repro.models import registry

    if a.format != "native":
        if not a.encoder or a.checkpoint or a.codes:
            raise SystemExit(f"export --format {a.format}: give --encoder (an encoder file of this project, e.g. "
                             "results/<run>/models/<model>/encoder.pt) and --output (a directory), no --checkpoint "
                             "or --codes")
        import importlib

        module, function = CLIENT_FORMATS[a.format]
        summary = getattr(importlib.import_module(module), function)(a.encoder, a.output)
        log.info("exported %s", json.dumps(summary, default=str))
        return
    if not a.checkpoint or a.encoder:
        raise SystemExit("export: give --checkpoint (a training checkpoint); --encoder goes with --format laser2 or "
                         "sentence-transformers")
    if a.codes:
        # LASER trains on binarized data: its checkpoint cannot name the BPE codes, the export records them
        # (multienc's checkpoints record their own; LaBSE and Bi-Sent2Vec carry their vocabulary)
        if a.family != "laser":
            raise SystemExit(f"export --codes: the {a.family} family records its subword model itself")
        from laser_repro.models import subword
        from laser_repro.models.laser.export import export_encoder

        record = subword.codes_record(a.codes)
        if record is None:
            raise SystemExit(f"export --codes: no such file: {a.codes}")
        summary = export_encoder(a.checkpoint, a.output, subword_model=record)
    else:
        summary = registry.get(a.family).export(a.checkpoint, a.output)
    log.info("exported %s", json.dumps(summary, default=str))


def add_cli(sub) -> None:
    """Register ``export`` on an argparse subparsers object."""
    s = sub.add_parser("export", help="export the encoder of a training checkpoint (LASER: a standalone LASER-format "
                                      "file), or an encoder file for another tool (--format)")
    s.add_argument("--format", choices=["native", *CLIENT_FORMATS], default="native",
                   help="native (default): the encoder file of a --checkpoint; laser2: LASER2's .pt/.spm/.cvocab of a "
                        "LASER --encoder trained on SentencePiece; sentence-transformers: a model directory of a LaBSE "
                        "--encoder")
    s.add_argument("--checkpoint", help="native: the training checkpoint")
    s.add_argument("--encoder", help="laser2, sentence-transformers: the encoder file (laser-repro export's output)")
    s.add_argument("--output", required=True, help="native: the encoder file; otherwise a directory")
    s.add_argument("--family", choices=list(FAMILIES), default="laser")
    s.add_argument("--codes", help="LASER: the BPE codes its training data was prepared with, recorded in the encoder "
                                   "file (embed --codes then refuses other codes)")
    s.set_defaults(func=cmd_export)
