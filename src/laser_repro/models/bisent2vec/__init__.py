"""Bi-Sent2Vec (Sabet et al. 2019): bilingual Sent2Vec, CBOW over whole sentences with a cross-lingual term."""
from laser_repro.models.declaration import FamilyDeclaration


class BiSent2VecDeclaration(FamilyDeclaration):
    def encoder_languages(self, model, data):
        """The model's language pair (one model per pair, as in the paper)."""
        return list(model["pair"])

    def config_errors(self, model, data):
        return self.absent_languages(["pair"], model["pair"], model, data)


DECLARATION = BiSent2VecDeclaration(name="bisent2vec", text="tok")
