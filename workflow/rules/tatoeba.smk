# Stages 7-8: Tatoeba similarity search per language, then Table 1.


rule tatoeba_prepare:
    input:
        xx=lambda w: W.tatoeba_test_file(w.lang, w.lang),
        eng=lambda w: W.tatoeba_test_file(w.lang, "eng"),
        codes=W.subword_model(),
    output:
        xx="results/{run}/tatoeba/bpe/{lang}-eng.{lang}",
        eng="results/{run}/tatoeba/bpe/{lang}-eng.eng",
    log:
        "results/{run}/logs/tatoeba/prepare/{lang}.log",
    params:
        lowercase=lambda w: "" if W.laser_data["preprocess"]["lowercase"] else "--keep-case",
        sources=W.raw_sources,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro prepare-text --codes {input.codes:q} {params.lowercase}"
               " --lang {wildcards.lang:q} --input {input.xx:q} --output {output.xx:q}"
               " --lang eng --input {input.eng:q} --output {output.eng:q}",
               keys=W.laser_keys("preprocess.lowercase"), sources=True)


# Beside the model, on the same sentences: the encoder at update 0 and character n-gram TF-IDF of the raw text.
rule tatoeba_evaluate:
    input:
        encoder=W.encoder_file,
        init=W.init_encoder_file,
        xx="results/{run}/tatoeba/bpe/{lang}-eng.{lang}",
        eng="results/{run}/tatoeba/bpe/{lang}-eng.eng",
        raw_xx=lambda w: W.tatoeba_test_file(w.lang, w.lang),
        raw_eng=lambda w: W.tatoeba_test_file(w.lang, "eng"),
    output:
        xx_emb="results/{run}/tatoeba/{model}/emb/{lang}-eng.{lang}.npy",
        eng_emb="results/{run}/tatoeba/{model}/emb/{lang}-eng.eng.npy",
        scores="results/{run}/tatoeba/{model}/scores/{lang}.json",
    log:
        "results/{run}/logs/{model}/tatoeba/{lang}.log",
    params:
        max_tokens=lambda w: W.laser_model["embed"]["max_tokens"],
    threads: lambda w: W.laser_model["embed"]["threads"]
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro tatoeba --encoder {input.encoder:q} --lang {wildcards.lang:q}"
               " --xx {input.xx:q} --eng {input.eng:q} --xx-emb {output.xx_emb:q} --eng-emb {output.eng_emb:q}"
               " --scores {output.scores:q} --max-tokens {params.max_tokens:q} --threads {threads}"
               " --init-encoder {input.init:q} --raw-xx {input.raw_xx:q} --raw-eng {input.raw_eng:q}",
               keys=W.laser_keys("embed.max_tokens"))


rule table1:
    input:
        scores=expand(f"{W.run}/tatoeba/{W.laser_name}/scores/{{lang}}.json", lang=W.plan.tatoeba_seen),
        train=[f"{W.run}/bin/train.{s}-{t}.{s}.idx" for s, t in W.plan.pairs],
    output:
        md="results/tables/{run}/table1.md",
        csv=report("results/tables/{run}/table1.csv", category="Paper tables", caption="../report/table.rst"),
        tex="results/tables/{run}/table1.tex",
    log:
        "results/{run}/logs/table1.log",
    params:
        run=W.cfg["run_name"],
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro tatoeba-table --run-name {params.run:q} --md {output.md:q} --csv {output.csv:q}"
               " --scores {input.scores:q} --train {input.train:q}")


rule table9:
    input:
        scores=expand(f"{W.run}/tatoeba/{W.laser_name}/scores/{{lang}}.json", lang=W.plan.tatoeba_unseen),
        train=[f"{W.run}/bin/train.{s}-{t}.{s}.idx" for s, t in W.plan.pairs],
    output:
        md="results/tables/{run}/table9.md",
        csv=report("results/tables/{run}/table9.csv", category="Paper tables", caption="../report/table.rst"),
        tex="results/tables/{run}/table9.tex",
    log:
        "results/{run}/logs/table9.log",
    params:
        run=W.cfg["run_name"],
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro tatoeba-table --unseen --run-name {params.run:q} --md {output.md:q} --csv {output.csv:q}"
               " --scores {input.scores:q} --train {input.train:q}")
