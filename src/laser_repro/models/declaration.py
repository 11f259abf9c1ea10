"""What the config and the workflow know about a model family, declared by the family itself.

Each family package (``laser_repro.models.<family>``, listed in :data:`laser_repro.models.registry.FAMILIES`)
defines ``DECLARATION``, a :class:`FamilyDeclaration`: its facts as data and small functions of a model's config
entry. The package's ``__init__`` imports nothing heavy (no torch, no fairseq): the workflow reads the
declarations when Snakemake parses the Snakefile, the family's code runs only in its jobs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

#: the format of a model's held-out scores: LASER's flores-xsim scores (laser-repro flores-xsim) or the
#: similarity error matrices of laser-repro similarity (every other family, on its N-way validation lines)
HELDOUT_FORMATS = ("flores-xsim", "similarity")

#: a model's input text of its N-way data (nway_data.<name>): the data's BPE codes applied (the codes are an
#: input of every job that embeds with the model), or the Moses-preprocessed words (the encoder file holds
#: the model's vocabulary)
MODEL_TEXTS = ("bpe", "tok")


@dataclass(frozen=True)
class FamilyDeclaration:
    """A family's facts. ``name``: its name in the config (``models.<name>.family``); ``text``: one of
    :data:`MODEL_TEXTS`, the N-way data text its models read in training and in evaluation; ``heldout``:
    one of :data:`HELDOUT_FORMATS`, what its held-out scores file holds.

    The methods taking ``run`` are the workflow's questions: ``run`` is the
    :class:`laser_repro.workflow.run.WorkflowRun` asking (passed in, never imported: the workflow layer is
    above this one), whose paths and plan they use."""

    name: str
    text: str
    heldout: str = "similarity"
    #: the learning curves' loss panel (title, y label); what an update is; the model kept ("lowest": the
    #: lowest validation similarity error, "last": the last, e.g. a fixed number of epochs)
    loss_label: tuple[str, str] = ("training loss", "loss (nats)")
    update_label: str = "updates"
    kept: str = "lowest"
    #: the directory under results/<run>/nway/<data>/ that the data stage versions for these models (DVC):
    #: its text (default) or the vocabulary learned on it
    data_dir: str = ""

    def __post_init__(self):
        if self.text not in MODEL_TEXTS:
            raise ValueError(f"family {self.name}: text {self.text!r}, not one of {', '.join(MODEL_TEXTS)}")
        if self.heldout not in HELDOUT_FORMATS:
            raise ValueError(f"family {self.name}: heldout {self.heldout!r}, not one of {', '.join(HELDOUT_FORMATS)}")
        if self.kept not in ("lowest", "last"):
            raise ValueError(f"family {self.name}: kept {self.kept!r}, not one of lowest, last")
        if not self.data_dir:
            object.__setattr__(self, "data_dir", self.text)

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

    # -- the workflow's questions (``run``: the WorkflowRun asking; ``name``: a trained model, seed replicates too)
    def train_settings(self, run: Any, name: str) -> dict:
        """``laser-repro train --settings`` of a model: a function of the config alone (the train rule passes it
        as a wildcards-only param, so a changed setting retrains; the tables check each model's record
        against it)."""
        raise NotImplementedError(f"family {self.name} declares no training settings")

    def description(self, run: Any, name: str) -> str:
        """A model's description in the tables: its config entry's, else its name."""
        return run.family_models[name].get("description", name)

    def heldout_scores_file(self, run: Any, trained: str) -> str:
        """A trained model's held-out scores (format :attr:`heldout`): the similarity error on its N-way
        data's validation lines (rule model_similarity)."""
        return f"{run.run}/eval/models/{trained}/similarity.json"

    def compare_column(self, run: Any, name: str) -> tuple[str, str]:
        """(column key, description) of a model in the FLORES comparison; models sharing a key share a column."""
        return name, self.description(run, name)

    def pretraining(self, run: Any, name: str) -> dict | None:
        """A model's shared pre-training run as the reproduces table reads it ({"id", "benchmark"}), or None."""
        return None

    def task_skip_reason(self, run: Any, task: str, name: str) -> str:
        """Why a model has no scores of an evaluation task ('' when it has them)."""
        return run.task_skip_reason(task, name)

    def data_files(self, run: Any, names: Sequence[str]) -> list[str]:
        """What the data stage (`snakemake data`) builds for these models of the family: the N-way text they
        read (the BPE directory, or the Moses-preprocessed lines of the languages they embed)."""
        files = []
        for name in names:
            data = run.family_models[name]["data"]
            if self.text == "bpe":
                files.append(f"{run.run}/nway/{data}/bpe")
            else:
                files += [f"{run.run}/nway/{data}/tok/{split}.{lang}" for lang in run.plan.encoder_languages(name)
                          for split in ("train", "valid")]
        return list(dict.fromkeys(files))

    def evaluation_files(self, run: Any, names: Sequence[str]) -> list[str]:
        """Every score and baseline file of these models (`snakemake evaluate`): the similarity error of each
        and its N-way data's TF-IDF baseline (the learning curves'), and what the family's tables read."""
        files = [self.heldout_scores_file(run, name) for name in names]
        return files + sorted({f"{run.run}/eval/nway/{run.family_models[name]['data']}/tfidf.json" for name in names})

    def targets(self, run: Any, names: Sequence[str]) -> list[str]:
        """What the main command builds for these models: each configured model's learning curves and its
        similarity error on its data's held-out lines (and update 0's), and the family's tables."""
        return [p for name in run.tabled(names) for p in (run.curves_figure(name), self.heldout_scores_file(run, name))]
