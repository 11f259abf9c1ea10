"""XNLI cross-lingual natural language inference (paper Section 4.3, Tables 2 and 8).

A classifier is trained on the English MultiNLI training pairs, its hyperparameters are tuned
on the English XNLI dev set, and the one model is tested on the XNLI test set of every language
(zero-shot transfer). Premise and hypothesis are encoded independently; the classifier sees
concat(p, h, p*h, |p-h|) of their (L2-normalised, as LASER's nli.py) embeddings.

Inputs, in their published layouts:

* ``XNLI-1.0.zip``: ``XNLI-1.0/xnli.{dev,test}.tsv``, tab-separated with a header row
  (``language gold_label ... sentence1 sentence2 promptID pairID ...``), no quoting; one row per
  (language, pairID); the 15 languages are translations of the same pairs, with the same label.
* ``multinli_1.0.zip``: ``multinli_1.0/multinli_1.0_train.jsonl``, one JSON object per line with
  ``gold_label``, ``sentence1``, ``sentence2``, ``pairID``; gold_label ``-`` (no annotator
  consensus) is dropped.

Text outputs hold one sentence per line; labels files hold ``pairID<TAB>label`` on the same
rows. XNLI rows are sorted by pairID, so every language has the same row order and the
premise-language x hypothesis-language matrix (Table 8) pairs rows directly.
"""
from __future__ import annotations

import json
import logging
import random
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from laser_repro.core import languages
from laser_repro.core.archives import ZIP_ERRORS, find_zip_member
from laser_repro.core.textio import InputError, atomic_output, decode_lines, one_line, write_json
from laser_repro.data.nli_labels import XNLI_LABELS, read_labels

log = logging.getLogger(__name__)

XNLI_ROOT = "XNLI-1.0"
XNLI_SPLITS = ("dev", "test")
XNLI_COLUMNS = ("language", "gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
                "sentence2_parse", "sentence1", "sentence2", "promptID", "pairID", "genre", "label1", "label2",
                "label3", "label4", "label5", "sentence1_tokenized", "sentence2_tokenized", "match")
XNLI_NEEDED = ("language", "gold_label", "sentence1", "sentence2", "pairID")
MULTINLI_TRAIN = "multinli_1.0/multinli_1.0_train.jsonl"
NO_CONSENSUS = "-"

SETTINGS_NOTE = ("Classifier settings: paper (sec. 4.1): hidden layers 512-384, Adam, every choice on English dev "
                 "only; LASER's tasks/xnli/xnli.sh where the paper is silent: dropout 0.3, lr 0.001, batch 128, "
                 "<= 200 epochs, best English-dev epoch kept.")
FEATURES = "concat(p, h, p*h, |p-h|)"
# Defaults of xnli-classify (override with --params or evaluation.xnli.classifier). The paper (sec. 4.1)
# fixes the architecture (two hidden layers, 512 and 384 units), the optimiser (Adam) and that every
# hyperparameter is chosen on the English dev set only; where it is silent we take LASER's
# tasks/xnli/xnli.sh: dropout 0.3, lr 0.001, batch 128, at most 200 epochs (the epoch with the best
# English dev accuracy is kept, as LASER's nli.py). A wider `grid` is searched on English dev too.
XNLI_DEFAULTS = {
    "hidden": [512, 384],
    "batch_size": 128,
    "epochs": 200,
    "activation": "tanh",
    "weight_decay": 0.0,
    "patience": 0,
    "grid": {"dropout": [0.3], "lr": [0.001]},
    "seed": 1,
    "normalize": True,
}


# --------------------------------------------------------------------------- zip reading


def zip_lines(zip_path: Path | str, wanted: str) -> Iterator[tuple[str, int, str]]:
    """Yield (where, line number, line) of a zip member: strict UTF-8, split on '\\n' only.

    ``where`` is ``zip:member`` for error messages; a trailing '\\r' and a BOM are dropped."""
    zip_path = Path(zip_path)
    if not zip_path.is_file():
        raise InputError(f"{zip_path}: no such file")
    try:
        with zipfile.ZipFile(zip_path) as zf:
            member = find_zip_member(zf, wanted, zip_path, InputError)
            where = f"{zip_path}:{member}"
            number = 0
            with zf.open(member) as stream:
                for number, line in decode_lines(stream, where):
                    line = line.rstrip("\r")
                    if number == 1:
                        line = line.removeprefix("\ufeff")
                    yield where, number, line
    except ZIP_ERRORS as err:
        raise InputError(f"{zip_path}: corrupt or truncated zip: {err}") from None


