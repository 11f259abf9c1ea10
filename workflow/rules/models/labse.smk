# Family labse (Feng et al. 2020): a WordPiece vocabulary learned on the N-way training lines (language
# smoothing), the lines tokenized once with it into memory-mapped id files (labse_tokenize), optional
# MLM + TLM pre-training (shared by the models that pre-train alike), the dual encoder with the
# bidirectional additive-margin loss -- both stages through the shared launcher (torchrun / srun,
# preemption, resume with the fingerprint check); the paper's Table 2 from the UN P@1 and Tatoeba
# retrieval of each model, the model at update 0 and TF-IDF on the same sentences (model_un,
# model_tatoeba: encoders.smk).
import os

rule labse_vocab:
    input:
        lambda w: [f"{W.run}/nway/{w.data}/tok/train.{lang}" for lang in W.nway[w.data]["languages"]],
    output:
        tokenizer="results/{run}/nway/{data}/wordpiece/{size}-a{alpha}/tokenizer.json",
        stats="results/{run}/nway/{data}/wordpiece/{size}-a{alpha}/stats.json",
    log:
        "results/{run}/logs/nway/{data}/wordpiece_{size}-a{alpha}.log",
    benchmark:
        "results/{run}/benchmarks/nway/{data}/wordpiece_{size}-a{alpha}.tsv"
    wildcard_constraints:
        size=r"\d+",
        alpha=r"[0-9.]+",
    params:
        langs=lambda w: list(W.nway[w.data]["languages"]),
    resources:
        mem_mb=8000,
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro labse-vocab --langs {params.langs:q} --texts {input:q} --size {wildcards.size:q}"
               " --smoothing {wildcards.alpha:q} --output {output.tokenizer:q} --stats {output.stats:q}")


rule labse_tokenize:  # once per data and vocabulary: flat id files every training rank maps read-only
    input:
        text=lambda w: W.labse_text(w.data),
        tokenizer="results/{run}/nway/{data}/wordpiece/{size}-a{alpha}/tokenizer.json",
    output:
        # the trainer finds it beside its data: laser_repro.models.labse.token_store.store_dir
        directory("results/{run}/nway/{data}/wordpiece_ids/{size}-a{alpha}"),
    log:
        "results/{run}/logs/nway/{data}/wordpiece_ids_{size}-a{alpha}.log",
    benchmark:
        "results/{run}/benchmarks/nway/{data}/wordpiece_ids_{size}-a{alpha}.tsv"
    wildcard_constraints:
        size=r"\d+",
        alpha=r"[0-9.]+",
    params:
        data=lambda w: f"{W.run}/nway/{w.data}",
        langs=lambda w: list(W.nway[w.data]["languages"]),
    threads: 4
    resources:
        mem_mb=2000,
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro labse-tokenize --data {params.data:q} --tokenizer {input.tokenizer:q}"
               " --langs {params.langs:q} --threads {threads} --output {output:q}")


rule labse_pretrain:  # MLM + TLM with progressive stacking; its last checkpoint initialises the dual encoders
    input:
        text=lambda w: W.labse_text(W.labse[W.plan.labse_pretrainings[w.pretraining]]["data"]),
        tokenizer=lambda w: W.labse_tokenizer(W.plan.labse_pretrainings[w.pretraining]),
        # the token arrays of labse_tokenize: the data's lines with the vocabulary
        token_ids=lambda w: W.labse_token_ids(w.pretraining),
    output:
        final="results/{run}/labse_pretrain/{pretraining}/checkpoint_final.pt",
        curves="results/{run}/labse_pretrain/{pretraining}/curves.json",
    log:
        "results/{run}/logs/labse_pretrain/{pretraining}.log",
    benchmark:
        "results/{run}/benchmarks/labse_pretrain/{pretraining}.tsv"
    params:
        data=lambda w: f"{W.run}/nway/{W.labse[W.plan.labse_pretrainings[w.pretraining]]['data']}",
        save_dir=lambda w, output: os.path.join(os.path.dirname(output.final), "checkpoints"),
        # wildcards only: Snakemake records (and compares on a rerun) only params that take no input/output
        settings=lambda w: W.shell_quote_json(W.labse_pretrain_settings(w.pretraining)),
        launcher=lambda w, resources: "srun" if resources.get("mpi") else "local",
    threads: workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
        nodes=W.one_node_gpu_resource(W.labse_pretrain_gpus, "nodes"),
        gpu=W.one_node_gpu_resource(W.labse_pretrain_gpus, "gpu"),
        cpus_per_task=W.one_node_gpu_resource(W.labse_pretrain_gpus, "cpus_per_task"),
    conda:
        lambda w: W.conda_env(*W.labse_pretrain_gpus(w))
    shell:
        W.logged("laser-repro train --family labse --data {params.data:q} --save-dir {params.save_dir:q}"
               " --final {output.final:q} --curves {output.curves:q} --threads {threads}"
               " --launcher {params.launcher:q} --settings {params.settings}", keys=["models", "nway_data"])


rule labse_train:
    input:
        text=lambda w: W.labse_text(W.labse[w.model]["data"]),
        tokenizer=lambda w: W.labse_tokenizer(w.model),
        token_ids=lambda w: f"{W.run}/nway/{W.labse[w.model]['data']}/wordpiece_ids/{W.plan.labse_vocab(w.model)}",
        pretrained=lambda w: W.labse_pretrained(w.model),
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
        model=alternatives(W.labse),
    params:
        data=lambda w: f"{W.run}/nway/{W.labse[w.model]['data']}",
        save_dir=lambda w, output: os.path.join(os.path.dirname(output.final), "checkpoints"),
        settings=lambda w: W.shell_quote_json(W.model_train_settings(w.model)),  # wildcards only (see labse_pretrain)
        launcher=lambda w, resources: "srun" if resources.get("mpi") else "local",
    threads: workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
        nodes=W.one_node_gpu_resource(W.labse_train_gpus, "nodes"),
        gpu=W.one_node_gpu_resource(W.labse_train_gpus, "gpu"),
        cpus_per_task=W.one_node_gpu_resource(W.labse_train_gpus, "cpus_per_task"),
    conda:
        lambda w: W.conda_env(*W.labse_train_gpus(w))
    shell:
        W.logged("laser-repro train --family labse --data {params.data:q} --save-dir {params.save_dir:q}"
               " --final {output.final:q} --initial {output.initial:q} --record {output.record:q} --curves {output.curves:q}"
               " --threads {threads} --launcher {params.launcher:q} --settings {params.settings}",
               keys=["models", "nway_data"])


rule labse_tables:  # paper 003, Table 2: the paper's rows, ours beside the paper row each stands for
    input:
        unpack(W.labse_table2_inputs),
    output:
        md="results/tables/{run}/labse_2020/table2.md",
        csv=report("results/tables/{run}/labse_2020/table2.csv", category="Similarity search", caption="../../report/table.rst"),
        tex="results/tables/{run}/labse_2020/table2.tex",
    log:
        "results/{run}/logs/labse_tables.log",
    params:
        models=lambda w: W.shell_quote_json(W.labse_table_models()),
        tfidf=lambda w, input: W.labse_tfidf_args(input),
        records=lambda w: W.model_records_arg(W.labse),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro labse-table2 --models {params.models} {params.tfidf} --model-records {params.records:q}"
               " --md {output.md:q}"
               " --csv {output.csv:q} --run-name {wildcards.run:q}")


rule labse:  # `snakemake labse`: the LaBSE models: paper 003's Table 2 and the learning curves
    input:
        W.family_targets("labse"),
