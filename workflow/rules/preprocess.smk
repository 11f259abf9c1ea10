# Stage 2: Moses preprocessing. A pair corpus (OPUS, local bitexts): per side, as round-robin shards (one job
# each; see laser_repro.data.sharding). An N-way corpus: per language file, once for every pair LASER extracts
# from it (extract_nway_bitext takes its kept lines) and every nway_data entry that reads it (nway_text); for
# subwords of kind spm, LASER2's normalisation of that file instead (laser2_lines).


rule moses_lines:
    input:
        lambda w: W.local_corpus_file(w.corpus, w.lang),
    output:
        "results/{run}/moses/{corpus}/{lang}.{case}",
    log:
        "results/{run}/logs/moses/{corpus}/{lang}.{case}.log",
    wildcard_constraints:
        corpus=alternatives(W.nway_corpus_names),
        case="lower|cased",
    params:
        sources=W.raw_sources,
    resources:
        mem_mb=1500,
        runtime=240,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro moses-lines --lang {wildcards.lang:q} --case {wildcards.case:q} --input {input:q}"
               " --output {output:q}", sources=True)


rule laser2_lines:  # LASER2's normalisation instead of Moses (subword.kind: spm of bitext_data or nway_data)
    input:
        lambda w: W.local_corpus_file(w.corpus, w.lang),
    output:
        "results/{run}/laser2/{corpus}/{lang}.{case}",
    log:
        "results/{run}/logs/laser2/{corpus}/{lang}.{case}.log",
    wildcard_constraints:
        corpus=alternatives(W.nway_corpus_names),
        case="lower|cased",
    params:
        sources=W.raw_sources,
    resources:
        mem_mb=1500,
        runtime=240,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro moses-lines --text laser2 --lang {wildcards.lang:q} --case {wildcards.case:q}"
               " --input {input:q} --output {output:q}", sources=True)


rule preprocess_shard:
    input:
        "results/{run}/corpora/{corpus}/{src}-{tgt}.{lang}",
    output:
        "results/{run}/tok/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}",
    log:
        "results/{run}/logs/tok/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}.log",
    wildcard_constraints:
        corpus=alternatives(W.pair_corpus_names),
    params:
        lowercase=lambda w: "" if W.laser_data["preprocess"]["lowercase"] else "--keep-case",
        block=lambda w: W.laser_data["preprocess"]["block_lines"],
    resources:
        mem_mb=1500,
        runtime=240,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro preprocess --lang {wildcards.lang:q} --input {input:q} --output {output:q}"
               " --shard {wildcards.k:q} --of {wildcards.n:q} --block-lines {params.block:q} {params.lowercase}",
               keys=W.laser_keys("preprocess"))


rule pair_dedup:  # preprocess.dedup_pairs: the first copy of each pair of a direction (laser_repro.data.dedup)
    input:
        src=lambda w: W.pair_tok_shards(w, w.src),
        tgt=lambda w: W.pair_tok_shards(w, w.tgt),
    output:
        keep="results/{run}/bpe/keep/{src}-{tgt}.npy",
        stats="results/{run}/bpe/keep/{src}-{tgt}.json",
    log:
        "results/{run}/logs/bpe/keep/{src}-{tgt}.log",
    params:
        block=lambda w: W.laser_data["preprocess"]["block_lines"],
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro pair-dedup --src-inputs {input.src:q} --tgt-inputs {input.tgt:q}"
               " --block-lines {params.block:q} --keep {output.keep:q} --stats {output.stats:q}",
               keys=W.laser_keys("preprocess.block_lines"))
