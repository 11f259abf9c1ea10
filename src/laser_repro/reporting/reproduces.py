"""What a run reproduces (config ``reproduces``): per headline claim of the four papers, the paper's
direction and numbers beside ours -- two models of the run compared on the held-out FLORES lines, mean ±
sample sd over the seed replicates -- and a verdict: agrees, disagrees or inconclusive at this scale.

:data:`CLAIMS` is the catalog: claim id -> paper, statement and where the paper prints the two settings'
numbers (rows and a column of the project's paper-value files, read here: never typed in). Our measure
differs from every paper's (Tatoeba error, UN / Tatoeba accuracy, word translation P@1): held-out FLORES
xsim error averaged over both directions and the languages both models have, so only the direction is
compared. A claim's ``better`` side is the setting the paper's statement calls better.

Inputs per model: a LASER variant's ``flores-xsim`` scores or another family's ``similarity`` scores (read
as :mod:`laser_repro.reporting.compare` reads them), per seed, with the Snakemake benchmark (column ``s``)
of its training job and, for a pre-trained LaBSE model, of its pre-training (counted once: the seeds share it).

The paper values and the table's files (Markdown, CSV and LaTeX beside the Markdown) come from
:mod:`laser_repro.reporting.paper_table`.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from typing import Mapping, NamedTuple, Sequence

from laser_repro.core.textio import read_json
from laser_repro.models.record import add_model_records_option, require_model_records
from laser_repro.reporting import compare, seeds
from laser_repro.reporting.paper_table import Document, Grid, csv_frame, read_paper_values, write_files

#: a model "learned" when its error is more than this many points below its error at update 0
INIT_MARGIN = 2.0
#: a difference counts when it exceeds this many standard errors
SE_MULTIPLE = 2.0
VERDICTS = ("agrees", "disagrees", "inconclusive")


@dataclass(frozen=True)
class Evidence:
    """Where a paper prints the two settings of a claim: ``values`` names the paper-value file
    (:data:`PAPER_VALUE_FILES`), the rows of the better and worse setting, and the column."""
    values: str
    table: int
    better_row: str
    worse_row: str
    column: str
    measure: str  # what the column measures, with its unit
    higher_is_better: bool


@dataclass(frozen=True)
class Claim:
    paper: str
    statement: str  # the paper's direction: the better setting first
    evidence: tuple[Evidence, ...]
    stated: str = ""  # where the paper states a claim it gives no numbers for (a proposed next step)


CLAIMS: dict[str, Claim] = {
    "laser_depth": Claim("Artetxe & Schwenk 2019 (LASER)", "3 encoder layers better than 1", (
        Evidence("laser_ablations", 5, "layers=3", "layers=1", "tatoeba_error", "Tatoeba error (%)", False),)),
    "sd_encoder": Claim("Schwenk & Douze 2017", "BiLSTM max-pool encoder better than LSTM last state (1:1)", (
        Evidence("schwenk_douze_2017", 2, "t2.bilstm1x512.efsra-z", "t2.lstm3x512.efsra-z", "efsra",
                 "similarity error efsra (%)", False),)),
    "sd_paths": Claim("Schwenk & Douze 2017", "1:N training (into every language) better than 1:1 (BiLSTM)", (
        Evidence("schwenk_douze_2017", 2, "t2.bilstm1x512.efsraz-all", "t2.bilstm1x512.efsra-z", "efsra",
                 "similarity error efsra (%)", False),)),
    "labse_margin": Claim("Feng et al. 2020 (LaBSE)", "additive margin softmax better than no margin", (
        Evidence("labse_2020", 2, "t2.custom.ams", "t2.mbert.base", "tatoeba_all", "Tatoeba accuracy (%)", True),)),
    "labse_pretraining": Claim("Feng et al. 2020 (LaBSE)", "MLM + TLM pre-training better than none (AMS)", (
        Evidence("labse_2020", 2, "t2.custom.ams_pt", "t2.custom.ams", "tatoeba_all", "Tatoeba accuracy (%)", True),)),
    "b2v_bigrams": Claim("Sabet et al. 2019 (Bi-Sent2Vec)", "uni. + bi. better than uni. (NN retrieval)", (
        Evidence("bisent2vec_2019", 1, "t1.bis2v.uni_bi.nn", "t1.bis2v.uni.nn", "avg",
                 "word translation P@1 (%)", True),
        Evidence("bisent2vec_2019", 3, "t3.bis2v.uni_bi.nn", "t3.bis2v.uni.nn", "avg",
                 "sentence retrieval P@1 (%)", True))),
    # the paper's last proposed step, without numbers: only ours. "disagrees": the language-agnostic vocabulary
    # loses against the paper's; "inconclusive": no difference beyond the seeds' spread
    "laser_subwords": Claim("Artetxe & Schwenk 2019 (LASER)",
                            "language-agnostic SentencePiece (LASER2's normalisation) better than Moses + BPE", (),
                            stated="TACL 2019 Section 6 (Conclusions): \"we would like to replace our "
                                   "language-dependant preprocessing with a language-agnostic approach like "
                                   "SentencePiece\""),
}


# ---- the paper's numbers -----------------------------------------------------------------------------------
#: a claim's paper-value file -> (folder of laser_repro/paper_values, file)
PAPER_VALUES = {"laser_ablations": ("laser_2019", "paper_tables5_7_ablations.csv"),
                "schwenk_douze_2017": ("schwenk_douze_2017", "schwenk_douze_2017.csv"),
                "labse_2020": ("labse_2020", "labse_2020.csv"),
                "bisent2vec_2019": ("bisent2vec_2019", "bisent2vec_2019.csv")}


def _paper_lines(values: str) -> dict[tuple[int, str, str], tuple[str, str]]:
    """(table, row, column) -> (value as printed, source) of one paper-value file."""
    if values not in PAPER_VALUES:
        raise ValueError(f"unknown paper-value file {values!r}")
    lines = read_paper_values(*PAPER_VALUES[values])
    if values == "laser_ablations":  # rows are settings, columns metrics
        return {(int(r["table"]), r["setting"], r["metric"]): (r["value"], r["source"]) for r in lines}
    return {(int(r["table"]), r["row_id"], r["column"]): (r["value"], r["source"]) for r in lines}


PAPER_VALUE_FILES = tuple(PAPER_VALUES)


class PaperNumber(NamedTuple):
    value: float
    source: str


def paper_number(values: str, table: int, row: str, column: str) -> PaperNumber:
    """One number of a paper's table and where it is printed; ValueError when the file has none there."""
    printed, source = _paper_lines(values).get((table, row, column), ("", ""))
    if printed in ("", None):
        raise ValueError(f"paper values {values}: no number in Table {table}, row {row!r}, column {column!r}")
    return PaperNumber(float(printed), source)


