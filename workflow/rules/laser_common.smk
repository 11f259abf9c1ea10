# Input functions and paths of the LASER model's rules (empty target lists when the config has no model
# of family laser) and of the evaluation tasks, which score every model of any family: its variants, FLORES
# xsim, the tasks' data and languages per model, the task comparison, the ablation tables.
# ---- models: the base model and the ablation variants (Tables 5-7) -------------------------------------
VARIANTS = PLAN.variants
METRICS = f"{RUN}/metrics"


def buildable(variant):
    """A variant can be trained: the NLI ones need MultiNLI."""
    return not VARIANTS[variant].nli_weight or task_ready("xnli")


NLI_PREFIX = f"{RUN}/bin/nli/train"  # Table 6's binarized MultiNLI pairs (rule nli_binarize)


def train_inputs(w):
    variant = VARIANTS[w.variant]
    files = {"bin": binarized_files(variant.pairs), "dict": f"{RUN}/bin/dict.txt"}
    if FLORES:  # held-out pairs: the loss on the learning curves
        files["valid"] = binarized_files([p for p in variant.pairs if p in PLAN.curve_pairs], split="valid")
    if variant.nli_weight:
        files["nli"] = f"{NLI_PREFIX}.label.npy"
    return files


def train_settings(name):
    variant = VARIANTS[name]
    train = PLAN.variant_train(name)  # the base model's, another LASER model's own; a seed replicate's seed
    settings = {"pairs": [f"{s}-{t}" for s, t in variant.pairs], "targets": PLAN.targets,
                "model": dict(variant.model), "train": train}
    if FLORES:
        settings["curves"] = dict(FLORES["curves"])
    nli = PLAN.nli_settings(variant)
    if nli:
        settings["nli"] = {"data": NLI_PREFIX, "weight": nli["weight"]}
        settings["model"]["nli_hidden_dim"] = nli["hidden_dim"]
    return settings


def encoder(w):
    return f"{RUN}/models/{w.variant}/encoder.pt"


def init_encoder(w):
    """The same encoder at update 0 (the random-initialization baseline of the similarity tables)."""
    return f"{RUN}/models/{w.variant}/encoder_init.pt"


# ---- FLORES xsim (flores_eval) ----------------------------------------------------------------------------
FLORES = PLAN.flores_eval
FLORES_DIR = f"{RUN}/flores"


def flores_raw_file(lang):
    return local_corpus_file(FLORES["corpus"], lang)


def flores_texts(kind, langs=None):
    """kind raw or bpe: the held-out and training-sample lines of every FLORES language (and English)."""
    from laser_repro.evaluation.flores import SPLITS

    if not FLORES:
        return []
    langs = ["eng", *PLAN.flores_languages] if langs is None else langs
    return [f"{FLORES_DIR}/{kind}/{split}.{lang}" for lang in langs for split in SPLITS]


def bpe_train_files():
    return [f"{RUN}/bpe/train/{src}-{tgt}.{lang}" for src, tgt in PLAN.pairs for lang in (src, tgt)]


def binarized_files(pairs=None, split="train"):
    """The binarized pairs (default: all pairs of the config); split valid: their held-out FLORES lines."""
    return [f"{RUN}/bin/{split}.{src}-{tgt}.{lang}.{ext}"
            for src, tgt in (PLAN.pairs if pairs is None else pairs) for lang in (src, tgt) for ext in ("bin", "idx")]


# ---- evaluation data (Tables 2-4, 8; WMT similarity) ----------------------------------------------
TABLES = f"results/tables/{CFG['run_name']}"
EVAL_DOWNLOADS = {}  # destination under resources/eval -> (url, sha256 or None)


def eval_input(url, path_template, sha256=None, **fields):
    """Where an evaluation file comes from: <data_root>/... when data_root is set (read as is), else
    the download destination resources/eval/<host>/<path> (rule download_eval, mirror-capable)."""
    url = url.format(**fields)
    if DATA_ROOT:
        path = path_template.format(root=DATA_ROOT, **fields)
        return raw(path, url)
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    dest = f"resources/eval/{parts.netloc}{parts.path}"
    EVAL_DOWNLOADS[dest] = (url, sha256)
    return dest


