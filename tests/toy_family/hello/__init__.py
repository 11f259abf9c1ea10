"""A toy family (tests/test_toy_family.py), as a user would add one: a bag of hashed words trained so that the
translations of a sentence embed close together. Its package declares what the workflow asks of it."""
from laser_repro.models.declaration import FamilyDeclaration


class HelloDeclaration(FamilyDeclaration):
    def train_settings(self, run, name):
        m = run.family_models[name]
        return {"languages": run.plan.encoder_languages(name), "model": dict(m["model"]), "train": dict(m["train"])}


DECLARATION = HelloDeclaration(name="hello", text="tok", kept="last",
                               loss_label=("in-batch translation ranking loss", "cross-entropy per pair (nats)"))