def paper_evidence(claim_id: str) -> list[dict]:
    """The paper's numbers of a claim, one entry per table: ``{"table", "measure", "better", "worse"
    (PaperNumber), "direction"}``; direction "as claimed", "opposite" or "equal"."""
    out = []
    for e in CLAIMS[claim_id].evidence:
        better = paper_number(e.values, e.table, e.better_row, e.column)
        worse = paper_number(e.values, e.table, e.worse_row, e.column)
        gain = (better.value - worse.value) * (1 if e.higher_is_better else -1)
        out.append({"table": e.table, "measure": e.measure, "better": better, "worse": worse,
                    "direction": "as claimed" if gain > 0 else "opposite" if gain < 0 else "equal"})
    return out


def paper_direction(evidence: Sequence[Mapping]) -> str:
    """"as claimed" when every table shows the claim's direction, "opposite" when none does, else "mixed";
    "no numbers" for a claim the paper states without (a proposed next step)."""
    if not evidence:
        return "no numbers"
    directions = {e["direction"] for e in evidence}
    return directions.pop() if len(directions) == 1 else "mixed"


# ---- ours --------------------------------------------------------------------------------------------------
class Spread(NamedTuple):
    """A value over seeds: mean, sample sd (None with one seed), number of seeds."""
    mean: float
    sd: float | None
    n: int


