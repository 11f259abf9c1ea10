"""The workflow through Snakemake itself: lint, the paper-config dry run, and the toy config end to end."""
from __future__ import annotations

import csv
import json
import os
import time

import pytest
from conftest import REPO, run_snakemake


@pytest.mark.parametrize("config", ["tests/toy/config.yaml", "tests/toy/compare.yaml", "config/small.yaml",
                                    "config/multienc_2017.yaml",
                                    "config/labse_2020.yaml"])
def test_lint_is_clean(config):
    """Every rule file is linted: the LASER rules, the multienc, LaBSE and N-way rules, the comparison."""
    proc = run_snakemake("--lint", "--configfile", str(REPO / config))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations, your workflow is in a good condition!" in proc.stdout + proc.stderr


# a long run name (it is in every path of every command)
LONG_RUN = "paper_on_the_shared_cluster_with_a_long_descriptive_name_for_the_reproduction_of_artetxe_schwenk_2019"


def test_paper_config_dry_run_names_real_urls(tmp_path):
    start = time.perf_counter()
    proc = run_snakemake("-n", "-p", "--configfile", str(REPO / "config" / "paper.yaml"), "--config", f"run_name={LONG_RUN}",
                         "--directory", str(tmp_path), timeout=600)
    elapsed = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    print(f"paper dry run: {elapsed:.1f}s")
    # every OPUS zip is fetched from its real URL; UN, OpenSubtitles, Tatoeba present
    for url in ("https://object.pouta.csc.fi/OPUS-Europarl/v8/moses/de-en.txt.zip",
                "https://object.pouta.csc.fi/OPUS-UNPC/v1.0/moses/ar-en.txt.zip",
                "https://object.pouta.csc.fi/OPUS-OpenSubtitles/v2018/moses/",
                "https://raw.githubusercontent.com/facebookresearch/LASER/main/data/tatoeba/v1/tatoeba.deu-eng.deu",
                # evaluation sets (Tables 2-4, 8, WMT similarity)
                "https://comparable.limsi.fr/bucc2018/bucc2018-zh-en.training-gold.tar.bz2",
                "https://comparable.limsi.fr/bucc2018/bucc2018-ru-en.test.tar.bz2",
                "https://dl.fbaipublicfiles.com/XNLI/XNLI-1.0.zip",
                "https://cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip",
                "https://statmt.org/wmt12/test.tgz"):
        assert url in out, url
    # allow_absent_pairs (OpenSubtitles): a 404 is an absent pair only if another pair of the corpus exists
    fetch = next(line for line in out.splitlines() if "fetch --url https://object.pouta.csc.fi/OPUS-OpenSubtitles/v2018/moses/de-es.txt.zip" in line)
    assert "--absent-ok --pair-urls-from .snakemake/laser-repro/opus-pairs-OpenSubtitles-v2018-" in fetch, fetch
    listed = json.loads((tmp_path / fetch.split("--pair-urls-from ")[1].split()[0]).read_text())
    assert sum(u.startswith("https://object.pouta.csc.fi/OPUS-OpenSubtitles/v2018/moses/") for u in listed) > 50
    assert not [u for u in listed if "OPUS-Europarl" in u]  # the corpus's own pairs only
    # every printed command is one a user could type: the provenance spec and long lists are files (the
    # inline JSON of bpe_count, 1,704 inputs, was one 95 kB argument: 72 % of Linux's per-argument limit)
    import shlex

    commands = [line.removeprefix("Shell command: ") for line in out.splitlines() if line.startswith("Shell command: ")]
    assert len(commands) > 4000
    # no argument near Linux's 128 kB per argument (the longest: ablation-table's rows and the models' settings,
    # JSON of 11 kB), no command near its 2 MB for all (tables list their inputs)
    assert max(len(arg) for c in commands for arg in shlex.split(c)) < 16_000
    assert max(len(c) for c in commands) < 100_000
    assert max(len(c) for c in commands if " fetch " in c or " bpe-count " in c) < 1000
    assert not [c for c in commands if "--provenance-json" in c]
    count = next(c for c in commands if " bpe-count " in c)
    spec = json.loads((tmp_path / count.split("--provenance-spec ")[1].split()[0]).read_text())
    inputs = json.loads((tmp_path / count.split("--inputs-from ")[1].split()[0]).read_text())
    assert spec["rule"] == "bpe_count" and len(spec["inputs"]) == len(inputs) > 1500
    assert all(f"results/{LONG_RUN}/" in path for path in inputs)
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    # the base model (5 layers, no NLI, all languages) and the 6 ablation variants that differ from it:
    # layers1, layers3, nli1, nli2, nli3, subset_languages
    assert counts.get("laser_train") == 7 and counts.get("laser_export") == 7 and counts.get("variant_metrics") == 7
    assert counts.get("ablation_table") == 3 and counts.get("nli_binarize") == 1
    assert counts.get("download_opus", 0) > 150
    # BUCC: train and test split for the base model's Table 4, the train split (F1) for each variant
    assert counts.get("bucc_mine") == 4 * 2 + 6 * 4
    assert counts.get("xnli_classify") == 7 and counts.get("wmt_similarity") == 7
    assert counts.get("tatoeba_evaluate") == 83 + 29 + 6 * 83  # Tables 1 and 9; each variant: Table 1 languages
    assert "mldoc_classify" not in counts  # evaluation.mldoc.path is null: Table 3 says how to get MLDoc


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
        # 60 of the 400 lines are held out (flores_eval.heldout_lines)
        assert int(row["train_sentences"]) == 2 * 340 or row["language"] == "spa"
        assert 0.0 <= float(row["en_xx_error"]) <= 100.0
        # both baselines on the same sentences
        for key in ("tfidf_en_xx_error", "tfidf_xx_en_error", "init_en_xx_error", "init_xx_en_error"):
            assert 0.0 <= float(row[key]) <= 100.0, key
    assert int(next(r for r in rows if r["language"] == "spa")["train_sentences"]) == 340  # spa->eng only
    md = (workdir / "results" / "tables" / "toy" / "table1.md").read_text(encoding="utf-8")
    assert "| deu |" in md and "paper" in md and "TF-IDF" in md and "init" in md
    # FLORES xsim: the held-out lines and the training sample, ours beside both baselines
    flores = {r["language"] + r["name"]: r for r in csv.DictReader(
        open(workdir / "results" / "tables" / "toy" / "flores_xsim.csv", encoding="utf-8"))}
    for code in ("spa", "deu", "ell", "cmn"):
        row = next(r for k, r in flores.items() if r["language"] == code)
        assert row["trained"] == "yes" and row["heldout_sentences"] == "60" and row["sample_sentences"] == "60"
        for split in ("heldout", "sample"):
            for system in ("ours", "tfidf", "init"):
                assert 0.0 <= float(row[f"{split}_{system}_en_xx"]) <= 100.0
    assert (workdir / "results" / "toy" / "flores" / "raw" / "heldout.eng").read_text().count("\n") == 60
    # the held-out lines never reach training: the bitext is the first 340 lines of the files
    stats = json.loads((workdir / "results" / "toy" / "corpora" / "toy_nway" / "deu-eng.stats.json").read_text())
    assert (stats["heldout"], stats["read"], stats["written"]) == (60, 340, 340)
    flores_deu = (toy_local_run.data_root / "flores200-dev" / "deu_Latn.dev").read_text().splitlines()
    bitext = (workdir / "results" / "toy" / "corpora" / "toy_nway" / "deu-eng.deu").read_text().splitlines()
    assert bitext == flores_deu[:340]
    assert (workdir / "results" / "toy" / "flores" / "raw" / "heldout.deu").read_text().splitlines() == flores_deu[340:]
    # learning curves: update 0, every 5 updates, every epoch end; a figure per trained model
    curves = [json.loads(x) for x in (workdir / "results" / "toy" / "models" / "base" / "curves.jsonl")
              .read_text().splitlines()]
    assert curves[0]["update"] == 0 and sum(r["end_of_epoch"] for r in curves) == 3
    assert all({"train_loss", "heldout_loss", "xsim", "xsim_train"} <= set(r) and set(r["xsim"]) == {"deu", "cmn"}
               and set(r["xsim_train"]) == {"deu", "cmn"} for r in curves)
    assert curves[-1]["train_loss"] < curves[0]["train_loss"]
    for variant in ("base", "layers2", "nli1", "subset_languages"):
        assert (workdir / "results" / "figures" / "toy" / f"curves_{variant}.png").stat().st_size > 10000
    run = workdir / "results" / "toy"
    scores = json.loads((run / "tatoeba" / "base" / "scores" / "deu.json").read_text())
    assert scores["test_sentences"] == 60
    # every rule logged; Greek was romanized and lowercased before BPE, Chinese segmented
    assert any((run / "logs" / "moses").rglob("*.log"))
    greek = (run / "tok" / "toy_nway" / "ell-eng.ell.000-of-001").read_text(encoding="utf-8")
    # as LASER (transliterate, then lowercase): only capitals with tonos, which transliterate does
    # not map, survive in Greek script (e.g. "Άντρας" -> "άntras")
    assert {ch for ch in greek if "\u0370" <= ch <= "\u03ff"} <= set("άέήίόύώ") and greek == greek.lower()
    assert "skylos" in greek or "gata" in greek
    chinese = (run / "tok" / "toy_nway" / "cmn-eng.cmn.000-of-001").read_text(encoding="utf-8").splitlines()
    assert all(" " in line for line in chinese[:20])
    # trained by one process (train.cpu_processes) with the planned 3000 tokens per update: 2 steps an
    # update; the same on 2 processes is tests/test_distributed.py's and the SLURM test's mpi run's
    status = json.loads((run / "models" / "base" / "checkpoints" / "train_status.json").read_text())
    assert (status["status"], status["world_size"], status["update_freq"], status["tokens_per_update"]) == (
        "completed", 1, 2, 3000)
    # ... and so says the final checkpoint's provenance record, with the thread count
    runtime = json.loads((run / "models" / "base" / "checkpoint_final.pt.prov.json").read_text())["runtime"]
    assert (runtime["world_size"], runtime["update_freq"], runtime["threads"]) == (1, 2, status["threads"])
    # Table 9: the Tatoeba language without training data
    (unseen,) = list(csv.DictReader(open(workdir / "results" / "tables" / "toy" / "table9.csv", encoding="utf-8")))
    assert unseen["language"] == "por" and unseen["train_sentences"] == "0" and unseen["test_sentences"] == "60"
    # every evaluation task ran on its fixture (tests/eval_fixtures) and filled its table
    tables = workdir / "results" / "tables" / "toy"

    def table(name):
        return {r.get("language") or r["premise"] + "/" + r["hypothesis"]: r
                for r in csv.DictReader(open(tables / f"{name}.csv", encoding="utf-8"))}

    bucc = table("table4")
    assert set(bucc) == {"deu", "cmn"}
    for row in bucc.values():
        assert row["status"] == "ok" and row["train_gold_pairs"] == "40" and row["train_xx_sentences"] == "81"
        assert 0.0 <= float(row["train_f1"]) <= 100.0 and int(row["test_pairs_extracted"]) > 0
    xnli = table("table2")
    assert [k for k in xnli if k != "avg"] == ["eng", "spa", "deu", "ell", "cmn"]
    assert all(r["test_size"] == "90" and 0 < float(r["accuracy"]) <= 100 for k, r in xnli.items() if k != "avg")
    table8 = table("table8")  # 5 x 5 cells and the averages (premise or hypothesis "avg": 5 + 5 + 1)
    assert len([r for r in table8.values() if r["status"] != "average"]) == 25 and len(table8) == 36
    mldoc = table("table3")
    assert [k for k in mldoc if k != "avg"] == ["eng", "deu", "spa", "cmn"] and mldoc["eng"]["test_size"] == "80"
    wmt = list(csv.DictReader(open(tables / "wmt.csv", encoding="utf-8")))
    assert len([r for r in wmt if r["status"] == "ok"]) == 6 and wmt[-1]["status"] == "average"
    # read from data_root's N-way plain text (no archive); both baselines beside ours, the paper's average
    assert json.loads((run / "eval" / "wmt" / "text" / "meta.json").read_text())["texts"][0]["lines"] == 50
    for row in wmt:
        for key in ("error", "tfidf_error", "init_error"):
            assert 0.0 <= float(row[key]) <= 100.0, (key, row)
    assert wmt[-1]["paper_error"] == "0.54"
    xnli_scores = json.loads((run / "eval" / "xnli" / "base" / "scores.json").read_text())
    assert xnli_scores["sizes"]["train_pairs"] == 600 and xnli_scores["sizes"]["dev_pairs"] == 60
    # which test sentences the training text holds (a default target): every test set with its rows, the
    # held-out FLORES lines never trained on as lines (the toy generator repeats a few sentences: 3 of 60)
    contamination = list(csv.DictReader(open(tables / "contamination.csv", encoding="utf-8")))
    assert {r["set"] for r in contamination} == {"tatoeba", "flores_eval", "wmt", "bucc", "xnli", "mldoc"}
    assert all(int(r["exact"]) <= int(r["normalised"]) <= int(r["sentences"]) for r in contamination if r["status"] != "no training text")
    por = next(r for r in contamination if r["part"] == "por-eng" and r["language"] == "por")
    assert por["status"] == "no training text" and por["exact"] == ""
    heldout = [r for r in contamination if r["set"] == "flores_eval" and r["status"] == "ok"]
    assert len(heldout) == 5 and all(r["sentences"] == "60" and int(r["exact"]) < 60 for r in heldout)
    assert json.loads((tables / "contamination.json").read_text())["training"][0]["data"] == "bitext_data.toy"
    # nothing left to do on a rerun
    proc = run_snakemake(*args, "-n")
    assert proc.returncode == 0
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_evaluation_downloads_through_a_local_mirror(tmp_path):
    """data_root: null -> every evaluation archive is fetched from its public URL, here mapped onto a
    local mirror laid out as <host>/<path>; a pinned sha256 is checked, a wrong one fails the job."""
    import shutil

    import yaml
    from conftest import make_toy_data

    data = make_toy_data.make(tmp_path / "data")
    mirror = tmp_path / "mirror"
    layout = {
        "comparable.limsi.fr/bucc2018": list((data / "bucc2018").glob("*.tar.bz2")),
        "dl.fbaipublicfiles.com/XNLI": [data / "xnli" / "XNLI-1.0.zip"],
        "cims.nyu.edu/~sbowman/multinli": [data / "xnli" / "multinli_1.0.zip"],
        "statmt.org/wmt13": [data / "wmt" / "test.tgz"],
    }
    for where, files in layout.items():
        (mirror / where).mkdir(parents=True)
        for f in files:
            shutil.copy(f, mirror / where / f.name)
    from laser_repro.core.download import sha256_file

    cfg = yaml.safe_load((REPO / "tests" / "toy" / "config.yaml").read_text())
    cfg["data_root"] = None
    cfg["evaluation"]["mirror"] = str(mirror)
    archive = "bucc2018-de-en.training-gold.tar.bz2"
    cfg["evaluation"]["bucc"]["sha256"] = {archive: sha256_file(data / "bucc2018" / archive)}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    work = tmp_path / "work"
    work.mkdir()
    targets = [f"resources/eval/{where}/{f.name}" for where, files in layout.items() for f in files]
    assert len(targets) == 7
    proc = run_snakemake("--configfile", str(tmp_path / "config.yaml"), "--directory", str(work), "--cores", "2",
                         *targets)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    for target in targets:
        rel = target.removeprefix("resources/eval/")
        assert (work / target).read_bytes() == (mirror / rel).read_bytes(), target
    # WMT: the downloaded archive through sacrebleu gives the same texts as data_root's N-way plain text
    wmt_texts = "results/toy/eval/wmt/text"
    proc = run_snakemake("--configfile", str(tmp_path / "config.yaml"), "--directory", str(work), "--cores", "1",
                         f"{wmt_texts}/meta.json")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    (tmp_path / "plain").mkdir()
    proc = run_snakemake("--configfile", str(tmp_path / "config.yaml"), "--config", f"data_root={data}",
                         "--directory", str(tmp_path / "plain"), "--cores", "1", f"{wmt_texts}/meta.json")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    from_archive, from_text = (json.loads((w / wmt_texts / "meta.json").read_text()) for w in (work, tmp_path / "plain"))
    assert from_archive["archives"] and not from_text["archives"] and from_text["sentences"] == 50
    for lang, name in from_archive["files"].items():
        assert (work / wmt_texts / name).read_text() == (tmp_path / "plain" / wmt_texts / name).read_text(), lang
    # the XNLI table's inputs now point at the downloads (dry run of the whole DAG up to the table)
    proc = run_snakemake("--configfile", str(tmp_path / "config.yaml"), "--directory", str(work), "-n",
                         "results/toy/eval/xnli/text/test-p.deu.txt")
    assert proc.returncode == 0 and "resources/eval/dl.fbaipublicfiles.com/XNLI/XNLI-1.0.zip" in proc.stdout

    # a pinned checksum that does not match: the job fails, naming both digests, and leaves no file
    cfg["evaluation"]["bucc"]["sha256"] = {archive: "0" * 64}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    target = next(t for t in targets if t.endswith(archive))
    (work / target).unlink(missing_ok=True)
    proc = run_snakemake("--configfile", str(tmp_path / "config.yaml"), "--directory", str(work), "--cores", "1",
                         target)
    assert proc.returncode != 0
    log = (work / "resources" / "logs" / "eval" / (target.removeprefix("resources/eval/") + ".log")).read_text()
    assert "SHA-256 mismatch" in log and "0" * 64 in log
    assert not (work / target).exists()


