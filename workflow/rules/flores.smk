# FLORES-200 xsim against English (config flores_eval): held-out lines and a training-line sample, the
# model beside the TF-IDF and random-init baselines; the held-out pairs binarized for the learning curves.
import os



# One job per step for all languages: each step takes seconds, and 92 languages x 3 jobs would spend
# more time starting processes than working.
rule flores_select:
    input:
        raw=lambda w: [W.flores_raw_file(lang) for lang in ["eng", *W.plan.flores_languages]],
    output:
        W.flores_texts("raw"),
    log:
        f"{W.run}/logs/flores/select.log",
    params:
        langs=["eng", *W.plan.flores_languages],
        dest=lambda w, output: os.path.dirname(output[0]),
        heldout=list(W.flores["heldout_lines"]) if W.flores else [],
        sample=W.flores["train_sample"] if W.flores else 0,
        seed=W.flores["seed"] if W.flores else 0,
        sources=W.raw_sources,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro flores-select --lang {params.langs:q} --raw {input.raw:q} --heldout {params.heldout:q}"
               " --sample {params.sample:q} --seed {params.seed:q} --dest {params.dest:q}",
               keys=["flores_eval.heldout_lines", "flores_eval.train_sample", "flores_eval.seed"], sources=True)


rule flores_prepare:
    input:
        texts=W.flores_texts("raw"),
        codes=W.subword_model(),
    output:
        W.flores_texts("bpe"),
    log:
        f"{W.run}/logs/flores/prepare.log",
    params:
        lowercase=lambda w: "" if W.laser_data["preprocess"]["lowercase"] else "--keep-case",
        args=lambda w, input, output: W.flores_prepare_args(input, output),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro prepare-text --codes {input.codes:q} {params.lowercase} {params.args}",
               keys=W.laser_keys("preprocess.lowercase"))


rule flores_binarize_valid:
    input:
        texts=lambda w: W.flores_texts("bpe", ["eng", *W.plan.flores_languages]),
        dict=f"{W.run}/bin/dict.txt",
    output:
        W.binarized_files(W.plan.curve_pairs, split="valid"),
    log:
        f"{W.run}/logs/binarize/valid.log",
    params:
        pairs=[f"{s}-{t}" for s, t in W.plan.curve_pairs],
        prefix=lambda w, input: input.texts[0].rsplit(".", 1)[0],  # .../bpe/heldout (texts[0] is heldout.eng)
        dest=lambda w, input: os.path.dirname(input.dict),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro binarize-valid --pairs {params.pairs:q} --prefix {params.prefix:q}"
               " --dict {input.dict:q} --dest {params.dest:q}")


rule flores_tfidf:
    input:
        lambda w: W.flores_texts("raw"),
    output:
        "results/{run}/flores/tfidf.json",
    log:
        "results/{run}/logs/flores/tfidf.log",
    params:
        raw_dir=lambda w, input: os.path.dirname(input[0]),
        langs=lambda w: list(W.plan.flores_languages),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro flores-tfidf --raw-dir {params.raw_dir:q} --langs {params.langs:q} --output {output:q}")


rule flores_xsim:
    input:
        encoder=W.encoder_file,
        init=W.init_encoder_file,
        texts=lambda w: W.flores_texts("bpe"),
    output:
        "results/{run}/flores/{model}/scores.json",
    log:
        "results/{run}/logs/{model}/flores_xsim.log",
    params:
        bpe_dir=lambda w, input: os.path.dirname(input.texts[0]),
        langs=lambda w: list(W.plan.flores_languages),
        max_tokens=lambda w: W.laser_model["embed"]["max_tokens"],
    threads: lambda w: W.laser_model["embed"]["threads"]
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro flores-xsim --encoder {input.encoder:q} --init-encoder {input.init:q}"
               " --bpe-dir {params.bpe_dir:q} --langs {params.langs:q} --max-tokens {params.max_tokens:q}"
               " --threads {threads} --output {output:q}", keys=W.laser_keys("embed.max_tokens"))


rule flores_table:
    input:
        scores=f"{W.run}/flores/{W.laser_name}/scores.json",
        tfidf=f"{W.run}/flores/tfidf.json",
    output:
        md="results/tables/{run}/flores_xsim.md",
        csv=report("results/tables/{run}/flores_xsim.csv", category="Similarity search", caption="../report/table.rst"),
        tex="results/tables/{run}/flores_xsim.tex",
    log:
        "results/{run}/logs/flores_table.log",
    params:
        run=W.cfg["run_name"],
        trained=lambda w: sorted(W.plan.trained_languages),
        heldout=lambda w: list(W.flores["heldout_lines"]),
        sample=lambda w: W.flores["train_sample"],
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro flores-table --scores {input.scores:q} --tfidf {input.tfidf:q} --trained {params.trained:q}"
               " --run-name {params.run:q} --heldout {params.heldout:q} --sample {params.sample:q}"
               " --md {output.md:q} --csv {output.csv:q}")


rule learning_curves:
    input:
        curves="results/{run}/models/{model}/curves.jsonl",
        tfidf="results/{run}/flores/tfidf.json",
    output:
        report("results/figures/{run}/curves_{model}.png", category="Learning curves"),
    log:
        "results/{run}/logs/{model}/curves_plot.log",
    params:
        title=lambda w: f"{W.cfg['run_name']} / {w.model}: learning curves",
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro curves-plot --curves {input.curves:q} --tfidf {input.tfidf:q}"
               " --title {params.title:q} --png {output:q}")