def spread(values: Sequence[float]) -> Spread:
    merged = seeds.seed_mean(list(values))
    if isinstance(merged, seeds.SeedMean):
        return Spread(float(merged), merged.sd, merged.n)
    return Spread(float(merged), 0.0 if len(values) > 1 else None, len(values))  # every seed the same


def verdict(better: Spread, worse: Spread) -> tuple[float, float | None, str]:
    """(worse - better, its standard error, verdict): agrees when the difference is in the claim's direction
    (the better model's error lower) by more than SE_MULTIPLE standard errors, disagrees when it is the other
    way by as much, inconclusive otherwise -- also without two seeds on each side (no spread to judge by)."""
    difference = worse.mean - better.mean
    if better.sd is None or worse.sd is None:
        return difference, None, "inconclusive"
    se = math.sqrt(better.sd ** 2 / better.n + worse.sd ** 2 / worse.n)
    if difference > SE_MULTIPLE * se:
        return difference, se, "agrees"
    if difference < -SE_MULTIPLE * se:
        return difference, se, "disagrees"
    return difference, se, "inconclusive"


def learned(error: Spread, init: Spread) -> bool:
    """Whether a model is below its error at update 0 by more than INIT_MARGIN points."""
    return init.mean - error.mean > INIT_MARGIN


def _per_language(family: str, scores: Mapping, system: str, langs: Sequence[str]) -> dict[str, tuple]:
    got = {lang: compare.language_scores(family, scores, system, lang) for lang in langs}
    return {lang: v for lang, v in got.items() if v is not None}


def _side_seeds(side: Sequence[Mapping], langs: Sequence[str], what: str) -> dict[int, dict]:
    """seed -> {"model"|"init": {lang: (en_xx, xx_en, sentences)}, "seconds"} of one side of a claim: its
    models' scores merged (models of one language pair each, Bi-Sent2Vec) and their training times summed,
    for the seeds every model of the side has."""
    common = set.intersection(*(set(m["runs"]) for m in side))
    if not common:
        raise ValueError(f"{what}: its models {[m['name'] for m in side]} have no seed in common")
    out = {}
    for seed in sorted(common):
        merged: dict = {"model": {}, "init": {}, "seconds": 0.0}
        for m in side:
            run = m["runs"][seed]
            for system in ("model", "init"):
                got = _per_language(m["family"], run["scores"], system, langs)
                twice = set(got) & set(merged[system])
                if twice:
                    raise ValueError(f"{what}: {m['name']} scores {sorted(twice)} again (one model per language on a side)")
                merged[system].update(got)
            merged["seconds"] += run["seconds"]
        out[seed] = merged
    return out


def _mean_error(per_lang: Mapping[str, tuple], langs: Sequence[str]) -> float:
    return sum((per_lang[lang][0] + per_lang[lang][1]) / 2 for lang in langs) / len(langs)


