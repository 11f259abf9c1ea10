"""The ablations through Snakemake on the toy config (the session's toy run, conftest.toy_local_run):
Tables 5-7 and their figures, one variant rerun on its own, lineage, the report, and DVC."""
from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import REPO, TOY_CONFIG, dvc, dvc_project, git, run_snakemake

VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture(scope="module")
def toy(toy_local_run):
    assert toy_local_run.proc.returncode == 0, (toy_local_run.proc.stdout + toy_local_run.proc.stderr)[-8000:]
    return toy_local_run


def read_csv(path) -> list[dict]:
    return list(csv.DictReader(open(path, encoding="utf-8")))


def test_every_ablation_ran_end_to_end(toy):
    work = toy.workdir
    run, tables, figures = work / "results" / "toy", work / "results" / "tables" / "toy", work / "results" / "figures" / "toy"
    # the variants that differ from the base model were trained, exported and evaluated
    for variant in ("base", "layers2", "nli1", "subset_languages"):
        assert (run / "models" / variant / "encoder.pt").exists()
        metrics = json.loads((run / "metrics" / f"{variant}.json").read_text())["metrics"]
        assert set(metrics) == {"tatoeba_error", "bucc_f1", "mldoc_accuracy", "xnli_en", "xnli_xx", "wmt_error",
                                "flores_xsim"}
        assert all(0.0 <= v <= 100.0 for v in metrics.values())
    # the equal-to-base variants were not trained again
    assert sorted(p.name for p in (run / "models").iterdir()) == ["base", "layers2", "nli1", "subset_languages"]
    summary = json.loads((run / "metrics.json").read_text())
    assert set(summary) == {"base", "layers2", "nli1", "subset_languages"}

    # each variant is what it claims: 2 LSTM layers; the NLI objective acted; 3 languages only
    state = torch.load(run / "models" / "layers2" / "encoder.pt", map_location="cpu", weights_only=True)
    keys = state["model"] if "model" in state else state
    assert {k for k in keys if k.startswith("lstm.weight_ih_l")} == {"lstm.weight_ih_l0", "lstm.weight_ih_l0_reverse",
                                                                      "lstm.weight_ih_l1", "lstm.weight_ih_l1_reverse"}
    nli_log = (run / "logs" / "nli1" / "train.log").read_text()
    assert re.search(r'"train_nli_loss": "[0-9.]+"', nli_log) and "--nli-weight 1" in nli_log
    assert "nli_loss" not in (run / "logs" / "base" / "train.log").read_text()
    subset_log = (run / "logs" / "subset_languages" / "train.log").read_text()
    assert "--lang-pairs eng-spa,spa-eng,deu-eng,deu-spa " in subset_log

    # Tables 5-7 and one figure each
    t5_all, t6_all, t7 = (read_csv(tables / f"table{n}.csv") for n in (5, 6, 7))
    # the settings the paper reports and the toy config does not train are paper-only rows
    assert [(r["row"], r["paper_tatoeba_error"]) for r in t5_all if r["status"] == "paper only"] == [
        ("3 layers", "28.95"), ("5 layers", "26.31")]
    assert [r["row"] for r in t6_all if r["status"] == "paper only"] == ["NLI x2", "NLI x3"]
    t5, t6 = ([r for r in t if r["status"] != "paper only"] for t in (t5_all, t6_all))
    assert [(r["row"], r["variant"], r["model"]) for r in t5] == [("1 layer", "layers1", "base"),
                                                                   ("2 layers", "layers2", "layers2")]
    assert t5[0]["paper_tatoeba_error"] == "37.96" and t5[1]["paper_tatoeba_error"] == ""  # the paper has no 2
    assert [(r["row"], r["model"]) for r in t6] == [("no NLI", "base"), ("NLI x1", "nli1")]
    assert [(r["row"], r["model"]) for r in t7] == [("all 5 languages", "base"),
                                                     ("3 evaluation languages", "subset_languages")]
    assert [r["paper_wmt_error"] for r in t7] == ["0.54", "0.59"]
    base = json.loads((run / "metrics" / "base.json").read_text())["metrics"]
    assert float(t5[0]["tatoeba_error"]) == pytest.approx(base["tatoeba_error"], abs=0.005)
    assert float(t7[0]["wmt_error"]) == pytest.approx(base["wmt_error"], abs=0.005) and "tatoeba_error" not in t7[0]
    assert all(r["status"] == "ok" for r in t5 + t6 + t7)
    for n in (5, 6, 7):
        assert "paper" in (tables / f"table{n}.md").read_text(encoding="utf-8")
        assert (figures / f"table{n}.png").read_bytes().startswith(b"\x89PNG")
        # and as LaTeX beside the Markdown (issue 37): a booktabs tabular, one row per setting of the CSV
        tex = (tables / f"table{n}.tex").read_text(encoding="utf-8")
        assert f"\\caption{{Table {n}: " in tex and "run \\texttt{toy}" in tex and "\\toprule" in tex
        body = tex.split("\\midrule\n", 1)[1].split("\\bottomrule", 1)[0]
        assert body.count(" \\\\\n") == len(read_csv(tables / f"table{n}.csv"))


