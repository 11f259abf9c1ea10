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