def reproduce(claim_id: str, better: Sequence[Mapping], worse: Sequence[Mapping], tfidf: Mapping,
              langs: Sequence[str]) -> dict:
    """One claim's row. ``better`` / ``worse``: the models of each side, ``{"name", "family", "runs": {seed:
    {"scores": scores, "seconds": training seconds}}, "pretraining": None or {"id", "seconds"}}``;
    ``tfidf``: flores-tfidf scores of the same lines; ``langs``: the languages scored against English.
    Raises ValueError when the sides share no language or were scored on different numbers of sentences."""
    if claim_id not in CLAIMS:
        raise ValueError(f"unknown claim {claim_id!r} (known: {', '.join(CLAIMS)})")
    sides = {"better": _side_seeds(better, langs, f"{claim_id}.better"),
             "worse": _side_seeds(worse, langs, f"{claim_id}.worse")}
    shared = [lang for lang in langs
              if all(lang in run["model"] and lang in run["init"] for side in sides.values() for run in side.values())]
    if not shared:
        raise ValueError(f"{claim_id}: the two sides have no language in common among {list(langs)}")
    sizes = {(key, seed, system, lang): run[system][lang][2] for key, side in sides.items() for seed, run in side.items()
             for system in ("model", "init") for lang in shared}
    sizes.update({("TF-IDF", 0, "", lang): tfidf[compare.SPLIT][lang]["sentences"] for lang in shared})
    if len(set(sizes.values())) > 1:
        raise ValueError(f"{claim_id}: the models were scored on different numbers of sentences "
                         f"{sorted(set(sizes.values()))}: not the same held-out lines")
    evidence = paper_evidence(claim_id)
    row: dict = {"claim": claim_id, "paper": CLAIMS[claim_id].paper, "statement": CLAIMS[claim_id].statement,
                 "stated": CLAIMS[claim_id].stated, "evidence": evidence, "paper_direction": paper_direction(evidence), "languages": shared,
                 "sentences": next(iter(sizes.values())),
                 "tfidf": sum((tfidf[compare.SPLIT][lang]["en_xx"] + tfidf[compare.SPLIT][lang]["xx_en"]) / 2
                              for lang in shared) / len(shared)}
    for key, models in (("better", better), ("worse", worse)):
        runs = sides[key]
        row[key] = [m["name"] for m in models]
        row[f"{key}_error"] = spread([_mean_error(run["model"], shared) for run in runs.values()])
        row[f"{key}_init"] = spread([_mean_error(run["init"], shared) for run in runs.values()])
        pretrainings = {m["pretraining"]["id"]: m["pretraining"]["seconds"] for m in models if m.get("pretraining")}
        row[f"{key}_pretrain_s"] = sum(pretrainings.values())
        row[f"{key}_wall_s"] = sum(run["seconds"] for run in runs.values()) / len(runs) + row[f"{key}_pretrain_s"]
    row["difference"], row["se"], row["verdict"] = verdict(row["better_error"], row["worse_error"])
    row["at_init_level"] = [" + ".join(row[key]) for key in ("better", "worse")
                            if not learned(row[f"{key}_error"], row[f"{key}_init"])]
    return row


# ---- output ------------------------------------------------------------------------------------------------
def _spread_text(s: Spread) -> str:
    return f"{s.mean:.1f} (n={s.n})" if s.sd is None else f"{s.mean:.1f} ± {s.sd:.1f} (n={s.n})"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _number(value: float) -> str:
    return f"{value:g}"


def _verdict_text(row: Mapping) -> str:
    if len(row["at_init_level"]) == 2:
        return f"{row['verdict']}; both at init level"
    if row["at_init_level"]:
        return f"{row['verdict']}; {row['at_init_level'][0]} at init level"
    return row["verdict"]


CSV_FIELDS = ("claim", "paper", "statement", "paper_table", "paper_measure", "paper_better", "paper_worse",
              "paper_table_direction", "paper_direction", "paper_better_source", "paper_worse_source",
              "better", "worse", "languages", "sentences", "better_error", "better_error_sd", "better_n_seeds",
              "better_init", "better_init_sd", "worse_error", "worse_error_sd", "worse_n_seeds", "worse_init",
              "worse_init_sd", "difference", "difference_se", "verdict", "at_init_level", "tfidf_error",
              "better_wall_s", "better_pretrain_s", "worse_wall_s", "worse_pretrain_s")


