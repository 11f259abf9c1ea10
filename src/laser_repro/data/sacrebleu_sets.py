"""WMT news test sets as plain text through sacrebleu's own definitions (pinned sacrebleu 2.6.0):
the training corpora of the WMT news sets (``download: {sacrebleu: ...}`` of a local corpus) and the
WMT similarity evaluation (:mod:`laser_repro.evaluation.wmt`) both read them here.

* :func:`test_set_sources` gives the tarball URL(s) and md5 sacrebleu would download, so the workflow
  fetches them itself (retries, alternatives, atomic write: ``laser-repro fetch``).
* :func:`prepare_cache` verifies the md5, places the tarball in a private sacrebleu cache
  (``$SACREBLEU/<test_set>/raw/<name>``) and extracts it there; :func:`sacrebleu_files` then lets
  sacrebleu's own code turn the SGML (WMT21 on: XML) into text in a subprocess with ``SACREBLEU``
  pointing at that cache and with downloads disabled. Extraction is ours because sacrebleu 2.6.0
  extracts only right after downloading (``utils.download_file``): a tarball already in place is never
  unpacked.
* :func:`write_pair_files`: one sacrebleu pair's two sides, line for line (a bitext corpus).
* :func:`nway_texts` joins the xx-en pairs on the English side into an N-way aligned set: a segment
  is the same when it sits at the same position of the same document (docid) *and* its English text
  is identical (``key="text"``: identical English alone, for sets whose docids differ between
  pairs). Text alone is not the default key: news sets repeat short sentences in different documents.
  newstest2008-2013 (sacrebleu ``wmt08``-``wmt13``) are N-way parallel (one English file for all
  pairs), so every segment joins. newstest2014 is not: each pair has documents of its own (de-en
  starts with "Gutach: ...", fr-en with "Spectacular Wingsuit Jump Over Bogota"), so only documents
  shared by all requested pairs survive the join; the meta record counts them. sacrebleu's wmt14 has
  no Spanish (pairs cs, de, fr, hi, ru with en). :func:`build_texts` writes a language the test set
  lacks to ``meta.json`` as absent with the reason; :func:`write_nway_files` (a corpus) refuses it.
* :func:`build_texts_from_files`: the same outputs from N-way plain-text files (one sentence a line,
  line i the same sentence in every language, e.g. ``<data_root>/wmt-news/multiway/newstest2012.<xx>``,
  named by :func:`text_file_stem`): no archive, no sacrebleu processing. Which languages the set has
  is still sacrebleu's definition, so both sources write the same files.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from laser_repro.core import languages
from laser_repro.core.errors import UserError
from laser_repro.core.textio import InputError, atomic_output, iter_lines, write_json

PIVOT = "eng"
#: sacrebleu version whose dataset definitions this module was checked against (workflow/envs/constraints.txt).
SACREBLEU_VERSION = "2.6.0"


class WmtError(UserError):
    """A test set, tarball or language request that cannot be served; the message says why."""


# --------------------------------------------------------------------------- sacrebleu definitions


@dataclass(frozen=True)
class TestSetSource:
    """One archive of a sacrebleu test set."""

    test_set: str
    url: str
    md5: str | None
    tarball: str  # the file name sacrebleu gives it under <cache>/<test_set>/raw/


def _dataset(test_set: str):
    from sacrebleu.dataset import DATASETS

    if test_set not in DATASETS:
        wmt = sorted(n for n in DATASETS if n.startswith("wmt"))
        raise WmtError(f"sacrebleu has no test set {test_set!r}; its WMT test sets are: {', '.join(wmt)}")
    return DATASETS[test_set]


def tarball_name(test_set: str, url: str) -> str:
    """The local name sacrebleu uses for a downloaded archive (``Dataset._get_tarball_filename``)."""
    return test_set.replace("/", "_") + "." + os.path.basename(url)


def test_set_sources(test_set: str) -> list[TestSetSource]:
    """The archive URL(s) and md5 sums sacrebleu would download for ``test_set``."""
    ds = _dataset(test_set)
    md5s = list(ds.md5) if ds.md5 else [None] * len(ds.data)
    return [TestSetSource(test_set, url, md5, tarball_name(test_set, url)) for url, md5 in zip(ds.data, md5s)]


def test_set_downloads(test_set: str, sha256: Mapping[str, str] | None = None) -> list[tuple[str, str | None]]:
    """``(url, sha256)`` per archive for a download rule. sacrebleu pins only md5 sums, so the SHA-256
    comes from ``sha256`` (keyed by the URL's file name) or is None; ``wmt-texts`` checks the md5."""
    sha256 = sha256 or {}
    return [(s.url, sha256.get(os.path.basename(s.url))) for s in test_set_sources(test_set)]


def sacrebleu_code(code: str) -> str:
    """sacrebleu's (ISO 639-1 style) code for one of our ISO 639-3 codes."""
    lang = languages.get(code)
    return lang.paper or lang.moses


def language_pairs(test_set: str, codes: Sequence[str]) -> tuple[dict[str, tuple[str, bool]], dict[str, str]]:
    """Which sacrebleu pair serves each non-English language: ``{code: (langpair, xx_is_source)}``,
    preferring xx-en; and ``{code: reason}`` for the languages the test set does not have."""
    pairs = list(_dataset(test_set).langpairs)
    present, absent = {}, {}
    for code in codes:
        if code == PIVOT:
            continue
        xx = sacrebleu_code(code)
        if f"{xx}-en" in pairs:
            present[code] = (f"{xx}-en", True)
        elif f"en-{xx}" in pairs:
            present[code] = (f"en-{xx}", False)
        else:
            with_en = sorted({p for p in pairs if "en" in p.split("-")})
            absent[code] = (f"sacrebleu {SACREBLEU_VERSION} test set {test_set} has no {xx}-en or en-{xx} "
                            f"pair (its English pairs: {', '.join(with_en) or 'none'})")
    return present, absent


def langpair_of(template: str, src: str, tgt: str) -> str:
    """The sacrebleu pair of a bitext (src, tgt): ``template`` (``{src}-{tgt}``, ``{tgt}-{src}``) with
    the two languages' sacrebleu codes."""
    return template.format(src=sacrebleu_code(src), tgt=sacrebleu_code(tgt))


def pair_side(langpair: str, code: str) -> bool:
    """Whether ``code`` (ISO 639-3) is the source side of ``langpair`` (else its reference side)."""
    xx = sacrebleu_code(code)
    sides = langpair.split("-")
    if xx not in sides:
        raise WmtError(f"{code} ({xx}) is not a language of the sacrebleu pair {langpair}")
    return sides[0] == xx


def check_langpairs(test_set: str, langpairs: Sequence[str]) -> None:
    """Every pair is one of the test set's; the error lists the pairs it has."""
    have = _dataset(test_set).langpairs
    missing = [lp for lp in dict.fromkeys(langpairs) if lp not in have]
    if missing:
        raise WmtError(f"sacrebleu {SACREBLEU_VERSION} test set {test_set} has no pair {', '.join(missing)} "
                       f"(its pairs: {', '.join(sorted(have))})")


def langpair_member(test_set: str, langpair: str, code: str) -> str:
    """The archive member sacrebleu reads ``code``'s side of ``langpair`` from (from WMT21 on, one XML
    file holds both sides): where a text came from, for provenance."""
    files = _dataset(test_set).langpairs[langpair]
    files = files["path"] if isinstance(files, dict) else files
    files = [files] if isinstance(files, str) else list(files)
    return files[0] if pair_side(langpair, code) or len(files) == 1 else files[1]


def language_member(test_set: str, code: str) -> str:
    """The archive member holding language ``code``'s text in ``test_set``: its side of the pair with
    English that :func:`language_pairs` serves it from (English: its side of the first such pair)."""
    if code == PIVOT:
        langpair = next((lp for lp in _dataset(test_set).langpairs if "en" in lp.split("-")), None)
        if langpair is None:
            raise WmtError(f"sacrebleu {SACREBLEU_VERSION} test set {test_set} has no pair with English")
    else:
        present, absent = language_pairs(test_set, [code])
        if code in absent:
            raise WmtError(absent[code])
        langpair = present[code][0]
    return langpair_member(test_set, langpair, code)


def text_file_stem(test_set: str) -> str:
    """The file stem of a test set's plain-text files: the name sacrebleu's archive gives its files
    (wmt12: ``test/newstest2012-src.cs.sgm`` -> ``newstest2012``)."""
    return os.path.basename(language_member(test_set, PIVOT)).split("-")[0].split(".")[0]


def text_file_source(test_set: str, code: str) -> str:
    """Where one language's plain text comes from: ``<archive URL>#<member>`` (provenance)."""
    (src, *_) = test_set_sources(test_set)
    return f"{src.url}#{language_member(test_set, code)}"


# --------------------------------------------------------------------------- private sacrebleu cache


def md5_file(path: Path | str) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _match_tarballs(test_set: str, tarballs: Sequence[Path], md5: Sequence[str] | None):
    """Pair every archive of the test set with one given file (by name, else by md5) and verify it."""
    sources = test_set_sources(test_set)
    if md5 is not None and len(md5) != len(tarballs):
        raise WmtError(f"{len(md5)} --md5 value(s) for {len(tarballs)} --tarball file(s); give one per tarball")
    digests = {}
    for t in tarballs:
        if not Path(t).is_file():
            raise WmtError(f"{t}: tarball does not exist")
        digests[Path(t)] = md5_file(t)
    expected_by_file = dict(zip(map(Path, tarballs), md5)) if md5 is not None else {}
    matched = []
    for src in sources:
        base = os.path.basename(src.url)
        cands = [Path(t) for t in tarballs if Path(t).name in (base, src.tarball)]
        if not cands and len(sources) == 1 and len(tarballs) == 1:
            cands = [Path(tarballs[0])]
        if not cands:
            cands = [t for t, d in digests.items() if src.md5 and d == src.md5]
        if not cands:
            raise WmtError(f"test set {test_set} needs {base} ({src.url}, md5 {src.md5}); none of the given "
                           f"tarballs ({', '.join(str(t) for t in tarballs)}) has that name or md5")
        path = cands[0]
        want = expected_by_file.get(path, src.md5)
        if want is not None and digests[path] != want.lower():
            origin = "--md5" if path in expected_by_file else f"sacrebleu {SACREBLEU_VERSION}'s definition of {test_set}"
            raise WmtError(f"{path}: md5 {digests[path]} but {origin} expects {want} for {src.url}: "
                           f"the download is corrupt or a different file")
        matched.append((src, path, digests[path]))
    return matched


def _extract(archive: Path, dest: Path) -> None:
    """Unpack like sacrebleu's ``extract_tarball``, refusing members that would leave ``dest``."""
    name = archive.name
    if name.endswith((".tgz", ".tar.gz", ".tar")):
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    elif name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            root = dest.resolve()
            for member in zf.namelist():
                if not (dest / member).resolve().is_relative_to(root):
                    raise WmtError(f"{archive}: member {member!r} would be written outside {dest}")
            zf.extractall(dest)
    else:
        raise WmtError(f"{archive}: unknown archive type (sacrebleu extracts .tgz, .tar.gz and .zip)")


def prepare_cache(test_set: str, tarballs: Sequence[Path | str], cache: Path | str,
                  md5: Sequence[str] | None = None) -> list[dict]:
    """Place the test set's archive(s) in a sacrebleu cache directory as sacrebleu would after a
    download (``<cache>/<test_set>/raw/<tarball>``, unpacked beside it). ``md5`` replaces sacrebleu's
    checksums, one per tarball (a re-packed mirror or a test fixture). Returns provenance records."""
    raw = Path(cache) / test_set / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    records = []
    for src, path, digest in _match_tarballs(test_set, [Path(t) for t in tarballs], md5):
        shutil.copyfile(path, raw / src.tarball)
        _extract(raw / src.tarball, raw)
        records.append({"url": src.url, "file": str(path), "md5": digest, "sacrebleu_md5": src.md5})
    return records


# Runs in a subprocess: SACREBLEU is read once, when sacrebleu is imported, so a private cache
# needs a fresh interpreter. Any download attempt fails loudly instead of reaching the network.
_SACREBLEU_SCRIPT = r"""
import json, sys, urllib.request

def _offline(url, *args, **kwargs):
    raise RuntimeError(f"sacrebleu tried to download {getattr(url, 'full_url', url)} although its "
                       f"archive was placed in the cache")

urllib.request.urlopen = _offline
from sacrebleu.dataset import DATASETS

test_set, langpairs = sys.argv[1], json.loads(sys.argv[2])
ds = DATASETS[test_set]
json.dump({lp: dict(zip(ds.fieldnames(lp), ds.get_files(lp))) for lp in langpairs}, sys.stdout)
"""


def sacrebleu_files(test_set: str, langpairs: Sequence[str], cache: Path | str) -> dict[str, dict[str, str]]:
    """sacrebleu's processed text files per pair and field (src, ref, docid, ...) in ``cache``."""
    env = dict(os.environ, SACREBLEU=str(cache))
    proc = subprocess.run([sys.executable, "-c", _SACREBLEU_SCRIPT, test_set, json.dumps(list(langpairs))],
                          env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise WmtError(f"sacrebleu could not process {test_set} ({', '.join(langpairs)}) from the cache "
                       f"{cache}:\n{proc.stderr.strip()[-3000:]}")
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------- N-way join


@dataclass(frozen=True)
class Segment:
    key: tuple  # (docid, position within the document) or (None, line index) without docids
    en: str
    xx: str
    origlang: str | None


def read_columns(files: Mapping[str, str]) -> dict[str, list[str]]:
    """The line-aligned columns of one sacrebleu pair from its field files: ``src``, ``ref`` (the first
    reference if several) and, where sacrebleu has them, ``docid`` and ``origlang``."""
    # the first reference by name: "ref", else "ref:0" / "ref:A" (WMT21's translators come from a set)
    ref_field = min((f for f in files if f == "ref" or f.startswith("ref:")), default=None)
    if "src" not in files or ref_field is None:
        raise WmtError(f"sacrebleu gave no src/ref fields: {sorted(files)}")
    columns = {"src": list(iter_lines(files["src"])), "ref": list(iter_lines(files[ref_field]))}
    for meta in ("docid", "origlang"):
        if meta in files:
            columns[meta] = list(iter_lines(files[meta]))
    n = len(columns["src"])
    for name, col in columns.items():
        if len(col) != n:
            raise InputError(f"{files[ref_field if name == 'ref' else name]}: {len(col)} lines but the source "
                             f"{files['src']} has {n}")
    return columns


def read_pair(files: Mapping[str, str], xx_is_source: bool) -> list[Segment]:
    """The segments of one xx-en (``xx_is_source``) or en-xx sacrebleu pair from its field files."""
    columns = read_columns(files)
    n = len(columns["src"])
    seen: dict[str, int] = {}
    segments = []
    for i in range(n):
        if "docid" in columns:
            doc = columns["docid"][i]
            key = (doc, seen.get(doc, 0))
            seen[doc] = key[1] + 1
        else:
            key = (None, i)
        xx, en = (columns["src"][i], columns["ref"][i]) if xx_is_source else (columns["ref"][i], columns["src"][i])
        segments.append(Segment(key, en, xx, columns["origlang"][i] if "origlang" in columns else None))
    return segments


def join_on_english(pairs: Mapping[str, Sequence[Segment]], key: str = "doc",
                    keep_repeats: bool = False) -> tuple[list[dict[str, str]], dict]:
    """N-way rows ``{eng: ..., code: ...}`` of the segments all pairs share, in the order of the first
    pair. ``key="doc"``: a row needs the same (docid, position) in every pair and identical English
    text. ``key="text"``: the English text alone is the key, and an English sentence that occurs more
    than once within a pair is ambiguous and left out. Rows with an empty sentence, or repeating an
    earlier row's sentence in any language (retrieval could not tell them apart), are left out too
    unless ``keep_repeats`` (training text: the test set's lines as they are); every exclusion is counted."""
    if key not in ("doc", "text"):
        raise WmtError(f"unknown join key {key!r} (doc or text)")
    if not pairs:
        raise WmtError("no language besides English to align")
    codes = list(pairs)
    stats = {"candidates": 0, "english_mismatch": 0, "ambiguous_english": 0, "empty_removed": 0,
             "duplicates_removed": 0}
    index = {}
    for c in codes:
        if key == "doc":
            index[c] = {s.key: s for s in pairs[c]}
            if len(index[c]) != len(pairs[c]):
                raise WmtError(f"{c}: repeated (docid, position) keys in its pair; cannot align")
        else:
            counts: dict[str, int] = {}
            for s in pairs[c]:
                counts[s.en] = counts.get(s.en, 0) + 1
            stats["ambiguous_english"] += sum(n for n in counts.values() if n > 1)
            index[c] = {s.en: s for s in pairs[c] if counts[s.en] == 1}
    candidates = []
    for seg in pairs[codes[0]]:
        k = seg.key if key == "doc" else seg.en
        segs = [index[c].get(k) for c in codes]
        if any(s is None for s in segs) or segs[0] is not seg:
            continue
        stats["candidates"] += 1
        if any(s.en != seg.en for s in segs):
            stats["english_mismatch"] += 1
            continue
        candidates.append(({PIVOT: seg.en, **{c: s.xx for c, s in zip(codes, segs)}}, seg.origlang))
    if keep_repeats:
        rows, origlang = [row for row, _ in candidates], _origlang_counts(orig for _, orig in candidates)
    else:
        rows, origlang = _retrievable_rows(candidates, stats)
    stats["sentences"] = len(rows)
    stats["origlang"] = origlang
    return rows, stats


def _origlang_counts(origlangs) -> dict[str, int]:
    counts: dict[str, int] = {}
    for orig in origlangs:
        counts[orig or "unknown"] = counts.get(orig or "unknown", 0) + 1
    return dict(sorted(counts.items()))


def _retrievable_rows(candidates, stats: dict) -> tuple[list[dict[str, str]], dict[str, int]]:
    """The rows of ``(row, origlang)`` candidates that retrieval can score: a row with an empty sentence,
    or repeating an earlier row's sentence in any language, is left out (counted in ``stats``).
    Returns the rows and their count per original language."""
    seen: dict[str, set] = {}
    kept = []
    for row, orig in candidates:
        if any(not text.strip() for text in row.values()):
            stats["empty_removed"] += 1
            continue
        if any(text in seen.setdefault(c, set()) for c, text in row.items()):
            stats["duplicates_removed"] += 1
            continue
        for c, text in row.items():
            seen[c].add(text)
        kept.append((row, orig))
    return [row for row, _ in kept], _origlang_counts(orig for _, orig in kept)


def nway_texts(test_set: str, tarballs: Sequence[Path | str], codes: Sequence[str],
               md5: Sequence[str] | None = None, key: str = "doc",
               keep_repeats: bool = False) -> tuple[list[dict[str, str]], dict]:
    """The N-way rows (:func:`join_on_english`) of the languages of ``codes`` that the test set pairs
    with English, and the meta record (archives, absent languages with the reason, pairs, join
    counts). ``md5``: one per tarball instead of sacrebleu's (a re-packed mirror, a test fixture)."""
    codes = list(dict.fromkeys(codes))
    for code in codes:
        languages.get(code)  # clear error for an unknown code
    present, absent = language_pairs(test_set, codes)
    if not present:
        raise WmtError(f"test set {test_set} has none of the languages {', '.join(c for c in codes if c != PIVOT)}"
                       f" paired with English: " + "; ".join(f"{c}: {r}" for c, r in absent.items()))
    with tempfile.TemporaryDirectory(prefix="sacrebleu-cache-") as cache:
        archives = prepare_cache(test_set, tarballs, cache, md5)
        files = sacrebleu_files(test_set, sorted({lp for lp, _ in present.values()}), cache)
        pairs = {code: read_pair(files[lp], xx_src) for code, (lp, xx_src) in present.items()}
    rows, stats = join_on_english(pairs, key, keep_repeats)
    if not rows:
        how = "same document and position, identical English" if key == "doc" else "identical English"
        raise WmtError(
            f"test set {test_set}: no segment is shared by all of the pairs "
            f"{', '.join(lp for lp, _ in present.values())} ({how}); segments per pair: "
            f"{', '.join(f'{c} {len(s)}' for c, s in pairs.items())}. Use an N-way set (sacrebleu wmt12 or "
            f"wmt13), fewer languages{', or --join text' if key == 'doc' else ''}.")
    meta = {
        "test_set": test_set,
        "sacrebleu_version": _sacrebleu_version(),
        "archives": archives,
        "sentences": len(rows),
        "languages": [c for c in codes if c == PIVOT or c in present],
        "absent": absent,
        "pairs": {c: {"langpair": lp, "segments": len(pairs[c])} for c, (lp, _) in present.items()},
        "join": {"key": ("docid + position in document, identical English text" if key == "doc"
                         else "identical English text, unique within each pair"), **stats},
    }
    return rows, meta


def _write_column(rows: Sequence[Mapping[str, str]], code: str, path: Path | str) -> None:
    with atomic_output(path) as f:
        for row in rows:
            f.write(row[code] + "\n")


def build_texts(test_set: str, tarballs: Sequence[Path | str], codes: Sequence[str], out_dir: Path | str,
                md5: Sequence[str] | None = None, key: str = "doc", prefix: str = "") -> dict:
    """Write ``<out_dir>/<prefix><code>.txt`` (N-way aligned, one sentence a line) for the languages
    of ``codes`` the test set has, and ``<out_dir>/meta.json``; returns the meta record. ``key``: see
    :func:`join_on_english`."""
    rows, meta = nway_texts(test_set, tarballs, codes, md5, key)
    return _write_texts(out_dir, prefix, rows, meta["languages"], meta)


def _write_texts(out_dir: Path | str, prefix: str, rows: Sequence[Mapping[str, str]], written: Sequence[str],
                 meta: dict) -> dict:
    """``<out_dir>/<prefix><code>.txt`` per language and ``meta.json`` (``meta`` plus the counts and files)."""
    out_dir = Path(out_dir)
    for code in written:
        _write_column(rows, code, out_dir / f"{prefix}{code}.txt")
    meta = {**meta, "sentences": len(rows), "languages": list(written),
            "files": {code: f"{prefix}{code}.txt" for code in written}}
    write_json(out_dir / "meta.json", meta)
    return meta


def read_text_files(files: Mapping[str, Path | str]) -> dict[str, list[str]]:
    """The lines of N-way plain-text files (``{code: path}``, line i the same sentence in every file).
    A missing or empty file, or files of different lengths, is an error naming the files."""
    lines = {}
    for code, path in files.items():
        if not Path(path).is_file():
            raise WmtError(f"{path}: the {code} file of the test set does not exist")
        lines[code] = list(iter_lines(path))
        if not lines[code]:
            raise WmtError(f"{path}: the {code} file of the test set is empty")
    counts = {code: len(v) for code, v in lines.items()}
    if len(set(counts.values())) > 1:
        raise WmtError("test-set files are not line-aligned (N-way files need the same number of lines): "
                       + ", ".join(f"{files[c]} has {n}" for c, n in counts.items()))
    return lines


def build_texts_from_files(test_set: str, files: Mapping[str, Path | str], codes: Sequence[str],
                           out_dir: Path | str, prefix: str = "") -> dict:
    """:func:`build_texts` from N-way plain-text files (``{code: path}``, one per language of ``codes``
    the test set has, English included): the same outputs and ``meta.json`` keys; rows are aligned by
    line number, and rows retrieval cannot score are left out as there."""
    codes = list(dict.fromkeys(codes))
    for code in [*codes, *files]:
        languages.get(code)  # clear error for an unknown code
    present, absent = language_pairs(test_set, codes)
    written = [c for c in codes if c == PIVOT or c in present]
    if len(written) < 2:
        raise WmtError(f"test set {test_set} has fewer than 2 of the languages {', '.join(codes)}: "
                       + "; ".join(f"{c}: {r}" for c, r in absent.items()))
    problems = []
    if missing := [c for c in written if c not in files]:
        problems.append(f"no file given for {', '.join(missing)}")
    if extra := [c for c in files if c not in written]:
        problems.append(f"files given for {', '.join(extra)}, which are not among them"
                        + "".join(f" ({c}: {absent[c]})" for c in extra if c in absent))
    if problems:
        raise WmtError(f"test set {test_set}, languages {', '.join(written)}: {'; '.join(problems)}")
    lines = read_text_files({c: files[c] for c in written})
    stats = {"candidates": len(lines[written[0]]), "english_mismatch": 0, "ambiguous_english": 0,
             "empty_removed": 0, "duplicates_removed": 0}
    candidates = [({c: lines[c][i] for c in written}, None) for i in range(stats["candidates"])]
    rows, origlang = _retrievable_rows(candidates, stats)
    if not rows:
        raise WmtError(f"test set {test_set}: every line of {', '.join(str(files[c]) for c in written)} is empty "
                       f"or repeats an earlier one")
    return _write_texts(out_dir, prefix, rows, written, {
        "test_set": test_set,
        "sacrebleu_version": _sacrebleu_version(),
        "archives": [],
        "texts": [{"language": c, "file": str(files[c]), "lines": len(lines[c]), "md5": md5_file(files[c])}
                  for c in written],
        "absent": absent,
        "pairs": {c: {"langpair": lp, "segments": len(lines[c])} for c, (lp, _) in present.items()},
        "join": {"key": "line number (N-way plain-text files)", **stats, "sentences": len(rows),
                 "origlang": origlang},
    })


def write_nway_files(test_set: str, tarballs: Sequence[Path | str], paths: Mapping[str, Path | str],
                     meta_path: Path | str, md5: Sequence[str] | None = None, key: str = "doc") -> dict:
    """An N-way corpus from a test set: ``paths[code]`` gets language ``code``'s side of the N-way
    rows, line i of every file the same sentence, repeated and empty sentences kept (the set's lines
    as they are: all of them for the N-way newstest2008-2013); ``meta_path`` the meta record. Every
    language must be there (a corpus's files are all read)."""
    if PIVOT not in paths:
        raise WmtError(f"an N-way set from {test_set} is joined on English: {PIVOT} must be one of its "
                       f"languages (given: {', '.join(paths)})")
    rows, meta = nway_texts(test_set, tarballs, list(paths), md5, key, keep_repeats=True)
    if meta["absent"]:
        raise WmtError(f"test set {test_set} lacks languages of the corpus: "
                       + "; ".join(f"{c}: {r}" for c, r in meta["absent"].items()))
    for code, path in paths.items():
        _write_column(rows, code, path)
    meta["files"] = {code: str(path) for code, path in paths.items()}
    write_json(meta_path, meta)
    return meta


def write_pair_files(test_set: str, tarballs: Sequence[Path | str], files: Sequence[tuple[str, str, Path | str]],
                     meta_path: Path | str, md5: Sequence[str] | None = None) -> dict:
    """Bitexts from a test set: for each ``(langpair, code, path)``, ``path`` gets language ``code``'s
    side of the sacrebleu pair ``langpair`` (its source, or its first reference), every segment in
    sacrebleu's order, so that the two sides of a pair are line-aligned; ``meta_path`` the record."""
    wanted = [(lp, code, Path(path), pair_side(lp, code)) for lp, code, path in files]
    if not wanted:
        raise WmtError(f"no pair of {test_set} to write")
    check_langpairs(test_set, [lp for lp, *_ in wanted])
    with tempfile.TemporaryDirectory(prefix="sacrebleu-cache-") as cache:
        archives = prepare_cache(test_set, tarballs, cache, md5)
        fields = sacrebleu_files(test_set, sorted({lp for lp, *_ in wanted}), cache)
        columns = {lp: read_columns(fields[lp]) for lp in fields}
        written = {}
        for lp, code, path, source_side in wanted:
            lines = columns[lp]["src" if source_side else "ref"]
            with atomic_output(path) as f:
                for line in lines:
                    f.write(line + "\n")
            written[str(path)] = {"langpair": lp, "language": code, "side": "src" if source_side else "ref",
                                  "member": langpair_member(test_set, lp, code), "lines": len(lines)}
    meta = {"test_set": test_set, "sacrebleu_version": _sacrebleu_version(), "archives": archives,
            "pairs": {lp: {"segments": len(cols["src"])} for lp, cols in columns.items()}, "files": written}
    write_json(meta_path, meta)
    return meta


def _sacrebleu_version() -> str:
    import sacrebleu

    return sacrebleu.__version__


