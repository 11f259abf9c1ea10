# Stage 2: Moses preprocessing per corpus side, as round-robin shards (one job each; see laser_repro.data.sharding).


rule preprocess_shard:
    input:
        "results/{run}/corpora/{corpus}/{src}-{tgt}.{lang}",
    output:
        "results/{run}/tok/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}",
    log:
        "results/{run}/logs/tok/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}.log",
    params:
        lowercase=lambda w: "" if CFG["preprocess"]["lowercase"] else "--keep-case",
        block=lambda w: CFG["preprocess"]["block_lines"],
    resources:
        mem_mb=1500,
        runtime=240,
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro preprocess --lang {wildcards.lang:q} --input {input:q} --output {output:q}"
               " --shard {wildcards.k:q} --of {wildcards.n:q} --block-lines {params.block:q} {params.lowercase}",
               keys=["preprocess"])
