"""LaBSE (Feng et al. 2020): a shared transformer dual encoder trained with the bidirectional
additive-margin translation ranking loss, optionally initialised by MLM + TLM pre-training."""
from laser_repro.models.declaration import FamilyDeclaration


class LabseDeclaration(FamilyDeclaration):
    def tatoeba_languages(self, model, data, tatoeba):
        """Every Tatoeba language: one encoder for all, whatever its training languages."""
        return list(tatoeba)


# (its WordPiece vocabulary, learned on the Moses-preprocessed text, is in the encoder file)
DECLARATION = LabseDeclaration(name="labse", text="tok")
