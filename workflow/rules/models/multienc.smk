# Family multienc (Schwenk & Douze 2017): an encoder and a decoder per language, trained on partial
# training paths of N-way data (nway.smk), through the same launcher as LASER (torchrun / srun,
# preemption, resume with the fingerprint check); export, similarity error and curves: encoders.smk;
# the paper's Tables 1-4.
import os

rule multienc_train:
    input:
        data=lambda w: f"{W.run}/nway/{W.multienc[w.model]['data']}/bpe",
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
        model=alternatives(W.multienc),
    params:
        save_dir=lambda w, output: os.path.join(os.path.dirname(output.final), "checkpoints"),
        settings=lambda w: W.shell_quote_json(W.model_train_settings(w.model)),
        launcher=lambda w, resources: "srun" if resources.get("mpi") else "local",
    threads: workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
        nodes=W.one_node_gpu_resource(W.multienc_train_gpus, "nodes"),
        gpu=W.one_node_gpu_resource(W.multienc_train_gpus, "gpu"),
        cpus_per_task=W.one_node_gpu_resource(W.multienc_train_gpus, "cpus_per_task"),
    conda:
        lambda w: W.conda_env(*W.multienc_train_gpus(w))
    shell:
        W.logged("laser-repro train --family multienc --data {input.data:q} --save-dir {params.save_dir:q}"
               " --final {output.final:q} --initial {output.initial:q} --record {output.record:q} --curves {output.curves:q}"
               " --threads {threads} --launcher {params.launcher:q} --settings {params.settings}",
               keys=["models", "nway_data"])


rule multienc_tables:  # paper 004, Tables 1-4: the paper's values, ours, the baselines
    input:
        results=lambda w: [f"{W.run}/eval/models/{name}/similarity.json" for name in W.tabled(W.multienc)],
        replicates=lambda w: [f"{W.run}/eval/models/{name}/similarity.json" for name in W.multienc if name not in W.tabled(W.multienc)],
        tfidf=lambda w: sorted({f"{W.run}/eval/nway/{m['data']}/tfidf.json" for m in W.multienc.values()}),
        records=lambda w: [W.model_record_file(name) for name in W.multienc],
    output:
        expand("results/tables/{{run}}/schwenk_douze_2017/table{n}.{ext}", n=[1, 2, 3, 4], ext=["md", "csv", "tex"]),
    log:
        "results/{run}/logs/multienc_tables.log",
    params:
        out_dir=lambda w, output: os.path.dirname(output[0]),
        models=lambda w: W.shell_quote_json(W.multienc_table_models()),
        records=lambda w: W.model_records_arg(W.multienc),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro multienc-tables --similarity {input.results:q} --models {params.models}"
               " --tfidf {input.tfidf:q} --out-dir {params.out_dir:q} --run-name {wildcards.run:q}"
               " --model-records {params.records:q}")


rule multienc:  # `snakemake multienc`: the Schwenk & Douze models: paper 004's Tables 1-4 and the learning curves
    input:
        W.family_targets("multienc"),
