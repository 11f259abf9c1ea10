"""laser_repro.workflow without Snakemake: the paths, input functions, targets, resources and shell commands the
rule files ask of a run (WorkflowRun), on the repository's configs. The rules themselves run in the toy workflow
tests; the same DAGs before and after the move into the package were compared job by job (`snakemake -n -p`)."""
from __future__ import annotations

import json
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import REPO, TOY_CONFIG
from laser_repro import config
from laser_repro.workflow.run import WorkflowRun, alternatives
from laser_repro.workflow.shell import RecordedCommand
from laser_repro.workflow.sources import SourceArgs
from laser_repro.workflow.tasks import EUROPARL_LANGUAGES

DATA = "/data"


def run_of(path, **overrides) -> WorkflowRun:
    paths = [REPO / p for p in path] if isinstance(path, (list, tuple)) else REPO / path
    return WorkflowRun(config.Plan(config.load(paths, overrides or None)), envs_dir="workflow/envs")


@pytest.fixture(scope="module")
def small():
    return run_of("config/small.yaml", data_root=DATA)


@pytest.fixture(scope="module")
def small_download():
    return run_of("config/small.yaml")


@pytest.fixture(scope="module")
def compare():
    return run_of("config/compare.yaml", data_root=DATA)


@pytest.fixture(scope="module")
def paper():
    return run_of("config/paper.yaml")


@pytest.fixture(scope="module")
def toy_compare():
    return run_of("tests/toy/compare.yaml", data_root=DATA)


def W(**wildcards):
    return SimpleNamespace(**wildcards)


# ---- the run and its wildcards ------------------------------------------------------------------------------
def test_run_directories(small):
    assert small.run == "results/small" and small.tables_dir == "results/tables/small"
    assert small.table1 == [f"results/tables/small/table1.{ext}" for ext in ("md", "csv", "tex")]
    assert small.laser and small.laser_name == "base"
    assert "flores200_dev" in small.nway_corpus_names and "newstest2014" in small.pair_corpus_names


def test_alternatives_match_exactly_the_names():
    import re

    assert re.fullmatch(alternatives(["base", "a.b"]), "a.b") and not re.fullmatch(alternatives(["a.b"]), "axb")
    assert not re.fullmatch(alternatives([]), "")


# ---- layout --------------------------------------------------------------------------------------------------
def test_layout_of_model_files(small, compare):
    assert small.moses_file("ntrex128", "deu", True) == "results/small/moses/ntrex128/deu.lower"
    assert small.model_record_file("base") == "results/small/models/base/model_record.json"
    assert small.train_benchmark("base") == "results/small/benchmarks/base/train.tsv"
    assert small.heldout_scores_file("base") == "results/small/flores/base/scores.json"
    labse = next(n for n, m in compare.family_models.items() if m["family"] == "labse")
    assert compare.heldout_scores_file(labse) == f"results/compare/eval/models/{labse}/similarity.json"
    assert small.curves_figure("base") == "results/figures/small/curves_base.png"
    assert small.paper_table_files("p", ["t"]) == ["results/tables/small/p/t.md", "results/tables/small/p/t.csv",
                                                  "results/tables/small/p/t.tex"]
    assert small.encoder_file(W(model="base")) == "results/small/models/base/encoder.pt"
    assert small.init_encoder_file(W(model="base")) == "results/small/models/base/encoder_init.pt"
    assert small.emb("wmt", "test", "deu") == "results/small/eval/wmt/{model}/emb/test.deu.npy"
    assert small.emb("wmt", "test", "deu", "base", init=True) == "results/small/eval/wmt/base/emb_init/test.deu.npy"
    assert small.europarl_tfidf_file("eng", "deu") == "results/small/eval/tfidf/europarl_eng-deu.json"
    # every binarized pair has .bin and .idx on both sides
    files = small.binarized_files()
    assert len(files) == 4 * len(small.plan.pairs) and all(f.endswith((".bin", ".idx")) for f in files)
    assert len(small.subword_train_files()) == 2 * len(small.plan.pairs)
    assert small.subword_text("deu", "eng", "deu") == "results/small/bpe/train/deu-eng.deu"
    assert small.flores_texts("raw")[0].startswith("results/small/flores/raw/")
    labse = next(n for n, m in compare.family_models.items() if m["family"] == "labse")
    assert compare.labse_tokenizer(labse).endswith("/tokenizer.json")
    assert all(p.startswith(f"{compare.run}/nway/") for p in compare.labse_text(compare.labse[labse]["data"]))
    b2v = next(iter(compare.bisent2vec))
    assert compare.bisent2vec_vocab_file(b2v).endswith(".json")
    assert len(compare.bisent2vec_text(b2v)) == 4  # two languages, train and valid
    multienc = next(iter(compare.multienc))
    # the text each family declares (laser_repro.models.declaration)
    assert (compare.model_text(multienc), compare.model_text(labse), compare.model_text(b2v)) == ("bpe", "tok", "tok")
    assert compare.model_text_dir(W(model=multienc)).endswith("/bpe")
    assert compare.model_valid_text(W(model=multienc)) == [compare.model_text_dir(W(model=multienc))]
    assert compare.model_text_dir(W(model=labse)).endswith("/tok")
    assert all(p.startswith(compare.model_text_dir(W(model=labse))) for p in compare.model_valid_text(W(model=labse)))
    assert compare.labse_pretrained(labse) in ([], [f"{compare.run}/labse_pretrain/{compare.plan.labse_pretraining(labse)}/checkpoint_final.pt"])


def test_tok_shards_follow_the_shard_count(paper, small):
    b = next(b for b in paper.plan.bitexts if b.corpus not in paper.nway_corpus_names)
    n = paper.shards_of(b.corpus)
    shards = paper.tok_shards(b.corpus, b.src, b.tgt, b.src)
    assert len(shards) == n and shards[-1].endswith(f".{n - 1:03d}-of-{n:03d}")
    nway = small.nway_corpus_names[0]
    assert small.shards_of(nway) == 1
    assert len(small.all_tok_shards()) == 2 * len(small.plan.bitexts)
    w = W(src="deu", tgt="eng", lang="deu")
    assert small.pair_tok_shards(w) == [p for b in small.plan.bitexts_of_pair("deu", "eng")
                                        for p in small.tok_shards(b.corpus, "deu", "eng", "deu")]
    inputs = small.bpe_apply_inputs(w)
    assert inputs["codes"] == "results/small/bpe/codes" and inputs["shards"] == small.pair_tok_shards(w)


