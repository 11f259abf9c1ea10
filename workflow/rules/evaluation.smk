# Stages 9-10: the frozen encoder on BUCC mining (Table 4), XNLI (Tables 2, 8), MLDoc (Table 3) and
# WMT similarity. Each task: raw data -> plain text -> Moses + BPE + embeddings (rule eval_embed) ->
# task scores (JSON) -> table. A task whose data is absent still gets its table, with the rows marked
# missing and the way to obtain the data.
from laser_repro.config import BUCC_LANGUAGES


# ---- data locations ---------------------------------------------------------------------------------
def bucc_archive(xx, split):
    """split: training-gold (sentences + gold) or test (sentences only; the test gold is private)."""
    cfg = EVAL["bucc"]
    code = BUCC_LANGUAGES[xx]
    name = f"bucc2018-{code}-en.{split}.tar.bz2"
    return eval_input(cfg["url"], cfg["path"], cfg["sha256"].get(name), xx=code, split=split)


def bucc_member(xx, split, side):
    code = BUCC_LANGUAGES[xx]
    return f"bucc2018/{code}-en/{code}-en.{split}.{code if side == xx else 'en'}"


def xnli_zip():
    cfg = EVAL["xnli"]
    return eval_input(cfg["url"], cfg["path"], cfg["sha256"].get("XNLI-1.0.zip"))


def multinli_zip():
    cfg = EVAL["xnli"]
    return eval_input(cfg["multinli_url"], cfg["multinli_path"], cfg["sha256"].get("multinli_1.0.zip"))


def mldoc_file(lang, split):
    from laser_repro import mldoc

    cfg = EVAL["mldoc"]
    directory = cfg["path"].format(root=DATA_ROOT)
    return str(mldoc.expected_files(directory, [lang], cfg["train_size"], check=False)[lang][split])


def wmt_archives():
    from laser_repro import wmt

    cfg = EVAL["wmt"]
    return [eval_input(url, cfg["path"], sha256, file=os.path.basename(url))
            for url, sha256 in wmt.test_set_downloads(cfg["test_set"], cfg["sha256"])]


def wmt_languages():
    """English and the configured languages the test set pairs with it (others: absent in its table)."""
    from laser_repro import wmt

    cfg = EVAL["wmt"]
    present, _ = wmt.language_pairs(cfg["test_set"], cfg["languages"])
    return [code for code in cfg["languages"] if code == "eng" or code in present]


TASK_MISSING = {}
if "bucc" in EVAL:
    TASK_MISSING["bucc"] = missing_note(
        "bucc", [bucc_archive(xx, s) for xx in EVAL["bucc"]["languages"] for s in ("training-gold", "test")])
if "xnli" in EVAL:
    TASK_MISSING["xnli"] = missing_note(
        "xnli", [xnli_zip(), multinli_zip()])
if "mldoc" in EVAL:
    if not EVAL["mldoc"].get("path"):
        TASK_MISSING["mldoc"] = ("data missing: evaluation.mldoc.path is not set. MLDoc is built from Reuters "
                                 "RCV1/RCV2 (licensed by NIST): request the corpora, generate the files with "
                                 "https://github.com/facebookresearch/MLDoc and set evaluation.mldoc.path.")
    else:
        TASK_MISSING["mldoc"] = missing_note(
            "mldoc", [mldoc_file(lang, split) for lang in EVAL["mldoc"]["languages"]
                      for split in (("train", "dev", "test") if lang == "eng" else ("test",))],
            "Generate MLDoc from RCV1/RCV2 with https://github.com/facebookresearch/MLDoc.")
if "wmt" in EVAL:
    TASK_MISSING["wmt"] = missing_note("wmt", wmt_archives())


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


def emb(task, name, lang):
    return f"{RUN}/eval/{task}/emb/{name}.{lang}.npy"


