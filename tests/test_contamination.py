"""Which test sentences a run's training text holds (laser_repro.evaluation.contamination, the table of
laser_repro.reporting.contamination, `laser-repro contamination`): exact and normalised counts on small
handmade files, languages without training text, bad input naming its file, the hash sets' memory; and the
default config's dry run: the table is a default target and its job reads the training text and the test sets."""
from __future__ import annotations

import csv
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_snakemake
from laser_repro.core.textio import InputError
from laser_repro.evaluation import contamination as c
from laser_repro.reporting import contamination as table

LOWER = {"preprocess": {"lowercase": True}}  # a bitext_data entry as the normalisation reads it


def write(path: Path, lines) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    return str(path)


def source(*files, skip=None):
    return {"files": [str(f) for f in files], "skip": skip}


@pytest.fixture
def handmade(tmp_path):
    """Training text of eng and deu (a pair file each, with their normalised shards written by the training
    preprocessing), test files of eng, deu and fra (no training text)."""
    of = c.normalisers(LOWER)
    eng_train = ["Hello, world!", "The cat sleeps.", "  The dog barks.  ", "The cat sleeps.", ""]
    deu_train = ["Hallo, Welt!", "Die Katze schläft.", "Der Hund bellt."]
    files = {}
    for lang, lines in (("eng", eng_train), ("deu", deu_train)):
        files[lang] = write(tmp_path / "corpora" / f"deu-eng.{lang}", lines)
        files[f"{lang}.tok"] = write(tmp_path / "tok" / f"deu-eng.{lang}.000-of-001", [of(lang)(x) for x in lines])
    tests = {
        # exact: "The cat sleeps.", "The dog barks." (surrounding spaces stripped); normalised only: "hello ,
        # world !" (case and punctuation spacing); not at all: "A bird sings."
        "eng": write(tmp_path / "test" / "t.eng", ["The cat sleeps.", "hello , world !", "A bird sings.",
                                                   " The dog barks.", "HELLO,WORLD!"]),
        "deu": write(tmp_path / "test" / "t.deu", ["Die Katze schläft.", "die katze schläft .", "Ein Vogel singt."]),
        "fra": write(tmp_path / "test" / "t.fra", ["Le chat dort.", "Bonjour !"]),
    }
    spec = {"run": "hand",
            "training": [{"data": "bitext_data.hand", "entry": LOWER, "models": ["base"], "text": "the pair files",
                          "normalised_text": "the shards",
                          "languages": {lang: {"exact": [source(files[lang])], "normalised": [source(files[f"{lang}.tok"])]}
                                        for lang in ("eng", "deu")}}],
            "sets": [{"set": "tatoeba", "label": "Tatoeba", "part": f"{lang}-eng", "language": lang, "file": tests[lang]}
                     for lang in ("eng", "deu", "fra")],
            "absent": {"bucc": "not configured"}}
    return spec, files, tests


def rows_by_language(result):
    return {r["language"]: r for r in result["rows"]}


def test_exact_and_normalised_counts(handmade):
    spec, _, _ = handmade
    result = c.contamination(spec)
    rows = rows_by_language(result)
    eng, deu, fra = rows["eng"], rows["deu"], rows["fra"]
    assert (eng["sentences"], eng["exact"], eng["normalised"]) == (5, 2, 4)
    assert eng["exact_percent"] == 40.0 and eng["normalised_percent"] == 80.0
    # a sentence differing only in case or punctuation spacing counts as normalised only
    assert eng["examples"] == {"exact": ["The cat sleeps.", "The dog barks."],
                               "normalised_only": ["hello , world !", "HELLO,WORLD!"]}
    assert (deu["exact"], deu["normalised"]) == (1, 2) and deu["examples"]["normalised_only"] == ["die katze schläft ."]
    # the training text's statistics: non-empty lines, distinct lines as given and normalised
    langs = result["training"][0]["languages"]
    assert langs["eng"] == {"lines": 4, "distinct": 3, "distinct_normalised": 3, "files": 2}
    assert "Moses" in result["training"][0]["normalisation"] and "lowercased" in result["training"][0]["normalisation"]


