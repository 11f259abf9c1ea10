# Stage 2: Moses preprocessing per corpus side, as round-robin shards (one job each; see laser_repro.sharding).


rule preprocess_shard:
    input:
        RUN + "/corpora/{corpus}/{src}-{tgt}.{lang}",
    output:
        RUN + "/tok/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}",
    log:
        RUN + "/logs/tok/{corpus}/{src}-{tgt}.{lang}.{k}-of-{n}.log",
    params:
        lowercase="" if CFG["preprocess"]["lowercase"] else "--keep-case",
        block=CFG["preprocess"]["block_lines"],
    resources:
        mem_mb=1500,
        runtime=240,
    shell:
        logged("{PY} -m laser_repro.cli preprocess --lang {wildcards.lang} --input {input} --output {output}"
               " --shard {wildcards.k} --of {wildcards.n} --block-lines {params.block} {params.lowercase}")
