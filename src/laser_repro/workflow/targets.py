"""What each target builds: the main command's tables and figures per family, and the coarse stages
(data, evaluate) that DVC runs one by one."""
from __future__ import annotations

#: the files of every table: Markdown, CSV and LaTeX (laser_repro.reporting.paper_table)
TABLE_FORMATS = ("md", "csv", "tex")


class Targets:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def multienc_targets(self):
        """What the main command builds for the multienc models: paper 004's Tables 1-4 and the learning curves."""
        if not self.multienc:
            return []
        return [*[f"{self.multienc_tables_dir}/table{n}.{ext}" for n in (1, 2, 3, 4) for ext in TABLE_FORMATS],
                *[f"results/figures/{self.cfg['run_name']}/curves_{name}.png" for name in self.tabled(self.multienc)]]

    def bisent2vec_targets(self):
        """What the main command builds for the Bi-Sent2Vec models: paper 002's tables and the learning curves."""
        if not self.bisent2vec:
            return []
        return [*[f"{self.bisent2vec_tables_dir}/{t}.{ext}" for t in self.bisent2vec_tables() for ext in TABLE_FORMATS],
                *[f"results/figures/{self.cfg['run_name']}/curves_{name}.png" for name in self.tabled(self.bisent2vec)]]

    def labse_targets(self):
        """What the main command builds for the LaBSE models: paper 003's Table 2 and the learning curves."""
        if not self.labse:
            return []
        return [*[f"{self.labse_tables_dir}/table2.{ext}" for ext in TABLE_FORMATS],
                *[f"results/figures/{self.cfg['run_name']}/curves_{name}.png" for name in self.tabled(self.labse)]]

    def family_evaluation(self):
        """Every score and baseline file of the models of the other families (the `evaluate` target, so that the
        tables stage writes nothing but tables): similarity, the curves' TF-IDF, what their paper tables read."""
        files = [f"{self.run}/eval/models/{name}/similarity.json" for name in self.family_models]
        files += sorted({f"{self.run}/eval/nway/{m['data']}/tfidf.json" for m in self.family_models.values()})
        files += [p for name in self.labse for p in self.labse_result_files(name).values() if p]
        files += [f"{self.run}/eval/tfidf/tatoeba.json"] if self.labse_tatoeba_languages() else []
        files += [f"{self.run}/eval/tfidf/un.json"] if self.labse_un() else []
        if self.bisent2vec:
            files += [p for paths in self.bisent2vec_table_inputs(None).values() for p in paths]
        return list(dict.fromkeys(files))

    def flores_targets(self):
        """What the main command builds for FLORES: the table and one learning-curve figure per model."""
        if not self.flores:
            return []
        return [*[f"{self.tables_dir}/flores_xsim.{ext}" for ext in TABLE_FORMATS],
                *[f"results/figures/{self.cfg['run_name']}/curves_{name}.png" for name in self.plan.configured(self.variants)
                  if self.buildable(name)]]

    def laser_paper_tables(self):
        """Tables 1-4, 8, 9 and WMT of the LASER model."""
        if not self.laser:
            return []
        return [*self.table1, *[f"{self.tables_dir}/{table}.{ext}"
                                for table in ("table2", "table3", "table4", "table8", "table9", "wmt")
                                for ext in TABLE_FORMATS]]

    def laser_targets(self, rules):
        """Everything the LASER model's part of the default target builds (`rules`: Snakemake's, once every
        rule is defined: the ablation tables are rule ablations' inputs)."""
        if not self.laser:
            return []
        return [*self.laser_paper_tables(), *self.flores_targets(), *rules.ablations.input, f"{self.run}/metrics.json"]

    def laser_data(self):
        """The LASER data stage: binarized training (and held-out) pairs, the dictionary, MultiNLI for Table 6."""
        if not self.laser:
            return []
        nli = any(v.nli_weight for v in self.variants.values()) and self.task_ready("xnli")
        return [*self.binarized_files(), f"{self.run}/bin/dict.txt", *self.binarized_files(self.plan.curve_pairs, split="valid"),
                *([f"{self.run}/bin/nli/train.label.npy"] if nli else [])]

    def laser_evaluation(self, rules):
        """Everything the LASER model's paper tables read, so that the tables stage writes nothing but tables
        (`rules`: Snakemake's, once every rule is defined)."""
        if not self.laser:
            return []
        return [f"{self.run}/metrics.json", *rules.table1.input, *rules.table9.input, *rules.table4.input,
                *rules.table2_table8.input, *rules.table3.input, *rules.table_wmt.input,
                *([*rules.flores_table.input, *rules.flores_tfidf.input] if self.flores else [])]
