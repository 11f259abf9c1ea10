"""The contract of a family's declaration (laser_repro.models.declaration), for every family of the registry:
its package declares it without importing the family's model code."""
from __future__ import annotations

import subprocess
import sys

import pytest

from laser_repro.models import declaration, registry


@pytest.mark.parametrize("name", sorted(registry.FAMILIES))
def test_every_family_declares_its_facts(name):
    decl = registry.declaration(name)
    assert isinstance(decl, declaration.FamilyDeclaration)
    assert decl.name == name and decl.text in declaration.MODEL_TEXTS
    # the declared functions answer for a model entry as the schema gives it (the keys a family may read)
    model = {"family": name, "data": "d", "pair": ["eng", "fra"], "pivot": "eng", "encoder": {"hidden": 16, "heads": 2},
             "paths": {"sources": ["eng", "fra"], "inputs": {1: 1.0}, "targets": "all"}}
    langs = decl.encoder_languages(model, {"languages": ["eng", "fra"]})
    assert set(langs) <= {"eng", "fra"} and langs
    assert set(decl.tatoeba_languages(model, {"languages": ["eng", "fra"]}, ["fra", "deu"])) <= {"fra", "deu"}
    # config checks beyond the schema: none for a consistent entry; a family whose models read languages of
    # their N-way data names the key whose languages the data lacks (LASER's models take no nway_data)
    assert decl.config_errors(model, {"languages": ["eng", "fra"]}) == []
    errors = decl.config_errors(model, {"languages": ["deu", "spa"]})
    assert all(isinstance(key, list) and "not among the languages of nway_data.d" in message for key, message in errors)
    assert bool(errors) == (name != "laser")


@pytest.mark.parametrize("name", sorted(registry.FAMILIES))
def test_a_declaration_imports_no_model_code(name):
    """The workflow reads every declaration when Snakemake parses the Snakefile: torch and fairseq stay out."""
    code = (f"import sys; from laser_repro.models import registry; registry.declaration({name!r}); "
            "print(sorted(m for m in ('torch', 'fairseq', 'sentencepiece', 'tokenizers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_unknown_text_is_refused():
    with pytest.raises(ValueError, match="text 'words', not one of bpe, tok"):
        declaration.FamilyDeclaration(name="toy", text="words")
    with pytest.raises(ValueError, match="unknown model family 'toy'"):
        registry.declaration("toy")


@pytest.fixture(scope="module")
def compare_run():
    """config/compare.yaml: a model of every family, seed replicates too."""
    from conftest import REPO
    from laser_repro import config
    from laser_repro.workflow.run import WorkflowRun

    return WorkflowRun(config.Plan(config.load(REPO / "config/compare.yaml", {"data_root": "/data"})))


@pytest.mark.parametrize("name", sorted(registry.FAMILIES))
def test_every_family_answers_the_workflow(name, compare_run):
    """What the workflow asks of a family (train settings, descriptions, held-out scores, comparison column,
    task skips; for the families of `models` their data, scores and targets), answered for every model of it."""
    import json

    run, decl = compare_run, registry.declaration(name)
    models = [n for n in [*run.variants, *run.family_models] if run.plan.family(n) == name]
    assert models and run.compared_tasks(), f"config/compare.yaml has no model of family {name}"
    for model in models:
        settings = decl.train_settings(run, model)
        assert isinstance(settings, dict) and json.loads(json.dumps(settings)) == settings
        assert settings == run.model_train_settings(model)
        assert decl.heldout_scores_file(run, model).startswith(f"{run.run}/")
        assert decl.description(run, model)
        key, description = decl.compare_column(run, model)
        assert key and description
        for task in run.compared_tasks():
            assert isinstance(decl.task_skip_reason(run, task, model), str)
        pre = decl.pretraining(run, model)
        assert pre is None or set(pre) == {"id", "benchmark"}
    if name in run.families():  # the stages of the models of `models` (LASER's: its own rules)
        names = list(run.models_of(name))
        for files in (decl.data_files(run, names), decl.evaluation_files(run, names), decl.targets(run, names)):
            assert files and len(files) == len(set(files)) and all(f.startswith("results/") for f in files)
        assert {run.curves_figure(n) for n in run.tabled(names)} <= set(decl.targets(run, names))


def test_a_family_must_declare_its_training_settings():
    with pytest.raises(NotImplementedError, match="family toy declares no training settings"):
        declaration.FamilyDeclaration(name="toy", text="bpe").train_settings(None, "m")
    with pytest.raises(ValueError, match="heldout 'bleu', not one of flores-xsim, similarity"):
        declaration.FamilyDeclaration(name="toy", text="bpe", heldout="bleu")


@pytest.mark.parametrize("name", sorted(registry.FAMILIES))
def test_every_family_is_complete(name):
    """What a family is besides its package and registry line (docs/families.md's recipe): its schema entry, its
    rules file with its training and target rules, and its page in the docs."""
    import re

    import yaml

    from conftest import REPO

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text(encoding="utf-8"))
    assert schema["$defs"][f"{name}_model"]["properties"]["family"] == {"const": name}
    assert {"$ref": f"#/$defs/{name}_model"} in schema["$defs"]["model"]["oneOf"]
    rules = (REPO / "workflow/rules/models" / f"{name}.smk").read_text(encoding="utf-8")
    assert re.search(rf"^rule {name}_train:", rules, re.M) and re.search(rf"^rule {name}:", rules, re.M)
    page = (REPO / "docs" / f"{name}.md").read_text(encoding="utf-8")
    assert f"models/{name}/" in page  # the page names its package
    assert f"({name}.md)" in (REPO / "docs" / "families.md").read_text(encoding="utf-8")
