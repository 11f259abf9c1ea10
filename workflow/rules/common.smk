# Shared paths and input functions. The run plan (bitexts, pairs) comes from laser_repro.config.
import functools
import os
import shlex
import sys

from laser_repro import config as run_config
from laser_repro.config.plan import corpus_bitexts, corpus_code, local_languages, sacrebleu_langpair
from laser_repro.core import languages
from laser_repro.provenance import spec_files
from laser_repro.reporting.ablation import TABLES as ABLATION_TABLES
from laser_repro.reporting.seeds import REPLICATES as SEED_REPLICATES
from laser_repro.evaluation import bucc, europarl
from laser_repro.data import bpe, corpora

# Rules call the package's `laser-repro` command: put the environment running Snakemake first on
# PATH so jobs find it even when that environment is not activated (e.g. `.venv/bin/snakemake`).
os.environ["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
PLAN = run_config.Plan(run_config.validate_snakemake(workflow, config))
CFG = PLAN.config
RUN = f"results/{CFG['run_name']}"
TABLE1 = [f"results/tables/{CFG['run_name']}/table1.md", f"results/tables/{CFG['run_name']}/table1.csv"]
DATA_ROOT = CFG.get("data_root")
LASER = PLAN.laser  # the config has a model of family laser (its data: the bitext_data entry it names)
LASER_NAME = PLAN.laser_name  # that model (its base variant), results/<run>/models/<name>/


def alternatives(names):
    """A wildcard regex matching exactly these names (none: nothing)."""
    import re

    return "|".join(re.escape(n) for n in names) or "(?!x)x"


wildcard_constraints:
    run=CFG["run_name"],
    src="[a-z]{3}",
    tgt="[a-z]{3}",
    lang="[a-z]{3}",
    side="[a-z]{3}",
    corpus="[A-Za-z0-9_-]+",
    k="[0-9]+",
    n="[0-9]+",
    variant=alternatives(PLAN.variants),


# N-way corpora (line i the same sentence in every language file): each language file is Moses-preprocessed
# once (rule moses_lines), for every pair LASER extracts from it and every nway_data entry that reads it.
NWAY_CORPORA = [n for n, c in PLAN.corpora.items() if c.get("layout") == "nway"]
PAIR_CORPORA = [n for n in PLAN.corpora if n not in NWAY_CORPORA]  # OPUS, local bitexts: Moses per pair shard


def moses_file(corpus, lang, lowercase):
    """An N-way corpus's language file, Moses-preprocessed (rule moses_lines)."""
    return f"{RUN}/moses/{corpus}/{lang}.{'lower' if lowercase else 'cased'}"


def shards_of(corpus):
    """A bitext's Moses shards (one for an N-way corpus: its pairs take the lines of moses_lines)."""
    if corpus in NWAY_CORPORA:
        return 1
    return PLAN.corpora[corpus].get("shards") or CFG["preprocess"]["shards"]


def tok_shards(corpus, src, tgt, lang):
    n = shards_of(corpus)
    return [f"{RUN}/tok/{corpus}/{src}-{tgt}.{lang}.{k:03d}-of-{n:03d}" for k in range(n)]


def all_tok_shards(wildcards=None):
    return [p for b in PLAN.bitexts for lang in (b.src, b.tgt) for p in tok_shards(b.corpus, b.src, b.tgt, lang)]


def pair_tok_shards(wildcards, lang=None):
    """Tokenized shards of every corpus of one (src, tgt) direction, one side (default wildcards.lang), in config order."""
    return [p for b in PLAN.bitexts_of_pair(wildcards.src, wildcards.tgt)
            for p in tok_shards(b.corpus, b.src, b.tgt, lang or wildcards.lang)]


def bpe_apply_inputs(w):
    files = {"codes": f"{RUN}/bpe/codes", "shards": pair_tok_shards(w)}
    if CFG["preprocess"]["dedup_pairs"]:
        files["keep"] = f"{RUN}/bpe/keep/{w.src}-{w.tgt}.npy"
    return files


# ---- other model families: N-way data, multienc models, the comparison ---------------------------------
NWAY = PLAN.nway_data
MULTIENC = PLAN.multienc
MULTIENC_TABLES = f"results/tables/{CFG['run_name']}/schwenk_douze_2017"
LABSE = PLAN.labse
LABSE_TABLES = f"results/tables/{CFG['run_name']}/labse_2020"
BISENT2VEC = PLAN.bisent2vec
BISENT2VEC_TABLES = f"results/tables/{CFG['run_name']}/bisent2vec_2019"
FAMILY_MODELS = PLAN.models  # every model of `models` (families other than LASER), seed replicates included


def tabled(models):
    """The models a table has a row or column for: those of the config, not their seed replicates (config
    `seeds`), which the table's cells average over."""
    return PLAN.configured(models)


def with_replicates(names):
    """Models and their seed replicates (what a table reads and checks the records of)."""
    return [r for name in names for r in PLAN.seed_replicates(name)]


def seed_replicate_specs(name, spec_of):
    """{seed_replicates: [spec_of(replicate) for each further seed]} of a table's model spec; {} with one seed."""
    replicates = PLAN.seed_replicates(name)[1:]
    return {SEED_REPLICATES: [spec_of(r) for r in replicates]} if replicates else {}


# ---- GPUs of the training jobs: the count from the config, the layout from the site --------------------
# The profile's global resources site_gpus_per_node / site_cpus_per_gpu describe the site's GPU nodes
# (profiles/slurm); without them (a local run) every job is one node. laser_repro.core.slurm says why
# the layout is --nodes=1 --gpus=N, or --nodes / --ntasks-per-node / --gres, and never --ntasks-per-gpu.
from laser_repro.core import slurm as slurm_layout

SITE_GPUS_PER_NODE, SITE_CPUS_PER_GPU = slurm_layout.site_geometry(getattr(workflow, "global_resources", None))


def gpu_resources(gpus, where):
    """The SLURM layout of a training job on `gpus` GPUs ({} for 0: a CPU job)."""
    return slurm_layout.gpu_job_resources(gpus, gpus_per_node=SITE_GPUS_PER_NODE, cpus_per_gpu=SITE_CPUS_PER_GPU,
                                          where=where)


def one_node_gpu_layout(gpus, where, key, threads):
    """`key` of the one-node SLURM layout of a per-model training job (multienc, LaBSE) on `gpus` GPUs
    (`where`: its config key). Several nodes are LASER's only (fairseq's srun workers); a model asking for
    more GPUs than a node has is an error naming its key."""
    layout = gpu_resources(gpus, where)
    if layout.get("mpi"):
        raise ValueError(f"{where}: {gpus} GPUs exceed one node ({SITE_GPUS_PER_NODE} GPUs): this family "
                         f"trains on one node")
    return layout.get(key, {"nodes": 1, "gpu": 0, "cpus_per_task": threads}[key])


def one_node_gpu_resource(gpus_of, key):
    """A resource callable of a per-model training rule: `key` of its one-node layout; `gpus_of(wildcards)`
    -> (GPUs, config key)."""
    return lambda wildcards, threads: one_node_gpu_layout(*gpus_of(wildcards), key, threads)


# ---- conda environments (--sdm conda): the CPU one, or for jobs given GPUs the config's `cuda` build --------
from snakemake.settings.types import DeploymentMethod
from laser_repro.core import cuda_builds

SDM_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


# conda_env(gpus, where): the conda file of a job given `gpus` GPUs (`where`: the config key saying so)
ENVS_DIR = os.path.join(workflow.basedir, "envs")
conda_env = functools.partial(cuda_builds.conda_env_path, ENVS_DIR, SDM_CONDA, CFG.get("cuda"))
def labse_pretrain_gpus(w):
    name = PLAN.labse_pretrainings[w.pretraining]
    return LABSE[name]["pretrain"]["gpus"], f"models.{name}.pretrain.gpus"


def labse_train_gpus(w):
    return LABSE[w.model]["train"]["gpus"], f"models.{w.model}.train.gpus"
EVAL = CFG.get("evaluation", {})


def nway_corpora(data):
    """The corpora of an nway_data entry, in order (one, or the parts of a pair's corpus)."""
    return [data["corpus"]] if isinstance(data["corpus"], str) else list(data["corpus"])


def nway_raw_inputs(w):
    """The language's file of the N-way training corpus and, with a separate validation corpus, its file there."""
    d = NWAY[w.data]
    files = {"raw": [local_corpus_file(c, w.lang) for c in nway_corpora(d)],
             "moses": [moses_file(c, w.lang, d["lowercase"]) for c in nway_corpora(d)]}
    if "corpus" in d["valid"]:
        files["valid_raw"] = local_corpus_file(d["valid"]["corpus"], w.lang)
        files["valid_moses"] = moses_file(d["valid"]["corpus"], w.lang, d["lowercase"])
    else:  # held-out lines: every language's file is compared first, a short one named with every count
        files["aligned"] = [local_corpus_file(c, other) for other in d["languages"] if other != w.lang
                            for c in nway_corpora(d)]
    return files


def nway_valid_args(w, input):
    d = NWAY[w.data]
    if "corpus" in d["valid"]:
        return f"--valid-raw {shlex.quote(input.valid_raw)} --valid-moses {shlex.quote(input.valid_moses)}"
    start, stop = d["valid"]["heldout_lines"]
    aligned = "".join(f" --aligned-with {shlex.quote(other)} "
                      + " ".join(shlex.quote(local_corpus_file(c, other)) for c in nway_corpora(d))
                      for other in d["languages"] if other != w.lang)
    return f"--heldout {int(start)} {int(stop)}{aligned}"


def multienc_targets():
    """What the main command builds for the multienc models: paper 004's Tables 1-4 and the learning curves."""
    if not MULTIENC:
        return []
    return [*expand(f"{MULTIENC_TABLES}/table{{n}}.{{ext}}", n=[1, 2, 3, 4], ext=["md", "csv"]),
            *[f"results/figures/{CFG['run_name']}/curves_{name}.png" for name in tabled(MULTIENC)]]


def model_text_dir(w):
    """A model's input text of its N-way data: BPE'd (multienc), Moses-preprocessed (labse: its vocabulary
    is applied by the encoder; bisent2vec: words)."""
    m = FAMILY_MODELS[w.model]
    return f"{RUN}/nway/{m['data']}/" + ("bpe" if m["family"] == "multienc" else "tok")


def model_valid_text(w):
    """The files of model_text_dir that the similarity error reads (the bpe directory is one output)."""
    if FAMILY_MODELS[w.model]["family"] != "multienc":
        return [f"{model_text_dir(w)}/valid.{lang}" for lang in PLAN.encoder_languages(w.model)]
    return [model_text_dir(w)]


def labse_tokenizer(name):
    m = LABSE[name]
    return f"{RUN}/nway/{m['data']}/wordpiece/{PLAN.labse_vocab(name)}/tokenizer.json"


def labse_text(data):
    """The Moses-preprocessed training and validation lines of an N-way data set."""
    return [f"{RUN}/nway/{data}/tok/{split}.{lang}" for lang in NWAY[data]["languages"] for split in ("train", "valid")]


def labse_pretrained(name):
    """The pre-training checkpoint a LaBSE model starts from ([] when it trains from scratch)."""
    key = PLAN.labse_pretraining(name)
    return [f"{RUN}/labse_pretrain/{key}/checkpoint_final.pt"] if key else []


def labse_pretrain_settings(key):
    """``--settings`` of a shared LaBSE pre-training (MLM + TLM), from the first model that uses it."""
    name = PLAN.labse_pretrainings[key]
    return PLAN.labse_settings(name, "pretrain", tokenizer=labse_tokenizer(name))


def model_train_settings(name):
    """``laser-repro train --settings`` of any model: a LASER variant or a model of `models`. A function of
    the config alone (no rule's `input`): the train rules pass it as a wildcards-only param, which Snakemake
    records and compares on a rerun (a changed setting retrains), and the tables check each model's own
    record against it (model_record_settings)."""
    if LASER and name in VARIANTS:
        return train_settings(name)
    family = FAMILY_MODELS[name]["family"]
    if family == "multienc":
        return PLAN.multienc_settings(name)
    if family == "labse":
        pretrained = labse_pretrained(name)
        return PLAN.labse_settings(name, "dual", tokenizer=labse_tokenizer(name),
                                   init_checkpoint=pretrained[0] if pretrained else None)
    if family == "bisent2vec":
        return PLAN.bisent2vec_settings(name, vocab=bisent2vec_vocab_file(name))
    raise ValueError(f"model {name!r}: no training settings for family {family!r}")


def model_record_file(name):
    """A trained model's own record (laser-repro train --record): what it was trained with."""
    return f"{RUN}/models/{name}/model_record.json"


def model_records_arg(names):
    """A table's --model-records as JSON, quoted where used: each model's record and the settings the config
    gives it now, which the table checks against each other (laser_repro.models.record). A wildcards-only
    param: recorded by Snakemake, so a changed setting also reruns the table."""
    import json

    names = sorted(set(names))
    return json.dumps({n: {"family": "laser" if LASER and n in VARIANTS else FAMILY_MODELS[n]["family"],
                           "record": model_record_file(n), "settings": model_train_settings(n)} for n in names},
                      sort_keys=True)


def labse_tatoeba_languages():
    return list(CFG.get("evaluation", {}).get("tatoeba", {}).get("languages", [])) if LABSE else []


def family_tatoeba_languages():
    """The Tatoeba languages of the TF-IDF baseline beside the models of `models` (tatoeba_tfidf): those any
    of them is scored on; every configured one when the Tatoeba comparison table has them all (LASER's)."""
    if "tatoeba" in compared_tasks():
        return list(PLAN.tatoeba_languages)
    langs = {lang for name in FAMILY_MODELS for lang in PLAN.model_tatoeba_languages(name)}
    return [lang for lang in PLAN.tatoeba_languages if lang in langs]


def bisent2vec_text(name):
    """The Moses-tokenised training and validation lines of a Bi-Sent2Vec model's pair."""
    m = BISENT2VEC[name]
    return [f"{RUN}/nway/{m['data']}/tok/{split}.{lang}" for lang in m["pair"] for split in ("train", "valid")]


def bisent2vec_vocab_file(name):
    return f"{RUN}/nway/{BISENT2VEC[name]['data']}/bisent2vec_vocab/{PLAN.bisent2vec_vocab(name)}.json"


def iso1(lang):
    return languages.get(lang).paper


def eval_mirror_args(url):
    """fetch's options for an evaluation download from `evaluation.mirror`, which holds <host>/<path>:
    scheme://host is mapped onto <mirror>/<host> ("" without a mirror)."""
    if not EVAL.get("mirror"):
        return ""
    scheme, rest = url.split("://", 1)
    host = rest.split("/", 1)[0]
    return shlex.join(["--base-url", f"{scheme}://{host}", "--mirror", f"{EVAL['mirror'].rstrip('/')}/{host}"])


def muse_dictionary(src, tgt):
    """The MUSE test dictionary of a direction (ISO 639-3 codes): under data_root, or downloaded."""
    s, t = iso1(src), iso1(tgt)
    if DATA_ROOT:
        return raw(EVAL["muse_words"]["path"].format(root=DATA_ROOT, src=s, tgt=t),
                   EVAL["muse_words"]["url"].format(src=s, tgt=t))
    return f"resources/muse/dictionaries/{s}-{t}.5000-6500.txt"


def europarl_file(src, tgt, side):
    """The Europarl v7 file of ``side`` for the pair of src and tgt (one is English): the xx-en release."""
    xx = iso1(tgt if src == "eng" else src)
    s = iso1(side)
    if DATA_ROOT:
        e = EVAL["europarl"]
        return raw(e["path"].format(root=DATA_ROOT, xx=xx, side=s),
                   f"{e['url'].format(xx=xx)}#{e['member'].format(xx=xx, side=s)}")
    return f"resources/europarl/europarl-v7.{xx}-en.{s}"


#: languages with a Europarl v7 xx-en release (no Russian, no Chinese: the paper's Table 3 has no en-ru)
EUROPARL_LANGUAGES = frozenset(europarl.EUROPARL_LANGUAGES)


def bisent2vec_words_directions(name):
    return PLAN.bisent2vec_directions(name) if "muse_words" in EVAL else []


def europarl_languages():
    """The xx of the Europarl task (each with English): the configured ones, or every Europarl v7 language."""
    langs = EVAL["europarl"].get("languages")
    if langs is None:
        return sorted(EUROPARL_LANGUAGES)
    unknown = [lang for lang in langs if lang not in EUROPARL_LANGUAGES]
    if unknown:
        raise ValueError(f"evaluation.europarl.languages: {unknown} have no Europarl v7 xx-en release (the "
                         f"languages: {', '.join(sorted(EUROPARL_LANGUAGES))})")
    return list(langs)


def europarl_size_args():
    """europarl-retrieval's sizes and seed (quoted): MUSE's protocol as configured."""
    e = EVAL["europarl"]
    return shlex.join(str(x) for x in ("--n-keys", e["n_keys"], "--n-queries", e["n_queries"], "--n-idf", e["n_idf"],
                                       "--seed", e["seed"]))


def europarl_directions(name):
    """The Europarl directions a model (any family) is scored on: (eng, xx) and (xx, eng) for each xx of
    the task that it embeds with English (a Bi-Sent2Vec model: its pair's)."""
    if "europarl" not in EVAL:
        return []
    return [d for xx in task_languages("europarl", name) for d in (("eng", xx), (xx, "eng"))]


def bisent2vec_tables():
    """The tables of paper 002 this run writes: Tables 1, 3, 4 with their tasks, the pairs table always."""
    with_results = any(bisent2vec_words_directions(n) or europarl_directions(n) for n in BISENT2VEC)
    return [*(["table1", "table3", "table4"] if with_results else []), "pairs"]


def _direction_files(name, kind, directions, encoder):
    return {f"{s}-{t}": f"{RUN}/eval/models/{name}/{kind}_{s}-{t}_{encoder}.json" for s, t in directions}


def bisent2vec_result_files(name):
    """A Bi-Sent2Vec model's result files in the tables' model spec."""
    words, sentences = bisent2vec_words_directions(name), europarl_directions(name)
    tatoeba = bool(PLAN.model_tatoeba_languages(name))
    return {"words": _direction_files(name, "words", words, "encoder"),
            "words_init": _direction_files(name, "words", words, "encoder_init"),
            "sentences": _direction_files(name, "europarl", sentences, "encoder"),
            "sentences_init": _direction_files(name, "europarl", sentences, "encoder_init"),
            "similarity": f"{RUN}/eval/models/{name}/similarity.json",
            "tatoeba": f"{RUN}/eval/models/{name}/tatoeba_encoder.json" if tatoeba else None,
            "tatoeba_init": f"{RUN}/eval/models/{name}/tatoeba_encoder_init.json" if tatoeba else None}


def bisent2vec_table_models():
    """The models argument of bisent2vec-tables (every result file by model and direction, and by seed)."""
    out = []
    for name in tabled(BISENT2VEC):
        m = BISENT2VEC[name]
        out.append({"name": name, "description": m.get("description", name), "pair": list(m["pair"]),
                    "ngrams": int(m["model"]["ngrams"]), **bisent2vec_result_files(name),
                    **seed_replicate_specs(name, bisent2vec_result_files)})
    return out


def europarl_tfidf_file(src, tgt):
    return f"{RUN}/eval/tfidf/europarl_{src}-{tgt}.json"


def _baselines():
    """direction -> identical-strings file, direction -> Europarl TF-IDF file: those written beside the
    direction's first model (the baselines do not depend on the model, only on its vocabulary and data)."""
    identical, tfidf = {}, {}
    for name in BISENT2VEC:
        for s, t in bisent2vec_words_directions(name):
            identical.setdefault(f"{s}-{t}", f"{RUN}/eval/models/{name}/words_{s}-{t}_identical.json")
        for s, t in europarl_directions(name):
            tfidf.setdefault(f"{s}-{t}", europarl_tfidf_file(s, t))
    return identical, tfidf


def bisent2vec_table_inputs(w):
    models = [bisent2vec_result_files(name) for name in BISENT2VEC]  # seed replicates included
    files = [p for m in models for key in ("words", "words_init", "sentences", "sentences_init") for p in m[key].values()]
    files += [m[key] for m in models for key in ("similarity", "tatoeba", "tatoeba_init") if m[key]]
    identical, tfidf = _baselines()
    datas = sorted({m["data"] for m in BISENT2VEC.values()})
    return {"results": files, "identical": list(identical.values()), "europarl_tfidf": list(tfidf.values()),
            "flores_tfidf": [f"{RUN}/eval/nway/{d}/tfidf.json" for d in datas],
            "tatoeba_tfidf": [f"{RUN}/eval/tfidf/tatoeba.json"] if family_tatoeba_languages() else []}


def bisent2vec_baseline_args(input):
    identical, tfidf = _baselines()
    args = [f"--identical-strings {shlex.quote(f'{d}={p}')}" for d, p in identical.items()]
    args += [f"--tfidf {shlex.quote(f'{d}={p}')}" for d, p in tfidf.items()]
    args += [f"--tfidf-flores {shlex.quote(p)}" for p in input.flores_tfidf[:1]]
    args += [f"--tfidf-tatoeba {shlex.quote(p)}" for p in input.tatoeba_tfidf]
    return " ".join(args)


def bisent2vec_targets():
    """What the main command builds for the Bi-Sent2Vec models: paper 002's tables and the learning curves."""
    if not BISENT2VEC:
        return []
    return [*[f"{BISENT2VEC_TABLES}/{t}.{ext}" for t in bisent2vec_tables() for ext in ("md", "csv")],
            *[f"results/figures/{CFG['run_name']}/curves_{name}.png" for name in tabled(BISENT2VEC)]]


def labse_un():
    """evaluation.un of the LaBSE models (None: not evaluated)."""
    return CFG.get("evaluation", {}).get("un") if LABSE else None


def labse_result_files(name):
    """A LaBSE model's result files in labse-table2's model spec."""
    return {"tatoeba": f"{RUN}/eval/models/{name}/tatoeba_encoder.json" if labse_tatoeba_languages() else None,
            "tatoeba_init": f"{RUN}/eval/models/{name}/tatoeba_encoder_init.json" if labse_tatoeba_languages() else None,
            "un": f"{RUN}/eval/models/{name}/un_encoder.json" if labse_un() else None,
            "un_init": f"{RUN}/eval/models/{name}/un_encoder_init.json" if labse_un() else None}


def labse_targets():
    """What the main command builds for the LaBSE models: paper 003's Table 2 and the learning curves."""
    if not LABSE:
        return []
    return [*expand(f"{LABSE_TABLES}/table2.{{ext}}", ext=["md", "csv"]),
            *[f"results/figures/{CFG['run_name']}/curves_{name}.png" for name in tabled(LABSE)]]


def family_evaluation():
    """Every score and baseline file of the models of the other families (the `evaluate` target, so that the
    tables stage writes nothing but tables): similarity, the curves' TF-IDF, what their paper tables read."""
    files = [f"{RUN}/eval/models/{name}/similarity.json" for name in FAMILY_MODELS]
    files += sorted({f"{RUN}/eval/nway/{m['data']}/tfidf.json" for m in FAMILY_MODELS.values()})
    files += [p for name in LABSE for p in labse_result_files(name).values() if p]
    files += [f"{RUN}/eval/tfidf/tatoeba.json"] if labse_tatoeba_languages() else []
    files += [f"{RUN}/eval/tfidf/un.json"] if labse_un() else []
    if BISENT2VEC:
        files += [p for paths in bisent2vec_table_inputs(None).values() for p in paths]
    return list(dict.fromkeys(files))


def heldout_scores_file(trained, family):
    """The held-out FLORES scores of a trained model (a seed replicate too): a LASER variant's flores-xsim
    scores, another family's similarity scores on its nway_data validation lines."""
    return f"{RUN}/flores/{trained}/scores.json" if family == "laser" else f"{RUN}/eval/models/{trained}/similarity.json"


def train_benchmark(trained):
    """The Snakemake benchmark of a model's training job (laser_train, multienc_train, labse_train, bisent2vec_train)."""
    return f"{RUN}/benchmarks/{trained}/train.tsv"


def compare_columns():
    """The columns of the FLORES comparison, in order: column name -> {"family", "description", "scores": [files]}.
    One column per model; the Bi-Sent2Vec models, one per en-xx pair, are one column per n-gram setting (the
    paper reports a pair's numbers with that pair's model)."""
    out = {}
    for name, f in PLAN.compared_models.items():
        # the score files of each seed (config `seeds`), this model's first
        by_seed = [heldout_scores_file(r, f) for r in PLAN.seed_replicates(name)]
        if f == "laser":
            column = out[name] = {"family": f, "description": f"LASER: {PLAN.laser_description(name)}", "scores": []}
        elif f == "bisent2vec":
            ngrams = FAMILY_MODELS[name]["model"]["ngrams"]
            label = "uni." if ngrams == 1 else "uni. + bi."
            column = out.setdefault(f"bisent2vec_{'uni' if ngrams == 1 else 'uni_bi'}", {
                "family": f, "description": f"Bi-Sent2Vec {label}, one model per en-xx pair:", "scores": []})
            column["description"] += f" {name}"
        else:
            column = out[name] = {"family": f, "description": FAMILY_MODELS[name].get("description", name),
                                  "scores": []}
        column["scores"].append(by_seed[0])
        for k, path in enumerate(by_seed[1:]):
            replicates = column.setdefault(SEED_REPLICATES, [])
            if len(replicates) <= k:
                replicates.append({"scores": []})
            replicates[k]["scores"].append(path)
    return out


def reproduces_model(name):
    """A model of a claim for --claims: its score and training benchmark files per seed, and its LaBSE
    pre-training's benchmark (shared by the seeds)."""
    family = PLAN.family(name)
    pretraining = PLAN.labse_pretraining(name) if family == "labse" else None
    return {"name": name, "family": family,
            "runs": [{"seed": seed, "scores": heldout_scores_file(trained, family), "benchmark": train_benchmark(trained)}
                     for seed, trained in PLAN.seed_runs(name).items()],
            "pretraining": pretraining and {"id": pretraining,
                                            "benchmark": f"{RUN}/benchmarks/labse_pretrain/{pretraining}.tsv"}}


def reproduces_claims():
    return [{"claim": c["claim"], "better": [reproduces_model(n) for n in c["better"]],
             "worse": [reproduces_model(n) for n in c["worse"]]} for c in PLAN.reproduces]


def reproduces_models():
    """Every trained model of the claims (seed replicates included)."""
    return list(dict.fromkeys(trained for c in PLAN.reproduces for key in ("better", "worse") for name in c[key]
                              for trained in PLAN.seed_runs(name).values()))


def reproduces_files(kind):
    """The "scores" or "benchmark" files of the claims' models (pre-trainings' benchmarks too)."""
    models = [m for c in reproduces_claims() for key in ("better", "worse") for m in c[key]]
    files = [r[kind] for m in models for r in m["runs"]]
    if kind == "benchmark":
        files += [m["pretraining"]["benchmark"] for m in models if m["pretraining"]]
    return list(dict.fromkeys(files))


def shell_quote_json(data):
    """JSON for one shell argument."""
    import json
    import shlex

    return shlex.quote(json.dumps(data, sort_keys=True))


def config_value(key):
    """A dotted config key's value (None when absent)."""
    value = CFG
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


class InProcessRecord(str):
    """The shell command of a rule whose `laser-repro` process records its provenance (see logged()),
    with `settings` (the config keys it depends on) and `sources` (whether params.sources names raw inputs)."""

    def __new__(cls, shell, settings, sources):
        self = super().__new__(cls, shell)
        self.settings, self.sources = settings, sources
        return self

    def __getnewargs__(self):  # copies (`use rule ... with`) keep the attributes
        return str(self), self.settings, self.sources


def logged(cmd, keys=(), sources=False):
    """Shell command with its stdout and stderr sent to the rule's log; once it succeeded, a provenance
    record beside every output (<output>.prov.json: inputs with sha256, the config `keys` the rule
    depends on, code and library versions, host, start/end; laser_repro.provenance). `sources`: the
    rule reads raw files; their public URLs are recorded (params.sources).

    A command that is one `laser-repro SUBCOMMAND ...` records in that same process: `laser-repro
    --provenance-spec FILE SUBCOMMAND ...` writes the record once the subcommand returned (FILE, the job's
    spec written when the job is scheduled: params.provenance_spec, set by name_recorded_rules). A compound command (`&&`, subshell, `rm`)
    is followed by `python -m laser_repro.provenance provenance ...`. Every path and value is quoted."""
    settings = {key: config_value(key) for key in keys}
    if cmd.startswith("laser-repro ") and not any(c in cmd for c in "();|&<>`$\n"):
        return InProcessRecord(f"laser-repro --provenance-spec {{params.provenance_spec:q}}"
                               f" {cmd.removeprefix('laser-repro ')} > {{log:q}} 2>&1", settings, sources)
    settings = shell_quote_json(settings).replace("{", "{{").replace("}", "}}")
    source_args = " {params.sources}" if sources else ""
    return (f"T0=$(date -u +%Y-%m-%dT%H:%M:%SZ); {cmd} > {{log:q}} 2>&1"
            f" && python -m laser_repro.provenance provenance --rule {{params.rule_name}} --start \"$T0\""
            f" --inputs {{input:q}} --outputs {{output:q}}"
            f" --log {{log:q}} --config-json {settings}{source_args} >> {{log:q}} 2>&1")


def provenance_spec(rule_, settings, sources):
    """params.provenance_spec where the command records in-process (laser-repro --provenance-spec): the file of
    one job's rule name, inputs, outputs, log, config and `PATH=URL` sources (content-addressed under
    .snakemake/laser-repro/, laser_repro.provenance.spec_files)."""

    source_items = getattr(rule_.params.get("sources"), "items", None) if sources else None
    if sources and source_items is None:
        raise ValueError(f"{rule_.name}: logged(sources=True) needs params.sources=raw_sources or downloaded_from(...)")

    def param(wildcards, input, output):
        logs = rule_.expand_log(dict(wildcards.items()))
        bench = rule_.expand_benchmark(dict(wildcards.items())) if rule_.benchmark else None
        spec = {"rule": rule_.name, "inputs": list(input), "outputs": list(output),
                "log": str(logs[0]) if logs else None, "benchmark": str(bench) if bench else None,
                "config": settings,
                "sources": source_items(wildcards, input, output) if source_items else []}
        return spec_files.write_content_file(f"provenance-{rule_.name}", spec)

    return param


def name_recorded_rules():
    """The provenance params of every rule whose command records provenance, params.rule_name where a
    separate `python -m laser_repro.provenance` records it (`{rule}` would do in the shell command, but
    the linter does not know it; quoted here), params.provenance_spec where `laser-repro
    --provenance-spec` does. Call once all rules are defined."""
    for rule_ in workflow.rules:
        if not rule_.shellcmd:
            continue
        if "laser_repro.provenance" in rule_.shellcmd:
            if rule_.benchmark:  # sync-mtimes re-dates a benchmark only through an in-process record
                raise ValueError(f"{rule_.name}: a benchmark needs an in-process record (one laser-repro command)")
            rule_.set_params(rule_name=shlex.quote(rule_.name))
        elif isinstance(rule_.shellcmd, InProcessRecord):
            rule_.set_params(provenance_spec=provenance_spec(rule_, rule_.shellcmd.settings, rule_.shellcmd.sources))


RAW_URLS = {}  # raw input file (corpus, test set) -> its public URL, for provenance records


def raw(path, url):
    RAW_URLS[path] = url
    return path


def source_args(items):
    """--source PATH=URL arguments (quoted) of provenance's PATH=URL items."""
    return " ".join(f"--source {shlex.quote(item)}" for item in items)


def downloaded_from(url_of):
    """params.sources of a download rule: its output comes from url_of(wildcards). Its `items`: the
    PATH=URL items themselves (the in-process record)."""
    items = lambda w, input, output: [f"{output[0]}={url_of(w)}"]
    sources = lambda w, output: source_args(items(w, None, output))
    sources.items = items
    return sources


def raw_source_items(w, input, output=None):
    return [f"{path}={RAW_URLS[path]}" for path in input if path in RAW_URLS]


def raw_sources(w, input):
    """--source PATH=URL for the rule's raw inputs."""
    return source_args(raw_source_items(w, input))


raw_sources.items = raw_source_items


def opus_zip(corpus, src, tgt):
    c = PLAN.corpora[corpus]
    codes = (languages.opus_code(src, c.get("codes")), languages.opus_code(tgt, c.get("codes")))
    return f"resources/opus/{corpora.opus_moses_path(c['corpus'], c['version'], *codes)}"


def opus_url(w):
    """The OPUS URL of rule download_opus's zip (OPUS language codes hold no '-')."""
    return corpora.opus_moses_url(w.opus_corpus, w.version, *w.zipname.split("-", 1),
                                  base_url=CFG["opus"]["base_url"])


def opus_pair_url_args(w):
    """--pair-urls-from: every configured pair of the OPUS corpus and version that download_opus fetches: with
    allow_absent_pairs, a missing zip is an absent pair only if another of them exists."""
    urls = []
    for b in PLAN.bitexts:
        c = PLAN.corpora[b.corpus]
        if c["kind"] == "opus" and c["corpus"] == w.opus_corpus and c["version"] == w.version:
            codes = (languages.opus_code(b.src, c.get("codes")), languages.opus_code(b.tgt, c.get("codes")))
            urls.append(corpora.opus_moses_url(w.opus_corpus, w.version, *codes, base_url=CFG["opus"]["base_url"]))
    # a file: at the paper's scale 114 URLs, 15 kB, in each of the corpus's download commands
    listed = spec_files.write_content_file(f"opus-pairs-{w.opus_corpus}-{w.version}", list(dict.fromkeys(urls)))
    return f"--pair-urls-from {shlex.quote(listed)}"


def fetch_urls(urls):
    """`laser-repro fetch`'s --url and --alternative arguments (quoted) of URLs tried in this order."""
    return " ".join([f"--url {shlex.quote(urls[0])}", *(f"--alternative {shlex.quote(u)}" for u in urls[1:])])


ARCHIVE_CORPORA = [n for n, c in PLAN.corpora.items() if "download" in c and n not in PLAN.sacrebleu_corpora]
SINGLE_ARCHIVES = [n for n in ARCHIVE_CORPORA if not PLAN.archive_parts(n)]
PARTED_ARCHIVES = [n for n in ARCHIVE_CORPORA if PLAN.archive_parts(n)]


def download_label(url):
    """An archive's URL, or its parts' URLs joined by ' + ' (an archive published in parts)."""
    return url if isinstance(url, str) else " + ".join(url)


def downloaded_file(corpus, lang, bitext=None):
    """Where a local corpus's file is written when data_root is null: resources/<corpus>/<code> (layout
    nway: the language's code in the corpus, as the archive members), resources/<corpus>/<src>-<tgt>.<lang>
    (layout bitext, `bitext` = (src, tgt): converted from its sacrebleu test set)."""
    if bitext is None:
        return f"resources/{corpus}/{corpus_code(PLAN.corpora[corpus], lang)}"
    return f"resources/{corpus}/{bitext[0]}-{bitext[1]}.{lang}"


def local_corpus_file(corpus, lang, bitext=None):
    """A language's file of a local corpus (layout bitext: of the bitext `bitext` = (src, tgt)): under
    data_root, or from the download (an archive's member, a sacrebleu test set converted to text)."""
    c = PLAN.corpora[corpus]
    download = c.get("download", {})
    if DATA_ROOT:
        code = corpus_code(c, lang)
        if bitext is None:
            path = c["path"].format(root=DATA_ROOT, code=code)
        else:
            path = c["path"].format(root=DATA_ROOT, src=corpus_code(c, bitext[0]), tgt=corpus_code(c, bitext[1]),
                                    side=code)
        if "sacrebleu" in download:
            raw(path, PLAN.sacrebleu_source(corpus, lang, bitext))
        elif "url" in download:
            raw(path, f"{download_label(download['url'])}#{download['member'].format(code=code)}")
        return path
    if not download or (bitext is not None and "sacrebleu" not in download):
        need = "download section" if bitext is None else "download.sacrebleu section (layout bitext)"
        raise ValueError(f"corpora: {corpus}: data_root is null and the corpus has no {need}")
    return downloaded_file(corpus, lang, bitext)


def sacrebleu_conversion(corpus):
    """(argument, file) of every file a sacrebleu corpus's conversion writes (`laser-repro sacrebleu-corpus`
    --nway-file LANG / --pair-file LANGPAIR LANG, then the file): those local_corpus_file names when
    data_root is null."""
    c = PLAN.corpora[corpus]
    if c["layout"] == "nway":
        return [(["--nway-file", lang], downloaded_file(corpus, lang)) for lang in local_languages(c, PLAN.targets)]
    return [(["--pair-file", sacrebleu_langpair(c, b.src, b.tgt), lang], downloaded_file(corpus, lang, (b.src, b.tgt)))
            for b in corpus_bitexts(c, PLAN.targets) for lang in (b.src, b.tgt)]


def tatoeba_test_file(lang, side):
    if DATA_ROOT:
        return raw(CFG["evaluation"]["tatoeba"]["path"].format(root=DATA_ROOT, lang=lang, side=side),
                   CFG["evaluation"]["tatoeba"]["url"].format(lang=lang, side=side))
    return f"resources/tatoeba-v1/tatoeba.{lang}-eng.{side}"


def extract_inputs(w):
    c = PLAN.corpora[w.corpus]
    if c["kind"] == "opus":
        files = {"zip": opus_zip(w.corpus, w.src, w.tgt)}
    elif c["layout"] == "nway":  # with the sides' Moses lines, taken for the kept pairs (extract_nway_bitext)
        files = {"src_file": local_corpus_file(w.corpus, w.src), "tgt_file": local_corpus_file(w.corpus, w.tgt),
                 "moses_src": moses_file(w.corpus, w.src, CFG["preprocess"]["lowercase"]),
                 "moses_tgt": moses_file(w.corpus, w.tgt, CFG["preprocess"]["lowercase"])}
    else:  # layout bitext: one pair of files per language pair
        files = {side: local_corpus_file(w.corpus, lang, (w.src, w.tgt))
                 for side, lang in (("src_file", w.src), ("tgt_file", w.tgt))}
    if c.get("exclude_tatoeba_test"):
        xx = w.src if w.src != "eng" else w.tgt
        if xx != "eng" and languages.get(xx).tatoeba_test:
            files["tatoeba"] = [tatoeba_test_file(xx, xx), tatoeba_test_file(xx, "eng")]
    return files


def extract_args(w, input, output):
    c = PLAN.corpora[w.corpus]
    args = ["--src", w.src, "--tgt", w.tgt]  # words, quoted at the end (paths, codes: config values)
    if c.get("allow_absent_pairs"):  # a pair with no sentence: empty bitext, "absent": true in its stats
        args.append("--absent-ok")
    if c["kind"] == "opus":
        args += ["--opus-zip", input.zip, "--opus-corpus", c["corpus"],
                 "--src-code", languages.opus_code(w.src, c.get("codes")),
                 "--tgt-code", languages.opus_code(w.tgt, c.get("codes"))]
    else:
        args += ["--src-file", input.src_file, "--tgt-file", input.tgt_file]
    if "moses_src" in input.keys():
        args += ["--moses-src", input.moses_src, "--moses-tgt", input.moses_tgt,
                 "--tok-src", output.tok_src, "--tok-tgt", output.tok_tgt]
    for key in ("first_n", "max_pairs"):
        if c.get(key):
            args += [f"--{key.replace('_', '-')}", c[key]]
    filters = CFG["filters"]
    args += ["--max-chars", filters["max_chars"]]
    if filters.get("max_ratio"):
        args += ["--max-ratio", filters["max_ratio"]]
    if "tatoeba" in input.keys():
        args += ["--exclude-tatoeba", input.tatoeba[0], input.tatoeba[1]]
    heldout = PLAN.heldout_lines(w.corpus)
    if heldout:  # the FLORES evaluation lines (flores_eval.heldout_lines) are never trained on
        args += ["--skip-lines", heldout[0], heldout[1]]
    return shlex.join(map(str, args))


def opus_sha256_arg(w):
    """--sha256 for an OPUS zip when a corpus of the config pins its checksum."""
    name = f"{w.zipname}.txt.zip"
    for c in PLAN.corpora.values():
        if c.get("corpus") == w.opus_corpus and name in c.get("sha256", {}):
            return f"--sha256 {shlex.quote(c['sha256'][name])}"
    return ""
