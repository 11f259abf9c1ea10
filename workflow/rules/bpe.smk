# Stage 3: one joint BPE model learned on a seeded sample of all training text, applied to every pair.


rule bpe_sample:
    input:
        all_tok_shards(),
    output:
        RUN + "/bpe/sample.txt",
    log:
        RUN + "/logs/bpe/sample.log",
    params:
        max_lines=CFG["bpe"]["sample_lines"],
        seed=CFG["bpe"]["seed"],
    resources:
        mem_mb=1000,
    shell:
        logged("{PY} -m laser_repro.cli bpe-sample --output {output} --max-lines {params.max_lines}"
               " --seed {params.seed} --inputs {input}")


rule bpe_learn:
    input:
        RUN + "/bpe/sample.txt",
    output:
        model=RUN + "/bpe/spm.model",
        vocab=RUN + "/bpe/spm.vocab",
    log:
        RUN + "/logs/bpe/learn.log",
    benchmark:
        RUN + "/benchmarks/bpe_learn.tsv"
    params:
        prefix=RUN + "/bpe/spm",
        vocab_size=CFG["bpe"]["vocab_size"],
        coverage=CFG["bpe"]["character_coverage"],
        seed=CFG["bpe"]["seed"],
    threads: CFG["bpe"]["threads"]
    resources:
        mem_mb=16000,
    shell:
        logged("{PY} -m laser_repro.cli bpe-learn --sample {input} --model-prefix {params.prefix}"
               " --vocab-size {params.vocab_size} --character-coverage {params.coverage}"
               " --seed {params.seed} --threads {threads}")


rule fairseq_dict:
    input:
        RUN + "/bpe/spm.model",
    output:
        RUN + "/bin/dict.txt",
    log:
        RUN + "/logs/bpe/dict.log",
    shell:
        logged("{PY} -m laser_repro.cli bpe-dict --model {input} --output {output}")


rule bpe_apply:
    input:
        model=RUN + "/bpe/spm.model",
        shards=pair_tok_shards,
    output:
        RUN + "/bpe/train/{src}-{tgt}.{lang}",
    log:
        RUN + "/logs/bpe/apply/{src}-{tgt}.{lang}.log",
    params:
        block=CFG["preprocess"]["block_lines"],
    resources:
        mem_mb=1000,
    shell:
        logged("{PY} -m laser_repro.cli bpe-apply --model {input.model} --output {output}"
               " --block-lines {params.block} --inputs {input.shards}")
