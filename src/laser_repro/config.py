"""Run configuration: schema validation, defaults, and the training plan derived from it.

The JSON schema (workflow/schemas/config.schema.yaml) is the single definition of the config keys;
this module fills its defaults, adds the checks a schema cannot express (known language codes,
batch arithmetic, per-kind corpus keys), and derives what the workflow iterates over.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, NamedTuple

import jsonschema
import yaml

from laser_repro import languages

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


# The four BUCC 2018 shared-task languages, each paired with English.
BUCC_LANGUAGES = {"deu": "de", "fra": "fr", "rus": "ru", "cmn": "zh"}


class ConfigError(ValueError):
    """A config value is invalid; the message names the file (when known) and the key path."""


def _key_path(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def load_schema(schema_path: Path | str = SCHEMA_PATH) -> dict:
    with open(schema_path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _fill_defaults(instance: Any, schema: dict, root: dict) -> None:
    """Insert schema `default`s for absent keys, recursing into objects and arrays."""
    if "$ref" in schema:
        ref = schema["$ref"].removeprefix("#/").split("/")
        target = root
        for part in ref:
            target = target[part]
        schema = target
    if isinstance(instance, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                _fill_defaults(instance[key], sub, root)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for item in instance:
            _fill_defaults(item, schema["items"], root)


def validate(config: dict, *, source: str = "config", schema_path: Path | str = SCHEMA_PATH) -> dict:
    """Validate `config` against the schema, fill defaults, run semantic checks; return a new dict."""
    schema = load_schema(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{source}: {_key_path(e.absolute_path)}: {e.message}" for e in errors[:20]]
        raise ConfigError("invalid configuration\n  " + "\n  ".join(lines))
    config = copy.deepcopy(config)
    for key in ("opus", "filters", "preprocess", "embed"):
        config.setdefault(key, {})
    _fill_defaults(config, schema, schema)
    _check_semantics(config, source)
    return config


def _check_semantics(config: dict, source: str) -> None:
    def known(code: str, where: str) -> None:
        try:
            languages.get(code)
        except languages.UnknownLanguageError as err:
            raise ConfigError(f"{source}: {where}: {err}") from None

    for i, code in enumerate(config["targets"]):
        known(code, f"targets[{i}]")
    names = set()
    for c, corpus in enumerate(config["corpora"]):
        where = f"corpora[{c}] ({corpus['name']})"
        if corpus["name"] in names:
            raise ConfigError(f"{source}: {where}.name: duplicate corpus name {corpus['name']!r}")
        names.add(corpus["name"])
        for i, code in enumerate(corpus["languages"]):
            known(code, f"{where}.languages[{i}]")
        for i, code in enumerate(corpus.get("targets", [])):
            if code not in config["targets"]:
                raise ConfigError(f"{source}: {where}.targets[{i}]: {code!r} is not one of the run targets {config['targets']}")
        if corpus["kind"] == "local" and corpus["layout"] == "nway":
            column = corpus.get("code_column", "flores")
            for i, code in enumerate(list(corpus["languages"]) + list(config["targets"])):
                if not getattr(languages.get(code), column, ""):
                    raise ConfigError(f"{source}: {where}: language {code!r} has no {column!r} code in languages.tsv")
        if corpus.get("first_n") and corpus.get("max_pairs"):
            raise ConfigError(f"{source}: {where}: set first_n or max_pairs, not both")
    for i, code in enumerate(config["evaluation"]["tatoeba"]["languages"]):
        known(code, f"evaluation.tatoeba.languages[{i}]")
        if code == "eng":
            raise ConfigError(f"{source}: evaluation.tatoeba.languages[{i}]: eng is the pivot of every Tatoeba pair, not a test language")
    evaluation = config["evaluation"]
    for task in ("bucc", "xnli", "mldoc", "wmt"):
        for i, code in enumerate(evaluation.get(task, {}).get("languages", [])):
            known(code, f"evaluation.{task}.languages[{i}]")
    for task in ("xnli", "mldoc", "wmt"):
        if task in evaluation and "eng" not in evaluation[task]["languages"]:
            raise ConfigError(f"{source}: evaluation.{task}.languages: must include eng (English is the "
                              f"training / pivot language of this task)")
    for i, code in enumerate(evaluation.get("bucc", {}).get("languages", [])):
        if code not in BUCC_LANGUAGES:
            raise ConfigError(f"{source}: evaluation.bucc.languages[{i}]: BUCC 2018 has only "
                              f"{sorted(BUCC_LANGUAGES)} (paired with English), not {code!r}")
    ablations = config.get("ablations", {})
    for i, code in enumerate(ablations.get("languages", {}).get("subset", [])):
        known(code, f"ablations.languages.subset[{i}]")
    if "languages" in ablations:
        subset = ablations["languages"]["subset"]
        absent = [t for t in config["targets"] if t not in subset]
        if absent:
            raise ConfigError(f"{source}: ablations.languages.subset: must contain the run targets; {absent} missing")
        if not any(s in subset and t in subset for s, t in Plan(config).pairs):
            raise ConfigError(f"{source}: ablations.languages.subset: no training pair has both languages in {subset}")
    if any(w > 0 for w in ablations.get("nli", {}).get("weights", [])) and "xnli" not in evaluation:
        raise ConfigError(f"{source}: ablations.nli: the NLI multitask trains on MultiNLI; configure evaluation.xnli "
                          "(its multinli_url / multinli_path and train_max_pairs) or drop the weights > 0")
    train = config["train"]
    planned = train["max_tokens"] * max(train["gpus"], 1) * train["update_freq"]
    if train.get("tokens_per_update") is not None and train["tokens_per_update"] != planned:
        raise ConfigError(
            f"{source}: train.tokens_per_update={train['tokens_per_update']} but max_tokens x max(gpus,1) x update_freq"
            f" = {train['max_tokens']} x {max(train['gpus'], 1)} x {train['update_freq']} = {planned}")
    if not any(p for p in Plan(config).pairs):
        raise ConfigError(f"{source}: corpora: no (source, target) pair with source != target")
    if train.get("early_stopping") and not config.get("flores_eval"):
        raise ConfigError(f"{source}: train.early_stopping: validates on the held-out FLORES lines; configure flores_eval")
    flores = config.get("flores_eval")
    if flores:
        corpus = next((c for c in config["corpora"] if c["name"] == flores["corpus"]), None)
        if corpus is None or corpus["kind"] != "local" or corpus["layout"] != "nway":
            raise ConfigError(f"{source}: flores_eval.corpus: {flores['corpus']!r} is not an N-way local corpus of "
                              f"`corpora` ({[c['name'] for c in config['corpora']]})")
        start, stop = flores["heldout_lines"]
        if not 0 <= start < stop:
            raise ConfigError(f"{source}: flores_eval.heldout_lines: need 0 <= start < stop, got {[start, stop]}")
        if isinstance(flores["languages"], list):
            for i, code in enumerate(flores["languages"]):
                known(code, f"flores_eval.languages[{i}]")
                if not getattr(languages.get(code), corpus.get("code_column", "flores"), ""):
                    raise ConfigError(f"{source}: flores_eval.languages[{i}]: {code!r} has no FLORES code in languages.tsv")
        for i, code in enumerate(flores["curves"]["languages"]):
            if code not in corpus["languages"] or code == "eng":
                raise ConfigError(f"{source}: flores_eval.curves.languages[{i}]: {code!r} must be a non-English "
                                  f"language of corpus {corpus['name']!r} (its held-out lines are binarized)")
        if "eng" not in corpus["languages"] and "eng" not in config["targets"]:
            raise ConfigError(f"{source}: flores_eval: English, the pivot, must be a language of {corpus['name']!r}")


def load(path: str | Path, overrides: dict | None = None) -> dict:
    """Read a YAML config, apply top-level overrides (as `snakemake --config k=v` does), validate."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            config = yaml.safe_load(f)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    config.update(overrides or {})
    return validate(config, source=str(path))


