# Stages 9-10: the frozen encoder on BUCC mining (Table 4), XNLI (Tables 2, 8), MLDoc (Table 3) and
# WMT similarity. Each task: raw data -> plain text -> Moses + BPE + embeddings (rule eval_embed) ->
# task scores (JSON) -> table. A task whose data is absent still gets its table, with the rows marked
# missing and the way to obtain the data.
import os
import shlex

from laser_repro.evaluation import bucc



# ---- shared: text -> Moses + BPE -> embeddings ---------------------------------------------------------
rule eval_embed:
    input:
        text="results/{run}/eval/{task}/text/{name}.{lang}.txt",
        codes=W.subword_model(),
        encoder=W.encoder_file,
    output:
        emb="results/{run}/eval/{task}/{model}/emb/{name}.{lang}.npy",
    log:
        "results/{run}/logs/{model}/eval/{task}/embed/{name}.{lang}.log",
    wildcard_constraints:
        task="[a-z0-9]+",
        name="[A-Za-z0-9_-]+",
    params:
        lowercase=lambda w: "" if W.laser_data["preprocess"]["lowercase"] else "--keep-case",
        max_tokens=lambda w: W.laser_model["embed"]["max_tokens"],
    threads: lambda w: W.laser_model["embed"]["threads"]
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro embed --encoder {input.encoder:q} --codes {input.codes:q} {params.lowercase}"
               " --lang {wildcards.lang:q} --input {input.text:q} --output {output.emb:q}"
               " --max-tokens {params.max_tokens:q} --threads {threads}",
               keys=W.laser_keys("preprocess.lowercase", "embed.max_tokens"))


rule download_eval:
    output:
        "resources/eval/{host}/{path}",
    log:
        "resources/logs/eval/{host}/{path}.log",
    wildcard_constraints:
        host="[A-Za-z0-9.-]+",
        path=".+",
    params:
        url=lambda w, output: W.eval_downloads[output[0]][0],
        sha=lambda w, output: f"--sha256 {shlex.quote(W.eval_downloads[output[0]][1])}" if W.eval_downloads[output[0]][1] else "",
        mirror=lambda w, output: W.eval_mirror_args(W.eval_downloads[output[0]][0]),
        retries=W.evaluation["retries"],
        deadline=W.evaluation["deadline_s"],
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch --url {params.url:q} --dest {output:q} {params.sha} --retries {params.retries:q}"
               " --deadline {params.deadline:q} {params.mirror}")


use rule eval_embed as eval_embed_init with:  # the same encoder at update 0 (baseline of the WMT table)
    input:
        text="results/{run}/eval/{task}/text/{name}.{lang}.txt",
        codes=W.subword_model(),
        encoder=W.init_encoder_file,
    output:
        emb="results/{run}/eval/{task}/{model}/emb_init/{name}.{lang}.npy",
    log:
        "results/{run}/logs/{model}/eval/{task}/embed_init/{name}.{lang}.log",


# A model of another family: the same raw texts, prepared by its family (Moses; multienc: its N-way data's
# BPE codes; LaBSE, Bi-Sent2Vec: the vocabulary in the encoder file), lowercased as its data is.
rule model_eval_embed:
    input:
        unpack(lambda w: W.model_codes(w.model)),
        text="results/{run}/eval/{task}/text/{name}.{lang}.txt",
        encoder="results/{run}/models/{model}/encoder.pt",
    output:
        emb="results/{run}/eval/{task}/{model}/emb/{name}.{lang}.npy",
    log:
        "results/{run}/logs/{model}/eval/{task}/embed/{name}.{lang}.log",
    wildcard_constraints:
        task="[a-z0-9]+",
        name="[A-Za-z0-9_-]+",
        model=alternatives(W.family_models),
    params:
        codes=lambda w, input: W.model_codes_arg(w.model, input),
        lowercase=lambda w: "" if W.eval_lowercase(w.model) else "--keep-case",
    threads: W.eval_threads
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro embed --encoder {input.encoder:q} --raw {params.codes} {params.lowercase}"
               " --lang {wildcards.lang:q} --input {input.text:q} --output {output.emb:q} --threads {threads}")


