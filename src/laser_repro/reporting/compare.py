"""One FLORES similarity table for models of different families trained on the same split
(``config/compare.yaml``): per language, each model's xsim against English on the held-out FLORES
lines, beside the non-learned TF-IDF baseline and each model at its random initialization, all on
exactly the same sentences.

Inputs: a LASER variant's ``flores-xsim`` scores (``{"model"|"init": {"heldout": {lang: {en_xx,
xx_en, sentences}}}}``) and the ``similarity`` scores of a model of another family (multienc, labse):
``{"similarity"|"init": similarity_error_matrix}``, whose ``eng-xx`` / ``xx-eng`` pairs are the same two directions).

The table (Markdown, CSV and LaTeX beside the Markdown) is written by :mod:`laser_repro.reporting.paper_table`.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from laser_repro.core import languages
from laser_repro.core.textio import read_json
from laser_repro.models.record import add_model_records_option, require_model_records
from laser_repro.reporting import seeds
from laser_repro.reporting.paper_table import Document, Grid, csv_frame, write_files

PIVOT = "eng"
SPLIT = "heldout"


def _from_laser(scores: Mapping, system: str, lang: str) -> tuple[float, float, int]:
    v = scores[system][SPLIT][lang]
    return v["en_xx"], v["xx_en"], v["sentences"]


def _from_matrix(matrix: Mapping, lang: str) -> tuple[float, float, int] | None:
    pairs = matrix["pairs"]
    there, back = f"{PIVOT}-{lang}", f"{lang}-{PIVOT}"
    if there not in pairs or back not in pairs:
        return None  # no encoder for the language (a fixed target of a 1:1 system)
    return round(pairs[there], 2), round(pairs[back], 2), matrix["sentences"]


def language_scores(family: str, scores: Mapping, system: str, lang: str) -> tuple[float, float, int] | None:
    """(en→xx, xx→en, sentences) of one language of a model's scores (``system``: "model" or "init"),
    a LASER variant's flores-xsim scores or another family's similarity scores; None when the model has no
    encoder for the language."""
    if family == "laser":
        return _from_laser(scores, system, lang)
    return _from_matrix(scores["similarity" if system == "model" else "init"], lang)


def compare_rows(models: Mapping[str, tuple[str, Mapping]], tfidf: Mapping, langs: Sequence[str]) -> list[dict]:
    """One row per language: ``<model>`` and ``<model> init`` (en→xx, xx→en) for every model
    (``name -> (family, scores)``), and TF-IDF. Raises when the models were not scored on the same
    number of sentences (then they were not scored on the same sentences)."""
    rows = []
    for lang in langs:
        row: dict = {"language": lang, "name": languages.get(lang).name}
        sizes = {}
        for name, (family, scores) in models.items():
            for system, suffix in (("model", ""), ("init", " init")):
                got = language_scores(family, scores, system, lang)
                row[f"{name}{suffix}"] = None if got is None else got[:2]
                if got is not None:
                    sizes[f"{name}{suffix}"] = got[2]
        v = tfidf[SPLIT][lang]
        row["TF-IDF"] = (v["en_xx"], v["xx_en"])
        sizes["TF-IDF"] = v["sentences"]
        if len(set(sizes.values())) > 1:
            raise ValueError(f"{lang}: the systems were scored on different numbers of sentences {sizes}: "
                             "not the same held-out lines")
        row["sentences"] = next(iter(sizes.values()))
        rows.append(row)
    return rows


def _mean_row(rows: Sequence[dict], columns: Sequence[str]) -> dict:
    out: dict = {"language": "avg", "name": f"{len(rows)} languages"}
    for col in columns:
        values = [r[col] for r in rows if r.get(col) is not None]
        out[col] = (round(sum(v[0] for v in values) / len(values), 2),
                    round(sum(v[1] for v in values) / len(values), 2)) if len(values) == len(rows) else None
    return out


def write_table(rows: list[dict], models: Mapping[str, Mapping], md_path, csv_path, *, run_name: str,
                heldout: Sequence[int], seed_rows: Sequence[list[dict]] = ()) -> None:
    """``models``: name -> {"family", "description"} in column order. ``seed_rows``: the rows of every further
    seed of the models (config `seeds`): each cell, the average row's too, becomes mean ± sd over the seeds."""
    columns = [c for name in models for c in (name, f"{name} init")] + ["TF-IDF"]
    every = seeds.over_seeds([[_mean_row(r, columns), *r] for r in [rows, *seed_rows]])
    fields = ["language", "system", "en_xx", "xx_en", "sentences"]
    lines = [{"language": r["language"], "system": col, "en_xx": None if r.get(col) is None else r[col][0],
              "xx_en": None if r.get(col) is None else r[col][1], "sentences": r.get("sentences", "")}
             for r in every for col in columns]
    lines, fields = seeds.seed_columns(lines, fields)
    fmt = lambda v: "–" if v is None else f"{v[0]:.1f} / {v[1]:.1f}"  # noqa: E731
    title = f"Model families on the same data: FLORES-200 xsim against English, run `{run_name}`"
    doc = Document(caption=f"{title} (the models of several papers on the same sentences; not a table of a paper)")
    doc.add(f"# {title}\n\n",
            f"Error (%) `en→xx / xx→en`: share of the held-out FLORES dev lines {heldout[0]}–{int(heldout[1]) - 1} "
            f"(never trained on; the same sentences for every system) whose nearest neighbour (cosine) "
            f"in the other language is not their translation. Every model trained on the other lines of the "
            f"same FLORES files. **init**: the same model at update 0 (same seed); **TF-IDF**: character "
            f"1–4-gram TF-IDF of the raw sentences (no learning). –: the model has no encoder for the "
            f"language (a fixed target of a 1:1 system, a pair without a Bi-Sent2Vec model).\n\n")
    doc.add(*(f"- **{name}** ({m['family']}): {m.get('description') or name}\n" for name, m in models.items()))
    if seeds.has_replicates(every):
        doc.add(f"\n{seeds.NOTE}\n")
    cells = []
    for r in every:
        bold = "**" if r["language"] == "avg" else ""
        cells.append([f"{bold}{r['language']}{bold}", r["name"], *(fmt(r.get(c)) for c in columns)])
    doc.add("\n", Grid.of(["lang", "name", *columns], cells, "ll" + "r" * len(columns)))
    write_files(doc, csv_frame(lines, fields), md_path, csv_path)


