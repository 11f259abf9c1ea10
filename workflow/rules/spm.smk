# Stages 2-3 with bitext_data.<name>.subword.kind: spm (LASER2; included instead of bpe.smk): LASER2's
# language-agnostic normalisation of every line (no Moses tokenizer, jieba or MeCab; laser_repro.data.spm),
# into norm/ (pair corpora, per shard; an N-way corpus's language files: laser2_lines, preprocess.smk);
# a joint SentencePiece model learned on a language-sampled part of that text (subword.sampling_alpha,
# subword.sample_sentences), its pieces as the fairseq dictionary, applied to every pair.
from laser_repro.data import spm as spm_data
from laser_repro.provenance import spec_files


rule laser2_shard:
    input:
        "results/{run}/corpora/{corpus}/{src}-{tgt}.{lang}",
    output:
        "results/{run}/norm/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}",
    log:
        "results/{run}/logs/norm/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}.log",
    wildcard_constraints:
        corpus=alternatives(W.pair_corpus_names),
    params:
        lowercase=lambda w: [] if W.laser_data["preprocess"]["lowercase"] else ["--keep-case"],
        block=lambda w: W.laser_data["preprocess"]["block_lines"],
    resources:
        mem_mb=1500,
        runtime=240,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro preprocess --text laser2 --lang {wildcards.lang:q} --input {input:q} --output {output:q}"
               " --shard {wildcards.k:q} --of {wildcards.n:q} --block-lines {params.block:q} {params.lowercase:q}",
               keys=W.laser_keys("preprocess"))


rule spm_learn:
    input:
        W.all_tok_shards(),
    output:
        model="results/{run}/spm/spm.model",
        vocab="results/{run}/spm/spm.vocab",
        stats="results/{run}/spm/spm.json",
    log:
        "results/{run}/logs/spm/learn.log",
    benchmark:
        "results/{run}/benchmarks/spm_learn.tsv"
    params:
        # every normalised shard by language: a file, not thousands of arguments
        inputs=lambda w: spec_files.write_content_file("spm-learn-inputs", W.tok_shards_by_language()),
        vocab_size=lambda w: W.laser_data["subword"]["vocab_size"],
        model_type=lambda w: W.laser_data["subword"]["model_type"],
        coverage=lambda w: W.laser_data["subword"]["character_coverage"],
        sample=lambda w: W.laser_data["subword"]["sample_sentences"],
        alpha=lambda w: W.laser_data["subword"]["sampling_alpha"],
        seed=lambda w: W.laser_data["subword"]["seed"],
    threads: lambda w: W.laser_data["subword"]["threads"]
    resources:
        # from the sample's size (laser_repro.data.spm.learn_resources: measured, docs/laser.md)
        mem_mb=lambda w: spm_data.learn_resources(W.laser_data["subword"])["mem_mb"],
        runtime=lambda w: spm_data.learn_resources(W.laser_data["subword"])["runtime"],
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro spm-learn --inputs-from {params.inputs:q} --model {output.model:q}"
               " --vocab-size {params.vocab_size:q} --model-type {params.model_type:q}"
               " --character-coverage {params.coverage:q} --sample-sentences {params.sample:q}"
               " --sampling-alpha {params.alpha:q} --seed {params.seed:q} --threads {threads}",
               keys=W.laser_keys("subword"))


rule spm_dict:  # LASER2's .cvocab: the pieces in the model's order, with their counts in the training text
    input:
        model="results/{run}/spm/spm.model",
        text=W.subword_train_files,
    output:
        "results/{run}/bin/dict.txt",
    log:
        "results/{run}/logs/spm/dict.log",
    resources:
        mem_mb=1000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro spm-dict --model {input.model:q} --output {output:q} --count-from {input.text:q}")


rule spm_apply:
    input:
        unpack(W.bpe_apply_inputs),
    output:
        "results/{run}/spm/train/{src}-{tgt}.{lang}",
    log:
        "results/{run}/logs/spm/apply/{src}-{tgt}.{lang}.log",
    params:
        block=lambda w: W.laser_data["preprocess"]["block_lines"],
        keep=lambda w, input: ["--keep", input.keep] if "keep" in input.keys() else [],  # a list: :q quotes each
        dedup=lambda w: W.laser_data["preprocess"]["dedup_pairs"],  # recorded: switching it rebuilds the text
    resources:
        mem_mb=1000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro spm-apply --model {input.codes:q} --output {output:q}"
               " --block-lines {params.block:q} --inputs {input.shards:q} {params.keep:q}",
               keys=W.laser_keys("preprocess.block_lines", "preprocess.dedup_pairs"))
