"""`laser-repro --provenance-json JSON SUBCOMMAND ...`: the record of a Snakemake job written by the job's
own process once the subcommand succeeded (the same record as the separate `provenance` subcommand)."""
from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from laser_repro import cli, provenance

URL = "https://example.org/vocab"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setattr(provenance, "CODE_DIR", str(tmp_path))  # code outside git: commit null
    Path("vocab").write_text("a@@ 3\nb 2\n")
    return tmp_path


def spec(**extra) -> str:
    return json.dumps({"rule": "fairseq_dict", "inputs": ["vocab"], "outputs": ["dict.txt"], "log": "logs/dict.log",
                       "config": {"bpe.merges": 100}, "sources": [f"vocab={URL}"], **extra})


def test_record_written_after_the_subcommand_as_the_provenance_command(workdir):
    before = time.time()
    assert cli.main(["--provenance-json", spec(), "bpe-dict", "--vocab", "vocab", "--output", "dict.txt"]) == 0
    rec = json.loads(Path("dict.txt.prov.json").read_text())
    assert rec["rule"] == "fairseq_dict" and rec["log"] == "logs/dict.log" and rec["config"] == {"bpe.merges": 100}
    assert rec["sources"] == {"vocab": URL} and set(rec["inputs"]) == {"vocab"} and set(rec["outputs"]) == {"dict.txt"}
    # started when the process did: before the input was read and the output written
    start = provenance.parse_time(rec["start"])
    assert before - 1e-3 <= start.timestamp() <= rec["outputs"]["dict.txt"]["mtime_ns"] / 1e9
    assert start <= provenance.parse_time(rec["end"])
    # the separate command, given the same job, writes the same record (but for the end time)
    assert cli.main(["provenance", "--rule", "fairseq_dict", "--start", rec["start"], "--inputs", "vocab",
                     "--outputs", "dict.txt", "--log", "logs/dict.log", "--config-json", '{"bpe.merges": 100}',
                     "--source", f"vocab={URL}"]) == 0
    separate = json.loads(Path("dict.txt.prov.json").read_text())
    for key in ("end", "duration_s"):
        rec.pop(key), separate.pop(key)
    # what only the job's own process knows: its thread count (when it loaded torch)
    runtime = rec.pop("runtime")
    assert separate.pop("runtime") is None
    assert runtime is None or set(runtime) == {"torch_threads"}
    assert rec == separate


def test_no_record_when_the_subcommand_fails(workdir):
    Path("vocab").unlink()
    assert cli.main(["--provenance-json", spec(), "bpe-dict", "--vocab", "vocab", "--output", "dict.txt"]) == 1
    assert not Path("dict.txt.prov.json").exists()
    # a subcommand that exits with an error: no record either
    with pytest.raises(SystemExit):
        cli.main(["--provenance-json", json.dumps({"rule": "table4", "outputs": ["t.md", "t.csv"]}),
                  "eval-table", "bucc", "--run-name", "x", "--md", "t.md", "--csv", "t.csv"])
    assert not list(workdir.glob("*.prov.json"))


def test_absent_output_fails_the_job(workdir):
    with pytest.raises(SystemExit, match="provenance: rule fairseq_dict: output.*absent: other.txt"):
        cli.main(["--provenance-json", spec(outputs=["dict.txt", "other.txt"]), "bpe-dict", "--vocab", "vocab",
                  "--output", "dict.txt"])
    with pytest.raises(SystemExit, match="provenance: --provenance-json"):
        provenance.record_job('{"outputs": ["dict.txt"]}')


def test_start_as_epoch_seconds(workdir):
    Path("dict.txt").write_text("x 1\n")
    t = time.time() - 5
    rec = provenance.record_job(spec(), start=t)
    assert provenance.parse_time(rec["start"]) == dt.datetime.fromtimestamp(t).astimezone()


def test_provenance_spec_file_and_path_lists(tmp_path, monkeypatch):
    """The workflow passes a job's spec as a content-addressed file (laser_repro.provenance.spec_files), not as
    one shell argument: the same spec is one file, read before the subcommand runs (a missing one stops it)."""
    import json

    from laser_repro import cli
    from laser_repro.provenance import spec_files

    monkeypatch.chdir(tmp_path)
    Path("vocab").write_text("a@@ 3\nb 2\n", encoding="utf-8")
    spec = {"rule": "fairseq_dict", "inputs": ["vocab"], "outputs": ["dict.txt"], "log": None, "config": {}}
    path = spec_files.write_content_file("provenance-fairseq_dict", spec)
    assert path == spec_files.write_content_file("provenance-fairseq_dict", dict(reversed(list(spec.items()))))
    assert path.startswith(".snakemake/laser-repro/provenance-fairseq_dict-") and path.endswith(".json")
    assert spec_files.write_content_file("provenance-fairseq_dict", dict(spec, inputs=["other"])) != path
    assert cli.main(["--provenance-spec", path, "bpe-dict", "--vocab", "vocab", "--output", "dict.txt"]) == 0
    assert json.loads(Path("dict.txt.prov.json").read_text())["rule"] == "fairseq_dict"
    Path("dict.txt").unlink()
    with pytest.raises(SystemExit, match="--provenance-spec missing.json: no such file"):
        cli.main(["--provenance-spec", "missing.json", "bpe-dict", "--vocab", "vocab", "--output", "dict.txt"])
    assert not Path("dict.txt").exists()  # stopped before the work
    listed = spec_files.write_content_file("inputs", ["a.txt", "b.txt"])
    assert spec_files.read_path_list(listed) == ["a.txt", "b.txt"]
    with pytest.raises(ValueError, match="expected a JSON list of paths"):
        spec_files.read_path_list(path)