def missing_note(task, files, how=""):
    """None when every input of a task is there (or will be downloaded); else the table's note,
    with the command that fetches each absent file into place."""
    absent = [f for f in files if not f.startswith("resources/eval/") and not os.path.exists(f)]
    if not absent:
        return None
    # a member of an archive (url#member) is not fetched on its own: `how` says how to get it
    fetch = "; ".join(f"`laser-repro fetch --url {shlex.quote(RAW_URLS[f])} --dest {shlex.quote(f)}`"
                      for f in absent if f in RAW_URLS and "#" not in RAW_URLS[f])
    return (f"data missing: {', '.join(absent)}. " + (f"Obtain with {fetch} (or set data_root: null to download "
            f"into resources/eval/). " if fetch else "") + how).strip()


# ---- evaluation: data locations, input functions ---------------------------------------------------------------------------------
def bucc_archive(xx, split):
    """split: training (sentences + gold) or test (sentences only; the test gold is private)."""
    cfg = EVAL["bucc"]
    return eval_input(cfg["url"], cfg["path"], cfg["sha256"].get(bucc.archive_name(xx, split)),
                      xx=bucc.bucc_code(xx), split=bucc.ARCHIVE_SPLITS[split])


def xnli_zip():
    cfg = EVAL["xnli"]
    return eval_input(cfg["url"], cfg["path"], cfg["sha256"].get("XNLI-1.0.zip"))


def multinli_zip():
    cfg = EVAL["xnli"]
    return eval_input(cfg["multinli_url"], cfg["multinli_path"], cfg["sha256"].get("multinli_1.0.zip"))


def mldoc_file(lang, split):
    from laser_repro.evaluation import mldoc

    cfg = EVAL["mldoc"]
    directory = cfg["path"].format(root=DATA_ROOT)
    return str(mldoc.expected_files(directory, [lang], cfg["train_size"], check=False)[lang][split])


def wmt_sources():
    """The WMT test set's raw files: with data_root its N-way plain-text files ({language: path}, read
    as they are), else sacrebleu's archive(s) as downloaded by download_eval ({"archive<i>": path})."""
    from laser_repro.data import sacrebleu_sets

    cfg = EVAL["wmt"]
    if DATA_ROOT:
        stem = sacrebleu_sets.text_file_stem(cfg["test_set"])
        return {lang: raw(cfg["path"].format(root=DATA_ROOT, stem=stem, code=sacrebleu_sets.sacrebleu_code(lang)),
                          sacrebleu_sets.text_file_source(cfg["test_set"], lang)) for lang in wmt_languages()}
    # data_root is null: eval_input gives the download destination (no path template is used)
    return {f"archive{i}": eval_input(url, None, sha256)
            for i, (url, sha256) in enumerate(sacrebleu_sets.test_set_downloads(cfg["test_set"], cfg["sha256"]))}


def wmt_source_args(input):
    """wmt-texts' source options for the inputs of wmt_sources(): --text LANG FILE, or --tarball (and --md5)."""
    if DATA_ROOT:
        return shlex.join([x for lang in wmt_languages() for x in ("--text", lang, input[lang])])
    return shlex.join([x for path in input for x in ("--tarball", path)]
                      + [x for md5 in EVAL["wmt"]["md5"] for x in ("--md5", md5)])


def wmt_languages():
    """English and the configured languages the test set pairs with it (others: absent in its table)."""
    from laser_repro.data import sacrebleu_sets

    cfg = EVAL["wmt"]
    present, _ = sacrebleu_sets.language_pairs(cfg["test_set"], cfg["languages"])
    return [code for code in cfg["languages"] if code == "eng" or code in present]


TASK_MISSING = {}
if "bucc" in EVAL:
    TASK_MISSING["bucc"] = missing_note(
        "bucc", [bucc_archive(xx, s) for xx in EVAL["bucc"]["languages"] for s in ("training", "test")])
if "xnli" in EVAL:
    TASK_MISSING["xnli"] = missing_note(
        "xnli", [xnli_zip(), multinli_zip()])
if "mldoc" in EVAL:
    if not EVAL["mldoc"].get("path"):
        TASK_MISSING["mldoc"] = ("data missing: evaluation.mldoc.path is not set. MLDoc is built from Reuters "
                                 "RCV1/RCV2 (licensed by NIST): request the corpora, generate the files with "
                                 "https://github.com/facebookresearch/MLDoc and set evaluation.mldoc.path.")
    elif "{root}" in EVAL["mldoc"]["path"] and not DATA_ROOT:
        TASK_MISSING["mldoc"] = (f"data missing: evaluation.mldoc.path ({EVAL['mldoc']['path']}) uses {{root}} but "
                                 "data_root is null: set data_root, or give the MLDoc directory as a plain path.")
    else:
        TASK_MISSING["mldoc"] = missing_note(
            "mldoc", [mldoc_file(lang, split) for lang in EVAL["mldoc"]["languages"]
                      for split in (("train", "dev", "test") if lang == "eng" else ("test",))],
            "Generate MLDoc from RCV1/RCV2 with https://github.com/facebookresearch/MLDoc.")