def csv_lines(rows: Sequence[Mapping]) -> list[dict]:
    """One CSV line per claim and paper table (a claim's own numbers repeated on each)."""
    lines = []
    for r in rows:
        ours = {"claim": r["claim"], "paper": r["paper"], "statement": r["statement"],
                "paper_direction": r["paper_direction"], "better": " + ".join(r["better"]),
                "worse": " + ".join(r["worse"]), "languages": " ".join(r["languages"]), "sentences": r["sentences"],
                "difference": round(r["difference"], 4), "difference_se": None if r["se"] is None else round(r["se"], 4),
                "verdict": r["verdict"], "at_init_level": "; ".join(r["at_init_level"]),
                "tfidf_error": round(r["tfidf"], 4)}
        for key in ("better", "worse"):
            error, init = r[f"{key}_error"], r[f"{key}_init"]
            ours.update({f"{key}_error": round(error.mean, 4), f"{key}_error_sd": error.sd and round(error.sd, 4),
                         f"{key}_n_seeds": error.n, f"{key}_init": round(init.mean, 4),
                         f"{key}_init_sd": init.sd and round(init.sd, 4), f"{key}_wall_s": round(r[f"{key}_wall_s"], 2),
                         f"{key}_pretrain_s": round(r[f"{key}_pretrain_s"], 2)})
        for e in r["evidence"]:
            lines.append({**ours, "paper_table": e["table"], "paper_measure": e["measure"],
                          "paper_better": e["better"].value, "paper_worse": e["worse"].value,
                          "paper_table_direction": e["direction"], "paper_better_source": e["better"].source,
                          "paper_worse_source": e["worse"].source})
        if not r["evidence"]:  # a claim the paper gives no numbers for: ours alone, with where it is stated
            lines.append({**ours, "paper_better_source": r["stated"]})
    return lines


def write_table(rows: Sequence[Mapping], md_path, csv_path, *, run_name: str, heldout: Sequence[int],
                absent: Sequence[tuple[str, str]] = ()) -> None:
    """The table; ``absent``: (claim, why) of the configured claims not measured (another run's models not built)."""
    sources = []
    cells = []
    for r in rows:
        paper = []
        for e in r["evidence"]:
            sources += [e["better"].source, e["worse"].source]
            paper.append(f"Table {e['table']}: {_number(e['better'].value)} vs {_number(e['worse'].value)} "
                         f"{e['measure']} ({e['direction']})")
        se = "n/a (one seed)" if r["se"] is None else f"{r['se']:.1f}"
        wall = " / ".join(_duration(r[f"{k}_wall_s"]) + (f" (incl. {_duration(r[f'{k}_pretrain_s'])} pre-training)"
                                                           if r[f"{k}_pretrain_s"] else "") for k in ("better", "worse"))
        paper_cell = (f"{r['paper']}: {r['statement']}; {'; '.join(paper)}; paper: {r['paper_direction']}"
                      if paper else f"{r['paper']}: {r['statement']}; paper: {r['paper_direction']} ({r['stated']})")
        cells.append([f"**{r['claim']}** ({' '.join(r['languages'])})", paper_cell,
                      f"{' + '.join(r['better'])}: {_spread_text(r['better_error'])}",
                      f"{' + '.join(r['worse'])}: {_spread_text(r['worse_error'])}",
                      f"{_spread_text(r['better_init'])} / {_spread_text(r['worse_init'])}",
                      f"{r['difference']:+.1f} ± {se}", f"**{_verdict_text(r)}**", wall])
    tables = list(dict.fromkeys(f"{r['paper']} Table {e['table']}" for r in rows for e in r["evidence"]))
    title = f"What this run reproduces: run `{run_name}`"
    doc = Document(caption=f"{title}; the papers' tables: {', '.join(tables) or 'none'}")
    doc.add(f"# {title}\n\n",
            Grid.of(["claim", "paper (table: better vs worse setting)", "ours: better", "ours: worse",
                     "init: better / worse", "difference ± se", "verdict", "wall time per run: better / worse"],
                    cells, "lllllrll"))
    doc.add(f"\n**Ours**: held-out FLORES xsim error (%) on dev lines {heldout[0]}–{int(heldout[1]) - 1} (never "
            f"trained on; {str(rows[0]['sentences']) + ' sentences, the same for every model' if rows else 'no claim measured yet'}), the mean "
            f"of en→xx and xx→en over the languages both models of a claim have (listed beside the claim; a 1:1 model "
            f"has no encoder for its target language, a Bi-Sent2Vec model only its pair's), mean ± sample sd "
            f"over the training seeds (n). **init**: the same models at update 0. The papers measure "
            f"otherwise (LASER: Tatoeba error; Schwenk & Douze: similarity error on UN; LaBSE: Tatoeba "
            f"accuracy; Bi-Sent2Vec: word translation P@1), at far larger scale, so only the direction is "
            f"compared. **difference** = worse − better (positive: the claim's direction), se = "
            f"sqrt(sd_b²/n_b + sd_w²/n_w). **Verdict**: agrees when the difference is in the claim's "
            f"direction by more than {SE_MULTIPLE:g} se, disagrees when it is the other way by as much, "
            f"inconclusive otherwise (or with one seed); **at init level**: a model not more than "
            f"{INIT_MARGIN:g} points below its init (it did not learn at this scale). **paper**: as claimed / "
            f"opposite / mixed: the direction of the paper's own numbers. **Wall time**: the training job's "
            f"Snakemake benchmark, mean over seeds (the models of a side summed), plus a LaBSE pre-training "
            f"once (the seeds share it).\n")
    if absent:
        doc.add("\nNot measured:\n\n", *(f"- **{claim}**: {why}\n" for claim, why in absent))
    if sources:
        doc.add("\nPaper values:\n\n", *(f"- {source}\n" for source in dict.fromkeys(sources)))
    write_files(doc, csv_frame(csv_lines(rows), CSV_FIELDS), md_path, csv_path)


