"""Issue 40 item 6: `laser-repro lineage crate FILE|DIR -o OUTDIR` writes the run as a Workflow Run RO-Crate, which
roc-validator accepts against the Provenance Run Crate profile (its REQUIRED checks; offline), on a chain of records
(tests/test_lineage_graph.py's make_chain) and on the toy run.

roc-validator bundles its profiles (SHACL shapes) but resolves the crate's JSON-LD context
(https://w3id.org/ro/crate/1.1/context) over HTTP, through its requests-cache cache. These tests run offline: the
cache is filled beforehand with RO-Crate 1.1's context, made from the RO-Crate 1.3 context that the rocrate package
bundles (the same terms but the four bioschemas ones whose IRIs 1.3 changed, mapped back to 1.1's; without `sha256`,
which 1.1 lacks: the crate's own context adds it)."""
from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from laser_repro import cli, provenance
from test_lineage_graph import RAW_URL, make_chain

CONTEXT_11 = "https://w3id.org/ro/crate/1.1/context"
#: the IRIs RO-Crate 1.1's context gives the terms whose mapping 1.3 changed (1.3: https://bioschemas.org/terms/...)
BIOSCHEMAS_11 = {"ComputationalWorkflow": "https://bioschemas.org/ComputationalWorkflow",
                 "FormalParameter": "https://bioschemas.org/FormalParameter",
                 "input": "https://bioschemas.org/ComputationalWorkflow#input",
                 "output": "https://bioschemas.org/ComputationalWorkflow#output"}


