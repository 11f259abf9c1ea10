"""Provenance sidecars, lineage and sync-mtimes on a small chain built in a temp dir (no Snakemake).

    raw.txt (no sidecar, public URL) ──learn──> model.bin
    raw.txt ──make_a──> a.txt ;  a.txt + model.bin ──make_b──> b.txt ;  b.txt + model.bin ──table──> table.md
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from laser_repro import cli, provenance

RAW_URL = "https://github.com/facebookresearch/LASER/raw/main/data/tatoeba/v1/tatoeba.fra-eng.fra"
START = "2024-05-01T10:00:00+00:00"


def sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def run_cli(*argv) -> int:
    """laser-repro ARGV in-process; the exit status."""
    try:
        return cli.main(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2


def step(rule, inputs, outputs, content=None, *extra):
    for out in outputs:
        Path(out).write_text(content or f"{rule}:{out}:" + "".join(Path(i).read_text() for i in inputs))
    assert run_cli("provenance", "--rule", rule, "--start", START, "--inputs", *inputs,
                   "--outputs", *outputs, *extra) == 0


@pytest.fixture
def chain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # no enclosing repository
    monkeypatch.setattr(provenance, "CODE_DIR", str(tmp_path))  # code outside git: commit null
    Path("raw.txt").write_text("bonjour\nsalut\n")
    step("learn", ["raw.txt"], ["model.bin"], None, "--source", f"raw.txt={RAW_URL}")
    step("make_a", ["raw.txt"], ["a.txt"], None, "--source", f"raw.txt={RAW_URL}", "--wildcards",
         '{"lang": "fra"}', "--config-json", '{"max_lines": 10}')
    step("make_b", ["a.txt", "model.bin"], ["b.txt"])
    step("table", ["b.txt", "model.bin"], ["table.md", "table.csv"], None, "--log", "logs/table.log")
    return tmp_path


def read(path) -> dict:
    return json.loads(Path(str(path) + ".prov.json").read_text())


def test_record_contents(chain):
    rec = read("a.txt")
    assert rec["format"] == provenance.FORMAT
    assert rec["rule"] == "make_a" and rec["wildcards"] == {"lang": "fra"}
    assert rec["inputs"]["raw.txt"]["sha256"] == sha("raw.txt")
    assert rec["inputs"]["raw.txt"]["size"] == Path("raw.txt").stat().st_size
    out = rec["outputs"]["a.txt"]
    assert out == {"sha256": sha("a.txt"), "size": Path("a.txt").stat().st_size,
                   "mtime_ns": Path("a.txt").stat().st_mtime_ns}
    assert rec["sources"] == {"raw.txt": RAW_URL}
    assert rec["config"] == {"max_lines": 10}
    start, end = (provenance.parse_time(rec[k]) for k in ("start", "end"))
    assert start < end and rec["duration_s"] == pytest.approx((end - start).total_seconds(), abs=0.01)
    assert set(rec["libraries"]) == {"python", "torch", "fairseq", "numpy", "sacremoses",
                                     "faiss-cpu", "faiss-gpu-cu12", "snakemake", "scikit-learn"}
    assert rec["libraries"]["numpy"] == __import__("numpy").__version__
    assert rec["code"] == {"commit": None, "dirty": None, "version": __import__("laser_repro").__version__}
    assert rec["host"]["hostname"] and rec["host"]["pid"] == os.getpid()
    # every output of a job gets the same record
    assert read("table.md") == read("table.csv")
    assert set(read("table.md")["outputs"]) == {"table.md", "table.csv"}
    assert read("table.md")["log"] == "logs/table.log"


def test_missing_output_is_an_error(chain, capsys):
    with pytest.raises(SystemExit, match="nothere.txt"):
        cli.main(["provenance", "--rule", "r", "--start", START, "--inputs", "a.txt",
                  "--outputs", "a.txt", "nothere.txt"])


def test_directory_output_and_input(chain):
    d = Path("bin")
    (d / "sub").mkdir(parents=True)
    (d / "train.idx").write_bytes(b"\x00\x01")
    (d / "sub" / "dict.txt").write_text("a 1\n")
    assert run_cli("provenance", "--rule", "binarize", "--start", START, "--inputs", "b.txt",
                   "--outputs", "bin") == 0
    entry = read("bin")["outputs"]["bin"]
    manifest = f"sub/dict.txt\0{sha(d / 'sub' / 'dict.txt')}\ntrain.idx\0{sha(d / 'train.idx')}\n"
    assert entry["type"] == "dir" and entry["files"] == 2 and entry["size"] == 6
    assert entry["sha256"] == hashlib.sha256(manifest.encode()).hexdigest()
    (d / ".snakemake_timestamp").touch()  # Snakemake's marker does not change the directory's hash
    assert provenance.path_sha256(d) == entry["sha256"]
    step("train", ["bin"], ["ckpt.pt"], "weights")
    assert read("ckpt.pt")["inputs"]["bin"]["sha256"] == entry["sha256"]
    assert run_cli("lineage", "tree", "ckpt.pt") == 0


def test_git_commit_and_dirty(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(provenance, "CODE_DIR", str(tmp_path))  # the code's repository, not the cwd's
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q"], check=True)
    Path("Snakefile").write_text("rule all:\n")
    subprocess.run([*git, "add", "Snakefile"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    Path("out.txt").write_text("x")  # untracked: not dirty
    rec = provenance.record("r", ["out.txt"], start=START)
    assert rec["code"]["commit"] == head and rec["code"]["dirty"] is False
    Path("Snakefile").write_text("rule all:\n    input: []\n")
    assert provenance.record("r", ["out.txt"], start=START)["code"]["dirty"] is True


def test_hash_cache_reuses_sidecar_checksums(chain, monkeypatch):
    hashed = []
    real = provenance.file_sha256
    monkeypatch.setattr(provenance, "file_sha256", lambda p: hashed.append(Path(p).name) or real(p))
    step("make_c", ["b.txt", "model.bin", "raw.txt"], ["c.txt"])
    # b.txt and model.bin have sidecars with matching size+mtime: only the raw input and the output are hashed
    assert sorted(hashed) == ["c.txt", "raw.txt"]
    assert read("c.txt")["inputs"]["b.txt"]["sha256"] == sha("b.txt")
    hashed.clear()
    st = Path("b.txt").stat()
    os.utime("b.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # stale cache: hash again
    step("make_c", ["b.txt", "model.bin"], ["c.txt"])
    assert sorted(hashed) == ["b.txt", "c.txt"]


def test_lineage_text_and_json(chain, capsys):
    assert run_cli("lineage", "tree", "table.md") == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("table.md  " + sha("table.md")[:12] + "  table  [ok]")
    assert any(line.lstrip("│├└─ ").startswith("a.txt  " + sha("a.txt")[:12] + "  make_a  [ok]") for line in lines)
    raw_lines = [line for line in lines if "raw.txt  raw " in line]
    assert raw_lines and all(RAW_URL in line and sha("raw.txt") in line for line in raw_lines)
    assert lines[-1] == "5 nodes, 1 raw files, 0 changed, 0 without a record"

    assert run_cli("lineage", "tree", "table.md", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    tree = result["tree"]
    assert tree["rule"] == "table" and tree["status"] == "ok"
    b = next(n for n in tree["inputs"] if n["path"] == "b.txt")
    a = next(n for n in b["inputs"] if n["path"] == "a.txt")
    raw = a["inputs"][0]
    assert raw == {"path": "raw.txt", "sha256": sha("raw.txt"), "recorded_sha256": sha("raw.txt"),
                   "rule": None, "raw": True, "recorded": False, "url": RAW_URL, "status": "ok"}
    assert tree["recorded"] is True
    assert result["summary"] == {"nodes": 5, "raw": 1, "changed": 0, "unrecorded": 0}


def test_lineage_shared_subtree_printed_once(chain, capsys):
    assert run_cli("lineage", "tree", "table.md") == 0
    lines = capsys.readouterr().out.splitlines()
    model = [line for line in lines if "model.bin" in line]
    assert len(model) == 2
    full, ref = model
    assert "see above" not in full and "see above" in ref
    # model.bin's own input (raw.txt) appears below its first occurrence only: 2 raw.txt lines in all
    # (under model.bin and under a.txt), not 3
    assert sum("raw.txt" in line for line in lines) == 2
    assert len(lines) == 8  # 7 node lines + summary


def test_lineage_max_depth(chain, capsys):
    assert run_cli("lineage", "tree", "table.md", "--max-depth", "1") == 0
    lines = capsys.readouterr().out.splitlines()
    assert not any("a.txt" in line for line in lines)
    assert any("b.txt" in line and "below --max-depth" in line for line in lines)


def test_lineage_changed_file(chain, capsys):
    Path("a.txt").write_text("edited by hand\n")
    assert run_cli("lineage", "tree", "table.md") == 1
    out = capsys.readouterr().out
    a_line = next(line for line in out.splitlines() if "a.txt" in line)
    assert "[changed]" in a_line and sha("a.txt")[:12] in a_line
    assert out.splitlines()[-1].endswith("1 changed, 0 without a record")


def test_lineage_walks_through_deleted_temp_file(chain, capsys):
    Path("a.txt").unlink()  # a temp() output deleted by Snakemake; its sidecar stays
    assert run_cli("lineage", "tree", "table.md", "--json") == 0
    tree = json.loads(capsys.readouterr().out)["tree"]
    b = next(n for n in tree["inputs"] if n["path"] == "b.txt")
    a = next(n for n in b["inputs"] if n["path"] == "a.txt")
    assert a["status"] == "missing" and a["sha256"] is None and a["rule"] == "make_a"
    assert a["recorded_sha256"] == read("b.txt")["inputs"]["a.txt"]["sha256"]
    assert a["inputs"][0]["url"] == RAW_URL and a["inputs"][0]["sha256"] == sha("raw.txt")
    assert run_cli("lineage", "tree", "table.md") == 0
    assert "a.txt  " in capsys.readouterr().out


def test_lineage_from_another_directory(chain, monkeypatch, capsys):
    """Recorded paths are relative to the workflow root, found from the sidecar's location."""
    monkeypatch.chdir(chain.parent)
    assert run_cli("lineage", "tree", str(Path(chain.name) / "table.md")) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "5 nodes, 1 raw files, 0 changed, 0 without a record"