# --------------------------------------------------------------------------- XNLI dev/test


@dataclass(frozen=True)
class NliPair:
    pair_id: str
    premise: str
    hypothesis: str
    label: str


def pair_id_key(pair_id: str) -> tuple:
    """Sort key of a pairID: numerically when it is a number (XNLI's are), else as text."""
    return (0, int(pair_id), "") if pair_id.isdigit() else (1, 0, pair_id)


def xnli_member(split: str) -> str:
    if split not in XNLI_SPLITS:
        raise ValueError(f"XNLI split must be one of {XNLI_SPLITS}, got {split!r}")
    return f"{XNLI_ROOT}/xnli.{split}.tsv"


def read_xnli(zip_path: Path | str, split: str, lang: str) -> list[NliPair]:
    """The pairs of one language (ISO 639-3 code) in one XNLI split, sorted by pairID.

    The whole file is checked against that language: it must be present, hold each pairID once,
    have exactly the pairIDs of every other language and the same gold label for each."""
    code = languages.get(lang).paper or lang
    wanted: list[NliPair] = []
    ids: dict[str, set[str]] = {}
    label_of: dict[str, tuple[str, str, int]] = {}  # pairID -> (label, language, line) of the wanted language
    others: list[tuple[str, str, str, int]] = []  # (pairID, label, language, line) of the other languages
    col = None
    where = f"{zip_path}:{xnli_member(split)}"
    for where, number, line in zip_lines(zip_path, xnli_member(split)):
        fields = line.split("\t")
        if col is None:
            missing = [c for c in XNLI_NEEDED if c not in fields]
            if missing:
                raise InputError(f"{where}: line 1: header lacks column(s) {', '.join(missing)}; got {fields}")
            col = {c: fields.index(c) for c in XNLI_NEEDED}
            width = len(fields)
            continue
        if len(fields) != width:
            raise InputError(f"{where}: line {number}: {len(fields)} tab-separated fields, the header has {width}")
        row_lang, label, pid = fields[col["language"]], fields[col["gold_label"]], fields[col["pairID"]]
        if label not in XNLI_LABELS:
            raise InputError(f"{where}: line {number}: gold_label {label!r} is not one of {', '.join(XNLI_LABELS)}")
        if not pid or pid != pid.strip():
            raise InputError(f"{where}: line {number}: bad pairID {pid!r}")
        seen = ids.setdefault(row_lang, set())
        if pid in seen:
            raise InputError(f"{where}: line {number}: pairID {pid} appears twice for language {row_lang!r}")
        seen.add(pid)
        if row_lang == code:
            wanted.append(NliPair(pid, one_line(fields[col["sentence1"]]), one_line(fields[col["sentence2"]]), label))
            label_of[pid] = (label, row_lang, number)
        else:
            others.append((pid, label, row_lang, number))
    if col is None:
        raise InputError(f"{where}: empty file (no header)")
    if code not in ids:
        raise InputError(f"{where}: no rows for language {code!r} ({lang}); languages present: "
                         f"{', '.join(sorted(ids)) or '(none)'}")
    mine = ids[code]
    for other, theirs in sorted(ids.items()):
        if other != code and theirs != mine:
            lacking, extra = sorted(theirs - mine, key=pair_id_key), sorted(mine - theirs, key=pair_id_key)
            raise InputError(
                f"{where}: pairIDs of {code!r} differ from those of {other!r}: {len(lacking)} of {other!r} missing "
                f"(e.g. {lacking[:3]}), {len(extra)} not in {other!r} (e.g. {extra[:3]}); the languages must be "
                "parallel")
    for pid, label, other, number in others:
        mine_label, _, mine_line = label_of[pid]
        if label != mine_label:
            raise InputError(f"{where}: line {number}: pairID {pid} is {label!r} in {other!r} but {mine_label!r} in "
                             f"{code!r} (line {mine_line}); the gold label must agree across languages")
    wanted.sort(key=lambda p: pair_id_key(p.pair_id))
    return wanted


