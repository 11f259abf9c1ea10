# Family multienc (Schwenk & Douze 2017): an encoder and a decoder per language, trained on partial
# training paths of N-way data (nway.smk), through the same launcher as LASER (torchrun / srun,
# preemption, resume with the fingerprint check); the similarity error of Algorithm 1 on the
# validation lines, beside the random-init and TF-IDF baselines; the paper's Tables 1-4.
rule multienc_train:
    input:
        data=lambda w: f"{RUN}/nway/{MULTIENC[w.model]['data']}/bpe",
    output:
        final="results/{run}/models/{model}/checkpoint_final.pt",
        initial="results/{run}/models/{model}/checkpoint_init.pt",
        curves="results/{run}/models/{model}/curves.json",
    log:
        "results/{run}/logs/{model}/train.log",
    benchmark:
        "results/{run}/benchmarks/{model}/train.tsv"
    wildcard_constraints:
        model=alternatives(MULTIENC),
    params:
        save_dir=lambda w, output: os.path.join(os.path.dirname(output.final), "checkpoints"),
        settings=lambda w: shell_quote_json(PLAN.multienc_settings(w.model)),
        launcher=lambda w, resources: "srun" if resources.get("mpi") else "local",
    threads: workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro train --family multienc --data {input.data:q} --save-dir {params.save_dir:q}"
               " --final {output.final:q} --initial {output.initial:q} --curves {output.curves:q}"
               " --threads {threads} --launcher {params.launcher:q} --settings {params.settings}",
               keys=["models", "nway_data"])


rule multienc_export:
    input:
        "results/{run}/models/{model}/checkpoint_final.pt",
    output:
        "results/{run}/models/{model}/encoder.pt",
    log:
        "results/{run}/logs/{model}/export.log",
    wildcard_constraints:
        model=alternatives(MULTIENC),
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro export --family multienc --checkpoint {input:q} --output {output:q}")


use rule multienc_export as multienc_export_init with:  # the random-init baseline (update 0)
    input:
        "results/{run}/models/{model}/checkpoint_init.pt",
    output:
        "results/{run}/models/{model}/encoder_init.pt",
    log:
        "results/{run}/logs/{model}/export_init.log",


rule multienc_similarity:  # Algorithm 1 on the validation lines: the model and the model at update 0
    input:
        encoder="results/{run}/models/{model}/encoder.pt",
        init="results/{run}/models/{model}/encoder_init.pt",
        data=lambda w: f"{RUN}/nway/{MULTIENC[w.model]['data']}/bpe",
    output:
        "results/{run}/models/{model}/similarity.json",
    log:
        "results/{run}/logs/{model}/similarity.log",
    wildcard_constraints:
        model=alternatives(MULTIENC),
    params:
        langs=lambda w: PLAN.encoder_languages(w.model),
    threads: 2
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro similarity --encoder {input.encoder:q} --init-encoder {input.init:q}"
               " --data-dir {input.data:q} --split valid --langs {params.langs:q} --threads {threads}"
               " --output {output:q}")


rule multienc_curves_plot:
    input:
        curves="results/{run}/models/{model}/curves.json",
        tfidf=lambda w: f"{RUN}/nway/{MULTIENC[w.model]['data']}/tfidf.json",
    output:
        report("results/figures/{run}/curves_{model}.png", category="Learning curves"),
    log:
        "results/{run}/logs/{model}/curves_plot.log",
    wildcard_constraints:
        model=alternatives(MULTIENC),
    params:
        title=lambda w: f"{CFG['run_name']} / {w.model}: {MULTIENC[w.model].get('description', w.model)}",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro nway-curves --curves {input.curves:q} --tfidf {input.tfidf:q} --title {params.title:q}"
               " --output {output:q}")


rule multienc_tables:  # paper 004, Tables 1-4: the paper's values, ours, the baselines
    input:
        results=lambda w: [f"{RUN}/models/{name}/similarity.json" for name in MULTIENC],
        tfidf=lambda w: sorted({f"{RUN}/nway/{m['data']}/tfidf.json" for m in MULTIENC.values()}),
    output:
        expand("results/tables/{{run}}/schwenk_douze_2017/table{n}.{ext}", n=[1, 2, 3, 4], ext=["md", "csv"]),
    log:
        "results/{run}/logs/multienc_tables.log",
    params:
        out_dir=lambda w, output: os.path.dirname(output[0]),
        models=lambda w: shell_quote_json([{"name": name, "description": m.get("description", name),
                                            "paper_rows": list(m["paper_rows"])} for name, m in MULTIENC.items()]),
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro multienc-tables --similarity {input.results:q} --models {params.models}"
               " --tfidf {input.tfidf:q} --out-dir {params.out_dir:q} --run-name {wildcards.run:q}")