# Two texts in one job (one process, one model load), for any model: an XNLI split's premises and
# hypotheses, a BUCC split's two sides (the other texts: eval_embed, model_eval_embed, one by one).
rule eval_embed_nli:
    input:
        unpack(lambda w: W.model_codes(w.model)),
        first="results/{run}/eval/xnli/text/{split}-p.{lang}.txt",
        second="results/{run}/eval/xnli/text/{split}-h.{lang}.txt",
        encoder="results/{run}/models/{model}/encoder.pt",
    output:
        first="results/{run}/eval/xnli/{model}/emb/{split}-p.{lang}.npy",
        second="results/{run}/eval/xnli/{model}/emb/{split}-h.{lang}.npy",
    log:
        "results/{run}/logs/{model}/eval/xnli/embed/{split}.{lang}.log",
    wildcard_constraints:
        split="train|dev|test",
        model=alternatives(W.eval_models),
    params:
        langs=lambda w: [w.lang, w.lang],
        codes=lambda w, input: W.model_codes_arg(w.model, input),
        lowercase=lambda w: "" if W.eval_lowercase(w.model) else "--keep-case",
        max_tokens=lambda w: W.eval_max_tokens_arg(w.model),
    threads: W.eval_threads
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro embed --encoder {input.encoder:q} --raw {params.codes} {params.lowercase}"
               " --lang {params.langs[0]:q} --input {input.first:q} --output {output.first:q}"
               " --lang {params.langs[1]:q} --input {input.second:q} --output {output.second:q}"
               " {params.max_tokens} --threads {threads}")


use rule eval_embed_nli as eval_embed_bucc with:
    input:
        unpack(lambda w: W.model_codes(w.model)),
        first="results/{run}/eval/bucc/text/{xx}-{split}-{xx}.{xx}.txt",
        second="results/{run}/eval/bucc/text/{xx}-{split}-eng.eng.txt",
        encoder="results/{run}/models/{model}/encoder.pt",
    output:
        first="results/{run}/eval/bucc/{model}/emb/{xx}-{split}-{xx}.{xx}.npy",
        second="results/{run}/eval/bucc/{model}/emb/{xx}-{split}-eng.eng.npy",
    log:
        "results/{run}/logs/{model}/eval/bucc/embed/{xx}-{split}.log",
    wildcard_constraints:
        xx="[a-z]{3}",
        split="training|test",
        model=alternatives(W.eval_models),
    params:
        langs=lambda w: [w.xx, "eng"],
        codes=lambda w, input: W.model_codes_arg(w.model, input),
        lowercase=lambda w: "" if W.eval_lowercase(w.model) else "--keep-case",
        max_tokens=lambda w: W.eval_max_tokens_arg(w.model),


ruleorder: eval_embed_nli > eval_embed_bucc > eval_embed
ruleorder: eval_embed_nli > eval_embed_bucc > model_eval_embed


use rule model_eval_embed as model_eval_embed_init with:
    input:
        unpack(lambda w: W.model_codes(w.model)),
        text="results/{run}/eval/{task}/text/{name}.{lang}.txt",
        encoder="results/{run}/models/{model}/encoder_init.pt",
    output:
        emb="results/{run}/eval/{task}/{model}/emb_init/{name}.{lang}.npy",
    log:
        "results/{run}/logs/{model}/eval/{task}/embed_init/{name}.{lang}.log",


localrules: download_eval


# ---- BUCC 2018 (Table 4) ---------------------------------------------------------------------------------
rule bucc_sentences:
    input:
        lambda w: W.bucc_archive(w.xx, w.split),
    output:
        text="results/{run}/eval/bucc/text/{xx}-{split}-{side}.{side}.txt",
        ids="results/{run}/eval/bucc/ids/{xx}-{split}-{side}.tsv",
    log:
        "results/{run}/logs/eval/bucc/sentences/{xx}-{split}-{side}.log",
    wildcard_constraints:
        xx="[a-z]{3}",
        split="training|test",
    params:
        sources=W.raw_sources,
        member=lambda w: bucc.member_name(w.xx, w.split, w.side),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro bucc-sentences --archive {input:q} --member {params.member:q}"
               " --sentences {output.text:q} --ids {output.ids:q}", sources=True)


