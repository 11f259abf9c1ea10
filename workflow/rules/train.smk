# Stages 4-6: binarize with fairseq-preprocess, train through our fairseq plugin, export the encoder.


rule binarize_pair:
    input:
        src="results/{run}/bpe/train/{src}-{tgt}.{src}",
        tgt="results/{run}/bpe/train/{src}-{tgt}.{tgt}",
        dict="results/{run}/bin/dict.txt",
    output:
        multiext("results/{run}/bin/train.{src}-{tgt}.{src}", ".bin", ".idx"),
        multiext("results/{run}/bin/train.{src}-{tgt}.{tgt}", ".bin", ".idx"),
    log:
        "results/{run}/logs/binarize/{src}-{tgt}.log",
    params:
        prefix=lambda w, input: input.src.removesuffix(f".{w.src}"),
        dest=lambda w, input: os.path.dirname(input.dict),
    resources:
        mem_mb=2000,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro binarize --src {wildcards.src} --tgt {wildcards.tgt}"
               " --train-prefix {params.prefix} --dict {input.dict} --dest {params.dest}")


# The checkpoint directory is deliberately not an output: Snakemake deletes outputs before a job
# runs, and a rerun must resume from checkpoint_last.pt. checkpoint_final.pt marks completion.
# Processes: locally one per GPU (torchrun), or train.cpu_processes without GPU. With Snakemake's
# `mpi` resource set (the SLURM profile: mpi="srun", tasks = GPUs, optional nodes) one worker per
# SLURM task. A worker that gets SIGTERM/SIGUSR1 saves checkpoint_last.pt and exits with 75, and
# the retried job resumes from it.
rule train:
    input:
        binarized_files(),
        dict="results/{run}/bin/dict.txt",
    output:
        "results/{run}/model/checkpoint_final.pt",
    log:
        "results/{run}/logs/train.log",
    benchmark:
        "results/{run}/benchmarks/train.tsv"
    params:
        data=lambda w, input: os.path.dirname(input.dict),
        # beside model/, not an output (see above)
        save_dir=lambda w, output: os.path.join(os.path.dirname(os.path.dirname(output[0])), "checkpoints"),
        config_json=lambda w: shell_quote_json({"pairs": [f"{s}-{t}" for s, t in PLAN.pairs],
                                                "targets": PLAN.targets, "model": CFG["model"],
                                                "train": CFG["train"]}),
        launcher=lambda w, resources: "srun" if resources.get("mpi") else "local",
    threads: workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro train --data {params.data} --save-dir {params.save_dir}"
               " --final {output} --threads {threads} --launcher {params.launcher}"
               " --settings {params.config_json}")


rule export_encoder:
    input:
        "results/{run}/model/checkpoint_final.pt",
    output:
        "results/{run}/encoder/encoder.pt",
    log:
        "results/{run}/logs/export.log",
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro export --checkpoint {input} --output {output}")