@pytest.mark.parametrize("config", ["tests/toy/config.yaml", "tests/toy/compare.yaml"])
def test_every_file_a_job_names_is_declared(config, tmp_path):
    """Issue 40 item 7: over the whole DAG of the toy and compare configs, no job names a results/ file that
    is not one of its inputs, outputs, logs or benchmarks (tests/dag_reads.py says what else is allowed)."""
    import make_toy_data
    from dag_reads import jobs, undeclared

    data_root = make_toy_data.make(tmp_path / "data")
    workdir = tmp_path / "work"
    workdir.mkdir()
    proc = run_snakemake("-n", "-p", "--configfile", str(REPO / config), "--config", f"data_root={data_root}",
                         "--directory", str(workdir), timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert len(list(jobs(out))) > 100
    assert undeclared(out, workdir) == {}


def test_the_dag_reads_check_finds_an_undeclared_read(tmp_path):
    """The check itself: compare_task as it was before the fix (its --model-records named every compared
    model's record, none of them an input) is found; directories, prefixes and a training job's own
    checkpoints are not."""
    from dag_reads import undeclared

    def job(rule, inputs, outputs, command):
        return (f"\n[Sat Nov 28 05:44:19 2026]\nrule {rule}:\n    input: {', '.join(inputs)}\n"
                f"    output: {', '.join(outputs)}\n    jobid: 1\nShell command: {command}\n")

    records = json.dumps({"base": {"record": "results/r/models/base/model_record.json",
                                   "settings": {"tokenizer": "results/r/wordpiece/tokenizer.json"}}})
    table = job("compare_task", ["results/r/eval/base/un.json"], ["results/tables/r/compare_un.md"],
                f"laser-repro compare-task --scores results/r/eval/base/un.json --model-records '{records}' "
                f"--md results/tables/r/compare_un.md")
    train = job("laser_train", ["results/r/bin/train.fra-eng.fra.bin", "results/r/bpe/train/fra-eng.fra"],
                ["results/r/models/base/checkpoint_best.pt"],
                "laser-repro train --data results/r/bin --trainpref results/r/bpe/train/fra-eng "
                "--save-dir results/r/models/base/checkpoints")
    assert undeclared(table + train, tmp_path) == {"compare_task": {"results/r/models/base/model_record.json"}}
    fixed = table.replace("input: results/r/eval/base/un.json",
                          "input: results/r/eval/base/un.json, results/r/models/base/model_record.json")
    assert undeclared(fixed + train, tmp_path) == {}


def test_lineage_of_the_toy_run_and_a_file_changed_behind_snakemake(toy_local_run, tmp_path):
    """Issue 40 items 1-3, 9 on the real toy run: `lineage view` of table1 shows every job once after a summary;
    `lineage cell` of one FLORES cell names that language's files only; and a finished run whose encoder.pt
    was truncated in place with its mtime kept is "Nothing to be done" for Snakemake, but `lineage check
    results/` finds it (on a copy of the run: the session's run stays intact)."""
    import shutil
    import subprocess

    from conftest import VENV_BIN

    assert toy_local_run.proc.returncode == 0
    run = tmp_path / "work"
    shutil.copytree(toy_local_run.workdir, run, symlinks=True)  # copy2: mtimes kept

    def lineage(*args):
        return subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", *args], cwd=run, capture_output=True, text=True)

    view = lineage("view", "results/tables/toy/table1.md")
    assert view.returncode == 0, view.stderr[-2000:]
    lines = view.stdout.splitlines()
    assert lines[0].startswith("lineage of results/tables/toy/table1.md: ") and len(lines) < 400
    assert "raw inputs (" in view.stdout and "models:" in view.stdout and "  base: laser, seed 1, kept update" in view.stdout
    jobs = lines[next(i for i, line in enumerate(lines) if line.startswith("jobs by rule")) + 1:]
    assert len(jobs) == len(set(jobs)) and sum(line.startswith("laser_train (1 job):") for line in jobs) == 1
    assert any(line.startswith("bpe_apply (16 jobs): results/toy/bpe/train/{16 files: ") for line in jobs)
    cell = lineage("cell", "--json", "results/tables/toy/table1.csv", "deu", "en_xx_error")
    assert cell.returncode == 0, cell.stderr[-2000:]
    named = json.loads(cell.stdout)
    # the score file that holds the number (not the training data counted in another column), and through
    # the encoder every training language; of Tatoeba, German only
    assert named["table_inputs"] == ["results/toy/tatoeba/base/scores/deu.json"]
    tatoeba = [p for p in named["raw_inputs"] if "tatoeba" in p]
    assert tatoeba and all("deu-eng" in p for p in tatoeba)
    assert any(p.endswith("deu_Latn.dev") for p in named["raw_inputs"])

    before = lineage("check", "results")
    assert before.returncode == 0, before.stdout[-3000:]
    encoder = run / "results" / "toy" / "models" / "base" / "encoder.pt"
    st = encoder.stat()
    with open(encoder, "r+b") as f:
        f.truncate(st.st_size // 2)
    os.utime(encoder, ns=(st.st_atime_ns, st.st_mtime_ns))
    dry = run_snakemake(*[a if a != str(toy_local_run.workdir) else str(run) for a in toy_local_run.args], "-n")
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr
    check = lineage("check", "results")
    assert check.returncode == 1
    assert "changed: results/toy/models/base/encoder.pt" in check.stdout


def test_every_table_of_the_toy_run_also_exists_as_latex(toy_local_run):
    """Issue 37: every table a paper-table rule writes (LASER's Tables 1-9, WMT, FLORES xsim) has its LaTeX
    beside its Markdown and CSV: booktabs, captioned with the run, one tabular row per row of the Markdown."""
    assert toy_local_run.proc.returncode == 0, (toy_local_run.proc.stdout + toy_local_run.proc.stderr)[-8000:]
    tables = toy_local_run.workdir / "results" / "tables" / "toy"
    names = {p.stem for p in tables.glob("*.md")}
    assert names == {f"table{n}" for n in range(1, 10)} | {"wmt", "flores_xsim", "contamination"}, names
    for name in sorted(names):
        md = (tables / f"{name}.md").read_text(encoding="utf-8")
        tex = (tables / f"{name}.tex").read_text(encoding="utf-8")
        assert (tables / f"{name}.csv").exists()
        assert "run \\texttt{toy}" in tex and "\\usepackage{booktabs}" in tex, name
        md_rows = [line for line in md.splitlines() if line.startswith("| ")]  # header and data rows
        tex_rows = [line for line in tex.splitlines() if line.endswith(" \\\\")]
        assert tex.count("\\begin{tabular}") == tex.count("\\toprule") == tex.count("\\bottomrule") >= 1, name
        assert len(tex_rows) == len(md_rows), name