def read_benchmark_seconds(path: str) -> float:
    """The wall-clock seconds (column ``s``) of a Snakemake benchmark file; the mean with several repeats."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    try:
        values = [float(r["s"]) for r in rows]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: not a Snakemake benchmark file (a number in column 's' on every line)") from None
    if not values:
        raise ValueError(f"{path}: a Snakemake benchmark file without a line")
    return sum(values) / len(values)


def _load_side(entries: Sequence[Mapping], where: str) -> list[dict]:
    out = []
    for m in entries:
        runs = {}
        for run in m["runs"]:
            if run["seed"] in runs:
                raise ValueError(f"{where}: {m['name']} has seed {run['seed']} twice")
            runs[run["seed"]] = {"scores": read_json(run["scores"]), "seconds": read_benchmark_seconds(run["benchmark"])}
        pretraining = m.get("pretraining")
        out.append({"name": m["name"], "family": m["family"], "runs": runs,
                    "pretraining": pretraining and {"id": pretraining["id"],
                                                    "seconds": read_benchmark_seconds(pretraining["benchmark"])}})
    return out


def cmd_reproduces(a) -> None:
    import json

    require_model_records(a.model_records, "reproduces-table")
    tfidf = read_json(a.tfidf)
    rows = []
    try:
        for i, claim in enumerate(json.loads(a.claims)):
            where = f"--claims [{i}] ({claim.get('claim')})"
            rows.append(reproduce(claim["claim"], _load_side(claim["better"], f"{where}.better"),
                                  _load_side(claim["worse"], f"{where}.worse"), tfidf, a.langs))
    except (ValueError, KeyError) as err:
        raise SystemExit(f"reproduces-table: {err}") from None
    write_table(rows, a.md, a.csv, run_name=a.run_name, heldout=a.heldout, absent=a.absent or ())


def add_cli(sub) -> None:
    s = sub.add_parser("reproduces-table", help="per headline claim of the papers: theirs, ours over seeds, a verdict")
    s.add_argument("--claims", required=True,
                   help='JSON [{"claim": ID, "better": [MODEL, ...], "worse": [MODEL, ...]}, ...], MODEL: {"name", '
                        '"family", "runs": [{"seed", "scores": JSON, "benchmark": TSV}, ...], "pretraining": null or '
                        '{"id", "benchmark": TSV}}; the claim ids of laser_repro.reporting.reproduces.CLAIMS')
    add_model_records_option(s)
    s.add_argument("--tfidf", required=True, help="flores-tfidf scores of the same held-out lines")
    s.add_argument("--langs", nargs="+", required=True, help="the languages scored against English")
    s.add_argument("--heldout", nargs=2, type=int, required=True)
    s.add_argument("--run-name", required=True)
    s.add_argument("--absent", nargs=2, action="append", metavar=("CLAIM", "WHY"),
                   help="a configured claim not measured and why (listed under the table); repeatable")
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.set_defaults(func=cmd_reproduces)
