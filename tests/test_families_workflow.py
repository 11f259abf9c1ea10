"""Several model families through the real Snakemake on the toy data (tests/toy/compare.yaml): a LASER
model, two Schwenk & Douze models (family multienc), a pre-trained LaBSE (family labse) and an en-fr
Bi-Sent2Vec (family bisent2vec, with MUSE word translation and Europarl retrieval) trained on
the same FLORES-style split, the N-way data stage, the similarity error with its baselines, paper 004's
Tables 1-4, paper 003's Table 2, the comparison table, provenance and lineage, and a rerun with nothing
to do. Also the dry runs of the family
configs (the paper's UN run offline: its URLs, no data)."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
import torch

from conftest import CORES, REPO, dvc, dvc_project, run_snakemake, run_toy

TOY_COMPARE = REPO / "tests" / "toy" / "compare.yaml"
VENV_BIN = sys.executable.rsplit("/", 1)[0]


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    toy = run_toy(tmp_path_factory, "toy_compare", TOY_COMPARE, "compare", "multienc", "labse", "bisent2vec")
    assert toy.proc.returncode == 0, toy.proc.stdout[-6000:] + toy.proc.stderr[-6000:]
    return toy.workdir, toy.args


def test_both_families_train_export_and_score_on_the_same_sentences(families):
    workdir, _ = families
    run = workdir / "results" / "toy_compare"
    for name in ("toy_last", "toy_all"):
        status = json.loads((run / "models" / name / "checkpoints" / "train_status.json").read_text())
        assert status["family"] == "multienc" and status["status"] == "completed" and status["num_updates"] > 0
        for encoder in ("encoder.pt", "encoder_init.pt"):  # tensors and plain types only
            data = torch.load(run / "models" / name / encoder, weights_only=True)
            assert data["family"] == "multienc"
        scores = json.loads((run / "eval" / "models" / name / "similarity.json").read_text())
        assert scores["similarity"]["sentences"] == scores["init"]["sentences"] == 60
        assert scores["similarity"]["pairs"] != scores["init"]["pairs"]
    # a 1:1 system has no encoder for its fixed target (the paper's point): no pair with ara
    last = json.loads((run / "eval" / "models" / "toy_last" / "similarity.json").read_text())["similarity"]
    assert len(last["pairs"]) == 4 * 3 and not any("ara" in p for p in last["pairs"])
    every = json.loads((run / "eval" / "models" / "toy_all" / "similarity.json").read_text())["similarity"]
    assert len(every["pairs"]) == 6 * 5
    # the N-way data: one BPE model and vocabulary, aligned splits, the held-out lines never trained on
    stats = json.loads((run / "nway" / "toy" / "bpe" / "stats.json").read_text())
    assert stats["train_lines"] == 340 and stats["valid_lines"] == 60
    raw_valid = (run / "nway" / "toy" / "raw" / "valid.spa").read_text().splitlines()
    flores_heldout = (run / "flores" / "raw" / "heldout.spa").read_text().splitlines()
    assert raw_valid == flores_heldout  # the same sentences as LASER's FLORES xsim


def test_one_moses_pass_per_language_serves_both_data_shapes(families):
    """The N-way corpus's language files are Moses-preprocessed once (moses_lines): LASER's pairs (rule
    extract_nway_bitext) and the N-way data (nway_text) take their lines from them; no per-pair job."""
    workdir, _ = families
    run = workdir / "results" / "toy_compare"
    langs = ["eng", "fra", "spa", "rus", "ara", "cmn"]
    assert sorted(p.name for p in (run / "moses" / "toy_nway").iterdir() if not p.name.endswith(".json")) == sorted(
        f"{lang}.lower" for lang in langs)
    assert not (run / "logs" / "tok").exists()  # no preprocess_shard job
    for lang in langs:
        moses = (run / "moses" / "toy_nway" / f"{lang}.lower").read_text(encoding="utf-8").splitlines()
        assert len(moses) == 400
        nway = [(run / "nway" / "toy" / "tok" / f"{split}.{lang}").read_text(encoding="utf-8").splitlines()
                for split in ("train", "valid")]
        assert nway == [moses[:340], moses[340:]]
        pair = f"{lang}-eng" if lang != "eng" else "fra-eng"
        laser = (run / "tok" / "toy_nway" / f"{pair}.{lang}.000-of-001").read_text(encoding="utf-8").splitlines()
        assert laser == moses[:340]  # (no toy pair is filtered out)


def test_embed_takes_any_family(families):
    """`laser-repro embed --codes` on raw text with a multienc encoder: the family's own preparation
    (Moses + its BPE) gives exactly the embeddings of its BPE'd validation text."""
    import numpy as np

    from laser_repro.models import registry

    workdir, _ = families
    run = workdir / "results" / "toy_compare"
    out = workdir / "fra.npy"
    proc = subprocess.run([f"{VENV_BIN}/laser-repro", "embed", "--encoder", str(run / "models/toy_all/encoder.pt"),
                           "--input", str(run / "nway/toy/raw/valid.fra"), "--lang", "fra", "--codes",
                           str(run / "nway/toy/bpe/codes"), "--output", str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = np.load(out)
    encoder = registry.load_encoder(run / "models/toy_all/encoder.pt")
    bpe = (run / "nway/toy/bpe/valid.fra").read_text().splitlines()
    assert got.dtype == np.float32 and got.shape == (60, encoder.dim)
    np.testing.assert_array_equal(got, encoder.embed(bpe, "fra"))


def test_compare_table_puts_the_families_side_by_side(families):
    workdir, _ = families
    tables = workdir / "results" / "tables" / "toy_compare"
    md = (tables / "compare_flores.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| lang |"))
    assert header.split(" | ")[2:] == ["base", "base init", "toy_last", "toy_last init", "toy_all",
                                       "toy_all init", "toy_labse", "toy_labse init", "bisent2vec_uni_bi",
                                       "bisent2vec_uni_bi init", "TF-IDF |"]
    rows = list(csv.DictReader(open(tables / "compare_flores.csv", encoding="utf-8")))
    cells = {(r["language"], r["system"]): r for r in rows}
    assert {lang for lang, _ in cells} == {"avg", "fra", "spa", "rus", "ara", "cmn"}
    assert cells[("ara", "toy_last")]["en_xx"] == ""  # no ara encoder: shown as –
    laser = json.loads((workdir / "results" / "toy_compare" / "flores" / "base" / "scores.json").read_text())
    assert float(cells[("rus", "base")]["en_xx"]) == laser["model"]["heldout"]["rus"]["en_xx"]
    every = json.loads((workdir / "results" / "toy_compare" / "eval" / "models" / "toy_all" / "similarity.json").read_text())
    assert float(cells[("rus", "toy_all")]["xx_en"]) == round(every["similarity"]["pairs"]["rus-eng"], 2)
    # Bi-Sent2Vec: one column of per-pair models (here only en-fr): the other languages have no model
    b2v = json.loads((workdir / "results" / "toy_compare" / "eval" / "models" / "toy_b2v" / "similarity.json").read_text())
    assert float(cells[("fra", "bisent2vec_uni_bi")]["en_xx"]) == round(b2v["similarity"]["pairs"]["eng-fra"], 2)
    assert cells[("spa", "bisent2vec_uni_bi")]["en_xx"] == ""


def test_bisent2vec_trains_evaluates_and_fills_its_tables(families):
    """Bi-Sent2Vec on the toy data: the pair's vocabulary, training through the launcher, the encoder
    file, MUSE word translation and Europarl retrieval in both directions beside update 0 and the
    non-learned baselines on the same queries, Tatoeba, the paper's Tables 1/3/4 and the pairs table."""
    workdir, _ = families
    run = workdir / "results" / "toy_compare"
    vocab = json.loads((run / "nway" / "toy" / "bisent2vec_vocab" / "eng-fra.min1.max750000.json").read_text())
    assert vocab["languages"] == ["eng", "fra"] and vocab["words"][0] == "<PLACEHOLDER>"
    status = json.loads((run / "models" / "toy_b2v" / "checkpoints" / "train_status.json").read_text())
    assert status["family"] == "bisent2vec" and status["status"] == "completed" and status["num_updates"] == 20 * 340
    encoder = torch.load(run / "models" / "toy_b2v" / "encoder.pt", weights_only=True)
    assert encoder["family"] == "bisent2vec" and encoder["bigrams"].shape == (1000, 16)
    for direction in ("eng-fra", "fra-eng"):
        words = json.loads((run / "eval" / "models" / "toy_b2v" / f"words_{direction}_encoder.json").read_text())
        assert set(words["results"]) == {"nn", "csls_knn_10"} and words["results"]["nn"]["n"] == 24
        same = json.loads((run / "eval" / "models" / "toy_b2v" / f"words_{direction}_identical.json").read_text())
        assert same["results"]["identical_strings"]["n"] == 24
        sentences = json.loads((run / "eval" / "models" / "toy_b2v" / f"europarl_{direction}_encoder_init.json").read_text())
        assert sentences["results"]["nn"]["n_queries"] == 20 and sentences["results"]["nn"]["n_keys"] == 100
    tables = workdir / "results" / "tables" / "toy_compare" / "bisent2vec_2019"
    table1 = (tables / "table1.md").read_text()
    assert "89.3" in table1 and "`toy_b2v`" in table1 and "Identical strings" in table1  # the paper's en-fr NN
    assert "84.0" in (tables / "table3.md").read_text()  # the paper's en-de -> with CSLS, uni. + bi.
    pairs = (tables / "pairs.md").read_text()
    assert "eng-fra" in pairs or "en-fr" in pairs
    assert (workdir / "results" / "figures" / "toy_compare" / "curves_toy_b2v.png").stat().st_size > 10000


def test_labse_pretrains_trains_and_fills_table2(families):
    """The LaBSE stages on the toy data: vocabulary, MLM + TLM pre-training (its encoder is update 0 of
    the dual encoder), the dual encoder, Tatoeba beside update 0 and TF-IDF, Table 2 beside the paper."""
    workdir, args = families
    run = workdir / "results" / "toy_compare"
    stats = json.loads((run / "nway" / "toy" / "wordpiece" / "400-a0.3" / "stats.json").read_text())
    assert stats["size"] <= 400 and set(stats["lines"]) == {"eng", "fra", "spa", "rus", "ara", "cmn"}
    status = json.loads((run / "models" / "toy_labse" / "checkpoints" / "train_status.json").read_text())
    assert status["family"] == "labse" and status["status"] == "completed" and status["num_updates"] == 16
    [pretraining] = list((run / "labse_pretrain").iterdir())
    pre = torch.load(pretraining / "checkpoint_final.pt", weights_only=True)
    init = torch.load(run / "models" / "toy_labse" / "checkpoint_init.pt", weights_only=True)
    assert pre["stage"] == "pretrain" and pre["num_updates"] == 8 and init["num_updates"] == 0
    for name, tensor in init["model"].items():
        assert torch.equal(tensor, pre["model"]["bert." + name]), name
    rec = json.loads((run / "models" / "toy_labse" / "checkpoint_final.pt.prov.json").read_text())
    assert rec["runtime"]["family"] == "labse"
    assert any("labse_pretrain" in path for path in rec["inputs"])
    for encoder in ("encoder", "encoder_init"):
        scores = json.loads((run / "eval" / "models" / "toy_labse" / f"tatoeba_{encoder}.json").read_text())
        assert scores["task"] == "tatoeba" and set(scores["results"]) == {"fra", "spa"}
    similarity = json.loads((run / "eval" / "models" / "toy_labse" / "similarity.json").read_text())
    assert len(similarity["similarity"]["pairs"]) == 6 * 5
    un = json.loads((run / "eval" / "models" / "toy_labse" / "un_encoder.json").read_text())
    assert un["task"] == "un" and {k: v["n"] for k, v in un["results"].items()} == dict.fromkeys(["spa", "fra", "rus", "cmn"], 400)
    table = (workdir / "results" / "tables" / "toy_compare" / "labse_2020" / "table2.md").read_text()
    assert "83.7" in table and "`toy_labse`" in table and "pre-trained, before dual training" in table
    cells = list(csv.DictReader(open(workdir / "results" / "tables" / "toy_compare" / "labse_2020" / "table2.csv",
                                     encoding="utf-8")))
    ours = {c["column"]: c for c in cells if c["model"] == "toy_labse" and c["row"] == "ours.toy_labse"}
    tatoeba = json.loads((run / "eval" / "models" / "toy_labse" / "tatoeba_encoder.json").read_text())["results"]
    mean = 100 - (tatoeba["fra"]["error"] + tatoeba["spa"]["error"]) / 2
    assert float(ours["tatoeba_all"]["ours"]) == pytest.approx(mean, abs=0.01) and ours["tatoeba_all"]["paper"]
    p_at_1 = sum(100 - v["error"] for v in un["results"].values()) / 4
    assert float(ours["un_avg"]["ours"]) == pytest.approx(p_at_1, abs=0.01) and ours["un_avg"]["paper"] == "89.50"
    assert (workdir / "results" / "figures" / "toy_compare" / "curves_toy_labse.png").stat().st_size > 10000


def test_multienc_tables_and_curves(families):
    workdir, _ = families
    tables = workdir / "results" / "tables" / "toy_compare" / "schwenk_douze_2017"
    table1 = (tables / "table1.md").read_text()
    assert "efsrz-all" in table1 and "1.20" in table1  # the paper's BiLSTM 1:N value beside ours
    cells = list(csv.DictReader(open(tables / "table1.csv", encoding="utf-8")))
    claimed = [c for c in cells if c["model"] == "toy_all" and c["ours"]]
    assert len(claimed) == 4 and all(c["init"] and c["tfidf"] and c["paper"] for c in claimed)
    last = [c for c in cells if c["model"] == "toy_last" and c["ours"]]
    assert sorted(c["column"] for c in last) == ["efs", "efsr"]  # no encoder for a: as in the paper
    assert "ours" in (tables / "table4.md").read_text() or "toy_all" in (tables / "table4.md").read_text()
    assert (workdir / "results" / "figures" / "toy_compare" / "curves_toy_all.png").stat().st_size > 10000


def test_every_model_through_every_task(families):
    """Issue 27: the four families through the tasks of the toy fixtures (Tatoeba, UN, BUCC, XNLI, MLDoc,
    WMT, Europarl), one comparison table per task with a column group per model, each scored on the languages it embeds."""
    workdir, _ = families
    tables = workdir / "results" / "tables" / "toy_compare"
    every = ["base", "toy_last", "toy_all", "toy_labse", "toy_b2v"]
    tatoeba = {r["row"]: r for r in csv.DictReader(open(tables / "compare_tatoeba.csv", encoding="utf-8"))}
    assert list(tatoeba) == ["fra", "spa"]
    for name in every:  # LASER's per-language scores, the others' retrieval (multienc with its BPE codes)
        assert 0 <= float(tatoeba["fra"][name]) <= 100 and 0 <= float(tatoeba["fra"][f"{name} init"]) <= 100
    assert tatoeba["spa"]["toy_b2v"] == "" and 0 <= float(tatoeba["spa"]["TF-IDF"]) <= 100
    un = {r["row"]: r for r in csv.DictReader(open(tables / "compare_un.csv", encoding="utf-8"))}
    assert list(un) == ["spa", "fra", "rus", "cmn"]
    assert all(0 <= float(un[lang][name]) <= 100 for lang in un for name in ("base", "toy_all", "toy_labse"))
    assert un["cmn"]["toy_last"] == "" and un["rus"]["toy_last"] != ""  # a 1:1 system: its sources' encoders
    assert [lang for lang in un if un[lang]["toy_b2v"]] == ["fra"]
    wmt = {r["row"]: r for r in csv.DictReader(open(tables / "compare_wmt.csv", encoding="utf-8"))}
    assert list(wmt) == ["eng-spa", "spa-eng", "average"]
    for name in ("base", "toy_all", "toy_labse"):  # toy_b2v is en-fr: no second WMT language
        for key in ("eng-spa", "spa-eng", "average"):
            assert 0 <= float(wmt[key][name]) <= 100 and 0 <= float(wmt[key][f"{name} init"]) <= 100
    assert 0 <= float(wmt["average"]["TF-IDF"]) <= 100
    md = (tables / "compare_wmt.md").read_text(encoding="utf-8")
    assert "toy_b2v (bisent2vec): not scored: no encoder for the task's languages (eng, spa)" in md
    for task, langs in (("xnli", ["eng"]), ("mldoc", ["eng", "spa"])):
        rows = {r["row"]: r for r in csv.DictReader(open(tables / f"compare_{task}.csv", encoding="utf-8"))}
        assert list(rows) == langs
        for name in every:
            assert 0 < float(rows["eng"][name]) <= 100, (task, name)
    assert rows["spa"]["toy_b2v"] == ""  # MLDoc; en-fr: English only
    bucc = {r["row"]: r for r in csv.DictReader(open(tables / "compare_bucc.csv", encoding="utf-8"))}
    assert all(0 <= float(bucc["cmn"][name]) <= 100 for name in ("base", "toy_all", "toy_labse"))
    # Europarl (MUSE's protocol): every model on the same queries and keys, both directions, beside TF-IDF
    europarl = {r["row"]: r for r in csv.DictReader(open(tables / "compare_europarl.csv", encoding="utf-8"))}
    assert list(europarl) == ["eng-fra", "fra-eng"]
    for key in europarl:
        assert 0 <= float(europarl[key]["TF-IDF"]) <= 100
        for name in every:
            assert 0 <= float(europarl[key][name]) <= 100 and 0 <= float(europarl[key][f"{name} init"]) <= 100
    for direction in europarl:  # the same score files as Bi-Sent2Vec's Table 3
        doc = json.loads((workdir / "results" / "toy_compare" / "eval" / "models" / "toy_b2v" /
                          f"europarl_{direction}_encoder.json").read_text())
        assert float(europarl[direction]["toy_b2v"]) == round(doc["results"]["nn"]["p@1"], 2)
        laser = json.loads((workdir / "results" / "toy_compare" / "eval" / "models" / "base" /
                            f"europarl_{direction}_encoder.json").read_text())
        assert laser["family"] == "laser" and laser["results"]["nn"]["n_queries"] == 20
    # the model's own embeddings of the task's texts, prepared by its family
    for name in every[1:]:
        assert (workdir / "results" / "toy_compare" / "eval" / "xnli" / name / "emb" / "test-p.eng.npy").is_file()


def test_lineage_and_rerun(families):
    workdir, args = families
    table = "results/tables/toy_compare/schwenk_douze_2017/table1.md"
    proc = subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "tree", table], cwd=workdir, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for step in ("multienc_train", "nway_bpe", "nway_text", "model_similarity"):
        assert step in proc.stdout
    # a comparison table walks back to the training of every family (and the Moses lines both data shapes share)
    proc = subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "tree", "results/tables/toy_compare/compare_un.md"],
                          cwd=workdir, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for step in ("laser_train", "multienc_train", "labse_train", "bisent2vec_train", "moses_lines",
                 "extract_nway_bitext", "nway_text", "model_un"):
        assert step in proc.stdout, step
    rec = json.loads((workdir / "results" / "toy_compare" / "models" / "toy_all" / "checkpoint_final.pt.prov.json").read_text())
    assert rec["runtime"]["family"] == "multienc" and rec["config"]["models"]["toy_all"]["paths"]["targets"] == "all"
    proc = run_snakemake(*args, "compare", "multienc", "labse", "bisent2vec", "-n")
    assert proc.returncode == 0 and "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]
    # the DVC stages' targets plan on this config (evaluate: LASER's metrics are still to make)
    proc = run_snakemake(*args, "data", "models", "evaluate", "tables", "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert not {"laser_train", "multienc_train", "labse_train", "bisent2vec_train"} & set(_job_counts(out)), out[-3000:]


def _job_counts(out: str) -> dict:
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


@pytest.mark.parametrize("config, trained", [("config/multienc_2017.yaml", {"multienc_train": 31}),
                                             ("config/multienc_small.yaml", {"multienc_train": 5}),
                                             # seeds [1, 2, 3]: every model three times
                                             ("config/compare.yaml", {"multienc_train": 9, "laser_train": 6, "labse_train": 9,
                                                                     "bisent2vec_train": 12, "reproduces_table": 1}),
                                             ("config/labse_small.yaml", {"labse_train": 3, "labse_pretrain": 1}),
                                             ("config/labse_2020.yaml", {"labse_train": 4, "labse_pretrain": 1}),
                                             ("config/bisent2vec_2019.yaml", {"bisent2vec_train": 14})])
def test_family_configs_dry_run(config, trained, tmp_path):
    """Offline, data_root null: each config plans its downloads from the real URLs (the UN corpus in
    4 parts, joined), every system of its paper, and the comparison."""
    configfile = REPO / config
    if "bisent2vec_2019" in config:  # its MUSE and Europarl downloads with a mirror and a deadline of their own
        import yaml

        cfg = yaml.safe_load(configfile.read_text())
        cfg["evaluation"].update(mirror="/srv/mirror", deadline_s=1234)
        configfile = tmp_path / "bisent2vec_2019.yaml"
        configfile.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake("--configfile", str(configfile), "--directory", str(tmp_path), "-n", "-p", timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    counts = _job_counts(out)
    assert {k: counts.get(k) for k in trained} == trained
    if "labse_2020" in config:  # the UN test set (Table 2's UN columns) and every Tatoeba language
        assert "filename=UNv1.0.testsets.tar.gz" in out and counts.get("model_un") == 4
        assert counts.get("download_tatoeba_test") == 224
    elif "bisent2vec_2019" in config:  # the OPUS pairs, the MUSE dictionaries, Europarl (no ru), Tatoeba
        assert "https://object.pouta.csc.fi/OPUS-ParaCrawl/v4/moses/en-fr.txt.zip" in out
        assert "https://object.pouta.csc.fi/OPUS-Tanzil/v1/moses/en-ru.txt.zip" in out
        assert "https://dl.fbaipublicfiles.com/arrival/dictionaries/hu-en.5000-6500.txt" in out
        assert "https://www.statmt.org/europarl/v7/fi-en.tgz" in out and "ru-en.tgz" not in out
        assert "--deadline 1234 --base-url https://dl.fbaipublicfiles.com --mirror /srv/mirror/dl.fbaipublicfiles.com" in out
        assert "--deadline 1234 --base-url https://www.statmt.org --mirror /srv/mirror/www.statmt.org" in out
        assert counts.get("bisent2vec_vocab") == 7 and counts.get("bisent2vec_words") == 28
        assert counts.get("model_europarl") == 24 and counts.get("europarl_tfidf") == 12
        assert counts.get("bisent2vec_tables") == 1
    elif "2017" in config:
        for part in range(4):
            assert f"https://conferences.unite.un.org/uncorpus/Home/DownloadFile?filename=UNv1.0.6way.tar.gz.0{part}" in out
        assert "filename=UNv1.0.testsets.tar.gz" in out and counts.get("join_archive_parts") == 1
        assert counts.get("multienc_tables") == 1 and "compare_flores" not in counts
    else:
        assert "https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz" in out
    if "compare" in config:
        assert counts.get("compare_flores") == 1 and counts.get("labse_pretrain") == 1
    if "labse_small" in config:  # the two models without pre-training share the vocabulary; no LASER, no multienc
        assert counts.get("labse_vocab") == 1 and counts.get("labse_tables") == 1 and "laser_train" not in counts


def test_a_second_laser_model_on_the_same_data_trains_alone(families, tmp_path):
    """Issue 27: a second LASER model on the same bitext_data entry, added after a finished run: its own
    training job (the data stages and the first LASER model are reused), and a column in every comparison."""
    import yaml

    workdir, args = families
    cfg = yaml.safe_load(TOY_COMPARE.read_text())
    base = cfg["models"]["base"]
    cfg["models"]["wide"] = {"family": "laser", "data": "toy", "description": "wider encoder",
                             "model": {**base["model"], "encoder_hidden_size": 24}, "train": {**base["train"], "lr": 0.01}}
    path = tmp_path / "two_laser.yaml"
    path.write_text(yaml.safe_dump(cfg))
    args = [a if a != str(TOY_COMPARE) else str(path) for a in args]
    proc = run_snakemake(*args, "compare", "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    counts = _job_counts(out.split("Job stats:", 1)[1])
    assert counts.get("laser_train") == 1 and "model=wide" in out and "bpe_learn" not in counts
    assert counts.get("compare_task") == len(["tatoeba", "un", "bucc", "xnli", "mldoc", "wmt", "europarl"])
    assert counts.get("compare_flores") == 1 and "models/wide/checkpoint_final.pt" in out


def test_dvc_stages_version_every_family(families, tmp_path):
    """Issue 27: the DVC stages of the families' config (laser-repro dvc-yaml) name the outputs of every
    family: LASER's bitexts and BPE, the N-way data's subword models of multienc, LaBSE and Bi-Sent2Vec, every
    model, every evaluation (eval/models/<name>/) and table. DVC finds the outputs of the data and train
    stages in the finished run and records them (dvc commit), after which they are up to date; every model's
    scores lie under the evaluate stage's eval/ (this run did not build LASER's metrics, which that stage
    also versions: the LASER toy run's DVC test runs every stage)."""
    import shutil

    import yaml

    workdir, _ = families
    project = dvc_project(tmp_path / "project", "tests/toy/compare.yaml", f"--cores {CORES}")
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    outs = {stage: [next(iter(o)) for o in body["outs"]] for stage, body in stages.items()}
    run = "results/toy_compare"
    assert outs["data"] == [f"{run}/bin", f"{run}/bpe/codes", f"{run}/bpe/codes.prov.json", f"{run}/bpe/vocab",
                            f"{run}/nway/toy/bpe", f"{run}/nway/toy/wordpiece", f"{run}/nway/toy/bisent2vec_vocab"]
    assert outs["train"] == [f"{run}/models"] and f"{run}/eval" in outs["evaluate"]
    shutil.copytree(workdir / "results", project / "results")
    recorded = ["data", "train"]
    dvc("commit", "-f", *recorded, cwd=project)
    lock = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    for stage in recorded:  # each output found and hashed
        assert set(outs[stage]) <= {o["path"] for o in lock[stage]["outs"]}, stage
    assert "up to date" in dvc("status", *recorded, cwd=project).stdout
    for path in ("eval/models/toy_labse/un_encoder.json", "eval/models/toy_all/tatoeba_encoder.json",
                 "eval/models/toy_b2v/words_eng-fra_encoder.json", "models/toy_b2v/encoder.pt"):
        assert (project / run / path).is_file(), path  # each under a stage's output


def _changed_config(tmp_path):
    """The toy compare config with one weight-relevant setting changed per family."""
    import yaml

    cfg = yaml.safe_load(TOY_COMPARE.read_text())
    cfg["models"]["base"]["train"]["seed"] += 1                           # LASER
    cfg["models"]["toy_last"]["train"]["lr"] *= 2                        # Schwenk & Douze
    cfg["models"]["toy_labse"]["train"]["lr"] *= 2                       # LaBSE
    cfg["models"]["toy_b2v"]["model"]["ngrams"] = 1                      # Bi-Sent2Vec: 2 -> 1
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


CHANGED_MODELS = {"base": "laser_train", "toy_last": "multienc_train", "toy_labse": "labse_train",
                  "toy_b2v": "bisent2vec_train"}


def test_a_changed_setting_retrains_and_tables_refuse_a_stale_model(families, tmp_path):
    """Issue 24: after a finished run, one weight-relevant setting per family changes. A table forced to run
    without retraining (--rerun-triggers mtime) refuses the stale model, naming its record and the setting;
    the plain rerun schedules each family's training job and the models change."""
    import hashlib

    workdir, args = families
    # the last test of the module: it changes the run (the other tests have read it already)
    config_at = args.index("--configfile") + 1
    changed = [*args[:config_at], str(_changed_config(tmp_path)), *args[config_at + 1:]]
    models = workdir / "results" / "toy_compare" / "models"
    before = {m: hashlib.sha256((models / m / "encoder.pt").read_bytes()).hexdigest() for m in CHANGED_MODELS}

    proc = run_snakemake(*changed, "bisent2vec", "--rerun-triggers", "mtime", "--forcerun", "bisent2vec_tables")
    assert proc.returncode != 0
    log = (workdir / "results" / "toy_compare" / "logs" / "bisent2vec_tables.log").read_text()
    assert "model toy_b2v" in log and "model_record.json disagrees with the config" in log, log[-3000:]
    assert 'weights.model.ngrams: record 2, config 1' in log and "Traceback" not in log, log[-3000:]

    proc = run_snakemake(*changed, "compare", "multienc", "labse", "bisent2vec", "-n")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    counts = _job_counts(proc.stdout + proc.stderr)
    assert all(counts.get(rule) for rule in CHANGED_MODELS.values()), counts
    assert counts.get("multienc_train") == 1, counts  # toy_all's settings did not change: not retrained

    # the models and the table of the issue (not every evaluation of every model: CI time)
    pairs_table = "results/tables/toy_compare/bisent2vec_2019/pairs.md"
    targets = [*(f"results/toy_compare/models/{m}/encoder.pt" for m in CHANGED_MODELS), pairs_table]
    proc = run_snakemake(*changed, *targets)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    after = {m: hashlib.sha256((models / m / "encoder.pt").read_bytes()).hexdigest() for m in CHANGED_MODELS}
    assert all(before[m] != after[m] for m in CHANGED_MODELS), (before, after)
    record = json.loads((models / "toy_b2v" / "model_record.json").read_text())
    assert record["family"] == "bisent2vec" and record["settings"]["model"]["ngrams"] == 1
    assert "uni." in (workdir / pairs_table).read_text()
    proc = run_snakemake(*changed, *targets, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout[-3000:]


def test_every_table_of_the_families_also_exists_as_latex(families):
    """Issue 37: every table of the families' run (the comparisons, each paper's tables in its folder) has its
    LaTeX beside its Markdown and CSV, one tabular row per row of the Markdown."""
    workdir, _ = families
    tables = workdir / "results" / "tables" / "toy_compare"
    mds = sorted(tables.rglob("*.md"))
    found = {str(p.relative_to(tables).with_suffix("")) for p in mds}
    assert {"compare_flores", *(f"compare_{task}" for task in ("tatoeba", "un", "bucc", "xnli", "mldoc", "wmt", "europarl")),
            "labse_2020/table2", *(f"bisent2vec_2019/{t}" for t in ("table1", "table3", "table4", "pairs")),
            *(f"schwenk_douze_2017/table{n}" for n in range(1, 5))} <= found, found
    for md in mds:
        tex = md.with_suffix(".tex").read_text(encoding="utf-8")
        assert md.with_suffix(".csv").exists() and "run \\texttt{toy\\_compare}" in tex, md
        md_rows = [line for line in md.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]
        tex_rows = [line for line in tex.splitlines() if line.endswith(" \\\\")]
        n = tex.count("\\begin{tabular}")  # a tabular per Markdown table; none where the table has no rows
        assert n == tex.count("\\toprule") == tex.count("\\bottomrule") and (n >= 1) == bool(md_rows), md
        assert len(tex_rows) == len(md_rows) and "\\caption{" in tex, md