def test_a_language_without_training_text_says_so(handmade, tmp_path):
    spec, _, tests = handmade
    result = c.contamination(spec)
    fra = rows_by_language(result)["fra"]
    assert fra["status"] == "no training text" and fra["exact"] is None and fra["normalised"] is None
    assert fra["sentences"] == 2 and fra["training_lines"] == 0
    table.write_table(result, tmp_path / "t.md", tmp_path / "t.csv")
    md = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "| Tatoeba | 1 without training text | 2 | – | – | – | – |" in md
    assert "Tatoeba: no training text of fra (1 test file: none of their sentences can be in it)." in md
    assert "Not counted: bucc: not configured" in md and "Training text: the pair files" in md
    lines = list(csv.DictReader(open(tmp_path / "t.csv", encoding="utf-8")))
    assert [r["status"] for r in lines] == ["ok", "ok", "no training text", "total"]
    total = lines[-1]
    assert (total["sentences"], total["exact"], total["normalised"]) == ("10", "3", "6")
    tex = (tmp_path / "t.tex").read_text(encoding="utf-8")
    assert "run \\texttt{hand}" in tex and tex.count("\\begin{tabular}") == 1


def test_normalised_files_or_the_normaliser_give_the_same_counts(handmade):
    """Without the normalised training files, the normaliser is applied to the training lines: the same sets."""
    spec, _, _ = handmade
    without = json.loads(json.dumps(spec))
    for lang in without["training"][0]["languages"].values():
        lang["normalised"] = None
    strip = lambda result: [{k: v for k, v in r.items()} for r in result["rows"]]  # noqa: E731
    a, b = c.contamination(spec), c.contamination(without)
    assert strip(a) == strip(b)
    assert [t["languages"]["eng"]["distinct_normalised"] for t in (a["training"][0], b["training"][0])] == [3, 3]


def test_a_text_path_without_normalisation_counts_exact_matches_only(handmade):
    spec, _, _ = handmade
    spec["training"][0]["entry"] = {"preprocess": {"lowercase": True}, "subword": {"kind": "another"}}
    assert c.normalisers(spec["training"][0]["entry"]) is None
    result = c.contamination(spec)
    eng = rows_by_language(result)["eng"]
    assert (eng["exact"], eng["normalised"]) == (2, None)
    assert "no normalisation here yet" in result["training"][0]["normalisation"]
    (total,) = c.set_totals(result["rows"])
    assert (total["exact"], total["normalised"], total["normalised_percent"]) == (3, None, None)


def test_the_normalisation_follows_the_entrys_lowercasing():
    keep = c.normalisers({"lowercase": False})  # an nway_data entry
    assert keep("eng")("Hello, world!") == "Hello , world !" and "case kept (lowercase: false" in keep.description
    lower = c.normalisers({"preprocess": {"lowercase": True}})
    assert lower("eng")("Hello, world!") == "hello , world !" and lower("eng") is lower("eng")


def test_a_skipped_range_is_not_training_text(tmp_path):
    """An N-way entry's held-out lines (SOURCE skip: lines of the files' concatenation) are left out."""
    a = write(tmp_path / "a.eng", ["zero", "one", "two"])
    b = write(tmp_path / "b.eng", ["three", "four"])
    test = write(tmp_path / "valid.eng", ["two", "three", "four"])
    spec = {"run": "r", "training": [{"data": "nway_data.x", "entry": {"lowercase": True},
                                      "languages": {"eng": {"exact": [source(a, b, skip=[2, 4])], "normalised": None}}}],
            "sets": [{"set": "nway_valid", "language": "eng", "file": test, "data": "nway_data.x"}]}
    row = c.contamination(spec)["rows"][0]
    assert (row["exact"], row["normalised"], row["training_lines"]) == (1, 1, 3)  # "four" only


