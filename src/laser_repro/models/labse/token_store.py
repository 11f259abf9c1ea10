"""LaBSE's token ids, tokenized once (rule ``labse_tokenize``, ``laser-repro labse-tokenize``) into flat
files that every training process maps read-only: the page cache holds one copy for all the ranks of a
node, and no rank tokenizes at its start or resume.

A store is a directory: for every split (train, valid) and language ``SPLIT.LANG.ids`` (the ids of all
lines, untruncated, one after another; uint16 where the vocabulary has at most 65,536 entries, else int32)
and ``SPLIT.LANG.offsets`` (int64, lines + 1: line i is ids[offsets[i]:offsets[i + 1]]), and
``manifest.json``: the vocabulary it was made with (sha256 of tokenizer.json, its size), the dtype, each
file's lines, tokens and sha256, and its source text's size. The ids are stored whole; a trainer cuts a
line to its encoder's ``max_len`` when it reads it (as the tokenizer's truncation would: ``[CLS]`` and the
first max_len - 2 pieces, ``[SEP]``), so one store serves pre-training and the dual encoders of any length.

The workflow's store is ``<data_dir>/wordpiece_ids/<vocabulary>/`` (:func:`store_dir`); a trainer given
none (a direct ``train()`` call) makes one in its save directory, once (the master; the other ranks wait).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import numpy as np

from laser_repro.core.textio import iter_lines
from laser_repro.data.nway import tok_files
from laser_repro.models.labse import vocab
from laser_repro.models.token_arrays import TokenArrays

FORMAT = 1
MANIFEST = "manifest.json"
SPLITS = ("train", "valid")
#: lines tokenized at once (the tokenizer's batch encoding runs in parallel; only these lines are held)
ENCODE_CHUNK_LINES = 10000
OFFSET_DTYPE = np.dtype("<i8")

log = logging.getLogger("laser_repro")


def store_dir(data_dir, tokenizer) -> Path:
    """The workflow's store of ``data_dir``'s text with the vocabulary ``tokenizer``
    (``.../wordpiece/<vocabulary>/tokenizer.json``): ``data_dir/wordpiece_ids/<vocabulary>``."""
    return Path(data_dir) / "wordpiece_ids" / Path(tokenizer).parent.name


def id_dtype(vocab_size: int) -> np.dtype:
    """The narrowest id type of a vocabulary: 2 bytes a token up to 65,536 entries, else 4 (the paper's 501k)."""
    return np.dtype("<u2") if vocab_size <= 2 ** 16 else np.dtype("<i4")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _encode_file(source: Path, tokenizer, dtype: np.dtype, ids_path: Path, offsets_path: Path, what: str) -> dict:
    """Stream ``source`` through the tokenizer in chunks into the two flat files; their summary."""
    digest, lines, tokens = hashlib.sha256(), 0, 0
    text = iter_lines(source, progress=True, desc=what)
    with open(ids_path, "wb") as ids_out, open(offsets_path, "wb") as offsets_out:
        offsets_out.write(np.zeros(1, OFFSET_DTYPE).tobytes())
        while chunk := list(itertools.islice(text, ENCODE_CHUNK_LINES)):
            encoded = [enc.ids for enc in tokenizer.encode_batch(chunk)]
            lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
            flat = np.fromiter(itertools.chain.from_iterable(encoded), dtype=dtype, count=int(lengths.sum()))
            data = flat.tobytes()
            ids_out.write(data)
            digest.update(data)
            offsets_out.write((tokens + np.cumsum(lengths)).astype(OFFSET_DTYPE).tobytes())
            lines, tokens = lines + len(encoded), tokens + int(lengths.sum())
    return {"source": str(source), "source_bytes": source.stat().st_size, "lines": lines, "tokens": tokens,
            "ids": ids_path.name, "offsets": offsets_path.name, "ids_sha256": digest.hexdigest()}


def build(data_dir, tokenizer_path, langs: Sequence[str], out_dir, *, splits: Sequence[str] = SPLITS,
          encoder=None, dtype: Optional[np.dtype] = None) -> dict:
    """Tokenize ``data_dir/tok/SPLIT.LANG`` of every split and language with ``tokenizer_path`` into the
    store ``out_dir``, atomically (built beside it, renamed into place); returns its manifest. ``encoder``
    (an object with ``encode_batch``) and ``dtype`` replace the tokenizer's and its id type (benchmarks)."""
    out_dir, tokenizer_path = Path(out_dir), Path(tokenizer_path)
    tokenizer = vocab.load(tokenizer_path)
    tokenizer.no_truncation()
    vocab_size = tokenizer.get_vocab_size()
    dtype = np.dtype(dtype or id_dtype(vocab_size))
    if dtype.itemsize < id_dtype(vocab_size).itemsize:
        raise ValueError(f"{tokenizer_path}: {vocab_size} entries do not fit {dtype}")
    tokenizer = encoder or tokenizer
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = out_dir.parent / f".{out_dir.name}.tmp{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        files: dict[str, dict[str, dict]] = {}
        for split in splits:
            files[split] = {}
            for lang, source in tok_files(data_dir, split, langs).items():
                if not source.is_file():
                    raise FileNotFoundError(f"{source}: no such file (the Moses-preprocessed {split} lines of {lang})")
                start = time.perf_counter()
                entry = _encode_file(source, tokenizer, dtype, staging / f"{split}.{lang}.ids",
                                     staging / f"{split}.{lang}.offsets", f"{split}.{lang}")
                files[split][lang] = entry
                log.info("%s: %d lines, %d tokens (%.1f a line) in %.0f s", source, entry["lines"], entry["tokens"],
                         entry["tokens"] / max(entry["lines"], 1), time.perf_counter() - start)
            sizes = {lang: f["lines"] for lang, f in files[split].items()}
            if len(set(sizes.values())) != 1 or not next(iter(sizes.values())):
                raise ValueError(f"{Path(data_dir) / 'tok'}: {split} files are not line-aligned or empty: {sizes}")
        manifest = {"format": FORMAT, "dtype": dtype.str, "offsets_dtype": OFFSET_DTYPE.str, "languages": list(langs),
                    "tokenizer": {"path": str(tokenizer_path), "sha256": sha256_file(tokenizer_path),
                                  "vocab_size": vocab_size},
                    "splits": {split: {"lines": next(iter(f.values()))["lines"], "files": f} for split, f in files.items()}}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        old = out_dir.parent / f".{out_dir.name}.old{os.getpid()}"
        if out_dir.exists():
            out_dir.rename(old)
        staging.rename(out_dir)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


class TokenLines(TokenArrays):
    """The lines of one mapped file: ``self[i]`` the int64 ids of line i, cut to ``max_len`` (``[CLS]``, the
    first max_len - 2 pieces, ``[SEP]``: the tokenizer's truncation); ``self[a:b]`` a list of them."""

    def __init__(self, flat: np.ndarray, offsets: np.ndarray, max_len: Optional[int] = None):
        if max_len is not None and max_len < 2:
            raise ValueError(f"max_len {max_len}: a line needs at least [CLS] and [SEP]")
        super().__init__(flat, offsets)
        self.max_len = max_len

    def __getitem__(self, i):
        ids = super().__getitem__(i)
        if isinstance(i, slice):
            return ids  # the lines, each through this method
        if self.max_len is not None and len(ids) > self.max_len:
            ids = np.concatenate([ids[:self.max_len - 1], ids[-1:]])
        return ids.astype(np.int64)

    def lengths(self) -> np.ndarray:
        lengths = np.diff(self.offsets)
        return lengths if self.max_len is None else np.minimum(lengths, self.max_len)

    def nbytes(self) -> int:
        return self.flat.nbytes + self.offsets.nbytes


def _mapped(path: Path, dtype: np.dtype, count: int) -> np.ndarray:
    """``path`` as a read-only array of ``count`` items (shared pages: no copy in this process)."""
    size = path.stat().st_size if path.exists() else None
    if size != count * dtype.itemsize:
        raise ValueError(f"{path}: {size} bytes, the manifest says {count} x {dtype.itemsize} (an incomplete store: "
                         f"rerun labse-tokenize)")
    if count == 0:
        return np.zeros(0, dtype)
    return np.memmap(path, dtype=dtype, mode="r", shape=(count,))


class TokenStore:
    """An opened store (:func:`open_store`)."""

    def __init__(self, directory: Path, manifest: dict):
        self.directory, self.manifest = directory, manifest
        self.dtype = np.dtype(manifest["dtype"])

    def split(self, split: str, langs: Sequence[str], max_len: Optional[int]) -> dict[str, TokenLines]:
        """language -> the mapped lines of ``split``, cut to ``max_len``."""
        entry = self.manifest["splits"][split]
        out = {}
        for lang in langs:
            f = entry["files"][lang]
            out[lang] = TokenLines(_mapped(self.directory / f["ids"], self.dtype, f["tokens"]),
                                   _mapped(self.directory / f["offsets"], OFFSET_DTYPE, f["lines"] + 1), max_len)
        return out


def store_problem(directory, tokenizer_path, langs: Sequence[str], data_dir=None,
                  splits: Sequence[str] = SPLITS) -> Optional[str]:
    """Why the store ``directory`` cannot serve ``langs`` with this vocabulary (and, given ``data_dir``, its
    text as it is now); None when it can."""
    path = Path(directory) / MANIFEST
    if not path.is_file():
        return f"{path}: no such file (make the token arrays: laser-repro labse-tokenize, rule labse_tokenize)"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        made_with = manifest["tokenizer"]["sha256"]
    except (ValueError, KeyError, TypeError) as err:
        return f"{path}: not a token-array manifest ({err})"
    if manifest.get("format") != FORMAT:
        return f"{path}: format {manifest.get('format')!r}, this code reads {FORMAT}; rerun labse-tokenize"
    if made_with != sha256_file(Path(tokenizer_path)):
        return (f"{path}: made with another vocabulary ({manifest['tokenizer']['path']}, sha256 {made_with[:12]}) "
                f"than {tokenizer_path}; rerun labse-tokenize with it")
    for split in splits:
        missing = [lang for lang in langs if lang not in manifest.get("splits", {}).get(split, {}).get("files", {})]
        if missing:
            return f"{path}: no {split} token ids of {missing}; rerun labse-tokenize with these languages"
        if data_dir is not None:
            for lang, source in tok_files(data_dir, split, langs).items():
                recorded = manifest["splits"][split]["files"][lang]["source_bytes"]
                if source.is_file() and source.stat().st_size != recorded:
                    return (f"{path}: made from another {source} ({recorded} bytes, now {source.stat().st_size}); "
                            f"rerun labse-tokenize")
    return None


def open_store(directory, tokenizer_path, langs: Sequence[str], data_dir=None,
               splits: Sequence[str] = SPLITS) -> TokenStore:
    """The store ``directory``, checked against the vocabulary and the languages (a clear error otherwise)."""
    problem = store_problem(directory, tokenizer_path, langs, data_dir, splits)
    if problem:
        raise ValueError(problem)
    manifest = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    return TokenStore(Path(directory), manifest)


def open_for_training(data_dir, tokenizer_path, langs: Sequence[str], save_dir, *, is_master: bool, barrier,
                      log_: Optional[logging.Logger] = None) -> TokenStore:
    """The store a trainer reads: the workflow's (:func:`store_dir`) where it exists, else one made once in
    ``save_dir/tokens`` by the master while the other ranks wait at ``barrier()`` (kept for a resume)."""
    shared = store_dir(data_dir, tokenizer_path)
    if (shared / MANIFEST).is_file():
        return open_store(shared, tokenizer_path, langs, data_dir)
    private = Path(save_dir) / "tokens"
    if is_master and store_problem(private, tokenizer_path, langs, data_dir):
        (log_ or log).warning("no token arrays at %s: tokenizing %s once into %s (the workflow's rule "
                              "labse_tokenize does this before training)", shared, Path(data_dir) / "tok", private)
        build(data_dir, tokenizer_path, langs, private)
    barrier()
    return open_store(private, tokenizer_path, langs, data_dir)


def manifest_file(data_dir, tokenizer_path) -> Optional[Path]:
    """The workflow store's manifest, where it exists (a training run's fingerprint includes it)."""
    path = store_dir(data_dir, tokenizer_path) / MANIFEST
    return path if path.is_file() else None


def cmd_tokenize(a) -> None:
    if a.threads:  # the tokenizer's batch encoding (rayon) otherwise takes every core of the node
        os.environ["RAYON_NUM_THREADS"] = str(a.threads)
    manifest = build(a.data, a.tokenizer, a.langs, a.output)
    tokens = sum(f["tokens"] for s in manifest["splits"].values() for f in s["files"].values())
    log.info("%s: %d tokens as %s (vocabulary of %d, %s)", a.output, tokens, manifest["dtype"],
             manifest["tokenizer"]["vocab_size"], a.tokenizer)


def add_cli(sub) -> None:
    s = sub.add_parser("labse-tokenize", help="tokenize LaBSE's training text once into flat token-id files that "
                                              "every training process maps read-only")
    s.add_argument("--data", required=True, help="the nway data directory (its tok/{train,valid}.LANG)")
    s.add_argument("--tokenizer", required=True, help="the WordPiece vocabulary (tokenizer.json)")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--output", required=True, help="the store directory (replaced atomically)")
    s.add_argument("--threads", type=int, default=0, help="the tokenizer's threads (0: every core)")
    s.set_defaults(func=cmd_tokenize)