def write_pairs(pairs: Sequence[NliPair] | Iterator[NliPair], premises, hypotheses, labels) -> int:
    """Write the three row-aligned files atomically (all or none); returns the number of pairs."""
    n = 0
    with ExitStack() as stack:
        fp, fh, fl = (stack.enter_context(atomic_output(p)) for p in (premises, hypotheses, labels))
        for pair in pairs:
            if "\t" in pair.pair_id or "\n" in pair.pair_id:
                raise InputError(f"pairID {pair.pair_id!r} contains a tab or newline")
            fp.write(one_line(pair.premise) + "\n")
            fh.write(one_line(pair.hypothesis) + "\n")
            fl.write(f"{pair.pair_id}\t{pair.label}\n")
            n += 1
    return n


def xnli_texts(zip_path, split: str, lang: str, premises, hypotheses, labels) -> dict:
    """Extract one language of one XNLI split into premise/hypothesis/label files."""
    pairs = read_xnli(zip_path, split, lang)
    n = write_pairs(pairs, premises, hypotheses, labels)
    counts = {label: sum(p.label == label for p in pairs) for label in XNLI_LABELS}
    stats = {"split": split, "language": lang, "pairs": n, "labels": counts}
    log.info("XNLI %s %s: %s", split, lang, json.dumps(stats))
    return stats


# --------------------------------------------------------------------------- MultiNLI train


def iter_multinli(zip_path: Path | str, member: str = MULTINLI_TRAIN) -> Iterator[tuple[str, int, NliPair | None]]:
    """Yield (where, line number, pair) for every line; pair is None when gold_label is '-'."""
    for where, number, line in zip_lines(zip_path, member):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{where}: line {number}: invalid JSON: {err}") from None
        if not isinstance(rec, dict):
            raise InputError(f"{where}: line {number}: expected a JSON object")
        for key in ("gold_label", "sentence1", "sentence2", "pairID"):
            if not isinstance(rec.get(key), str):
                raise InputError(f"{where}: line {number}: key {key!r} missing or not a string")
        label = rec["gold_label"]
        if label == NO_CONSENSUS:
            yield where, number, None
            continue
        if label not in XNLI_LABELS:
            raise InputError(f"{where}: line {number}: gold_label {label!r} is not one of "
                             f"{', '.join(XNLI_LABELS)} or '-'")
        yield where, number, NliPair(rec["pairID"], rec["sentence1"], rec["sentence2"], label)


def multinli_texts(zip_path, premises, hypotheses, labels, *, max_pairs: int | None = None, seed: int = 0,
                   member: str = MULTINLI_TRAIN) -> dict:
    """MultiNLI training pairs (no-consensus pairs dropped) into premise/hypothesis/label files.

    ``max_pairs``: keep a uniform random sample of that many pairs, in their original order
    (reservoir sampling, Algorithm R with ``random.Random(seed)``; memory O(max_pairs)); the
    sample depends only on (seed, input)."""
    if max_pairs is not None and max_pairs < 1:
        raise ValueError(f"max_pairs must be >= 1, got {max_pairs}")
    stats = {"lines": 0, "dropped_no_consensus": 0, "usable_pairs": 0}

    def usable() -> Iterator[NliPair]:
        for _, _, pair in iter_multinli(zip_path, member):
            stats["lines"] += 1
            if pair is None:
                stats["dropped_no_consensus"] += 1
                continue
            stats["usable_pairs"] += 1
            yield pair

    if max_pairs is None:
        written = write_pairs(usable(), premises, hypotheses, labels)
    else:
        rng = random.Random(seed)
        reservoir: list[tuple[int, NliPair]] = []
        for t, pair in enumerate(usable()):
            if t < max_pairs:
                reservoir.append((t, pair))
            else:
                j = rng.randrange(t + 1)
                if j < max_pairs:
                    reservoir[j] = (t, pair)
        reservoir.sort(key=lambda item: item[0])
        written = write_pairs((pair for _, pair in reservoir), premises, hypotheses, labels)
    if written == 0:
        raise InputError(f"{zip_path}: no usable MultiNLI pairs in {member}")
    stats.update(written=written, max_pairs=max_pairs, seed=seed if max_pairs is not None else None,
                 sampling=("reservoir sample (Algorithm R, random.Random(seed)), original order"
                           if max_pairs is not None and written < stats["usable_pairs"] else "all usable pairs"))
    log.info("MultiNLI train: %s", json.dumps(stats))
    return stats


