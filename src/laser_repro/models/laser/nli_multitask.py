"""Command line of the NLI multitask objective (the paper's ablation, Table 6).

``laser-repro binarize-nli`` binarizes NLI training pairs (:func:`laser_repro.models.laser.fairseq_bridge.binarize_nli`)
for ``laser-repro train`` with ``"nli": {"data": PREFIX, "weight": W}`` in its settings; the
objective itself is defined in :mod:`laser_repro.models.laser.fairseq_plugin.laser_task`.  This module imports
neither torch nor fairseq until a subcommand runs.
"""
from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def cmd_binarize_nli(a) -> None:
    from laser_repro.models.laser import fairseq_bridge

    n = fairseq_bridge.binarize_nli(a.premise, a.hypothesis, a.labels, a.dict, a.dest_prefix, workers=a.workers)
    log.info("%s: %d NLI pairs binarized", a.dest_prefix, n)


def add_cli(sub) -> None:
    """Register ``binarize-nli`` on an argparse subparsers object."""
    s = sub.add_parser("binarize-nli", help="binarize NLI training pairs for the multitask objective")
    s.add_argument("--premise", required=True, help="BPE'd premises, one per line")
    s.add_argument("--hypothesis", required=True, help="BPE'd hypotheses, one per line")
    s.add_argument("--labels", required=True, help="pairID<TAB>label, same rows (entailment/neutral/contradiction)")
    s.add_argument("--dict", required=True, help="the joint fairseq dictionary (dict.txt)")
    s.add_argument("--dest-prefix", required=True,
                   help="writes PREFIX.premise.{bin,idx}, PREFIX.hypothesis.{bin,idx}, PREFIX.label.npy")
    s.add_argument("--workers", type=int, default=1)
    s.set_defaults(func=cmd_binarize_nli)
