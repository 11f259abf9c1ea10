"""The compute budget of a config before launch: ``laser-repro budget --configfile FILE``.

For every training target (LASER variants, multienc models, LaBSE pre-trainings and dual encoders,
Bi-Sent2Vec models): the GPUs it asks for, the work (pairs / lines / sequences / words), GPU-hours and
wall time at the throughput of ``data/throughput.csv`` (each figure marked measured or estimated, with
its source; one row per family x stage x GPU x precision), the SLURM attempts at the profile's time
limit, and warnings where a job cannot finish or its checkpoint interval exceeds an attempt.

Corpus sizes (LASER pairs, multienc lines, Bi-Sent2Vec words): ``--corpus-sizes`` (YAML ``{target:
count}``), else the binarized data of a run whose data stage ran (LASER), else the size a paper states
for that run (``data/paper_training_sizes.csv``, marked), else unknown.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Optional

import yaml

#: the workers stop this long before the time limit (laser-repro train --stop-before-limit's default)
STOP_MARGIN_S = 300


def _rows(name: str) -> list[dict]:
    with resources.files("laser_repro.data").joinpath(name).open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def throughput_table() -> list[dict]:
    rows = _rows("throughput.csv")
    for r in rows:
        r["rate"] = float(r["rate"])
        if r["status"] not in ("measured", "estimated"):
            raise ValueError(f"throughput.csv: {r['family']}/{r['stage']}/{r['gpu']}: status {r['status']!r}")
    return rows


def pick_throughput(family: str, stage: str, gpu: Optional[str], precision: str,
                    batch_tokens: Optional[int] = None) -> tuple[dict, list[str]]:
    """The figure for ``family``/``stage`` on ``gpu`` in ``precision`` (and, for LASER, at ``batch_tokens``
    tokens per GPU, which moves its speed by up to 2x on an H200); when there is none, the closest row
    and a note saying what it stands in for. Without ``gpu``, the family's first GPU in the table, for every
    stage of the family (its pre-training and its training are then estimated on the same GPU)."""
    table = [r for r in throughput_table() if r["family"] == family]
    rows = [r for r in table if r["stage"] == stage]
    if not rows:
        raise ValueError(f"throughput.csv has no figure for {family}/{stage}")
    notes = []
    if gpu is None:
        gpu = table[0]["gpu"]
        notes.append(f"{gpu}: the first GPU of {family}'s figures (--gpu to choose another)")
    on_gpu = [r for r in rows if r["gpu"] == gpu]
    if not on_gpu:
        on_gpu = rows
        notes.append(f"no {family}/{stage} figure for {gpu}: using {rows[0]['gpu']}'s")
    exact = [r for r in on_gpu if r["precision"] == precision]
    if not exact:
        notes.append(f"no {precision} figure: using {on_gpu[0]['precision']}'s")
    candidates = exact or [r for r in on_gpu if r["precision"] == on_gpu[0]["precision"]]
    sized = [r for r in candidates if r.get("batch_tokens")]
    if batch_tokens is None or not sized:
        return candidates[0], notes
    best = min(sized, key=lambda r: (abs(int(r["batch_tokens"]) - batch_tokens), int(r["batch_tokens"])))
    if int(best["batch_tokens"]) != batch_tokens:
        notes.append(f"no figure at {batch_tokens} tokens per GPU: using {best['batch_tokens']}'s")
    return best, notes


def paper_size(run_name: str, family: str, quantity: str) -> Optional[dict]:
    return next((r for r in _rows("paper_training_sizes.csv") if r["run_name"] == run_name
                 and r["family"] == family and r["quantity"] == quantity), None)


@dataclass
class Estimate:
    target: str
    family: str
    stage: str
    gpus: int
    work: Optional[float]          # units of the throughput figure (pairs, lines, sequences, words)
    unit: str
    work_source: str
    figure: dict
    parallel: int                  # GPUs, or CPU threads for Bi-Sent2Vec
    runtime_min: Optional[int] = None
    attempts: int = 1
    cost_factor: float = 1.0       # LaBSE progressive stacking: shallower models early on
    save_interval_h: Optional[float] = None
    notes: list = field(default_factory=list)

    @property
    def wall_h(self) -> Optional[float]:
        if self.work is None:
            return None
        return self.work * self.cost_factor / (self.figure["rate"] * self.parallel) / 3600

    @property
    def gpu_hours(self) -> Optional[float]:
        return None if self.wall_h is None else self.wall_h * self.gpus

    @property
    def attempts_needed(self) -> Optional[int]:
        if self.wall_h is None or not self.runtime_min:
            return None
        usable_h = (self.runtime_min * 60 - STOP_MARGIN_S) / 3600
        return math.ceil(self.wall_h / usable_h) if usable_h > 0 else None

    def warnings(self) -> list[str]:
        out = []
        need = self.attempts_needed
        if need is not None and need > self.attempts:
            out.append(f"cannot finish: needs {need} attempts of {self.runtime_min} min, the profile allows "
                       f"{self.attempts} (retries + 1): raise `retries` or the time limit, or add GPUs")
        if self.save_interval_h is not None and self.runtime_min:
            usable_h = (self.runtime_min * 60 - STOP_MARGIN_S) / 3600
            if self.save_interval_h > usable_h:
                out.append(f"train.save_interval_updates stands for {self.save_interval_h:.1f} h, longer than an "
                           f"attempt ({usable_h:.1f} h usable): no interval checkpoint would ever be written")
            elif self.save_interval_h > 1.5:
                out.append(f"train.save_interval_updates stands for {self.save_interval_h:.1f} h: a node failure "
                           f"loses that much; lower it")
        return out


def _profile(profile_dir: Optional[Path]) -> dict:
    from laser_repro.core.slurm import read_profile

    return {} if profile_dir is None else read_profile(profile_dir)[1]


def _laser_pairs(run_dir: Path, pairs) -> Optional[int]:
    """Sentence pairs of the binarized training data (the data stage ran), else None."""
    from laser_repro.models.laser.fairseq_bridge import binarized_sentences

    total = 0
    for src, tgt in pairs:
        idx = run_dir / "bin" / f"train.{src}-{tgt}.{src}.idx"
        if not idx.is_file():
            return None
        total += binarized_sentences(idx)
    return total


def estimate(config: dict, *, profile: dict, gpu: Optional[str] = None,
             corpus_sizes: Optional[dict] = None, results_dir: Path = Path("results")) -> list[Estimate]:
    """One :class:`Estimate` per training target of a validated config."""
    from laser_repro.config import Plan

    plan, sizes = Plan(config), dict(corpus_sizes or {})
    run_name = config["run_name"]
    set_resources = profile.get("set-resources") or {}
    attempts = int(profile.get("retries", 0)) + 1

    def runtime(rule):
        return (set_resources.get(rule) or {}).get("runtime") or (profile.get("default-resources") or {}).get("runtime")

    def size(target, family, quantity, from_data=None):
        if target in sizes:
            return float(sizes[target]), "--corpus-sizes"
        if from_data is not None:
            return float(from_data), "the data stage's output"
        row = paper_size(run_name, family, quantity)
        if row is not None:
            return float(row["value"]), f"the paper's stated size ({row['source']})"
        return None, "unknown until the data stage ran (or give --corpus-sizes)"

    out = []
    if plan.laser:
        base_pairs = set(plan.base.pairs)
        for name, variant in plan.variants.items():
            train = plan.variant_train(name)  # another LASER model's own
            figure, notes = pick_throughput("laser", "train", gpu, train.get("precision", "fp32"),
                                            train.get("max_tokens"))
            data = _laser_pairs(results_dir / run_name, variant.pairs)
            n, source = size(name, "laser", "pairs", data)
            if n is not None and data is None and "paper" in source and set(variant.pairs) != base_pairs:
                n, source = None, "unknown until the data stage ran (the paper states only the full data's size)"
            est = Estimate(name, "laser", "train", train["gpus"], None if n is None else n * train["max_epoch"],
                           "pairs", f"{train['max_epoch']} epochs x {source}", figure, max(train["gpus"], 1),
                           runtime("laser_train"), attempts, notes=notes)
            interval = train.get("save_interval_updates")
            tokens = paper_size(run_name, "laser", "tokens_per_pair")
            if interval and tokens is not None:
                pairs_per_h = figure["rate"] * max(train["gpus"], 1) * 3600
                updates_per_h = pairs_per_h * float(tokens["value"]) / train["tokens_per_update"]
                est.save_interval_h = interval / updates_per_h
                est.notes.append(f"checkpoint every {interval} updates = {est.save_interval_h:.2f} h "
                                 f"(~{updates_per_h:,.0f} updates/h at {tokens['value']} tokens per pair, {tokens['status']})")
            elif not interval:
                est.notes.append("no train.save_interval_updates: checkpoints at epoch ends only")
            subword = plan.laser_setup.data["subword"]
            if subword["kind"] == "spm":  # before training, once per run: rule spm_learn, on CPUs
                from laser_repro.data.spm import learn_resources

                need = learn_resources(subword)
                est.notes.append(f"before it, SentencePiece learning (rule spm_learn, {subword['threads']} CPU threads, "
                                 f"{subword['sample_sentences']:,} sampled lines): requested {need['runtime']} min, "
                                 f"{need['mem_mb'] / 1000:.1f} GB (laser_repro.data.spm.learn_resources)")
            out.append(est)
    for name, model in plan.multienc.items():
        train = model["train"]
        figure, notes = pick_throughput("multienc", "train", gpu, train.get("precision", "fp32"))
        n, source = size(name, "multienc", "lines")
        work = None if n is None else n * train["max_epoch"]
        if train.get("max_update"):
            cap = train["max_update"] * train["batch_size"]
            work, source = (cap, f"max_update x batch_size") if work is None or cap < work else (work, source)
        out.append(Estimate(name, "multienc", "train", train["gpus"], work, "lines",
                            f"up to {train['max_epoch']} epochs x {source}", figure, max(train["gpus"], 1),
                            runtime("multienc_train"), attempts, notes=notes))
    if plan.labse:
        from laser_repro.models.labse.trainer import STACKING

        for key, name in plan.labse_pretrainings.items():
            pre = plan.labse[name]["pretrain"]
            figure, notes = pick_throughput("labse", "pretrain", gpu, pre.get("precision", "fp32"))
            factor = 1.0
            if pre["progressive_stacking"]:  # L/4, L/2, L layers for their shares of the updates
                factor = sum(share / div for div, share in STACKING) / sum(share for _, share in STACKING)
                notes.append(f"progressive stacking: {factor:.2f} of the full-depth cost")
            out.append(Estimate(f"pretrain {key} ({name})", "labse", "pretrain", pre["gpus"],
                                pre["batch_size"] * pre["max_update"], "sequences", "batch_size x max_update",
                                figure, max(pre["gpus"], 1), runtime("labse_pretrain"), attempts,
                                cost_factor=factor, notes=notes))
        for name, model in plan.labse.items():
            train = model["train"]
            figure, notes = pick_throughput("labse", "dual", gpu, train.get("precision", "fp32"))
            out.append(Estimate(name, "labse", "dual", train["gpus"], train["batch_size"] * train["max_update"],
                                "pairs", "batch_size x max_update", figure, max(train["gpus"], 1),
                                runtime("labse_train"), attempts, notes=notes))
    for name, model in plan.bisent2vec.items():
        train = model["train"]
        figure, notes = pick_throughput("bisent2vec", "train", None, "fp32")
        threads = train["threads"] or int(profile.get("cores") or 1)
        n, source = size(name, "bisent2vec", "words")
        out.append(Estimate(name, "bisent2vec", "train", 0, None if n is None else n * train["epochs"], "words",
                            f"{train['epochs']} epochs x {source}", figure, threads,
                            runtime("bisent2vec_train"), attempts,
                            notes=notes + [f"CPU, {threads} hogwild threads (scaling measured up to 2)"]))
    return out


def _num(x: Optional[float], fmt: str = "{:,.0f}") -> str:
    return "unknown" if x is None else fmt.format(x)


def render(estimates: list[Estimate], *, source: str, profile_dir) -> str:
    lines = [f"Compute budget of {source} (profile: {profile_dir or 'none'}; "
             f"throughputs: laser_repro/data/throughput.csv)", ""]
    header = ["target", "family", "GPUs", "work", "GPU-h", "wall h", "limit", "attempts"]
    rows = []
    for e in estimates:
        limit = f"{e.runtime_min / 60:.0f} h" if e.runtime_min else "none"
        need = e.attempts_needed
        rows.append([e.target, f"{e.family}/{e.stage}", str(e.gpus) if e.gpus else "0 (CPU)",
                     f"{_num(e.work)} {e.unit}", _num(e.gpu_hours) if e.gpus else "-",
                     _num(e.wall_h, "{:,.1f}"), limit,
                     f"{_num(need)} of {e.attempts}" if e.runtime_min else "-"])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for r in [header, ["-" * w for w in widths], *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    lines.append("")
    figures = []
    for e in estimates:
        if e.figure not in figures:
            figures.append(e.figure)
    for i, f in enumerate(figures, 1):
        lines.append(f"[{i}] {f['family']}/{f['stage']}: {f['rate']:,.0f} {f['unit']} on {f['gpu']} {f['precision']} "
                     f"({f['status']}: {f['source']})")
    lines.append("")
    for e in estimates:
        lines.append(f"{e.target}: {e.work_source}; throughput [{figures.index(e.figure) + 1}]")
        for note in e.notes:
            lines.append(f"  note: {note}")
        for warning in e.warnings():
            lines.append(f"  WARNING: {warning}")
    return "\n".join(lines) + "\n"


def main(args) -> None:
    from laser_repro.config import ConfigError, load

    try:
        config = load(args.configfile)
    except ConfigError as err:
        raise SystemExit(str(err)) from None
    sizes = None
    if args.corpus_sizes:
        sizes = yaml.safe_load(Path(args.corpus_sizes).read_text(encoding="utf-8"))
        if not isinstance(sizes, dict) or not all(isinstance(v, (int, float)) and v >= 0 for v in sizes.values()):
            raise SystemExit(f"{args.corpus_sizes}: expected a mapping target -> count (pairs, lines or words)")
    profile_dir = None if args.profile == "none" else Path(args.profile)
    estimates = estimate(config, profile=_profile(profile_dir), gpu=args.gpu, corpus_sizes=sizes,
                         results_dir=Path(args.results))
    print(render(estimates, source=" + ".join(map(str, args.configfile)), profile_dir=profile_dir), end="")


def add_cli(sub) -> None:
    s = sub.add_parser("budget", help="GPUs, work, GPU-hours, wall time and SLURM attempts of every training "
                                      "target of a config, before launch")
    s.add_argument("--configfile", "--config-file", required=True, nargs="+",
                   help="a run config, or several merged in order (as snakemake --configfile A B)")
    s.add_argument("--profile", default="profiles/slurm",
                   help="Snakemake profile directory: time limits (runtime) and retries; 'none': no limits")
    s.add_argument("--gpu", default=None, help="GPU type of the throughput figures (default: each family's first GPU in throughput.csv, for all its stages)")
    s.add_argument("--corpus-sizes", default=None, metavar="YAML",
                   help="{target: count}: LASER pairs, multienc lines, Bi-Sent2Vec words per epoch")
    s.add_argument("--results", default="results", help="results directory of a run whose data stage ran")
    s.set_defaults(func=main)
