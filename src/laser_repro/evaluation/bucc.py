"""BUCC 2018 shared task: spotting parallel sentences in comparable corpora (paper Section 4.3,
Table 4), with LASER's protocol (``tasks/bucc/bucc.sh`` and ``bucc.py``).

Data (https://comparable.limsi.fr/bucc2018/bucc2018-task.html), for xx in de, fr, ru, zh::

    https://comparable.limsi.fr/bucc2018/bucc2018-<xx>-en.sample-gold.tar.bz2
    https://comparable.limsi.fr/bucc2018/bucc2018-<xx>-en.training-gold.tar.bz2
    https://comparable.limsi.fr/bucc2018/bucc2018-<xx>-en.test.tar.bz2

with members ``bucc2018/<xx>-en/<xx>-en.<split>.<xx>``, ``...<split>.en`` and, for the sample
and training splits, ``...<split>.gold`` (split: sample, training, test). Sentence files hold
``id<TAB>sentence`` lines (ids such as ``de-000000001``), gold files ``xx_id<TAB>en_id``.

Protocol: both sides of a split are deduplicated and embedded, pairs are mined with the ratio
margin, k = 4, ``max`` retrieval (:mod:`laser_repro.evaluation.mining`); the decision threshold is the one
that maximises F1 on the training gold, and the test pairs above it are submitted (the test
gold is private; the organisers score the submission). The threshold is kept at full precision
(LASER's bucc.sh re-reads it from a log line printed with 6 decimals).

Sentence handling, as LASER's bucc.py: a sentence is its text stripped of surrounding
whitespace; sentences with the same text share one embedding row; a row whose text carries
several ids is ambiguous and all its candidate pairs are dropped (LASER deletes repeated
sentences from its text -> id map), so its gold pairs can only count as misses. Control characters
(C0 / C1 but tab: among them those other tools read as line breaks, CR, VT, FF, FS, GS, RS, NEL) and
LS, PS are replaced by a space (:func:`laser_repro.core.textio.one_line`) so that the
one-sentence-per-line files cannot misalign.
"""
from __future__ import annotations

import json
import logging
import os
import re
import tarfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from laser_repro.core.archives import TAR_ERRORS, norm_member
from laser_repro.core.textio import InputError, atomic_output, decode_lines, iter_lines, one_line, read_json, write_json

log = logging.getLogger(__name__)

#: the four BUCC 2018 languages, each paired with English: ISO 639-3 code (the config's) -> BUCC's code
LANGUAGES = {"deu": "de", "fra": "fr", "rus": "ru", "cmn": "zh"}
SPLITS = ("sample", "training", "test")
#: split -> its name in the archive names (the ``{split}`` of the evaluation.bucc url / path templates)
ARCHIVE_SPLITS = {"sample": "sample-gold", "training": "training-gold", "test": "test"}
BASE_URL = "https://comparable.limsi.fr/bucc2018"


def bucc_code(lang: str) -> str:
    """BUCC's code of a language: an ISO 639-3 code of :data:`LANGUAGES` (``deu`` -> ``de``), ``eng``
    -> ``en``; any other code (BUCC's own, ``de``) as it is."""
    return "en" if lang == "eng" else LANGUAGES.get(lang, lang)


def _check_lang_split(lang: str, split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"BUCC split must be one of {', '.join(SPLITS)}, not {split!r}")
    if not re.fullmatch(r"[a-z]{2,3}", lang or "") or lang == "en":
        raise ValueError(f"BUCC language must be a non-English code such as "
                         f"{', '.join(LANGUAGES.values())}, not {lang!r}")


def archive_name(lang: str, split: str) -> str:
    """``bucc2018-de-en.training-gold.tar.bz2`` (sample, training) or ``bucc2018-de-en.test.tar.bz2``.

    ``lang``: BUCC's code (``de``) or the ISO 639-3 one (``deu``, see :func:`bucc_code`)."""
    lang = bucc_code(lang)
    _check_lang_split(lang, split)
    return f"bucc2018-{lang}-en.{ARCHIVE_SPLITS[split]}.tar.bz2"


def archive_url(lang: str, split: str, base_url: str = BASE_URL) -> str:
    return f"{base_url.rstrip('/')}/{archive_name(lang, split)}"


