"""The workflow through Snakemake itself: lint, the paper-config dry run, and the toy config end to end."""
from __future__ import annotations

import csv
import json
import time

import pytest
from conftest import REPO, run_snakemake


def test_lint_is_clean():
    proc = run_snakemake("--lint", "--configfile", str(REPO / "tests" / "toy" / "config.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr


def test_paper_config_dry_run_names_real_urls(tmp_path):
    start = time.perf_counter()
    proc = run_snakemake("-n", "-p", "--configfile", str(REPO / "config" / "paper.yaml"),
                         "--directory", str(tmp_path), timeout=600)
    elapsed = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    print(f"paper dry run: {elapsed:.1f}s")
    # every OPUS zip is fetched from its real URL; UN, OpenSubtitles, Tatoeba present
    for url in ("https://object.pouta.csc.fi/OPUS-Europarl/v8/moses/de-en.txt.zip",
                "https://object.pouta.csc.fi/OPUS-UNPC/v1.0/moses/ar-en.txt.zip",
                "https://object.pouta.csc.fi/OPUS-OpenSubtitles/v2018/moses/",
                "https://raw.githubusercontent.com/facebookresearch/LASER/main/data/tatoeba/v1/tatoeba.deu-eng.deu"):
        assert url in out, url
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    assert counts.get("train") == 1 and counts.get("export_encoder") == 1
    assert counts.get("tatoeba_evaluate", 0) >= 80
    assert counts.get("download_opus", 0) > 150


@pytest.mark.slow
def test_toy_config_end_to_end(toy_local_run):
    # the run itself is the session fixture toy_local_run (conftest.py), shared with test_slurm.py
    workdir, args, proc = toy_local_run.workdir, toy_local_run.args, toy_local_run.proc
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-8000:]
    table = workdir / "results" / "tables" / "toy" / "table1.csv"
    rows = list(csv.DictReader(open(table, encoding="utf-8")))
    assert [r["language"] for r in rows] == ["spa", "deu", "ell", "cmn"]
    for row in rows:
        assert int(row["test_sentences"]) == 60
        assert int(row["train_sentences"]) == 2 * 400 or row["language"] == "spa"
        assert 0.0 <= float(row["en_xx_error"]) <= 100.0
    assert int(next(r for r in rows if r["language"] == "spa")["train_sentences"]) == 400  # spa->eng only
    md = (workdir / "results" / "tables" / "toy" / "table1.md").read_text(encoding="utf-8")
    assert "| deu |" in md and "paper" in md
    run = workdir / "results" / "toy"
    scores = json.loads((run / "tatoeba" / "scores" / "deu.json").read_text())
    assert scores["test_sentences"] == 60
    # every rule logged; Greek was romanized and lowercased before BPE, Chinese segmented
    assert any((run / "logs" / "tok").rglob("*.log"))
    greek = (run / "tok" / "toy_nway" / "ell-eng.ell.000-of-002").read_text(encoding="utf-8")
    # as LASER (transliterate, then lowercase): only capitals with tonos, which transliterate does
    # not map, survive in Greek script (e.g. "Άντρας" -> "άntras")
    assert {ch for ch in greek if "\u0370" <= ch <= "\u03ff"} <= set("άέήίόύώ") and greek == greek.lower()
    assert "skylos" in greek or "gata" in greek
    chinese = (run / "tok" / "toy_nway" / "cmn-eng.cmn.000-of-002").read_text(encoding="utf-8").splitlines()
    assert all(" " in line for line in chinese[:20])
    # trained by two gloo processes (train.cpu_processes) with the planned 3000 tokens per update
    status = json.loads((run / "checkpoints" / "train_status.json").read_text())
    assert (status["status"], status["world_size"], status["update_freq"], status["tokens_per_update"]) == (
        "completed", 2, 1, 3000)
    # nothing left to do on a rerun
    proc = run_snakemake(*args, "-n")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr
