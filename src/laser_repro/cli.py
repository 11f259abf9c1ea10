"""Command line of the pipeline: one subcommand per workflow step (`python -m laser_repro.cli STEP ...`).

Each subcommand parses its arguments and calls into the package; Snakemake rules stay one line.
The subpackage that owns a step registers its subcommands (`add_cli(sub)` of the modules listed in
`build_parser`); heavy imports (torch, fairseq) happen inside the subcommands that need them.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from laser_repro import doctor, provenance
from laser_repro.core.errors import expected_error
from laser_repro.core.textio import one_line
from laser_repro.data import cli as data_cli, fetch, nway
from laser_repro.core import download
from laser_repro.config import budget, dvc_stages, slurm_requests
from laser_repro.evaluation import bucc, cli as evaluation_cli, flores, mldoc, nway as nway_eval, retrieval, wmt, xnli
from laser_repro.evaluation import europarl, word_translation
from laser_repro.models import cli as models_cli, training
from laser_repro.models.bisent2vec import vocab as bisent2vec_vocab
from laser_repro.models.labse import token_store as labse_token_store, vocab as labse_vocab
from laser_repro.models.laser import cli as laser_cli, nli_multitask
from laser_repro.reporting import ablation, bisent2vec as bisent2vec_tables, compare, labse as labse_tables
from laser_repro.reporting import multienc as multienc_tables
from laser_repro.reporting import cli as reporting_cli, contamination, reproduces, task_compare


#: Set (not "0"): as --debug, for every laser-repro command of a run (``LASER_REPRO_DEBUG=1 snakemake ...``).
DEBUG_VARIABLE = "LASER_REPRO_DEBUG"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="laser-repro", description=__doc__)
    p.add_argument("--debug", action="store_true", default=os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"),
                   help="an error shows its Python traceback (without it the expected errors -- a bad or missing "
                        "input file, a failed download, a config value -- are one line; a bug always shows its "
                        f"traceback). Also {DEBUG_VARIABLE}=1 in the environment (e.g. for every job of a "
                        "Snakemake run)")
    p.add_argument("--provenance-json", metavar="JSON",
                   help="once the subcommand succeeded, write the provenance record of its job (Snakemake rules): "
                        "JSON {rule, inputs, outputs, log, config, sources: [PATH=URL]}; see laser_repro.provenance")
    p.add_argument("--provenance-spec", metavar="FILE",
                   help="as --provenance-json, the JSON read from FILE (what the workflow passes: "
                        "laser_repro.provenance.spec_files)")
    sub = p.add_subparsers(dest="command", required=True)
    for module in (fetch, doctor, budget, dvc_stages, slurm_requests, download, data_cli, laser_cli, nway, training, models_cli, nli_multitask,
                   labse_vocab, labse_token_store, bisent2vec_vocab, evaluation_cli, reporting_cli, bucc, xnli, mldoc, wmt, flores,
                   nway_eval, retrieval, word_translation, europarl, ablation, multienc_tables, labse_tables,
                   bisent2vec_tables, compare, task_compare, reproduces, contamination, provenance):
        module.add_cli(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    started = time.time()  # the job's start in its provenance record: before any input is read
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # one INFO line per CPU variant it probes
    args = build_parser().parse_args(argv)
    spec = args.provenance_json
    if args.provenance_spec:  # read before the work: a missing spec must not waste it
        from laser_repro.provenance.spec_files import read_json_file

        try:
            spec = read_json_file(args.provenance_spec, "--provenance-spec")
        except ValueError as err:
            raise SystemExit(f"provenance: {err}") from None
    try:
        args.func(args)
    except BrokenPipeError:  # the reader of its output has gone (`laser-repro lineage view FILE | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no second error at exit's flush)
        return 1
    except Exception as err:  # an expected error is one line, naming its file and what to do; a bug keeps its traceback
        message = None if args.debug else expected_error(err)
        if message is None:
            raise
        print(f"laser-repro {args.command}: error: {one_line(message)}", file=sys.stderr)
        return 1
    if spec:  # only reached when the subcommand succeeded
        from laser_repro import provenance

        runtime = dict(getattr(args, "runtime", None) or {})
        if "torch" in sys.modules:  # results differ (~1e-7) with the thread count
            runtime.setdefault("torch_threads", sys.modules["torch"].get_num_threads())
        provenance.record_job(spec, start=started, runtime=runtime or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