def member_name(lang: str, split: str, side: str) -> str:
    """Tar member of one side (`lang`, ``en``) or of the gold (``gold``) of a split.

    ``lang`` and ``side``: BUCC's codes (``de``, ``en``) or ISO 639-3 ones (``deu``, ``eng``)."""
    lang = bucc_code(lang)
    side = side if side == "gold" else bucc_code(side)
    _check_lang_split(lang, split)
    if side not in (lang, "en", "gold"):
        raise ValueError(f"BUCC member side must be {lang!r}, 'en' or 'gold', not {side!r}")
    if side == "gold" and split == "test":
        raise ValueError("the BUCC test gold is not distributed (the organisers score submissions)")
    return f"bucc2018/{lang}-en/{lang}-en.{split}.{side}"


# --------------------------------------------------------------------------- reading


def iter_member_lines(archive: str | os.PathLike, member: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of a tar member, streamed and decoded as strict UTF-8 ('\\n' ends a line;
    a BOM on line 1 is dropped). Errors name the archive, the member and the line."""
    archive, wanted = Path(archive), norm_member(member)
    where = f"{archive}:{wanted}"
    if not archive.is_file():
        raise InputError(f"{archive}: no such file")
    seen: list[str] = []
    number = 0
    try:
        with tarfile.open(archive, mode="r|*") as tf:
            for info in tf:
                name = norm_member(info.name)
                if name != wanted:
                    seen.append(name)
                    continue
                if not info.isfile():
                    raise InputError(f"{where}: not a regular file")
                for number, line in decode_lines(tf.extractfile(info), where):
                    if number == 1 and line.startswith("\ufeff"):
                        line = line[1:]
                    yield number, line
                return
    except InputError:
        raise
    except TAR_ERRORS as err:
        raise InputError(f"{archive}: truncated or corrupt archive (member {wanted}, after line {number}): {err}") from None
    raise InputError(f"{archive}: no member {wanted!r} among {len(seen)} entries, e.g. {seen[:8]}")


def _file_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(iter_lines(path), start=1):
        if number == 1 and line.startswith("\ufeff"):
            line = line[1:]
        yield number, line


@dataclass
class BuccSentences:
    """One side of a split: unique sentences (first-occurrence order) and every id's row."""

    sentences: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)   # in file order
    rows: list[int] = field(default_factory=list)  # rows[i]: unique-sentence row of ids[i]

    def n_rows(self) -> int:
        return max(self.rows) + 1 if self.rows else 0

    def ids_per_row(self) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in range(self.n_rows())]
        for i, r in zip(self.ids, self.rows):
            out[r].append(i)
        return out

    def stats(self) -> dict:
        per_row = self.ids_per_row()
        return {"lines": len(self.ids), "unique_sentences": self.n_rows(),
                "ambiguous_rows": sum(len(v) > 1 for v in per_row),
                "ambiguous_ids": sum(len(v) for v in per_row if len(v) > 1)}


def parse_sentences(lines: Iterable[tuple[int, str]], where: str) -> BuccSentences:
    """``id<TAB>sentence`` lines -> :class:`BuccSentences`. The sentence is everything after the
    first tab. A line without a tab, an empty id or an id seen before raises InputError."""
    out = BuccSentences()
    row_of: dict[str, int] = {}
    first_line: dict[str, int] = {}
    for number, line in lines:
        ident, tab, text = line.partition("\t")
        ident = ident.strip()
        if not tab or not ident:
            raise InputError(f"{where}: line {number}: expected 'id<TAB>sentence', got {line[:80]!r}")
        if ident in first_line:
            raise InputError(f"{where}: line {number}: id {ident!r} already on line {first_line[ident]}")
        first_line[ident] = number
        text = one_line(text)
        row = row_of.setdefault(text, len(out.sentences))
        if row == len(out.sentences):
            out.sentences.append(text)
        out.ids.append(ident)
        out.rows.append(row)
    if not out.ids:
        raise InputError(f"{where}: no sentences")
    return out


def read_sentences(archive: str | os.PathLike, member: str) -> BuccSentences:
    """Sentences of one tar member (streamed; see :func:`parse_sentences`)."""
    return parse_sentences(iter_member_lines(archive, member), f"{archive}:{norm_member(member)}")


def write_sentences(sents: BuccSentences, sentences_path, ids_path) -> None:
    """Unique sentences one per line, and ``id<TAB>row`` for every id in file order."""
    with atomic_output(sentences_path) as f:
        for s in sents.sentences:
            f.write(s + "\n")
    with atomic_output(ids_path) as f:
        for i, r in zip(sents.ids, sents.rows):
            f.write(f"{i}\t{r}\n")