def test_lineage_without_sidecar(chain, capsys):
    assert run_cli("lineage", "tree", "raw.txt") != 0


@pytest.fixture
def workflow_tree(tmp_path, monkeypatch):
    """A workflow root with the kinds of raw inputs and a workflow output that has no record:

        resources/dl.txt         download: record without inputs (--source on its own record)
        data/corpus.txt          under data_root: no record, its consumer records its URL
        data/licensed.txt        under data_root: no record, no public URL (e.g. MLDoc)
        results/run/orphan.txt   made by the workflow but without a record
        results/run/a.txt   <- resources/dl.txt, data/corpus.txt, data/licensed.txt
        results/run/table.md <- results/run/a.txt, results/run/orphan.txt
    """
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(provenance, "CODE_DIR", str(tmp_path))
    for d in ("resources", "data", "results/run"):
        Path(d).mkdir(parents=True)
    Path("resources/dl.txt").write_text("downloaded\n")
    step("download", [], ["resources/dl.txt"], None, "--source", f"resources/dl.txt={RAW_URL}")
    Path("data/corpus.txt").write_text("corpus\n")
    Path("data/licensed.txt").write_text("licensed\n")
    step("make_a", ["resources/dl.txt", "data/corpus.txt", "data/licensed.txt"], ["results/run/a.txt"], None,
         "--source", f"data/corpus.txt={RAW_URL}.corpus")
    Path("results/run/orphan.txt").write_text("made without a record\n")
    step("table", ["results/run/a.txt", "results/run/orphan.txt"], ["results/run/table.md"])
    return tmp_path