def test_subword_kind_chooses_the_text_path_and_the_files(small):
    """subword.kind: spm (config/overlays/spm.yaml): LASER2's normalised shards in norm/, an N-way corpus's
    language files in laser2/, the SentencePiece model as every rule's --codes; bpe keeps the paper's paths."""
    spm = run_of(["config/small.yaml", "config/overlays/spm.yaml"], data_root=DATA)
    assert (small.subword_kind, spm.subword_kind) == ("bpe", "spm")
    assert small.subword_model() == "results/small/bpe/codes" and spm.subword_model() == "results/small/spm/spm.model"
    assert small.laser_text_file("ntrex128", "deu") == small.moses_file("ntrex128", "deu", True)
    assert spm.laser_text_file("ntrex128", "deu") == "results/small/laser2/ntrex128/deu.lower"
    assert all("/norm/" in p for p in spm.all_tok_shards()) and all("/tok/" in p for p in small.all_tok_shards())
    by_lang = spm.tok_shards_by_language()  # spm_learn's input, per language
    assert sorted(p for ps in by_lang.values() for p in ps) == sorted(spm.all_tok_shards())
    assert all(p.split(".")[-2] == lang for lang, ps in by_lang.items() for p in ps)
    assert spm.subword_text("deu", "eng", "deu") == "results/small/spm/train/deu-eng.deu"
    assert spm.subword_train_files() == [p.replace("/bpe/", "/spm/") for p in small.subword_train_files()]
    w = W(src="deu", tgt="eng", lang="deu", corpus="ntrex128")
    assert spm.bpe_apply_inputs(w)["codes"] == "results/small/spm/spm.model"
    assert spm.extract_inputs(w)["moses_src"] == "results/small/laser2/ntrex128/deu.lower"
    assert spm.model_codes("base") == {"codes": "results/small/spm/spm.model"}


# ---- sources -----------------------------------------------------------------------------------------------
def test_local_corpus_file_under_data_root_records_its_url(small):
    path = small.local_corpus_file("flores200_dev", "deu")
    assert path == f"{DATA}/flores200-dev/deu_Latn.dev"
    assert small.raw_urls[path].startswith("https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz#")
    items = small.raw_source_items(None, [path, "results/x"])
    assert small.raw_sources.items(None, [path, "results/x"], None) == items
    assert items == [f"{path}={small.raw_urls[path]}"]
    assert small.raw_sources(None, [path]) == f"--source {shlex.quote(items[0])}"


def test_local_corpus_file_without_data_root_is_the_download(small_download):
    assert small_download.local_corpus_file("flores200_dev", "deu") == "resources/flores200_dev/deu_Latn"
    assert small_download.downloaded_file("newstest2014", "deu", ("deu", "eng")) == "resources/newstest2014/deu-eng.deu"
    conversions = small_download.sacrebleu_conversion("newstest2014")
    assert (["--pair-file", "de-en", "deu"], "resources/newstest2014/deu-eng.deu") in conversions


def test_corpus_without_download_and_data_root_is_an_error_naming_it(small_download):
    wf = run_of("config/small.yaml")
    del wf.plan.corpora["flores200_dev"]["download"]
    with pytest.raises(ValueError, match="corpora: flores200_dev: data_root is null and the corpus has no download"):
        wf.local_corpus_file("flores200_dev", "deu")


def test_downloaded_from_gives_the_url_items():
    args = WorkflowRun.downloaded_from(None, lambda w: f"https://x/{w.name}")
    assert isinstance(args, SourceArgs)
    assert args.items(W(name="a b"), None, ["out/a"]) == ["out/a=https://x/a b"]
    assert args(W(name="a b"), None, ["out/a"]) == "--source 'out/a=https://x/a b'"


def test_fetch_urls_and_download_label():
    assert WorkflowRun.fetch_urls(["https://a", "https://b c"]) == "--url https://a --alternative 'https://b c'"
    assert WorkflowRun.download_label(["u1", "u2"]) == "u1 + u2" and WorkflowRun.download_label("u") == "u"
    assert WorkflowRun.source_args(["p=u"]) == "--source p=u"


def test_extract_inputs_and_args_of_an_nway_pair(small):
    w = W(corpus="ntrex128", src="deu", tgt="eng")
    inputs = small.extract_inputs(w)
    assert set(inputs) >= {"src_file", "tgt_file", "moses_src", "moses_tgt"}
    inputs_ns = SimpleNamespace(**inputs, keys=inputs.keys)
    out = SimpleNamespace(tok_src="t.deu", tok_tgt="t.eng")
    args = shlex.split(small.extract_args(w, inputs_ns, out))
    assert args[:4] == ["--src", "deu", "--tgt", "eng"] and "--max-chars" in args and "--tok-src" in args
    # FLORES's held-out lines are never trained on
    flores = small.extract_args(W(corpus="flores200_dev", src="deu", tgt="eng"),
                                SimpleNamespace(**small.extract_inputs(W(corpus="flores200_dev", src="deu", tgt="eng")),
                                                keys=lambda: ["src_file", "tgt_file"]), out)
    start, stop = small.flores["heldout_lines"]
    assert f"--skip-lines {start} {stop}" in flores


def test_opus_paths_and_urls(paper):
    b = next(b for b in paper.plan.bitexts if paper.plan.corpora[b.corpus]["kind"] == "opus")
    assert paper.opus_zip(b.corpus, b.src, b.tgt).startswith("resources/opus/")
    c = paper.plan.corpora[b.corpus]
    url = paper.opus_url(W(opus_corpus=c["corpus"], version=c["version"], zipname="de-en"))
    assert url.startswith("http") and url.endswith("de-en.txt.zip")
    arg = paper.opus_pair_url_args(W(opus_corpus=c["corpus"], version=c["version"]))
    listed = json.loads(Path(shlex.split(arg)[1]).read_text())
    assert url in listed or any(u.endswith(".txt.zip") for u in listed)
    assert paper.opus_sha256_arg(W(zipname="xx-yy", opus_corpus=c["corpus"])) == ""


