"""Every file a job reads is an input of its rule: a check over a dry run's printed jobs (`snakemake -n -p`).

For each job, every ``results/...`` path in its shell command (and in the ``.snakemake/laser-repro/`` spec files
the command names, where long path lists go) must be one of the job's inputs, outputs, logs or benchmarks, or
name them without being a file of its own: a directory holding them (``--data-dir``), a prefix of them
(fairseq's ``--trainpref results/.../ara-eng`` for ``ara-eng.ara`` / ``ara-eng.eng``), or a file inside a
declared directory (``bpe/codes`` of a ``directory()`` input). Two exceptions, each
with its reason: a training job's own ``checkpoints/`` directory (its resumable state, read and written by
that job only, and deliberately not an output, which Snakemake would delete before a resumed attempt), and the
``settings`` of ``--model-records`` (config values compared as strings with a model's record, never opened).
A path that is none of these is a file the job reads or writes behind Snakemake's back: the job can run
before the file is made, or while another job remakes it (the compare_task race of issue 40).
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

RESULTS_PATH = re.compile(r"results/[^\s'\"\],}:;()]+")
JOB_START = re.compile(r"\n(?=\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ )")  # "[Sat Nov 28 05:44:19 2026]"
TRAINING_STATE = "/checkpoints"


def jobs(dry_run_output: str):
    """(rule, declared files, shell command) of every job with a shell command in ``snakemake -n -p``'s output."""
    for block in JOB_START.split(dry_run_output):
        rule = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        command = re.search(r"^Shell command: (.*)$", block, re.M)
        if not rule or not command:
            continue
        declared = []
        for key in ("input", "output", "log", "benchmark"):
            listed = re.search(rf"^    {key}: (.*)$", block, re.M)
            if listed:
                declared += [p.strip() for p in listed.group(1).split(", ")]
        yield rule.group(1), declared, command.group(1)


def paths_in_command(command: str, workdir: Path) -> set[str]:
    """The ``results/`` paths a command names, with those of the spec files it names, and without the settings
    of ``--model-records``."""
    words = shlex.split(command)
    for i, word in enumerate(words[:-1]):
        if word == "--model-records":
            words[i + 1] = " ".join(entry["record"] for entry in json.loads(words[i + 1]).values())
    text = " ".join(words)
    for spec in re.findall(r"\.snakemake/laser-repro/[^\s'\"]+", text):
        if (workdir / spec).is_file():
            text += " " + (workdir / spec).read_text(encoding="utf-8")
    return {p.rstrip(".") for p in RESULTS_PATH.findall(text)}


def undeclared(dry_run_output: str, workdir: Path) -> dict[str, set[str]]:
    """{rule: paths its jobs name that none of their declared files covers}."""
    found: dict[str, set[str]] = {}
    for rule, declared, command in jobs(dry_run_output):
        for path in paths_in_command(command, workdir):
            covered = any(path == d or d.startswith(path.rstrip("/") + "/") or d.startswith(path + ".")
                          or path.startswith(d.rstrip("/") + "/")  # a file inside a declared directory
                          for d in declared)
            own_state = path.endswith(TRAINING_STATE) and any(
                d.startswith(path[: -len(TRAINING_STATE)] + "/") for d in declared)
            if not covered and not own_state:
                found.setdefault(rule, set()).add(path)
    return found
