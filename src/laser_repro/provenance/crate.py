"""``laser-repro lineage crate FILE|DIR -o OUTDIR``: a result's lineage as a Workflow Run RO-Crate (Provenance Run
Crate profile 0.5, RO-Crate 1.1), written with the ``rocrate`` package; what a user attaches to a paper or
uploads to WorkflowHub / Zenodo.

The crate holds (https://w3id.org/ro/wfrun/provenance/0.5):

* the workflow: ``workflow/`` of the commit the jobs recorded (``git archive``; the working tree's copy when
  the commit is not in the repository), ``workflow/Snakefile`` the main entity (File, SoftwareSourceCode,
  ComputationalWorkflow, HowTo; programmingLanguage Snakemake), each rule a tool (SoftwareApplication
  ``workflow/rules/X.smk#RULE``, part of the workflow) with a step (HowToStep) the workflow lists;
* the run: one CreateAction whose instrument is the workflow (object: the raw inputs and every config value;
  result: the target), one CreateAction per job (instrument: its rule; object: its input files and config
  values; result: its outputs; startTime / endTime; the host, code and runtime in its description), one
  ControlAction per job (the step that ran it) and the OrganizeAction of Snakemake over them;
* the files: ``sha256`` (an extra context term: RO-Crate 1.1's context has none) and ``contentSize``; a raw
  input by its public URL (a web data entity); the config values as PropertyValues, each an example of a
  FormalParameter of the workflow (``workflow/Snakefile#config/KEY``) and of the rules that read it.

What is copied: the workflow and the result (the target's job's outputs; for a DIR the outputs of the jobs no
other job read), with their provenance sidecars. Every other file (corpora, embeddings, checkpoints: gigabytes)
is described by its path in the run, sha256 and size under a local identifier (``#results/...``), which
RO-Crate lets a crate leave out of its payload; ``--copy-data`` copies them too (with their sidecars, so that
``laser-repro lineage`` works inside the crate).

``rocrate`` is imported when the verb runs, not with this module (the provenance package is imported by every
job).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

from laser_repro.provenance._common import _own_key, read_sidecar, sidecar_path
from laser_repro.provenance.graph import Graph, _flatten, build

RO_CRATE_VERSION = "1.1"
WFRUN_VERSION = "0.5"
PROFILES = {  # the root data entity's conformsTo (Provenance Run Crate and the profiles it extends)
    f"https://w3id.org/ro/wfrun/process/{WFRUN_VERSION}": "Process Run Crate",
    f"https://w3id.org/ro/wfrun/workflow/{WFRUN_VERSION}": "Workflow Run Crate",
    f"https://w3id.org/ro/wfrun/provenance/{WFRUN_VERSION}": "Provenance Run Crate",
    "https://w3id.org/workflowhub/workflow-ro-crate/1.0": "Workflow RO-Crate",
}
#: terms used beyond RO-Crate 1.1's JSON-LD context (https://w3id.org/ro/crate/1.1/context)
EXTRA_TERMS = {"sha256": "http://schema.org/sha256"}
MAIN_WORKFLOW = "workflow/Snakefile"
DEFAULT_LICENSE = "MIT"  # the project's (pyproject.toml); --license for the crate's own
COMPLETED = "http://schema.org/CompletedActionStatus"  # a string, as the profiles' shapes expect (sh:in)
_RULE = re.compile(r"^\s*(?:(?:rule|checkpoint)\s+([A-Za-z_]\w*)\s*:|use\s+rule\s+\w+\s+as\s+([A-Za-z_]\w*))", re.M)
_SAFE = re.compile(r"^[A-Za-z0-9._+-]{1,40}$")
#: media types by name ending (mimetypes guesses wrong for some of the pipeline's: .pt is torch's, not a page table)
MEDIA_TYPES = {".md": "text/markdown", ".csv": "text/csv", ".tsv": "text/tab-separated-values",
               ".json": "application/json", ".jsonl": "application/jsonl", ".txt": "text/plain",
               ".yaml": "application/yaml", ".yml": "application/yaml", ".html": "text/html", ".svg": "image/svg+xml",
               ".png": "image/png", ".pdf": "application/pdf", ".zip": "application/zip", ".gz": "application/gzip",
               ".tgz": "application/gzip", ".tar": "application/x-tar", ".smk": "text/plain", "Snakefile": "text/plain"}
BIOSCHEMAS_WORKFLOW = "https://bioschemas.org/profiles/ComputationalWorkflow/1.0-RELEASE"


# --------------------------------------------------------------------------- the run: jobs and files

def collect(target: str) -> tuple[Graph, list[str]]:
    """The graph of a file's lineage, or of every record under a directory (each record read once per walk;
    one job per distinct record), and the result files: the target's job's outputs, or for a directory the
    outputs of the jobs under it that no other job read."""
    target = os.path.abspath(target)
    if not os.path.isdir(target):
        graph = build(target)
        job = graph.job_of(target)
        return graph, (sorted(job.outputs) if job else [target])
    owned = []  # files under DIR with a record of their own
    for dirpath, dirnames, filenames in os.walk(target):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".prov.json"):
                path = os.path.join(dirpath, name[: -len(".prov.json")])
                rec = read_sidecar(path)
                if rec and _own_key(path, rec):
                    owned.append(path)
    if not owned:
        raise SystemExit(f"lineage crate: no provenance records under {target}")
    merged = Graph(target)
    for path in owned:  # each file's graph adds only what an earlier one did not hold
        if path in merged.files and merged.files[path].job in merged.jobs:
            continue
        g = build(path)
        for p, f in g.files.items():
            merged.files.setdefault(p, f)
        for jid, j in g.jobs.items():
            merged.jobs.setdefault(jid, j)
    read = {p for j in merged.jobs.values() for p in j.inputs}
    under = [j for j in merged.jobs.values() if any(p.startswith(target + os.sep) for p in j.outputs)]
    results = sorted({p for j in under if not read.intersection(j.outputs) for p in j.outputs})
    return merged, results


# --------------------------------------------------------------------------- the workflow's source

def _git(top: str, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", top, *args], capture_output=True, check=False, timeout=120, **kw)


def _repository() -> str | None:
    """The checkout holding this package's source (its workflow/ beside src/), or None (an installed wheel)."""
    from laser_repro import provenance

    for start in (provenance.CODE_DIR, str(Path(__file__).resolve().parent)):
        try:
            top = _git(start, "rev-parse", "--show-toplevel", text=True)
        except (OSError, subprocess.SubprocessError):
            top = None
        if top is not None and top.returncode == 0 and os.path.isfile(os.path.join(top.stdout.strip(), MAIN_WORKFLOW)):
            return top.stdout.strip()
    root = Path(__file__).resolve().parents[3]
    return str(root) if (root / MAIN_WORKFLOW).is_file() else None


