"""Command line of LASER's training data: fairseq binarization of the BPE'd pairs with the joint
dictionary (``binarize``: one pair's training or held-out lines; ``binarize-valid``: the held-out
lines of several pairs), by :func:`laser_repro.models.laser.fairseq_bridge.binarize_pair`.

fairseq is imported when a command runs, not when the parser is built.
"""
from __future__ import annotations


def cmd_binarize(a):
    from laser_repro.models.laser import fairseq_bridge

    fairseq_bridge.binarize_pair(a.src, a.tgt, a.train_prefix, a.dict, a.dest, valid_prefix=a.valid_prefix,
                                 workers=a.workers)


def cmd_binarize_valid(a):
    from laser_repro.models.laser import fairseq_bridge

    for pair in a.pairs:
        src, tgt = pair.split("-")
        fairseq_bridge.binarize_pair(src, tgt, None, a.dict, a.dest, valid_prefix=a.prefix)


def add_cli(sub) -> None:
    """Register ``binarize`` and ``binarize-valid`` on an argparse subparsers object."""
    s = sub.add_parser("binarize", help="fairseq-preprocess one pair with the joint dictionary")
    s.add_argument("--src", required=True)
    s.add_argument("--tgt", required=True)
    split = s.add_mutually_exclusive_group(required=True)
    split.add_argument("--train-prefix", help="training text: PREFIX.SRC, PREFIX.TGT")
    split.add_argument("--valid-prefix", help="held-out text (valid.* files: loss on the learning curves)")
    s.add_argument("--dict", required=True)
    s.add_argument("--dest", required=True)
    s.add_argument("--workers", type=int, default=1,
                   help="fairseq-preprocess processes (the same bytes for any number: fairseq merges in order)")
    s.set_defaults(func=cmd_binarize)

    s = sub.add_parser("binarize-valid", help="binarize the held-out lines of several pairs (valid.*)")
    s.add_argument("--pairs", nargs="+", required=True, help="SRC-TGT ...")
    s.add_argument("--prefix", required=True, help="held-out text: PREFIX.LANG")
    s.add_argument("--dict", required=True)
    s.add_argument("--dest", required=True)
    s.set_defaults(func=cmd_binarize_valid)
