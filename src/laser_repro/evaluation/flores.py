"""FLORES-200 similarity search (xsim) against English, as LASER's ``xsim`` on FLORES-200, on lines held
out of training and on a same-size sample of training lines, with the two baselines beside the model:
a character n-gram TF-IDF (no learning) and the same encoder at its initialization (0 updates).

Line ``i`` of every FLORES file is the same sentence, so the held-out lines (config
``flores_eval.heldout_lines``) and the training sample are the same line numbers in every language.
The training sample is drawn (seeded) from the lines outside the held-out range: for a language the
model was trained on, those are sentences it has seen (memorization); the held-out ones it has not
(generalization). For a zero-shot language both are unseen.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from laser_repro.core import languages
from laser_repro.core.textio import atomic_output, iter_lines
from laser_repro.evaluation.xsim import tfidf_error
from laser_repro.models.similarity import xsim_error

SPLITS = ("heldout", "sample")
SPLIT_TITLES = {"heldout": "held-out lines", "sample": "training lines"}
PIVOT = "eng"


def split_line_numbers(n_lines: int, heldout: Sequence[int], sample_size: int, seed: int) -> dict[str, list[int]]:
    """0-based line numbers of the held-out range and of the seeded training sample (both sorted)."""
    start, stop = int(heldout[0]), int(heldout[1])
    if not 0 <= start < stop <= n_lines:
        raise ValueError(f"held-out lines [{start}, {stop}) do not fit a file of {n_lines} lines")
    outside = [i for i in range(n_lines) if not start <= i < stop]
    size = min(int(sample_size), len(outside))
    return {"heldout": list(range(start, stop)), "sample": sorted(random.Random(seed).sample(outside, size))}


def select_lines(raw_path, outputs: Mapping[str, str | Path], *, heldout: Sequence[int], sample_size: int,
                 seed: int) -> dict[str, int]:
    """Write the held-out lines and the training sample of one FLORES file (``outputs``: split -> path)."""
    lines = list(iter_lines(raw_path))
    try:
        numbers = split_line_numbers(len(lines), heldout, sample_size, seed)
    except ValueError as err:
        raise ValueError(f"{raw_path}: {err} (flores_eval.heldout_lines)") from None
    for split, path in outputs.items():
        with atomic_output(path) as out:
            for i in numbers[split]:
                out.write(lines[i] + "\n")
    return {split: len(numbers[split]) for split in outputs}


def _read(path) -> list[str]:
    return list(iter_lines(path))


def evaluate_encoders(encoders: Mapping[str, str | Path], bpe_dir, langs: Sequence[str], *, max_tokens: int = 12000
                      ) -> dict:
    """xsim of every language against English for each encoder (``{"model": path, "init": path}``) on
    both splits. BPE files: ``<bpe_dir>/<split>.<lang>``. Returns ``{encoder: {split: {lang: errors}}}``."""
    from laser_repro.models.laser.encoder import SentenceEncoder

    bpe_dir = Path(bpe_dir)
    out: dict = {}
    for name, path in encoders.items():
        encoder = SentenceEncoder.load(path)
        out[name] = {}
        for split in SPLITS:
            eng = encoder.embed(_read(bpe_dir / f"{split}.{PIVOT}"), max_tokens=max_tokens)
            out[name][split] = {}
            for lang in langs:
                xx = encoder.embed(_read(bpe_dir / f"{split}.{lang}"), max_tokens=max_tokens)
                out[name][split][lang] = _rates(xsim_error(xx, eng))
    return out


def evaluate_tfidf(raw_dir, langs: Sequence[str]) -> dict:
    """The TF-IDF baseline on the raw (not tokenized) lines: ``{split: {lang: errors}}``."""
    raw_dir = Path(raw_dir)
    out: dict = {}
    for split in SPLITS:
        eng = _read(raw_dir / f"{split}.{PIVOT}")
        out[split] = {lang: _rates(tfidf_error(_read(raw_dir / f"{split}.{lang}"), eng)) for lang in langs}
    return out


def _rates(err: Mapping) -> dict:
    return {"en_xx": round(err["en_xx_error"], 2), "xx_en": round(err["xx_en_error"], 2),
            "sentences": err["test_sentences"]}


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(np.mean(values)), 2) if values else None


def table_rows(scores: Mapping, tfidf: Mapping, trained: set[str]) -> list[dict]:
    """One row per language: ours, TF-IDF and random-init errors (both directions) on both splits."""
    rows = []
    langs = list(scores["model"]["heldout"])
    for code in langs:
        lang = languages.get(code)
        row = {"language": code, "name": lang.name, "script": lang.script,
               "trained": "yes" if code in trained else "zero-shot"}
        for split in SPLITS:
            for system, values in (("ours", scores["model"][split]), ("tfidf", tfidf[split]),
                                   ("init", scores["init"][split])):
                for direction in ("en_xx", "xx_en"):
                    row[f"{split}_{system}_{direction}"] = values[code][direction]
            row[f"{split}_sentences"] = scores["model"][split][code]["sentences"]
        rows.append(row)
    return rows


def average_rows(rows: Sequence[dict]) -> list[dict]:
    """Averages over the trained languages, the Latin-script trained ones and the zero-shot ones."""
    groups = [("trained languages", lambda r: r["trained"] == "yes"),
              ("trained, Latin script", lambda r: r["trained"] == "yes" and r["script"] == "Latn"),
              ("zero-shot languages", lambda r: r["trained"] != "yes")]
    out = []
    keys = [k for k in (rows[0] if rows else {}) if k.startswith(SPLITS) and not k.endswith("sentences")]
    for label, keep in groups:
        members = [r for r in rows if keep(r)]
        if not members:
            continue
        avg = {"language": "avg", "name": f"{label} ({len(members)})", "script": "", "trained": ""}
        avg.update({k: _mean(r[k] for r in members) for k in keys})
        out.append(avg)
    return out


# ---- command line ---------------------------------------------------------------------------------------
def cmd_select(a):
    for lang, raw in zip(a.lang, a.raw):
        outputs = {split: Path(a.dest) / f"{split}.{lang}" for split in SPLITS}
        counts = select_lines(raw, outputs, heldout=a.heldout, sample_size=a.sample, seed=a.seed)
        print(f"{raw}: {counts}")


def cmd_xsim(a):
    import torch

    from laser_repro.core.textio import write_json

    torch.set_num_threads(a.threads)
    write_json(a.output, evaluate_encoders({"model": a.encoder, "init": a.init_encoder}, a.bpe_dir, a.langs,
                                           max_tokens=a.max_tokens))


def cmd_tfidf(a):
    from laser_repro.core.textio import write_json

    write_json(a.output, evaluate_tfidf(a.raw_dir, a.langs))


def cmd_curves_plot(a):
    from laser_repro.evaluation.curves import plot_curves
    from laser_repro.models.laser.curves import read_curves
    from laser_repro.core.textio import read_json

    rows = read_curves(a.curves)
    baselines = {}
    if a.tfidf:
        tfidf = read_json(a.tfidf)["heldout"]
        baselines["TF-IDF"] = {lang: (v["en_xx"] + v["xx_en"]) / 2 for lang, v in tfidf.items()}
    plot_curves(rows, a.png, title=a.title, baselines=baselines)


def add_cli(sub) -> None:
    s = sub.add_parser("flores-select", help="held-out lines and the training-line sample of FLORES files")
    s.add_argument("--lang", nargs="+", required=True)
    s.add_argument("--raw", nargs="+", required=True, help="one FLORES file per --lang")
    s.add_argument("--heldout", nargs=2, type=int, required=True, metavar=("START", "STOP"))
    s.add_argument("--sample", type=int, required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--dest", required=True, help="writes DEST/heldout.LANG and DEST/sample.LANG")
    s.set_defaults(func=cmd_select)

    s = sub.add_parser("flores-xsim", help="xsim vs English of an encoder and its initialization")
    s.add_argument("--encoder", required=True)
    s.add_argument("--init-encoder", required=True)
    s.add_argument("--bpe-dir", required=True, help="holds heldout.LANG and sample.LANG (BPE)")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--max-tokens", type=int, default=12000)
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_xsim)

    s = sub.add_parser("flores-tfidf", help="the character n-gram TF-IDF baseline on the same FLORES lines")
    s.add_argument("--raw-dir", required=True)
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_tfidf)

    s = sub.add_parser("curves-plot", help="learning-curve figure of one training run")
    s.add_argument("--curves", required=True)
    s.add_argument("--tfidf", help="flores TF-IDF scores: dashed baselines on the xsim panel")
    s.add_argument("--title", required=True)
    s.add_argument("--png", required=True)
    s.set_defaults(func=cmd_curves_plot)