rule bucc_gold:
    input:
        lambda w: W.bucc_archive(w.xx, "training"),
    output:
        "results/{run}/eval/bucc/gold/{xx}-training.gold",
    log:
        "results/{run}/logs/eval/bucc/gold/{xx}.log",
    params:
        sources=W.raw_sources,
        member=lambda w: bucc.member_name(w.xx, "training", "gold"),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro extract-member --archive {input:q} --member {params.member:q} --output {output:q}",
               sources=True)


rule bucc_mine:
    input:
        src=lambda w: W.emb("bucc", f"{w.xx}-{w.split}-{w.xx}", w.xx, w.model),
        trg=lambda w: W.emb("bucc", f"{w.xx}-{w.split}-eng", "eng", w.model),
    output:
        "results/{run}/eval/bucc/{model}/candidates/{xx}-{split}.tsv",
    log:
        "results/{run}/logs/{model}/eval/bucc/mine/{xx}-{split}.log",
    benchmark:
        "results/{run}/benchmarks/{model}/bucc_mine/{xx}-{split}.tsv"
    wildcard_constraints:
        split="training|test",
        model=alternatives(W.eval_models),
    params:
        cfg=lambda w: W.bucc_mine_args(),
    threads: W.eval_threads
    resources:
        mem_mb=8000,
        gpu=1 if W.evaluation.get("knn_device") == "gpu" else 0,  # auto: a GPU where the node has one
    conda:
        W.conda_env(1 if W.evaluation.get("knn_device") == "gpu" else 0, "evaluation.knn_device")
    shell:
        W.logged("laser-repro bucc-mine --src-emb {input.src:q} --trg-emb {input.trg:q} {params.cfg}"
               " --threads {threads} --candidates {output:q}", keys=["evaluation.bucc", "evaluation.knn_device"])


rule bucc_evaluate:
    input:
        candidates="results/{run}/eval/bucc/{model}/candidates/{xx}-training.tsv",
        src_ids="results/{run}/eval/bucc/ids/{xx}-training-{xx}.tsv",
        trg_ids="results/{run}/eval/bucc/ids/{xx}-training-eng.tsv",
        gold="results/{run}/eval/bucc/gold/{xx}-training.gold",
    output:
        "results/{run}/eval/bucc/{model}/scores/{xx}.json",
    log:
        "results/{run}/logs/{model}/eval/bucc/evaluate/{xx}.log",
    wildcard_constraints:
        model=alternatives(W.eval_models),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro bucc-evaluate --candidates {input.candidates:q} --src-ids {input.src_ids:q}"
               " --trg-ids {input.trg_ids:q} --gold {input.gold:q} --lang {wildcards.xx:q} --scores {output:q}")


rule bucc_extract:
    input:
        candidates="results/{run}/eval/bucc/{model}/candidates/{xx}-test.tsv",
        src_ids="results/{run}/eval/bucc/ids/{xx}-test-{xx}.tsv",
        trg_ids="results/{run}/eval/bucc/ids/{xx}-test-eng.tsv",
        train="results/{run}/eval/bucc/{model}/scores/{xx}.json",
    output:
        "results/{run}/eval/bucc/{model}/test_pairs/{xx}-en.tsv",
    log:
        "results/{run}/logs/{model}/eval/bucc/extract/{xx}.log",
    wildcard_constraints:
        model=alternatives(W.eval_models),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro bucc-extract --candidates {input.candidates:q} --src-ids {input.src_ids:q}"
               " --trg-ids {input.trg_ids:q} --threshold-from {input.train:q} --pairs {output:q}")


rule table4:
    input:
        scores=expand(f"{W.run}/eval/bucc/{W.laser_name}/scores/{{xx}}.json", xx=W.evaluation.get("bucc", {}).get("languages", []))
        if W.task_ready("bucc") else [],
        pairs=expand(f"{W.run}/eval/bucc/{W.laser_name}/test_pairs/{{xx}}-en.tsv", xx=W.evaluation.get("bucc", {}).get("languages", []))
        if W.task_ready("bucc") else [],
    output:
        md="results/tables/{run}/table4.md",
        csv=report("results/tables/{run}/table4.csv", category="Paper tables", caption="../report/table.rst"),
        tex="results/tables/{run}/table4.tex",
    log:
        "results/{run}/logs/table4.log",
    params:
        missing=lambda w: W.missing_arg("bucc"),
        langs=list(W.evaluation.get("bucc", {}).get("languages", list(bucc.LANGUAGES))),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro eval-table bucc --run-name {wildcards.run:q} --languages {params.langs:q}"
               " --scores {input.scores:q} --pairs {input.pairs:q} {params.missing} --md {output.md:q}"
               " --csv {output.csv:q}")