def test_bad_input_names_the_file(handmade, tmp_path):
    spec, files, tests = handmade
    bad = tmp_path / "bad.eng"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    broken = json.loads(json.dumps(spec))
    broken["training"][0]["languages"]["eng"]["exact"] = [source(bad)]
    with pytest.raises(InputError, match=f"{bad}: line 2: invalid UTF-8"):
        c.contamination(broken)
    missing = json.loads(json.dumps(spec))
    missing["sets"][0]["file"] = str(tmp_path / "no-such-test.eng")
    with pytest.raises(InputError, match="no-such-test.eng: no such file \\(test set Tatoeba eng\\)"):
        c.contamination(missing)
    gone = json.loads(json.dumps(spec))
    gone["training"][0]["languages"]["deu"]["normalised"] = [source(tmp_path / "tok" / "gone.deu")]
    with pytest.raises(InputError, match="gone.deu: no such file \\(bitext_data.hand: normalised training text of deu\\)"):
        c.contamination(gone)
    with pytest.raises(InputError, match="a test set lacks file"):
        c.contamination({**spec, "sets": [{"set": "tatoeba", "language": "eng"}]})


def test_the_command_writes_the_same_bytes_twice_and_bad_input_is_one_line(handmade, tmp_path, capsys):
    from laser_repro.cli import main

    spec, _, _ = handmade
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    outputs = []
    for _ in (1, 2):  # the same inputs, the same files again
        out = tmp_path / "out"
        argv = ["contamination", "--spec", str(tmp_path / "spec.json"), "--json", str(out / "c.json"),
                "--md", str(out / "c.md"), "--csv", str(out / "c.csv")]
        assert main(argv) == 0
        outputs.append([(out / f"c.{ext}").read_bytes() for ext in ("json", "md", "csv", "tex")])
    assert outputs[0] == outputs[1]
    assert json.loads(outputs[0][0])["rows"][0]["exact"] == 2
    spec["sets"][0]["file"] = str(tmp_path / "missing.eng")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    capsys.readouterr()
    assert main(argv) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("laser-repro contamination: error: ") and "missing.eng" in err[0]


# ---- the hash sets ---------------------------------------------------------------------------------------
def test_the_hash_set_is_the_sorted_distinct_hashes_of_its_lines():
    lines = [f"line {i % 3000}" for i in range(20_000)] + [""]
    h = c.HashSet(chunk_lines=512)  # many chunks and merges
    for x in lines:
        h.add(x)
    got = h.array()
    want = np.unique(c.hashes(sorted(set(lines) - {""})))
    assert got.dtype == np.uint64 and np.array_equal(got, want) and len(h) == 3000 and h.lines == 20_000
    assert c.contains(got, c.hashes(["line 7", "line 3000"])).tolist() == [True, False]
    assert c.contains(np.empty(0, dtype=np.uint64), c.hashes(["x"])).tolist() == [False]


def test_the_hash_set_keeps_8_bytes_per_distinct_line_and_about_24_at_its_peak():
    """What docs/evaluation.md states: 8 bytes per distinct line held, the merges' copies on top (measured
    there with /usr/bin/time at 16M lines: 23 bytes per line at the peak)."""
    n = 400_000
    tracemalloc.start()
    h = c.HashSet(chunk_lines=1 << 14)
    for i in range(n):
        h.add(f"sentence {i}")
    arr = h.array()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert arr.nbytes == 8 * n
    assert peak / n < 30, f"{peak / n:.1f} bytes per distinct line at the peak"


