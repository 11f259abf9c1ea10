# What every model of `models` (any family but LASER) goes through after training: the encoder file, the
# model at update 0 (the random-init baseline), the similarity error of Algorithm 1 on the held-out lines
# of its N-way data (the model and update 0), and the learning-curve figure beside the TF-IDF baseline;
# Tatoeba retrieval (LASER's: tatoeba.smk) and UN retrieval (every model, LASER's too), each model with
# its update 0 in one job, beside TF-IDF on the same sentences.
rule model_export:
    input:
        "results/{run}/models/{model}/checkpoint_final.pt",
    output:
        "results/{run}/models/{model}/encoder.pt",
    log:
        "results/{run}/logs/{model}/export.log",
    wildcard_constraints:
        model=alternatives(W.family_models),
    params:
        family=lambda w: W.family_models[w.model]["family"],
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro export --family {params.family:q} --checkpoint {input:q} --output {output:q}")


use rule model_export as model_export_init with:  # the random-init baseline (update 0)
    input:
        "results/{run}/models/{model}/checkpoint_init.pt",
    output:
        "results/{run}/models/{model}/encoder_init.pt",
    log:
        "results/{run}/logs/{model}/export_init.log",


rule model_similarity:  # Algorithm 1 on the validation lines: the model and the model at update 0
    input:
        encoder="results/{run}/models/{model}/encoder.pt",
        init="results/{run}/models/{model}/encoder_init.pt",
        text=W.model_valid_text,
    output:
        "results/{run}/eval/models/{model}/similarity.json",
    log:
        "results/{run}/logs/{model}/similarity.log",
    wildcard_constraints:
        model=alternatives(W.family_models),
    params:
        data=W.model_text_dir,
        langs=lambda w: W.plan.encoder_languages(w.model),
    threads: 2
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro similarity --encoder {input.encoder:q} --init-encoder {input.init:q}"
               " --data-dir {params.data:q} --split valid --langs {params.langs:q} --threads {threads}"
               " --output {output:q}")


rule model_curves_plot:
    input:
        curves="results/{run}/models/{model}/curves.json",
        tfidf=lambda w: f"{W.run}/eval/nway/{W.family_models[w.model]['data']}/tfidf.json",
    output:
        report("results/figures/{run}/curves_{model}.png", category="Learning curves"),
    log:
        "results/{run}/logs/{model}/curves_plot.log",
    wildcard_constraints:
        model=alternatives(W.family_models),
    params:
        title=lambda w: f"{W.cfg['run_name']} / {w.model}: {W.family_models[w.model].get('description', w.model)}",
        family=lambda w: W.family_models[w.model]["family"],
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro nway-curves --curves {input.curves:q} --tfidf {input.tfidf:q} --title {params.title:q}"
               " --family {params.family:q} --output {output:q}")


rule model_tatoeba:  # xx <-> eng retrieval on the Tatoeba test set, any family but LASER's (tatoeba.smk): the model and update 0
    input:
        unpack(lambda w: W.model_codes(w.model)),
        encoder="results/{run}/models/{model}/encoder.pt",
        init="results/{run}/models/{model}/encoder_init.pt",
        xx=lambda w: [W.tatoeba_test_file(lang, lang) for lang in W.plan.model_tatoeba_languages(w.model)],
        eng=lambda w: [W.tatoeba_test_file(lang, "eng") for lang in W.plan.model_tatoeba_languages(w.model)],
    output:
        model="results/{run}/eval/models/{model}/tatoeba_encoder.json",
        init="results/{run}/eval/models/{model}/tatoeba_encoder_init.json",
    log:
        "results/{run}/logs/{model}/tatoeba.log",
    wildcard_constraints:
        model=alternatives(W.family_models),
    params:
        langs=lambda w: W.plan.model_tatoeba_languages(w.model),
        keep_case=lambda w: "" if W.eval_lowercase(w.model) else "--keep-case",
        codes=lambda w, input: W.model_codes_arg(w.model, input),
    threads: 2
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro retrieval --task tatoeba --encoder {input.encoder:q} {input.init:q} {params.codes}"
               " --langs {params.langs:q} --xx {input.xx:q} --eng {input.eng:q} {params.keep_case}"
               " --threads {threads} --output {output.model:q} {output.init:q}")


rule tatoeba_tfidf:  # the non-learned baseline on the same Tatoeba sentences (family_tatoeba_languages)
    input:
        xx=lambda w: [W.tatoeba_test_file(lang, lang) for lang in W.family_tatoeba_languages()],
        eng=lambda w: [W.tatoeba_test_file(lang, "eng") for lang in W.family_tatoeba_languages()],
    output:
        "results/{run}/eval/tfidf/tatoeba.json",
    log:
        "results/{run}/logs/tatoeba_tfidf.log",
    params:
        langs=lambda w: W.family_tatoeba_languages(),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro retrieval --task tatoeba --tfidf --langs {params.langs:q} --xx {input.xx:q}"
               " --eng {input.eng:q} --output {output:q}")