# ---- WMT news test set: similarity error over all ordered language pairs -----------------------------------
if "wmt" in W.evaluation:
    WMT_SET = W.evaluation["wmt"]["test_set"]

    # data_root set: the N-way plain-text files under it; else sacrebleu's archive, downloaded (md5-checked)
    rule wmt_texts:
        input:
            unpack(lambda w: W.wmt_sources()),
        output:
            texts=[f"{W.run}/eval/wmt/text/{WMT_SET}.{lang}.txt" for lang in W.wmt_languages()],
            meta=f"{W.run}/eval/wmt/text/meta.json",
        log:
            f"{W.run}/logs/eval/wmt/texts.log",
        params:
            sources=W.raw_sources,
            source=lambda w, input: W.wmt_source_args(input),
            langs=list(W.evaluation["wmt"]["languages"]),
            out_dir=lambda w, output: os.path.dirname(output.meta),
            test_set=WMT_SET,
            prefix=f"{WMT_SET}.",
        conda:
            "../envs/laser.yaml"
        shell:
            W.logged("laser-repro wmt-texts {params.source} --test-set {params.test_set:q}"
                   " --langs {params.langs:q} --out-dir {params.out_dir:q} --prefix {params.prefix:q}", sources=True)

    rule wmt_similarity:
        input:
            emb=lambda w: [W.emb("wmt", WMT_SET, lang, w.model) for lang in W.task_languages("wmt", w.model)],
            meta=f"{W.run}/eval/wmt/text/meta.json",
        output:
            f"{W.run}/eval/wmt/{{model}}/scores.json",
        log:
            f"{W.run}/logs/{{model}}/eval/wmt/similarity.log",
        wildcard_constraints:
            model=alternatives(W.eval_models),
        params:
            emb=lambda w: W.wmt_emb_args(w.model),
        conda:
            "../envs/laser.yaml"
        shell:
            W.logged("laser-repro wmt-similarity {params.emb} --meta {input.meta:q} --scores {output:q}")

    use rule wmt_similarity as wmt_similarity_init with:
        input:
            emb=lambda w: [W.emb("wmt", WMT_SET, lang, w.model, init=True) for lang in W.task_languages("wmt", w.model)],
            meta=f"{W.run}/eval/wmt/text/meta.json",
        output:
            f"{W.run}/eval/wmt/{{model}}/init_scores.json",
        log:
            f"{W.run}/logs/{{model}}/eval/wmt/similarity_init.log",
        params:
            emb=lambda w: W.wmt_emb_args(w.model, init=True),

    rule wmt_tfidf:  # the non-learned baseline on the same sentences
        input:
            texts=[f"{W.run}/eval/wmt/text/{WMT_SET}.{lang}.txt" for lang in W.wmt_languages()],
            meta=f"{W.run}/eval/wmt/text/meta.json",
        output:
            f"{W.run}/eval/wmt/tfidf_scores.json",
        log:
            f"{W.run}/logs/eval/wmt/tfidf.log",
        params:
            texts=lambda w, input: W.wmt_text_args(input.texts),
        conda:
            "../envs/laser.yaml"
        shell:
            W.logged("laser-repro wmt-similarity {params.texts} --meta {input.meta:q} --scores {output:q}")