def test_resources_grow_with_the_training_text():
    small, big = c.resources(189_062_577, 57_847_928), c.resources(100_000_000_000, 40_000_000_000)
    assert c.resources(None, None) == {"mem_mb": 2000, "runtime": 15}
    assert small == {"mem_mb": 1000, "runtime": 5}  # the default run: 189 MB, English 58 MB (measured 249 MB, 8 s)
    assert big["mem_mb"] > small["mem_mb"] and big["runtime"] > small["runtime"]
    # the paper's scale: 400 GB of training text, English 100 GB: 48 GB and 5 hours at most
    assert c.resources(400_000_000_000, 100_000_000_000) == {"mem_mb": 48300, "runtime": 303}


# ---- the workflow: the default config's dry run ------------------------------------------------------------
def test_the_default_run_builds_the_table_from_its_training_text_and_test_sets(tmp_path):
    """`snakemake -n -p` of config/small.yaml (data_root null: everything downloaded): the table is one of the
    default targets, and the job's inputs are the training text (every pair file and its Moses shard) and
    every test set (Tatoeba both sides, held-out FLORES, WMT newstest2012); every results/ path its command and
    spec name is one of them (tests/dag_reads.py)."""
    from dag_reads import jobs, undeclared

    from laser_repro import config
    from laser_repro.workflow.run import WorkflowRun

    proc = run_snakemake("-n", "-p", "--configfile", str(REPO / "config" / "small.yaml"), "--directory", str(tmp_path),
                         timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    (job,) = [j for j in jobs(out) if j[0] == "contamination"]
    _, declared, command = job
    W = WorkflowRun(config.Plan(config.load(REPO / "config" / "small.yaml")))
    inputs = W.contamination_inputs()
    assert set(declared) == {*inputs["train"], *inputs["tests"], *W.contamination_targets(),
                             "results/tables/small/contamination.json", "results/small/logs/contamination.log",
                             "results/small/benchmarks/contamination.tsv"}
    train, tests = inputs["train"], inputs["tests"]
    assert len([p for p in train if p.startswith("results/small/corpora/")]) == 2 * len(W.plan.bitexts) == 326
    assert len([p for p in train if p.startswith("results/small/tok/")]) == 326
    assert len([p for p in tests if p.startswith("resources/tatoeba-v1/")]) == 2 * 112
    assert len([p for p in tests if p.startswith("results/small/flores/raw/heldout.")]) == 1 + len(W.plan.flores_languages)
    assert [p for p in tests if "/eval/wmt/" in p] == [f"results/small/eval/wmt/text/wmt12.{x}.txt"
                                                       for x in ("eng", "ces", "fra", "deu", "spa")]
    assert undeclared(out, tmp_path).get("contamination") is None
    # the spec names each language's pair files and shards, and the test files
    spec = json.loads((tmp_path / command.split("--spec ")[1].split()[0]).read_text())
    assert [t["data"] for t in spec["training"]] == ["bitext_data.news"]
    assert sorted(spec["training"][0]["languages"]) == sorted(W.plan.trained_languages)
    assert {s["set"] for s in spec["sets"]} == {"tatoeba", "flores_eval", "wmt", "bucc", "xnli"}
    # the default target: "all" takes the table (MD, CSV, LaTeX)
    (all_inputs,) = [line for block in out.split("\n\n") if block.split("\n", 2)[1:2] == ["rule all:"]
                     for line in block.splitlines() if line.startswith("    input: ")]
    assert {f"results/tables/small/contamination.{ext}" for ext in ("md", "csv", "tex")} <= set(all_inputs[11:].split(", "))


def test_spm_data_is_normalised_as_laser2_for_every_language():
    """subword.kind: spm: the training text went through LASER2's normalisation (no tokenizer), one for all."""
    laser2 = c.normalisers({"preprocess": {"lowercase": True}, "subword": {"kind": "spm"}})
    assert laser2("eng")("‘Hello,’ World!") == '"hello," world!' and laser2("cmn") is laser2("eng")
    assert "LASER2's language-agnostic normalisation" in laser2.description
    cased = c.normalisers({"preprocess": {"lowercase": False}, "subword": {"kind": "spm"}})
    assert cased("deu")("Guten Tag") == "Guten Tag"