# ---- shared: text -> Moses + BPE -> embeddings ---------------------------------------------------------
rule eval_embed:
    input:
        text="results/{run}/eval/{task}/text/{name}.{lang}.txt",
        model="results/{run}/bpe/spm.model",
        encoder="results/{run}/encoder/encoder.pt",
    output:
        bpe=temp("results/{run}/eval/{task}/bpe/{name}.{lang}"),
        emb="results/{run}/eval/{task}/emb/{name}.{lang}.npy",
    log:
        "results/{run}/logs/eval/{task}/embed/{name}.{lang}.log",
    wildcard_constraints:
        task="[a-z0-9]+",
        name="[A-Za-z0-9_-]+",
    params:
        lowercase="" if CFG["preprocess"]["lowercase"] else "--keep-case",
        max_tokens=CFG["embed"]["max_tokens"],
    threads: CFG["embed"]["threads"]
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("(laser-repro prepare-text --model {input.model} {params.lowercase} --lang {wildcards.lang}"
               " --input {input.text} --output {output.bpe}"
               " && laser-repro embed --encoder {input.encoder} --input {output.bpe} --output {output.emb}"
               " --max-tokens {params.max_tokens} --threads {threads})")


rule download_eval:
    output:
        "resources/eval/{host}/{path}",
    log:
        "resources/logs/eval/{host}/{path}.log",
    wildcard_constraints:
        host="[A-Za-z0-9.-]+",
        path=".+",
    params:
        url=lambda w, output: EVAL_DOWNLOADS[output[0]][0],
        sha=lambda w, output: f"--sha256 {EVAL_DOWNLOADS[output[0]][1]}" if EVAL_DOWNLOADS[output[0]][1] else "",
        # the mirror holds <host>/<path>: map scheme://host onto <mirror>/<host>
        mirror=lambda w, output: (f"--base-url {EVAL_DOWNLOADS[output[0]][0].split('://')[0]}://{w.host}"
                                  f" --mirror {EVAL['mirror'].rstrip('/')}/{w.host}") if EVAL.get("mirror") else "",
        retries=EVAL["retries"],
    resources:
        downloads=1,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro fetch --url {params.url} --dest {output} {params.sha} --retries {params.retries}"
               " {params.mirror}")


localrules: download_eval


# ---- BUCC 2018 (Table 4) ---------------------------------------------------------------------------------
rule bucc_sentences:
    input:
        lambda w: bucc_archive(w.xx, "training-gold" if w.split == "training" else "test"),
    output:
        text="results/{run}/eval/bucc/text/{xx}-{split}-{side}.{side}.txt",
        ids="results/{run}/eval/bucc/ids/{xx}-{split}-{side}.tsv",
    log:
        "results/{run}/logs/eval/bucc/sentences/{xx}-{split}-{side}.log",
    wildcard_constraints:
        xx="[a-z]{3}",
        split="training|test",
    params:
        member=lambda w: bucc_member(w.xx, w.split, w.side),
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bucc-sentences --archive {input} --member {params.member}"
               " --sentences {output.text} --ids {output.ids}")


rule bucc_gold:
    input:
        lambda w: bucc_archive(w.xx, "training-gold"),
    output:
        "results/{run}/eval/bucc/gold/{xx}-training.gold",
    log:
        "results/{run}/logs/eval/bucc/gold/{xx}.log",
    params:
        member=lambda w: f"bucc2018/{BUCC_LANGUAGES[w.xx]}-en/{BUCC_LANGUAGES[w.xx]}-en.training.gold",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro extract-member --archive {input} --member {params.member} --output {output}")


rule bucc_mine:
    input:
        src=lambda w: emb("bucc", f"{w.xx}-{w.split}-{w.xx}", w.xx),
        trg=lambda w: emb("bucc", f"{w.xx}-{w.split}-eng", "eng"),
    output:
        "results/{run}/eval/bucc/candidates/{xx}-{split}.tsv",
    log:
        "results/{run}/logs/eval/bucc/mine/{xx}-{split}.log",
    benchmark:
        "results/{run}/benchmarks/bucc_mine/{xx}-{split}.tsv"
    wildcard_constraints:
        split="training|test",
    params:
        cfg=lambda w: f"--k {EVAL['bucc']['k']} --margin {EVAL['bucc']['margin']} --mode {EVAL['bucc']['mode']}"
        f" --shard-rows {EVAL['bucc']['shard_rows']}",
    threads: CFG["embed"]["threads"]
    resources:
        mem_mb=8000,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bucc-mine --src-emb {input.src} --trg-emb {input.trg} {params.cfg}"
               " --threads {threads} --candidates {output}")


rule bucc_evaluate:
    input:
        candidates="results/{run}/eval/bucc/candidates/{xx}-training.tsv",
        src_ids="results/{run}/eval/bucc/ids/{xx}-training-{xx}.tsv",
        trg_ids="results/{run}/eval/bucc/ids/{xx}-training-eng.tsv",
        gold="results/{run}/eval/bucc/gold/{xx}-training.gold",
    output:
        "results/{run}/eval/bucc/scores/{xx}.json",
    log:
        "results/{run}/logs/eval/bucc/evaluate/{xx}.log",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bucc-evaluate --candidates {input.candidates} --src-ids {input.src_ids}"
               " --trg-ids {input.trg_ids} --gold {input.gold} --lang {wildcards.xx} --scores {output}")


rule bucc_extract:
    input:
        candidates="results/{run}/eval/bucc/candidates/{xx}-test.tsv",
        src_ids="results/{run}/eval/bucc/ids/{xx}-test-{xx}.tsv",
        trg_ids="results/{run}/eval/bucc/ids/{xx}-test-eng.tsv",
        train="results/{run}/eval/bucc/scores/{xx}.json",
    output:
        "results/{run}/eval/bucc/test_pairs/{xx}-en.tsv",
    log:
        "results/{run}/logs/eval/bucc/extract/{xx}.log",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bucc-extract --candidates {input.candidates} --src-ids {input.src_ids}"
               " --trg-ids {input.trg_ids} --threshold-from {input.train} --pairs {output}")


rule table4:
    input:
        scores=expand(f"{RUN}/eval/bucc/scores/{{xx}}.json", xx=EVAL.get("bucc", {}).get("languages", []))
        if task_ready("bucc") else [],
        pairs=expand(f"{RUN}/eval/bucc/test_pairs/{{xx}}-en.tsv", xx=EVAL.get("bucc", {}).get("languages", []))
        if task_ready("bucc") else [],
    output:
        md="results/tables/{run}/table4.md",
        csv="results/tables/{run}/table4.csv",
    log:
        "results/{run}/logs/table4.log",
    params:
        missing=lambda w: missing_arg("bucc"),
        langs=" ".join(EVAL.get("bucc", {}).get("languages", list(BUCC_LANGUAGES))),
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro eval-table bucc --run-name {wildcards.run} --languages {params.langs}"
               " --scores {input.scores} --pairs {input.pairs} {params.missing} --md {output.md} --csv {output.csv}")


# ---- WMT news test set: similarity error over all ordered language pairs -----------------------------------
if "wmt" in EVAL:
    WMT_SET = EVAL["wmt"]["test_set"]

    rule wmt_texts:
        input:
            wmt_archives(),
        output:
            texts=[f"{RUN}/eval/wmt/text/{WMT_SET}.{lang}.txt" for lang in wmt_languages()],
            meta=f"{RUN}/eval/wmt/text/meta.json",
        log:
            f"{RUN}/logs/eval/wmt/texts.log",
        params:
            tarballs=lambda w, input: " ".join(f"--tarball {t}" for t in input),
            md5=" ".join(f"--md5 {m}" for m in EVAL["wmt"]["md5"]),
            langs=" ".join(EVAL["wmt"]["languages"]),
            out_dir=f"{RUN}/eval/wmt/text",
        conda:
            "../../envs/laser.yaml"
        shell:
            logged("laser-repro wmt-texts {params.tarballs} {params.md5} --test-set {WMT_SET}"
                   " --langs {params.langs} --out-dir {params.out_dir} --prefix {WMT_SET}.")

    rule wmt_similarity:
        input:
            emb=[emb("wmt", WMT_SET, lang) for lang in wmt_languages()],
            meta=f"{RUN}/eval/wmt/text/meta.json",
        output:
            f"{RUN}/eval/wmt/scores.json",
        log:
            f"{RUN}/logs/eval/wmt/similarity.log",
        params:
            emb=" ".join(f"--emb {lang} {emb('wmt', WMT_SET, lang)}" for lang in wmt_languages()),
        conda:
            "../../envs/laser.yaml"
        shell:
            logged("laser-repro wmt-similarity {params.emb} --meta {input.meta} --scores {output}")