# ours (base model) beside the encoder at update 0 and TF-IDF, on the same sentences
rule table_wmt:
    input:
        **({"scores": f"{W.run}/eval/wmt/{W.laser_name}/scores.json", "init": f"{W.run}/eval/wmt/{W.laser_name}/init_scores.json",
            "tfidf": f"{W.run}/eval/wmt/tfidf_scores.json"} if W.task_ready("wmt") else {}),
    output:
        md="results/tables/{run}/wmt.md",
        csv=report("results/tables/{run}/wmt.csv", category="Paper tables", caption="../report/table.rst"),
        tex="results/tables/{run}/wmt.tex",
    log:
        "results/{run}/logs/table_wmt.log",
    params:
        missing=lambda w: W.missing_arg("wmt"),
        langs=list(W.evaluation.get("wmt", {}).get("languages", [])),
        scores=lambda w, input: W.wmt_table_scores_arg(input),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro eval-table wmt --run-name {wildcards.run:q} --languages {params.langs:q}"
               " {params.scores} {params.missing} --md {output.md:q} --csv {output.csv:q}")


# ---- XNLI (Tables 2 and 8) -------------------------------------------------------------------------------
rule xnli_texts:
    input:
        lambda w: W.xnli_zip(),
    output:
        premises="results/{run}/eval/xnli/text/{split}-p.{lang}.txt",
        hypotheses="results/{run}/eval/xnli/text/{split}-h.{lang}.txt",
        labels="results/{run}/eval/xnli/labels/{split}.{lang}.tsv",
    log:
        "results/{run}/logs/eval/xnli/texts/{split}.{lang}.log",
    wildcard_constraints:
        split="dev|test",
    params:
        sources=W.raw_sources,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro xnli-texts --zip {input:q} --split {wildcards.split:q} --lang {wildcards.lang:q}"
               " --premises {output.premises:q} --hypotheses {output.hypotheses:q} --labels {output.labels:q}",
               sources=True)


rule multinli_texts:
    input:
        lambda w: W.multinli_zip(),
    output:
        premises="results/{run}/eval/xnli/text/train-p.eng.txt",
        hypotheses="results/{run}/eval/xnli/text/train-h.eng.txt",
        labels="results/{run}/eval/xnli/labels/train.eng.tsv",
        stats="results/{run}/eval/xnli/labels/train.stats.json",
    log:
        "results/{run}/logs/eval/xnli/multinli.log",
    params:
        sources=W.raw_sources,
        cap=lambda w: W.multinli_cap_args(),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro multinli-texts --zip {input:q} {params.cap} --premises {output.premises:q}"
               " --hypotheses {output.hypotheses:q} --labels {output.labels:q} --stats {output.stats:q}", sources=True)


rule xnli_classify:
    input:
        unpack(W.xnli_classify_inputs),
    output:
        "results/{run}/eval/xnli/{model}/scores.json",
    log:
        "results/{run}/logs/{model}/eval/xnli/classify.log",
    benchmark:
        "results/{run}/benchmarks/{model}/xnli_classify.tsv"
    wildcard_constraints:
        model=alternatives(W.eval_models),
    params:
        tests=lambda w, input: W.classify_test_args("xnli", w.model, input),
        config=lambda w: W.shell_quote_json(W.evaluation["xnli"]["classifier"]),
    threads: W.eval_threads
    resources:
        mem_mb=16000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro xnli-classify --train-premises {input.train[0]:q} --train-hypotheses {input.train[1]:q}"
               " --train-labels {input.train[2]:q} --dev-premises {input.dev[0]:q} --dev-hypotheses {input.dev[1]:q}"
               " --dev-labels {input.dev[2]:q} {params.tests} --params {params.config} --threads {threads}"
               " --scores {output:q}")


rule table2_table8:
    input:
        [f"{W.run}/eval/xnli/{W.laser_name}/scores.json"] if W.task_ready("xnli") else [],
    output:
        md2="results/tables/{run}/table2.md",
        csv2=report("results/tables/{run}/table2.csv", category="Paper tables", caption="../report/table.rst"),
        tex2="results/tables/{run}/table2.tex",
        md8="results/tables/{run}/table8.md",
        csv8=report("results/tables/{run}/table8.csv", category="Paper tables", caption="../report/table.rst"),
        tex8="results/tables/{run}/table8.tex",
    log:
        "results/{run}/logs/table2_table8.log",
    params:
        missing=lambda w: W.missing_arg("xnli"),
        langs=list(W.evaluation.get("xnli", {}).get("languages", [])),
        scores=lambda w, input: shlex.join(["--scores", *input]) if input else "",
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro eval-table xnli --run-name {wildcards.run:q} --languages {params.langs:q} {params.scores}"
               " {params.missing} --md {output.md2:q} --csv {output.csv2:q} --md8 {output.md8:q} --csv8 {output.csv8:q}")


