"""The LASER model: fairseq bridge, fairseq plugin, encoder export and embedding."""
from laser_repro.models.declaration import FamilyDeclaration


class LaserDeclaration(FamilyDeclaration):
    """LASER's models are the config's LASER model and its ablation variants and seed replicates (the run's
    `variants`), on the joint BPE of bitext_data; the LASER rules build their data, scores and tables (the
    workflow's laser_targets), so :meth:`data_files`, :meth:`evaluation_files` and :meth:`targets` are not
    asked of this family."""

    def train_settings(self, run, name):
        return run.train_settings(name)

    def description(self, run, name):
        return run.plan.laser_description(name)

    def heldout_scores_file(self, run, trained):
        """flores-xsim's scores on the held-out FLORES lines (rule flores_xsim)."""
        return f"{run.flores_dir}/{trained}/scores.json"

    def compare_column(self, run, name):
        return name, f"LASER: {self.description(run, name)}"

    def task_skip_reason(self, run, task, name):
        """None: every task embeds its languages with LASER's joint BPE."""
        return ""


DECLARATION = LaserDeclaration(name="laser", text="bpe", heldout="flores-xsim")