def read_ids(path: str | os.PathLike) -> BuccSentences:
    """An ``id<TAB>row`` file back into ids and rows (sentences left empty)."""
    out = BuccSentences()
    seen: set[str] = set()
    for number, line in _file_lines(path):
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0] or not (fields[1].isascii() and fields[1].isdigit()):
            raise InputError(f"{path}: line {number}: expected 'id<TAB>row', got {line[:80]!r}")
        if fields[0] in seen:
            raise InputError(f"{path}: line {number}: id {fields[0]!r} given twice")
        seen.add(fields[0])
        out.ids.append(fields[0])
        out.rows.append(int(fields[1]))
    if not out.ids:
        raise InputError(f"{path}: no ids")
    return out


def row_to_id(ids: BuccSentences) -> dict[int, str]:
    """Unambiguous rows -> their id. Rows with several ids are left out, as LASER's bucc.py
    removes sentences that occur more than once: their candidates cannot be scored."""
    count: dict[int, int] = {}
    first: dict[int, str] = {}
    for i, r in zip(ids.ids, ids.rows):
        count[r] = count.get(r, 0) + 1
        first.setdefault(r, i)
    return {r: first[r] for r, c in count.items() if c == 1}


def parse_gold(lines: Iterable[tuple[int, str]], where: str) -> set[tuple[str, str]]:
    """``xx_id<TAB>en_id`` lines (surrounding whitespace stripped; blank lines skipped)."""
    gold: set[tuple[str, str]] = set()
    for number, line in lines:
        line = line.strip()
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not all(fields):
            raise InputError(f"{where}: line {number}: expected 'xx_id<TAB>en_id', got {line[:80]!r}")
        gold.add((fields[0], fields[1]))
    return gold


def read_gold(path: str | os.PathLike) -> set[tuple[str, str]]:
    return parse_gold(_file_lines(path), str(path))


def read_gold_member(archive: str | os.PathLike, member: str) -> set[tuple[str, str]]:
    return parse_gold(iter_member_lines(archive, member), f"{archive}:{norm_member(member)}")


# --------------------------------------------------------------------------- scoring


def candidate_pairs(cands, src_ids: BuccSentences, trg_ids: BuccSentences) -> tuple[list[tuple[str, str]], np.ndarray]:
    """Mined row pairs -> id pairs with their score, best first.

    Pairs touching an ambiguous row are dropped; an id pair met twice keeps its best score (as
    LASER). Ties keep the candidate order (LASER's dict order and stable sort)."""
    src_map, trg_map = row_to_id(src_ids), row_to_id(trg_ids)
    n_src, n_trg = src_ids.n_rows(), trg_ids.n_rows()
    best: dict[tuple[str, str], float] = {}
    for s, i, j in zip(cands.score.tolist(), cands.src.tolist(), cands.trg.tolist()):
        if i >= n_src or j >= n_trg:
            raise InputError(f"candidate row pair ({i}, {j}) outside the id files ({n_src} x {n_trg} rows)")
        key = (src_map.get(i), trg_map.get(j))
        if key[0] is None or key[1] is None:
            continue
        best[key] = max(s, best.get(key, s))
    pairs = list(best)
    scores = np.fromiter(best.values(), dtype=np.float64, count=len(best))
    order = np.argsort(-scores, kind="stable")
    return [pairs[i] for i in order], scores[order]


def _prf(correct: int, extracted: int, gold: int) -> tuple[float, float, float]:
    if correct == 0:
        return 0.0, 0.0, 0.0
    p, r = correct / extracted, correct / gold
    return p, r, 2 * p * r / (p + r)


def optimize_threshold(pairs: Sequence[tuple[str, str]], scores: np.ndarray, gold: set[tuple[str, str]]) -> dict:
    """LASER's BuccOptimize, then its report.

    Sweep the pairs best first; after each, P = correct / extracted, R = correct / |gold|; the
    first cut with the highest F1 sets the threshold to the midpoint between its score and the
    next one (LASER's rule; at the very last candidate, where LASER would fail, its own score).
    No correct pair: threshold 0, as LASER. P/R/F1 are then those of extracting every pair with
    score >= threshold (what LASER prints; more than the cut when scores tie)."""
    scores = np.asarray(scores, dtype=np.float64)
    if len(pairs) != len(scores):
        raise ValueError(f"{len(pairs)} pairs but {len(scores)} scores")
    if len(scores) > 1 and np.any(np.diff(scores) > 0):
        raise ValueError("pairs must be sorted by score, best first")
    if not gold:
        raise ValueError("the gold alignment is empty")
    hit = np.fromiter((p in gold for p in pairs), dtype=bool, count=len(pairs))
    correct = np.cumsum(hit)
    extracted = np.arange(1, len(pairs) + 1)
    threshold, cut = 0.0, -1
    if len(pairs) and correct[-1] > 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            p = correct / extracted
            r = correct / len(gold)
            f1 = np.where(correct > 0, 2 * p * r / (p + r), 0.0)
        cut = int(np.argmax(f1))  # first best, as LASER's strict '>'
        threshold = float((scores[cut] + scores[cut + 1]) / 2) if cut + 1 < len(scores) else float(scores[cut])
    keep = scores >= threshold
    n_extracted, n_correct = int(keep.sum()), int(hit[keep].sum())
    precision, recall, f1_final = _prf(n_correct, n_extracted, len(gold))
    return {"threshold": threshold, "precision": precision, "recall": recall, "f1": f1_final,
            "extracted": n_extracted, "correct": n_correct, "gold_pairs": len(gold),
            "candidates": len(pairs), "best_cut": cut + 1}


