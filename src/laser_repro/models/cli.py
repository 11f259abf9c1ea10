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

    log.info("exported %s", json.dumps(registry.get(a.family).export(a.checkpoint, a.output), default=str))


def add_cli(sub) -> None:
    """Register ``export`` on an argparse subparsers object."""
    s = sub.add_parser("export", help="export the encoder of a training checkpoint (LASER: a standalone LASER-format file)")
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--family", choices=list(FAMILIES), default="laser")
    s.set_defaults(func=cmd_export)