def test_eval_inputs_download_or_data_root(small, small_download, paper):
    assert small.tatoeba_test_file("deu", "eng") == f"{DATA}/tatoeba-v1/tatoeba.deu-eng.eng"
    assert small_download.tatoeba_test_file("deu", "eng") == "resources/tatoeba-v1/tatoeba.deu-eng.eng"
    zip_ = paper.xnli_zip()
    assert zip_.startswith("resources/eval/") and zip_ in paper.eval_downloads
    assert paper.multinli_zip() in paper.eval_downloads
    assert paper.bucc_archive("deu", "test") in paper.eval_downloads
    assert paper.iso1("deu") == "de"
    assert small.flores_raw_file("deu") == small.local_corpus_file(small.flores["corpus"], "deu")
    assert small.wmt_languages()[0] == "eng" and set(small.wmt_sources()) == set(small.wmt_languages())
    inputs = {lang: f"f.{lang}" for lang in small.wmt_languages()}
    assert "--text eng f.eng" in small.wmt_source_args(inputs)
    assert "--tarball" in small_download.wmt_source_args(list(small_download.wmt_sources().values()))


def test_missing_note_names_the_command_that_fetches(small, tmp_path):
    absent = str(tmp_path / "absent.txt")
    small.raw_input(absent, "https://example.org/absent.txt")
    note = small.missing_note("x", [absent], "how")
    assert note.startswith(f"data missing: {absent}") and "laser-repro fetch --url https://example.org/absent.txt" in note
    assert note.endswith("how")
    assert small.missing_note("x", [__file__]) is None


def test_task_readiness_and_missing_args(small, paper, tmp_path):
    # WMT's files absent under data_root: not ready, and its tables say why
    assert not small.task_ready("wmt") and small.missing_arg("wmt").startswith("--missing 'data missing: /data/wmt-news/")
    wf = run_of("config/small.yaml", data_root=str(tmp_path))
    for path in wf.wmt_sources().values():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text("x\n")
    wf = run_of("config/small.yaml", data_root=str(tmp_path))
    assert wf.task_ready("wmt") and not wf.task_ready("bucc") and wf.missing_arg("wmt") == ""
    for task in ("bucc", "xnli", "mldoc"):  # not configured, or configured with its data absent
        why = "data missing: " if task in wf.evaluation else f"not configured: add evaluation.{task}"
        assert why in wf.missing_arg(task) and why in wf.missing_tasks()[task]
    assert set(wf.missing_tasks()) == {"bucc", "xnli", "mldoc"}
    assert "mldoc" in paper.task_missing
    # without data_root the evaluation data is downloaded: an eval_input is a destination under resources/eval
    dest = paper.eval_input("https://host.example/a/{x}.zip", None, "abc", x="f")
    assert dest == "resources/eval/host.example/a/f.zip" and paper.eval_downloads[dest] == ("https://host.example/a/f.zip", "abc")


def test_eval_mirror_args():
    wf = run_of("config/small.yaml")
    assert wf.eval_mirror_args("https://host/x") == ""
    wf.evaluation["mirror"] = "/m/"
    assert wf.eval_mirror_args("https://host/x/y") == "--base-url https://host --mirror /m/host"


def test_nway_inputs_of_a_held_out_split(compare):
    data = next(n for n, d in compare.nway.items() if "heldout_lines" in d["valid"])
    d = compare.nway[data]
    lang = d["languages"][0]
    files = compare.nway_raw_inputs(W(data=data, lang=lang))
    assert len(files["raw"]) == len(compare.nway_corpora(d)) and "aligned" in files
    args = compare.nway_valid_args(W(data=data, lang=lang), None)
    start, stop = d["valid"]["heldout_lines"]
    assert args.startswith(f"--heldout {start} {stop}") and args.count("--aligned-with") == len(d["languages"]) - 1


def test_muse_and_europarl_files(paper):
    wf = run_of("config/bisent2vec_2019.yaml", data_root=DATA)
    assert wf.muse_dictionary("deu", "eng").startswith(DATA)
    assert wf.europarl_file("eng", "deu", "deu").startswith(DATA)
    wf_download = run_of("config/bisent2vec_2019.yaml")
    assert wf_download.muse_dictionary("deu", "eng") == "resources/muse/dictionaries/de-en.5000-6500.txt"
    assert wf_download.europarl_file("deu", "eng", "eng") == "resources/europarl/europarl-v7.de-en.en"


# ---- resources ---------------------------------------------------------------------------------------------
def test_gpu_resources_local_and_one_node_limit(small):
    assert small.gpu_resources(0, "k") == {}
    site = WorkflowRun(small.plan, global_resources={"site_gpus_per_node": 4, "site_cpus_per_gpu": 8})
    assert site.one_node_gpu_layout(2, "models.m.train.gpus", "gpu", 1) == 2
    with pytest.raises(ValueError, match="models.m.train.gpus: 8 GPUs exceed one node"):
        site.one_node_gpu_layout(8, "models.m.train.gpus", "gpu", 1)
    resource = site.one_node_gpu_resource(lambda w: (2, "k"), "cpus_per_task")
    assert resource(None, 1) == 16
    assert small.one_node_gpu_layout(0, "k", "cpus_per_task", 3) == 3


def test_conda_env_and_threads(small, compare):
    assert small.conda_env(0, "k").startswith("workflow/envs/")
    assert small.eval_threads(None) == small.laser_model["embed"]["threads"]
    labse = next(iter(compare.labse))
    assert compare.labse_train_gpus(W(model=labse)) == (compare.labse[labse]["train"]["gpus"], f"models.{labse}.train.gpus")
    key = next(iter(compare.plan.labse_pretrainings), None)
    if key:
        assert compare.labse_pretrain_gpus(W(pretraining=key))[1].endswith(".pretrain.gpus")