@dataclass(frozen=True)
class Variant:
    """One trained model: the base model or an ablation variant (paper section 5)."""
    name: str
    model: tuple  # sorted (key, value) items of the model section
    pairs: tuple[tuple[str, str], ...]
    nli_weight: int = 0

    @property
    def identity(self) -> tuple:
        """What training depends on: variants with equal identity are the same model."""
        return (self.model, self.pairs, self.nli_weight)


class AblationRow(NamedTuple):
    """One row of an ablation table: variant name, row label, the model trained, the paper's setting key."""
    name: str
    label: str
    variant: Variant
    setting: str


@dataclass(frozen=True)
class Bitext:
    """One aligned (source, target) text of one corpus."""
    corpus: str
    src: str
    tgt: str

    @property
    def pair(self) -> str:
        return f"{self.src}-{self.tgt}"


class Plan:
    """What a validated config expands to: bitexts, language pairs, sides to preprocess."""

    def __init__(self, config: dict):
        self.config = config

    @cached_property
    def corpora(self) -> dict[str, dict]:
        return {c["name"]: c for c in self.config["corpora"]}

    @cached_property
    def bitexts(self) -> list[Bitext]:
        out = []
        for corpus in self.config["corpora"]:
            targets = corpus.get("targets") or self.config["targets"]
            for src in corpus["languages"]:
                for tgt in targets:
                    if src != tgt:  # no auto-encoding (paper, footnote 2)
                        out.append(Bitext(corpus["name"], src, tgt))
        return out

    @cached_property
    def pairs(self) -> list[tuple[str, str]]:
        """Distinct (src, tgt) training directions, in config order."""
        return list(dict.fromkeys((b.src, b.tgt) for b in self.bitexts))

    def bitexts_of_pair(self, src: str, tgt: str) -> list[Bitext]:
        return [b for b in self.bitexts if (b.src, b.tgt) == (src, tgt)]

    @cached_property
    def source_languages(self) -> list[str]:
        return list(dict.fromkeys(src for src, _ in self.pairs))

    @property
    def targets(self) -> list[str]:
        return list(self.config["targets"])

    @property
    def tatoeba_languages(self) -> list[str]:
        return list(self.config["evaluation"]["tatoeba"]["languages"])

    @cached_property
    def trained_languages(self) -> set[str]:
        """Languages with training data in this config (sources and targets)."""
        return {lang for pair in self.pairs for lang in pair}

    @property
    def tatoeba_seen(self) -> list[str]:
        """Tatoeba languages with training data: Table 1."""
        return [code for code in self.tatoeba_languages if code in self.trained_languages]

    @property
    def tatoeba_unseen(self) -> list[str]:
        """Tatoeba languages without any training data in this config: Table 9."""
        return [code for code in self.tatoeba_languages if code not in self.trained_languages]

    # -- FLORES xsim (held-out lines, learning curves) --------------------------------------------
    @property
    def flores_eval(self) -> dict | None:
        return self.config.get("flores_eval")

    def heldout_lines(self, corpus: str) -> tuple[int, int] | None:
        """The lines of ``corpus`` held out of training (0-based [start, stop)), or None."""
        flores = self.flores_eval
        if flores and flores["corpus"] == corpus:
            return tuple(flores["heldout_lines"])
        return None

    @cached_property
    def flores_languages(self) -> list[str]:
        """Languages scored against English on FLORES: trained ones first, then zero-shot ones."""
        flores = self.flores_eval
        if not flores:
            return []
        column = self.corpora[flores["corpus"]].get("code_column", "flores")
        if flores["languages"] == "registry":
            codes = [code for code, lang in languages.all_languages().items() if getattr(lang, column, "")]
        else:
            codes = list(flores["languages"])
        codes = [c for c in dict.fromkeys(codes) if c != "eng"]
        return sorted(codes, key=lambda c: (c not in self.trained_languages, c))

    @cached_property
    def curve_pairs(self) -> list[tuple[str, str]]:
        """Training pairs whose held-out lines are binarized (valid.*): every pair of the FLORES corpus."""
        flores = self.flores_eval
        if not flores:
            return []
        return [(b.src, b.tgt) for b in self.bitexts if b.corpus == flores["corpus"]]

    def tokens_per_update(self) -> int:
        train = self.config["train"]
        return train["max_tokens"] * max(train["gpus"], 1) * train["update_freq"]

    # -- ablation variants (Tables 5-7) ------------------------------------------------------------
    @cached_property
    def base(self) -> Variant:
        return Variant("base", tuple(sorted(self.config["model"].items())), tuple(self.pairs))

    def _variant(self, name: str, *, model=None, pairs=None, nli_weight: int = 0) -> Variant:
        merged = {**self.config["model"], **(model or {})}
        return Variant(name, tuple(sorted(merged.items())), tuple(pairs or self.pairs), nli_weight)

    @cached_property
    def ablation_rows(self) -> dict[str, list[AblationRow]]:
        """ablation -> its rows in config order. A variant equal to the base model is the base model
        (trained once): its model is the base Variant. `setting` is the row's key in the paper's
        Tables 5-7 (data/paper_tables5_7_ablations.csv)."""
        ablations = self.config.get("ablations", {})
        rows: dict[str, list[AblationRow]] = {}
        if "depth" in ablations:
            rows["depth"] = [AblationRow(f"layers{n}", f"{n} layer{'s' if n > 1 else ''}",
                                         self._variant(f"layers{n}", model={"encoder_layers": n}), f"layers={n}")
                             for n in ablations["depth"]["layers"]]
        if "nli" in ablations:
            rows["nli"] = [AblationRow(f"nli{w}", "no NLI" if w == 0 else f"NLI x{w}",
                                       self._variant(f"nli{w}", nli_weight=w), f"nli={w}")
                           for w in ablations["nli"]["weights"]]
        if "languages" in ablations:
            subset = set(ablations["languages"]["subset"])
            kept = [p for p in self.pairs if p[0] in subset and p[1] in subset]
            n_sub = len({lang for pair in kept for lang in pair})
            rows["languages"] = [
                AblationRow("all_languages", f"all {len(self.trained_languages)} languages", self.base,
                            "languages=all"),
                AblationRow("subset_languages", f"{n_sub} evaluation languages",
                            self._variant("subset_languages", pairs=kept), "languages=subset")]
        base = self.base
        return {ablation: [r._replace(variant=base) if r.variant.identity == base.identity else r for r in variants]
                for ablation, variants in rows.items()}

    @cached_property
    def variants(self) -> dict[str, Variant]:
        """Every distinct model to train: the base model first, then the ablation variants."""
        out = {"base": self.base}
        for rows in self.ablation_rows.values():
            for row in rows:
                out.setdefault(row.variant.name, row.variant)
        return out

    @cached_property
    def variant_aliases(self) -> dict[str, str]:
        """Every variant name (also those equal to the base model) -> the name of the model trained."""
        names = {"base": "base"}
        for rows in self.ablation_rows.values():
            names.update({row.name: row.variant.name for row in rows})
        return names

    def nli_settings(self, variant: Variant) -> dict | None:
        if not variant.nli_weight:
            return None
        return {"weight": variant.nli_weight, "hidden_dim": self.config["ablations"]["nli"]["hidden_dim"]}

