"""Multilingual sentence embeddings by NMT with one encoder and one decoder per language
(Schwenk & Douze 2017, "Learning Joint Multilingual Sentence Representations with Neural Machine
Translation"): model (:mod:`.model`), partial training paths (:mod:`.paths`), N-way parallel data
(:mod:`.data`), training (:mod:`.trainer`) and the exported encoder (:mod:`.export`)."""
from laser_repro.models.declaration import FamilyDeclaration


class MultiencDeclaration(FamilyDeclaration):
    def encoder_languages(self, model, data):
        """The languages with an encoder (a fixed target has none, as in the paper), as the training paths
        decide in training and export."""
        from laser_repro.models.multienc.paths import TrainingPaths

        return TrainingPaths(model["paths"]).encoder_languages()

    def config_errors(self, model, data):
        from laser_repro.models.multienc.paths import TrainingPaths

        paths = model["paths"]
        targets = paths["sources"] if paths["targets"] == "all" else paths["targets"]
        errors = [*self.absent_languages(["paths", "sources"], paths["sources"], model, data),
                  *self.absent_languages(["paths", "targets"], targets, model, data)]
        try:
            TrainingPaths(paths)
        except ValueError as err:
            errors.append((["paths"], str(err)))
        return errors

    def train_settings(self, run, name):
        return run.plan.multienc_settings(name)

    def targets(self, run, names):
        """Paper 004's Tables 1-4 and the learning curves."""
        return [*run.paper_table_files("schwenk_douze_2017", ["table1", "table2", "table3", "table4"]),
                *super().targets(run, names)]


DECLARATION = MultiencDeclaration(name="multienc", text="bpe",
                                  loss_label=("translation loss", "cross-entropy per target token (nats)"))