def test_every_result_file_has_a_provenance_record(toy):
    work = toy.workdir
    results = [p for p in (work / "results").rglob("*") if p.is_file() and not p.name.endswith(".prov.json")
               and "logs" not in p.parts and "benchmarks" not in p.parts and "checkpoints" not in p.parts
               and ".snakemake_timestamp" not in p.name]
    missing = [str(p.relative_to(work)) for p in results if not p.with_name(p.name + ".prov.json").exists()]
    assert results and missing == []
    rec = json.loads((work / "results" / "toy" / "models" / "nli1" / "checkpoint_final.pt.prov.json").read_text())
    # the config values by their keys in the config: the LASER model's entry, its data's targets
    assert rec["rule"] == "laser_train" and rec["config"]["models.base"]["ablations"]["nli"]["weights"] == [0, 1]
    assert rec["config"]["models.base"]["model"]["encoder_layers"] == 1
    assert rec["config"]["bitext_data.toy.targets"] == ["eng", "spa"]
    label = "results/toy/bin/nli/train.label.npy"
    assert rec["inputs"][label]["sha256"] == hashlib.sha256((work / label).read_bytes()).hexdigest()
    assert rec["code"]["version"] and set(rec["libraries"]) >= {"torch", "fairseq", "numpy", "sacremoses"}
    assert rec["host"]["hostname"] and rec["start"] <= rec["end"]


def dry_run_jobs(toy, *targets) -> list[tuple[str, list[str]]]:
    """(rule, outputs) of every job a dry run would run."""
    proc = run_snakemake(*toy.args, "-n", *targets)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", proc.stdout):
        head = re.match(r"(?:local)?rule (\w+):", block)
        if head:
            out = re.search(r"^\s+output: (.*)$", block, re.MULTILINE)
            jobs.append((head.group(1), out.group(1).split(", ") if out else []))
    return jobs


def test_one_variant_reruns_alone(toy):
    """After the full run, retraining one variant (its target with --forcerun laser_train) plans that
    variant's jobs and nothing of the other variants or of the shared data."""
    jobs = dry_run_jobs(toy, "variant_layers2", "--forcerun", "laser_train")
    rules = sorted({rule for rule, _ in jobs})
    assert rules == ["bucc_evaluate", "bucc_mine", "eval_embed", "eval_embed_bucc", "eval_embed_nli", "flores_xsim",
                     "laser_export", "laser_export_init",
                     "laser_train", "mldoc_classify", "tatoeba_evaluate", "variant_layers2",
                     "variant_metrics", "wmt_similarity", "xnli_classify"], rules
    outputs = [o for _, outs in jobs for o in outs]
    assert outputs and all("layers2" in o for o in outputs), [o for o in outputs if "layers2" not in o]
    # the NLI variant: its own jobs; the shared MultiNLI binarization is up to date
    jobs = dry_run_jobs(toy, "variant_nli1", "--forcerun", "laser_train")
    assert all("nli1" in o for _, outs in jobs for o in outs) and "nli_binarize" not in {r for r, _ in jobs}
    # a variant equal to the base model is the base model's target
    jobs = dry_run_jobs(toy, "variant_layers1", "--forcerun", "laser_export")
    outputs = [o for _, outs in jobs for o in outs]
    assert outputs and all("/base/" in o or o.endswith("metrics/base.json") for o in outputs), outputs


