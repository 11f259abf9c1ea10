"""Lineage as a graph (``laser-repro lineage view | cell | check | diff``): the provenance records followed
back from a file, each record read once, every file and job a node of its own.

A job is what one record describes (every output of a job carries the same record in its sidecar); a file
is a node with the job that made it (none for a raw file: a download, a file of the data root); the
jobs that read it are the edges. ``view`` prints a summary (raw inputs, config values, code, libraries, models,
machines, wall time per rule) and then each job once; ``check`` re-hashes the recorded files; ``diff``
walks two results of the same target back to the first jobs where they diverge and says why.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from laser_repro.provenance._common import _display, _own_key, _resolve, read_sidecar, sidecar_path
from laser_repro.provenance.lineage import _workflow_output

#: training rules' outputs whose model record names the model (family, seed, kept update)
MODEL_RECORD = "model_record.json"


@dataclass
class FileNode:
    path: str                      # as shown: relative to the current directory when under it
    abs_path: str
    sha256: str | None             # as recorded (by its own record, else by the job that read it)
    size: int | None
    url: str | None = None
    job: str | None = None         # the job that made it; None for a raw file (or one without a record)
    raw: bool = False
    unrecorded: bool = False       # a workflow output (under results/) without a record of its own
    key: str | None = None         # as recorded: relative to the workflow root (the same in two runs)


@dataclass
class JobNode:
    id: str
    rule: str
    record: dict
    inputs: list[str] = field(default_factory=list)   # abs paths
    outputs: list[str] = field(default_factory=list)  # abs paths

    @property
    def trains_model(self) -> bool:
        """The job trained a model (it wrote a ``model_record.json``)."""
        return any(os.path.basename(o) == MODEL_RECORD for o in self.outputs)

    @property
    def label(self) -> str:
        wildcards = ", ".join(f"{k}={v}" for k, v in sorted((self.record.get("wildcards") or {}).items()))
        return f"{self.rule}[{wildcards}]" if wildcards else self.rule


@dataclass
class Graph:
    root: str                                        # abs path of the file the graph was built from
    files: dict[str, FileNode] = field(default_factory=dict)
    jobs: dict[str, JobNode] = field(default_factory=dict)

    def job_of(self, abs_path: str) -> JobNode | None:
        f = self.files.get(abs_path)
        return self.jobs.get(f.job) if f and f.job else None

    def upstream(self, abs_path: str) -> tuple[set[str], set[str]]:
        """(files, jobs) that ``abs_path`` depends on, itself included."""
        files, jobs, todo = set(), set(), [abs_path]
        while todo:
            p = todo.pop()
            if p in files:
                continue
            files.add(p)
            job = self.job_of(p)
            if job and job.id not in jobs:
                jobs.add(job.id)
                todo.extend(job.inputs)
        return files, jobs

    def topological_jobs(self) -> list[JobNode]:
        """Jobs with every job they depend on first (raw data first, the root's job last)."""
        order, done = [], set()

        def visit(job_id: str) -> None:
            stack = [(job_id, False)]
            while stack:
                jid, expanded = stack.pop()
                if jid in done:
                    continue
                if expanded:
                    done.add(jid)
                    order.append(self.jobs[jid])
                    continue
                stack.append((jid, True))
                for p in sorted(self.jobs[jid].inputs, reverse=True):
                    up = self.files[p].job if p in self.files else None
                    if up and up in self.jobs and up not in done:
                        stack.append((up, False))

        root = self.files.get(self.root)  # a directory's merged graph (lineage crate DIR) has no root file
        if root is not None and root.job:
            visit(root.job)
        for jid in sorted(self.jobs):
            visit(jid)
        return order


def _job_id(rec: dict) -> str:
    """One id per job, whichever of its outputs' sidecars it was read from."""
    key = json.dumps([rec.get("rule"), rec.get("start"), sorted(rec.get("outputs") or {})], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def build(path: Path | str) -> Graph:
    """The graph of ``path``'s lineage: every record read once (a job's record from one of its outputs)."""
    root = os.path.abspath(os.fspath(path))
    graph = Graph(root)
    todo: list[tuple[str, dict | None, str | None, str | None]] = [(root, None, None, None)]
    while todo:
        abs_path, edge, url, key = todo.pop()
        node = graph.files.get(abs_path)
        if node is not None:
            if url and not node.url:
                node.url = url
            continue
        rec = read_sidecar(abs_path)
        own = _own_key(abs_path, rec) if rec else None
        own_entry = rec["outputs"][own[0]] if own else None
        entry = own_entry or edge or {}
        node = FileNode(_display(abs_path), abs_path, entry.get("sha256"), entry.get("size"), url,
                        key=own[0] if own else (key if key is not None else _display(abs_path)))
        graph.files[abs_path] = node
        if own is None:
            unrecorded = os.path.exists(sidecar_path(abs_path)) or (
                not url and _workflow_output(key if key is not None else _display(abs_path)))
            node.unrecorded, node.raw = unrecorded, not unrecorded
            continue
        node.url = node.url or (rec.get("sources") or {}).get(own[0])
        if not rec.get("inputs"):  # a download: a raw file with a record
            node.raw = True
        job_id = _job_id(rec)
        node.job = job_id
        if job_id in graph.jobs:
            continue
        workflow_root = own[1]
        job = JobNode(job_id, rec.get("rule") or "?", rec)
        graph.jobs[job_id] = job
        job.outputs = sorted(_resolve(k, workflow_root) for k in rec["outputs"])
        sources = rec.get("sources") or {}
        for k, e in sorted(rec.get("inputs", {}).items()):
            p = _resolve(k, workflow_root)
            job.inputs.append(p)
            todo.append((p, e, sources.get(k), k))
        for out_key, out_entry in rec["outputs"].items():  # the job's other outputs: known without a read
            p = _resolve(out_key, workflow_root)
            if p not in graph.files:
                graph.files[p] = FileNode(_display(p), p, out_entry.get("sha256"), out_entry.get("size"),
                                          job=job_id, key=out_key)
    return graph


# --------------------------------------------------------------------------- summary

def _flatten(prefix: str, value, out: dict) -> None:
    if isinstance(value, dict) and (value or not prefix):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


def summary(graph: Graph) -> dict:
    """What made the file, at a glance: raw inputs, config values, code, libraries, models, machines and
    wall time per rule (over every job of the graph)."""
    jobs = graph.topological_jobs()
    raw = [{"path": f.path, "url": f.url, "sha256": f.sha256, "bytes": f.size}
           for f in sorted(graph.files.values(), key=lambda f: f.path) if f.raw]
    config: dict[str, set] = defaultdict(set)
    code, libraries, machines = set(), defaultdict(set), {}
    wall: dict[str, dict] = {}
    models = []
    for job in jobs:
        rec = job.record
        flat: dict = {}
        _flatten("", rec.get("config") or {}, flat)
        for k, v in flat.items():
            config[k].add(json.dumps(v, sort_keys=True))
        c = rec.get("code") or {}
        code.add((c.get("commit"), bool(c.get("dirty")), c.get("version")))
        for lib, version in (rec.get("libraries") or {}).items():
            if version is not None:
                libraries[lib].add(version)
        host = rec.get("host") or {}
        runtime = rec.get("runtime") or {}
        machine = (host.get("hostname"), host.get("cpu_model"), host.get("gpus") and ", ".join(host["gpus"]))
        m = machines.setdefault(machine, {"host": machine[0], "cpu": machine[1], "gpus": machine[2],
                                          "cpu_count": host.get("cpu_count"), "threads": set(), "jobs": 0})
        m["jobs"] += 1
        if runtime.get("torch_threads") is not None:
            m["threads"].add(runtime["torch_threads"])
        w = wall.setdefault(job.rule, {"rule": job.rule, "jobs": 0, "seconds": 0.0})
        w["jobs"] += 1
        w["seconds"] += float(rec.get("duration_s") or 0)
        for out in job.outputs:
            if os.path.basename(out) == MODEL_RECORD:
                models.append(_model_summary(graph, job, out))
    return {
        "file": graph.files[graph.root].path,
        "counts": {"files": len(graph.files), "jobs": len(graph.jobs), "raw": len(raw),
                   "unrecorded": sum(f.unrecorded for f in graph.files.values())},
        "raw_inputs": raw,
        "config": {k: [json.loads(v) for v in sorted(vals)] for k, vals in sorted(config.items())},
        "code": [{"commit": c, "dirty": d, "version": v} for c, d, v in sorted(code, key=str)],
        "libraries": {k: sorted(v) for k, v in sorted(libraries.items())},
        "models": sorted(models, key=lambda m: m["name"]),
        "machines": [{**m, "threads": sorted(m["threads"])} for m in machines.values()],
        "wall_time": sorted(({**w, "seconds": round(w["seconds"], 1)} for w in wall.values()),
                        key=lambda w: -w["seconds"]),
    }


def _model_summary(graph: Graph, job: JobNode, record_path: str) -> dict:
    name = Path(record_path).parent.name
    out = {"name": name, "rule": job.rule, "family": None, "seed": None, "kept_update": None,
           "num_updates": None, "checkpoint": None, "checkpoint_sha256": None}
    try:
        with open(record_path, encoding="utf-8") as f:
            rec = json.load(f)
    except (OSError, ValueError):
        rec = {}
    out["family"] = rec.get("family")
    out["seed"] = ((rec.get("settings") or {}).get("train") or {}).get("seed")
    out["kept_update"], out["num_updates"] = rec.get("kept_update"), rec.get("num_updates")
    for p in job.outputs:
        if p.endswith(".pt") and "checkpoint" in os.path.basename(p):
            out["checkpoint"], out["checkpoint_sha256"] = graph.files[p].path, graph.files[p].sha256
            break
    else:
        encoders = [p for p in job.outputs if p.endswith(".pt")]
        if encoders:
            out["checkpoint"], out["checkpoint_sha256"] = graph.files[encoders[0]].path, graph.files[encoders[0]].sha256
    return out


#: rules with more jobs than this are one line of ``lineage view`` (the default run's table: ~800 jobs)
JOBS_SHOWN = 4


def _pattern(paths: list[str]) -> str:
    """Many paths in a few words: their common directory, the count and the first and last names."""
    directory = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    names = sorted(os.path.relpath(p, directory) if directory else p for p in paths)
    shown = ", ".join(names[:2]) + (f", ..., {names[-1]}" if len(names) > 3 else
                                    (f", {names[2]}" if len(names) == 3 else ""))
    return f"{directory or '.'}/{{{len(paths)} files: {shown}}}"


def _value(values: list) -> str:
    text = " | ".join(json.dumps(v, ensure_ascii=False) for v in values)
    return text if len(text) <= 100 else text[:97] + "..."


def _raw_groups(raw_inputs: list[dict]) -> dict[str, list[dict]]:
    """Raw inputs by where they come from, in order: an archive's members (``URL#``), else a URL's or a path's
    directory (ending in "/")."""
    groups: dict[str, list[dict]] = {}
    for r in raw_inputs:
        where = r["url"] or r["path"]
        source = where.split("#", 1)[0] + "#" if "#" in where else where.rsplit("/", 1)[0] + "/"
        groups.setdefault(source, []).append(r)
    return groups


def format_view(graph: Graph, info: dict | None = None) -> str:
    """The summary, then each job once (raw data first): its rule and wildcards, what it read, what it made."""
    info = info or summary(graph)
    c = info["counts"]
    lines = [f"lineage of {info['file']}: {c['jobs']} jobs, {c['files']} files, {c['raw']} raw inputs"
             + (f", {c['unrecorded']} workflow outputs without a record" if c["unrecorded"] else ""), ""]
    lines.append(f"raw inputs ({len(info['raw_inputs'])}; more than {JOBS_SHOWN} from one archive or directory in "
                 f"one line, --json lists each):")
    for source, raws in _raw_groups(info["raw_inputs"]).items():
        if len(raws) > JOBS_SHOWN:
            names = [(r["url"] or r["path"])[len(source):] for r in raws]
            size = sum(r["bytes"] or 0 for r in raws)
            lines.append(f"  {source}{{{len(raws)} files: {names[0]}, {names[1]}, ..., {names[-1]}}}  {size} B")
            continue
        lines += [f"  {r['url'] or r['path']}  sha256={r['sha256'] or '-'}  "
                  f"{r['bytes'] if r['bytes'] is not None else '?'} B" for r in raws]
    lines.append(f"config values ({len(info['config'])}; several values: ' | '):")
    lines += [f"  {k} = {_value(v)}" for k, v in info["config"].items()]
    lines.append("code: " + "; ".join(f"{c['commit'] and c['commit'][:12]}{' (dirty)' if c['dirty'] else ''} "
                                      f"v{c['version']}" for c in info["code"]))
    lines.append("libraries: " + ", ".join(f"{k} {'/'.join(v)}" for k, v in info["libraries"].items()))
    if info["models"]:
        lines.append("models:")
        lines += [f"  {m['name']}: {m['family']}, seed {m['seed']}, kept update {m['kept_update']} of "
                  f"{m['num_updates']}, {m['checkpoint']} sha256={(m['checkpoint_sha256'] or '-')[:16]}"
                  for m in info["models"]]
    lines.append("machines:")
    lines += [f"  {m['host']}: {m['cpu'] or 'CPU not recorded'}"
              + (f" x {m['cpu_count']}" if m.get("cpu_count") else "")
              + (f", GPUs {m['gpus']}" if m["gpus"] else "")
              + (f", torch threads {'/'.join(map(str, m['threads']))}" if m["threads"] else "")
              + f"; {m['jobs']} jobs" for m in info["machines"]]
    lines.append("wall time per rule: " + ", ".join(f"{w['rule']} {w['seconds']:.1f} s ({w['jobs']})"
                                                    for w in info["wall_time"]))
    lines += ["", f"jobs by rule (raw data first): outputs  <- the rules they read from; a rule of more than "
                  f"{JOBS_SHOWN} jobs in one line (--json lists every job and file)"]
    by_rule: dict[str, list] = {}
    for job in graph.topological_jobs():
        by_rule.setdefault(job.rule, []).append(job)
    for rule, jobs in by_rule.items():
        upstream = sorted({graph.jobs[graph.files[p].job].rule for j in jobs for p in j.inputs if graph.files[p].job})
        raw = len({p for j in jobs for p in j.inputs if not graph.files[p].job})
        sources = ", ".join(upstream + ([f"{raw} raw"] if raw else []))
        arrow = f"  <- {sources}" if sources else ""
        if len(jobs) > JOBS_SHOWN:
            outs = [graph.files[p].path for j in jobs for p in j.outputs]
            lines.append(f"{rule} ({len(jobs)} jobs): {_pattern(outs)}{arrow}")
            continue
        if len(jobs) == 1:
            outs = [graph.files[p].path for p in jobs[0].outputs]
            lines.append(f"{rule} (1 job): {outs[0]}" + (f" (+{len(outs) - 1})" if len(outs) > 1 else "") + arrow)
            continue
        lines.append(f"{rule} ({len(jobs)} jobs):")
        for job in jobs:
            wildcards = ", ".join(f"{k}={v}" for k, v in sorted((job.record.get("wildcards") or {}).items()))
            outs = [graph.files[p].path for p in job.outputs]
            shown = outs[0] + (f" (+{len(outs) - 1})" if len(outs) > 1 else "")
            own = sorted({graph.jobs[graph.files[p].job].rule for p in job.inputs if graph.files[p].job})
            own_raw = sum(1 for p in job.inputs if not graph.files[p].job)
            own_sources = ", ".join(own + ([f"{own_raw} raw"] if own_raw else []))
            lines.append(f"  {f'[{wildcards}] ' if wildcards else ''}{shown}"
                         + (f"  <- {own_sources}" if own_sources else ""))
    return "\n".join(lines)


def to_json(graph: Graph, info: dict | None = None) -> dict:
    """Nodes (files and jobs), edges (file -> job it fed, job -> file it made) and the summary."""
    nodes = [{"id": f.path, "kind": "file", "sha256": f.sha256, "bytes": f.size, "url": f.url, "raw": f.raw,
              "unrecorded": f.unrecorded} for f in graph.files.values()]
    nodes += [{"id": j.id, "kind": "job", "rule": j.rule, "wildcards": j.record.get("wildcards") or {},
               "start": j.record.get("start"), "duration_s": j.record.get("duration_s")} for j in graph.jobs.values()]
    edges = [{"from": graph.files[p].path, "to": j.id} for j in graph.jobs.values() for p in j.inputs]
    edges += [{"from": j.id, "to": graph.files[p].path} for j in graph.jobs.values() for p in j.outputs]
    return {"nodes": nodes, "edges": edges, "summary": info or summary(graph)}


# --------------------------------------------------------------------------- check

def check_paths(target: Path | str) -> list[dict]:
    """Every recorded file on the lineage of a file, or every file with a record under a directory, re-hashed
    (no stat shortcut: a file rewritten in place with its mtime kept is found): [{path, status, recorded,
    current}] with status ok | changed | missing."""
    from laser_repro.provenance.records import _Hasher

    hasher = _Hasher(use_cache=False)
    target = os.path.abspath(os.fspath(target))
    if os.path.isdir(target):
        entries = []
        for dirpath, dirnames, filenames in os.walk(target):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".prov.json"):
                    continue
                path = os.path.join(dirpath, name[: -len(".prov.json")])
                rec = read_sidecar(path)
                own = _own_key(path, rec) if rec else None
                if own is not None:
                    entries.append((path, rec["outputs"][own[0]].get("sha256")))
    else:
        graph = build(target)
        entries = [(f.abs_path, f.sha256) for f in graph.files.values() if f.sha256]
    out = []
    for path, recorded in sorted(entries):
        current = hasher(path)
        status = "missing" if current is None else ("ok" if current == recorded else "changed")
        out.append({"path": _display(path), "status": status, "recorded": recorded, "current": current})
    return out


# --------------------------------------------------------------------------- diff

def _settings(rec: dict) -> dict[str, object]:
    """A record's settings that can change a job's bytes, flattened: config values, code, libraries,
    runtime (threads, processes) and the machine (CPU model and flags, CPUs, GPUs)."""
    flat: dict = {}
    _flatten("config", rec.get("config") or {}, flat)
    code = rec.get("code") or {}
    flat["code.commit"] = code.get("commit")
    flat["code.dirty"] = code.get("dirty")
    _flatten("libraries", rec.get("libraries") or {}, flat)
    _flatten("runtime", rec.get("runtime") or {}, flat)
    host = rec.get("host") or {}
    for k in ("cpu_model", "cpu_flags_sha256", "cpu_count", "gpus"):
        flat[f"machine.{k}"] = host.get(k)
    return flat


def diff(a: Path | str, b: Path | str) -> dict:
    """Two results of the same target (two runs, machines, commits or configs) walked back together: the
    first jobs where they diverge (every input the same, an output not) and why: the settings that differ
    (config values, code commit, libraries, runtime threads, machine), different input files, or none
    ("same inputs, same settings, different bytes": float drift). Raw inputs that differ are named too."""
    ga, gb = build(a), build(b)
    by_key_b = {f.key: f for f in gb.files.values()}
    divergences, raw_differences, seen = [], [], set()

    def walk(fa: FileNode) -> None:
        if fa.key in seen:
            return
        seen.add(fa.key)
        fb = by_key_b.get(fa.key)
        if fb is None or fa.sha256 == fb.sha256:
            return
        ja, jb = ga.jobs.get(fa.job or ""), gb.jobs.get(fb.job or "")
        if ja is None or jb is None:
            raw_differences.append({"file": fa.key, "a": fa.sha256, "b": fb.sha256})
            return
        inputs_a = {ga.files[p].key: ga.files[p] for p in ja.inputs}
        inputs_b = {gb.files[p].key: gb.files[p] for p in jb.inputs}
        differing = [k for k in sorted(inputs_a.keys() & inputs_b.keys())
                     if inputs_a[k].sha256 != inputs_b[k].sha256]
        for k in differing:
            walk(inputs_a[k])
        only = sorted(inputs_a.keys() ^ inputs_b.keys())
        if differing and not only:
            return  # an effect of what differs upstream (reported there)
        sa, sb = _settings(ja.record), _settings(jb.record)
        settings = {k: {"a": sa.get(k), "b": sb.get(k)} for k in sorted(sa.keys() | sb.keys())
                    if sa.get(k) != sb.get(k)}
        if any(d["job"] == ja.label for d in divergences):
            return
        if only:
            why = "different input files: " + ", ".join(
                ("a only " if k in inputs_a else "b only ") + k for k in only[:6])
        elif settings:
            why = "settings differ"
        else:
            why = "same inputs, same settings, different bytes (float drift: thread scheduling or the machine)"
        divergences.append({"job": ja.label, "rule": ja.rule, "file": fa.key, "a": fa.sha256, "b": fb.sha256,
                            "why": why, "settings": settings, "start": ja.record.get("start")})

    root_a = ga.files[ga.root]
    if root_a.key not in by_key_b:
        root_b = gb.files[gb.root]
        return {"a": root_a.path, "b": root_b.path, "same": False,
                "error": f"not the same target: {root_a.key} and {root_b.key}", "divergences": [],
                "raw_inputs": []}
    walk(root_a)
    order = {job.label: i for i, job in enumerate(ga.topological_jobs())}
    divergences.sort(key=lambda d: order.get(d["job"], 0))
    return {"a": root_a.path, "b": gb.files[gb.root].path, "same": root_a.sha256 == by_key_b[root_a.key].sha256,
            "divergences": divergences, "raw_inputs": raw_differences}


def format_diff(result: dict) -> str:
    if result.get("error"):
        return f"lineage diff: {result['error']}"
    if result["same"]:
        return f"{result['a']} and {result['b']}: the same bytes (sha256); nothing differs"
    lines = [f"{result['a']} and {result['b']} differ; where they first diverge "
             f"({len(result['divergences'])} job(s), upstream first):"]
    for d in result["divergences"]:
        lines.append(f"  {d['job']}: {d['file']} {(d['a'] or '-')[:12]} vs {(d['b'] or '-')[:12]}: {d['why']}")
        lines += [f"      {k}: {json.dumps(v['a'])} vs {json.dumps(v['b'])}" for k, v in d["settings"].items()]
    for r in result["raw_inputs"]:
        lines.append(f"  raw input {r['file']}: {(r['a'] or '-')[:12]} vs {(r['b'] or '-')[:12]}")
    return "\n".join(lines)
