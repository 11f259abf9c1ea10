"""``laser-repro slurm-requests``: what each SLURM job of a run will ask for, before it is submitted.

Snakemake submits a *group* of jobs (the profile's ``groups`` and ``group-components``) as one allocation
whose time is the sum of its jobs' runtimes layer by layer (``GroupResources.basic_layered``: inside an
allocation the jobs run one after another, ``allocation_slots``) and whose memory and CPUs are the largest
job's. A group that chains many jobs can ask for many hours while each of its jobs needs minutes, and waits
in the queue (or exceeds the partition's limit) for it. This module runs the real Snakemake dry run of a
config under a profile and computes every submission's request with Snakemake's own group arithmetic: one
row per group (the largest of its allocations) and per ungrouped rule (its largest job).
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Request:
    name: str              # group id, or rule name of an ungrouped job
    kind: str              # "group" or "rule"
    submissions: int       # allocations (groups) or jobs (rules)
    jobs: int              # jobs in the largest allocation (1 for a rule)
    rules: list[str]
    runtime_min: int       # the largest allocation's time (sbatch -t)
    mem_mb: int
    cpus: int


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def collect(dag) -> list[Request]:
    """Every submission of a Snakemake DAG (after ``update_groups``), as the SLURM executor would make it."""
    from snakemake.resources import GroupResources

    groups, rules = {}, {}
    workflow = dag.workflow
    for job in dag.needrun_jobs():
        # a local rule (downloads) runs on the login node; a dry run is "local" as a whole, so ask the rule
        if job.rule.group is None and (job.rule.name in workflow._localrules or job.rule.norun):
            continue
        group = dag._group.get(job)
        if group is None:
            res = dict(job.resources.items())
            row = rules.setdefault(job.rule.name, Request(job.rule.name, "rule", 0, 1, [job.rule.name], 0, 0, 0))
            row.submissions += 1
            row.runtime_min = max(row.runtime_min, _int(res.get("runtime")))
            row.mem_mb = max(row.mem_mb, _int(res.get("mem_mb")))
            row.cpus = max(row.cpus, _int(res.get("cpus_per_task")) or _int(res.get("_cores")))
            continue
        if id(group) in groups:
            continue
        # as a submitted (not local) group job computes them
        res = GroupResources.basic_layered(toposorted_jobs=group.toposorted, constraints=group.global_resources,
                                           run_local=False, additive_resources=["runtime"], sortby=["runtime"])
        groups[id(group)] = (group, res)
    by_id: dict[str, Request] = {}
    for group, res in groups.values():
        row = by_id.setdefault(group.groupid, Request(group.groupid, "group", 0, 0, [], 0, 0, 0))
        row.submissions += 1
        row.rules = sorted(set(row.rules) | {j.rule.name for j in group.jobs})
        if _int(res.get("runtime")) >= row.runtime_min:
            row.jobs = len(group.jobs)
        row.runtime_min = max(row.runtime_min, _int(res.get("runtime")))
        row.mem_mb = max(row.mem_mb, _int(res.get("mem_mb")))
        row.cpus = max(row.cpus, _int(res.get("cpus_per_task")) or _int(res.get("_cores")))
    return sorted(by_id.values(), key=lambda r: r.name) + sorted(rules.values(), key=lambda r: r.name)


def dry_run_requests(snakemake_args: list[str]) -> list[Request]:
    """The requests of ``snakemake -n SNAKEMAKE_ARGS`` (a profile with groups, a config, targets), computed
    in this process from the DAG Snakemake builds."""
    import snakemake.cli  # noqa: F401  (imports snakemake.dag in the order it needs)
    from snakemake import dag as dag_module

    found: list[list[Request]] = []
    update_groups = dag_module.DAG.update_groups

    def capture(self):
        update_groups(self)
        found.append(collect(self))

    dag_module.DAG.update_groups = capture
    try:
        from snakemake.cli import main

        try:
            main([*snakemake_args, "-n", "--quiet"])
        except SystemExit as done:
            if done.code not in (0, None):
                raise RuntimeError(f"snakemake {' '.join(snakemake_args)} -n failed (exit {done.code})") from None
    finally:
        dag_module.DAG.update_groups = update_groups
    if not found:
        raise RuntimeError("snakemake built no DAG (nothing to run?)")
    return found[-1]


def render(requests: list[Request], limit_min: int | None = None) -> str:
    lines = ["| submission | kind | submissions | jobs in the largest | time (sbatch -t) | memory | CPUs | rules |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in requests:
        time = f"{r.runtime_min // 60} h {r.runtime_min % 60:02d} min"
        flag = " **over**" if limit_min is not None and r.runtime_min > limit_min else ""
        lines.append(f"| {r.name} | {r.kind} | {r.submissions} | {r.jobs} | {time}{flag} | {r.mem_mb / 1000:g} GB | "
                     f"{r.cpus} | {', '.join(r.rules)} |")
    return "\n".join(lines)


def cmd_slurm_requests(a) -> None:
    # the user's arguments first: --configfile and --config take several values
    args = [*(a.snakemake_args or []), "-s", str(Path(a.snakefile)), "--profile", a.profile, "--configfile", a.configfile]
    if a.directory:
        args += ["--directory", a.directory]
    requests = dry_run_requests(args)
    print(render(requests, a.limit_min), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps([asdict(r) for r in requests], indent=1) + "\n", encoding="utf-8")
    over = [r.name for r in requests if a.limit_min is not None and r.runtime_min > a.limit_min]
    if over:
        print(f"slurm-requests: {len(over)} submission(s) ask for more than {a.limit_min} min: {', '.join(over)}",
              file=sys.stderr)
        raise SystemExit(1)


def add_cli(sub) -> None:
    s = sub.add_parser("slurm-requests", help="what every SLURM job of a run asks for (groups included), from a dry run")
    s.add_argument("--profile", required=True, help="Snakemake profile directory, e.g. profiles/slurm")
    s.add_argument("--configfile", required=True, help="the run's config, e.g. config/paper.yaml")
    s.add_argument("--snakefile", default="workflow/Snakefile")
    s.add_argument("--directory", help="Snakemake's working directory (default: here)")
    s.add_argument("--limit-min", type=int, help="exit 1 naming every submission that asks for more minutes")
    s.add_argument("--json", help="also write the requests to this JSON file")
    s.add_argument("snakemake_args", nargs="*", help="further Snakemake arguments and targets after --, e.g. -- data --config data_root=DIR")
    s.set_defaults(func=cmd_slurm_requests)
