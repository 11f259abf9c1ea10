"""The one module through which the pipeline talks to fairseq.

* :func:`binarize_pair`      -- ``fairseq-preprocess`` of one bitext into a shared data dir
* :func:`binarize_nli`       -- NLI premise/hypothesis/label files for the multitask objective
* :func:`fairseq_train_argv` -- the ``fairseq-train`` command line for our task/model
* :func:`train`              -- run ``fairseq-train`` in-process (resumes from checkpoint_last.pt,
  stops with a checkpoint when asked to)
* :func:`distributed_argv`   -- the options of one rank of a multi-process run
* :func:`resume_plan`        -- where in its epoch a checkpoint resumes on this many processes (or a refusal)
* :func:`load_checkpoint`    -- load one of OUR training checkpoints (``weights_only`` kept)
* :func:`load_model`         -- rebuild the fairseq model of such a checkpoint

fairseq itself is imported lazily, so building command lines does not need it.

Checkpoint loading (``weights_only=True`` with an allowlist of classes) is
:mod:`laser_repro.models.checkpoint_safety`; :func:`load_checkpoint` here is that module's.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import logging
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Mapping, Optional, Sequence

import numpy as np
import torch

from laser_repro.core.errors import UserError
from laser_repro.models.checkpoint_safety import (CHECKPOINT_SAFE_GLOBALS, checkpoint_globals_allowed, load_checkpoint,
                                                  load_model_file)

#: the ``--user-dir`` of our fairseq plugin
PLUGIN_DIR = str(Path(__file__).resolve().parent / "fairseq_plugin")

_MODEL_KEYS = {
    # key -> fairseq option
    "encoder_layers": "--encoder-layers",
    "encoder_hidden_size": "--encoder-hidden-size",
    "encoder_embed_dim": "--encoder-embed-dim",
    "encoder_bidirectional": "--encoder-bidirectional",
    "decoder_hidden_size": "--decoder-hidden-size",
    "decoder_embed_dim": "--decoder-embed-dim",
    "decoder_layers": "--decoder-layers",
    "decoder_lang_embed_dim": "--decoder-lang-embed-dim",
    "decoder_out_embed_dim": "--decoder-out-embed-dim",
    "share_decoder_input_output_embed": "--share-decoder-input-output-embed",
    "decoder_output_vocab": "--decoder-output-vocab",
    "dropout": "--dropout",
    "max_source_positions": "--max-source-positions",
    "max_target_positions": "--max-target-positions",
    "nli_hidden_dim": "--nli-hidden-dim",
}
_TRAIN_KEYS = {
    "lr": "--lr",
    "max_tokens": "--max-tokens",
    "max_sentences": "--batch-size",
    "update_freq": "--update-freq",
    "max_epoch": "--max-epoch",
    "max_update": "--max-update",
    "seed": "--seed",
    "log_interval": "--log-interval",
    "save_interval_updates": "--save-interval-updates",
    "keep_interval_updates": "--keep-interval-updates",
    "clip_norm": "--clip-norm",
    "validate_interval_updates": "--validate-interval-updates",
    "patience": "--patience",
    "log_file": "--log-file",
    "num_workers": "--num-workers",
}
#: train.precision -> fairseq's options (its own loss scaling for fp16; bf16 needs no scaler)
_PRECISION_FLAGS = {"fp32": [], "fp16": ["--fp16"], "bf16": ["--bf16"]}
#: interval checkpoints (checkpoint_<epoch>_<update>.pt, ~1 GB each at the paper's size) kept besides
#: checkpoint_last.pt when ``save_interval_updates`` is set without ``keep_interval_updates``
KEEP_INTERVAL_CHECKPOINTS = 2
_REQUIRED_TRAIN_KEYS = ("lr", "max_tokens", "update_freq", "max_epoch", "seed", "log_interval")


# -------------------------------------------------------------------------------------------
# binarization
# -------------------------------------------------------------------------------------------


_MMAP_INDEX_MAGIC = b"MMIDIDX\x00\x00"


def binarized_sentences(idx_path) -> int:
    """Number of sentences of a binarized (fairseq mmap) dataset, read from its .idx header
    (magic, version <Q, dtype code <B, then the sentence count <Q)."""
    import struct

    with open(idx_path, "rb") as f:
        head = f.read(len(_MMAP_INDEX_MAGIC) + 8 + 1 + 8)
    if not head.startswith(_MMAP_INDEX_MAGIC) or len(head) < 26:
        raise ValueError(f"{idx_path}: not a fairseq mmap index (.idx) file")
    return struct.unpack("<Q", head[18:26])[0]


def _pair_files(split: str, src: str, tgt: str) -> list[str]:
    return [f"{split}.{src}-{tgt}.{lang}.{ext}" for lang in (src, tgt) for ext in ("bin", "idx")]


def binarize_pair(
    src: str,
    tgt: str,
    train_prefix,
    dict_path,
    dest_dir,
    valid_prefix=None,
    log=None,
    *,
    workers: int = 1,
) -> None:
    """Binarize ``{train_prefix}.{src}`` / ``{train_prefix}.{tgt}`` (BPE'd, one sentence per line)
    with the shared dictionary ``dict_path`` into ``dest_dir`` (mmap format).

    fairseq-preprocess runs in this process, writing into a temporary directory
    inside ``dest_dir``; the resulting ``train.{src}-{tgt}.{lang}.{bin,idx}`` (and ``valid.*``
    when ``valid_prefix`` is given) are then moved into place with ``os.replace``.
    ``train_prefix=None`` with a ``valid_prefix``: only the ``valid.*`` files (held-out lines).
    ``log``: a path (appended to) or a writable text file object that also receives fairseq's
    log; fairseq logs to stderr in any case.
    """
    if src == tgt:
        raise ValueError(f"refusing to binarize {src}-{tgt}: source and target are the same language")
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    dict_path = Path(dict_path).resolve()
    if not dict_path.is_file():
        raise FileNotFoundError(dict_path)
    prefixes = {} if train_prefix is None else {"train": Path(train_prefix).resolve()}
    if valid_prefix is not None:
        prefixes["valid"] = Path(valid_prefix).resolve()
    if not prefixes:
        raise ValueError("binarize_pair needs a train_prefix, a valid_prefix or both")
    for split, prefix in prefixes.items():
        for lang in (src, tgt):
            f = Path(f"{prefix}.{lang}")
            if not f.is_file():
                raise FileNotFoundError(f)
        if all(Path(f"{prefix}.{lang}").stat().st_size == 0 for lang in (src, tgt)):
            # an empty bitext (a pair absent from its corpus): a readable index of 0 sentences, left
            # out of training by nonempty_pairs (fairseq cannot memory-map the empty .bin)
            logging.getLogger(__name__).warning(
                "%s-%s: no sentences in %s.%s / .%s: the binarized %s.%s-%s is empty (training leaves it out)",
                src, tgt, prefix, src, tgt, split, src, tgt)

    with tempfile.TemporaryDirectory(dir=dest, prefix=f".binarize-{src}-{tgt}-") as tmp:
        cmd = [
            "--source-lang", src, "--target-lang", tgt,
            "--srcdict", str(dict_path), "--joined-dictionary",
            "--destdir", tmp,
            "--dataset-impl", "mmap",
            "--workers", str(int(workers)),
        ]
        for split in prefixes:
            cmd += [f"--{split}pref", str(prefixes[split])]
        # in-process: one interpreter start and torch/fairseq import per job instead of two
        from fairseq import options
        from fairseq_cli import preprocess as fairseq_preprocess

        handler = None
        fs_logger = logging.getLogger("fairseq_cli.preprocess")
        saved_level = fs_logger.level
        if log is not None:
            stream = log if hasattr(log, "write") else open(log, "a", encoding="utf-8")
            handler = logging.StreamHandler(stream)
            handler.setLevel(logging.INFO)
            fs_logger.addHandler(handler)
            if not fs_logger.isEnabledFor(logging.INFO):  # e.g. root at WARNING (pytest)
                fs_logger.setLevel(logging.INFO)
        try:
            fairseq_preprocess.main(options.get_preprocessing_parser().parse_args(cmd))
        except SystemExit as err:
            raise RuntimeError(f"fairseq-preprocess failed for {src}-{tgt}: arguments {cmd}") from err
        finally:
            # fairseq's main() adds a FileHandler for <destdir>/preprocess.log and never removes it
            for h in list(fs_logger.handlers):
                if isinstance(h, logging.FileHandler) and os.path.dirname(h.baseFilename) == os.path.abspath(tmp):
                    fs_logger.removeHandler(h)
                    h.close()
            if handler is not None:
                fs_logger.removeHandler(handler)
                fs_logger.setLevel(saved_level)
                if not hasattr(log, "write"):
                    handler.stream.close()
        names = [n for split in prefixes for n in _pair_files(split, src, tgt)]
        for name in names:
            if not (Path(tmp) / name).is_file():
                raise RuntimeError(f"fairseq-preprocess did not write {name} (see the log)")
        for name in names:
            os.replace(Path(tmp) / name, dest / name)


#: the files :func:`binarize_nli` writes, as suffixes of its ``dest_prefix``
NLI_SUFFIXES = (".premise.bin", ".premise.idx", ".hypothesis.bin", ".hypothesis.idx", ".label.npy")


def binarize_nli(premise_bpe, hypothesis_bpe, labels_tsv, dict_path, dest_prefix, log=None, *,
                 workers: int = 1) -> int:
    """Binarize NLI training pairs for the multitask objective (``--nli-data dest_prefix``).

    ``premise_bpe`` / ``hypothesis_bpe``: BPE'd sentences, one per line; ``labels_tsv``: the
    ``pairID<TAB>label`` file of the same rows (:func:`laser_repro.data.nli_labels.read_labels`; labels
    entailment / neutral / contradiction -> 0 / 1 / 2, the order of ``XNLI_LABELS``).
    Writes ``{dest_prefix}.premise.{bin,idx}`` and ``{dest_prefix}.hypothesis.{bin,idx}``
    (fairseq mmap indexed datasets with the joint dictionary ``dict_path``, binarized by
    :func:`binarize_pair`) and ``{dest_prefix}.label.npy`` (int64).  The three inputs must have
    the same number of lines (ValueError naming the files otherwise).  Everything is written
    under temporary names first; the final names appear only once all files are complete
    (``.label.npy`` last, an earlier one is removed first).  Same inputs -> identical bytes.
    Returns the number of pairs.
    """
    from laser_repro.core.textio import count_lines
    from laser_repro.data.nli_labels import read_labels

    premise_bpe, hypothesis_bpe, labels_tsv = (Path(p).resolve() for p in (premise_bpe, hypothesis_bpe, labels_tsv))
    for f in (premise_bpe, hypothesis_bpe, labels_tsv, Path(dict_path)):
        if not f.is_file():
            raise FileNotFoundError(f)
    _, labels = read_labels(labels_tsv)
    counts = {premise_bpe: count_lines(premise_bpe), hypothesis_bpe: count_lines(hypothesis_bpe), labels_tsv: len(labels)}
    if len(set(counts.values())) != 1:
        raise ValueError("NLI files differ in length: " + ", ".join(f"{f}: {n} lines" for f, n in counts.items()))
    n = len(labels)

    dest_prefix = Path(dest_prefix)
    dest_dir = dest_prefix.parent
    dest_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir, prefix=f".binarize-nli-{dest_prefix.name}-") as tmp:
        tmp = Path(tmp)
        # binarize_pair reads {prefix}.{lang}: the two sides as "languages" premise / hypothesis
        for side, f in (("premise", premise_bpe), ("hypothesis", hypothesis_bpe)):
            os.symlink(f, tmp / f"nli.{side}")
        binarize_pair("premise", "hypothesis", tmp / "nli", dict_path, tmp / "bin", log=log, workers=workers)
        from fairseq.data import indexed_dataset

        staged = {}
        for side in ("premise", "hypothesis"):
            path = tmp / "bin" / f"train.premise-hypothesis.{side}"
            rows = len(indexed_dataset.MMapIndexedDataset(str(path)))
            if rows != n:  # e.g. a line break that fairseq reads differently
                raise RuntimeError(f"{side}s: fairseq binarized {rows} sentences, {n} lines expected")
            for ext in ("bin", "idx"):
                staged[f".{side}.{ext}"] = path.with_name(f"{path.name}.{ext}")
        staged[".label.npy"] = tmp / "label.npy"
        np.save(staged[".label.npy"], labels.astype(np.int64, copy=False))

        final = {suffix: Path(f"{dest_prefix}{suffix}") for suffix in NLI_SUFFIXES}
        final[".label.npy"].unlink(missing_ok=True)  # a rewrite must not look done half way
        for suffix in NLI_SUFFIXES:
            os.replace(staged[suffix], final[suffix])
    return n


# -------------------------------------------------------------------------------------------
# training command line
# -------------------------------------------------------------------------------------------


def _join_pairs(lang_pairs) -> str:
    if isinstance(lang_pairs, str):
        return lang_pairs
    out = []
    for p in lang_pairs:
        out.append(p if isinstance(p, str) else f"{p[0]}-{p[1]}")
    return ",".join(out)


def _join_langs(langs) -> str:
    return langs if isinstance(langs, str) else ",".join(langs)


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def has_valid_data(data_dir, lang_pairs) -> bool:
    """True when ``valid.{src}-{tgt}.*.idx`` exists for at least one (src != tgt) pair."""
    for pair in _join_pairs(lang_pairs).split(","):
        if not pair:
            continue
        src, tgt = pair.split("-")
        if src != tgt and all(
            (Path(data_dir) / f"valid.{src}-{tgt}.{lang}.idx").is_file() for lang in (src, tgt)
        ):
            return True
    return False


def nonempty_pairs(data_dir, lang_pairs, split: str = "train") -> tuple[list, list]:
    """``(kept, dropped)``: the pairs of ``lang_pairs`` (``"deu-eng,kzj-eng"`` or a list of
    ``"src-tgt"`` / ``(src, tgt)``, kept in that form) whose binarized ``{split}`` data has sentences,
    and those whose ``{split}.{src}-{tgt}.*.idx`` says 0 sentences (an empty bitext: a pair absent
    from its corpus, or every line filtered out; fairseq cannot memory-map its empty .bin).

    Dropped pairs are logged in a WARNING naming them. A pair whose files are missing, or with
    src == tgt, is kept (the task reports / skips it). Raises ValueError when pairs were dropped
    and no src != tgt pair is left to train on."""
    items = [p for p in lang_pairs.split(",") if p] if isinstance(lang_pairs, str) else list(lang_pairs)

    def langs(pair):
        return tuple(pair.split("-")) if isinstance(pair, str) else tuple(pair)

    kept, dropped, empty = [], [], []
    for pair in items:
        src, tgt = langs(pair)
        idx = [Path(data_dir) / f"{split}.{src}-{tgt}.{lang}.idx" for lang in (src, tgt)]
        if src != tgt and all(f.is_file() for f in idx):
            n = min(binarized_sentences(f) for f in idx)
            if n == 0:
                dropped.append(pair)
                empty.append(f"{src}-{tgt} ({idx[0]}: 0 sentences)")
                continue
        kept.append(pair)
    if not dropped:
        return kept, dropped
    hint = ("empty bitexts: see 'absent' / 'written' in the extraction statistics "
            "results/<run>/corpora/<corpus>/<pair>.stats.json")
    if all(len(set(langs(p))) == 1 for p in kept):
        raise ValueError(f"no training pair has sentences: {', '.join(empty)} ({hint}); nothing to train on")
    logging.getLogger(__name__).warning(
        "leaving out %d language pair(s) with no %s sentences: %s (%s); training on %d pair(s)",
        len(dropped), split, ", ".join(empty), hint, sum(len(set(langs(p))) == 2 for p in kept))
    return kept, dropped


def nli_settings(nli: Optional[Mapping]) -> Optional[tuple[str, int]]:
    """``(data_prefix, weight)`` of the ``"nli"`` settings ``{"data": PREFIX, "weight": W}`` when
    the NLI objective is on (W > 0), else None (``nli`` None / absent, or W == 0).

    W must be an integer >= 0 (see :mod:`laser_repro.models.laser.fairseq_plugin.laser_task` for its meaning)."""
    if nli is None:
        return None
    if not isinstance(nli, Mapping):
        raise TypeError(f"nli settings must be a mapping {{'data': PREFIX, 'weight': W}}, got {nli!r}")
    unknown = set(nli) - {"data", "weight"}
    if unknown:
        raise ValueError(f"unknown nli keys: {sorted(unknown)}")
    weight = nli.get("weight", 0)
    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
        raise ValueError(f"nli.weight must be an integer >= 0, got {weight!r}")
    if weight == 0:
        return None
    if not nli.get("data"):
        raise ValueError("nli.weight > 0 needs nli.data (the dest_prefix of binarize-nli)")
    return str(nli["data"]), weight


def fairseq_train_argv(
    data_dir,
    save_dir,
    lang_pairs,
    target_langs,
    model: Mapping,
    train: Mapping,
    cpu: bool,
    *,
    arch: str = "laser_lstm",
    validate: Optional[bool] = None,
    nli: Optional[Mapping] = None,
) -> list[str]:
    """The ``fairseq-train`` arguments (without the program name) for a LASER model.

    ``lang_pairs``: ``"deu-eng,deu-spa"`` or a list of ``"src-tgt"`` / ``(src, tgt)``;
    ``target_langs``: ``"eng,spa"`` or a list (order = target-language id).
    ``model`` keys: encoder_layers, encoder_hidden_size, encoder_embed_dim, decoder_hidden_size,
    decoder_embed_dim, decoder_lang_embed_dim, dropout (+ optional encoder_bidirectional,
    decoder_layers, decoder_out_embed_dim, share_decoder_input_output_embed,
    max_source_positions, max_target_positions).
    ``train`` keys: lr, max_tokens, update_freq, max_epoch, seed, log_interval (+ optional
    max_sentences, max_update, save_interval_updates, keep_interval_updates (default
    :data:`KEEP_INTERVAL_CHECKPOINTS` with save_interval_updates), num_workers (default 0), clip_norm,
    log_file, precision: fp32 | fp16 | bf16 -- fp16 and bf16 on GPUs only).
    ``validate``: None = validate iff valid.* files exist in ``data_dir``.
    ``nli``: ``{"data": PREFIX, "weight": W}`` (:func:`nli_settings`); with W > 0 adds the task
    options ``--nli-data PREFIX --nli-weight W`` and uses the ``laser_multitask`` criterion
    instead of ``cross_entropy`` (model key ``nli_hidden_dim``: the classifier's hidden units);
    absent or W == 0: the command line is the one without NLI.
    Optimizer: Adam with a constant learning rate (``--lr-scheduler fixed``), as in the paper.
    """
    unknown = set(model) - set(_MODEL_KEYS)
    if unknown:
        raise ValueError(f"unknown model keys: {sorted(unknown)}")
    unknown = set(train) - set(_TRAIN_KEYS) - {"precision"}
    if unknown:
        raise ValueError(f"unknown train keys: {sorted(unknown)}")
    missing = [k for k in _REQUIRED_TRAIN_KEYS if k not in train]
    if missing:
        raise ValueError(f"missing train keys: {missing}")
    nli_on = nli_settings(nli)

    argv = [
        str(data_dir),
        "--user-dir", PLUGIN_DIR,
        "--task", "laser_multilingual",
        "--lang-pairs", _join_pairs(lang_pairs),
        "--target-langs", _join_langs(target_langs),
    ]
    if nli_on:
        argv += ["--nli-data", nli_on[0], "--nli-weight", str(nli_on[1])]
    argv += ["--arch", arch]
    for key, opt in _MODEL_KEYS.items():
        if model.get(key) is not None:
            argv += [opt, _fmt(model[key])]
    argv += [
        "--criterion", "laser_multitask" if nli_on else "cross_entropy",
        "--optimizer", "adam",
        "--lr-scheduler", "fixed",
    ]
    train = dict(train)
    if train.get("save_interval_updates") and train.get("keep_interval_updates") is None:
        train["keep_interval_updates"] = KEEP_INTERVAL_CHECKPOINTS
    train.setdefault("num_workers", 0)
    for key, opt in _TRAIN_KEYS.items():
        if train.get(key) is not None:
            argv += [opt, _fmt(train[key])]
    precision = train.get("precision") or "fp32"
    if precision not in _PRECISION_FLAGS:
        raise ValueError(f"train.precision {precision!r} is not one of {sorted(_PRECISION_FLAGS)}")
    if cpu and precision != "fp32":
        raise ValueError(f"train.precision {precision}: fairseq trains in {precision} on GPUs only; this run is on "
                         f"the CPU (set train.precision: fp32 for a CPU run)")
    argv += _PRECISION_FLAGS[precision]
    argv += [
        "--save-dir", str(save_dir),
        "--no-epoch-checkpoints",  # keep checkpoint_last.pt (+ checkpoint_best.pt when validating)
        "--log-format", "json",
    ]
    if validate is None:
        validate = has_valid_data(data_dir, lang_pairs)
    if validate:
        argv.append("--skip-invalid-size-inputs-valid-test")
    else:
        argv.append("--disable-validation")
    if cpu:
        argv.append("--cpu")
    return argv


# -------------------------------------------------------------------------------------------
# checkpoints
# -------------------------------------------------------------------------------------------


def checkpoint_model_args(state: Mapping) -> argparse.Namespace:
    """The model arguments (argparse.Namespace) stored in a training checkpoint."""
    cfg = state.get("cfg")
    args = None
    if isinstance(cfg, Mapping):
        args = cfg.get("model")
    if args is None:
        args = state.get("args")
    if isinstance(args, Mapping):
        args = argparse.Namespace(**args)
    if not isinstance(args, argparse.Namespace):
        raise ValueError("checkpoint has no model arguments")
    return copy.deepcopy(args)


def checkpoint_dictionary(state: Mapping) -> dict:
    """``{"symbols", "indices", "bos", "pad", "eos", "unk"}`` saved by the laser_multilingual task."""
    task_state = state.get("task_state") or {}
    d = task_state.get("laser_dictionary")
    if d is None:
        raise ValueError("checkpoint has no task_state['laser_dictionary'] (not a laser_multilingual checkpoint?)")
    return d


def checkpoint_num_updates(state: Mapping) -> int:
    history = state.get("optimizer_history") or []
    return int(history[-1]["num_updates"]) if history else 0


#: fairseq ``extra_state`` key of every checkpoint we train: how many processes wrote it, with which
#: update_freq and max_tokens (:func:`train`); fairseq's own ``iterations_in_epoch`` counts one process's batches
GEOMETRY_KEY = "laser_repro_geometry"
#: ``1``: resume a checkpoint whose position in its epoch cannot be carried over at the start of that epoch
RESTART_EPOCH_ENV = "LASER_REPRO_RESTART_EPOCH"


class ResumeRefused(UserError):
    """A checkpoint saved mid-epoch cannot continue at the same batch on this number of processes."""


def checkpoint_geometry(state: Mapping) -> Optional[dict]:
    """``{"world_size", "update_freq", "max_tokens"}`` of the processes that wrote a training checkpoint:
    our record (:data:`GEOMETRY_KEY`), else fairseq's config (checkpoints from before the record; None
    when neither says)."""
    recorded = (state.get("extra_state") or {}).get(GEOMETRY_KEY)
    if recorded:
        return dict(recorded)
    cfg = state.get("cfg")
    if not isinstance(cfg, Mapping):
        return None
    world = (cfg.get("distributed_training") or {}).get("distributed_world_size")
    if not world:
        return None
    update_freq = (cfg.get("optimization") or {}).get("update_freq") or [None]
    return {"world_size": int(world), "update_freq": update_freq[0],
            "max_tokens": (cfg.get("dataset") or {}).get("max_tokens")}


def resume_position(itr_state: Mapping, written_by: Optional[int], world_size: int, checkpoint,
                    restart_epoch: bool = False) -> int:
    """``iterations_in_epoch`` at which ``world_size`` processes continue fairseq's ``train_iterator`` state
    ``itr_state`` of ``checkpoint``, saved by ``written_by`` processes (None: unknown).

    fairseq shuffles an epoch's batch list (seed + epoch; the same list whatever the number of processes) and
    gives process r of W the batches r, r+W, r+2W, ...; ``iterations_in_epoch`` counts one process's. After
    ``i`` batches each, W processes have trained on exactly the first W x i batches of the list, and W'
    processes resuming at i' skip exactly the first W' x i': the same set iff W x i = W' x i'. So the
    position is carried over when W' divides W x i; otherwise the resume is refused (:class:`ResumeRefused`,
    one line), unless ``restart_epoch``: then the epoch starts over (its first batches are trained twice).
    A position of 0 (a checkpoint at an epoch's end: fairseq then saves the next epoch at 0) resumes anywhere."""
    position = int(itr_state.get("iterations_in_epoch") or 0)
    if position == 0 or written_by == world_size:
        return position
    epoch = itr_state.get("epoch")
    consumed = None if written_by is None else written_by * position
    if consumed is not None and consumed % world_size == 0:
        return consumed // world_size
    if restart_epoch:
        logging.getLogger(__name__).warning(
            "%s: %s=1: resuming its weights at the start of epoch %s on %d processes; the batches of that epoch "
            "it had trained on are trained again", checkpoint, RESTART_EPOCH_ENV, epoch, world_size)
        return 0
    restart = (f"or set {RESTART_EPOCH_ENV}=1 to resume its weights at the start of epoch {epoch} (the batches "
               f"of that epoch it trained on are trained again)")
    if consumed is None:
        raise ResumeRefused(
            f"{checkpoint} was saved in the middle of epoch {epoch} (batch {position} of each process) by an unknown "
            f"number of processes; {world_size} processes cannot continue at that batch: resume with the number "
            f"of processes that wrote it, {restart}")
    raise ResumeRefused(
        f"{checkpoint} was saved by {written_by} processes after {consumed} batches of epoch {epoch} ({position} "
        f"each); {world_size} processes cannot continue at that batch ({consumed} is not a multiple of "
        f"{world_size}): resume with {written_by} processes (train.gpus / train.cpu_processes, the SLURM job's "
        f"tasks), {restart}")


def resume_plan(checkpoint, world_size: int, restart_epoch: bool = False) -> Optional[dict]:
    """Where ``world_size`` processes resume the training checkpoint ``checkpoint`` (None when it does not
    exist): ``{"epoch", "saved_position", "position", "written_by"}`` (:func:`resume_position`; raises
    :class:`ResumeRefused`). Reads the file memory-mapped: the tensors are not loaded."""
    checkpoint = Path(checkpoint)
    if not checkpoint.exists():
        return None
    # torch's safe_globals removes its classes on exit, also those an enclosing block (train()) allowed
    allowed = set(CHECKPOINT_SAFE_GLOBALS) <= set(torch.serialization.get_safe_globals())
    with contextlib.nullcontext() if allowed else checkpoint_globals_allowed():
        state = load_model_file(checkpoint, what="training checkpoint", map_location="cpu", weights_only=True,
                                mmap=True, rebuild=f"delete {checkpoint} and rerun the training that wrote it")
    itr_state = (state.get("extra_state") or {}).get("train_iterator") or {}
    geometry = checkpoint_geometry(state) or {}
    written_by = geometry.get("world_size")
    return {"epoch": itr_state.get("epoch"), "saved_position": int(itr_state.get("iterations_in_epoch") or 0),
            "position": resume_position(itr_state, written_by, world_size, checkpoint, restart_epoch),
            "written_by": written_by}


def _fairseq_dictionary(info: Mapping):
    from fairseq.data import Dictionary

    d = Dictionary()
    d.symbols = list(info["symbols"])
    d.count = [1] * len(d.symbols)
    d.indices = dict(info["indices"])
    d.bos_index, d.pad_index, d.eos_index, d.unk_index = (
        int(info["bos"]), int(info["pad"]), int(info["eos"]), int(info["unk"]),
    )
    d.nspecial = 4
    return d


def load_model(checkpoint_path):
    """Rebuild the fairseq ``laser_lstm`` model of one of our checkpoints (eval mode).

    Returns ``(model, dictionary, state)`` where ``dictionary`` is a fairseq Dictionary.
    """
    import laser_repro.models.laser.fairseq_plugin  # noqa: F401  (registers model/task)
    from laser_repro.models.laser.fairseq_plugin.laser_lstm import LaserLSTMModel

    state = load_checkpoint(checkpoint_path)
    args = checkpoint_model_args(state)
    dictionary = _fairseq_dictionary(checkpoint_dictionary(state))
    target_langs = (state.get("task_state") or {}).get("laser_target_langs") or []
    if not target_langs:
        target_langs = [x for x in str(getattr(args, "target_langs", "")).split(",") if x]
    # the decoder's output vocabulary (--decoder-output-vocab targets) is a buffer of the model itself
    output_tokens = state["model"].get("decoder.output_tokens")
    task_like = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary, target_langs=target_langs,
                                decoder_output_tokens=lambda: output_tokens)
    if output_tokens is None and getattr(args, "decoder_output_vocab", "joint") == "targets":
        raise ValueError(f"{checkpoint_path}: trained with --decoder-output-vocab targets but has no "
                         f"decoder.output_tokens (truncated or foreign checkpoint?)")
    model = LaserLSTMModel.build_model(args, task_like)
    model.load_state_dict(state["model"], strict=True)
    model.eval()
    return model, dictionary, state


