# LASER (Artetxe & Schwenk, TACL 2019) end to end: corpora -> Moses -> joint BPE -> fairseq -> encoder ->
# Tatoeba, BUCC, XNLI, MLDoc and WMT similarity -> the paper's tables.
# Thin on purpose: rules live in workflow/rules/, logic in the laser_repro package.
from snakemake.utils import min_version, validate

min_version("9.0")

configfile: "config/small.yaml"


envvars:
    "PATH",


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/corpora.smk"
include: "workflow/rules/preprocess.smk"
include: "workflow/rules/bpe.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/tatoeba.smk"
include: "workflow/rules/evaluation.smk"


rule all:
    input:
        TABLE1,
        expand(f"{TABLES}/{{table}}.{{ext}}", table=["table2", "table3", "table4", "table8", "table9", "wmt"],
               ext=["md", "csv"]),
    default_target: True