def test_multienc_train_gpus(compare):
    name = next(iter(compare.multienc))
    assert compare.multienc_train_gpus(W(model=name)) == (compare.multienc[name]["train"]["gpus"], f"models.{name}.train.gpus")


# ---- the rules' command-line arguments (what the rule files' lambdas pass on) -------------------------------
def test_task_arguments_quote_every_value(small, paper):
    b = paper.evaluation["bucc"]
    assert shlex.split(paper.bucc_mine_args()) == ["--k", "4", "--margin", "ratio", "--mode", "max", "--shard-rows",
                                                   str(b["shard_rows"]), "--knn-device", paper.evaluation["knn_device"]]
    langs = small.task_languages("wmt", "base")
    test_set = small.evaluation["wmt"]["test_set"]
    args = shlex.split(small.wmt_emb_args("base"))
    assert args == [x for lang in langs for x in ("--emb", lang, f"results/small/eval/wmt/base/emb/{test_set}.{lang}.npy")]
    assert all("/emb_init/" in a for a in shlex.split(small.wmt_emb_args("base", init=True))[2::3])
    texts = [f"t e x t/{lang}" for lang in small.wmt_languages()]
    assert shlex.split(small.wmt_text_args(texts)) == [x for lang, t in zip(small.wmt_languages(), texts)
                                                        for x in ("--text", lang, t)]
    class Named(list):  # Snakemake's InputFiles: a list whose files are attributes too
        pass
    scores = Named(["a b.json", "i.json", "t.json"])
    scores.scores, scores.init, scores.tfidf = scores
    assert shlex.split(small.wmt_table_scores_arg(scores)) == ["--scores", "a b.json", "--init-scores", "i.json",
                                                               "--tfidf-scores", "t.json"]
    assert small.wmt_table_scores_arg([]) == ""  # the data absent: the rule has no inputs
    xnli = paper.task_languages("xnli", "base")
    tests = {f"test_{lang}": [f"{lang} p", f"{lang} h"] for lang in xnli}
    assert shlex.split(paper.classify_test_args("xnli", "base", tests)) == [
        x for lang in xnli for x in ("--test", lang, f"{lang} p", f"{lang} h")]
    cap = small.evaluation["xnli"]["train_max_pairs"]
    assert small.multinli_cap_args() == f"--max-pairs {cap} --seed {small.laser_model['train']['seed']}"
    uncapped = run_of("config/small.yaml", data_root=DATA)
    uncapped.evaluation["xnli"].pop("train_max_pairs")
    assert uncapped.multinli_cap_args() == ""


def test_flores_arguments(small):
    out = small.flores_prepare_args(SimpleNamespace(texts=["d/raw x.deu", "d/raw.fra"]), ["o/bpe x.deu", "o/bpe.fra"])
    assert shlex.split(out) == ["--lang", "deu", "--input", "d/raw x.deu", "--output", "o/bpe x.deu",
                                "--lang", "fra", "--input", "d/raw.fra", "--output", "o/bpe.fra"]
    args = shlex.split(small.flores_languages_arg())
    assert args[0] == "--flores-languages" and args[1:] == [
        lang for lang in small.plan.flores_languages if lang in small.plan.trained_languages]
    without = run_of("config/small.yaml", data_root=DATA)
    without.flores = None  # a config without flores_eval
    assert without.flores_languages_arg() == ""


def test_download_arguments(paper):
    wf = run_of("config/small.yaml")  # downloads; changed below
    tarball, archive = next(iter(wf.plan.sacrebleu_archives.items()))
    assert shlex.split(wf.sacrebleu_urls(tarball)) == ["--url", archive["url"], *(
        x for u in archive["alternatives"] for x in ("--alternative", u))]
    corpus = next(n for n, c in wf.plan.corpora.items() if "download" in c and "sacrebleu" not in c["download"])
    assert wf.archive_sha256_arg(corpus) == ""  # sha256: null
    wf.plan.corpora[corpus]["download"]["sha256"] = "ab cd"
    assert wf.archive_sha256_arg(corpus) == "--sha256 'ab cd'"
    absent = {c["corpus"]: c for c in paper.plan.corpora.values() if c["kind"] == "opus" and c.get("allow_absent_pairs")}
    strict = [c for c in paper.plan.corpora.values() if c["kind"] == "opus" and c["corpus"] not in absent]
    assert absent and strict
    c = next(iter(absent.values()))
    w = W(opus_corpus=c["corpus"], version=c["version"])
    assert paper.opus_absent_ok_arg(w) == f"--absent-ok {paper.opus_pair_url_args(w)}" and "--pair-urls-from" in paper.opus_absent_ok_arg(w)
    assert paper.opus_absent_ok_arg(W(opus_corpus=strict[0]["corpus"], version=strict[0]["version"])) == ""
    b2v = run_of("config/bisent2vec_2019.yaml")
    b2v.evaluation["europarl"]["sha256"] = {"de-en.tgz": "0123"}
    assert b2v.europarl_sha256_arg("de") == "--sha256 0123" and b2v.europarl_sha256_arg("fr") == ""


def test_labse_table2_inputs_and_token_ids(compare):
    inputs = compare.labse_table2_inputs()
    assert list(inputs) == ["tatoeba", "tfidf", "un", "un_tfidf", "records"]
    assert inputs["records"] == [compare.model_record_file(n) for n in compare.labse]
    if compare.labse_tatoeba_languages():
        assert len(inputs["tatoeba"]) == 2 * len(compare.labse) and inputs["tfidf"] == ["results/compare/eval/tfidf/tatoeba.json"]
    tfidf = compare.labse_tfidf_args(SimpleNamespace(tfidf=["t a.json"], un_tfidf=[]))
    assert tfidf == "--tfidf-tatoeba 't a.json'"
    assert compare.labse_tfidf_args(SimpleNamespace(tfidf=[], un_tfidf=["u.json"])) == "--tfidf-un u.json"
    key, first = next(iter(compare.plan.labse_pretrainings.items()))
    data = compare.labse[first]["data"]
    assert compare.labse_token_ids(key) == f"results/compare/nway/{data}/wordpiece_ids/{compare.plan.labse_vocab(first)}"
    data = next(iter(compare.nway))
    files = compare.nway_tok_files(data)
    assert len(files) == 2 * len(compare.nway[data]["languages"]) and files[0].endswith("/tok/train.eng")