def _named(items: Sequence[str], option: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"{option} {item!r}: expected NAME=JSON")
        out.setdefault(name, []).append(path)
    return out


def merge_matrices(scores: Sequence[Mapping], paths: Sequence[str]) -> dict:
    """One column from the models of one language pair each (Bi-Sent2Vec, as its paper reports them): the
    union of their similarity (and init) pairs, which must not overlap, on the same number of sentences."""
    out: dict = {}
    for system in ("similarity", "init"):
        pairs: dict = {}
        sentences = {s[system]["sentences"] for s in scores}
        if len(sentences) > 1:
            raise SystemExit(f"compare-flores: {', '.join(paths)} were scored on different numbers of sentences")
        for score, path in zip(scores, paths):
            twice = set(pairs) & set(score[system]["pairs"])
            if twice:
                raise SystemExit(f"compare-flores: {path} scores {sorted(twice)} again (one model per pair in a column)")
            pairs.update(score[system]["pairs"])
        out[system] = {"pairs": pairs, "sentences": sentences.pop()}
    return out


def cmd_compare(a) -> None:
    import json

    require_model_records(a.model_records, "compare-flores")
    listed = json.loads(a.models)  # a list: the column order
    specs = {m["name"]: m for m in listed}
    files = {**_named(a.laser, "--laser"), **_named(a.similarity, "--similarity")}
    if set(files) != set(specs):
        raise SystemExit(f"compare-flores: --models names {sorted(specs)} but scores for {sorted(files)}")
    tfidf = read_json(a.tfidf)
    try:
        per_seed = seeds.per_seed_specs(listed)  # the first seed's files: --laser / --similarity
    except ValueError as err:
        raise SystemExit(f"compare-flores: {err}") from None
    seed_rows = []
    for seed_specs in per_seed:
        models = {}
        for spec in seed_specs:
            name, paths = spec["name"], spec.get("scores") or files[spec["name"]]
            if len(paths) > 1 and spec["family"] == "laser":
                raise SystemExit(f"compare-flores: --laser {name} given {len(paths)} times")
            scores = [read_json(path) for path in paths]
            models[name] = (spec["family"], scores[0] if len(scores) == 1 else merge_matrices(scores, paths))
        seed_rows.append(compare_rows(models, tfidf, a.langs))
    write_table(seed_rows[0], {n: {k: v for k, v in s.items() if k != seeds.REPLICATES} for n, s in specs.items()},
                a.md, a.csv, run_name=a.run_name, heldout=a.heldout, seed_rows=seed_rows[1:])


def add_cli(sub) -> None:
    s = sub.add_parser("compare-flores", help="one FLORES xsim table for models of several families on the same split")
    s.add_argument("--laser", nargs="*", default=[], metavar="NAME=JSON", help="a LASER model's flores-xsim scores")
    s.add_argument("--similarity", nargs="*", default=[], metavar="NAME=JSON",
                   help="the similarity scores of a model of another family (multienc, labse, bisent2vec); "
                        "a NAME given several times is one column of per-pair models (Bi-Sent2Vec)")
    s.add_argument("--models", required=True, help='JSON [{"name", "family", "description"}, ...] in column order; '
                   'a model\'s optional "seed_replicates": [{"scores": [JSON, ...]}, ...], one per further seed')
    add_model_records_option(s)
    s.add_argument("--tfidf", required=True, help="flores-tfidf scores of the same held-out lines")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--heldout", nargs=2, type=int, required=True)
    s.add_argument("--run-name", required=True)
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.set_defaults(func=cmd_compare)
