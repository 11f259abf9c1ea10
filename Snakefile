# LASER (Artetxe & Schwenk, TACL 2019) end to end: corpora -> Moses -> joint BPE -> fairseq -> encoder ->
# Tatoeba, BUCC, XNLI, MLDoc and WMT similarity -> the paper's tables.
# Thin on purpose: rules live in workflow/rules/, logic in the laser_repro package.
from snakemake.utils import min_version

from laser_repro import config as run_config

min_version("9.0")

# The default run, unless --configfile names the config: then that file replaces it (`configfile:`
# would merge the two). Validated once, in common.smk (laser_repro.config: errors name file, line, key).
run_config.snakemake_default_configfile(workflow, "config/small.yaml")


envvars:
    "PATH",


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/corpora.smk"
include: "workflow/rules/preprocess.smk"
include: "workflow/rules/bpe.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/tatoeba.smk"
include: "workflow/rules/flores.smk"
include: "workflow/rules/evaluation.smk"
include: "workflow/rules/ablations.smk"


PAPER_TABLES = [*TABLE1, *expand(f"{TABLES}/{{table}}.{{ext}}",
                                  table=["table2", "table3", "table4", "table8", "table9", "wmt"], ext=["md", "csv"])]


rule all:
    input:
        PAPER_TABLES,
        flores_targets(),
        rules.ablations.input,
        f"{RUN}/metrics.json",
    default_target: True


rule paper_tables:  # the base model's tables only (Tables 1-4, 8, 9, WMT)
    input:
        PAPER_TABLES,


# Coarse targets, one per DVC stage (dvc.yaml): data -> models -> evaluate -> tables.
rule data:
    input:
        binarized_files(),
        f"{RUN}/bin/dict.txt",
        binarized_files(PLAN.curve_pairs, split="valid"),
        [f"{RUN}/bin/nli/train.label.npy"] if any(v.nli_weight for v in VARIANTS.values()) and task_ready("xnli") else [],


rule models:
    input:
        [f"{RUN}/models/{name}/{file}" for name in VARIANTS if buildable(name)
         for file in ("encoder.pt", "encoder_init.pt")],


rule evaluate:
    input:
        f"{RUN}/metrics.json",
        # everything the paper tables read, so that the tables stage writes nothing but tables
        rules.table1.input, rules.table9.input, rules.table4.input, rules.table2_table8.input,
        rules.table3.input, rules.table_wmt.input,
        [rules.flores_table.input, rules.flores_tfidf.input] if FLORES else [],


rule tables:
    input:
        rules.all.input,


name_recorded_rules()