def _nodes(tree):
    yield tree
    for kid in tree.get("inputs", []):
        yield from _nodes(kid)


def test_lineage_flags_a_workflow_output_without_record(workflow_tree, capsys):
    assert run_cli("lineage", "tree", "results/run/table.md") == 1
    lines = capsys.readouterr().out.splitlines()
    orphan = next(line for line in lines if "orphan.txt" in line)
    assert "[no record]" in orphan and "raw" not in orphan and "no provenance record" in orphan
    assert lines[-1] == "6 nodes, 3 raw files, 0 changed, 1 without a record"
    assert run_cli("lineage", "tree", "results/run/table.md", "--json") == 1
    result = json.loads(capsys.readouterr().out)
    nodes = {n["path"]: n for n in _nodes(result["tree"])}
    assert nodes["results/run/orphan.txt"]["status"] == "no record" and not nodes["results/run/orphan.txt"]["raw"]
    assert nodes["results/run/orphan.txt"]["sha256"] == sha("results/run/orphan.txt")
    assert result["summary"] == {"nodes": 6, "raw": 3, "changed": 0, "unrecorded": 1}
    # the raw inputs: a download (its own record, no inputs), a data_root file with a URL, one without
    assert nodes["resources/dl.txt"]["raw"] and nodes["resources/dl.txt"]["rule"] == "download"
    assert nodes["resources/dl.txt"]["url"] == RAW_URL and nodes["resources/dl.txt"]["status"] == "ok"
    assert nodes["data/corpus.txt"]["raw"] and nodes["data/corpus.txt"]["url"] == RAW_URL + ".corpus"
    assert nodes["data/licensed.txt"]["raw"] and nodes["data/licensed.txt"]["status"] == "ok"
    assert run_cli("lineage", "tree", "results/run/a.txt") == 0


