"""A new family is its package, one registry line, one schema entry and its rules (docs/families.md's recipe):
the toy family of tests/toy_family ("hello": hashed word vectors) added so to a copy of the project, and run
through the real Snakemake from its N-way text to its encoder, its similarity error and its learning curves.
Nothing else of the project is changed: the workflow asks the family's declaration the rest."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import make_toy_data  # tests/toy (conftest puts it on the path)
from conftest import REPO, SNAKEMAKE

TOY_FAMILY = REPO / "tests" / "toy_family"
REGISTRY_LINE = '    "hello": "laser_repro.models.hello.family:HelloFamily",\n'


def add_hello_family(project: Path) -> list[str]:
    """Copy the project's code (src, workflow, profiles) to ``project`` and add the toy family the recipe's way;
    returns the files added or changed."""
    listed = subprocess.run(["git", "ls-files", "-z", "src", "workflow", "profiles"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, project / name)
    # 1. its package
    shutil.copytree(TOY_FAMILY / "hello", project / "src/laser_repro/models/hello")
    # 2. one registry line
    registry = project / "src/laser_repro/models/registry.py"
    text = registry.read_text(encoding="utf-8")
    anchor = '    "bisent2vec": "laser_repro.models.bisent2vec.family:BiSent2VecFamily",\n'
    assert anchor in text
    registry.write_text(text.replace(anchor, anchor + REGISTRY_LINE), encoding="utf-8")
    # 3. one schema entry: its $def, and its place among the families a model may be of
    schema = project / "workflow/schemas/config.schema.yaml"
    text = schema.read_text(encoding="utf-8")
    ref = '      - {$ref: "#/$defs/bisent2vec_model"}\n'
    assert ref in text and text.rstrip("\n").splitlines()[-1].startswith("  ")  # $defs is the last section
    entry = "".join(f"  {line}\n" for line in (TOY_FAMILY / "schema.yaml").read_text(encoding="utf-8").splitlines())
    schema.write_text(text.replace(ref, ref + ref.replace("bisent2vec", "hello")) + entry, encoding="utf-8")
    # 4. its rules
    shutil.copy2(TOY_FAMILY / "hello.smk", project / "workflow/rules/models/hello.smk")
    return ["src/laser_repro/models/hello/", "src/laser_repro/models/registry.py",
            "workflow/schemas/config.schema.yaml", "workflow/rules/models/hello.smk"]


@pytest.fixture(scope="module")
def hello_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hello")
    project, work = root / "project", root / "work"
    work.mkdir()
    add_hello_family(project)
    data_root = make_toy_data.make(root / "data")
    # the copy's package first: Snakemake and every job's laser-repro import it
    env = dict(os.environ, PYTHONPATH=str(project / "src"), PYTHONUNBUFFERED="1")
    args = [*SNAKEMAKE, "-s", str(project / "workflow" / "Snakefile"), "--profile", str(project / "profiles" / "local"),
            "--configfile", str(TOY_FAMILY / "config.yaml"), "--config", f"data_root={data_root}",
            "--directory", str(work), "--cores", "2"]
    proc = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False)
    return work, proc, args, env, project


def test_the_toy_family_runs_through_the_real_workflow(hello_run):
    work, proc, *_ = hello_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    run = work / "results" / "toy_hello"
    model = run / "models" / "hello_toy"
    for name in ("encoder.pt", "encoder_init.pt", "model_record.json", "curves.json"):
        assert (model / name).stat().st_size > 0, name
    assert json.loads((model / "model_record.json").read_text())["family"] == "hello"
    # the shared evaluation with the model and its update 0: the trained model finds translations the
    # random one does not (synthetic data: one word form per concept and language)
    scores = json.loads((run / "eval" / "models" / "hello_toy" / "similarity.json").read_text())
    assert scores["similarity"]["languages"] == ["eng", "fra", "spa"]
    assert scores["similarity"]["mean"] < 0.5 * scores["init"]["mean"], (scores["similarity"]["mean"], scores["init"]["mean"])
    # its learning curves beside the TF-IDF baseline, the declared loss on the figure's axis
    assert (work / "results" / "figures" / "toy_hello" / "curves_hello_toy.png").stat().st_size > 10_000
    curves = json.loads((model / "curves.json").read_text())
    assert [row["update"] for row in curves] == [20, 40, 60]


def test_the_toy_family_has_its_target_and_the_stage_targets(hello_run):
    work, proc, args, env, project = hello_run
    assert proc.returncode == 0
    for target in ("hello", "data", "models", "evaluate", "tables"):
        dry = subprocess.run([*args, target, "-n"], cwd=project, env=env,
                             capture_output=True, text=True, timeout=300, check=False)
        assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, (target, dry.stdout[-2000:])
