# Family bisent2vec (Sabet et al. 2019): one model per language pair on the Moses-tokenised lines of an
# nway_data entry -- a word vocabulary per pair (shared by its uni. and uni. + bi. models), training
# through the shared launcher (one process, hogwild threads; preemption, resume) -- then, beside the
# generic rules of encoders.smk (FLORES similarity, curves) and model_tatoeba: MUSE word translation
# (evaluation.muse_words), Europarl sentence retrieval (evaluation.europarl) with their baselines, and
# the paper's tables.
import os

rule bisent2vec_vocab:
    input:
        lambda w: [f"{W.run}/nway/{w.data}/tok/train.{lang}" for lang in (w.l1, w.l2)],
    output:
        "results/{run}/nway/{data}/bisent2vec_vocab/{l1}-{l2}.min{min_count}.max{max_size}.json",
    log:
        "results/{run}/logs/nway/{data}/bisent2vec_vocab_{l1}-{l2}.min{min_count}.max{max_size}.log",
    benchmark:
        "results/{run}/benchmarks/nway/{data}/bisent2vec_vocab_{l1}-{l2}.min{min_count}.max{max_size}.tsv"
    wildcard_constraints:
        l1="[a-z]{3}",
        l2="[a-z]{3}",
        min_count=r"\d+",
        max_size=r"\d+",
    resources:
        mem_mb=16000,
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro bisent2vec-vocab --langs {wildcards.l1:q} {wildcards.l2:q} --texts {input:q}"
               " --min-count {wildcards.min_count:q} --max-size {wildcards.max_size:q} --output {output:q}")


rule bisent2vec_train:
    input:
        text=lambda w: W.bisent2vec_text(w.model),
        vocab=lambda w: W.bisent2vec_vocab_file(w.model),
    output:
        final="results/{run}/models/{model}/checkpoint_final.pt",
        initial="results/{run}/models/{model}/checkpoint_init.pt",
        record="results/{run}/models/{model}/model_record.json",
        curves="results/{run}/models/{model}/curves.json",
    log:
        "results/{run}/logs/{model}/train.log",
    benchmark:
        "results/{run}/benchmarks/{model}/train.tsv"
    wildcard_constraints:
        model=alternatives(W.bisent2vec),
    params:
        data=lambda w: f"{W.run}/nway/{W.bisent2vec[w.model]['data']}",
        save_dir=lambda w, output: os.path.join(os.path.dirname(output.final), "checkpoints"),
        # wildcards only: Snakemake records (and compares on a rerun) only params that take no input/output
        settings=lambda w: W.shell_quote_json(W.model_train_settings(w.model)),
        launcher=lambda w, resources: "srun" if resources.get("mpi") else "local",
    threads: lambda w: W.bisent2vec[w.model]["train"]["threads"] or workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro train --family bisent2vec --data {params.data:q} --save-dir {params.save_dir:q}"
               " --final {output.final:q} --initial {output.initial:q} --record {output.record:q} --curves {output.curves:q}"
               " --threads {threads} --launcher {params.launcher:q} --settings {params.settings}",
               keys=["models", "nway_data"])


rule bisent2vec_words:  # MUSE word translation P@1 (NN, CSLS) of one direction: the model, update 0, identical strings
    input:
        encoder="results/{run}/models/{model}/encoder.pt",
        init="results/{run}/models/{model}/encoder_init.pt",
        dictionary=lambda w: W.muse_dictionary(w.src, w.tgt),
    output:
        model="results/{run}/eval/models/{model}/words_{src}-{tgt}_encoder.json",
        init="results/{run}/eval/models/{model}/words_{src}-{tgt}_encoder_init.json",
        identical="results/{run}/eval/models/{model}/words_{src}-{tgt}_identical.json",
    log:
        "results/{run}/logs/{model}/words_{src}-{tgt}.log",
    wildcard_constraints:
        model=alternatives(W.bisent2vec),
        src="[a-z]{3}",
        tgt="[a-z]{3}",
    params:
        max_target=lambda w: W.evaluation["muse_words"]["max_target"],
    threads: 2
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro word-translation --encoder {input.encoder:q} {input.init:q}"
               " --output {output.model:q} {output.init:q} --identical-strings {output.identical:q}"
               " --src {wildcards.src:q} --tgt {wildcards.tgt:q} --dictionary {input.dictionary:q}"
               " --max-target {params.max_target:q} --threads {threads}")