def test_lineage_flags_a_sidecar_that_does_not_record_the_file(workflow_tree, capsys):
    """A sidecar that is unreadable, or is not the record of its file (copied from another output):
    no record, wherever the file is."""
    Path("data/licensed.txt.prov.json").write_text(Path("results/run/a.txt.prov.json").read_text())
    assert run_cli("lineage", "tree", "results/run/a.txt") == 1
    line = next(line for line in capsys.readouterr().out.splitlines() if "licensed.txt" in line)
    assert "[no record]" in line
    Path("data/licensed.txt.prov.json").write_text("{not json")
    assert run_cli("lineage", "tree", "results/run/a.txt") == 1


def test_lineage_changed_file_without_record_is_changed(workflow_tree, capsys):
    Path("results/run/orphan.txt").write_text("edited\n")
    assert run_cli("lineage", "tree", "results/run/table.md", "--json") == 1
    result = json.loads(capsys.readouterr().out)
    orphan = next(n for n in _nodes(result["tree"]) if n["path"] == "results/run/orphan.txt")
    assert orphan["status"] == "changed" and orphan["recorded"] is False
    assert result["summary"]["changed"] == 1 and result["summary"]["unrecorded"] == 1


def scramble(paths):
    """Outputs older than their inputs, as after a DVC checkout in the wrong order."""
    base = time.time_ns()
    for i, p in enumerate(paths):
        os.utime(p, ns=(base, base - i * 10_000_000_000))


EDGES = {"model.bin": ["raw.txt"], "a.txt": ["raw.txt"], "b.txt": ["a.txt", "model.bin"],
         "table.md": ["b.txt", "model.bin"], "table.csv": ["b.txt", "model.bin"]}
ORDER = ["raw.txt", "model.bin", "a.txt", "b.txt", "table.md", "table.csv"]


def test_sync_mtimes_makes_outputs_newer(chain, capsys):
    scramble(ORDER)
    before = {p: Path(p).stat().st_mtime_ns for p in ORDER}
    assert run_cli("sync-mtimes", ".", "--dry-run") == 0
    assert "verified 5, untouched 0, to re-date 6" in capsys.readouterr().out
    assert {p: Path(p).stat().st_mtime_ns for p in ORDER} == before
    now = time.time_ns()
    assert run_cli("sync-mtimes", ".") == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verified 5, untouched 0, re-dated 6"
    m = {p: Path(p).stat().st_mtime_ns for p in ORDER}
    for out, inputs in EDGES.items():
        for i in inputs:
            assert m[out] >= m[i] + 1_000_000_000, (out, i)
    assert max(m.values()) <= time.time_ns() and max(m.values()) <= now + 1_000_000_000
    # idempotent
    assert run_cli("sync-mtimes", ".") == 0
    assert capsys.readouterr().out.splitlines()[-1] == "verified 5, untouched 0, re-dated 0"
    assert {p: Path(p).stat().st_mtime_ns for p in ORDER} == m


def test_sync_mtimes_leaves_modified_outputs(chain, capsys):
    Path("b.txt").write_text("regenerated differently\n")
    scramble(ORDER)
    before = {p: Path(p).stat().st_mtime_ns for p in ORDER}
    result = provenance.sync_mtimes([chain])
    untouched = {Path(p).name: r for p, r in result["untouched"].items()}
    assert untouched == {"b.txt": "content differs from its sidecar",
                         "table.md": "input b.txt differs from what it was made from",
                         "table.csv": "input b.txt differs from what it was made from"}
    assert sorted(Path(p).name for p in result["verified"]) == ["a.txt", "model.bin"]
    for p in ("b.txt", "table.md", "table.csv"):
        assert Path(p).stat().st_mtime_ns == before[p]
    for out in ("a.txt", "model.bin"):
        assert Path(out).stat().st_mtime_ns >= Path("raw.txt").stat().st_mtime_ns + 1_000_000_000
    assert run_cli("sync-mtimes", str(chain)) == 0
    out = capsys.readouterr().out
    assert "untouched b.txt: content differs from its sidecar" in out
    assert out.splitlines()[-1].startswith("verified 2, untouched 3, re-dated ")


def test_sync_mtimes_absent_temp_input_is_fine(chain):
    Path("a.txt").unlink()
    result = provenance.sync_mtimes([chain])
    assert {Path(p).name for p in result["untouched"]} == {"a.txt"}  # missing, not re-dated
    assert {Path(p).name for p in result["verified"]} == {"model.bin", "b.txt", "table.md", "table.csv"}


