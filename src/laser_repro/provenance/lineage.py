"""The lineage walk (``laser-repro lineage tree FILE``): the provenance sidecars followed back from a file to
the raw downloads, checking each file's current sha256 against the recorded ones, and its rendering as
an indented tree."""
from __future__ import annotations

import json
import os
from pathlib import Path

from laser_repro.provenance._common import _display, _own_key, _resolve, read_sidecar, rel_key, sidecar_path
from laser_repro.provenance.records import _Hasher

#: top-level directories of the workflow root that hold only files the workflow makes: a file there
#: without a record of its own is an unrecorded output, never a raw input
WORKFLOW_OUTPUT_DIRS = ("results",)


def _workflow_output(key: str) -> bool:
    """Whether a recorded path (relative to the workflow root, or absolute) is under WORKFLOW_OUTPUT_DIRS."""
    return not os.path.isabs(key) and key.replace(os.sep, "/").split("/", 1)[0] in WORKFLOW_OUTPUT_DIRS


def lineage_tree(path: Path | str, *, max_depth: int | None = None, rehash: bool = False) -> dict:
    """The provenance tree of `path` as nested dicts, and a summary.

    Node: path, sha256 (current; null when absent), recorded_sha256 (what the consumer, or for the
    root its own sidecar, recorded), rule (null without a record of its own), raw, recorded (has a
    record of its own), url, status (ok | changed | missing | no record), inputs (child nodes), and
    ``ref: true`` on a file already shown above (no inputs repeated).

    A raw file is a declared input of the workflow: a download (its own record lists no inputs), a
    file without record whose consumer recorded its public URL (``sources``), or a file without
    record outside the workflow's output directories (WORKFLOW_OUTPUT_DIRS, e.g. data_root files
    without a public URL, such as MLDoc). Any other file without a record of its own is flagged with
    status `no record`: a workflow output (under results/) that has no sidecar, or whose sidecar is
    unreadable or is not the record of that file. Status is `changed` when the current sha256 differs
    from a recorded one (the consumer's or its own sidecar's; this wins over `no record`), or when an
    absent file's sidecar disagrees with what its consumer recorded.
    """
    hasher = _Hasher(use_cache=not rehash)
    seen: set[str] = set()  # expanded in full
    nodes: set[str] = set()
    urls: dict[str, str] = {}
    changed: set[str] = set()
    raw: set[str] = set()
    unrecorded: set[str] = set()

    def node(abs_path: str, edge: dict | None, url: str | None, depth: int, key: str | None = None) -> dict:
        rec = read_sidecar(abs_path)
        own = _own_key(abs_path, rec) if rec else None
        own_entry = rec["outputs"][own[0]] if own else None
        current = hasher(abs_path, own_entry)
        recorded = [e["sha256"] for e in (edge, own_entry) if e and e.get("sha256")]
        if current is None:
            status = "changed" if len(set(recorded)) > 1 else "missing"
        else:
            status = "changed" if any(r != current for r in recorded) else "ok"
        if url is None and rec and own:
            url = (rec.get("sources") or {}).get(own[0])
        url = urls.setdefault(abs_path, url) if url else urls.get(abs_path)  # also on back-references
        if own is not None:
            is_raw, no_record = not rec.get("inputs"), False
        elif os.path.exists(sidecar_path(abs_path)):  # a sidecar, but not this file's record
            is_raw, no_record = False, True
        elif url:
            is_raw, no_record = True, False
        else:
            no_record = _workflow_output(key if key is not None else rel_key(abs_path))
            is_raw = not no_record
        if no_record and status != "changed":
            status = "no record"
        n = {"path": _display(abs_path), "sha256": current,
             "recorded_sha256": recorded[0] if recorded else None,
             "rule": rec.get("rule") if own else None, "raw": is_raw, "recorded": own is not None, "url": url,
             "status": status}
        nodes.add(abs_path)
        if status == "changed":
            changed.add(abs_path)
        if is_raw:
            raw.add(abs_path)
        if no_record:
            unrecorded.add(abs_path)
        if abs_path in seen:
            n["ref"] = True
            return n
        if own is not None and not is_raw and max_depth is not None and depth >= max_depth:
            n["truncated"] = len(rec["inputs"])  # not marked seen: a shallower path may show it in full
            return n
        seen.add(abs_path)
        if own is None or is_raw:
            return n
        root = own[1]
        sources = rec.get("sources") or {}
        n["inputs"] = [node(_resolve(k, root), e, sources.get(k), depth + 1, k)
                       for k, e in sorted(rec["inputs"].items())]
        return n

    tree = node(os.path.abspath(os.fspath(path)), None, None, 0)
    return {"tree": tree, "summary": {"nodes": len(nodes), "raw": len(raw), "changed": len(changed),
                                      "unrecorded": len(unrecorded)}}


def format_lineage(result: dict) -> str:
    """The tree as indented text, one line per node, and the summary line."""
    lines: list[str] = []

    def label(n: dict) -> str:
        sha = n["sha256"] or n["recorded_sha256"]
        if not n["raw"] and not n.get("recorded", True):
            what = f"{(sha or '-')[:12]}  (no provenance record)"
        elif n["raw"] and n["rule"] is None:
            what = f"raw {n['url'] or '(no URL recorded)'}  sha256={sha or '-'}"
        elif n["raw"]:
            what = f"{n['rule']} (raw) {n['url'] or '(no URL recorded)'}  sha256={sha or '-'}"
        else:
            what = f"{(sha or '-')[:12]}  {n['rule']}"
        extra = ""
        if n.get("ref"):
            extra = "  … see above"
        elif n.get("truncated"):
            extra = f"  … {n['truncated']} input(s) below --max-depth"
        return f"{n['path']}  {what}  [{n['status']}]{extra}"

    def walk(n: dict, prefix: str, tail: str) -> None:
        lines.append(prefix + label(n))
        kids = n.get("inputs") or []
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            walk(kid, tail + ("└── " if last else "├── "), tail + ("    " if last else "│   "))

    walk(result["tree"], "", "")
    s = result["summary"]
    lines.append(f"{s['nodes']} nodes, {s['raw']} raw files, {s['changed']} changed, "
                 f"{s.get('unrecorded', 0)} without a record")
    return "\n".join(lines)


def cmd_lineage(a) -> None:
    if read_sidecar(os.path.abspath(a.file)) is None:
        raise SystemExit(f"lineage: {a.file} has no provenance sidecar {sidecar_path(a.file)}")
    result = lineage_tree(a.file, max_depth=a.max_depth, rehash=a.rehash)
    if a.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(format_lineage(result))
    if result["summary"]["changed"] or result["summary"]["unrecorded"]:
        raise SystemExit(1)
