# Stages 4-6: binarize with fairseq-preprocess, train through our fairseq plugin, export the encoder.
import os
import shlex



rule binarize_pair:
    input:
        src=lambda w: W.subword_text(w.src, w.tgt, w.src),
        tgt=lambda w: W.subword_text(w.src, w.tgt, w.tgt),
        dict="results/{run}/bin/dict.txt",
    output:
        multiext("results/{run}/bin/train.{src}-{tgt}.{src}", ".bin", ".idx"),
        multiext("results/{run}/bin/train.{src}-{tgt}.{tgt}", ".bin", ".idx"),
    log:
        "results/{run}/logs/binarize/{src}-{tgt}.log",
    params:
        prefix=lambda w, input: input.src.removesuffix(f".{w.src}"),
        dest=lambda w, input: os.path.dirname(input.dict),
    threads: 4  # fairseq-preprocess workers: ~4.7k lines/s each (the largest paper pairs: 25-35 min with one)
    resources:
        mem_mb=2000,
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro binarize --src {wildcards.src:q} --tgt {wildcards.tgt:q}"
               " --train-prefix {params.prefix:q} --dict {input.dict:q} --dest {params.dest:q} --workers {threads}")


# One model per variant (results/{run}/models/{model}/): "base" is the model of Tables 1-4, 8, 9;
# the ablation variants of Tables 5-7 differ from it in one setting (laser_repro.config.Plan.variants).
# The checkpoint directory is deliberately not an output: Snakemake deletes outputs before a job
# runs, and a rerun must resume from checkpoint_last.pt. checkpoint_final.pt marks completion.
# Processes: locally one per GPU (torchrun), or train.cpu_processes without GPU. With Snakemake's
# `mpi` resource set (the SLURM profile: mpi="srun", tasks = GPUs, optional nodes) one worker per
# SLURM task. A worker that gets SIGTERM/SIGUSR1 saves checkpoint_last.pt and exits with 75, and
# the retried job resumes from it.
# Besides the final checkpoint: the model at update 0 (same seed; the random-encoder baseline) and, with
# flores_eval, the learning curves measured during training (laser_repro.models.laser.curves).
TRAIN_OUTPUTS = {"final": "results/{run}/models/{model}/checkpoint_final.pt",
                 "initial": "results/{run}/models/{model}/checkpoint_init.pt",
                 "record": "results/{run}/models/{model}/model_record.json"}
if W.flores:
    TRAIN_OUTPUTS["curves"] = "results/{run}/models/{model}/curves.jsonl"


rule laser_train:
    input:
        unpack(W.train_inputs),
    output:
        **TRAIN_OUTPUTS,
    log:
        "results/{run}/logs/{model}/train.log",
    benchmark:
        "results/{run}/benchmarks/{model}/train.tsv"
    params:
        data=lambda w, input: os.path.dirname(input.dict),
        # beside checkpoint_final.pt, not an output (see above)
        save_dir=lambda w, output: os.path.join(os.path.dirname(output.final), "checkpoints"),
        curves=lambda w, output: f"--curves {shlex.quote(output.curves)}" if W.flores else "",
        # wildcards only: Snakemake records (and compares on a rerun) only params that take no input/output
        config_json=lambda w: W.shell_quote_json(W.model_train_settings(w.model)),
        launcher=lambda w, resources: "srun" if resources.get("mpi") else "local",
    threads: workflow.cores
    resources:
        mem_mb=16000,
        runtime=7200,
        **W.gpu_resources(W.laser_model["train"]["gpus"] if W.laser else 0, f"models.{W.laser_name}.train.gpus"),  # one node, or several with srun (laser_repro.core.slurm)
    conda:
        W.conda_env(W.laser_model["train"]["gpus"] if W.laser else 0, f"models.{W.laser_name}.train.gpus")
    shell:
        W.logged("laser-repro train --data {params.data:q} --save-dir {params.save_dir:q}"
               " --final {output.final:q} --initial {output.initial:q} --record {output.record:q} {params.curves} --threads {threads}"
               " --launcher {params.launcher:q} --settings {params.config_json}",
               keys=[*W.laser_keys("targets"), *W.laser_model_keys(), "flores_eval"])


rule laser_export:  # the encoder file names the subword model of its data (embed refuses others)
    input:
        checkpoint="results/{run}/models/{model}/checkpoint_final.pt",
        codes=W.subword_model(),
    output:
        "results/{run}/models/{model}/encoder.pt",
    log:
        "results/{run}/logs/{model}/export.log",
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro export --checkpoint {input.checkpoint:q} --codes {input.codes:q} --output {output:q}")


use rule laser_export as laser_export_init with:  # the random-encoder baseline (update 0)
    input:
        checkpoint="results/{run}/models/{model}/checkpoint_init.pt",
        codes=W.subword_model(),
    output:
        "results/{run}/models/{model}/encoder_init.pt",
    log:
        "results/{run}/logs/{model}/export_init.log",


# Table 6: the MultiNLI pairs of the XNLI classifier (evaluation.xnli's sample), BPE'd and binarized
# with the joint dictionary for the NLI multitask variants.
rule nli_binarize:
    input:
        premises="results/{run}/eval/xnli/text/train-p.eng.txt",
        hypotheses="results/{run}/eval/xnli/text/train-h.eng.txt",
        labels="results/{run}/eval/xnli/labels/train.eng.tsv",
        codes=W.subword_model(),
        dict="results/{run}/bin/dict.txt",
    output:
        multiext("results/{run}/bin/nli/train", ".premise.bin", ".premise.idx", ".hypothesis.bin",
                 ".hypothesis.idx", ".label.npy"),
        # the BPE text binarize-nli writes first: declared, and kept (a temp() output would leave its
        # provenance record behind, which `lineage check` reports missing)
        premise_bpe="results/{run}/bin/nli/train.premise.bpe",
        hypothesis_bpe="results/{run}/bin/nli/train.hypothesis.bpe",
    log:
        "results/{run}/logs/binarize/nli.log",
    params:
        prefix=lambda w, output: output[0].removesuffix(".premise.bin"),
        lowercase=lambda w: "" if W.laser_data["preprocess"]["lowercase"] else "--keep-case",
    conda:
        "../../envs/laser.yaml"
    shell:
        W.logged("laser-repro binarize-nli --premise-raw {input.premises:q} --hypothesis-raw {input.hypotheses:q}"
               " --codes {input.codes:q} {params.lowercase} --premise {output.premise_bpe:q}"
               " --hypothesis {output.hypothesis_bpe:q} --labels {input.labels:q} --dict {input.dict:q}"
               " --dest-prefix {params.prefix:q}",
               keys=[*W.laser_keys("preprocess"), "evaluation.xnli"])


rule laser:  # `snakemake laser`: the LASER models: the paper's tables, FLORES, the ablations, metrics.json
    input:
        lambda w: W.laser_targets(rules),