# -------------------------------------------------------------------------------------------
# training
# -------------------------------------------------------------------------------------------


def distributed_argv(world_size: int, rank: int, device, *, unused_parameters: bool = False) -> list[str]:
    """fairseq options for one rank of a ``world_size``-process run whose rendezvous is in the
    environment (``MASTER_ADDR`` / ``MASTER_PORT``, set by torchrun or by our srun worker), computing on
    ``device`` (a ``torch.device``: the worker's, :mod:`laser_repro.models.device`, whose backend it uses).

    ``unused_parameters``: some batches leave parameters unused (the NLI objective: the decoder
    on NLI batches, the head on translation batches); torch's DistributedDataParallel (GPUs) then
    needs ``--find-unused-parameters``.  legacy_ddp (CPU) all-reduces every parameter anyway,
    zero gradients included."""
    from laser_repro.models.device import distributed_backend

    if world_size <= 1:
        return []
    cpu = device.type == "cpu"
    argv = [
        "--distributed-world-size", str(world_size),
        "--distributed-rank", str(rank),
        "--device-id", str(0 if cpu else device.index),
        "--distributed-init-method", "env://",
        "--distributed-no-spawn",  # the processes exist already (torchrun / srun)
        "--distributed-backend", distributed_backend(device),
        # every rank reads checkpoint_last.pt itself (weights_only + our allowlist); otherwise
        # rank 0 re-pickles it, omegaconf objects included, for a torch.load on the others
        "--load-checkpoint-on-all-dp-ranks",
    ]
    if cpu:
        # torch's DistributedDataParallel refuses device_ids for CPU modules, which fairseq's
        # pytorch_ddp wrapper always passes; legacy_ddp all-reduces the gradients itself
        argv += ["--ddp-backend", "legacy_ddp"]
    elif unused_parameters:
        argv.append("--find-unused-parameters")
    return argv


