"""LaBSE (Feng et al. 2020): a shared transformer dual encoder trained with the bidirectional
additive-margin translation ranking loss, optionally initialised by MLM + TLM pre-training."""
from laser_repro.models.declaration import FamilyDeclaration


class LabseDeclaration(FamilyDeclaration):
    def tatoeba_languages(self, model, data, tatoeba):
        """Every Tatoeba language: one encoder for all, whatever its training languages."""
        return list(tatoeba)

    def config_errors(self, model, data):
        errors = []
        if model["pivot"] not in data["languages"]:
            errors.append((["pivot"], f"{model['pivot']!r} not among the languages of nway_data.{model['data']} "
                                      f"{data['languages']}"))
        if model["encoder"]["hidden"] % model["encoder"]["heads"]:
            errors.append((["encoder", "heads"], f"hidden {model['encoder']['hidden']} is not a multiple of heads "
                                                 f"{model['encoder']['heads']}"))
        return errors

    def train_settings(self, run, name):
        pretrained = run.labse_pretrained(name)
        return run.plan.labse_settings(name, "dual", tokenizer=run.labse_tokenizer(name),
                                       init_checkpoint=pretrained[0] if pretrained else None)

    def pretraining(self, run, name):
        """The MLM + TLM pre-training the model starts from (shared by the models that pre-train alike)."""
        key = run.plan.labse_pretraining(name)
        return key and {"id": key, "benchmark": f"{run.run}/benchmarks/labse_pretrain/{key}.tsv"}

    def data_files(self, run, names):
        """Each model's WordPiece vocabulary (learned on the Moses-preprocessed text)."""
        return list(dict.fromkeys(run.labse_tokenizer(name) for name in names))

    def evaluation_files(self, run, names):
        files = [*super().evaluation_files(run, names), *(p for name in names for p in run.labse_result_files(name).values() if p)]
        files += [f"{run.run}/eval/tfidf/tatoeba.json"] if run.labse_tatoeba_languages() else []
        return list(dict.fromkeys(files + ([f"{run.run}/eval/tfidf/un.json"] if run.labse_un() else [])))

    def targets(self, run, names):
        """Paper 003's Table 2 and the learning curves (the similarity errors: `snakemake evaluate`)."""
        return [*run.paper_table_files("labse_2020", ["table2"]), *(run.curves_figure(n) for n in run.tabled(names))]


# (its WordPiece vocabulary, learned on the Moses-preprocessed text, is in the encoder file)
DECLARATION = LabseDeclaration(name="labse", text="tok", data_dir="wordpiece",
                               loss_label=("ranking loss (AMS, both directions)", "loss per pair, x->y + y->x (nats)"))
