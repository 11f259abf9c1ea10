"""Run configuration: schema validation and defaults, and errors that name the file, line and key.

The JSON schema (workflow/schemas/config.schema.yaml) is the single definition of the config keys;
this module fills its defaults, adds the checks a schema cannot express (known language codes,
batch arithmetic, per-kind corpus keys), loads and checks config files (``python -m
laser_repro.config FILE``) and the config of a Snakemake run.  What a valid config expands to is
:mod:`laser_repro.config.plan`.
"""
from __future__ import annotations

import copy
import difflib
import os
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import yaml

from laser_repro.config.plan import Plan, corpus_code, laser_setup
from laser_repro.core import languages
from laser_repro.core.errors import ConfigError
from laser_repro.data.corpora import EVALUATION_ONLY_SETS, evaluation_set_named
from laser_repro.models import registry
from laser_repro.evaluation.bucc import LANGUAGES as BUCC_LANGUAGES  # the BUCC 2018 languages (ISO 639-3 -> BUCC code)
from laser_repro.models.training_guard import planned_tokens_per_update

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "config.schema.yaml"


MAX_ERRORS = 10  # schema violations listed in one error

# Corpus keys of one kind only (a key of the other kind would be ignored: it is an error).
CORPUS_KIND_KEYS = {"opus": ("corpus", "version", "sha256", "allow_absent_pairs"),
                    "local": ("layout", "path", "download", "code_column")}