def test_nway_data_with_sentencepiece():
    bpe = run_of("tests/toy/compare.yaml", data_root=DATA)
    wf = run_of(["tests/toy/compare.yaml", "tests/toy/overlays/nway_spm.yaml"], data_root=DATA)
    assert bpe.nway_data_of_kind("bpe") == ["toy"] and bpe.nway_data_of_kind("spm") == []
    assert wf.nway_data_of_kind("spm") == ["toy_spm"] and wf.nway_data_of_kind("bpe") == ["toy"]
    assert wf.text_file("c", "cmn", True, "spm") == "results/toy_nway_spm/laser2/c/cmn.lower"
    assert wf.text_file("c", "cmn", False, "bpe") == wf.moses_file("c", "cmn", False) == "results/toy_nway_spm/moses/c/cmn.cased"
    files = wf.nway_raw_inputs(W(data="toy_spm", lang="cmn"))
    assert all("/laser2/" in f for f in files["moses"]) and all("/moses/" in f for f in bpe.nway_raw_inputs(W(data="toy", lang="cmn"))["moses"])
    assert wf.nway_max_words_arg("toy_spm") == "--max-words 50"
    assert wf.nway_spm_args("toy_spm")[0] == "--subword" and wf.nway_spm_args("toy_spm")[2:] == ["--max-words", "50"]
    assert wf.nway_spm_mem_mb("toy_spm") == 8000  # a 2,000-line sample: nway_bpe's floor
    assert wf.model_codes("toy_all") == {"codes": "results/toy_nway_spm/nway/toy_spm/bpe"}
    codes = SimpleNamespace(codes="results/toy_nway_spm/nway/toy_spm/bpe", keys=lambda: ["codes"])
    assert wf.model_codes_arg("toy_all", codes) == "--codes results/toy_nway_spm/nway/toy_spm/bpe/spm.model"
    assert bpe.model_codes_arg("toy_all", codes) == "--codes results/toy_nway_spm/nway/toy_spm/bpe/codes"


def test_ablation_table_metrics(compare):
    table = next(iter(compare.table_ablation))  # Table 5 (depth), seeds 1-3
    rows = [r for r in compare.table_rows(table) if r["metrics"]]
    metrics = compare.table_metrics(table)
    assert metrics[0] == rows[0]["metrics"] and len(metrics) == 3 * len(rows) and len(set(metrics)) == len(metrics)


# ---- models --------------------------------------------------------------------------------------------------
def test_train_settings_of_every_family(compare):
    for name, m in compare.family_models.items():
        settings = compare.model_train_settings(name)
        assert isinstance(settings, dict) and settings, name
    base = compare.model_train_settings(compare.laser_name)
    assert base == compare.train_settings(compare.laser_name) and base["pairs"] and "curves" in base
    records = json.loads(compare.model_records_arg([compare.laser_name, *compare.family_models]))
    assert records[compare.laser_name]["family"] == "laser"
    assert {r["family"] for r in records.values()} == {"laser", "multienc", "labse", "bisent2vec"}
    assert all(r["record"].endswith("/model_record.json") for r in records.values())
    key = next(iter(compare.plan.labse_pretrainings), None)
    if key:
        assert "tokenizer" in json.dumps(compare.labse_pretrain_settings(key))


def test_train_inputs_and_buildable(small):
    inputs = small.train_inputs(W(model="base"))
    assert inputs["dict"] == "results/small/bin/dict.txt" and inputs["bin"] and inputs["valid"]
    assert small.buildable("base") and small.laser_models() == [n for n in small.variants if small.buildable(n)]


def test_how_each_model_reads_raw_text(compare):
    base = compare.laser_name
    assert compare.model_codes(base) == {"codes": f"{compare.run}/bpe/codes"}
    assert compare.model_codes_arg(base, SimpleNamespace(codes="c", keys=lambda: ["codes"])) == "--codes c"
    multienc = next(iter(compare.multienc))
    assert compare.model_codes_arg(multienc, SimpleNamespace(codes="d", keys=lambda: ["codes"])) == "--codes d/codes"
    labse = next(iter(compare.labse))
    assert compare.model_codes(labse) == {} and compare.model_codes_arg(labse, SimpleNamespace(keys=lambda: [])) == ""
    assert compare.eval_lowercase(base) == compare.laser_data["preprocess"]["lowercase"]
    assert compare.eval_max_tokens_arg(base).startswith("--max-tokens ") and compare.eval_max_tokens_arg(labse) == ""


def test_seed_replicates():
    wf = run_of("tests/toy/compare.yaml", data_root=DATA)
    names = list(wf.family_models)
    assert wf.tabled(names) == wf.plan.configured(names)
    assert set(wf.with_replicates(wf.tabled(names))) == set(names)  # every model is a configured one or its replicate
    one = wf.tabled(names)[0]
    specs = wf.seed_replicate_specs(one, lambda r: r)
    assert specs == ({} if len(wf.plan.seed_replicates(one)) == 1 else {"seed_replicates": wf.plan.seed_replicates(one)[1:]})


# ---- tasks ---------------------------------------------------------------------------------------------------
def test_task_languages_of_each_family(toy_compare):
    wf = toy_compare
    base = wf.laser_name
    for task in wf.compared_tasks():
        assert wf.task_languages(task, base) == wf.configured_task_languages(task)
        assert wf.task_score_files(task, base) or not wf.task_languages(task, base)
    for name in wf.family_models:
        for task in wf.compared_tasks():
            langs = wf.task_languages(task, name)
            assert bool(langs) != bool(wf.task_skip_reason(task, name))
    spec = wf.task_models_spec(wf.compared_tasks()[0])
    assert [m["name"] for m in spec] == wf.task_compared_models()
    assert all(set(m) == {"name", "family", "description", "scores", "init", "skipped"} for m in spec)