def _any_rank(flag: bool) -> bool:
    """True when ``flag`` is true on any rank (a no-op without torch.distributed)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([1 if flag else 0], dtype=torch.int32, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def _record_geometry(trainer) -> None:
    """Every checkpoint ``trainer`` saves records the processes that wrote it (:data:`GEOMETRY_KEY`)."""
    geometry = {"world_size": int(trainer.data_parallel_world_size),
                "update_freq": int(trainer.cfg.optimization.update_freq[0]),
                "max_tokens": trainer.cfg.dataset.max_tokens}
    state_dict = trainer.state_dict

    def with_geometry():
        state = state_dict()
        state["extra_state"][GEOMETRY_KEY] = dict(geometry)
        return state

    trainer.state_dict = with_geometry


def _carry_position_over(trainer, restart_epoch: bool) -> None:
    """Before fairseq restores its epoch iterator from a checkpoint, set the position for this number of
    processes (:func:`resume_plan`): fairseq would take one process's count of another world size as its own."""
    load = trainer.load_checkpoint

    def load_and_place(filename, *args, **kwargs):
        plan = resume_plan(filename, int(trainer.data_parallel_world_size), restart_epoch)
        extra_state = load(filename, *args, **kwargs)
        itr_state = (extra_state or {}).get("train_iterator")
        if plan is not None and itr_state is not None and plan["position"] != plan["saved_position"]:
            logging.getLogger(__name__).warning(
                "%s: saved by %s processes at batch %d of epoch %s (each); %d processes continue at batch %d "
                "(each): the same batches of the epoch are done", filename, plan["written_by"],
                plan["saved_position"], plan["epoch"], trainer.data_parallel_world_size, plan["position"])
            itr_state["iterations_in_epoch"] = plan["position"]
        return extra_state

    trainer.load_checkpoint = load_and_place


