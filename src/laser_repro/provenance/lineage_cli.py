"""The ``lineage`` verbs on the graph (:mod:`laser_repro.provenance.graph`): view, cell, check, diff, render."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from laser_repro.core import languages
from laser_repro.provenance._common import read_sidecar, sidecar_path
from laser_repro.provenance.graph import JOBS_SHOWN, Graph, _pattern, _raw_groups, build, check_paths, diff, format_diff, format_view, summary, to_json


def _graph_of(path: str) -> Graph:
    if read_sidecar(os.path.abspath(path)) is None:
        raise SystemExit(f"lineage: {path} has no provenance record {sidecar_path(path)} (made outside the "
                         f"workflow, or the workflow did not finish it)")
    return build(path)


def cmd_lineage_view(a) -> None:
    graph = _graph_of(a.file)
    info = summary(graph)
    print(json.dumps(to_json(graph, info), indent=1, ensure_ascii=False) if a.json else format_view(graph, info))


def cmd_lineage_check(a) -> None:
    if not os.path.exists(a.target):
        raise SystemExit(f"lineage check: {a.target} does not exist")
    if not os.path.isdir(a.target):
        _graph_of(a.target)
    results = check_paths(a.target)
    bad = [r for r in results if r["status"] != "ok"]
    for r in bad:
        print(f"{r['status']}: {r['path']}  recorded {(r['recorded'] or '-')[:16]}, now {(r['current'] or '-')[:16]}")
    counts = defaultdict(int)
    for r in results:
        counts[r["status"]] += 1
    print(f"{len(results)} recorded files re-hashed: {counts['ok']} ok, {counts['changed']} changed, "
          f"{counts['missing']} missing")
    if bad:
        raise SystemExit(1)


def cmd_lineage_diff(a) -> None:
    for p in (a.a, a.b):
        if read_sidecar(os.path.abspath(p)) is None:
            raise SystemExit(f"lineage diff: {p} has no provenance record {sidecar_path(p)}")
    result = diff(a.a, a.b)
    print(json.dumps(result, indent=1) if a.json else format_diff(result))
    if not result["same"]:
        raise SystemExit(1)


# --------------------------------------------------------------------------- cell

_TOKEN = re.compile(r"[^/._\-\s]+")


def _tokens(text: str) -> set[str]:
    return {t.lower() for t in _TOKEN.findall(text)}


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _holds_value(path: str, value: str) -> bool:
    """Whether a text input (a score JSON, a TSV) holds the cell's number, as the table rounded it: a number
    within half its last digit, or that fraction x 100 (an error rate tabulated in %)."""
    try:
        target = float(value)
        if os.path.getsize(path) > 5_000_000:
            return False
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (ValueError, OSError, UnicodeDecodeError):
        return False
    decimals = len(value.split(".")[1]) if "." in value else 0
    tolerance = 0.5 * 10 ** -decimals + 1e-9
    for match in _NUMBER.findall(text):
        x = float(match)
        if abs(x - target) <= tolerance or abs(100 * x - target) <= tolerance:
            return True
    return False


def cell_inputs(graph: Graph, table_job_inputs: list[str], row: str, column: str, value: str | None = None,
                other_columns: list[str] = ()) -> list[str]:
    """The table job's inputs that made one cell: those whose path names the row (a path component or name
    part equal to it, e.g. ``fra`` in ``scores/fra.json``), narrowed, where the row's inputs differ by a part of
    the column's header (a model name, ``init``), to those naming it, then to those that name no word only
    ``other_columns`` have (the TF-IDF scores for a model's column), and then to those that hold the cell's
    number (``value``), where any does (a score file, not the training data counted in another column).
    Inputs named by no row (a TF-IDF file of every language, a config) stay when no input names the row."""
    row_tokens = _tokens(row)
    named = [p for p in table_job_inputs if row_tokens and row_tokens <= _tokens(graph.files[p].key or p)]
    chosen = named or list(table_job_inputs)
    col_tokens = _tokens(column)
    path_tokens = {p: _tokens(graph.files[p].key or p) for p in chosen}
    discriminating = {t for t in col_tokens if 0 < sum(t in toks for toks in path_tokens.values()) < len(chosen)}
    if discriminating:
        narrowed = [p for p in chosen if discriminating & path_tokens[p]]
        chosen = narrowed or chosen
    # a word only other columns' headers have (``tfidf``, ``init``) names their inputs, not this column's
    theirs = {w for c in other_columns for w in _tokens(c)} - col_tokens
    narrowed = [p for p in chosen if not (theirs & _tokens(graph.files[p].key or p))]
    chosen = narrowed or chosen
    if value not in (None, ""):
        holding = [p for p in chosen if _holds_value(p, value)]
        chosen = holding or chosen
    return chosen


def _row_names(row: str) -> set[frozenset[str]]:
    """The token sets that name a table row in a path: its own, and for a language of the registry the code
    of its FLORES-200 file (``als_Latn.dev`` for the row ``sqi``)."""
    names = {frozenset(_tokens(row))} - {frozenset()}
    language = languages.all_languages().get(row)
    flores = language.flores if language else None
    if flores:
        names.add(frozenset({flores.split("_")[0].lower()}))
    return names


def row_upstream(graph: Graph, start: list[str], row: str, other_rows: list[str]) -> tuple[set[str], set[str]]:
    """(files, jobs) that ``start`` depends on, for one row of a table: where a job read files of several rows
    (a score file made from every language's embeddings, a step run once for all languages), only the inputs
    that name no other row of the table, or name this one, are followed. Upstream of a trained model
    (a job that wrote ``model_record.json``) everything is followed: every language's data made the model."""
    mine = _row_names(row)
    others = [names for names in map(_row_names, other_rows) if names and not names & mine]

    def another_rows(p: str) -> bool:
        toks = _tokens(graph.files[p].key or p)
        return not any(n <= toks for n in mine) and any(n <= toks for names in others for n in names)

    files, expanded, todo = set(), {}, [(p, True) for p in start]  # expanded: job id -> narrowed or not
    while todo:
        p, narrow = todo.pop()
        files.add(p)
        job = graph.job_of(p)
        if job is None:
            continue
        narrow = narrow and not job.trains_model
        if job.id in expanded and (expanded[job.id] is False or narrow):
            continue  # (a job first followed for this row, then reached from a model: followed again, whole)
        expanded[job.id] = narrow
        todo.extend((i, narrow) for i in job.inputs if not (narrow and another_rows(i)))
    return files, set(expanded)


def cmd_lineage_cell(a) -> None:
    table = Path(a.table)
    if not table.is_file():
        raise SystemExit(f"lineage cell: {table} does not exist")
    with open(table, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise SystemExit(f"lineage cell: {table} is empty")
    header = rows[0]
    if a.column not in header:
        raise SystemExit(f"lineage cell: {table} has no column {a.column!r}; its columns: {', '.join(header)}")
    match = [r for r in rows[1:] if r and r[0] == a.row]
    if not match:
        raise SystemExit(f"lineage cell: {table} has no row {a.row!r} (first column); its rows: "
                         f"{', '.join(r[0] for r in rows[1:] if r)}")
    value = match[0][header.index(a.column)]
    graph = _graph_of(str(table))
    job = graph.job_of(graph.root)
    chosen = cell_inputs(graph, job.inputs, a.row, a.column, value, [c for c in header if c != a.column])
    files, jobs = row_upstream(graph, chosen, a.row, [r[0] for r in rows[1:] if r and r[0] != a.row])
    ordered = [job for job in graph.topological_jobs() if job.id in jobs]
    raw = sorted(graph.files[p].url or graph.files[p].path for p in files if graph.files[p].raw)
    result = {"table": str(table), "row": a.row, "column": a.column, "value": value,
              "table_inputs": sorted(graph.files[p].path for p in chosen),
              "jobs": [{"job": j.label, "outputs": sorted(graph.files[p].path for p in j.outputs if p in files)}
                       for j in reversed(ordered)],
              "models": [j.label for j in reversed(ordered) if j.trains_model],
              "raw_inputs": raw}
    if a.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{table} [{a.row}, {a.column}] = {value}")
    print(f"made from {len(chosen)} of the table job's {len(job.inputs)} inputs, {len(ordered)} jobs, "
          f"{len(raw)} raw inputs:")
    by_rule: dict[str, list] = {}
    for j in reversed(ordered):
        by_rule.setdefault(j.rule, []).append(j)
    for rule, rule_jobs in by_rule.items():  # (a rule of more than JOBS_SHOWN jobs in one line, as `view`)
        if len(rule_jobs) > JOBS_SHOWN:
            outs = [graph.files[p].path for j in rule_jobs for p in j.outputs if p in files]
            print(f"  {rule} ({len(rule_jobs)} jobs): {_pattern(outs)}")
            continue
        for j in rule_jobs:
            outs = sorted(graph.files[p].path for p in j.outputs if p in files)
            print(f"  {j.label}: {', '.join(outs[:4])}" + (f" (+{len(outs) - 4})" if len(outs) > 4 else ""))
    if result["models"]:
        print(f"upstream of the model ({', '.join(result['models'])}) every input is followed: its training data "
              f"(and its held-out data, where it stopped early) is every row's")
    print("raw inputs:")
    for source, names in _raw_groups([{"url": r, "path": r} for r in raw]).items():
        if len(names) > JOBS_SHOWN:
            print(f"  {source}{{{len(names)} files: {names[0]['url'][len(source):]}, ..., {names[-1]['url'][len(source):]}}}")
            continue
        for r in names:
            print(f"  {r['url']}")


# --------------------------------------------------------------------------- render

def _dot_id(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(graph: Graph, expand: set[str]) -> str:
    """Graphviz text: one box per rule (with its job count) unless expanded, raw inputs grouped by their
    directory or URL host, the file itself at the bottom."""
    def job_node(job) -> str:
        return job.label if job.rule in expand else job.rule

    counts = defaultdict(int)
    for job in graph.jobs.values():
        counts[job_node(job)] += 1
    raw_groups = defaultdict(int)

    def raw_node(path: str) -> str:
        f = graph.files[path]
        where = re.sub(r"^(https?://[^/]+).*$", r"\1", f.url) if f.url else os.path.dirname(f.path) or "."
        return f"raw: {where}"

    edges = set()
    for job in graph.jobs.values():
        for p in job.inputs:
            f = graph.files[p]
            src = graph.jobs[f.job] if f.job else None
            if src is not None and not f.raw:
                edges.add((job_node(src), job_node(job)))
            else:
                name = raw_node(p)
                raw_groups[name] += 1
                edges.add((name, job_node(job)))
    root = graph.files[graph.root]
    lines = ["digraph lineage {", "  rankdir=TB; node [fontname=Helvetica, fontsize=10];"]
    for name, n in sorted(raw_groups.items()):
        lines.append(f"  {_dot_id(name)} [shape=folder, style=filled, fillcolor=\"#e8f0fe\", "
                     f"label={_dot_id(f'{name} ({n} reads)')}];")
    for name, n in sorted(counts.items()):
        label = name if n == 1 else f"{name} x{n}"
        lines.append(f"  {_dot_id(name)} [shape=box, style=rounded, label={_dot_id(label)}];")
    lines.append(f"  {_dot_id(root.path)} [shape=note, style=filled, fillcolor=\"#fff4d6\"];")
    if root.job:
        edges.add((job_node(graph.jobs[root.job]), root.path))
    lines += [f"  {_dot_id(a)} -> {_dot_id(b)};" for a, b in sorted(edges) if a != b]
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_mermaid(dot: str) -> str:
    """The same graph as a Mermaid flowchart (GitHub and GitLab draw it in Markdown)."""
    ids: dict[str, str] = {}

    def mid(name: str) -> str:
        return ids.setdefault(name, f"n{len(ids)}")

    out = ["flowchart TB"]
    for line in dot.splitlines():
        m = re.match(r'\s*"((?:[^"\\]|\\.)*)" -> "((?:[^"\\]|\\.)*)";', line)
        if m:
            out.append(f"  {mid(m.group(1))} --> {mid(m.group(2))}")
            continue
        m = re.match(r'\s*"((?:[^"\\]|\\.)*)" \[.*label="((?:[^"\\]|\\.)*)"', line)
        if m:
            label = m.group(2).replace('"', "'")
            out.insert(1, f'  {mid(m.group(1))}["{label}"]')
        else:
            m = re.match(r'\s*"((?:[^"\\]|\\.)*)" \[shape=note', line)
            if m:
                out.insert(1, f'  {mid(m.group(1))}[/"{m.group(1)}"/]')
    return "\n".join(out) + "\n"


def cmd_lineage_render(a) -> None:
    graph = _graph_of(a.file)
    dot = render_dot(graph, set(a.expand))
    out = Path(a.output)
    suffix = out.suffix.lower()
    if suffix == ".dot":
        out.write_text(dot, encoding="utf-8")
    elif suffix == ".mmd":
        out.write_text(render_mermaid(dot), encoding="utf-8")
    elif suffix in (".svg", ".png", ".pdf"):
        exe = shutil.which("dot")
        if exe is None:
            raise SystemExit("lineage render: Graphviz's `dot` is not installed (Debian: apt-get install graphviz); "
                             "-o FILE.dot or FILE.mmd need nothing")
        proc = subprocess.run([exe, f"-T{suffix[1:]}", "-o", str(out)], input=dot, text=True, capture_output=True)
        if proc.returncode:
            raise SystemExit(f"lineage render: dot failed: {proc.stderr.strip()}")
    else:
        raise SystemExit(f"lineage render: {out}: give a .dot, .mmd, .svg, .png or .pdf file")
    print(f"wrote {out} ({len(graph.jobs)} jobs, {len(graph.files)} files)", file=sys.stderr)