def test_task_files(toy_compare, small):
    assert small.task_compared_models() == [] and small.compared_tasks() == []
    assert toy_compare.task_tfidf_files("tatoeba") == [f"{toy_compare.run}/eval/tfidf/tatoeba.json"]
    assert toy_compare.task_tfidf_files("bucc") == []
    assert set(toy_compare.variant_scores("base")) >= {"tatoeba"}
    assert toy_compare.labse_tatoeba_languages() == list(toy_compare.evaluation["tatoeba"]["languages"])
    assert set(toy_compare.family_tatoeba_languages()) <= set(toy_compare.plan.tatoeba_languages)
    if "europarl" in toy_compare.evaluation:
        assert toy_compare.europarl_size_args().startswith("--n-keys ")
        assert set(toy_compare.europarl_languages()) <= EUROPARL_LANGUAGES


def test_europarl_languages_refuses_those_without_a_release():
    wf = run_of("config/bisent2vec_2019.yaml", data_root=DATA)
    wf.evaluation["europarl"]["languages"] = ["rus"]
    with pytest.raises(ValueError, match=r"evaluation.europarl.languages: \['rus'\] have no Europarl v7"):
        wf.europarl_languages()


def test_mldoc_files_under_their_configured_directory():
    wf = run_of("config/paper.yaml", data_root=DATA)
    wf.evaluation["mldoc"]["path"] = "{root}/mldoc"
    assert wf.mldoc_file("deu", "test") == f"{DATA}/mldoc/german.test"
    assert wf.mldoc_file("eng", "train") == f"{DATA}/mldoc/english.train.{wf.evaluation['mldoc']['train_size']}"


def test_classifier_inputs(paper):
    xnli = paper.xnli_classify_inputs(W(model="base"))
    assert set(xnli) >= {"train", "dev"} and all(k.startswith(("train", "dev", "test_")) for k in xnli)
    mldoc = paper.mldoc_classify_inputs(W(model="base"))
    assert mldoc["train"][1].endswith("/mldoc/docs/train.eng.tsv")


# ---- tables ----------------------------------------------------------------------------------------------------
def test_compare_columns_group_bisent2vec_by_ngrams(compare):
    columns = compare.compare_columns()
    b2v = [c for c in columns if c.startswith("bisent2vec_")]
    assert set(b2v) <= {"bisent2vec_uni", "bisent2vec_uni_bi"} and b2v
    assert all(c["scores"] for c in columns.values())
    assert columns[compare.laser_name]["family"] == "laser"
    assert columns[compare.laser_name]["description"].startswith("LASER: ")
    # a grouped column names each of its models, once
    for key in b2v:
        named = columns[key]["description"].split(":", 1)[1].split()
        assert len(named) == len(set(named)) == len(columns[key]["scores"])
    # LASER's flores-xsim scores and the others' similarity scores, each column in one of the two
    flores, similarity = compare.compare_scores("flores-xsim"), compare.compare_scores("similarity")
    assert {n for n, _ in flores} == {n for n, c in columns.items() if c["family"] == "laser"}
    assert sorted(p for _, p in flores + similarity) == sorted(p for c in columns.values() for p in c["scores"])


def test_reproduces_claims_and_files(compare):
    claims = compare.reproduces_claims()
    assert claims and all(set(c) == {"claim", "better", "worse"} for c in claims)
    model = claims[0]["better"][0]
    assert model["runs"] and all(r["benchmark"].endswith("/train.tsv") for r in model["runs"])
    assert set(compare.reproduces_models()) >= {r for c in claims for m in c["better"] for r in compare.plan.seed_runs(m["name"]).values()}
    assert all(f.endswith(".json") for f in compare.reproduces_files("scores"))
    assert all(f.endswith(".tsv") for f in compare.reproduces_files("benchmark"))
    assert compare.reproduces_model(model["name"])["family"] == model["family"]


def test_reproduces_a_model_of_another_run(tmp_path, monkeypatch):
    cfg = config.load([REPO / "config/compare.yaml"], {"data_root": DATA})
    cfg["reproduces"] = [{"claim": "laser_subwords", "better": "base", "better_run": "compare_spm", "worse": "base"}]
    wf = WorkflowRun(config.Plan(config.validate(cfg, source="compare")), envs_dir="workflow/envs")
    monkeypatch.chdir(tmp_path)  # no run has built anything here
    (claim, why), = wf.reproduces_absent()
    assert claim == "laser_subwords" and why.startswith("run compare_spm has not built results/compare_spm/flores/base/")
    assert wf.reproduces_claims() == [] and wf.reproduces_files("scores") == [] and wf.reproduces_models() == []
    assert wf.reproduces_absent_args() == ["--absent", "laser_subwords", why]
    other = wf._other_run_files(wf.plan.reproduces[0])
    assert all(f.startswith("results/compare_spm/") for f in other) and len(other) == 3 * 3  # scores, benchmark, record
    for f in other:
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_text("{}")
    assert wf.reproduces_absent() == [] and wf.reproduces_absent_args() == []
    (measured,) = wf.reproduces_claims()
    assert measured["better"][0]["name"] == "base (run compare_spm)" and measured["worse"][0]["name"] == "base"
    assert [r["scores"] for r in measured["better"][0]["runs"]] == [
        f"results/compare_spm/flores/{n}/scores.json" for n in ("base", "base.seed2", "base.seed3")]
    assert wf.reproduces_models() == ["base", "base.seed2", "base.seed3"]  # this run's: their records are checked
    assert wf.reproduces_files("records") == [f for f in other if f.endswith("model_record.json")]
    with pytest.raises(ValueError, match="is not a file of run compare"):
        wf.in_run("results/other/x", "compare_spm")


def test_ablation_table_rows(paper):
    table = next(iter(paper.table_ablation))
    rows = paper.table_rows(table)
    assert rows and all(r["metrics"] or r["note"] for r in rows)
    assert set(paper.table_models(table)) <= set(paper.variants)