def test_console_script_end_to_end(tmp_path):
    """The real console script, as a Snakemake rule runs it; prints its wall time."""
    script = Path(sys.executable).parent / "laser-repro"
    if not script.exists():
        pytest.skip("console script not installed")
    (tmp_path / "in.txt").write_text("x\n" * 1000)
    (tmp_path / "out.txt").write_text("y\n")
    argv = [str(script), "provenance", "--rule", "demo", "--start", START, "--inputs", "in.txt",
            "--outputs", "out.txt", "--config-json", '{"seed": 1}', "--source", f"in.txt={RAW_URL}"]
    times = []
    for _ in range(3):
        t = time.perf_counter()
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t)
        assert proc.returncode == 0, proc.stderr
    rec = json.loads((tmp_path / "out.txt.prov.json").read_text())
    assert rec["inputs"]["in.txt"]["sha256"] == sha(tmp_path / "in.txt") and rec["config"] == {"seed": 1}
    print(f"laser-repro provenance wall time: min {min(times):.3f} s, max {max(times):.3f} s")
    assert min(times) < 5


def test_sync_mtimes_restores_recorded_times(tmp_path, monkeypatch):
    """After a checkout that re-dates everything, files get back the mtimes recorded when they were
    made (their hash cache then works again)."""
    monkeypatch.chdir(tmp_path)
    t0 = time.time_ns() - 3600 * 10**9
    Path("raw.txt").write_text("r\n")
    os.utime("raw.txt", ns=(t0, t0))
    for i, (rule, inp, out) in enumerate([("make_a", "raw.txt", "a.txt"), ("make_b", "a.txt", "b.txt")], 1):
        Path(out).write_text(rule)
        os.utime(out, ns=(t0, t0 + i * 60 * 10**9))
        provenance.record(rule, [out], [inp], start=START)
    now = time.time_ns()
    for p in ("b.txt", "a.txt", "raw.txt"):  # checked out in the wrong order, all "now"
        os.utime(p, ns=(now, now))
    result = provenance.sync_mtimes([tmp_path])
    assert {Path(p).name for p in result["verified"]} == {"a.txt", "b.txt"}
    assert [Path(p).stat().st_mtime_ns for p in ("raw.txt", "a.txt", "b.txt")] == [
        t0, t0 + 60 * 10**9, t0 + 120 * 10**9]
    assert provenance.sync_mtimes([tmp_path])["times"] == {}
    hashed = []
    real = provenance.file_sha256
    monkeypatch.setattr(provenance, "file_sha256", lambda p: hashed.append(Path(p).name) or real(p))
    Path("c.txt").write_text("c")
    provenance.record("make_c", ["c.txt"], ["b.txt"], start=START)
    assert hashed == ["c.txt"]


def test_sync_mtimes_dates_a_jobs_benchmark_with_its_outputs(tmp_path, monkeypatch):
    """Snakemake dates a job by its benchmark file as by an output: when sync-mtimes raises an
    input (here to 1 s after its own input) above the consumer's benchmark, the benchmark follows
    the consumer's outputs, or the consumer would rerun (seen after copying a toy run's results)."""
    monkeypatch.chdir(tmp_path)
    t0 = time.time_ns() - 3600 * 10**9
    Path("raw.txt").write_text("r\n")
    os.utime("raw.txt", ns=(t0, t0))
    Path("words").write_text("w\n")  # made 0.2 s after its input: sync-mtimes raises it to 1 s after
    os.utime("words", ns=(t0, t0 + 200_000_000))
    provenance.record("count", ["words"], ["raw.txt"], start=START)
    Path("codes").write_text("c\n")
    os.utime("codes", ns=(t0, t0 + 400_000_000))
    Path("bench.tsv").write_text("s\n0.1\n")
    os.utime("bench.tsv", ns=(t0, t0 + 500_000_000))
    rec = provenance.record("learn", ["codes"], ["words"], start=START, benchmark="bench.tsv")
    assert rec["benchmark"] == "bench.tsv"
    result = provenance.sync_mtimes([tmp_path])
    m = {p: Path(p).stat().st_mtime_ns for p in ("raw.txt", "words", "codes", "bench.tsv")}
    assert m["words"] >= m["raw.txt"] + 10**9 and m["codes"] >= m["words"] + 10**9
    assert m["bench.tsv"] == m["codes"] and str(tmp_path / "bench.tsv") in result["times"]
    assert provenance.sync_mtimes([tmp_path])["times"] == {}  # idempotent