if "wmt" in EVAL:
    TASK_MISSING["wmt"] = missing_note(
        "wmt", list(wmt_sources().values()),
        f"They are the N-way plain text of sacrebleu's {EVAL['wmt']['test_set']} (line i the same sentence in "
        f"every file; e.g. `sacrebleu -t {EVAL['wmt']['test_set']} -l cs-en --echo src`), or set data_root: null "
        f"to download the archive.")


def task_ready(task):
    return task in EVAL and TASK_MISSING.get(task) is None


def missing_arg(task):
    """--missing NOTE for a table whose task cannot run (not configured, or data absent)."""
    if task not in EVAL:
        note = f"not configured: add evaluation.{task} to the config (see config/paper.yaml)"
    else:
        note = TASK_MISSING.get(task)
    import shlex

    return "" if note is None else f"--missing {shlex.quote(note)}"


def emb(task, name, lang, variant="{variant}", init=False):
    """Embeddings of one evaluation text by one variant's encoder (a pattern when variant is not given);
    init: by the same encoder at update 0 (rule eval_embed_init)."""
    return f"{RUN}/eval/{task}/{variant}/{'emb_init' if init else 'emb'}/{name}.{lang}.npy"


# ---- every model (any family) through every task: the task's languages it embeds ------------------------
EVAL_MODELS = [*VARIANTS, *FAMILY_MODELS]  # every trained model a task scores (seed replicates included)


def eval_threads(w):
    """Threads of a task's scoring jobs (mining, classifiers): the LASER model's embed.threads, else 2."""
    return CFG["embed"]["threads"] if "embed" in CFG else 2


def configured_task_languages(task):
    """A task's languages as configured: Tatoeba's, UN's and BUCC's xx (each paired with English), the test
    languages of XNLI and MLDoc (English included), WMT's present in the test set."""
    if task == "europarl":
        return europarl_languages()
    return wmt_languages() if task == "wmt" else list(EVAL[task]["languages"])


def task_languages(task, name):
    """The languages of `task` that model `name` embeds, in the task's order: all for a LASER variant (one
    encoder for every language); for a model of another family those it has an encoder for, none when it
    has none for English (every task pivots on it: BUCC pairs with it, XNLI and MLDoc train their
    classifier on it) or, for WMT, fewer than two."""
    langs = configured_task_languages(task)
    if name in VARIANTS:
        return langs
    if task == "tatoeba":
        return PLAN.model_tatoeba_languages(name)
    own = set(PLAN.encoder_languages(name))
    kept = [lang for lang in langs if lang in own]
    if "eng" not in own or (task == "wmt" and len(kept) < 2) or not kept:
        return []
    return kept


def task_skip_reason(task, name):
    """Why `name` has no score on `task` ('' when it has): the table says it."""
    if task_languages(task, name):
        return ""
    own = PLAN.encoder_languages(name)
    return (f"no encoder for the task's languages ({', '.join(configured_task_languages(task))}); the model embeds "
            f"{', '.join(own)}")


def model_codes(name):
    """The BPE codes a model applies to raw text, as an input: LASER's joint codes, a multienc model's N-way
    data's (its bpe directory); none for LaBSE and Bi-Sent2Vec (their vocabulary is in the encoder file)."""
    if name in VARIANTS:
        return {"codes": f"{RUN}/bpe/codes"}
    m = FAMILY_MODELS[name]
    return {"codes": f"{RUN}/nway/{m['data']}/bpe"} if m["family"] == "multienc" else {}


def model_codes_arg(name, input):
    """--codes of `laser-repro embed` / `retrieval` for the inputs of model_codes."""
    if "codes" not in input.keys():
        return ""
    return shlex.join(["--codes", input.codes if name in VARIANTS else os.path.join(input.codes, "codes")])


def eval_lowercase(name):
    """Whether a model's input text is lowercased: its data's setting."""
    return CFG["preprocess"]["lowercase"] if name in VARIANTS else NWAY[FAMILY_MODELS[name]["data"]]["lowercase"]