def _key_path(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top level>"


def load_schema(schema_path: Path | str = SCHEMA_PATH) -> dict:
    with open(schema_path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _resolve_ref(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        target = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = target
    return schema


def _fill_defaults(instance: Any, schema: dict, root: dict) -> None:
    """Insert schema `default`s for absent keys, recursing into objects and arrays."""
    schema = _resolve_ref(schema, root)
    branch = _discriminated_branch(schema.get("oneOf", []), instance, root)
    if branch is not None:
        schema = _resolve_ref(schema["oneOf"][branch], root)
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        for key, sub in properties.items():
            if key not in instance and "default" in sub:
                instance[key] = copy.deepcopy(sub["default"])
            if key in instance:
                _fill_defaults(instance[key], sub, root)
        if isinstance(schema.get("additionalProperties"), dict):  # name -> entry maps (models, nway_data)
            for key in instance:
                if key not in properties:
                    _fill_defaults(instance[key], schema["additionalProperties"], root)
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for item in instance:
            _fill_defaults(item, schema["items"], root)


# ---- where a config came from, and error messages naming the file, line and key ---------------------

def _discriminated_branch(branches: list, instance: Any, root: dict) -> int | None:
    """The branch of a oneOf whose ``family`` const is the instance's family (a model of `models`)."""
    if not isinstance(instance, dict) or "family" not in instance:
        return None
    for i, branch in enumerate(branches):
        const = _resolve_ref(branch, root).get("properties", {}).get("family", {}).get("const")
        if const is not None and const == instance["family"]:
            return i
    return None


def _yaml_error(path: Path | str, err: yaml.YAMLError) -> ConfigError:
    """One line: ``FILE:LINE:COLUMN: not valid YAML: problem (context at line L, column C)``."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    context, cmark = getattr(err, "context", None), getattr(err, "context_mark", None)
    if context and cmark and cmark is not mark:
        problem += f" ({context} at line {cmark.line + 1}, column {cmark.column + 1})"
    return ConfigError(f"{where}: not valid YAML: {problem}")


def read_yaml(path: Path | str) -> dict:
    """A YAML (or JSON) config file as a dict; a syntax error names the file, line and column."""
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except yaml.YAMLError as err:
        raise _yaml_error(path, err) from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read: {err.strerror or err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of config keys, not {type(data).__name__}")
    return data


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 15]}...{text[-10:]}"


def _display_path(path: Path | str) -> str:
    """A config file as the user would name it: relative to the cwd when under it."""
    rel = os.path.relpath(os.path.abspath(path))
    return str(path) if rel.startswith("..") else rel


@dataclass
class Origin:
    """Where a config came from: its files in merge order (later ones win, Snakemake's deep merge) and
    the `--config key=value` overrides applied last. Finds the file and line that set a key."""
    files: tuple = ()
    overrides: dict | None = None

    def label(self) -> str:
        parts = [_display_path(f) for f in self.files]
        if self.overrides:
            shown = {k: v if isinstance(v, str) and len(v) <= 60 else _short(v) for k, v in self.overrides.items()}
            parts.append("--config " + " ".join(f"{k}={v}" for k, v in shown.items()))
        return " + ".join(parts)

    @cached_property
    def _nodes(self) -> list:
        nodes = []
        for f in self.files:
            try:
                with open(f, encoding="utf-8") as fh:
                    nodes.append((f, yaml.compose(fh, Loader=yaml.SafeLoader)))
            except (OSError, yaml.YAMLError):
                nodes.append((f, None))
        return nodes

    def locate(self, path: list) -> str | None:
        """``FILE:LINE`` of the key path in the file that set it (the deepest match, the later file
        on ties), ``--config KEY`` when an override set its top-level key; None when unknown."""
        if path and self.overrides and path[0] in self.overrides:
            return f"--config {path[0]}"
        best = None  # (depth, file, line)
        for f, node in self._nodes:
            depth, line = 0, None
            for part in path:
                if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                    hit = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part),
                               None)
                    if hit is None:
                        break
                    line, node = hit[0].start_mark.line + 1, hit[1]
                elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                    node = node.value[part]
                    line = node.start_mark.line + 1
                else:
                    break
                depth += 1
            if node is not None and (best is None or depth >= best[0]):
                best = (depth, f, line)
        if best is None:
            return None
        return f"{_display_path(best[1])}:{best[2]}" if best[2] else _display_path(best[1])


def _schema_summary(schema: dict, root: dict) -> str:
    """What a subschema allows, in a few words."""
    schema = _resolve_ref(schema, root)
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    if "type" not in schema and schema.get("required"):  # one form of an object (e.g. a corpus download)
        return "the keys " + " + ".join(schema["required"])
    kind = schema.get("type", "value")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(schema.get("items"), dict):
        items = _resolve_ref(schema["items"], root)
        what = "language codes" if items.get("pattern") == "^[a-z]{3}$" else _schema_summary(items, root) + "s"
        return f"an array of {what}"
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _error_lines(error: jsonschema.ValidationError, root: dict) -> list[tuple[list, str]]:
    """(key path, short message) of one schema violation: never the schema, long values abbreviated."""
    path, inst, kind = list(error.absolute_path), error.instance, error.validator
    if kind == "additionalProperties" and isinstance(inst, dict):
        allowed = list(error.schema.get("properties", {}))
        out = []
        for key in inst:
            if key in allowed:
                continue
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            out.append((path + [key], f"unknown key; {hint}allowed: {', '.join(allowed)}"))
        if out:
            return out
    if kind == "oneOf":
        branch = _discriminated_branch(error.validator_value, inst, root)
        if branch is not None:  # the errors against the schema of the instance's own family
            within = [e for e in error.context if e.schema_path and e.schema_path[0] == branch]
            if within:
                return [line for e in within for line in _error_lines(e, root)]
        families = [_resolve_ref(b, root).get("properties", {}).get("family", {}).get("const")
                    for b in error.validator_value]
        if isinstance(inst, dict) and any(families):
            return [(path + ["family"], f"{_short(inst.get('family'))} is not a model family; known: "
                                        f"{', '.join(f for f in families if f)}")]
    if kind in ("oneOf", "anyOf"):
        forms = " or ".join(_schema_summary(s, root) for s in error.validator_value)
        return [(path, f"{_short(inst)} is not allowed; expected {forms}")]
    if kind == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return [(path, f"expected {want}, got {type(inst).__name__} {_short(inst)}")]
    message = error.message
    if len(repr(inst)) > 60:
        message = message.replace(repr(inst), _short(inst))
    return [(path, message)]


def _unknown_kind_keys(config: dict, schema: dict) -> list[tuple[list, str]]:
    """Keys of the other corpus kind (an OPUS key on a local corpus or the reverse). One at its schema
    default is harmless (and filled in every corpus: a validated config validates again)."""
    defaults = {k: v["default"] for k, v in schema["properties"]["corpora"]["items"]["properties"].items()
                if "default" in v}
    out = []
    for c, corpus in enumerate(config.get("corpora") or []):
        if not isinstance(corpus, dict) or corpus.get("kind") not in CORPUS_KIND_KEYS:
            continue
        for key, value in corpus.items():
            if key in defaults and value == defaults[key]:
                continue
            for other, keys in CORPUS_KIND_KEYS.items():
                if other != corpus["kind"] and key in keys:
                    out.append((["corpora", c, key], f"only for kind: {other} corpora ({corpus.get('name')!r} "
                                                       f"is kind: {corpus['kind']})"))
        if corpus.get("layout") == "nway" and "shards" in corpus:
            out.append((["corpora", c, "shards"], f"an N-way corpus ({corpus.get('name')!r}) is Moses-preprocessed "
                                                  "once per language file, not in shards: remove shards"))
    return out


def validate(config: dict, *, source: str | None = None, schema_path: Path | str = SCHEMA_PATH,
             origin: Origin | None = None) -> dict:
    """Validate `config` against the schema, fill defaults, run semantic checks; return a new dict.

    `origin` (its files and --config overrides) lets an error name the file and line of the key;
    `source` names the config in messages (default: the origin's files, else "config")."""
    origin = origin or Origin()
    source = source or origin.label() or "config"
    if isinstance(config, dict):
        _refuse_top_level_laser(config, source, origin)
    schema = load_schema(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config),
                    key=lambda e: [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in e.absolute_path])
    problems = [item for e in errors for item in _error_lines(e, schema)]
    if not problems and isinstance(config, dict):
        problems = _unknown_kind_keys(config, schema)
    _raise_problems(problems, origin, source)
    config = _expand_variants(config, source, origin, schema)
    _check_other_laser_models(config, source, origin)
    config.setdefault("opus", {})
    _fill_defaults(config, schema, schema)
    _check_laser_entries(config, source, origin)
    _check_semantics(config, source, origin)
    return config


def _raise_problems(problems: list[tuple[list, str]], origin: Origin, source: str) -> None:
    """One ConfigError listing schema problems (key path, message), each with the file and line of its key."""
    if not problems:
        return
    lines = []
    for path, message in problems[:MAX_ERRORS]:
        where = origin.locate(path)
        lines.append(f"{where or source}: {_key_path(path)}: {message}")
    if len(problems) > MAX_ERRORS:
        lines.append(f"... and {len(problems) - MAX_ERRORS} more")
    raise ConfigError(f"invalid configuration ({source}):\n  " + "\n  ".join(lines))


def _deep_merge(base: dict, override: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in override.items():
        out[key] = _deep_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) \
            else copy.deepcopy(value)
    return out


def _flat(settings: dict, prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted key, value) of nested settings."""
    out = []
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            out += _flat(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def _expand_variants(config: dict, source: str, origin: Origin, schema: dict) -> dict:
    """A copy of the config in which every model's `variants` (suffix -> settings that differ) are models of
    their own, ``<model>_<suffix>``, each validated by its family's schema (an error names the variant's key)."""
    models = config.get("models") or {}
    if not any(m.get("variants") for m in models.values()):
        return copy.deepcopy({**config, "models": {n: {k: v for k, v in m.items() if k != "variants"}
                                                   for n, m in models.items()}})
    expanded, variant_of = {}, {}
    for name, model in models.items():
        base = {k: v for k, v in model.items() if k != "variants"}
        expanded[name] = copy.deepcopy(base)
        for suffix, override in (model.get("variants") or {}).items():
            path = ["models", name, "variants", suffix]
            new = f"{name}_{suffix}"
            if new in models or new in expanded:
                raise ConfigError(f"{origin.locate(path) or source}: {_key_path(path)}: its model name {new!r} is "
                                  f"already a model of `models`")
            if "family" in override and override["family"] != base["family"]:
                raise ConfigError(f"{origin.locate(path + ['family']) or source}: {_key_path(path + ['family'])}: a "
                                  f"variant keeps its model's family ({base['family']})")
            variant = _deep_merge(base, override)
            if "description" not in override:  # never the base model's label on another model
                changed = ", ".join(f"{k}={v}" for k, v in _flat(override))
                variant["description"] = f"{base.get('description', name)}; variant {suffix}: {changed}"
            if "paper_row" in base and "paper_row" not in override:  # a paper row is claimed explicitly
                variant["paper_row"] = None
            expanded[new] = variant
            variant_of[new] = (name, suffix)
    out = {**copy.deepcopy(config), "models": expanded}
    problems = []
    for error in jsonschema.Draft202012Validator(schema).iter_errors(out):
        for path, message in _error_lines(error, schema):
            if len(path) > 1 and path[0] == "models" and path[1] in variant_of:
                path = ["models", *variant_of[path[1]][:1], "variants", variant_of[path[1]][1], *path[2:]]
            problems.append((path, message))
    _raise_problems(problems, origin, source)
    return out


# ---- one config shape: LASER's model and data are entries of `models` and `bitext_data` -------------

TOP_LEVEL_LASER_KEYS = {"targets": "data", "filters": "data", "preprocess": "data", "bpe": "data",
                        "model": "model", "train": "model", "embed": "model", "ablations": "model"}


def _refuse_top_level_laser(config: dict, source: str, origin: Origin) -> None:
    """The former top-level LASER form (targets, bpe, model, train, ... at the top level) is refused with
    the way to write it now: one shape for every family."""
    found = [key for key in config if key in TOP_LEVEL_LASER_KEYS]
    if not found:
        return
    data = ", ".join(k for k in found if TOP_LEVEL_LASER_KEYS[k] == "data") or "targets, bpe"
    model = ", ".join(k for k in found if TOP_LEVEL_LASER_KEYS[k] == "model") or "model, train"
    where = origin.locate([found[0]]) or source
    raise ConfigError(
        f"{where}: {', '.join(found)}: the LASER model is no longer configured at the top level. Every model is "
        f"an entry of `models` and LASER's data an entry of `bitext_data`; move the keys there:\n"
        f"  bitext_data:\n    <data name>:          # {data} (and optionally corpora: [names], default every corpus)\n"
        f"  models:\n    base:\n      family: laser\n      data: <data name>\n"
        f"      ...                   # {model}\n"
        f"(docs/configurations.md, \"One config shape\"; config/small.yaml is an example)")


def _check_other_laser_models(config: dict, source: str, origin: Origin) -> None:
    """Before defaults: the LASER models after the first share its embedding settings and its ablations
    are the run's (Tables 5-7 vary the base model): neither is given on them."""
    laser = [name for name, m in config["models"].items() if m["family"] == "laser"]
    for name in laser[1:]:
        for key, why in (("embed", "the LASER models of a run embed with the first one's settings"),
                         ("ablations", "the ablations (Tables 5-7) vary the run's first LASER model")):
            if key in config["models"][name]:
                path = ["models", name, key]
                raise ConfigError(f"{origin.locate(path) or source}: {_key_path(path)}: {why} "
                                  f"(models.{laser[0]}.{key}); leave it out here")


def _check_laser_entries(config: dict, source: str, origin: Origin) -> None:
    """The LASER models of `models` and the `bitext_data` entry they share (one per run, used); the LASER
    models plan the same GPUs (one resource request for the LASER training rule)."""
    def fail(path: list, message: str):
        raise ConfigError(f"{origin.locate(path) or source}: {_key_path(path)}: {message}")

    laser = [name for name, m in config["models"].items() if m["family"] == "laser"]
    data = config.get("bitext_data", {})
    for name in laser[1:]:
        gpus, first = config["models"][name]["train"]["gpus"], config["models"][laser[0]]["train"]["gpus"]
        if gpus != first:
            fail(["models", name, "train", "gpus"], f"{gpus}, but models.{laser[0]}.train.gpus is {first}: the LASER "
                                                    f"models of a run train on the same number of GPUs")
    for name in list(data)[1:]:
        fail(["bitext_data", name], f"a second bitext_data entry (after {next(iter(data))!r}): one per run")
    for name in laser:
        if config["models"][name]["data"] not in data:
            fail(["models", name, "data"], f"{config['models'][name]['data']!r} is not a bitext_data entry "
                                           f"({', '.join(data) or 'none'}); a LASER model trains on bitexts")
        if "tatoeba" not in config["evaluation"]:
            fail(["evaluation"], f"models.{name} (a LASER model) is scored on Tatoeba: configure evaluation.tatoeba")
    for name in data:
        if not any(config["models"][m]["data"] == name for m in laser):
            fail(["bitext_data", name], "no LASER model (family: laser) trains on it")
    corpora = [c["name"] for c in config["corpora"]]
    for name, entry in data.items():
        for i, ref in enumerate(entry.get("corpora") or []):
            if ref not in corpora:
                fail(["bitext_data", name, "corpora", i], f"{ref!r} is not a corpus of `corpora` ({', '.join(corpora)})")
    for name, m in config["models"].items():
        if m["family"] != "laser" and m["data"] in data and m["data"] not in config.get("nway_data", {}):
            fail(["models", name, "data"], f"{m['data']!r} is bitext data (LASER's); family {m['family']} reads an "
                                           f"nway_data entry")


def _corpus_sources(corpus: dict) -> list[tuple[str, str]]:
    """(key path, value) of everything that names a corpus's files: path, download URLs, members, test sets."""
    out = [("path", corpus["path"])] if corpus.get("path") else []
    download = corpus.get("download") or {}
    for key, value in download.items():
        values = value if isinstance(value, list) else [value]
        for i, v in enumerate(values):
            parts = v.items() if isinstance(v, dict) else [(None, v)]
            for sub, text in parts:
                if isinstance(text, str):
                    index = f"[{i}]" if isinstance(value, list) else ""
                    out.append((f"download.{key}{index}" + (f".{sub}" if sub else ""), text))
    return out


def _check_sacrebleu_download(corpus: dict, run_targets, where: str) -> int:
    """A corpus's ``download.sacrebleu`` (``where``: its key, for messages): the test set exists in
    sacrebleu and has each of the corpus's pairs -- layout bitext: every (language, target) bitext's
    langpair; layout nway: every language paired with English, the pivot of the join. Returns the
    number of archives of the test set."""
    from laser_repro.config.plan import corpus_bitexts, local_languages, sacrebleu_langpair
    from laser_repro.data import sacrebleu_sets

    spec = corpus["download"]["sacrebleu"]
    try:
        archives = len(sacrebleu_sets.test_set_sources(spec["test_set"]))
        if corpus["layout"] == "nway":
            if "langpair" in spec:
                raise ConfigError(f"{where}.langpair: for layout bitext only (an N-way corpus joins every "
                                  f"language's pair with English)")
            codes = local_languages(corpus, run_targets)
            if sacrebleu_sets.PIVOT not in codes:
                raise ConfigError(f"{where}: the N-way set is joined on English: {sacrebleu_sets.PIVOT} must be "
                                  f"one of the corpus's languages or targets ({', '.join(codes)})")
            _, absent = sacrebleu_sets.language_pairs(spec["test_set"], codes)
            if absent:
                raise ConfigError(f"{where}: " + "; ".join(f"{code}: {why}" for code, why in absent.items()))
        else:
            for b in corpus_bitexts(corpus, run_targets):
                try:
                    sacrebleu_sets.check_langpairs(spec["test_set"], [sacrebleu_langpair(corpus, b.src, b.tgt)])
                except sacrebleu_sets.WmtError as err:
                    raise ConfigError(f"{where}: bitext {b.pair}: {err}") from None
    except sacrebleu_sets.WmtError as err:
        raise ConfigError(f"{where}.test_set: {err}") from None
    return archives


def _model_key(config: dict) -> str:
    """The key of the LASER model in the user's config (messages about its sections)."""
    setup = laser_setup(config)
    return f"models.{setup.name}" if setup else "models.<laser model>"


def _data_key(config: dict) -> str:
    """The key of the LASER model's bitext_data entry in the user's config."""
    setup = laser_setup(config)
    return f"bitext_data.{setup.data_name}" if setup else "bitext_data.<data>"


def _check_semantics(config: dict, source: str, origin: Origin | None = None) -> None:
    def known(code: str, where: str) -> None:
        try:
            languages.get(code)
        except languages.UnknownLanguageError as err:
            raise ConfigError(f"{source}: {where}: {err}") from None

    setup = laser_setup(config)
    run_targets = list(setup.data["targets"]) if setup else []
    for i, code in enumerate(run_targets):
        known(code, f"{_data_key(config)}.targets[{i}]")
    names = set()
    aligned = set(setup.corpora) if setup else set()
    for c, corpus in enumerate(config["corpora"]):
        where = f"corpora[{c}] ({corpus['name']})"
        targets = run_targets if corpus["name"] in aligned else []  # LASER's bitexts align its corpora only
        if corpus["name"] in names:
            raise ConfigError(f"{source}: {where}.name: duplicate corpus name {corpus['name']!r}")
        names.add(corpus["name"])
        for i, code in enumerate(corpus["languages"]):
            known(code, f"{where}.languages[{i}]")
        for code in corpus.get("codes", {}):
            if code not in corpus["languages"] and code not in (corpus.get("targets") or targets):
                raise ConfigError(f"{source}: {where}.codes.{code}: not a language of this corpus "
                                  f"(languages or targets); the code would never be used")
        for i, code in enumerate(corpus.get("targets", [])):
            if code not in targets:
                raise ConfigError(f"{source}: {where}.targets[{i}]: {code!r} is not one of the targets of "
                                  f"{_data_key(config)}.targets {targets}")
        if corpus["kind"] == "local":
            column = corpus.get("code_column", "flores")
            for i, code in enumerate(list(corpus["languages"]) + list(corpus.get("targets") or targets)):
                if not corpus_code(corpus, code):
                    raise ConfigError(f"{source}: {where}: language {code!r} has no {column!r} code in languages.tsv "
                                      f"(give it one in {where}.codes)")
        for key, text in _corpus_sources(corpus):
            named = evaluation_set_named(text)
            if named:
                raise ConfigError(f"{source}: {where}.{key}: {text!r} is {named}, "
                                  f"{EVALUATION_ONLY_SETS[named]}: never training text")
        if corpus.get("first_n") and corpus.get("max_pairs"):
            raise ConfigError(f"{source}: {where}: set first_n or max_pairs, not both")
        download = corpus.get("download") or {}
        if "opus" in download and download.get("alternatives"):
            raise ConfigError(f"{source}: {where}.download.alternatives: not with download.opus (an OPUS "
                              f"server other than opus.base_url: set opus.base_url or opus.mirror)")
        if "sacrebleu" in download:
            archives = _check_sacrebleu_download(corpus, targets, f"{source}: {where}.download.sacrebleu")
        for i, alternative in enumerate(download.get("alternatives", [])):
            if "sacrebleu" in download:  # the test set's archive(s)
                parts = archives
                shape = "one URL" if parts == 1 else f"a list of {parts} URLs, one per archive of the test set"
            else:
                parts = 1 if isinstance(download["url"], str) else len(download["url"])
                shape = f"{'one URL' if parts == 1 else f'a list of {parts} part URLs'} as download.url"
            if (1 if isinstance(alternative, str) else len(alternative)) != parts:
                raise ConfigError(f"{source}: {where}.download.alternatives[{i}]: {shape}")
    _check_models(config, source, origin or Origin(), known)
    _check_seeds(config, source, origin or Origin())
    _check_reproduces(config, source, origin or Origin())
    if setup is None:  # no LASER model: the rest checks its sections
        if config.get("flores_eval"):
            raise ConfigError(f"{source}: flores_eval: scores the LASER model (a model of family laser), "
                              f"which this config has not; the other families are scored on their nway_data validation lines")
        return
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
    ablations = setup.entry.get("ablations", {})
    for i, code in enumerate(ablations.get("languages", {}).get("subset", [])):
        known(code, f"{_model_key(config)}.ablations.languages.subset[{i}]")
    if "languages" in ablations:
        subset = ablations["languages"]["subset"]
        absent = [t for t in run_targets if t not in subset]
        if absent:
            raise ConfigError(f"{source}: {_model_key(config)}.ablations.languages.subset: must contain the targets "
                              f"of its data; {absent} missing")
        if not any(s in subset and t in subset for s, t in Plan(config).pairs):
            raise ConfigError(f"{source}: {_model_key(config)}.ablations.languages.subset: no training pair has both "
                              f"languages in {subset}")
    if any(w > 0 for w in ablations.get("nli", {}).get("weights", [])) and "xnli" not in evaluation:
        raise ConfigError(f"{source}: {_model_key(config)}.ablations.nli: the NLI multitask trains on MultiNLI; configure evaluation.xnli "
                          "(its multinli_url / multinli_path and train_max_pairs) or drop the weights > 0")
    if not any(p for p in Plan(config).pairs):
        raise ConfigError(f"{source}: {_data_key(config)}: no (source, target) pair with source != target")
    if setup.data["subword"]["kind"] == "spm" and setup.data.get("bpe") is not None:
        raise ConfigError(f"{source}: {_data_key(config)}.bpe: not used with subword.kind: spm (the SentencePiece "
                          f"model's size is subword.vocab_size); remove it (bpe: null in an overlay)")
    trains = {setup.name: setup.entry["train"], **{name: m["train"] for name, m in setup.others.items()}}
    for name, train in trains.items():
        _check_laser_train(train, f"models.{name}.train", config, source, origin or Origin())
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
                if not corpus_code(corpus, code):
                    raise ConfigError(f"{source}: flores_eval.languages[{i}]: {code!r} has no FLORES code in languages.tsv")
        for i, code in enumerate(flores["curves"]["languages"]):
            if code not in corpus["languages"] or code == "eng":
                raise ConfigError(f"{source}: flores_eval.curves.languages[{i}]: {code!r} must be a non-English "
                                  f"language of corpus {corpus['name']!r} (its held-out lines are binarized)")
        if "eng" not in corpus["languages"] and "eng" not in run_targets:
            raise ConfigError(f"{source}: flores_eval: English, the pivot, must be a language of {corpus['name']!r}")


def _check_laser_train(train: dict, key: str, config: dict, source: str, origin: Origin) -> None:
    """The train section of a LASER model (`key`: its key path): the tokens per update it states, one way to
    checkpoint, early stopping with its validation lines."""
    if train.get("tokens_per_update") is not None:
        planned = planned_tokens_per_update({k: v for k, v in train.items() if k != "tokens_per_update"})
        if train["tokens_per_update"] != planned:
            raise ConfigError(
                f"{source}: {key}.tokens_per_update={train['tokens_per_update']} but max_tokens x max(gpus,1) x "
                f"update_freq = {train['max_tokens']} x {max(train['gpus'], 1)} x {train['update_freq']} = {planned}")
    if train.get("early_stopping") and train.get("save_interval_updates"):
        path = [*key.split("."), "save_interval_updates"]
        raise ConfigError(f"{origin.locate(path) or source}: {_key_path(path)}: "
                          f"early_stopping saves every early_stopping.interval_updates updates itself; set only that")
    if train.get("early_stopping") and not config.get("flores_eval"):
        raise ConfigError(f"{source}: {key}.early_stopping: validates on the held-out FLORES lines; configure flores_eval")


def _check_seeds(config: dict, source: str, origin: Origin) -> None:
    """`seeds`, when it lists two or more: every model's configured seed is one of them (its replicate of
    that seed is the model itself)."""
    seeds = config.get("seeds") or []
    if len(seeds) < 2:
        return
    configured = [(["models", name, "train", "seed"], m["train"]["seed"]) for name, m in config["models"].items()]
    for path, seed in configured:
        if seed not in seeds:
            raise ConfigError(f"{origin.locate(['seeds']) or source}: seeds: {seeds} does not list {_key_path(path)} "
                              f"({seed}): list every model's configured seed (its replicate of that seed is the "
                              f"model itself)")


def _check_reproduces(config: dict, source: str, origin: Origin) -> None:
    """`reproduces`: known claim ids, each once; every name a LASER variant (with flores_eval) or a model of
    `models` validated on flores_eval's held-out lines (the same sentences); no model on both sides."""
    plan = Plan(config)
    if not plan.reproduces:
        return
    from laser_repro.reporting.reproduces import CLAIMS

    def fail(path: list, message: str):
        raise ConfigError(f"{origin.locate(path) or source}: {_key_path(path)}: {message}")

    laser = plan.variant_aliases
    compared = plan.compared_models
    seen: set[str] = set()
    for i, claim in enumerate(plan.reproduces):
        if claim["claim"] not in CLAIMS:
            fail(["reproduces", i, "claim"], f"{claim['claim']!r} is not a known claim ({', '.join(CLAIMS)})")
        if claim["claim"] in seen:
            fail(["reproduces", i, "claim"], f"{claim['claim']!r} is listed twice")
        seen.add(claim["claim"])
        trained = {}
        for key in ("better", "worse"):
            for name in claim[key]:
                path = ["reproduces", i, key]
                if name in laser:
                    if not config.get("flores_eval"):
                        fail(path, f"LASER model {name!r} is scored on FLORES only with flores_eval")
                elif name in plan.family_entries:
                    if name not in compared:
                        fail(path, f"model {name!r} is not validated on flores_eval's held-out lines (its nway_data "
                                   f"valid.heldout_lines of the flores_eval corpus): not the same sentences")
                else:
                    fail(path, f"{name!r} is neither a LASER model of this run ({', '.join(laser) or 'none'}) nor a "
                               f"model of `models` ({', '.join(plan.family_entries) or 'none'})")
                model = (claim["runs"][key], laser.get(name, name))
                if trained.get(model, key) != key:
                    fail(path, f"{name!r} is the same model on both sides")
                trained[model] = key
            if claim["runs"][key] == config["run_name"]:
                fail(["reproduces", i, f"{key}_run"], f"{claim['runs'][key]!r} is this run: leave {key}_run out "
                                                      f"for this run's models")


def _check_models(config: dict, source: str, origin: Origin, known) -> None:
    """nway_data and the models of `models` (their schema is checked per family already). Errors name
    the file and line of the key."""
    def fail(path: list, message: str):
        raise ConfigError(f"{origin.locate(path) or source}: {_key_path(path)}: {message}")

    corpora = {c["name"]: c for c in config["corpora"]}
    for name, data in config.get("nway_data", {}).items():
        parts = [data["corpus"]] if isinstance(data["corpus"], str) else list(data["corpus"])
        refs = [(["corpus"], ref) for ref in parts] + ([(["valid", "corpus"], data["valid"]["corpus"])]
                                                        if "corpus" in data["valid"] else [])
        for key, ref in refs:
            corpus = corpora.get(ref)
            if corpus is None or corpus["kind"] != "local" or corpus["layout"] != "nway":
                fail(["nway_data", name, *key], f"{ref!r} is not an N-way local corpus of `corpora` ({sorted(corpora)})")
            absent = [code for code in data["languages"] if code not in corpus["languages"]]
            if absent:
                fail(["nway_data", name, "languages"], f"{absent} not among the languages of corpus {ref!r}")
        if "heldout_lines" in data["valid"]:
            start, stop = data["valid"]["heldout_lines"]
            if not 0 <= start < stop:
                fail(["nway_data", name, "valid", "heldout_lines"], f"need 0 <= start < stop, got {[start, stop]}")
        for i, code in enumerate(data["languages"]):
            known(code, f"nway_data.{name}.languages[{i}]")
        if (data.get("subword") or {}).get("kind") == "spm" and data.get("bpe_merges") is not None:
            fail(["nway_data", name, "bpe_merges"], "not used with subword.kind: spm (the SentencePiece model's size is "
                                                    "subword.vocab_size); remove it (bpe_merges: null in an overlay)")
    un = config.get("evaluation", {}).get("un")
    if un is not None:
        corpus = corpora.get(un["corpus"])
        if corpus is None or corpus["kind"] != "local" or corpus["layout"] != "nway":
            fail(["evaluation", "un", "corpus"], f"{un['corpus']!r} is not an N-way local corpus of `corpora` ({sorted(corpora)})")
        absent = [code for code in ["eng", *un["languages"]] if code not in corpus["languages"]]
        if absent:
            fail(["evaluation", "un", "languages"], f"{absent} not among the languages of corpus {un['corpus']!r}")
    plan = Plan(config)
    laser_models = set(plan.variant_aliases)
    for name, model in plan.family_entries.items():
        if name in laser_models:
            fail(["models", name], f"the name of a LASER model of this run (results/<run>/models/{name}/)")
        data = config.get("nway_data", {}).get(model["data"])
        if data is None:
            fail(["models", name, "data"], f"{model['data']!r} is not an nway_data entry "
                                            f"({sorted(config.get('nway_data', {}))})")
        family = registry.declaration(model["family"])
        if family.text == "tok" and (data.get("subword") or {}).get("kind") == "spm":
            # its words would be LASER2's untokenised lines in training, Moses' in evaluation (the family's prepare)
            fail(["models", name, "data"], f"nway_data.{model['data']} has subword.kind spm (LASER2's normalisation, "
                                            f"no tokenizer), but family {model['family']} reads Moses-tokenised words: "
                                            f"give it an nway_data entry of kind bpe")
        for key, message in family.config_errors(model, data):
            fail(["models", name, *key], message)
        if model.get("paper_row") is not None:  # (a LaBSE model's row of paper 003's Table 2: the reporting layer's)
            from laser_repro.reporting.labse import paper_row_ids

            if model["paper_row"] not in paper_row_ids():
                fail(["models", name, "paper_row"], f"{model['paper_row']!r} is not a row of paper 003's "
                                                     f"Table 2 ({', '.join(paper_row_ids())})")


def load(path: str | Path | Iterable[str | Path], overrides: dict | None = None) -> dict:
    """Read a YAML config, or several merged as `snakemake --configfile A B` does (later files win, deep
    merge: an overlay such as config/overlays/paper_today_gpus.yaml names only the keys it changes), apply
    top-level overrides (as `snakemake --config k=v` does), validate. Errors name the file, the line and
    the key."""
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    config: dict = {}
    for p in paths:
        config = _deep_merge(config, read_yaml(p))
    config.update(overrides or {})
    return validate(config, origin=Origin(tuple(paths), dict(overrides or {})))


# ---- Snakemake: the config of a run ------------------------------------------------------------

def snakemake_default_configfile(workflow, path: str) -> None:
    """The Snakefile's default config file, loaded only when no --configfile is given.

    Snakemake's `configfile:` would deep-merge a --configfile into the default file, so a run of
    config/paper.yaml would inherit every key of config/small.yaml that paper.yaml lacks; here a
    --configfile replaces the default. A YAML syntax error names the file, line and column (Snakemake's
    own message names neither)."""
    if workflow.overwrite_configfiles:
        return
    if os.path.exists(path):
        read_yaml(path)
    workflow.configfile(path)


def snakemake_origin(workflow) -> Origin:
    """The config files of a Snakemake run (the default one or the --configfile(s)) and its --config."""
    settings = getattr(workflow, "config_settings", None)
    return Origin(tuple(getattr(workflow, "configfiles", ()) or ()), dict(getattr(settings, "config", None) or {}))


def validate_snakemake(workflow, config: dict) -> dict:
    """`validate` for the Snakefile: errors name the config file and line, or the --config override."""
    return validate(config, origin=snakemake_origin(workflow))


def main(argv: list[str] | None = None) -> int:
    """``python -m laser_repro.config FILE... [--set KEY=VALUE...]``: check config files (YAML syntax,
    schema, semantics) without Snakemake; Snakemake's own message for a --configfile that is not valid
    YAML names neither the file nor the line."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m laser_repro.config", description=main.__doc__)
    p.add_argument("files", nargs="+")
    p.add_argument("--merged", action="store_true",
                   help="check the files merged in order, as one config (a config and its overlays)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="top-level override, as snakemake --config (value parsed as YAML)")
    a = p.parse_args(argv)
    overrides = {}
    for item in a.set:
        key, sep, value = item.partition("=")
        if not sep:
            p.error(f"--set {item!r}: expected KEY=VALUE")
        overrides[key] = yaml.safe_load(value)
    status = 0
    for f in ([a.files] if a.merged else a.files):
        try:
            load(f, overrides)
        except ConfigError as err:
            print(err, file=sys.stderr)
            status = 1
        else:
            print(f"{' + '.join(map(str, f)) if a.merged else f}: ok")
    return status
