# Stage 3: one joint BPE model learned on a seeded sample of all training text, applied to every pair.


rule bpe_sample:
    input:
        all_tok_shards(),
    output:
        "results/{run}/bpe/sample.txt",
    log:
        "results/{run}/logs/bpe/sample.log",
    params:
        max_lines=CFG["bpe"]["sample_lines"],
        seed=CFG["bpe"]["seed"],
    resources:
        mem_mb=1000,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bpe-sample --output {output} --max-lines {params.max_lines}"
               " --seed {params.seed} --inputs {input}", keys=["bpe.sample_lines", "bpe.seed"])


rule bpe_learn:
    input:
        "results/{run}/bpe/sample.txt",
    output:
        model="results/{run}/bpe/spm.model",
        vocab="results/{run}/bpe/spm.vocab",
    log:
        "results/{run}/logs/bpe/learn.log",
    benchmark:
        "results/{run}/benchmarks/bpe_learn.tsv"
    params:
        prefix=lambda w, output: output.model.removesuffix(".model"),
        vocab_size=CFG["bpe"]["vocab_size"],
        coverage=CFG["bpe"]["character_coverage"],
        seed=CFG["bpe"]["seed"],
    threads: CFG["bpe"]["threads"]
    resources:
        mem_mb=16000,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bpe-learn --sample {input} --model-prefix {params.prefix}"
               " --vocab-size {params.vocab_size} --character-coverage {params.coverage}"
               " --seed {params.seed} --threads {threads}", keys=["bpe"])


rule fairseq_dict:
    input:
        "results/{run}/bpe/spm.model",
    output:
        "results/{run}/bin/dict.txt",
    log:
        "results/{run}/logs/bpe/dict.log",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bpe-dict --model {input} --output {output}")


rule bpe_apply:
    input:
        model="results/{run}/bpe/spm.model",
        shards=pair_tok_shards,
    output:
        "results/{run}/bpe/train/{src}-{tgt}.{lang}",
    log:
        "results/{run}/logs/bpe/apply/{src}-{tgt}.{lang}.log",
    params:
        block=CFG["preprocess"]["block_lines"],
    resources:
        mem_mb=1000,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro bpe-apply --model {input.model} --output {output}"
               " --block-lines {params.block} --inputs {input.shards}", keys=["preprocess.block_lines"])