def test_bisent2vec_table_inputs(compare):
    name = next(iter(compare.bisent2vec))
    files = compare.bisent2vec_result_files(name)
    assert files["similarity"].endswith("/similarity.json")
    assert "pairs" in compare.bisent2vec_tables()
    models = compare.bisent2vec_table_models()
    assert {m["name"] for m in models} == set(compare.tabled(compare.bisent2vec))
    inputs = compare.bisent2vec_table_inputs(None)
    assert inputs["flores_tfidf"] and all(isinstance(v, list) for v in inputs.values())
    args = compare.bisent2vec_baseline_args(SimpleNamespace(**inputs))
    assert "--tfidf-flores" in args
    # compare.yaml has neither MUSE words nor Europarl: no direction, only the pairs table
    assert compare.bisent2vec_words_directions(name) == [] and compare.europarl_directions(name) == []
    assert compare.bisent2vec_tables() == ["pairs"]
    labse = next(iter(compare.labse))
    assert compare.labse_un() == compare.evaluation.get("un")
    assert set(compare.labse_result_files(labse)) == {"tatoeba", "tatoeba_init", "un", "un_init"}


# ---- targets -------------------------------------------------------------------------------------------------
def test_laser_targets(small):
    tables = small.laser_paper_tables()
    assert tables[:3] == small.table1 and f"{small.tables_dir}/wmt.tex" in tables and len(tables) == 7 * 3
    rules = SimpleNamespace(ablations=SimpleNamespace(input=["abl"]))
    targets = small.laser_targets(rules)
    assert "abl" in targets and f"{small.run}/metrics.json" in targets and f"{small.tables_dir}/flores_xsim.md" in targets
    assert small.flores_targets()[3:] == [f"{small.figures_dir}/curves_base.png"]
    data = small.laser_data_files()
    assert f"{small.run}/bin/dict.txt" in data and set(small.binarized_files()) <= set(data)
    names = ("table1", "table9", "table4", "table2_table8", "table3", "table_wmt", "flores_table", "flores_tfidf")
    rules = SimpleNamespace(**{n: SimpleNamespace(input=[f"in.{n}"]) for n in names})
    assert small.laser_evaluation(rules) == [f"{small.run}/metrics.json", *[f"in.{n}" for n in names]]


def test_family_targets(compare, small):
    assert small.families() == [] and small.family_targets() == [] and small.family_data() == []
    assert compare.families() == ["multienc", "labse", "bisent2vec"]
    assert f"{compare.multienc_tables_dir}/table1.md" in compare.family_targets("multienc")
    assert f"{compare.labse_tables_dir}/table2.csv" in compare.family_targets("labse")
    assert f"{compare.bisent2vec_tables_dir}/pairs.md" in compare.family_targets("bisent2vec")
    assert not any("labse_2020" in p for p in compare.family_targets("multienc"))
    # every configured model's learning curves, no seed replicate's
    curves = [p for p in compare.family_targets() if "/curves_" in p]
    assert curves == [compare.curves_figure(n) for f in compare.families() for n in compare.tabled(compare.models_of(f))]
    assert set(compare.family_targets()) == {p for f in compare.families() for p in compare.family_targets(f)}
    files = compare.family_evaluation()
    assert len(files) == len(set(files)) and all(f.startswith(compare.run) for f in files)
    data = compare.family_data()
    assert f"{compare.run}/nway/news5/bpe" in data and any(p.endswith("/tokenizer.json") for p in data)
    assert any("/bisent2vec_vocab/" in p for p in data) and len(data) == len(set(data))


def test_family_of_and_models_of(compare):
    assert compare.plan.family("base") == "laser" and compare.declaration_of("base").heldout == "flores-xsim"
    for family in compare.families():
        models = compare.models_of(family)
        assert models and all(compare.plan.family(n) == family for n in models)
    assert sum(len(compare.models_of(f)) for f in compare.families()) == len(compare.family_models)


# ---- shell commands -----------------------------------------------------------------------------------------------
def test_logged_records_in_process(small):
    cmd = small.logged("laser-repro bpe-dict --vocab {input:q}", keys=[*small.laser_keys("bpe.merges"), "nope.x"])
    merges = small.cfg["bitext_data"]["news"]["bpe"]["merges"]
    assert isinstance(cmd, RecordedCommand) and cmd.settings == {"bitext_data.news.bpe.merges": merges, "nope.x": None}
    assert cmd.startswith("laser-repro --provenance-spec {params.provenance_spec:q} bpe-dict") and cmd.endswith("> {log:q} 2>&1")
    with pytest.raises(ValueError, match="one `laser-repro SUBCOMMAND"):
        small.logged("(laser-repro a && laser-repro b)")
    with pytest.raises(ValueError, match="one `laser-repro SUBCOMMAND"):
        small.logged("rm x")
    assert small.config_value("bitext_data.news.bpe.merges") == merges and small.config_value("bpe.merges") is None


def test_laser_settings_by_their_keys_in_the_config(small, compare):
    """The LASER stages read the config in its one shape: the base model's entry and its bitext_data entry."""
    assert small.laser_model is small.cfg["models"]["base"] or small.laser_model == small.cfg["models"]["base"]
    assert small.laser_data == small.cfg["bitext_data"]["news"]
    assert small.laser_keys("preprocess.lowercase", "embed.max_tokens", "targets") == [
        "bitext_data.news.preprocess.lowercase", "models.base.embed.max_tokens", "bitext_data.news.targets"]
    assert all(small.config_value(k) is not None for k in small.laser_keys("preprocess.lowercase", "embed.max_tokens"))
    assert compare.laser_model_keys() == [f"models.{n}" for n in compare.plan.laser_models]
    assert compare.laser_model_keys() and all(compare.config_value(k)["family"] == "laser"
                                                          for k in compare.laser_model_keys())
    # no LASER model: nothing to read; the keys name the sections (their values None)
    labse_only = run_of("config/labse_small.yaml", data_root=DATA)
    assert labse_only.laser_model == {} and labse_only.laser_data == {} and labse_only.laser_model_keys() == []
    assert small.shell_quote_json({"a": "b c"}) == "'{\"a\": \"b c\"}'"


