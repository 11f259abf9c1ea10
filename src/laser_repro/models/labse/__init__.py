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


# (its WordPiece vocabulary, learned on the Moses-preprocessed text, is in the encoder file)
DECLARATION = LabseDeclaration(name="labse", text="tok")