# --------------------------------------------------------------------------- classification


def load_embeddings(path: Path | str, rows: int | None = None, dim: int | None = None) -> np.ndarray:
    """A [rows, dim] float embedding matrix from .npy, memory-mapped (read on demand)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such embedding file")
    try:
        emb = np.load(path, mmap_mode="r")
    except ValueError:  # numpy cannot memory-map an empty array
        emb = np.load(path)
    if emb.ndim != 2 or not np.issubdtype(emb.dtype, np.floating):
        raise InputError(f"{path}: expected a 2-d float array, got {emb.dtype} {emb.shape}")
    if rows is not None and emb.shape[0] != rows:
        raise InputError(f"{path}: {emb.shape[0]} embeddings but {rows} rows expected (labels/docs file)")
    if dim is not None and emb.shape[1] != dim:
        raise InputError(f"{path}: embedding dimension {emb.shape[1]}, expected {dim}")
    return emb


def nli_features(premises: np.ndarray, hypotheses: np.ndarray, normalize: bool = True) -> np.ndarray:
    """concat(p, h, p*h, |p-h|) of row-aligned premise and hypothesis embeddings."""
    p = np.asarray(premises, dtype=np.float32)
    h = np.asarray(hypotheses, dtype=np.float32)
    if normalize:
        from laser_repro.evaluation.classifier import l2_normalize

        p, h = l2_normalize(p), l2_normalize(h)
    return np.concatenate([p, h, p * h, np.abs(p - h)], axis=1)


def pair_feature_set(premises: np.ndarray, hypotheses: np.ndarray, labels: np.ndarray, *, normalize: bool = True,
                     premise_rows: np.ndarray | None = None, hypothesis_rows: np.ndarray | None = None,
                     name: str = ""):
    """A FeatureSet whose row i pairs premises[premise_rows[i]] with hypotheses[hypothesis_rows[i]]
    (identity by default); features are built per mini-batch."""
    from laser_repro.evaluation.classifier import FeatureSet

    pr = np.arange(len(labels)) if premise_rows is None else np.asarray(premise_rows, dtype=np.int64)
    hr = np.arange(len(labels)) if hypothesis_rows is None else np.asarray(hypothesis_rows, dtype=np.int64)
    if premises.shape[1] != hypotheses.shape[1]:
        raise InputError(f"{name}: premise dimension {premises.shape[1]} != hypothesis dimension {hypotheses.shape[1]}")
    if not (len(pr) == len(hr) == len(labels)) or (len(pr) and (pr.max() >= len(premises) or
                                                                hr.max() >= len(hypotheses))):
        raise InputError(f"{name}: {len(premises)} premises / {len(hypotheses)} hypotheses do not match "
                         f"{len(labels)} labels")

    def build(rows: np.ndarray) -> np.ndarray:
        return nli_features(premises[pr[rows]], hypotheses[hr[rows]], normalize)

    return FeatureSet(labels, build, 4 * int(premises.shape[1]), name)


@dataclass(frozen=True)
class NliFiles:
    """Premise and hypothesis embeddings (.npy) and their ``pairID<TAB>label`` file."""

    premises: Path
    hypotheses: Path
    labels: Path

    def load(self, dim: int | None = None) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        ids, labels = read_labels(self.labels)
        prem = load_embeddings(self.premises, len(ids), dim)
        hyp = load_embeddings(self.hypotheses, len(ids), prem.shape[1])
        return ids, labels, prem, hyp

    def as_dict(self) -> dict:
        return {"premises": str(self.premises), "hypotheses": str(self.hypotheses), "labels": str(self.labels)}


def align_rows(reference: Sequence[str], ids: Sequence[str], what: str) -> np.ndarray:
    """Row of each reference pairID in ``ids`` (so ids[rows] == reference); error if the sets differ."""
    where = {pid: i for i, pid in enumerate(ids)}
    missing = [pid for pid in reference if pid not in where]
    if missing or len(ids) != len(reference):
        extra = sorted(set(ids) - set(reference), key=pair_id_key)
        raise InputError(f"{what}: pairIDs differ from the first test language: {len(missing)} missing "
                         f"(e.g. {missing[:3]}), {len(extra)} extra (e.g. {extra[:3]})")
    return np.fromiter((where[pid] for pid in reference), dtype=np.int64, count=len(reference))


def classify(train: NliFiles, dev: NliFiles, tests: Mapping[str, NliFiles], config=None, *,
             matrix: bool = True) -> dict:
    """Train on ``train``, select on ``dev``, test every language; returns the scores document.

    ``config``: a ClassifierConfig (classifier.parse_config over XNLI_DEFAULTS; None: the defaults). The
    cross-lingual matrix (Table 8) has one row per premise language and one column per
    hypothesis language; rows of different languages are paired by pairID."""
    from laser_repro.evaluation import classifier

    if not tests:
        raise ValueError("xnli classify: no test language given")
    if config is None:
        config = classifier.parse_config(None, XNLI_DEFAULTS, options=("normalize",))
    normalize = bool(config.options.get("normalize", True))
    _, train_y, train_p, train_h = train.load()
    dim = train_p.shape[1]
    _, dev_y, dev_p, dev_h = dev.load(dim)
    train_set = pair_feature_set(train_p, train_h, train_y, normalize=normalize, name=f"train {train.labels}")
    dev_set = pair_feature_set(dev_p, dev_h, dev_y, normalize=normalize, name=f"dev {dev.labels}")
    loaded = {lang: files.load(dim) for lang, files in tests.items()}

    selection = classifier.select(train_set, dev_set, len(XNLI_LABELS), config.points(), config.seed)
    model = selection.model
    test_sets = {lang: pair_feature_set(p, h, y, normalize=normalize, name=f"test {lang}")
                 for lang, (_, y, p, h) in loaded.items()}
    test_acc = classifier.evaluate(model, test_sets)
    for lang, acc in test_acc.items():
        log.info("XNLI test %s: %.2f%%", lang, acc)

    scores = {
        "task": "xnli",
        "features": FEATURES,
        "normalize": normalize,
        "n_classes": len(XNLI_LABELS),
        "labels": list(XNLI_LABELS),
        **classifier.selection_record(selection, config, test_acc, settings_source=SETTINGS_NOTE),
        "sizes": {"train_pairs": len(train_set), "dev_pairs": len(dev_set),
                  "test_pairs": {lang: len(s) for lang, s in test_sets.items()}},
        "inputs": {"train": train.as_dict(), "dev": dev.as_dict(),
                   "test": {lang: f.as_dict() for lang, f in tests.items()}},
    }
    if matrix:
        scores["cross_lingual"] = cross_lingual_matrix(model, loaded, normalize)
    return scores


def cross_lingual_matrix(model, loaded: Mapping[str, tuple], normalize: bool) -> dict:
    """Accuracy (%) with premises in one language and hypotheses in another (Table 8).

    ``loaded``: language -> (pairIDs, labels, premise embeddings, hypothesis embeddings)."""
    from laser_repro.evaluation import classifier

    langs = list(loaded)
    ref_ids, ref_y = loaded[langs[0]][0], loaded[langs[0]][1]
    rows = {}
    for lang in langs:
        ids, y = loaded[lang][0], loaded[lang][1]
        rows[lang] = align_rows(ref_ids, ids, f"XNLI test labels of {lang}")
        bad = np.flatnonzero(y[rows[lang]] != ref_y)
        if len(bad):
            raise InputError(f"XNLI test labels of {lang}: {len(bad)} pairs have another label than in {langs[0]} "
                             f"(e.g. pairID {ref_ids[bad[0]]})")
    acc = []
    for lp in langs:
        row = []
        for lh in langs:
            data = pair_feature_set(loaded[lp][2], loaded[lh][3], ref_y, normalize=normalize,
                                    premise_rows=rows[lp], hypothesis_rows=rows[lh], name=f"test {lp}-{lh}")
            row.append(classifier.accuracy(model, data))
        acc.append(row)
        log.info("XNLI premise %s: %s", lp, " ".join(f"{a:.2f}" for a in row))
    return {"premise_languages": langs, "hypothesis_languages": langs, "accuracy": acc,
            "rows": "premise language", "columns": "hypothesis language", "pairs": len(ref_ids)}


# --------------------------------------------------------------------------- command line


def cmd_xnli_texts(a) -> None:
    xnli_texts(a.zip, a.split, a.lang, a.premises, a.hypotheses, a.labels)


def cmd_multinli_texts(a) -> None:
    stats = multinli_texts(a.zip, a.premises, a.hypotheses, a.labels, max_pairs=a.max_pairs, seed=a.seed)
    if a.stats:
        write_json(a.stats, stats)


def cmd_xnli_classify(a) -> None:
    from laser_repro.evaluation import classifier

    train = NliFiles(Path(a.train_premises), Path(a.train_hypotheses), Path(a.train_labels))
    dev = NliFiles(Path(a.dev_premises), Path(a.dev_hypotheses), Path(a.dev_labels))
    classifier.run_classify_command(a, "xnli-classify", XNLI_DEFAULTS, NliFiles,
                                    lambda tests, config: classify(train, dev, tests, config, matrix=not a.no_matrix))


def add_cli(sub) -> None:
    """Register xnli-texts, multinli-texts and xnli-classify on an argparse subparsers object."""
    s = sub.add_parser("xnli-texts", help="one language of an XNLI split: premises, hypotheses, pairID+label files")
    s.add_argument("--zip", required=True, help="XNLI-1.0.zip")
    s.add_argument("--split", required=True, choices=XNLI_SPLITS)
    s.add_argument("--lang", required=True, help="ISO 639-3 code, e.g. fra")
    s.add_argument("--premises", required=True)
    s.add_argument("--hypotheses", required=True)
    s.add_argument("--labels", required=True, help="output: pairID<TAB>label, rows sorted by pairID")
    s.set_defaults(func=cmd_xnli_texts)

    s = sub.add_parser("multinli-texts", help="MultiNLI training pairs: premises, hypotheses, pairID+label files")
    s.add_argument("--zip", required=True, help="multinli_1.0.zip")
    s.add_argument("--premises", required=True)
    s.add_argument("--hypotheses", required=True)
    s.add_argument("--labels", required=True)
    s.add_argument("--max-pairs", type=int, default=None, help="seeded uniform sample of this many pairs")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--stats", default=None, help="optional JSON report (counts, sampling)")
    s.set_defaults(func=cmd_multinli_texts)

    s = sub.add_parser("xnli-classify", help="train the NLI classifier on English, tune on English dev, test all")
    s.add_argument("--train-premises", required=True, help=".npy")
    s.add_argument("--train-hypotheses", required=True, help=".npy")
    s.add_argument("--train-labels", required=True, help="pairID<TAB>label")
    s.add_argument("--dev-premises", required=True)
    s.add_argument("--dev-hypotheses", required=True)
    s.add_argument("--dev-labels", required=True)
    s.add_argument("--test", nargs=4, action="append", required=True,
                   metavar=("LANG", "PREMISES_NPY", "HYPOTHESES_NPY", "LABELS"),
                   help="one test language (repeat); the first one's row order is the matrix reference")
    s.add_argument("--params", default="", help="JSON over the defaults: " + json.dumps(XNLI_DEFAULTS))
    s.add_argument("--seed", type=int, default=None, help="overrides the seed of --params")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--no-matrix", action="store_true", help="skip the premise x hypothesis language matrix")
    s.add_argument("--scores", required=True, help="output JSON")
    s.set_defaults(func=cmd_xnli_classify)