def test_name_recorded_rules_gives_each_recorded_rule_its_spec(small):
    set_params = {}
    recorded = SimpleNamespace(name="r", shellcmd=small.logged("laser-repro x"), params={}, benchmark=None,
                               set_params=lambda **kw: set_params.update(kw))
    other = SimpleNamespace(name="o", shellcmd=None, set_params=lambda **kw: pytest.fail("a rule without a command"))
    WorkflowRun.name_recorded_rules([recorded, other])
    assert callable(set_params["provenance_spec"])


# ---- every method is exercised above (from_snakemake: by every toy workflow run, which builds the run from
# Snakemake's own objects) --------------------------------------------------------------------------
def test_every_method_of_the_run_is_tested():
    text = Path(__file__).read_text(encoding="utf-8")
    public = {n for n in dir(WorkflowRun) if not n.startswith("_")} - {"from_snakemake"}
    assert sorted(n for n in public if f".{n}" not in text) == []


def test_table_model_specs(compare):
    """The --models of the family tables and the FLORES comparison: one spec per configured model (column),
    the seed replicates' files inside it."""
    multienc = compare.multienc_table_models()
    assert [m["name"] for m in multienc] == compare.tabled(compare.multienc)
    assert all(m["paper_rows"] and len(m.get("seed_replicates", [])) == len(compare.plan.seeds) - 1 for m in multienc)
    labse = compare.labse_table_models()
    assert [m["name"] for m in labse] == compare.tabled(compare.labse) and all("pretrained" in m for m in labse)
    models = compare.compare_models()
    assert [m["name"] for m in models] == list(compare.compare_columns())
    assert {m["family"] for m in models} == {"laser", "multienc", "labse", "bisent2vec"}


# ---- contamination: the training text and test sets of the table's job -------------------------------------
def test_contamination_training_text_and_test_sets(small, small_download, compare, tmp_path, monkeypatch):
    """LASER: each language's pair files and their Moses shards; an nway_data entry: its corpus files without
    the held-out lines and its Moses lines; the run's test files, an N-way entry's validation lines its own."""
    assert small.contamination_targets() == [f"{small.tables_dir}/contamination.{ext}" for ext in ("md", "csv", "tex")]
    (laser,) = small.contamination_training()
    assert laser["data"] == "bitext_data.news" and laser["models"] == ["base"] and laser["entry"] == small.laser_data
    assert "corpora/<corpus>/<src>-<tgt>.<lang>" in laser["text"] and "tok/<corpus>" in laser["normalised_text"]
    assert set(laser["languages"]) == small.plan.trained_languages
    rus = laser["languages"]["rus"]
    assert {"files": ["results/small/corpora/flores200_dev/rus-eng.rus"], "skip": None} in rus["exact"]
    assert {"files": small.tok_shards("flores200_dev", "rus", "eng", "rus"), "skip": None} in rus["normalised"]
    assert len(rus["exact"]) == len(rus["normalised"]) == sum("rus" in (b.src, b.tgt) for b in small.plan.bitexts)
    # data_root /data holds no WMT, BUCC or XNLI files: Tatoeba (both sides) and held-out FLORES only
    sets = small.contamination_test_sets()
    assert {s["set"] for s in sets} == {"tatoeba", "flores_eval"} and all(s["data"] is None for s in sets)
    assert sets[:2] == [{"set": "tatoeba", "label": "Tatoeba v1", "part": "spa-eng", "language": lang, "data": None,
                         "file": f"{DATA}/tatoeba-v1/tatoeba.spa-eng.{lang}"} for lang in ("spa", "eng")]
    assert {"wmt", "bucc", "xnli", "mldoc"} <= set(small.contamination_absent())
    assert [s["file"] for s in small_download.contamination_test_sets() if s["set"] == "wmt"] == [
        f"results/small/eval/wmt/text/wmt12.{x}.txt" for x in ("eng", "ces", "fra", "deu", "spa")]
    inputs = small.contamination_inputs()
    assert len(inputs["train"]) == len(set(inputs["train"])) == 4 * len(small.plan.bitexts)
    assert inputs["tests"] == [s["file"] for s in sets]
    assert small.contamination_config_keys() == ["bitext_data.news", "flores_eval", "evaluation"]
    # an nway_data entry (config/compare.yaml): the first 797 + the rest after the held-out lines, its validation set
    nway = next(t for t in compare.contamination_training() if t["data"] == "nway_data.news5")
    (exact,) = nway["languages"]["deu"]["exact"]
    assert exact["skip"] == [797, 997] and exact["files"][0].endswith("deu_Latn.dev") and len(exact["files"]) == 7
    assert nway["languages"]["deu"]["normalised"] == [{"files": ["results/compare/nway/news5/tok/train.deu"], "skip": None}]
    assert set(nway["models"]) == {n for n, m in compare.plan.family_entries.items() if m["data"] == "news5"}
    valid = [s for s in compare.contamination_test_sets() if s["set"] == "nway_valid"]
    assert valid and all(s["data"] == "nway_data.news5" and s["file"].endswith(f"raw/valid.{s['language']}") for s in valid)
    # what the rule file asks when it is read resolves no corpus path (the toy compare config has no download)
    toy = run_of("tests/toy/compare.yaml")
    assert toy.contamination_targets() == [f"{toy.tables_dir}/contamination.{ext}" for ext in ("md", "csv", "tex")]
    assert toy.contamination_config_keys() == ["bitext_data.toy", "nway_data.toy", "flores_eval", "evaluation"]
    # the spec is a content-addressed file; the request: 2 GB and 15 min until the files exist
    monkeypatch.chdir(tmp_path)
    spec = json.loads(Path(small.contamination_spec()).read_text())
    assert spec["run"] == "small" and spec["training"] == json.loads(json.dumps(small.contamination_training()))
    assert small.contamination_resources() == {"mem_mb": 2000, "runtime": 15}
    for f in inputs["train"]:
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_bytes(b"x" * 1000)
    assert small.contamination_resources() == {"mem_mb": 1000, "runtime": 5}
