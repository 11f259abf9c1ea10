"""The models' training inputs and settings, their seed replicates, and how each model reads raw text
(BPE codes, lowercasing) at evaluation."""
from __future__ import annotations

import os
import shlex

from laser_repro.data import nway
from laser_repro.models import registry
from laser_repro.reporting.seeds import REPLICATES as SEED_REPLICATES


class Models:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def tabled(self, models):
        """The models a table has a row or column for: those of the config, not their seed replicates (config
        `seeds`), which the table's cells average over."""
        return self.plan.configured(models)

    def with_replicates(self, names):
        """Models and their seed replicates (what a table reads and checks the records of)."""
        return [r for name in names for r in self.plan.seed_replicates(name)]

    def seed_replicate_specs(self, name, spec_of):
        """{seed_replicates: [spec_of(replicate) for each further seed]} of a table's model spec; {} with one seed."""
        replicates = self.plan.seed_replicates(name)[1:]
        return {SEED_REPLICATES: [spec_of(r) for r in replicates]} if replicates else {}

    def buildable(self, variant):
        """A variant can be trained: the NLI ones need MultiNLI."""
        return not self.variants[variant].nli_weight or self.task_ready("xnli")

    def train_inputs(self, w):
        variant = self.variants[w.model]
        files = {"bin": self.binarized_files(variant.pairs), "dict": f"{self.run}/bin/dict.txt"}
        if self.flores:  # held-out pairs: the loss on the learning curves
            files["valid"] = self.binarized_files([p for p in variant.pairs if p in self.plan.curve_pairs], split="valid")
        if variant.nli_weight:
            files["nli"] = f"{self.nli_prefix}.label.npy"
        return files

    def train_settings(self, name):
        variant = self.variants[name]
        train = self.plan.variant_train(name)  # the base model's, another LASER model's own; a seed replicate's seed
        settings = {"pairs": [f"{s}-{t}" for s, t in variant.pairs], "targets": self.plan.targets,
                    "model": dict(variant.model), "train": train}
        if self.flores:
            settings["curves"] = dict(self.flores["curves"])
        nli = self.plan.nli_settings(variant)
        if nli:
            settings["nli"] = {"data": self.nli_prefix, "weight": nli["weight"]}
            settings["model"]["nli_hidden_dim"] = nli["hidden_dim"]
        return settings

    def declaration_of(self, name):
        """What a trained model's family (laser_repro.config.Plan.family) declares (laser_repro.models.declaration)."""
        return registry.declaration(self.plan.family(name))

    def families(self):
        """The families of the models of `models` (LASER's: its own rules), in the registry's order."""
        present = {m["family"] for m in self.family_models.values()}
        return [f for f in registry.FAMILIES if f in present]

    def models_of(self, family):
        """The models of `models` of one family, seed replicates included: name -> settings."""
        return {name: m for name, m in self.family_models.items() if m["family"] == family}

    def model_train_settings(self, name):
        """``laser-repro train --settings`` of any model: a LASER variant or a model of `models`, as its family
        declares. A function of the config alone (no rule's `input`): the train rules pass it as a
        wildcards-only param, which Snakemake records and compares on a rerun (a changed setting retrains),
        and the tables check each model's own record against it (model_record_settings)."""
        return self.declaration_of(name).train_settings(self, name)

    def model_records_arg(self, names):
        """A table's --model-records as JSON, quoted where used: each model's record and the settings the config
        gives it now, which the table checks against each other (laser_repro.models.record). A wildcards-only
        param: recorded by Snakemake, so a changed setting also reruns the table."""
        import json

        names = sorted(set(names))
        return json.dumps({n: {"family": self.plan.family(n),
                               "record": self.model_record_file(n), "settings": self.model_train_settings(n)} for n in names},
                          sort_keys=True)

    def labse_pretrain_settings(self, key):
        """``--settings`` of a shared LaBSE pre-training (MLM + TLM), from the first model that uses it."""
        name = self.plan.labse_pretrainings[key]
        return self.plan.labse_settings(name, "pretrain", tokenizer=self.labse_tokenizer(name))

    def model_codes(self, name):
        """The BPE codes a model applies to raw text, as an input: LASER's joint codes, a multienc model's N-way
        data's (its bpe directory); none for LaBSE and Bi-Sent2Vec (their vocabulary is in the encoder file)."""
        if name in self.variants:
            return {"codes": self.subword_model()}
        m = self.family_models[name]
        return {"codes": f"{self.run}/nway/{m['data']}/bpe"} if self.model_text(name) == "bpe" else {}

    def model_codes_arg(self, name, input):
        """--codes of `laser-repro embed` / `retrieval` for the inputs of model_codes."""
        if "codes" not in input.keys():
            return ""
        if name in self.variants:
            return shlex.join(["--codes", input.codes])
        kind = self.plan.nway_subword_kind(self.family_models[name]["data"])
        return shlex.join(["--codes", os.path.join(input.codes, nway.SUBWORD_MODEL_FILE[kind])])

    def eval_lowercase(self, name):
        """Whether a model's input text is lowercased: its data's setting."""
        return self.laser_data["preprocess"]["lowercase"] if name in self.variants else self.nway[self.family_models[name]["data"]]["lowercase"]

    def eval_max_tokens_arg(self, name):
        return f"--max-tokens {int(self.laser_model['embed']['max_tokens'])}" if name in self.variants else ""

    def laser_models(self):
        return [name for name in self.variants if self.buildable(name)]
