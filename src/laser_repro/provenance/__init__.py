"""Provenance sidecars of workflow outputs, the lineage walk over them, and mtime repair after a DVC pull.

Every Snakemake shell rule records its job: a rule that runs one ``laser-repro SUBCOMMAND ...`` as
``laser-repro --provenance-json JSON SUBCOMMAND ...`` (in that process, once the subcommand succeeded:
record_job), a compound command followed by ``laser-repro provenance --rule NAME --start ... --inputs ...
--outputs ...``. Either writes for each output ``O`` a sidecar ``O.prov.json`` (the same record for all
outputs of the job; format ``FORMAT`` below):

    rule, wildcards, start, end, duration_s, log
    outputs  {path: {sha256, size, mtime_ns}}      paths relative to the workflow root (the cwd) when
    inputs   {path: {sha256, size, mtime_ns}}      under it, else absolute
    sources  {path: url}                           public URL of raw inputs (--source PATH=URL)
    config   the config keys the rule depends on   (--config-json)
    runtime  in-process records: torch_threads; train: world_size, threads, update_freq, ... (the
             numbers differ in the 7th digit with the thread count)
    code     {commit, dirty, version}              git HEAD of the package's repository, laser_repro.__version__
    libraries {python, torch, fairseq, ...}        importlib.metadata versions (null when not installed)
    host     {hostname, platform, user, pid, slurm_job_id}

A directory (a Snakemake ``directory()`` output or input) is hashed as a whole: its sha256 is that of
the manifest ``relpath NUL sha256 LF`` of its files in sorted order (``.snakemake_timestamp`` and
sidecars excluded); its entry adds ``type: dir``, ``files`` (count) and ``stat`` (a fingerprint of the
files' paths, sizes and mtimes, used by the hash cache).

Hash cache: an input with its own sidecar whose recorded size and mtime_ns (for a directory, the stat
fingerprint) match the file's current ones is not re-hashed; its recorded sha256 is reused.

``lineage FILE`` walks the sidecars back to the raw files; ``sync-mtimes ROOT...`` re-dates verified
outputs so that Snakemake sees them up to date after ``dvc pull``.  Only the standard library is used:
this runs once per job.

Modules (every name is importable from this package, as before they were split):

* ``records``   writing records: digest and stat entries (hash cache), git state of the code, library
                versions, host, ``record``, ``record_job`` and the ``provenance`` subcommand;
* ``lineage``   the lineage walk, its rendering and the ``lineage`` subcommand;
* ``mtimes``    ``sync_mtimes`` and the ``sync-mtimes`` subcommand;
* ``_common``   what they share: FORMAT, SUFFIX, ProvenanceError, sidecar paths, recorded paths.

This module keeps ``file_sha256`` and ``CODE_DIR`` (``records`` looks them up here when called: set
them here, e.g. with ``monkeypatch.setattr(provenance, "file_sha256", ...)``), the CLI registration
(``add_cli``) and ``main`` of ``python -m laser_repro.provenance``.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from laser_repro.core.download import sha256_file
from laser_repro.provenance._common import (FORMAT, IGNORED_IN_DIRS, SUFFIX, ProvenanceError, log, read_sidecar,
                                            rel_key, sidecar_path)
from laser_repro.provenance.crate import cmd_lineage_crate
from laser_repro.provenance.lineage import WORKFLOW_OUTPUT_DIRS, cmd_lineage, format_lineage, lineage_tree
from laser_repro.provenance.lineage_cli import (cmd_lineage_cell, cmd_lineage_check, cmd_lineage_diff,
                                                cmd_lineage_render, cmd_lineage_view)
from laser_repro.provenance.mtimes import MIN_GAP_NS, cmd_sync_mtimes, sync_mtimes
from laser_repro.provenance.records import (LIBRARIES, cmd_provenance, digest, git_state, host_info,
                                            library_versions, parse_sources, parse_time, parse_wildcards,
                                            path_sha256, record, record_job, stat_entry)

__all__ = [
    "FORMAT", "SUFFIX", "IGNORED_IN_DIRS", "LIBRARIES", "MIN_GAP_NS", "WORKFLOW_OUTPUT_DIRS", "CODE_DIR",
    "ProvenanceError", "file_sha256", "stat_entry", "path_sha256", "digest", "sidecar_path", "rel_key",
    "read_sidecar", "git_state", "library_versions", "host_info", "parse_time", "parse_wildcards",
    "parse_sources", "record", "record_job", "lineage_tree", "format_lineage", "sync_mtimes",
    "cmd_provenance", "cmd_lineage", "cmd_sync_mtimes", "add_cli", "main", "log",
]

# the downloader's streaming digest (a module attribute, so tests can count the calls: path_sha256
# looks it up here when called)
file_sha256 = sha256_file

#: the code whose version a record names: the repository holding this package's source (a checkout
#: installed editable, as scripts/setup.sh does); an installed wheel has only its version (git_state
#: looks it up here when called)
CODE_DIR = str(Path(__file__).resolve().parent)


# --------------------------------------------------------------------------- CLI

def add_cli(sub) -> None:
    """Register provenance, lineage and sync-mtimes on an argparse subparsers object."""
    s = sub.add_parser("provenance", help="write the provenance sidecar O.prov.json of each output of a job")
    s.add_argument("--rule", required=True)
    s.add_argument("--start", required=True, help="when the job started: ISO 8601 or seconds since the epoch")
    s.add_argument("--wildcards", help="JSON object (or k=v,k=v)")
    s.add_argument("--inputs", nargs="*", default=[])
    s.add_argument("--outputs", nargs="+", required=True)
    s.add_argument("--log", help="the job's log file")
    s.add_argument("--config-json", help="JSON of the config keys the rule depends on")
    s.add_argument("--source", nargs="+", action="extend", metavar="PATH=URL",
                   help="public URL of a raw input (repeatable)")
    s.set_defaults(func=cmd_provenance)

    lineage = sub.add_parser("lineage", help="audit a result: its lineage graph (view), one table cell (cell), "
                                             "re-hashed files (check), two runs compared (diff), a picture (render), "
                                             "an RO-Crate (crate), the old tree (tree)")
    verbs = lineage.add_subparsers(dest="lineage_verb", required=True,
                                   metavar="{view,cell,check,diff,render,crate,tree}")
    s = verbs.add_parser("view", help="what made FILE: a summary (raw inputs, config values, code, libraries, "
                                      "models, machines, wall time), then each job once")
    s.add_argument("file")
    s.add_argument("--json", action="store_true", help="nodes, edges and the summary as JSON")
    s.set_defaults(func=cmd_lineage_view)
    s = verbs.add_parser("cell", help="the files that made one cell of a table: TABLE.csv ROW COLUMN")
    s.add_argument("table", help="a table's CSV (results/tables/<run>/<name>.csv)")
    s.add_argument("row", help="the row's first-column value (e.g. a language code)")
    s.add_argument("column", help="the column's header")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_lineage_cell)
    s = verbs.add_parser("check", help="re-hash every recorded file on FILE's lineage, or every recorded file "
                                       "under DIR; one line per changed or missing file; exit 1 if any")
    s.add_argument("target")
    s.set_defaults(func=cmd_lineage_check)
    s = verbs.add_parser("diff", help="two results of the same target: the first jobs where they diverge and why; "
                                      "exit 1 when they differ")
    s.add_argument("a")
    s.add_argument("b")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_lineage_diff)
    s = verbs.add_parser("render", help="a picture of FILE's lineage: -o OUT.dot, .mmd (Mermaid) or .svg (Graphviz)")
    s.add_argument("file")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("--expand", nargs="*", default=[], metavar="RULE",
                   help="rules whose jobs are drawn one by one (default: one box per rule, with a count)")
    s.set_defaults(func=cmd_lineage_render)
    s = verbs.add_parser("crate", help="FILE's lineage (or every record under DIR) as a Workflow Run RO-Crate "
                                       "(Provenance Run Crate profile) in OUTDIR, for WorkflowHub / Zenodo")
    s.add_argument("target", help="a file with a provenance record, or a directory of them (e.g. results/)")
    s.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="a new or empty directory")
    s.add_argument("--copy-data", action="store_true",
                   help="copy every recorded file into the crate (default: the workflow and the result only; "
                        "the other files are described by path, sha256 and size, raw data by URL)")
    s.add_argument("--license", default="MIT", help="the crate's license: an SPDX id or a URL (default: MIT, "
                                                    "the project's)")
    s.set_defaults(func=cmd_lineage_crate)
    s = verbs.add_parser("tree", help="the lineage as an indented tree (a shared input repeated as 'see above'); "
                                      "exit 1 when a recorded file changed or a workflow output has no record")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.add_argument("--max-depth", type=int)
    s.add_argument("--rehash", action="store_true", help="hash every file (do not trust sidecar size+mtime)")
    s.set_defaults(func=cmd_lineage)

    s = sub.add_parser("sync-mtimes", help="after dvc pull: re-date verified outputs so Snakemake sees them up to date")
    s.add_argument("roots", nargs="+")
    s.add_argument("--dry-run", action="store_true")
    s.set_defaults(func=cmd_sync_mtimes)


def main(argv: list[str] | None = None) -> int:
    """``python -m laser_repro.provenance {provenance,lineage,sync-mtimes} ...``: the same subcommands
    without loading the whole CLI (about 0.3 s less per job)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    p = argparse.ArgumentParser(prog="laser-repro", description="provenance subcommands")
    add_cli(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    args.func(args)
    return 0
