"""Command line of the model families: ``laser-repro export`` writes the encoder of a training
checkpoint of any family (laser_repro.models.registry) as a file of tensors and plain types.

torch (and fairseq, for LASER) are imported when the command runs, not when the parser is built.
"""
from __future__ import annotations

import json
import logging

from laser_repro.models.registry import FAMILIES

log = logging.getLogger("laser_repro")


def cmd_export(a):
    from laser_repro.models import registry

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
    s = sub.add_parser("export", help="export the encoder of a training checkpoint (LASER: a standalone LASER-format file)")
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--family", choices=list(FAMILIES), default="laser")
    s.add_argument("--codes", help="LASER: the BPE codes its training data was prepared with, recorded in the encoder "
                                   "file (embed --codes then refuses other codes)")
    s.set_defaults(func=cmd_export)