rule table_wmt:
    input:
        [f"{RUN}/eval/wmt/scores.json"] if task_ready("wmt") else [],
    output:
        md="results/tables/{run}/wmt.md",
        csv="results/tables/{run}/wmt.csv",
    log:
        "results/{run}/logs/table_wmt.log",
    params:
        missing=lambda w: missing_arg("wmt"),
        langs=" ".join(EVAL.get("wmt", {}).get("languages", [])),
        scores=lambda w, input: f"--scores {input}" if input else "",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro eval-table wmt --run-name {wildcards.run} --languages {params.langs}"
               " {params.scores} {params.missing} --md {output.md} --csv {output.csv}")


# ---- XNLI (Tables 2 and 8) -------------------------------------------------------------------------------
def xnli_text(split, side, lang):
    return f"{RUN}/eval/xnli/text/{split}-{side}.{lang}.txt"


rule xnli_texts:
    input:
        lambda w: xnli_zip(),
    output:
        premises="results/{run}/eval/xnli/text/{split}-p.{lang}.txt",
        hypotheses="results/{run}/eval/xnli/text/{split}-h.{lang}.txt",
        labels="results/{run}/eval/xnli/labels/{split}.{lang}.tsv",
    log:
        "results/{run}/logs/eval/xnli/texts/{split}.{lang}.log",
    wildcard_constraints:
        split="dev|test",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro xnli-texts --zip {input} --split {wildcards.split} --lang {wildcards.lang}"
               " --premises {output.premises} --hypotheses {output.hypotheses} --labels {output.labels}")


rule multinli_texts:
    input:
        lambda w: multinli_zip(),
    output:
        premises="results/{run}/eval/xnli/text/train-p.eng.txt",
        hypotheses="results/{run}/eval/xnli/text/train-h.eng.txt",
        labels="results/{run}/eval/xnli/labels/train.eng.tsv",
        stats="results/{run}/eval/xnli/labels/train.stats.json",
    log:
        "results/{run}/logs/eval/xnli/multinli.log",
    params:
        cap=lambda w: f"--max-pairs {EVAL['xnli']['train_max_pairs']} --seed {CFG['train']['seed']}"
        if EVAL["xnli"].get("train_max_pairs") else "",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro multinli-texts --zip {input} {params.cap} --premises {output.premises}"
               " --hypotheses {output.hypotheses} --labels {output.labels} --stats {output.stats}")


def xnli_classify_inputs(w):
    langs = EVAL["xnli"]["languages"]
    files = {"train": [emb("xnli", "train-p", "eng"), emb("xnli", "train-h", "eng"), f"{RUN}/eval/xnli/labels/train.eng.tsv"],
             "dev": [emb("xnli", "dev-p", "eng"), emb("xnli", "dev-h", "eng"), f"{RUN}/eval/xnli/labels/dev.eng.tsv"]}
    for lang in langs:
        files[f"test_{lang}"] = [emb("xnli", "test-p", lang), emb("xnli", "test-h", lang),
                                 f"{RUN}/eval/xnli/labels/test.{lang}.tsv"]
    return files


