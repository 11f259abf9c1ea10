"""Run configuration: schema validation, defaults, and the training plan derived from it.

* :mod:`laser_repro.config.schema` -- validation: the JSON schema (workflow/schemas/config.schema.yaml,
  the single definition of the config keys) and its defaults, the checks a schema cannot express
  (known language codes, batch arithmetic, per-kind corpus keys), errors naming the file, line and
  key (:class:`ConfigError`, :class:`Origin`), :func:`load` / :func:`validate`, the Snakefile's
  helpers (:func:`snakemake_default_configfile`, :func:`validate_snakemake`) and
  ``python -m laser_repro.config FILE`` (:func:`main`);
* :mod:`laser_repro.config.plan` -- what a validated config expands to, which the workflow iterates
  over: :class:`Plan` (bitexts, pairs, FLORES / Tatoeba languages, ablation variants),
  :class:`Variant`, :class:`AblationRow`, :class:`Bitext`.

Both are re-exported here: callers use ``laser_repro.config.NAME``; so are the training settings' planned
tokens per update (:func:`laser_repro.models.training_guard.planned_tokens_per_update`) and their identity without
the default precision (:func:`laser_repro.models.training_guard.without_default_precision`).
"""
from __future__ import annotations

from laser_repro.config.plan import AblationRow, Bitext, Plan, Variant
from laser_repro.config.schema import (
    BUCC_LANGUAGES,
    CORPUS_KIND_KEYS,
    MAX_ERRORS,
    SCHEMA_PATH,
    ConfigError,
    Origin,
    load,
    load_schema,
    main,
    read_yaml,
    snakemake_default_configfile,
    snakemake_origin,
    validate,
    validate_snakemake,
)
from laser_repro.models.training_guard import planned_tokens_per_update, without_default_precision

__all__ = [
    "AblationRow", "Bitext", "Plan", "Variant", "planned_tokens_per_update", "without_default_precision",
    "BUCC_LANGUAGES", "CORPUS_KIND_KEYS", "MAX_ERRORS", "SCHEMA_PATH", "ConfigError", "Origin", "load",
    "load_schema", "main", "read_yaml", "snakemake_default_configfile", "snakemake_origin", "validate",
    "validate_snakemake",
]