def extract(pairs: Sequence[tuple[str, str]], scores: np.ndarray, threshold: float) -> list[tuple[str, str]]:
    """Pairs with score >= threshold (LASER's BuccExtract), best first."""
    return [p for p, s in zip(pairs, np.asarray(scores).tolist()) if s >= threshold]


def evaluate(cands, src_ids: BuccSentences, trg_ids: BuccSentences, gold: set[tuple[str, str]]) -> dict:
    """Threshold chosen on this gold, P/R/F1 (fractions) and the sizes involved."""
    known_src, known_trg = set(src_ids.ids), set(trg_ids.ids)
    unknown = [g for g in gold if g[0] not in known_src or g[1] not in known_trg]
    if unknown:
        raise InputError(f"{len(unknown)} gold pair(s) name ids absent from the sentence files, e.g. "
                         f"{sorted(unknown)[:3]} (gold of another split or language?)")
    pairs, scores = candidate_pairs(cands, src_ids, trg_ids)
    result = optimize_threshold(pairs, scores, gold)
    result["mined_candidates"] = len(cands)
    result["src_sentences"] = src_ids.stats()
    result["trg_sentences"] = trg_ids.stats()
    return result


def write_pairs(path: str | os.PathLike, pairs: Iterable[tuple[str, str]]) -> int:
    n = 0
    with atomic_output(path) as f:
        for a, b in pairs:
            f.write(f"{a}\t{b}\n")
            n += 1
    return n


# --------------------------------------------------------------------------- CLI


def cmd_bucc_sentences(a) -> None:
    sents = read_sentences(a.archive, a.member)
    write_sentences(sents, a.sentences, a.ids)
    stats = sents.stats() | {"archive": str(a.archive), "member": a.member}
    log.info("%s:%s: %s", a.archive, a.member, json.dumps(stats))
    if a.stats:
        write_json(a.stats, stats)


def cmd_bucc_mine(a) -> None:
    import time

    from laser_repro.evaluation import mining

    src, trg = mining.open_npy(a.src_emb), mining.open_npy(a.trg_emb)
    engine = mining.knn_engine(a.knn_device)  # "gpu" without a faiss GPU fails here, before any work
    start = time.perf_counter()
    cands = mining.mine(src, trg, k=a.k, margin=a.margin, mode=a.mode, shard_rows=a.shard_rows,
                        threads=a.threads, device=engine, threshold=a.threshold, ties=a.ties)
    mining.write_candidates(a.candidates, cands)
    a.runtime = {"knn_engine": engine}  # ties may resolve differently on GPU: recorded in the provenance
    log.info("%s: %d candidates from %d x %d sentences in %.1f s (kNN on %s)", a.candidates, len(cands),
             src.shape[0], trg.shape[0], time.perf_counter() - start, engine)


def _load_eval_inputs(a):
    from laser_repro.evaluation import mining

    return mining.read_candidates(a.candidates), read_ids(a.src_ids), read_ids(a.trg_ids)


def cmd_bucc_evaluate(a) -> None:
    cands, src_ids, trg_ids = _load_eval_inputs(a)
    if bool(a.gold) == bool(a.gold_archive):
        raise SystemExit("bucc-evaluate: give either --gold FILE or --gold-archive ARCHIVE (with --gold-member)")
    if a.gold:
        gold = read_gold(a.gold)
    else:
        if not a.gold_member:
            raise SystemExit("bucc-evaluate: --gold-archive needs --gold-member")
        gold = read_gold_member(a.gold_archive, a.gold_member)
    result = evaluate(cands, src_ids, trg_ids, gold)
    if a.lang:
        result = {"language": a.lang, "pair": f"{a.lang}-en"} | result
    write_json(a.scores, result)
    log.info("BUCC %s: threshold %.6f, P %.2f R %.2f F1 %.2f", a.lang or "", result["threshold"],
             100 * result["precision"], 100 * result["recall"], 100 * result["f1"])


