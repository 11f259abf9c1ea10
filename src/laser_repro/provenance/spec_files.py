"""Long arguments of a job's command as files: the provenance spec of a job (``laser-repro --provenance-spec
FILE``) and long path lists (``--inputs-from FILE``). Inline, the spec of ``bpe_count`` (1,704 inputs at the
paper's scale) was one 95 kB shell argument, 72 % of Linux's 128 kB limit on one argument, and 2.5 MB of the
commands the default run printed were provenance JSON: a printed command should be one a user would type.

Files are content-addressed (``<name>-<sha256[:16]>.json``) under ``.snakemake/laser-repro/`` of the
working directory: the same job writes the same file again, concurrent writers agree, and a spec never
stands for another job's. Written atomically when first needed (also by a dry run; they are small)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

SPEC_DIR = os.path.join(".snakemake", "laser-repro")


def write_content_file(name: str, data, directory: str | os.PathLike = SPEC_DIR) -> str:
    """The path (relative to the working directory where `directory` is) of a JSON file holding `data`,
    written once: ``<directory>/<name>-<sha256 of the JSON>.json``."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80] or "spec"
    path = Path(directory) / f"{safe}-{digest}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{safe}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return str(path)


def path_list_param(name: str):
    """A Snakemake params function: the job's inputs as a JSON list file (``--inputs-from FILE``), for commands
    that read many files (bpe_count: 1,704 shards at the paper's scale); the rule quotes it (``:q``)."""
    return lambda wildcards, input: write_content_file(name, [str(f) for f in input])


def read_json_file(path: str | os.PathLike, what: str):
    """The JSON of an argument file, with an error naming the option and the file."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{what} {path}: no such file (written by the workflow when it schedules the job; "
                         "rerun the job through Snakemake)") from None
    except ValueError as err:
        raise ValueError(f"{what} {path}: not JSON ({err})") from None


def read_path_list(path: str | os.PathLike, what: str = "--inputs-from") -> list[str]:
    data = read_json_file(path, what)
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise ValueError(f"{what} {path}: expected a JSON list of paths")
    return data