def workflow_source(commit: str | None, into: Path) -> tuple[Path, str]:
    """``workflow/`` of `commit` (git archive) under `into`, else the checkout's; (its path, where it came from)."""
    import tarfile

    top = _repository()
    if top is None:
        raise SystemExit(f"lineage crate: {MAIN_WORKFLOW} not found (the package is not a checkout of the "
                         f"repository): run from a clone (scripts/setup.sh installs it editable)")
    if commit:
        try:
            known = _git(top, "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0
            archive = _git(top, "archive", "--format=tar", commit, "workflow") if known else None
        except (OSError, subprocess.SubprocessError):
            archive = None
        if archive is not None and archive.returncode == 0:
            tar_path = into / "workflow.tar"
            tar_path.write_bytes(archive.stdout)
            with tarfile.open(tar_path) as tar:
                tar.extractall(into, filter="data")
            tar_path.unlink()
            return into / "workflow", f"commit {commit}"
    shutil.copytree(os.path.join(top, "workflow"), into / "workflow",
                    ignore=shutil.ignore_patterns("__pycache__", ".snakemake*"))
    return into / "workflow", "the checkout's working tree" + (f" (commit {commit} is not in it)" if commit else "")


def rule_files(workflow_dir: Path) -> dict[str, str]:
    """rule name -> the file defining it, relative to the crate (``workflow/rules/x.smk``)."""
    found = {}
    for path in sorted([workflow_dir / "Snakefile", *workflow_dir.rglob("*.smk")]):
        if path.is_file():
            for defined, used in _RULE.findall(path.read_text(encoding="utf-8", errors="replace")):
                found.setdefault(defined or used, "workflow/" + path.relative_to(workflow_dir).as_posix())
    return found


# --------------------------------------------------------------------------- values

def _time(value: str | None) -> str | None:
    """ISO 8601 in UTC with milliseconds (the form Process Run Crate's shapes expect)."""
    if not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        return value
    if t.tzinfo is None:
        t = t.astimezone()
    return t.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds")


def _literal(value):
    if isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _data_type(value) -> str:
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, float):
        return "Float"
    return "Text"