class _NothingToTrain(Exception):
    """The loaded checkpoint is already at --max-update."""


@contextlib.contextmanager
def bf16_on_gpu():
    """fairseq 0.12 takes ``--bf16`` for a TPU run (``options.parse_args_and_arch`` sets ``tpu``), and its
    Trainer then asks torch_xla for a device: on a CUDA machine ``--bf16`` fails at start (seen on an H200).
    While this lasts, ``--bf16`` without ``--tpu`` on the command line stays a CUDA run: the model in bfloat16
    with fp32 master weights (fairseq's FP16Optimizer, no loss scaler), as its ``--fp16`` is in float16."""
    from fairseq import options

    original = options.parse_args_and_arch

    def parse_args_and_arch(*args, **kwargs):
        parsed = original(*args, **kwargs)
        if getattr(parsed, "bf16", False) and torch.cuda.is_available() and "--tpu" not in sys.argv:
            parsed.tpu = False
        return parsed

    options.parse_args_and_arch = parse_args_and_arch
    try:
        yield
    finally:
        options.parse_args_and_arch = original


def train(argv: Sequence[str], stop_requested: Optional[Callable[[], bool]] = None, *,
          initial_checkpoint=None, monitor=None, restart_epoch: bool = False) -> dict:
    """Run ``fairseq-train`` (``fairseq_cli.train.cli_main``) in this process.

    Re-running with the same ``--save-dir`` resumes from ``checkpoint_last.pt`` (fairseq's
    default ``--restore-file``: model, optimizer, epoch and position in the epoch); that
    checkpoint is loaded with ``weights_only=True`` plus the allowlist of
    :func:`checkpoint_globals_allowed`.

    ``stop_requested``: polled after every update (all ranks agree through an all-reduce); when
    true, ``checkpoint_last.pt`` is saved at that update and training stops early.
    ``initial_checkpoint``: a path; a run that starts at update 0 saves its model there before the
    first update (the same seed's initialization: the random-encoder baseline).
    ``monitor``: a :class:`laser_repro.models.laser.curves.CurveMonitor` (give it to the master process only),
    called at update 0 and after every update (it decides when to measure).
    Every checkpoint records the number of processes, update_freq and max_tokens that wrote it
    (:data:`GEOMETRY_KEY`); one saved mid-epoch by another number of processes continues at the same batch of
    its epoch or is refused before training (:func:`resume_plan`; ``restart_epoch``: start that epoch over).
    Returns ``{"preempted": bool, "num_updates": int, "start_updates": int, "start_epoch": int}``:
    the update reached and the one the run started from (``checkpoint_last.pt``'s, 0 when fresh);
    equal when this run made no update (its checkpoint was already at ``--max-epoch`` /
    ``--max-update``: then nothing is trained, not even the one update fairseq would make past
    ``--max-update``).
    """
    argv = [str(a) for a in argv]
    import laser_repro.models.laser.fairseq_plugin  # noqa: F401  (registers + aliases the --user-dir module)
    from fairseq import checkpoint_utils
    from fairseq_cli import train as fairseq_train

    # fairseq keeps the best validation loss on function attributes, across runs in one process: a
    # second training here would compare against the first one's best and never write
    # checkpoint_best.pt. A fresh run starts without; a resumed one reads it from checkpoint_last.pt.
    for holder, attr in ((checkpoint_utils.save_checkpoint, "best"), (fairseq_train.should_stop_early, "best"),
                         (fairseq_train.should_stop_early, "num_runs")):
        if hasattr(holder, attr):
            delattr(holder, attr)
    outcome = {"preempted": False, "num_updates": 0, "start_updates": 0, "start_epoch": 1}
    original = fairseq_train.validate_and_save
    original_load = checkpoint_utils.load_checkpoint

    def load_checkpoint(cfg, trainer, **kwargs):
        _record_geometry(trainer)
        _carry_position_over(trainer, restart_epoch)
        # fairseq restores (or initializes) the model here, before the first update
        extra_state, epoch_itr = original_load(cfg, trainer, **kwargs)
        outcome["start_updates"] = outcome["num_updates"] = trainer.get_num_updates()
        outcome["start_epoch"] = epoch_itr.epoch
        max_update = trainer.cfg.optimization.max_update
        if max_update and trainer.get_num_updates() >= max_update:
            # fairseq checks --max-update only after an update, so it would make one more
            raise _NothingToTrain
        if trainer.get_num_updates() == 0:
            if initial_checkpoint is not None:
                Path(initial_checkpoint).parent.mkdir(parents=True, exist_ok=True)
                trainer.consolidate_optimizer()  # as fairseq does before every save
                trainer.save_checkpoint(str(initial_checkpoint), {})
            if monitor is not None:
                monitor.measure(trainer, trainer.task, epoch_itr.epoch, end_of_epoch=False)
        return extra_state, epoch_itr

    def validate_and_save(cfg, trainer, task, epoch_itr, valid_subsets, end_of_epoch):
        valid_losses, should_stop = original(cfg, trainer, task, epoch_itr, valid_subsets, end_of_epoch)
        outcome["num_updates"] = trainer.get_num_updates()
        if monitor is not None:
            monitor.measure(trainer, task, epoch_itr.epoch, end_of_epoch, valid_loss=valid_losses[0])
        if stop_requested is not None and _any_rank(bool(stop_requested())):
            if not should_stop:  # otherwise fairseq has just saved this very update
                checkpoint_utils.save_checkpoint(cfg.checkpoint, trainer, epoch_itr, valid_losses[0])
            logging.getLogger(__name__).warning(
                "stop requested: checkpoint saved at update %d (epoch %d); rerun to resume",
                outcome["num_updates"], epoch_itr.epoch)
            outcome["preempted"] = True
            return valid_losses, True
        return valid_losses, should_stop

    saved_argv = sys.argv
    sys.argv = ["fairseq-train", *argv]
    # fairseq's train loop looks the function up as a module global at every update
    fairseq_train.validate_and_save = validate_and_save
    checkpoint_utils.load_checkpoint = load_checkpoint
    try:
        with checkpoint_globals_allowed():
            with bf16_on_gpu():
                fairseq_train.cli_main()
    except _NothingToTrain:
        pass  # every rank loads the same checkpoint, so every rank stops here
    finally:
        fairseq_train.validate_and_save = original
        checkpoint_utils.load_checkpoint = original_load
        sys.argv = saved_argv
    return outcome