rule download_muse_dictionary:
    output:
        "resources/muse/dictionaries/{src}-{tgt}.5000-6500.txt",
    log:
        "results/logs/downloads/muse_{src}-{tgt}.log",
    wildcard_constraints:
        src="[a-z]{2}",
        tgt="[a-z]{2}",
    params:
        url=lambda w: W.evaluation["muse_words"]["url"].format(src=w.src, tgt=w.tgt),
        retries=W.evaluation.get("retries", 5),
        deadline=W.evaluation["deadline_s"],
        mirror=lambda w: W.eval_mirror_args(W.evaluation["muse_words"]["url"].format(src=w.src, tgt=w.tgt)),
        sources=W.downloaded_from(lambda w: W.evaluation["muse_words"]["url"].format(src=w.src, tgt=w.tgt)),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch --url {params.url:q} --dest {output:q} --retries {params.retries:q}"
               " --deadline {params.deadline:q} {params.mirror}",
               keys=["evaluation.muse_words.url"], sources=True)


rule download_europarl:
    output:
        "resources/europarl/{xx}-en.tgz",
    log:
        "results/logs/downloads/europarl_{xx}-en.log",
    wildcard_constraints:
        xx="[a-z]{2}",
    params:
        url=lambda w: W.evaluation["europarl"]["url"].format(xx=w.xx),
        sha=lambda w: W.europarl_sha256_arg(w.xx),
        retries=W.evaluation.get("retries", 5),
        deadline=W.evaluation["deadline_s"],
        mirror=lambda w: W.eval_mirror_args(W.evaluation["europarl"]["url"].format(xx=w.xx)),
        sources=W.downloaded_from(lambda w: W.evaluation["europarl"]["url"].format(xx=w.xx)),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch --url {params.url:q} --dest {output:q} {params.sha} --retries {params.retries:q}"
               " --deadline {params.deadline:q} {params.mirror}",
               keys=["evaluation.europarl.url"], sources=True)


rule extract_europarl:
    input:
        "resources/europarl/{xx}-en.tgz",
    output:
        "resources/europarl/europarl-v7.{xx}-en.{side}",
    log:
        "results/logs/downloads/europarl_{xx}-en.{side}.log",
    wildcard_constraints:
        xx="[a-z]{2}",
        side="[a-z]{2}",
    params:
        member=lambda w: W.evaluation["europarl"]["member"].format(xx=w.xx, side=w.side),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro extract-member --archive {input:q} --member {params.member:q} --output {output:q}")


rule bisent2vec_tables:  # paper 002: Tables 1, 3, 4 (when their tasks are configured) and the pairs table
    input:
        unpack(W.bisent2vec_table_inputs),
        records=lambda w: [W.model_record_file(name) for name in W.bisent2vec],
    output:
        [f"results/tables/{{run}}/bisent2vec_2019/{t}.{ext}" for t in W.bisent2vec_tables() for ext in ("md", "csv", "tex")],
    log:
        "results/{run}/logs/bisent2vec_tables.log",
    params:
        out_dir=lambda w, output: os.path.dirname(output[0]),
        models=lambda w: W.shell_quote_json(W.bisent2vec_table_models()),
        baselines=lambda w, input: W.bisent2vec_baseline_args(input),
        records=lambda w: W.model_records_arg(W.bisent2vec),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro bisent2vec-tables --models {params.models} {params.baselines} --out-dir {params.out_dir:q}"
               " --model-records {params.records:q}"
               " --run-name {wildcards.run:q}")


localrules: download_muse_dictionary, download_europarl, extract_europarl


rule bisent2vec:  # `snakemake bisent2vec`: the Bi-Sent2Vec models: paper 002's Tables 1, 3, 4, the pairs table, the learning curves
    input:
        W.family_targets("bisent2vec"),
