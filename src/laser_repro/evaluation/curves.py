"""The learning curves of a LASER training (:mod:`laser_repro.models.laser.curves`, read with its
``read_curves``) as a figure: :func:`plot_curves`."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np


def plot_curves(rows: Sequence[Mapping], out_png, *, title: str, baselines: Optional[Mapping] = None) -> None:
    """Two panels over updates: train-sample / held-out loss, and held-out xsim error per language
    (mean of both directions); epoch ends are marked. ``baselines``: {label: {lang: error}} drawn
    as dashed lines of the language's colour (e.g. the TF-IDF baseline on the same lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from laser_repro.core.textio import atomic_output

    if not rows:
        raise ValueError(f"{out_png}: no learning-curve measurements")
    updates = [r["update"] for r in rows]
    fig, (ax_loss, ax_sim) = plt.subplots(1, 2, figsize=(11, 4))
    ax_loss.plot(updates, [r["train_loss"] for r in rows], marker=".", label="training sample")
    if any("heldout_loss" in r for r in rows):
        ax_loss.plot(updates, [r.get("heldout_loss", float("nan")) for r in rows], marker=".", label="held out (sample)")
    valid = [r for r in rows if "valid_loss" in r]
    if valid:
        ax_loss.plot([r["update"] for r in valid], [r["valid_loss"] for r in valid], linestyle="none", marker="x",
                     color="black", label="held out, all pairs (early stopping)")
    ax_loss.set_xlabel("updates")
    ax_loss.set_ylabel("cross-entropy (bits / target token)")
    ax_loss.set_title("translation loss (eval mode)")
    ax_loss.legend()
    langs = sorted({lang for r in rows for lang in r.get("xsim", {})})
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, lang in enumerate(langs):
        colour = colours[k % len(colours)]
        errs = [np.mean([r["xsim"][lang]["en_xx"], r["xsim"][lang]["xx_en"]]) if lang in r.get("xsim", {})
                else float("nan") for r in rows]
        ax_sim.plot(updates, errs, marker=".", color=colour, label=f"{lang}")
        train_errs = [np.mean([r["xsim_train"][lang]["en_xx"], r["xsim_train"][lang]["xx_en"]])
                      if lang in r.get("xsim_train", {}) else float("nan") for r in rows]
        if not all(np.isnan(train_errs)):
            ax_sim.plot(updates, train_errs, linestyle=":", color=colour)
        for label, values in (baselines or {}).items():
            if lang in values:
                ax_sim.axhline(values[lang], color=colour, linestyle="--", linewidth=0.8)
    if any("xsim_train" in r for r in rows):
        ax_sim.plot([], [], color="grey", linestyle=":", label="training lines (same count)")
    if baselines:
        ax_sim.plot([], [], color="grey", linestyle="--", label=" / ".join(baselines) + " (held-out lines)")
    ax_sim.set_ylim(0, 100)
    ax_sim.set_xlabel("updates")
    ax_sim.set_ylabel("xsim error vs English (%), mean of both directions")
    ax_sim.set_title("FLORES similarity search: held-out lines (solid)")
    if langs:
        ax_sim.legend(fontsize=8)
    for ax in (ax_loss, ax_sim):
        for r in rows:
            if r.get("end_of_epoch"):
                ax.axvline(r["update"], color="lightgrey", linewidth=0.6, zorder=0)
            if r.get("kept"):
                ax.axvline(r["update"], color="black", linestyle=":", linewidth=1.0, zorder=0)
    if any(r.get("kept") for r in rows):
        ax_loss.plot([], [], color="black", linestyle=":", label="model kept (lowest held-out loss)")
        ax_loss.legend()
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_output(out_png, "wb") as out:
        fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