def eval_max_tokens_arg(name):
    return f"--max-tokens {int(CFG['embed']['max_tokens'])}" if name in VARIANTS else ""


TASK_COMPARISONS = ["tatoeba", "un", "bucc", "xnli", "mldoc", "wmt", "europarl"]
TASKS_WITH_INIT = ("tatoeba", "un", "wmt", "europarl")  # the tasks that score each model at update 0 too


def task_tfidf_files(task):
    """The TF-IDF baseline's score files of a task (Europarl: one per direction of a compared model)."""
    if task == "europarl":
        return list(dict.fromkeys(europarl_tfidf_file(s, t) for name in task_compared_models()
                                  for s, t in europarl_directions(name)))
    return {"tatoeba": [f"{RUN}/eval/tfidf/tatoeba.json"], "un": [f"{RUN}/eval/tfidf/un.json"],
            "wmt": [f"{RUN}/eval/wmt/tfidf_scores.json"]}.get(task, [])


def task_compared_models():
    names = PLAN.laser_models + PLAN.configured(list(FAMILY_MODELS))
    return names if len(names) > 1 else []


def compared_tasks():
    return [task for task in TASK_COMPARISONS if task_ready(task)] if task_compared_models() else []


def task_score_files(task, name, init=False):
    """A model's score files of a task (none when it embeds none of its languages); init: at update 0
    (Tatoeba, WMT; a LASER model's Tatoeba scores hold both, one file per language)."""
    langs = task_languages(task, name)
    if not langs:
        return []
    if task == "tatoeba":
        if name in VARIANTS:
            return [f"{RUN}/tatoeba/{name}/scores/{lang}.json" for lang in langs]
        return [f"{RUN}/eval/models/{name}/tatoeba_{'encoder_init' if init else 'encoder'}.json"]
    if task == "un":
        return [f"{RUN}/eval/models/{name}/un_{'encoder_init' if init else 'encoder'}.json"]
    if task == "bucc":
        return [f"{RUN}/eval/bucc/{name}/scores/{xx}.json" for xx in langs]
    if task == "europarl":
        return [f"{RUN}/eval/models/{name}/europarl_{s}-{t}_{'encoder_init' if init else 'encoder'}.json"
                for s, t in europarl_directions(name)]
    return [f"{RUN}/eval/{task}/{name}/{'init_scores' if init else 'scores'}.json"]


def task_models_spec(task):
    """--models of compare-task: every compared model with its score files, or why it has none."""
    out = []
    for name in task_compared_models():
        family = PLAN.family(name)
        description = PLAN.laser_description(name) if family == "laser" else FAMILY_MODELS[name].get("description", name)
        out.append({"name": name, "family": family, "description": description,
                    "scores": task_score_files(task, name),
                    "init": task_score_files(task, name, init=True) if task in TASKS_WITH_INIT else [],
                    "skipped": "" if family == "laser" else task_skip_reason(task, name)})
    return out


def xnli_classify_inputs(w):
    langs = task_languages("xnli", w.variant)
    v = w.variant
    files = {"train": [emb("xnli", "train-p", "eng", v), emb("xnli", "train-h", "eng", v),
                       f"{RUN}/eval/xnli/labels/train.eng.tsv"],
             "dev": [emb("xnli", "dev-p", "eng", v), emb("xnli", "dev-h", "eng", v),
                     f"{RUN}/eval/xnli/labels/dev.eng.tsv"]}
    for lang in langs:
        files[f"test_{lang}"] = [emb("xnli", "test-p", lang, v), emb("xnli", "test-h", lang, v),
                                 f"{RUN}/eval/xnli/labels/test.{lang}.tsv"]
    return files


def mldoc_classify_inputs(w):
    v = w.variant
    files = {"train": [emb("mldoc", "train", "eng", v), f"{RUN}/eval/mldoc/docs/train.eng.tsv"],
             "dev": [emb("mldoc", "dev", "eng", v), f"{RUN}/eval/mldoc/docs/dev.eng.tsv"]}
    for lang in task_languages("mldoc", v):
        files[f"test_{lang}"] = [emb("mldoc", "test", lang, v), f"{RUN}/eval/mldoc/docs/test.{lang}.tsv"]
    return files


