"""The similarity error of Schwenk & Douze 2017 (Algorithm 1) on N-way validation text, for any model
family, with its two baselines on the same sentences -- the model at update 0 and character n-gram
TF-IDF -- and the learning curves of a multienc run.

Every ordered pair of languages is scored (laser_repro.models.similarity.similarity_error_matrix, the
implementation behind FLORES xsim too). The texts are the model's own input (BPE'd with its codes),
``<data_dir>/<split>.<lang>``; the TF-IDF baseline reads the raw lines.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from laser_repro.core.textio import iter_lines, read_json, write_json
from laser_repro.evaluation.xsim import tfidf_error_matrix
from laser_repro.models import registry
from laser_repro.models.similarity import similarity_error_matrix

log = logging.getLogger("laser_repro")


def embed_languages(encoder_path, data_dir, split: str, langs: Sequence[str]) -> dict[str, np.ndarray]:
    """Embeddings of ``<data_dir>/<split>.<lang>`` for every language, with the encoder of any family."""
    from laser_repro.models import registry

    encoder = registry.load_encoder(encoder_path)
    return {lang: encoder.embed(list(iter_lines(Path(data_dir) / f"{split}.{lang}")), lang) for lang in langs}


def evaluate(encoder, init_encoder, data_dir, split: str, langs: Sequence[str]) -> dict:
    """``{"similarity": matrix, "init": matrix}`` (see similarity_error_matrix)."""
    out = {}
    for name, path in (("similarity", encoder), ("init", init_encoder)):
        if path:
            out[name] = similarity_error_matrix(embed_languages(path, data_dir, split, langs), langs)
            log.info("%s (%s): mean similarity error %.2f%% over %d ordered pairs, %d sentences", name, path,
                     out[name]["mean"], len(out[name]["pairs"]), out[name]["sentences"])
    return out


def baseline_level(rows: Sequence[Mapping], tfidf: Mapping) -> float:
    """The baseline's mean error over the ordered pairs the curves score (a Bi-Sent2Vec pair model, a 1:1
    system without an encoder for its target: not every pair of the data)."""
    scored = {p for r in rows for p in r.get("pairs", {})} & set(tfidf.get("pairs", {}))
    return float(np.mean([tfidf["pairs"][p] for p in scored])) if scored else float(tfidf["mean"])


def kept_row(rows: Sequence[Mapping], family: str) -> Mapping:
    """The curves' row of the model the family keeps (laser_repro.models.declaration: kept)."""
    last = registry.declaration(family).kept == "last"
    return rows[-1] if last else min(rows, key=lambda r: r["valid_similarity_error"])


def plot_curves(rows: Sequence[Mapping], out_png, *, title: str, tfidf: Mapping | None = None,
                family: str = "multienc") -> None:
    """Two panels over updates: training and validation loss; the validation similarity error (mean
    over ordered pairs, and per source language), the TF-IDF baseline dashed, the kept update marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from laser_repro.core.textio import atomic_output

    declared = registry.declaration(family)  # the loss, what an update is, the model kept
    if not rows:
        raise ValueError(f"{out_png}: no validation in the learning curves")
    updates = [r["update"] for r in rows]
    fig, (ax_loss, ax_sim) = plt.subplots(1, 2, figsize=(11, 4))
    ax_loss.plot(updates, [r.get("train_loss", float("nan")) for r in rows], marker=".", label="training batches")
    ax_loss.plot(updates, [r["valid_loss"] for r in rows], marker=".", label="validation lines")
    ax_loss.set_xlabel(declared.update_label)
    ax_loss.set_title(declared.loss_label[0])
    ax_loss.set_ylabel(declared.loss_label[1])
    ax_loss.legend()
    ax_sim.plot(updates, [r["valid_similarity_error"] for r in rows], color="black", linewidth=2, marker=".",
                label="mean over ordered pairs")
    langs = sorted({p.split("-")[0] for r in rows for p in r.get("pairs", {})})
    for lang in langs:
        ax_sim.plot(updates, [np.mean([v for p, v in r["pairs"].items() if p.startswith(f"{lang}-")]) for r in rows],
                    linewidth=0.8, label=f"{lang} → others")
    if tfidf:
        ax_sim.axhline(baseline_level(rows, tfidf), color="grey", linestyle="--", label="TF-IDF (no learning)")
    kept = kept_row(rows, family)
    ax_sim.axvline(kept["update"], color="grey", linestyle=":", label=f"kept (update {kept['update']})")
    ax_sim.set_ylim(0, 100)
    ax_sim.set_xlabel(declared.update_label)
    ax_sim.set_ylabel("similarity error (%)")
    ax_sim.set_title("validation similarity error (Algorithm 1)")
    ax_sim.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_output(out_png, "wb") as f:
        fig.savefig(f, format="png", dpi=110)
    plt.close(fig)


# ---- command line ---------------------------------------------------------------------------------------
def cmd_similarity(a) -> None:
    import torch

    torch.set_num_threads(a.threads)
    write_json(a.output, evaluate(a.encoder, a.init_encoder, a.data_dir, a.split, a.langs))


def cmd_tfidf(a) -> None:
    if len(a.langs) != len(a.texts):
        raise SystemExit("nway-tfidf: give one --texts file per --langs language")
    lines = {lang: list(iter_lines(path)) for lang, path in zip(a.langs, a.texts)}
    write_json(a.output, tfidf_error_matrix(lines, a.langs))


def cmd_curves(a) -> None:
    rows = read_json(a.curves)
    plot_curves(rows, a.output, title=a.title, tfidf=read_json(a.tfidf) if a.tfidf else None, family=a.family)


def add_cli(sub) -> None:
    s = sub.add_parser("similarity", help="similarity error (Algorithm 1) of an encoder on N-way text, every ordered pair")
    s.add_argument("--encoder", required=True, help="an exported encoder of any family")
    s.add_argument("--init-encoder", help="baseline: the same model at update 0")
    s.add_argument("--data-dir", required=True, help="the model's input text: DIR/SPLIT.LANG, line-aligned")
    s.add_argument("--split", default="valid")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_similarity)

    s = sub.add_parser("nway-tfidf", help="the TF-IDF baseline's similarity error on raw N-way text")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--texts", nargs="+", required=True, help="raw lines, one file per language, line-aligned")
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_tfidf)

    s = sub.add_parser("nway-curves", help="plot the learning curves of a model of `models` (any family but laser)")
    s.add_argument("--curves", required=True, help="curves.json of the run")
    s.add_argument("--tfidf", help="the TF-IDF baseline on the same validation lines")
    s.add_argument("--title", required=True)
    s.add_argument("--family", choices=[f for f in registry.FAMILIES if f != "laser"], default="multienc",
                   help="the model's family (its loss, the model it keeps)")
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_curves)
