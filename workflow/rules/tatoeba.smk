# Stages 7-8: Tatoeba similarity search per language, then Table 1.


rule tatoeba_prepare:
    input:
        xx=lambda w: tatoeba_test_file(w.lang, w.lang),
        eng=lambda w: tatoeba_test_file(w.lang, "eng"),
        model=RUN + "/bpe/spm.model",
    output:
        xx=RUN + "/tatoeba/bpe/{lang}-eng.{lang}",
        eng=RUN + "/tatoeba/bpe/{lang}-eng.eng",
    log:
        RUN + "/logs/tatoeba/prepare/{lang}.log",
    params:
        lowercase="" if CFG["preprocess"]["lowercase"] else "--keep-case",
    shell:
        logged("{PY} -m laser_repro.cli prepare-text --model {input.model} {params.lowercase}"
               " --lang {wildcards.lang} --input {input.xx} --output {output.xx}"
               " --lang eng --input {input.eng} --output {output.eng}")


rule tatoeba_evaluate:
    input:
        encoder=RUN + "/encoder/encoder.pt",
        xx=RUN + "/tatoeba/bpe/{lang}-eng.{lang}",
        eng=RUN + "/tatoeba/bpe/{lang}-eng.eng",
    output:
        xx_emb=RUN + "/tatoeba/emb/{lang}-eng.{lang}.npy",
        eng_emb=RUN + "/tatoeba/emb/{lang}-eng.eng.npy",
        scores=RUN + "/tatoeba/scores/{lang}.json",
    log:
        RUN + "/logs/tatoeba/evaluate/{lang}.log",
    params:
        max_tokens=CFG["embed"]["max_tokens"],
    threads: CFG["embed"]["threads"]
    shell:
        logged("{PY} -m laser_repro.cli tatoeba --encoder {input.encoder} --lang {wildcards.lang}"
               " --xx {input.xx} --eng {input.eng} --xx-emb {output.xx_emb} --eng-emb {output.eng_emb}"
               " --scores {output.scores} --max-tokens {params.max_tokens} --threads {threads}")


rule table1:
    input:
        scores=expand(RUN + "/tatoeba/scores/{lang}.json", lang=PLAN.tatoeba_languages),
        train=[f"{RUN}/bpe/train/{s}-{t}.{s}" for s, t in PLAN.pairs],
    output:
        md=TABLE1[0],
        csv=TABLE1[1],
    log:
        RUN + "/logs/table1.log",
    params:
        run=CFG["run_name"],
    shell:
        logged("{PY} -m laser_repro.cli table1 --run-name {params.run} --md {output.md} --csv {output.csv}"
               " --scores {input.scores} --train {input.train}")
