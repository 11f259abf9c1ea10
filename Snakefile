# LASER (Artetxe & Schwenk, TACL 2019) end to end: corpora -> Moses -> joint BPE -> fairseq -> encoder -> Tatoeba.
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


rule all:
    input:
        TABLE1,
    default_target: True
