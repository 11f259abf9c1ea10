# Multilingual sentence embeddings end to end, one harness for several model families: corpora -> Moses ->
# joint BPE -> training -> encoder -> evaluation -> each paper's tables with the paper's numbers beside ours.
# LASER (Artetxe & Schwenk, TACL 2019): the top-level model section; Tatoeba, BUCC, XNLI, MLDoc, WMT, FLORES.
# Schwenk & Douze 2017 (family multienc): entries of `models` on N-way data (nway_data); Tables 1-4.
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
include: "workflow/rules/nway.smk"
include: "workflow/rules/models/multienc.smk"


if LASER:

    include: "workflow/rules/preprocess.smk"
    include: "workflow/rules/bpe.smk"
    include: "workflow/rules/models/laser.smk"
    include: "workflow/rules/tatoeba.smk"
    include: "workflow/rules/flores.smk"
    include: "workflow/rules/evaluation.smk"
    include: "workflow/rules/ablations.smk"

    PAPER_TABLES = [*TABLE1, *expand(f"{TABLES}/{{table}}.{{ext}}",
                                      table=["table2", "table3", "table4", "table8", "table9", "wmt"], ext=["md", "csv"])]
    LASER_TARGETS = [*PAPER_TABLES, *flores_targets(), *rules.ablations.input, f"{RUN}/metrics.json"]
    LASER_DATA = [*binarized_files(), f"{RUN}/bin/dict.txt", *binarized_files(PLAN.curve_pairs, split="valid"),
                  *([f"{RUN}/bin/nli/train.label.npy"] if any(v.nli_weight for v in VARIANTS.values())
                    and task_ready("xnli") else [])]
    # everything the paper tables read, so that the tables stage writes nothing but tables
    LASER_EVALUATION = [f"{RUN}/metrics.json", *rules.table1.input, *rules.table9.input, *rules.table4.input,
                        *rules.table2_table8.input, *rules.table3.input, *rules.table_wmt.input,
                        *([*rules.flores_table.input, *rules.flores_tfidf.input] if FLORES else [])]
else:
    PAPER_TABLES = LASER_TARGETS = LASER_DATA = LASER_EVALUATION = []

if LASER and FLORES and MULTIENC:

    include: "workflow/rules/compare.smk"

    COMPARE_TARGETS = [f"results/tables/{CFG['run_name']}/compare_flores.{ext}" for ext in ("md", "csv")]
else:
    COMPARE_TARGETS = []


rule all:
    input:
        LASER_TARGETS,
        multienc_targets(),
        COMPARE_TARGETS,
    default_target: True


rule paper_tables:  # LASER's base model's tables only (Tables 1-4, 8, 9, WMT)
    input:
        PAPER_TABLES,


rule compare:  # the models of every family on the same FLORES split (config/compare.yaml)
    input:
        COMPARE_TARGETS,


rule multienc:  # the Schwenk & Douze models: paper 004's Tables 1-4 and the learning curves
    input:
        multienc_targets(),


# Coarse targets, one per DVC stage (dvc.yaml): data -> models -> evaluate -> tables.
rule data:
    input:
        LASER_DATA,
        [f"{RUN}/nway/{name}/bpe" for name in NWAY],


rule models:
    input:
        [f"{RUN}/models/{name}/{file}" for name in [*VARIANTS, *MULTIENC] if name in MULTIENC or buildable(name)
         for file in ("encoder.pt", "encoder_init.pt")],


rule evaluate:
    input:
        LASER_EVALUATION,
        [f"{RUN}/models/{name}/similarity.json" for name in MULTIENC],


rule tables:
    input:
        rules.all.input,


name_recorded_rules()
