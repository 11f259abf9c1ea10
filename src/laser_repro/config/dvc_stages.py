"""dvc.yaml of a config: four coarse DVC stages, each one Snakemake target (data -> models -> evaluate ->
tables), whose outputs are the directories that stage writes for this config's models, of every family.

DVC needs every listed output and parameter to exist, so the stages depend on the config: a run with a
LASER model versions its binarized bitexts and BPE model, one with models of the other families their
N-way data's subword models and vocabularies, both their models (``results/<run>/models``: every
family's training outputs), evaluations (``results/<run>/eval``: every model's task scores and the
baselines; LASER's Tatoeba scores and metrics) and tables. Each directory is written by one stage only
(the ones Snakemake writes on the way, corpora and tokenised text, are not versioned). ``laser-repro
dvc-yaml --configfile CONFIG`` writes it; the repository's ``dvc.yaml`` is that of ``config/small.yaml``.
"""
from __future__ import annotations

from pathlib import Path

from laser_repro.models import registry

HEADER = """\
# DVC versions the pipeline's artifacts in four coarse stages; Snakemake does the work inside each
# (`snakemake <target>`: data, models, evaluate, tables) and decides job by job what to rerun.
# Written for {config} by `laser-repro dvc-yaml --configfile {config}`: the outputs of each stage are
# those of this config's models (of every family), so another config gets its own file (rerun the command).
# `profile` and `snakemake_args` below may be edited.
# Every stage depends on the code and the config file: DVC reruns a stage when anything might matter,
# and Snakemake then reruns only the jobs whose code, parameters or inputs changed. `params` name the
# config sections each stage reads (`dvc params diff`).
# DVC restores files with new mtimes; `laser-repro sync-mtimes` (first in every stage, and to run
# after `dvc pull` before calling Snakemake yourself) gives every output whose content matches its
# provenance record its recorded mtime back, so Snakemake does not rerun what DVC restored.
"""

STAGE_TARGETS = {"data": "data", "train": "models", "evaluate": "evaluate", "tables": "tables"}


def stage_outputs(plan) -> dict[str, list[str]]:
    """stage -> the paths (relative to the working directory) it writes and DVC versions, for ``plan``
    (a :class:`laser_repro.config.plan.Plan`)."""
    run = plan.config["run_name"]
    results = f"results/{run}"
    data = []
    if plan.laser:
        if plan.laser_setup.data["subword"]["kind"] == "spm":  # the SentencePiece model, its vocabulary and sample's statistics
            data += [f"{results}/bin", *(f"{results}/spm/spm.{ext}{prov}" for ext in ("model", "vocab", "json")
                                         for prov in ("", ".prov.json"))]
        else:
            data += [f"{results}/bin", f"{results}/bpe/codes", f"{results}/bpe/codes.prov.json", f"{results}/bpe/vocab"]
    # the subword models and vocabularies of the N-way data, by the families that read them (rule `data`), as
    # each declares (laser_repro.models.declaration: data_dir)
    kinds = [registry.declaration(f).data_dir for f in registry.FAMILIES if f != "laser"]
    used = {(m["data"], registry.declaration(m["family"]).data_dir) for m in plan.family_entries.values()}
    data += [f"{results}/nway/{name}/{kind}" for name in plan.nway_data for kind in dict.fromkeys(kinds)
             if (name, kind) in used]
    evaluate = [f"{results}/eval"]
    if plan.laser:
        evaluate = [f"{results}/tatoeba", *evaluate, f"{results}/metrics"]
    return {"data": data, "train": [f"{results}/models"], "evaluate": evaluate,
            "tables": [f"results/tables/{run}", f"results/figures/{run}", f"results/reports/{run}.html"]}


def stage_params(config: dict) -> dict[str, list[str]]:
    """stage -> the config sections it reads that this config has (``config``: as the user wrote it,
    validated: :func:`laser_repro.config.schema.validate`)."""
    return {"data": [k for k in ("corpora", "bitext_data", "nway_data") if config.get(k)],
            "train": [k for k in ("models", "seeds") if config.get(k)],
            "evaluate": [k for k in ("evaluation", "flores_eval") if config.get(k)],
            "tables": [k for k in ("reproduces",) if config.get(k)]}


def dvc_document(config: dict, plan, config_path: str, *, profile: str = "profiles/local",
                 snakemake_args: str = "") -> dict:
    """The dvc.yaml of ``config`` (validated; ``plan`` its Plan) read from ``config_path``."""
    outs = stage_outputs(plan)
    params = stage_params(config)
    snakemake = "snakemake --profile ${profile} --configfile ${config} ${snakemake_args}"
    sync = "laser-repro sync-mtimes results"
    stages, previous = {}, []  # every stage depends on the outputs of the stages before it
    for stage, target in STAGE_TARGETS.items():
        cmd = f"{sync} && {snakemake} {target}"
        if stage == "tables":  # the HTML report beside the tables
            cmd += (f" && mkdir -p results/reports && {snakemake} {target} --report "
                    f"results/reports/{plan.config['run_name']}.html")
        body = {"cmd": cmd, "deps": ["${config}", *previous, "workflow", "src/laser_repro"]}
        if params[stage]:
            body["params"] = [{"${config}": params[stage]}]
        # persist: DVC does not delete a stage's outputs before it runs, so Snakemake reruns only what changed
        # and an interrupted training resumes from its checkpoints
        body["outs"] = [{path: {"persist": True}} for path in outs[stage]]
        if stage == "evaluate" and plan.laser:  # the headline numbers per variant (`dvc metrics show`)
            body["outs"].append({f"results/{plan.config['run_name']}/metrics.json.prov.json": {"cache": False}})
            body["metrics"] = [{f"results/{plan.config['run_name']}/metrics.json": {"cache": False}}]
        stages[stage] = body
        previous += [p for p in outs[stage] if not p.endswith(".prov.json")]
        if stage == "evaluate" and plan.laser:
            previous.append(f"results/{plan.config['run_name']}/metrics.json")
    return {"vars": [{"config": config_path, "profile": profile, "snakemake_args": snakemake_args}],
            "stages": stages}


def dvc_yaml_text(config: dict, plan, config_path: str, **kwargs) -> str:
    import yaml

    document = dvc_document(config, plan, config_path, **kwargs)
    return HEADER.format(config=config_path) + yaml.safe_dump(document, sort_keys=False, width=120)


def cmd_dvc_yaml(a) -> None:
    from laser_repro.config import load
    from laser_repro.config.plan import Plan
    from laser_repro.core.textio import atomic_output

    config = load(a.configfile)
    text = dvc_yaml_text(config, Plan(config), a.configfile, profile=a.profile, snakemake_args=a.snakemake_args)
    if a.output == "-":
        print(text, end="")
        return
    with atomic_output(Path(a.output), "w") as f:
        f.write(text)


def add_cli(sub) -> None:
    s = sub.add_parser("dvc-yaml", help="the dvc.yaml of a config: data, train, evaluate and tables stages whose "
                                        "outputs are those of its models, of every family")
    s.add_argument("--configfile", required=True, help="the run's config (as given to snakemake --configfile)")
    s.add_argument("--profile", default="profiles/local", help="the Snakemake profile the stages run with")
    s.add_argument("--snakemake-args", default="", help='further Snakemake arguments, e.g. "--config data_root=..."')
    s.add_argument("--output", default="dvc.yaml", help="where to write it (- for stdout)")
    s.set_defaults(func=cmd_dvc_yaml)
