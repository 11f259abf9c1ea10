# Stages 4-6: binarize with fairseq-preprocess, train through our fairseq plugin, export the encoder.


rule binarize_pair:
    input:
        src=RUN + "/bpe/train/{src}-{tgt}.{src}",
        tgt=RUN + "/bpe/train/{src}-{tgt}.{tgt}",
        dict=RUN + "/bin/dict.txt",
    output:
        multiext(RUN + "/bin/train.{src}-{tgt}.{src}", ".bin", ".idx"),
        multiext(RUN + "/bin/train.{src}-{tgt}.{tgt}", ".bin", ".idx"),
    log:
        RUN + "/logs/binarize/{src}-{tgt}.log",
    params:
        prefix=RUN + "/bpe/train/{src}-{tgt}",
        dest=RUN + "/bin",
    resources:
        mem_mb=2000,
    shell:
        logged("{PY} -m laser_repro.cli binarize --src {wildcards.src} --tgt {wildcards.tgt}"
               " --train-prefix {params.prefix} --dict {input.dict} --dest {params.dest}")


# The checkpoint directory is deliberately not an output: Snakemake deletes outputs before a job
# runs, and a rerun must resume from checkpoint_last.pt. checkpoint_final.pt marks completion.
rule train:
    input:
        binarized_files(),
        dict=RUN + "/bin/dict.txt",
    output:
        RUN + "/model/checkpoint_final.pt",
    log:
        RUN + "/logs/train.log",
    benchmark:
        RUN + "/benchmarks/train.tsv"
    params:
        data=RUN + "/bin",
        save_dir=RUN + "/checkpoints",
        config_json=lambda w: shell_quote_json({"pairs": [f"{s}-{t}" for s, t in PLAN.pairs],
                                                "targets": PLAN.targets, "model": CFG["model"],
                                                "train": CFG["train"]}),
    threads: workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
    shell:
        logged("{PY} -m laser_repro.cli train --data {params.data} --save-dir {params.save_dir}"
               " --final {output} --threads {threads} --settings {params.config_json}")


rule export_encoder:
    input:
        RUN + "/model/checkpoint_final.pt",
    output:
        RUN + "/encoder/encoder.pt",
    log:
        RUN + "/logs/export.log",
    shell:
        logged("{PY} -m laser_repro.cli export --checkpoint {input} --output {output}")