# ---- MLDoc (Table 3) --------------------------------------------------------------------------------------
rule mldoc_sentences:
    input:
        lambda w: W.mldoc_file(w.lang, w.split),
    output:
        text="results/{run}/eval/mldoc/text/{split}.{lang}.txt",
        docs="results/{run}/eval/mldoc/docs/{split}.{lang}.tsv",
    log:
        "results/{run}/logs/eval/mldoc/sentences/{split}.{lang}.log",
    wildcard_constraints:
        split="train|dev|test",
    params:
        sources=W.raw_sources,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro mldoc-sentences --input {input:q} --lang {wildcards.lang:q}"
               " --sentences {output.text:q} --docs {output.docs:q}", sources=True)


rule mldoc_classify:
    input:
        unpack(W.mldoc_classify_inputs),
    output:
        "results/{run}/eval/mldoc/{model}/scores.json",
    log:
        "results/{run}/logs/{model}/eval/mldoc/classify.log",
    wildcard_constraints:
        model=alternatives(W.eval_models),
    params:
        tests=lambda w, input: W.classify_test_args("mldoc", w.model, input),
        config=lambda w: W.shell_quote_json(W.evaluation["mldoc"]["classifier"]),
    threads: W.eval_threads
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro mldoc-classify --train {input.train:q} --dev {input.dev:q} {params.tests}"
               " --params {params.config} --threads {threads} --scores {output:q}")


rule table3:
    input:
        [f"{W.run}/eval/mldoc/{W.laser_name}/scores.json"] if W.task_ready("mldoc") else [],
    output:
        md="results/tables/{run}/table3.md",
        csv=report("results/tables/{run}/table3.csv", category="Paper tables", caption="../report/table.rst"),
        tex="results/tables/{run}/table3.tex",
    log:
        "results/{run}/logs/table3.log",
    params:
        missing=lambda w: W.missing_arg("mldoc"),
        langs=list(W.evaluation.get("mldoc", {}).get("languages", [])),
        scores=lambda w, input: shlex.join(["--scores", *input]) if input else "",
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro eval-table mldoc --run-name {wildcards.run:q} --languages {params.langs:q}"
               " {params.scores} {params.missing} --md {output.md:q} --csv {output.csv:q}")


# ---- Contamination: which test sentences the training text holds ------------------------------------------
# Every test file of the run (Tatoeba both sides, held-out FLORES, WMT, BUCC, XNLI, MLDoc, an N-way entry's
# validation lines) against the training text of each data entry (LASER: the extracted pair files and their
# Moses shards; nway_data: the training split and its Moses lines), exactly and normalised
# (laser_repro.evaluation.contamination: 8-byte hashes, one language at a time).
rule contamination:
    input:
        unpack(W.contamination_inputs),
    output:
        json="results/tables/{run}/contamination.json",
        md="results/tables/{run}/contamination.md",
        csv=report("results/tables/{run}/contamination.csv", category="Data", caption="../report/contamination.rst"),
        tex="results/tables/{run}/contamination.tex",
    log:
        "results/{run}/logs/contamination.log",
    benchmark:
        "results/{run}/benchmarks/contamination.tsv"
    params:
        spec=lambda w: W.contamination_spec(),  # wildcards only: Snakemake records it, a changed spec reruns
        sources=W.raw_sources,
    resources:
        # from the training text's size (laser_repro.evaluation.contamination.resources): 300 MB and 32 bytes per
        # line of the largest language, 0.03 s per MB; measured on the default run (189 MB of pair files and
        # shards, 637,558 lines, English 58 MB): 7.0-8.4 s, 244-249 MB peak RSS -> asks 1000 MB, 5 min
        mem_mb=lambda w, input: W.contamination_resources(w, input)["mem_mb"],
        runtime=lambda w, input: W.contamination_resources(w, input)["runtime"],
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro contamination --spec {params.spec:q} --json {output.json:q} --md {output.md:q}"
               " --csv {output.csv:q}", keys=W.contamination_config_keys(), sources=True)
