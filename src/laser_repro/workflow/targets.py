"""What each target builds: the main command's tables and figures per family, and the coarse stages
(data, evaluate) that DVC runs one by one."""
from __future__ import annotations

from laser_repro.models import registry

#: the files of every table: Markdown, CSV and LaTeX (laser_repro.reporting.paper_table)
TABLE_FORMATS = ("md", "csv", "tex")


class Targets:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def _declared(self, question, families=None):
        """The files a question of the declarations (``targets``, ``data_files``, ``evaluation_files``) names for
        the models of `models` of each family (default: every family of the config), in the registry's order."""
        return [p for f in (families or self.families()) if self.models_of(f)
                for p in getattr(registry.declaration(f), question)(self, list(self.models_of(f)))]

    def family_targets(self, family=None):
        """What the main command builds for the models of `models` (of one family, or of every family): each
        family's tables and learning curves, as it declares them (laser_repro.models.declaration)."""
        return self._declared("targets", [family] if family else None)

    def family_data(self):
        """The data stage of the models of `models`: what each family's models read, as it declares."""
        return self._declared("data_files")

    def family_evaluation(self):
        """Every score and baseline file of the models of `models` (the `evaluate` target, so that the tables
        stage writes nothing but tables), as each family declares: similarity, the curves' TF-IDF, what their
        paper tables read."""
        return list(dict.fromkeys(self._declared("evaluation_files")))

    def flores_targets(self):
        """What the main command builds for FLORES: the table and one learning-curve figure per model."""
        if not self.flores:
            return []
        return [*[f"{self.tables_dir}/flores_xsim.{ext}" for ext in TABLE_FORMATS],
                *[self.curves_figure(name) for name in self.plan.configured(self.variants) if self.buildable(name)]]

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

    def laser_data_files(self):
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
