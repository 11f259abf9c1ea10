"""The workflow's view of one run: its plan (laser_repro.config) and every path, input function, target and
resource the rules ask for. Built once by the Snakefile (``W = WorkflowRun.from_snakemake(workflow, config)``);
the rule files call its methods, so no rule file depends on another's globals, and each method is tested
without Snakemake (tests/test_workflow_run.py)."""
from __future__ import annotations

import os

from laser_repro import config as run_config
from laser_repro.core import slurm as slurm_layout
from laser_repro.reporting.ablation import TABLES as ABLATION_TABLES
from laser_repro.workflow.contamination import Contamination
from laser_repro.workflow.layout import Layout
from laser_repro.workflow.models import Models
from laser_repro.workflow.resources import Resources
from laser_repro.workflow.shell import Shell
from laser_repro.workflow.sources import Sources
from laser_repro.workflow.tables import Tables
from laser_repro.workflow.targets import Targets
from laser_repro.workflow.tasks import Tasks


def alternatives(names) -> str:
    """A wildcard regex matching exactly these names (none: nothing)."""
    import re

    return "|".join(re.escape(n) for n in names) or "(?!x)x"


class WorkflowRun(Layout, Sources, Resources, Models, Tasks, Tables, Targets, Contamination, Shell):
    """One run of the workflow: `plan` (a laser_repro.config.Plan); `envs_dir`: workflow/envs; `sdm_conda`:
    Snakemake deploys conda environments; `global_resources`: the profile's (site_gpus_per_node,
    site_cpus_per_gpu describe a SLURM site's GPU nodes)."""

    def __init__(self, plan, *, envs_dir: str = "workflow/envs", sdm_conda: bool = False, global_resources=None):
        self.plan = plan
        self.cfg = cfg = plan.config
        self.run_name = cfg["run_name"]
        self.run = f"results/{self.run_name}"
        self.tables_dir = f"results/tables/{self.run_name}"
        self.figures_dir = f"results/figures/{self.run_name}"
        self.table1 = [f"{self.tables_dir}/table1.{ext}" for ext in ("md", "csv", "tex")]
        self.data_root = cfg.get("data_root")
        self.laser = plan.laser  # the config has a model of family laser (its data: the bitext_data entry it names)
        self.laser_name = plan.laser_name  # that model (its base variant), results/<run>/models/<name>/
        # its entry of `models` and its bitext_data entry ({} without a LASER model), as the config writes them
        self.laser_model = dict(plan.laser_setup.entry) if plan.laser else {}
        self.laser_data = dict(plan.laser_setup.data) if plan.laser else {}
        # its subwords (bitext_data.<name>.subword.kind): bpe, the paper's Moses + fastBPE (rules/bpe.smk), or spm,
        # LASER2's normalisation + SentencePiece (rules/spm.smk); the training text's shards are in tok/ or norm/
        self.subword_kind = self.laser_data["subword"]["kind"] if plan.laser else "bpe"
        self.shard_dir = {"bpe": "tok", "spm": "norm"}[self.subword_kind]
        # N-way corpora (line i the same sentence in every language file): each language file is Moses-
        # preprocessed once (rule moses_lines), for every pair LASER extracts and every nway_data entry
        self.nway_corpus_names = [n for n, c in plan.corpora.items() if c.get("layout") == "nway"]
        self.pair_corpus_names = [n for n in plan.corpora if n not in self.nway_corpus_names]
        self.nway = plan.nway_data
        self.multienc = plan.multienc
        self.labse = plan.labse
        self.bisent2vec = plan.bisent2vec
        self.multienc_tables_dir = f"{self.tables_dir}/schwenk_douze_2017"
        self.labse_tables_dir = f"{self.tables_dir}/labse_2020"
        self.bisent2vec_tables_dir = f"{self.tables_dir}/bisent2vec_2019"
        self.family_models = plan.models  # every model of `models` (families other than LASER), seed replicates included
        self.site_gpus_per_node, self.site_cpus_per_gpu = slurm_layout.site_geometry(global_resources)
        self.envs_dir, self.sdm_conda = envs_dir, sdm_conda
        self.evaluation = cfg.get("evaluation", {})
        self.raw_urls = {}  # raw input file (corpus, test set) -> its public URL, for provenance records
        self.eval_downloads = {}  # destination under resources/eval -> (url, sha256 or None)
        self.archive_corpora = [n for n, c in plan.corpora.items() if "download" in c and n not in plan.sacrebleu_corpora]
        self.single_archives = [n for n in self.archive_corpora if not plan.archive_parts(n)]
        self.parted_archives = [n for n in self.archive_corpora if plan.archive_parts(n)]
        self.variants = plan.variants
        self.metrics_dir = f"{self.run}/metrics"
        self.nli_prefix = f"{self.run}/bin/nli/train"  # Table 6's binarized MultiNLI pairs (rule nli_binarize)
        self.flores = plan.flores_eval
        self.flores_dir = f"{self.run}/flores"
        self.eval_models = [*self.variants, *self.family_models]  # every trained model a task scores
        # the configured ablation tables (Tables 5-7): table -> ablation
        self.table_ablation = {n: a for n, (a, _, _) in ABLATION_TABLES.items() if a in plan.ablation_rows}
        self.task_missing = self._task_missing()

    @classmethod
    def from_snakemake(cls, workflow, config) -> "WorkflowRun":
        """The run of a Snakemake workflow: its config validated once (errors name file, line, key)."""
        from snakemake.settings.types import DeploymentMethod

        plan = run_config.Plan(run_config.validate_snakemake(workflow, config))
        return cls(plan, envs_dir=os.path.join(workflow.basedir, "envs"),
                   sdm_conda=DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method,
                   global_resources=getattr(workflow, "global_resources", None))

    def _task_missing(self) -> dict:
        """task -> the note of its table when its data is absent (None: every input is there or downloaded)."""
        ev, out = self.evaluation, {}
        if "bucc" in ev:
            out["bucc"] = self.missing_note(
                "bucc", [self.bucc_archive(xx, s) for xx in ev["bucc"]["languages"] for s in ("training", "test")])
        if "xnli" in ev:
            out["xnli"] = self.missing_note("xnli", [self.xnli_zip(), self.multinli_zip()])
        if "mldoc" in ev:
            if not ev["mldoc"].get("path"):
                out["mldoc"] = ("data missing: evaluation.mldoc.path is not set. MLDoc is built from Reuters "
                                "RCV1/RCV2 (licensed by NIST): request the corpora, generate the files with "
                                "https://github.com/facebookresearch/MLDoc and set evaluation.mldoc.path.")
            elif "{root}" in ev["mldoc"]["path"] and not self.data_root:
                out["mldoc"] = (f"data missing: evaluation.mldoc.path ({ev['mldoc']['path']}) uses {{root}} but "
                                "data_root is null: set data_root, or give the MLDoc directory as a plain path.")
            else:
                out["mldoc"] = self.missing_note(
                    "mldoc", [self.mldoc_file(lang, split) for lang in ev["mldoc"]["languages"]
                              for split in (("train", "dev", "test") if lang == "eng" else ("test",))],
                    "Generate MLDoc from RCV1/RCV2 with https://github.com/facebookresearch/MLDoc.")
        if "wmt" in ev:
            out["wmt"] = self.missing_note(
                "wmt", list(self.wmt_sources().values()),
                f"They are the N-way plain text of sacrebleu's {ev['wmt']['test_set']} (line i the same sentence in "
                f"every file; e.g. `sacrebleu -t {ev['wmt']['test_set']} -l cs-en --echo src`), or set data_root: "
                f"null to download the archive.")
        return out