rule model_un:  # UN retrieval (LaBSE's P@1 = 100 - error) of any model: each sentence's English translation among all English ones
    input:
        unpack(lambda w: W.model_codes(w.model)),
        encoder="results/{run}/models/{model}/encoder.pt",
        init="results/{run}/models/{model}/encoder_init.pt",
        xx=lambda w: [W.local_corpus_file(W.evaluation["un"]["corpus"], lang) for lang in W.task_languages("un", w.model)],
        eng=lambda w: [W.local_corpus_file(W.evaluation["un"]["corpus"], "eng") for _ in W.task_languages("un", w.model)],
    output:
        model="results/{run}/eval/models/{model}/un_encoder.json",
        init="results/{run}/eval/models/{model}/un_encoder_init.json",
    log:
        "results/{run}/logs/{model}/un.log",
    wildcard_constraints:
        model=alternatives(W.eval_models),
    params:
        langs=lambda w: W.task_languages("un", w.model),
        keep_case=lambda w: "" if W.eval_lowercase(w.model) else "--keep-case",
        codes=lambda w, input: W.model_codes_arg(w.model, input),
    threads: 2
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro retrieval --task un --encoder {input.encoder:q} {input.init:q} {params.codes}"
               " --langs {params.langs:q} --xx {input.xx:q} --eng {input.eng:q} {params.keep_case}"
               " --threads {threads} --output {output.model:q} {output.init:q}")


rule model_europarl:  # Europarl sentence retrieval (MUSE's protocol, paper 002 Table 3) of one direction: any model and its update 0
    input:
        unpack(lambda w: W.model_codes(w.model)),
        encoder="results/{run}/models/{model}/encoder.pt",
        init="results/{run}/models/{model}/encoder_init.pt",
        src=lambda w: W.europarl_file(w.src, w.tgt, w.src),
        tgt=lambda w: W.europarl_file(w.src, w.tgt, w.tgt),
    output:
        model="results/{run}/eval/models/{model}/europarl_{src}-{tgt}_encoder.json",
        init="results/{run}/eval/models/{model}/europarl_{src}-{tgt}_encoder_init.json",
    log:
        "results/{run}/logs/{model}/europarl_{src}-{tgt}.log",
    wildcard_constraints:
        model=alternatives(W.eval_models),
        src="[a-z]{3}",
        tgt="[a-z]{3}",
    params:
        sizes=lambda w: W.europarl_size_args(),
        codes=lambda w, input: W.model_codes_arg(w.model, input),
        # MUSE's protocol lowercases (Bi-Sent2Vec); a sentence encoder sees its training data's case
        keep_case=lambda w: "" if w.model in W.bisent2vec or W.eval_lowercase(w.model) else "--keep-case",
    threads: 2
    resources:
        mem_mb=16000,
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro europarl-retrieval --encoder {input.encoder:q} {input.init:q} {params.codes}"
               " --output {output.model:q} {output.init:q} --src {wildcards.src:q} --tgt {wildcards.tgt:q}"
               " --src-file {input.src:q} --tgt-file {input.tgt:q} --moses {params.keep_case} {params.sizes}"
               " --threads {threads}", keys=["evaluation.europarl"])


rule europarl_tfidf:  # the non-learned baseline on the same Europarl queries and keys, one direction
    input:
        src=lambda w: W.europarl_file(w.src, w.tgt, w.src),
        tgt=lambda w: W.europarl_file(w.src, w.tgt, w.tgt),
    output:
        "results/{run}/eval/tfidf/europarl_{src}-{tgt}.json",
    log:
        "results/{run}/logs/europarl_tfidf_{src}-{tgt}.log",
    wildcard_constraints:
        src="[a-z]{3}",
        tgt="[a-z]{3}",
    params:
        sizes=lambda w: W.europarl_size_args(),
    threads: 2
    resources:
        mem_mb=16000,
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro europarl-retrieval --tfidf {output:q} --src {wildcards.src:q} --tgt {wildcards.tgt:q}"
               " --src-file {input.src:q} --tgt-file {input.tgt:q} --moses {params.sizes} --threads {threads}",
               keys=["evaluation.europarl"])


rule un_tfidf:  # the non-learned baseline on the same UN sentences
    input:
        xx=lambda w: [W.local_corpus_file(W.evaluation["un"]["corpus"], lang) for lang in W.evaluation["un"]["languages"]],
        eng=lambda w: [W.local_corpus_file(W.evaluation["un"]["corpus"], "eng") for _ in W.evaluation["un"]["languages"]],
    output:
        "results/{run}/eval/tfidf/un.json",
    log:
        "results/{run}/logs/un_tfidf.log",
    params:
        langs=lambda w: list(W.evaluation["un"]["languages"]),
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro retrieval --task un --tfidf --langs {params.langs:q} --xx {input.xx:q}"
               " --eng {input.eng:q} --output {output:q}")