def test_lineage_of_an_ablation_table(toy):
    proc = subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "tree", "results/tables/toy/table5.md"], cwd=toy.workdir,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = proc.stdout
    for must in ("ablation_table", "results/toy/metrics/layers2.json", "results/toy/models/layers2/encoder.pt",
                 "results/toy/models/layers2/checkpoint_final.pt", "results/toy/bin/train.deu-eng.deu.bin",
                 "results/toy/bin/dict.txt", "results/toy/bpe/codes", "results/toy/eval/xnli/layers2/emb/train-p.eng.npy",
                 "results/toy/moses/toy_nway/deu.lower", f"{toy.data_root}/flores200-dev/deu_Latn.dev"):
        assert must in text, must
    raw_tatoeba = re.search(r"tatoeba\.deu-eng\.deu +raw (\S+) +sha256=([0-9a-f]{64})", text)
    assert raw_tatoeba and raw_tatoeba.group(1).startswith("https://raw.githubusercontent.com/facebookresearch/LASER/")
    assert raw_tatoeba.group(2) == hashlib.sha256(
        (toy.data_root / "tatoeba-v1" / "tatoeba.deu-eng.deu").read_bytes()).hexdigest()
    assert re.search(r"\d+ nodes, \d+ raw files, 0 changed", text)
    tree = json.loads(subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "tree", "--json", "results/tables/toy/table7.md"],
                                     cwd=toy.workdir, capture_output=True, text=True, check=True).stdout)
    assert tree


def test_report_has_the_tables_and_figures(toy, tmp_path):
    report = tmp_path / "report.html"
    proc = run_snakemake(*toy.args, "--report", str(report))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    html = report.read_text(encoding="utf-8", errors="replace")
    for name in ("table5.png", "table6.png", "table7.png", "table5.csv", "table1.csv", "table2.csv", "wmt.csv"):
        assert name in html, name


def test_dvc_repro_push_pull_round_trip(toy, tmp_path):
    """dvc.yaml on the toy run: repro (Snakemake finds the toy run's results up to date), dag,
    metrics; push to a local remote; a fresh clone pulls the artifacts, and after sync-mtimes
    Snakemake has nothing to rerun although DVC restored every file with a new mtime."""
    project = dvc_project(tmp_path / "project", "tests/toy/config.yaml", f"--config data_root={toy.data_root} --cores 2")
    shutil.copytree(toy.workdir / "results", project / "results")  # copy2: mtimes kept

    repro = dvc("repro", cwd=project)
    assert "Running stage 'tables'" in repro.stdout
    assert (project / "results" / "reports" / "toy.html").stat().st_size > 10000
    assert all(s in dvc("dag", cwd=project).stdout for s in ("data", "train", "evaluate", "tables"))
    metrics = dvc("metrics", "show", "--json", cwd=project).stdout
    assert "tatoeba_error" in metrics and "layers2" in metrics
    assert "up to date" in dvc("status", cwd=project).stdout
    git("add", "-A", cwd=project)
    git("add", "-f", "results/toy/metrics.json", "results/toy/metrics.json.prov.json", cwd=project)
    git("commit", "-qm", "dvc.lock, metrics", cwd=project)
    dvc("remote", "add", "-d", "store", str(tmp_path / "remote"), cwd=project)
    git("commit", "-qam", "remote", cwd=project)
    dvc("push", cwd=project)

    clone = tmp_path / "clone"
    git("clone", "-q", str(project), str(clone), cwd=tmp_path)
    dvc("pull", cwd=clone)
    for name in ("results/toy/models/layers2/encoder.pt", "results/tables/toy/table5.md",
                 "results/figures/toy/table6.png", "results/toy/bin/train.deu-eng.deu.bin",
                 "results/toy/eval/xnli/nli1/scores.json", "results/toy/metrics/base.json"):
        assert (clone / name).read_bytes() == (project / name).read_bytes(), name
    assert "up to date" in dvc("status", cwd=clone).stdout
    # DVC wrote the files now, in its own order: give them back the recorded mtimes
    sync = subprocess.run([f"{VENV_BIN}/laser-repro", "sync-mtimes", "results"], cwd=clone, capture_output=True,
                          text=True, check=False)
    assert sync.returncode == 0, sync.stdout + sync.stderr
    args = ["--configfile", str(clone / "tests" / "toy" / "config.yaml"), "--config", f"data_root={toy.data_root}",
            "--directory", str(clone)]
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(clone / "workflow" / "Snakefile"), *args, "-n", "tables"],
                          cwd=clone, capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-5000:]
    # and DVC itself has nothing to reproduce
    again = dvc("repro", cwd=clone)
    assert "Running stage" not in again.stdout, again.stdout