def variant_scores(variant):
    """The score files of every task that can run, for one variant: the inputs of its metrics."""
    files = {"tatoeba": [f"{RUN}/tatoeba/{variant}/scores/{lang}.json" for lang in PLAN.tatoeba_seen]}
    if task_ready("bucc"):
        files["bucc"] = [f"{RUN}/eval/bucc/{variant}/scores/{xx}.json" for xx in EVAL["bucc"]["languages"]]
    for task in ("xnli", "mldoc", "wmt"):
        if task_ready(task):
            files[task] = [f"{RUN}/eval/{task}/{variant}/scores.json"]
    if FLORES:
        files["flores"] = [f"{FLORES_DIR}/{variant}/scores.json"]
    return files


# ---- ablation tables (Tables 5-7) ----------------------------------------------------------------------
TABLE_ABLATION = {n: a for n, (a, _, _) in ABLATION_TABLES.items() if a in PLAN.ablation_rows}  # configured ones


def table_rows(table):
    """--rows of an ablation table: label, variant name, model trained, the paper's setting key, metrics file
    (or why there is none)."""
    rows = []
    for r in PLAN.ablation_rows[TABLE_ABLATION[table]]:
        row = {"label": r.label, "variant": r.name, "model": r.variant.name, "setting": r.setting, "metrics": None,
               "note": ""}
        if buildable(r.variant.name):
            row["metrics"] = f"{METRICS}/{r.variant.name}.json"
            replicates = PLAN.seed_replicates(r.variant.name)[1:]
            if replicates:  # mean ± sd over the seeds (laser_repro.reporting.seeds)
                row[SEED_REPLICATES] = [{"metrics": f"{METRICS}/{name}.json"} for name in replicates]
        else:
            row["note"] = f"not trained: the NLI multitask needs MultiNLI. {TASK_MISSING.get('xnli') or ''}".strip()
        rows.append(row)
    return rows


def table_models(table):
    """The trained models of an ablation table's rows, with their seed replicates."""
    return [name for row in table_rows(table) if row["metrics"] for name in PLAN.seed_replicates(row["model"])]


def missing_tasks():
    """--missing-tasks of an ablation table: {task: why it has no scores in this run}."""
    out = {}
    for task in ("bucc", "xnli", "mldoc", "wmt"):
        if task not in EVAL:
            out[task] = f"not configured: add evaluation.{task} to the config (see config/paper.yaml)"
        elif TASK_MISSING.get(task):
            out[task] = TASK_MISSING[task]
    if not FLORES:
        out["flores"] = "not configured: the config has no flores_eval"
    return out


def flores_targets():
    """What the main command builds for FLORES: the table and one learning-curve figure per model."""
    if not FLORES:
        return []
    return [f"{TABLES}/flores_xsim.md", f"{TABLES}/flores_xsim.csv",
            *[f"results/figures/{CFG['run_name']}/curves_{name}.png" for name in PLAN.configured(VARIANTS)
              if buildable(name)]]


# ---- the LASER model's targets (none without a model of family laser); called once every rule exists --
def laser_paper_tables():
    """Tables 1-4, 8, 9 and WMT of the LASER model."""
    if not LASER:
        return []
    return [*TABLE1, *expand(f"{TABLES}/{{table}}.{{ext}}",
                             table=["table2", "table3", "table4", "table8", "table9", "wmt"], ext=["md", "csv"])]


def laser_targets():
    """Everything the LASER model's part of the default target builds."""
    if not LASER:
        return []
    return [*laser_paper_tables(), *flores_targets(), *rules.ablations.input, f"{RUN}/metrics.json"]


def laser_models():
    return [name for name in VARIANTS if buildable(name)]


def laser_data():
    """The LASER data stage: binarized training (and held-out) pairs, the dictionary, MultiNLI for Table 6."""
    if not LASER:
        return []
    nli = any(v.nli_weight for v in VARIANTS.values()) and task_ready("xnli")
    return [*binarized_files(), f"{RUN}/bin/dict.txt", *binarized_files(PLAN.curve_pairs, split="valid"),
            *([f"{RUN}/bin/nli/train.label.npy"] if nli else [])]


def laser_evaluation():
    """Everything the LASER model's paper tables read, so that the tables stage writes nothing but tables."""
    if not LASER:
        return []
    return [f"{RUN}/metrics.json", *rules.table1.input, *rules.table9.input, *rules.table4.input,
            *rules.table2_table8.input, *rules.table3.input, *rules.table_wmt.input,
            *([*rules.flores_table.input, *rules.flores_tfidf.input] if FLORES else [])]