rule xnli_classify:
    input:
        unpack(xnli_classify_inputs),
    output:
        "results/{run}/eval/xnli/scores.json",
    log:
        "results/{run}/logs/eval/xnli/classify.log",
    benchmark:
        "results/{run}/benchmarks/xnli_classify.tsv"
    params:
        tests=lambda w, input: " ".join(f"--test {lang} " + " ".join(input[f"test_{lang}"])
                                        for lang in EVAL["xnli"]["languages"]),
        config=lambda w: shell_quote_json(EVAL["xnli"]["classifier"]),
    threads: CFG["embed"]["threads"]
    resources:
        mem_mb=16000,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro xnli-classify --train-premises {input.train[0]} --train-hypotheses {input.train[1]}"
               " --train-labels {input.train[2]} --dev-premises {input.dev[0]} --dev-hypotheses {input.dev[1]}"
               " --dev-labels {input.dev[2]} {params.tests} --params {params.config} --threads {threads}"
               " --scores {output}")


rule table2_table8:
    input:
        [f"{RUN}/eval/xnli/scores.json"] if task_ready("xnli") else [],
    output:
        md2="results/tables/{run}/table2.md",
        csv2="results/tables/{run}/table2.csv",
        md8="results/tables/{run}/table8.md",
        csv8="results/tables/{run}/table8.csv",
    log:
        "results/{run}/logs/table2_table8.log",
    params:
        missing=lambda w: missing_arg("xnli"),
        langs=" ".join(EVAL.get("xnli", {}).get("languages", [])),
        scores=lambda w, input: f"--scores {input}" if input else "",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro eval-table xnli --run-name {wildcards.run} --languages {params.langs} {params.scores}"
               " {params.missing} --md {output.md2} --csv {output.csv2} --md8 {output.md8} --csv8 {output.csv8}")


# ---- MLDoc (Table 3) --------------------------------------------------------------------------------------
rule mldoc_sentences:
    input:
        lambda w: mldoc_file(w.lang, w.split),
    output:
        text="results/{run}/eval/mldoc/text/{split}.{lang}.txt",
        docs="results/{run}/eval/mldoc/docs/{split}.{lang}.tsv",
    log:
        "results/{run}/logs/eval/mldoc/sentences/{split}.{lang}.log",
    wildcard_constraints:
        split="train|dev|test",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro mldoc-sentences --input {input} --lang {wildcards.lang}"
               " --sentences {output.text} --docs {output.docs}")


def mldoc_classify_inputs(w):
    files = {"train": [emb("mldoc", "train", "eng"), f"{RUN}/eval/mldoc/docs/train.eng.tsv"],
             "dev": [emb("mldoc", "dev", "eng"), f"{RUN}/eval/mldoc/docs/dev.eng.tsv"]}
    for lang in EVAL["mldoc"]["languages"]:
        files[f"test_{lang}"] = [emb("mldoc", "test", lang), f"{RUN}/eval/mldoc/docs/test.{lang}.tsv"]
    return files


rule mldoc_classify:
    input:
        unpack(mldoc_classify_inputs),
    output:
        "results/{run}/eval/mldoc/scores.json",
    log:
        "results/{run}/logs/eval/mldoc/classify.log",
    params:
        tests=lambda w, input: " ".join(f"--test {lang} " + " ".join(input[f"test_{lang}"])
                                        for lang in EVAL["mldoc"]["languages"]),
        config=lambda w: shell_quote_json(EVAL["mldoc"]["classifier"]),
    threads: CFG["embed"]["threads"]
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro mldoc-classify --train {input.train} --dev {input.dev} {params.tests}"
               " --params {params.config} --threads {threads} --scores {output}")


rule table3:
    input:
        [f"{RUN}/eval/mldoc/scores.json"] if task_ready("mldoc") else [],
    output:
        md="results/tables/{run}/table3.md",
        csv="results/tables/{run}/table3.csv",
    log:
        "results/{run}/logs/table3.log",
    params:
        missing=lambda w: missing_arg("mldoc"),
        langs=" ".join(EVAL.get("mldoc", {}).get("languages", [])),
        scores=lambda w, input: f"--scores {input}" if input else "",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro eval-table mldoc --run-name {wildcards.run} --languages {params.langs}"
               " {params.scores} {params.missing} --md {output.md} --csv {output.csv}")
