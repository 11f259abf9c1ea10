# Shared paths and input functions. The run plan (bitexts, pairs) comes from laser_repro.config.
import sys

from laser_repro import config as run_config
from laser_repro import languages

# Python of the environment running Snakemake: rules call `$PY -m laser_repro.cli ...`.
PY = sys.executable
PLAN = run_config.Plan(run_config.validate(config, source="snakemake config"))
CFG = PLAN.config
RUN = f"results/{CFG['run_name']}"
TABLE1 = [f"results/tables/{CFG['run_name']}/table1.md", f"results/tables/{CFG['run_name']}/table1.csv"]
DATA_ROOT = CFG.get("data_root")

wildcard_constraints:
    src="[a-z]{3}",
    tgt="[a-z]{3}",
    lang="[a-z]{3}",
    side="[a-z]{3}",
    corpus="[A-Za-z0-9_-]+",
    k="[0-9]+",
    n="[0-9]+",


def shards_of(corpus):
    return PLAN.corpora[corpus].get("shards") or CFG["preprocess"]["shards"]


def tok_shards(corpus, src, tgt, lang):
    n = shards_of(corpus)
    return [f"{RUN}/tok/{corpus}/{src}-{tgt}.{lang}.{k:03d}-of-{n:03d}" for k in range(n)]


def all_tok_shards(wildcards=None):
    return [p for b in PLAN.bitexts for lang in (b.src, b.tgt) for p in tok_shards(b.corpus, b.src, b.tgt, lang)]


def pair_tok_shards(wildcards):
    """Tokenized shards of every corpus of one (src, tgt) direction, one side, in config order."""
    return [p for b in PLAN.bitexts_of_pair(wildcards.src, wildcards.tgt)
            for p in tok_shards(b.corpus, b.src, b.tgt, wildcards.lang)]


def bpe_train_files():
    return [f"{RUN}/bpe/train/{src}-{tgt}.{lang}" for src, tgt in PLAN.pairs for lang in (src, tgt)]


def binarized_files():
    return [f"{RUN}/bin/train.{src}-{tgt}.{lang}.{ext}"
            for src, tgt in PLAN.pairs for lang in (src, tgt) for ext in ("bin", "idx")]


def logged(cmd):
    """Shell command with its stderr and stdout sent to the rule's log."""
    return cmd + " > {log} 2>&1"


def shell_quote_json(data):
    """JSON for one shell argument."""
    import json
    import shlex

    return shlex.quote(json.dumps(data, sort_keys=True))
