"""What the config and the workflow know about a model family, declared by the family itself.

Each family package (``laser_repro.models.<family>``, listed in :data:`laser_repro.models.registry.FAMILIES`)
defines ``DECLARATION``, a :class:`FamilyDeclaration`: its facts as data and small functions of a model's config
entry. The package's ``__init__`` imports nothing heavy (no torch, no fairseq): the workflow reads the
declarations when Snakemake parses the Snakefile, the family's code runs only in its jobs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

#: a model's input text of its N-way data (nway_data.<name>): the data's BPE codes applied (the codes are an
#: input of every job that embeds with the model), or the Moses-preprocessed words (the encoder file holds
#: the model's vocabulary)
MODEL_TEXTS = ("bpe", "tok")


@dataclass(frozen=True)
class FamilyDeclaration:
    """A family's facts. ``name``: its name in the config (``models.<name>.family``); ``text``: one of
    :data:`MODEL_TEXTS`, the N-way data text its models read in training and in evaluation."""

    name: str
    text: str

    def __post_init__(self):
        if self.text not in MODEL_TEXTS:
            raise ValueError(f"family {self.name}: text {self.text!r}, not one of {', '.join(MODEL_TEXTS)}")

    def encoder_languages(self, model: Mapping, data: Mapping) -> list[str]:
        """The languages a model embeds. ``model``: its entry of the config's `models`; ``data``: the
        entry of `nway_data` it trains on. Every language of its data, unless the family says otherwise."""
        return list(data["languages"])

    def config_errors(self, model: Mapping, data: Mapping) -> list[tuple[list[str], str]]:
        """What is wrong in a model's config entry beyond its schema, given its N-way data: (key path inside
        the entry, message) each; the config names the first with its file and line."""
        return []

    @staticmethod
    def absent_languages(key: list[str], codes: Sequence[str], model: Mapping, data: Mapping) -> list[tuple[list[str], str]]:
        """The error of a key whose languages are not all among those of the model's data."""
        absent = [code for code in codes if code not in data["languages"]]
        return [(key, f"{absent} not among the languages of nway_data.{model['data']} {data['languages']}")] if absent else []

    def tatoeba_languages(self, model: Mapping, data: Mapping, tatoeba: Sequence[str]) -> list[str]:
        """The Tatoeba languages (xx of the xx-eng test sets, in ``tatoeba``'s order) a model is scored on:
        those it has an encoder for, none without one for English."""
        own = set(self.encoder_languages(model, data))
        return [lang for lang in tatoeba if lang in own and lang != "eng"] if "eng" in own else []
