# Stage 3: joint BPE as the paper (fastBPE semantics, laser_repro.data.bpe): word frequencies of ALL the
# tokenized training text -> bpe.merges merge operations (codes) and the vocabulary of the BPE'd text
# -> fairseq dictionary; the codes are applied to every pair.
import shlex

from laser_repro.data import bpe
from laser_repro.provenance import spec_files



rule bpe_count:
    input:
        W.all_tok_shards(),
    output:
        "results/{run}/bpe/words",
    log:
        "results/{run}/logs/bpe/count.log",
    params:
        inputs=spec_files.path_list_param("bpe-count-inputs"),  # every tokenized shard: a file, not thousands of arguments
    threads: lambda w: W.laser_data["bpe"]["threads"]
    resources:
        mem_mb=16000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro bpe-count --output {output:q} --threads {threads} --inputs-from {params.inputs:q}")


rule bpe_learn:
    input:
        "results/{run}/bpe/words",
    output:
        codes="results/{run}/bpe/codes",
        vocab="results/{run}/bpe/vocab",
    log:
        "results/{run}/logs/bpe/learn.log",
    benchmark:
        "results/{run}/benchmarks/bpe_learn.tsv"
    params:
        merges=lambda w: W.laser_data["bpe"]["merges"],
    resources:
        # from the word counts' size (laser_repro.data.bpe.learn_resources: ~0.35 GB and ~52 s per million
        # distinct words); in a dry run, before the counts exist, the paper's estimate
        mem_mb=lambda w, input: bpe.learn_resources_for(input[0])["mem_mb"],
        runtime=lambda w, input: bpe.learn_resources_for(input[0])["runtime"],
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro bpe-learn --words {input:q} --merges {params.merges:q}"
               " --codes {output.codes:q} --vocab {output.vocab:q}", keys=W.laser_keys("bpe.merges"))


rule fairseq_dict:
    input:
        "results/{run}/bpe/vocab",
    output:
        "results/{run}/bin/dict.txt",
    log:
        "results/{run}/logs/bpe/dict.log",
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro bpe-dict --vocab {input:q} --output {output:q}")


rule bpe_apply:
    input:
        unpack(W.bpe_apply_inputs),
    output:
        "results/{run}/bpe/train/{src}-{tgt}.{lang}",
    log:
        "results/{run}/logs/bpe/apply/{src}-{tgt}.{lang}.log",
    params:
        block=lambda w: W.laser_data["preprocess"]["block_lines"],
        keep=lambda w, input: f"--keep {shlex.quote(input.keep)}" if "keep" in input.keys() else "",
        dedup=lambda w: W.laser_data["preprocess"]["dedup_pairs"],  # recorded: switching it rebuilds the BPE'd text
    resources:
        mem_mb=1000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro bpe-apply --codes {input.codes:q} --output {output:q}"
               " --block-lines {params.block:q} --inputs {input.shards:q} {params.keep}",
               keys=W.laser_keys("preprocess.block_lines", "preprocess.dedup_pairs"))