def _value_id(key: str, value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    short = text.strip('"') if _SAFE.match(text.strip('"')) else hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"#config/{key}={short}"


def _media_type(path: str) -> str | None:
    """The file's media type: by its name ending, else text/plain or application/octet-stream by its first 4 kB."""
    for ending, media in MEDIA_TYPES.items():
        if path.endswith(ending):
            return media
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 4:  # not a character cut at the end of the 4 kB
            return "application/octet-stream"
    return "application/octet-stream" if b"\0" in head else "text/plain"


def _compact(crate) -> None:
    """Single values instead of one-element lists (RO-Crate 1.1's JSON-LD recommendation)."""
    for e in crate.get_entities():
        for k, v in list(e._jsonld.items()):
            if isinstance(v, list) and len(v) == 1:
                e._jsonld[k] = v[0]


def _license(value: str) -> tuple[str, str]:
    """(URL, name) of an SPDX identifier or a URL."""
    if re.match(r"^https?://", value):
        return value, value.rstrip("/").rsplit("/", 1)[-1]
    return f"https://spdx.org/licenses/{value}", value


# --------------------------------------------------------------------------- the crate

def write_crate(target: str, outdir: str, *, copy_data: bool = False, license: str = DEFAULT_LICENSE) -> dict:
    """Write the crate of `target` (a file with a record, or a directory of records) into `outdir` (new or empty).
    Returns counts: jobs, files, copied, raw."""
    try:
        from rocrate.model.contextentity import ContextEntity
        from rocrate.rocrate import ROCrate
    except ImportError:
        raise SystemExit("lineage crate: the rocrate package is not installed (pip install -c "
                         "workflow/envs/constraints.txt rocrate, or bash scripts/setup.sh)") from None

    import tempfile

    out = Path(outdir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SystemExit(f"lineage crate: {out} exists and is not an empty directory")
    graph, results = collect(target)
    jobs = graph.topological_jobs()
    if not jobs:
        raise SystemExit(f"lineage crate: {target}: no jobs recorded")
    result_set = set(results)

    crate = ROCrate(version=RO_CRATE_VERSION)
    crate.metadata.extra_terms.update(EXTRA_TERMS)
    tmp = tempfile.TemporaryDirectory(prefix="laser-repro-crate-")
    try:
        # ---- the workflow: the code the jobs recorded
        commits = [(j.record.get("code") or {}) for j in jobs]
        commit = next((c.get("commit") for c in reversed(commits) if c.get("commit")), None)
        dirty = any(c.get("dirty") for c in commits)
        versions = sorted({str(c.get("version")) for c in commits if c.get("version")})
        libraries = next((j.record.get("libraries") for j in reversed(jobs) if j.record.get("libraries")), {}) or {}
        wf_dir, wf_origin = workflow_source(commit, Path(tmp.name))
        rules = rule_files(wf_dir)
        crate.add_dataset(str(wf_dir), "workflow", properties={
            "name": "the laser-repro Snakemake workflow", "description": f"workflow/ of {wf_origin}"})
        workflow = crate.add_workflow(
            str(wf_dir / "Snakefile"), MAIN_WORKFLOW, main=True, lang="snakemake",
            lang_version=libraries.get("snakemake"), properties={
                "@type": ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"],
                "name": "laser-repro workflow", "encodingFormat": "text/plain",
                "conformsTo": {"@id": BIOSCHEMAS_WORKFLOW},
                "description": "The LASER reproduction pipeline (Snakemake): " + wf_origin
                               + ("; the jobs ran with uncommitted changes (dirty)" if dirty else ""),
                "version": commit or (versions[-1] if versions else "unknown"),
            })
        lic_url, lic_name = _license(license)
        crate.add(ContextEntity(crate, lic_url, properties={"@type": "CreativeWork", "name": lic_name}))
        profiles = [crate.add(ContextEntity(crate, url, properties={
            "@type": "CreativeWork", "name": name, "version": url.rsplit("/", 1)[-1]}))
            for url, name in PROFILES.items()]

        # ---- files: copied (the result, or all with --copy-data), a raw input by URL, the rest by a local id
        dir_keys = {k for j in jobs for side in ("inputs", "outputs")
                    for k, e in (j.record.get(side) or {}).items() if (e or {}).get("type") == "dir"}
        url_owners: dict[str, set] = {}
        for f in graph.files.values():
            if f.url:
                url_owners.setdefault(f.url, set()).add(f.sha256)
        entity: dict[str, object] = {}
        copied = []
        for path in sorted(graph.files):
            f = graph.files[path]
            key = f.key or f.path
            is_dir = key in dir_keys or os.path.isdir(path)
            props = {"name": key, "@type": "Dataset" if is_dir else "File"}
            notes = []
            if f.sha256:
                props["sha256"] = f.sha256
            if f.size is not None:
                props["contentSize"] = str(f.size)
            if is_dir and f.sha256:
                notes.append("a directory; sha256 is laser-repro's digest of its manifest (relpath NUL sha256 LF "
                             "of its files, sorted)")
            media = None if is_dir else _media_type(path)
            if media:
                props["encodingFormat"] = media
            made = graph.jobs.get(f.job) if f.job else None
            if f.url and made is not None and _time(made.record.get("end")):
                props["sdDatePublished"] = _time(made.record.get("end"))  # when the download job fetched it
            if os.path.exists(path) and (copy_data or path in result_set):
                if f.url:
                    props["url"] = f.url
                dest = key if not os.path.isabs(key) else "external/" + key.lstrip("/")
                if notes:
                    props["description"] = "; ".join(notes)
                add = crate.add_dataset if is_dir else crate.add_file
                entity[path] = add(path, dest, properties=props)
                copied.append((path, dest))
            elif f.url and len(url_owners[f.url]) == 1:  # a web data entity: the raw input by its URL
                entity[path] = crate.add_file(f.url, properties={**props, "@type": "File", "url": f.url})
            else:
                if f.url:
                    props["url"] = f.url
                notes.append(f"not in this crate: {key} of the run (sha256 and size as recorded)")
                props["description"] = "; ".join(notes)
                entity[path] = crate.add(ContextEntity(crate, "#" + quote(key, safe="/._-+=~:@,"), properties=props))

        # ---- config values: FormalParameters (workflow and rule) and PropertyValues
        formal: dict[str, object] = {}
        workflow_params: dict[str, object] = {}
        values: dict[str, object] = {}

        def parameter(pid: str, key: str, value) -> object:
            if pid not in formal:
                formal[pid] = crate.add(ContextEntity(crate, pid, properties={
                    "@type": "FormalParameter", "name": key, "additionalType": _data_type(value)}))
            return formal[pid]

        def property_value(key: str, value, rule_param) -> object:
            vid = _value_id(key, value)
            pv = values.get(vid)
            if pv is None:
                param = workflow_params[key] = parameter(f"{MAIN_WORKFLOW}#config/{key}", key, value)
                pv = values[vid] = crate.add(ContextEntity(crate, vid, properties={
                    "@type": "PropertyValue", "name": key, "value": _literal(value), "exampleOfWork": [param]}))
            if rule_param.id not in {e.id for e in pv["exampleOfWork"]}:
                pv.append_to("exampleOfWork", rule_param)
            return pv

        # ---- tools (one per rule) and steps
        tools, steps = {}, {}
        engine = crate.add(ContextEntity(crate, "#snakemake", properties={
            "@type": "SoftwareApplication", "name": "Snakemake",
            "url": "https://snakemake.readthedocs.io", "softwareVersion": libraries.get("snakemake") or "unknown"}))
        for job in jobs:
            if job.rule in tools:
                continue
            where = rules.get(job.rule, MAIN_WORKFLOW)
            tools[job.rule] = crate.add(ContextEntity(crate, f"{where}#{job.rule}", properties={
                "@type": "SoftwareApplication", "name": job.rule,
                "description": f"Snakemake rule {job.rule} ({where})",
                "softwareVersion": commit or (versions[-1] if versions else "unknown")}))
            steps[job.rule] = crate.add(ContextEntity(crate, f"{MAIN_WORKFLOW}#step/{job.rule}", properties={
                "@type": "HowToStep", "name": job.rule, "position": str(len(steps)),
                "workExample": tools[job.rule]}))
        workflow["hasPart"] = list(tools.values())
        workflow["step"] = list(steps.values())

        # ---- one CreateAction and one ControlAction per job
        actions, controls = [], []
        for job in jobs:
            rec = job.record
            flat: dict = {}
            _flatten("", rec.get("config") or {}, flat)
            tool = tools[job.rule]
            pvs = []
            for key, value in sorted(flat.items()):
                rule_param = parameter(f"{tool.id}/config/{key}", key, value)
                pvs.append(property_value(key, value, rule_param))
                if rule_param.id not in {e.id for e in tool.get("input", [])}:
                    tool.append_to("input", rule_param)
            host = rec.get("host") or {}
            code = rec.get("code") or {}
            about = [f"Snakemake job {job.label}"]
            if host.get("hostname"):
                about.append(f"on {host['hostname']} ({host.get('cpu_model') or 'CPU not recorded'}"
                             + (f", {host['cpu_count']} CPUs" if host.get("cpu_count") else "")
                             + (f", GPUs {', '.join(host['gpus'])}" if host.get("gpus") else "") + ")")
            about.append(f"laser-repro {code.get('version')} at {(code.get('commit') or 'no commit')[:12]}"
                         + (" (dirty)" if code.get("dirty") else ""))
            if rec.get("runtime"):
                about.append("runtime " + json.dumps(rec["runtime"], sort_keys=True))
            props = {"@type": "CreateAction", "name": job.label, "description": "; ".join(about),
                     "instrument": tool, "actionStatus": COMPLETED,
                     "object": [entity[p] for p in job.inputs if p in entity] + pvs,
                     "result": [entity[p] for p in job.outputs if p in entity]}
            for prop, field in (("startTime", "start"), ("endTime", "end")):
                if _time(rec.get(field)):
                    props[prop] = _time(rec.get(field))
            action = crate.add(ContextEntity(crate, f"#job-{job.id}", properties=props))
            actions.append(action)
            controls.append(crate.add(ContextEntity(crate, f"#control-{job.id}", properties={
                "@type": "ControlAction", "name": f"orchestrate {job.label}", "instrument": steps[job.rule],
                "object": action, "actionStatus": COMPLETED})))
        workflow["input"] = [workflow_params[k] for k in sorted(workflow_params)]

        # ---- the run of the workflow and Snakemake's
        starts = [t for t in (_time(j.record.get("start")) for j in jobs) if t]
        ends = [t for t in (_time(j.record.get("end")) for j in jobs) if t]
        raw = [entity[p] for p in sorted(graph.files) if graph.files[p].raw and p in entity]
        shown = os.path.relpath(os.path.abspath(target))
        shown = shown if shown != "." else os.path.basename(os.path.abspath(target)) + "/"
        run_props = {"@type": "CreateAction", "name": f"Run of {MAIN_WORKFLOW} that made {shown}",
                     "description": f"The Snakemake run that made {shown}: {len(jobs)} jobs; object: the raw inputs "
                                    f"and the config values the jobs recorded; result: {shown}",
                     "instrument": workflow, "actionStatus": COMPLETED,
                     "object": raw + list(values.values()),
                     "result": [entity[p] for p in results if p in entity]}
        if starts:
            run_props["startTime"], run_props["endTime"] = min(starts), max(ends or starts)
        run = crate.add(ContextEntity(crate, "#run", properties=run_props))
        organize = {"@type": "OrganizeAction", "name": f"Run of Snakemake {libraries.get('snakemake') or ''}".strip(),
                    "instrument": engine, "result": run, "object": controls, "actionStatus": COMPLETED}
        if starts:
            organize["startTime"], organize["endTime"] = run_props["startTime"], run_props["endTime"]
        crate.add(ContextEntity(crate, "#snakemake-run", properties=organize))

        # ---- the root data entity
        root = crate.root_dataset
        root["name"] = f"laser-repro: the provenance of {shown}"
        root["description"] = (
            f"What made {shown}: {len(jobs)} Snakemake jobs of {len(tools)} rules, {len(graph.files)} files, "
            f"{len(raw)} raw inputs (by public URL where recorded), written by `laser-repro lineage crate` from the "
            f"provenance records. The crate holds the workflow ({wf_origin}) and "
            + ("every recorded file that still exists" if copy_data else "the result")
            + "; every other file is described by its path in the run, sha256 and size.")
        root["license"] = crate.get(lic_url)
        root["datePublished"] = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        root["conformsTo"] = profiles
        root["mentions"] = [run, *actions]
        readme = Path(tmp.name) / "README.md"
        readme.write_text(_readme(root["name"], root["description"], wf_origin, [d for _, d in copied]),
                          encoding="utf-8")
        crate.add_file(str(readme), "README.md", properties={
            "name": "README.md", "about": root, "encodingFormat": "text/markdown"})
        _compact(crate)

        crate.write(out)
        for path, dest in copied:  # the records travel with the files they describe
            side = sidecar_path(path)
            if side.is_file():
                (out / (dest + ".prov.json")).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(side, out / (dest + ".prov.json"))
    finally:
        tmp.cleanup()
    return {"jobs": len(jobs), "files": len(graph.files), "copied": len(copied), "raw": len(raw),
            "rules": len(tools)}


def _readme(name: str, description: str, wf_origin: str, copied: list[str]) -> str:
    shown = "".join(f"- `{d}`\n" for d in copied[:50])
    shown += f"- … ({len(copied) - 50} more)\n" if len(copied) > 50 else ""
    return f"""# {name}

{description}

- `ro-crate-metadata.json`: the run as a Workflow Run RO-Crate (Provenance Run Crate 0.5): the workflow, each
  Snakemake job as a CreateAction with its input files, config values, outputs and times, each file with its
  sha256 and size, the raw data by their public URLs.
- `workflow/`: the Snakemake workflow ({wf_origin}); `workflow/Snakefile` is the main workflow.
- Files in this crate (with their provenance records `FILE.prov.json`, where they have one):

{shown}
Check a file: its `sha256` in `ro-crate-metadata.json` is `sha256sum FILE`; where every file was copied
(`--copy-data`), `laser-repro lineage check FILE` in this directory re-hashes its whole lineage.
Validate the crate: `rocrate-validator validate -p provenance-run-crate .`
"""


def cmd_lineage_crate(a) -> None:
    if not os.path.exists(a.target):
        raise SystemExit(f"lineage crate: {a.target} does not exist")
    if not os.path.isdir(a.target) and read_sidecar(os.path.abspath(a.target)) is None:
        raise SystemExit(f"lineage crate: {a.target} has no provenance record {sidecar_path(a.target)}")
    counts = write_crate(a.target, a.output, copy_data=a.copy_data, license=a.license)
    print(f"wrote {a.output}/ro-crate-metadata.json: {counts['jobs']} jobs of {counts['rules']} rules, "
          f"{counts['files']} files ({counts['copied']} copied, {counts['raw']} raw inputs); validate with: "
          f"rocrate-validator validate -p provenance-run-crate {a.output}", file=sys.stderr)
