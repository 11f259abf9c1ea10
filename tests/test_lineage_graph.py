"""Lineage as a graph (issue 40): view, check, diff and cell on small chains of records (no Snakemake).

    raw.txt (public URL) ──learn──> model.bin ;  raw.txt ──make_a──> a.txt
    a.txt + model.bin ──make_b──> b.txt ;  b.txt + model.bin ──table──> table.md, table.csv
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from laser_repro import cli, provenance
from laser_repro.provenance import graph as lineage_graph

RAW_URL = "https://example.org/data/raw.txt"
START = "2024-05-01T10:00:00+00:00"


def run_cli(*argv) -> int:
    try:
        return cli.main(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2


def step(rule, inputs, outputs, content=None, *, config=None, runtime=None, wildcards=None):
    for out in outputs:
        Path(out).write_text(content or f"{rule}:{out}:" + "".join(Path(i).read_text() for i in inputs))
    provenance.record(rule, outputs, inputs, start=START, config=config, runtime=runtime, wildcards=wildcards,
                      sources={"raw.txt": RAW_URL} if "raw.txt" in inputs else None)


def make_chain(root: Path, *, max_lines=10, threads=1, drift=""):
    root.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        Path("raw.txt").write_text("bonjour\nsalut\n")
        step("learn", ["raw.txt"], ["model.bin"], runtime={"torch_threads": threads})
        step("make_a", ["raw.txt"], ["a.txt"], f"a:{max_lines}", config={"max_lines": max_lines},
             wildcards={"lang": "fra"})
        step("make_b", ["a.txt", "model.bin"], ["b.txt"], f"b:{max_lines}:{drift}", runtime={"torch_threads": threads})
        Path("table.csv").write_text("language,base,init\nfra,3.5,90.0\n")
        step("table", ["b.txt", "model.bin"], ["table.md", "table.csv"], None)
        Path("table.csv").write_text(f"language,base,init\nfra,3.5,90.0\n#{max_lines}{drift}\n")
        provenance.record("table", ["table.md", "table.csv"], ["b.txt", "model.bin"], start=START)
    finally:
        os.chdir(cwd)
    return root


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setattr(provenance, "CODE_DIR", str(tmp_path))
    return tmp_path


def test_view_shows_each_job_once_after_a_summary(isolated, monkeypatch, capsys):
    root = make_chain(isolated / "a")
    monkeypatch.chdir(root)
    graph = lineage_graph.build("table.md")
    assert sorted(j.rule for j in graph.jobs.values()) == ["learn", "make_a", "make_b", "table"]
    assert len(graph.files) == 6  # raw.txt, model.bin, a.txt, b.txt, table.md, table.csv: each once
    assert [j.rule for j in graph.topological_jobs()][-1] == "table"
    assert run_cli("lineage", "view", "table.md") == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "lineage of table.md: 4 jobs, 6 files, 1 raw inputs"
    assert f"  {RAW_URL}  sha256=" in text and "  max_lines = 10" in text
    assert "machines:" in text and "wall time per rule:" in text
    # model.bin's job once, though two jobs read it
    assert sum(line.startswith("learn (1 job): model.bin  <- 1 raw") for line in text.splitlines()) == 1
    assert "make_b (1 job): b.txt  <- learn, make_a" in text
    assert run_cli("lineage", "view", "--json", "table.md") == 0
    data = json.loads(capsys.readouterr().out)
    assert {n["kind"] for n in data["nodes"]} == {"file", "job"} and len(data["nodes"]) == 10
    assert {"from": "model.bin", "to": next(n["id"] for n in data["nodes"] if n.get("rule") == "table")} in data["edges"]
    assert data["summary"]["raw_inputs"][0]["url"] == RAW_URL and data["summary"]["raw_inputs"][0]["bytes"] == 14


def test_check_finds_a_file_rewritten_in_place_with_its_mtime_kept(isolated, monkeypatch, capsys):
    root = make_chain(isolated / "a")
    monkeypatch.chdir(root)
    assert run_cli("lineage", "check", "table.md") == 0
    assert "0 changed, 0 missing" in capsys.readouterr().out
    st = os.stat("a.txt")
    Path("a.txt").write_text("a:1")  # truncated in place, mtime restored: Snakemake sees nothing
    os.utime("a.txt", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert run_cli("lineage", "check", "table.md") == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("changed: a.txt  recorded ")
    assert "1 changed, 0 missing" in out
    assert run_cli("lineage", "check", str(root)) == 1  # a directory: every file with a record under it
    assert "changed: a.txt" in capsys.readouterr().out
    os.remove("b.txt")
    assert run_cli("lineage", "check", "table.md") == 1
    assert "missing: b.txt" in capsys.readouterr().out


def test_diff_names_the_first_divergent_job_and_why(isolated, capsys):
    a = make_chain(isolated / "a")
    same = make_chain(isolated / "same")
    config = make_chain(isolated / "config", max_lines=20)
    threads = make_chain(isolated / "threads", threads=2, drift="float")
    assert run_cli("lineage", "diff", str(a / "table.md"), str(same / "table.md")) == 0
    assert "nothing differs" in capsys.readouterr().out

    result = lineage_graph.diff(a / "table.md", config / "table.md")
    first = result["divergences"][0]
    assert (first["rule"], list(first["settings"])) == ("make_a", ["config.max_lines"])
    assert first["settings"]["config.max_lines"] == {"a": 10, "b": 20}
    assert [d["rule"] for d in result["divergences"]] == ["make_a"]  # make_b and table only follow from it

    result = lineage_graph.diff(a / "table.md", threads / "table.md")
    # learn ran with 2 threads too, but made the same bytes: the first job whose bytes differ is make_b
    assert [d["rule"] for d in result["divergences"]] == ["make_b"]
    assert result["divergences"][0]["settings"] == {"runtime.torch_threads": {"a": 1, "b": 2}}
    assert run_cli("lineage", "diff", str(a / "table.md"), str(threads / "table.md")) == 1
    out = capsys.readouterr().out
    assert "make_b" in out and "runtime.torch_threads: 1 vs 2" in out

    drift = make_chain(isolated / "drift", drift="x")  # same inputs, same settings, different bytes
    (d,) = lineage_graph.diff(a / "table.md", drift / "table.md")["divergences"]
    assert d["rule"] == "make_b" and d["settings"] == {} and d["why"].startswith("same inputs, same settings")


def test_diff_names_the_machine_where_two_machines_differ(isolated, monkeypatch, capsys):
    """The same chain made "on another machine" (the records' machine facts replaced: one machine here) with
    the same settings, and make_b's bytes drifting there: diff names make_b and the CPU that differs."""
    from laser_repro.provenance import records

    a = make_chain(isolated / "a")
    monkeypatch.setattr(records, "_MACHINE", {"cpu_model": "Other CPU @ 2.0GHz", "cpu_flags_sha256": "0123456789abcdef",
                                              "cpu_count": 64})
    b = make_chain(isolated / "b", drift="float")
    (d,) = lineage_graph.diff(a / "table.md", b / "table.md")["divergences"]
    assert d["rule"] == "make_b" and d["why"] == "settings differ"
    assert set(d["settings"]) == {"machine.cpu_model", "machine.cpu_flags_sha256", "machine.cpu_count"}
    assert d["settings"]["machine.cpu_model"]["b"] == "Other CPU @ 2.0GHz"
    assert run_cli("lineage", "diff", str(a / "table.md"), str(b / "table.md")) == 1
    assert "machine.cpu_model: " in capsys.readouterr().out


def test_cell_names_the_inputs_of_one_row_and_column(isolated, monkeypatch, capsys):
    root = isolated / "cells"
    root.mkdir()
    monkeypatch.chdir(root)
    Path("raw").mkdir()
    for lang in ("fra", "deu"):
        Path(f"raw/{lang}.txt").write_text(lang)
        for model in ("base", "small"):
            Path(f"scores/{model}").mkdir(parents=True, exist_ok=True)
            step("score", [f"raw/{lang}.txt"], [f"scores/{model}/{lang}.json"], f"{model}{lang}")
    Path("table.csv").write_text("language,base,small\nfra,1.0,2.0\ndeu,3.0,4.0\n")
    provenance.record("table", ["table.csv"], sorted(str(p) for p in Path("scores").rglob("*.json") if not p.name.endswith(".prov.json")),
                      start=START)
    assert run_cli("lineage", "cell", "--json", "table.csv", "deu", "small") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["value"] == "4.0" and result["table_inputs"] == ["scores/small/deu.json"]
    assert result["raw_inputs"] == ["raw/deu.txt"]
    with pytest.raises(SystemExit, match="has no row 'xxx' .*its rows: fra, deu"):
        cli.main(["lineage", "cell", "table.csv", "xxx", "small"])
    with pytest.raises(SystemExit, match="has no column 'large'"):
        cli.main(["lineage", "cell", "table.csv", "fra", "large"])


def test_cell_follows_one_row_through_jobs_that_read_every_row(isolated, monkeypatch, capsys):
    """A FLORES-like chain: one job selects the lines of every language, one prepares them, one scores them
    all into one file. A cell of one language follows that language's files (and English, no row of the
    table) through those jobs, FLORES-200 file names included (``als_Latn`` is the row ``sqi``); upstream of
    the model, every language's training data (and the codes learned on it, though reached first from the
    prepare step) made the number."""
    root = isolated / "rows"
    root.mkdir()
    monkeypatch.chdir(root)
    flores = {"eng": "eng_Latn", "fra": "fra_Latn", "deu": "deu_Latn", "rus": "rus_Cyrl", "sqi": "als_Latn"}
    langs = list(flores)
    for d in ("raw", "train", "sel", "bpe"):
        Path(d).mkdir()
    for lang in langs:
        Path(f"raw/{flores[lang]}.dev").write_text(f"dev {lang}")
        Path(f"train/{lang}.txt").write_text(f"train {lang}")
    step("learn_codes", [f"train/{lang}.txt" for lang in langs], ["codes"])
    step("train", ["codes", *[f"train/{lang}.txt" for lang in langs]], ["model.bin", "model_record.json"])
    step("select", [f"raw/{flores[lang]}.dev" for lang in langs], [f"sel/{lang}.txt" for lang in langs])
    step("prepare", ["codes", *[f"sel/{lang}.txt" for lang in langs]], [f"bpe/{lang}.txt" for lang in langs])
    step("xsim", ["model.bin", *[f"bpe/{lang}.txt" for lang in langs]], ["scores.json"],
         '{"fra": 12.5, "deu": 7.25, "rus": 3.0, "sqi": 9.5}')
    step("tfidf", [f"sel/{lang}.txt" for lang in langs], ["tfidf.json"],
         '{"fra": 40.0, "deu": 30.0, "rus": 50.0, "sqi": 60.0}')
    Path("table.csv").write_text("language,ours,tfidf\nfra,12.5,40.0\ndeu,7.25,30.0\nrus,3.0,50.0\nsqi,9.5,60.0\n")
    provenance.record("table", ["table.csv"], ["scores.json", "tfidf.json"], start=START)

    assert run_cli("lineage", "cell", "--json", "table.csv", "rus", "ours") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["table_inputs"] == ["scores.json"] and result["models"] == ["train"]
    outputs = {j["job"]: j["outputs"] for j in result["jobs"]}
    assert outputs["xsim"] == ["scores.json"]
    assert outputs["prepare"] == ["bpe/eng.txt", "bpe/rus.txt"] and outputs["select"] == ["sel/eng.txt", "sel/rus.txt"]
    assert "tfidf" not in outputs
    assert result["raw_inputs"] == ["raw/eng_Latn.dev", "raw/rus_Cyrl.dev", *[f"train/{lang}.txt" for lang in sorted(langs)]]
    # without the row's narrowing, every language's dev lines would be named
    files, _ = lineage_graph.build("table.csv").upstream(os.path.abspath("scores.json"))
    assert {os.path.basename(p) for p in files} >= {"fra_Latn.dev", "als_Latn.dev"}

    # the TF-IDF column: its own input (the word "tfidf" is in no other column), no model
    assert run_cli("lineage", "cell", "--json", "table.csv", "sqi", "tfidf") == 0
    result = json.loads(capsys.readouterr().out)
    assert result["table_inputs"] == ["tfidf.json"] and result["models"] == []
    assert [j["job"] for j in result["jobs"]] == ["tfidf", "select"]
    assert result["raw_inputs"] == ["raw/als_Latn.dev", "raw/eng_Latn.dev"]
    assert run_cli("lineage", "cell", "table.csv", "sqi", "tfidf") == 0
    assert "made from 1 of the table job's 2 inputs, 2 jobs, 2 raw inputs:" in capsys.readouterr().out


def test_render_dot_and_mermaid(isolated, monkeypatch, tmp_path):
    root = make_chain(isolated / "a")
    monkeypatch.chdir(root)
    assert run_cli("lineage", "render", "table.md", "-o", str(tmp_path / "g.dot")) == 0
    dot = (tmp_path / "g.dot").read_text()
    assert dot.startswith("digraph lineage {") and '"make_a" -> "make_b";' in dot and '"table" -> "table.md";' in dot
    assert run_cli("lineage", "render", "table.md", "-o", str(tmp_path / "g.mmd")) == 0
    mmd = (tmp_path / "g.mmd").read_text()
    assert mmd.startswith("flowchart TB") and "-->" in mmd


@pytest.mark.skipif(shutil.which("dot") is None, reason="no Graphviz (bash scripts/test_packages.sh installs it)")
def test_render_svg_with_graphviz(isolated, monkeypatch, tmp_path):
    root = make_chain(isolated / "a")
    monkeypatch.chdir(root)
    assert run_cli("lineage", "render", "table.md", "-o", str(tmp_path / "g.svg")) == 0
    svg = (tmp_path / "g.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert ">make_a<" in svg and ">table.md<" in svg  # the jobs and the file, laid out by dot


def test_raw_inputs_of_one_archive_or_directory_are_one_line():
    from laser_repro.provenance import graph

    raws = [{"url": f"https://h/a.tgz#dev/{x}.dev", "path": f"/d/{x}.dev", "sha256": "s", "bytes": 10} for x in "abcde"]
    raws += [{"url": None, "path": "/local/x.txt", "sha256": "t", "bytes": 3}]
    groups = graph._raw_groups(raws)
    assert list(groups) == ["https://h/a.tgz#", "/local/"] and len(groups["https://h/a.tgz#"]) == 5