def run_cli(*argv) -> int:
    try:
        return cli.main(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setattr(provenance, "CODE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def http_cache(tmp_path_factory) -> Path:
    """roc-validator's HTTP cache holding RO-Crate 1.1's JSON-LD context (see the module's docstring)."""
    import requests
    import rocrate
    import urllib3
    from requests_cache import CachedSession

    bundled = json.loads((Path(rocrate.__file__).parent / "data" / "ro-crate.jsonld").read_text(encoding="utf-8"))
    assert bundled["@id"] == "https://w3id.org/ro/crate/1.3/context"
    context = {**bundled["@context"], **BIOSCHEMAS_11}
    del context["sha256"]
    body = json.dumps({"@context": context}).encode()
    response = requests.Response()
    response.status_code, response._content, response.url, response.encoding = 200, body, CONTEXT_11, "utf-8"
    response.headers["Content-Type"] = "application/ld+json"
    response.request = requests.Request("GET", CONTEXT_11).prepare()
    response.raw = urllib3.HTTPResponse(body=io.BytesIO(body), headers=dict(response.headers), status=200,
                                        preload_content=False, request_url=CONTEXT_11)
    cache = tmp_path_factory.mktemp("roc_validator") / "http_cache"
    session = CachedSession(str(cache), backend="sqlite")
    session.cache.save_response(response)
    session.close()
    return cache


def validate(crate: Path, cache: Path, severity: str = "REQUIRED") -> list[str]:
    """roc-validator's issues with `crate` against provenance-run-crate (and the profiles it extends), offline."""
    from rocrate_validator import services
    from rocrate_validator.models import ValidationSettings

    settings = ValidationSettings(rocrate_uri=str(crate), profile_identifier="provenance-run-crate",
                                  requirement_severity=severity, offline=True, cache_path=cache)
    result = services.validate(settings)
    issues = [f"{i.severity.name} {i.check.requirement.profile.identifier}: {i.check.name}: {i.message}"
              for i in result.get_issues()]
    assert result.passed() == (not issues), issues
    return issues


def graph_of(crate: Path) -> dict[str, dict]:
    data = json.loads((crate / "ro-crate-metadata.json").read_text(encoding="utf-8"))
    assert data["@context"] == [CONTEXT_11, {"sha256": "http://schema.org/sha256"}]
    return {e["@id"]: e for e in data["@graph"]}


def ids(value) -> list[str]:
    return [v["@id"] for v in (value if isinstance(value, list) else [value])] if value else []


def types(entity: dict) -> set[str]:
    t = entity["@type"]
    return set(t if isinstance(t, list) else [t])


def test_crate_of_a_chain_is_a_valid_provenance_run_crate(isolated, monkeypatch, http_cache):
    root = make_chain(isolated / "run")
    monkeypatch.chdir(root)
    assert run_cli("lineage", "crate", "table.md", "-o", str(isolated / "crate")) == 0
    crate = isolated / "crate"
    g = graph_of(crate)

    rootde = g["./"]
    assert set(ids(rootde["conformsTo"])) >= {"https://w3id.org/ro/wfrun/provenance/0.5",
                                              "https://w3id.org/ro/wfrun/workflow/0.5",
                                              "https://w3id.org/ro/wfrun/process/0.5"}
    wf = g[rootde["mainEntity"]["@id"]]
    assert wf["@id"] == "workflow/Snakefile" and (crate / "workflow" / "Snakefile").is_file()
    assert {"File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"} <= types(wf)
    assert g[wf["programmingLanguage"]["@id"]]["name"] == "Snakemake"

    actions = {e["name"]: e for e in g.values() if types(e) == {"CreateAction"}}
    run = actions.pop("Run of workflow/Snakefile that made table.md")
    assert run["instrument"]["@id"] == wf["@id"]
    assert sorted(actions) == ["learn", "make_a[lang=fra]", "make_b", "table"]  # one per job
    assert set(ids(wf["hasPart"])) == {a["instrument"]["@id"] for a in actions.values()}  # the rules, as tools
    steps = [g[s] for s in ids(wf["step"])]
    assert {g[s["workExample"]["@id"]]["name"] for s in steps} == {"learn", "make_a", "make_b", "table"}
    controls = [e for e in g.values() if types(e) == {"ControlAction"}]
    assert sorted(c["object"]["@id"] for c in controls) == sorted(a["@id"] for a in actions.values())
    organize = next(e for e in g.values() if types(e) == {"OrganizeAction"})
    assert organize["result"]["@id"] == "#run" and len(ids(organize["object"])) == 4

    make_a = actions["make_a[lang=fra]"]
    assert make_a["startTime"] == "2024-05-01T10:00:00.000+00:00" and make_a["endTime"] > make_a["startTime"]
    raw, param = (g[i] for i in ids(make_a["object"]))
    assert raw["@id"] == RAW_URL and raw["name"] == "raw.txt" and raw["contentSize"] == "14"
    assert len(raw["sha256"]) == 64 and RAW_URL in ids(rootde["hasPart"])
    assert (param["@type"], param["name"], param["value"]) == ("PropertyValue", "max_lines", 10)
    assert {g[p]["@type"] for p in ids(param["exampleOfWork"])} == {"FormalParameter"}
    assert g[make_a["result"]["@id"]]["name"] == "a.txt" and make_a["result"]["@id"] == "#a.txt"  # not copied
    assert not (crate / "a.txt").exists() and not (crate / "model.bin").exists()

    # the result is in the crate, with its record; the run's object: the raw input and the config value
    table = actions["table"]
    assert sorted(ids(table["result"])) == sorted(ids(run["result"])) == ["table.csv", "table.md"]
    assert (crate / "table.md").read_bytes() == (root / "table.md").read_bytes()
    assert (crate / "table.md.prov.json").is_file() and (crate / "README.md").is_file()
    assert set(ids(run["object"])) == {RAW_URL, param["@id"]}

    assert validate(crate, http_cache) == []


def test_a_crate_without_the_runs_actions_is_rejected(isolated, monkeypatch, http_cache):
    """The validation is not vacuous: the same crate without its CreateActions (the runs of the workflow and of
    the jobs) fails the Workflow Run Crate and Provenance Run Crate checks."""
    monkeypatch.chdir(make_chain(isolated / "run"))
    crate = isolated / "crate"
    assert run_cli("lineage", "crate", "table.md", "-o", str(crate)) == 0
    path = crate / "ro-crate-metadata.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    actions = {e["@id"] for e in data["@graph"] if e["@type"] == "CreateAction"}
    data["@graph"] = [e for e in data["@graph"] if e["@id"] not in actions]
    for e in data["@graph"]:
        for k in ("mentions", "object", "result"):
            if k in e and set(ids(e[k])) & actions:
                e[k] = [v for v in (e[k] if isinstance(e[k], list) else [e[k]]) if v["@id"] not in actions]
    path.write_text(json.dumps(data), encoding="utf-8")
    issues = "\n".join(validate(crate, http_cache))
    assert "workflow-run-crate" in issues
    assert "MUST reference the root data entity's mainEntity as its instrument" in issues
    assert "A tool must be referred to from an action via instrument" in issues


def test_crate_of_a_directory_with_copy_data_can_be_checked_inside(isolated, monkeypatch, http_cache):
    """A directory's crate holds every job recorded under it; --copy-data copies every file with its record, so
    that `lineage check` re-hashes the lineage inside the crate."""
    root = make_chain(isolated / "run")
    monkeypatch.chdir(root)
    crate = isolated / "crate"
    assert run_cli("lineage", "crate", ".", "--copy-data", "-o", str(crate)) == 0
    g = graph_of(crate)
    assert sum(types(e) == {"CreateAction"} for e in g.values()) == 5  # four jobs and the run
    assert set(ids(g["#run"]["result"])) == {"table.md", "table.csv"}  # the outputs no job read
    for name in ("raw.txt", "model.bin", "a.txt", "b.txt", "table.md", "table.csv"):
        assert (crate / name).read_bytes() == (root / name).read_bytes(), name
    assert g["raw.txt"]["url"] == RAW_URL
    monkeypatch.chdir(crate)
    assert run_cli("lineage", "check", "table.md") == 0
    assert validate(crate, http_cache) == []
    assert run_cli("lineage", "crate", ".", "-o", str(crate)) != 0  # never into a crate that is there


def test_crate_of_the_toy_run(toy_local_run, tmp_path, http_cache):
    """The toy run's table1 as a crate (the CLI in a subprocess, as a user runs it): every job of its lineage
    one CreateAction, the raw inputs by their files' paths or URLs, and roc-validator accepts it."""
    from conftest import VENV_BIN

    assert toy_local_run.proc.returncode == 0
    run = toy_local_run.workdir
    target = "results/tables/toy/table1.md"
    crate = tmp_path / "crate"
    done = subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "crate", target, "-o", str(crate)], cwd=run,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    view = subprocess.run([f"{VENV_BIN}/laser-repro", "lineage", "view", "--json", target], cwd=run,
                          capture_output=True, text=True)
    nodes = json.loads(view.stdout)["nodes"]
    g = graph_of(crate)
    jobs = [e for e in g.values() if types(e) == {"CreateAction"} and e["@id"] != "#run"]
    assert len(jobs) == sum(n["kind"] == "job" for n in nodes) > 10
    assert all(e.get("startTime") and e.get("endTime") and e.get("result") for e in jobs)
    tools = {e["instrument"]["@id"] for e in jobs}
    assert all(t.startswith("workflow/rules/") and (crate / t.split("#")[0]).is_file() for t in tools), tools
    files = [n for n in nodes if n["kind"] == "file"]
    shas = {e.get("sha256") for e in g.values() if types(e) & {"File", "Dataset"}}
    assert {n["sha256"] for n in files if n["sha256"]} <= shas
    assert (crate / target).read_bytes() == (run / target).read_bytes()
    params = {e["name"]: e["value"] for e in g.values() if types(e) == {"PropertyValue"}}
    # the config values by their keys in the config (models.<name>..., bitext_data.<data>...)
    assert params["models.base.train.seed"] == 1 and params["bitext_data.toy.bpe.merges"] == 100, params
    raw = [g[i] for i in ids(g["#run"]["object"]) if types(g[i]) == {"File"}]
    assert any(r["@id"].startswith("https://") and r["url"] == r["@id"] and r["sha256"] for r in raw)
    assert validate(crate, http_cache) == []
