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

    raw = (a.premise_raw, a.hypothesis_raw)
    if any(raw):  # raw English text: Moses + the joint BPE first, into --premise / --hypothesis (kept: inputs of the record)
        from laser_repro.data.cli import prepare_text_file
        from laser_repro.data.subword_text import SubwordText

        if not all(raw) or not a.codes:
            raise SystemExit("binarize-nli: --premise-raw, --hypothesis-raw and --codes go together")
        applier = SubwordText(a.codes)
        for src, dst in zip(raw, (a.premise, a.hypothesis)):
            prepare_text_file(applier, "eng", a.keep_case, src, dst)
    n = fairseq_bridge.binarize_nli(a.premise, a.hypothesis, a.labels, a.dict, a.dest_prefix, workers=a.workers)
    log.info("%s: %d NLI pairs binarized", a.dest_prefix, n)


def add_cli(sub) -> None:
    """Register ``binarize-nli`` on an argparse subparsers object."""
    s = sub.add_parser("binarize-nli", help="binarize NLI training pairs for the multitask objective")
    s.add_argument("--premise", required=True, help="BPE'd premises, one per line (written first with --premise-raw)")
    s.add_argument("--hypothesis", required=True, help="BPE'd hypotheses, one per line (written first with --hypothesis-raw)")
    s.add_argument("--premise-raw", help="raw English premises: Moses-preprocessed and BPE-encoded into --premise")
    s.add_argument("--hypothesis-raw", help="raw English hypotheses: likewise into --hypothesis")
    s.add_argument("--codes", help="the joint BPE codes (with --premise-raw)")
    s.add_argument("--keep-case", action="store_true", help="with --premise-raw: do not lowercase")
    s.add_argument("--labels", required=True, help="pairID<TAB>label, same rows (entailment/neutral/contradiction)")
    s.add_argument("--dict", required=True, help="the joint fairseq dictionary (dict.txt)")
    s.add_argument("--dest-prefix", required=True,
                   help="writes PREFIX.premise.{bin,idx}, PREFIX.hypothesis.{bin,idx}, PREFIX.label.npy")
    s.add_argument("--workers", type=int, default=1)
    s.set_defaults(func=cmd_binarize_nli)