def cmd_bucc_extract(a) -> None:
    if (a.threshold is None) == (a.threshold_from is None):
        raise SystemExit("bucc-extract: give either --threshold-from TRAIN.json or --threshold FLOAT")
    if a.threshold_from is not None:
        record = read_json(a.threshold_from)
        if not isinstance(record, dict) or not isinstance(record.get("threshold"), (int, float)):
            raise SystemExit(f"{a.threshold_from}: no numeric 'threshold' key")
        threshold = float(record["threshold"])
    else:
        threshold = a.threshold
    cands, src_ids, trg_ids = _load_eval_inputs(a)
    pairs, scores = candidate_pairs(cands, src_ids, trg_ids)
    n = write_pairs(a.pairs, extract(pairs, scores, threshold))
    log.info("%s: %d pairs with score >= %r", a.pairs, n, threshold)


def add_cli(sub) -> None:
    """Register bucc-sentences, bucc-mine, bucc-evaluate and bucc-extract on the main CLI."""
    from laser_repro.evaluation import mining

    s = sub.add_parser("bucc-sentences", help="unique sentences and id -> row map of one BUCC tar member")
    s.add_argument("--archive", required=True, help="e.g. bucc2018-de-en.training-gold.tar.bz2")
    s.add_argument("--member", required=True, help="e.g. bucc2018/de-en/de-en.training.de")
    s.add_argument("--sentences", required=True, help="output: unique sentences, one per line")
    s.add_argument("--ids", required=True, help="output: id<TAB>row for every input line")
    s.add_argument("--stats", help="optional JSON: lines, unique sentences, ambiguous rows")
    s.set_defaults(func=cmd_bucc_sentences)

    s = sub.add_parser("bucc-mine", help="margin-based mining between two embedding files")
    s.add_argument("--src-emb", required=True, help=".npy [rows, dim] of the xx unique sentences")
    s.add_argument("--trg-emb", required=True, help=".npy [rows, dim] of the English unique sentences")
    s.add_argument("--k", type=int, default=4, help="neighbourhood size (default 4)")
    s.add_argument("--margin", choices=mining.MARGINS, default="ratio")
    s.add_argument("--mode", choices=mining.MODES + tuple(mining.MODE_ALIASES), default="max")
    s.add_argument("--shard-rows", type=int, default=mining.DEFAULT_SHARD_ROWS,
                   help="rows per block; memory ~ 4 * N * (N + 2 * dim) bytes")
    s.add_argument("--threads", type=int, default=None, help="faiss/BLAS threads (default: all)")
    s.add_argument("--knn-device", choices=mining.KNN_DEVICES, default="auto",
                   help="where the exact kNN runs: auto (GPU when faiss sees one), cpu, gpu (an error without "
                        "a faiss GPU); config evaluation.knn_device")
    s.add_argument("--threshold", type=float, default=0.0,
                   help="keep scores strictly above this (LASER's default 0); -inf keeps all")
    s.add_argument("--ties", choices=mining.TIES, default="stable",
                   help="order of equal scores: stable (portable) or laser (numpy's default argsort, as LASER)")
    s.add_argument("--candidates", required=True, help="output: score<TAB>src_row<TAB>trg_row, best first")
    s.set_defaults(func=cmd_bucc_mine)

    s = sub.add_parser("bucc-evaluate", help="best-F1 threshold and P/R/F1 of mined candidates on a gold")
    s.add_argument("--candidates", required=True)
    s.add_argument("--src-ids", required=True, help="id<TAB>row of the xx side")
    s.add_argument("--trg-ids", required=True, help="id<TAB>row of the English side")
    s.add_argument("--gold", help="xx_id<TAB>en_id file")
    s.add_argument("--gold-archive", help="instead of --gold: read it from this tar archive")
    s.add_argument("--gold-member", help="e.g. bucc2018/de-en/de-en.training.gold")
    s.add_argument("--lang", help="recorded in the scores (e.g. de)")
    s.add_argument("--scores", required=True, help="output JSON")
    s.set_defaults(func=cmd_bucc_evaluate)

    s = sub.add_parser("bucc-extract", help="test pairs above the threshold chosen on the training gold")
    s.add_argument("--candidates", required=True)
    s.add_argument("--src-ids", required=True)
    s.add_argument("--trg-ids", required=True)
    s.add_argument("--threshold-from", help="bucc-evaluate JSON of the training split")
    s.add_argument("--threshold", type=float, help="instead of --threshold-from")
    s.add_argument("--pairs", required=True, help="output: xx_id<TAB>en_id, best first")
    s.set_defaults(func=cmd_bucc_extract)
