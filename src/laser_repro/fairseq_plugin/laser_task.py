"""fairseq task for LASER training: many (source, target) pairs, one shared dictionary.

Each configured pair ``src-tgt`` is one :class:`~fairseq.data.LanguagePairDataset`; they are
concatenated by :class:`MultiPairDataset`, whose batches always hold sentences of ONE pair.
fairseq's epoch iterator shuffles the order of the batches every epoch (seeded by
``--seed`` + epoch), so training alternates over all language combinations as in the paper
(section 3.2).  Pairs with ``src == tgt`` are dropped: the paper does not auto-encode.
"""

from __future__ import annotations

import logging
import os
from argparse import Namespace
from typing import List, Sequence, Tuple

import numpy as np
import torch
from fairseq import utils
from fairseq.data import Dictionary, FairseqDataset, LanguagePairDataset, data_utils
from fairseq.tasks import LegacyFairseqTask, register_task

from laser_repro.fairseq_bridge import CHECKPOINT_SAFE_GLOBALS

logger = logging.getLogger(__name__)


def parse_lang_pairs(value) -> List[Tuple[str, str]]:
    """``"deu-eng,deu-spa"`` (or a list of ``"src-tgt"`` strings / tuples) -> [(src, tgt), ...]"""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    pairs: List[Tuple[str, str]] = []
    for item in items:
        if isinstance(item, str):
            item = item.strip()
            if not item:
                continue
            parts = item.split("-")
        else:
            parts = list(item)
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"bad language pair {item!r}; expected 'src-tgt'")
        pairs.append((parts[0], parts[1]))
    return pairs


def parse_langs(value) -> List[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [x.strip() for x in items if x.strip()]


class MultiPairDataset(FairseqDataset):
    """Concatenation of several LanguagePairDatasets with single-pair batches.

    Global index ``i`` belongs to pair ``p`` with ``offsets[p] <= i < offsets[p + 1]``.
    ``collater`` adds ``net_input["tgt_lang_id"]`` (LongTensor [B]).
    """

    def __init__(
        self,
        datasets: Sequence[LanguagePairDataset],
        tgt_lang_ids: Sequence[int],
        pair_names: Sequence[str],
        shuffle: bool = True,
    ):
        super().__init__()
        if not datasets:
            raise ValueError("MultiPairDataset needs at least one language pair")
        if not (len(datasets) == len(tgt_lang_ids) == len(pair_names)):
            raise ValueError("datasets, tgt_lang_ids and pair_names must have the same length")
        self.datasets = list(datasets)
        self.tgt_lang_ids = [int(x) for x in tgt_lang_ids]
        self.pair_names = list(pair_names)
        self.shuffle = shuffle
        lengths = np.array([len(d) for d in self.datasets], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        # int32 like fairseq's indexed datasets (hundreds of millions of sentences fit)
        self.src_sizes = np.concatenate([np.asarray(d.src_sizes, dtype=np.int32) for d in self.datasets])
        self.tgt_sizes = np.concatenate([np.asarray(d.tgt_sizes, dtype=np.int32) for d in self.datasets])
        self._sizes = np.maximum(self.src_sizes, self.tgt_sizes)
        pair_dtype = np.int16 if len(self.datasets) < 2**15 else np.int32
        self.pair_of_index = np.repeat(np.arange(len(self.datasets), dtype=pair_dtype), lengths)

    # -- indexing -------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.offsets[-1])

    def _locate(self, index: int) -> Tuple[int, int]:
        pair = int(self.pair_of_index[index])
        return pair, int(index - self.offsets[pair])

    def pair_index(self, indices) -> np.ndarray:
        """Pair number of each global index."""
        return self.pair_of_index[np.asarray(indices, dtype=np.int64)]

    def __getitem__(self, index):
        pair, local = self._locate(index)
        item = self.datasets[pair][local]
        item["id"] = int(index)
        return item

    # -- sizes ----------------------------------------------------------------------------
    @property
    def sizes(self) -> np.ndarray:
        return self._sizes

    def num_tokens(self, index: int) -> int:
        return int(self._sizes[index])

    def num_tokens_vec(self, indices) -> np.ndarray:
        return self._sizes[indices].astype(np.int64)

    def size(self, index: int):
        return (int(self.src_sizes[index]), int(self.tgt_sizes[index]))

    def filter_indices_by_size(self, indices, max_sizes):
        return data_utils.filter_paired_dataset_indices_by_size(
            self.src_sizes, self.tgt_sizes, indices, max_sizes
        )

    # -- ordering / batching --------------------------------------------------------------
    def ordered_indices(self) -> np.ndarray:
        """Random permutation (numpy RNG seeded by fairseq) sorted by target then source
        length (stable), like LanguagePairDataset; pairs are separated in batch_by_size."""
        if self.shuffle:
            indices = np.random.permutation(len(self)).astype(np.int64)
        else:
            indices = np.arange(len(self), dtype=np.int64)
        indices = indices[np.argsort(self.tgt_sizes[indices], kind="mergesort")]
        return indices[np.argsort(self.src_sizes[indices], kind="mergesort")]

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        """Batches of ONE pair each: the (length-ordered) indices are split by pair, keeping
        their order, and each pair is batched by fairseq's ``batch_by_size``."""
        indices = np.asarray(indices, dtype=np.int64)
        pair_ids = self.pair_of_index[indices]
        order = np.argsort(pair_ids, kind="stable")
        grouped = indices[order]
        counts = np.bincount(pair_ids, minlength=len(self.datasets))
        batches: List[np.ndarray] = []
        start = 0
        for count in counts:
            sel = grouped[start : start + count]
            start += count
            if len(sel) == 0:
                continue
            batches.extend(
                data_utils.batch_by_size(
                    sel,
                    num_tokens_fn=self.num_tokens,
                    num_tokens_vec=self.num_tokens_vec(sel),
                    max_tokens=max_tokens,
                    max_sentences=max_sentences,
                    required_batch_size_multiple=required_batch_size_multiple,
                )
            )
        return batches

    def collater(self, samples, pad_to_length=None):
        if len(samples) == 0:
            return {}
        pairs = {int(self.pair_of_index[s["id"]]) for s in samples}
        if len(pairs) != 1:
            raise ValueError(f"a batch mixes language pairs {sorted(self.pair_names[p] for p in pairs)}")
        pair = pairs.pop()
        batch = self.datasets[pair].collater(samples, pad_to_length=pad_to_length)
        bsz = batch["net_input"]["src_tokens"].size(0)
        batch["net_input"]["tgt_lang_id"] = torch.full((bsz,), self.tgt_lang_ids[pair], dtype=torch.long)
        return batch

    # -- misc -----------------------------------------------------------------------------
    @property
    def supports_prefetch(self) -> bool:
        return False

    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        for d in self.datasets:
            if hasattr(d, "set_epoch"):
                d.set_epoch(epoch)


@register_task("laser_multilingual")
class LaserMultilingualTask(LegacyFairseqTask):
    """Train a LASER encoder on several bitexts, decoding into a few target languages."""

    @staticmethod
    def add_args(parser):
        parser.add_argument("data", metavar="DIR", help="binarized data directory (with dict.txt)")
        parser.add_argument(
            "--lang-pairs", metavar="PAIRS", default=None,
            help="comma-separated src-tgt pairs, e.g. deu-eng,deu-spa,eng-spa",
        )
        parser.add_argument(
            "--target-langs", metavar="LANGS", default=None,
            help="comma-separated target languages; the order defines the target-language id",
        )
        parser.add_argument("--max-source-positions", type=int, default=250, metavar="N")
        parser.add_argument("--max-target-positions", type=int, default=250, metavar="N")

    def __init__(self, args, dictionary: Dictionary, lang_pairs, target_langs):
        super().__init__(args)
        # fairseq forms the batches with the RNG seeded by seed + the epoch at which the batch
        # iterator is created, and by default keeps them for all later epochs: a run resumed at
        # epoch E would then see other batches than an uninterrupted one. Re-forming them every
        # epoch (seed + epoch) makes a resumed run identical to an uninterrupted one.
        # (LegacyFairseqTask has no cfg; fairseq reads only this flag from it for our task.)
        self.cfg = Namespace(rebuild_batches=True)
        self.dictionary = dictionary
        self.lang_pairs: List[Tuple[str, str]] = list(lang_pairs)
        self.target_langs: List[str] = list(target_langs)
        # kept in the checkpoint ("task_state") so that export needs no data directory
        self.state.merge_state_dict(
            {
                "laser_dictionary": {
                    "symbols": list(dictionary.symbols),
                    "indices": dict(dictionary.indices),
                    "bos": dictionary.bos(),
                    "pad": dictionary.pad(),
                    "eos": dictionary.eos(),
                    "unk": dictionary.unk(),
                },
                "laser_target_langs": list(self.target_langs),
                "laser_lang_pairs": [f"{s}-{t}" for s, t in self.lang_pairs],
            }
        )

    @classmethod
    def setup_task(cls, args, **kwargs):
        # fairseq (torch >= 2.6) loads checkpoint_last.pt with weights_only=True; our checkpoints
        # hold argparse.Namespace objects.  Allowlist exactly those classes in every process
        # that runs this task (also spawned multi-GPU workers, which do not inherit the
        # context manager of fairseq_bridge.train).  Loading stays weights_only.
        torch.serialization.add_safe_globals(list(CHECKPOINT_SAFE_GLOBALS))
        paths = utils.split_paths(args.data)
        if not paths:
            raise ValueError("no data directory given")
        dict_path = os.path.join(paths[0], "dict.txt")
        dictionary = Dictionary.load(dict_path)
        target_langs = parse_langs(args.target_langs)
        if not target_langs:
            raise ValueError("--target-langs is required (e.g. eng,spa)")
        if len(set(target_langs)) != len(target_langs):
            raise ValueError(f"duplicate target languages in {target_langs}")
        pairs = []
        for src, tgt in parse_lang_pairs(args.lang_pairs):
            if src == tgt:
                logger.info(f"skipping {src}-{tgt}: no auto-encoding (paper, footnote 2)")
                continue
            if tgt not in target_langs:
                raise ValueError(f"pair {src}-{tgt}: target {tgt!r} is not in --target-langs {target_langs}")
            if (src, tgt) not in pairs:
                pairs.append((src, tgt))
        if not pairs:
            raise ValueError("--lang-pairs gives no usable (src != tgt) pair")
        logger.info(f"dictionary: {len(dictionary)} types; {len(pairs)} pairs; targets {target_langs}")
        return cls(args, dictionary, pairs, target_langs)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        data_path = utils.split_paths(self.args.data)[0]
        datasets, lang_ids, names, missing = [], [], [], []
        for src, tgt in self.lang_pairs:
            prefix = os.path.join(data_path, f"{split}.{src}-{tgt}.")
            src_ds = data_utils.load_indexed_dataset(prefix + src, self.dictionary)
            tgt_ds = data_utils.load_indexed_dataset(prefix + tgt, self.dictionary)
            if src_ds is None or tgt_ds is None:
                missing.append(f"{src}-{tgt}")
                continue
            if len(src_ds) != len(tgt_ds):
                raise ValueError(f"{prefix}*: {len(src_ds)} source vs {len(tgt_ds)} target sentences")
            datasets.append(
                LanguagePairDataset(
                    src_ds, src_ds.sizes, self.dictionary,
                    tgt_ds, tgt_ds.sizes, self.dictionary,
                    left_pad_source=False,  # right padding: the encoder packs sequences
                    left_pad_target=False,
                    shuffle=False,  # ordering is done by MultiPairDataset
                )
            )
            lang_ids.append(self.target_langs.index(tgt))
            names.append(f"{src}-{tgt}")
        if missing:
            if split == getattr(self.args, "train_subset", "train") or not datasets:
                hint = "" if split.startswith("train") else " (no validation data? pass --disable-validation)"
                raise FileNotFoundError(f"{split}: no binarized data in {data_path} for {', '.join(missing)}{hint}")
            logger.warning(f"{split}: no data for {', '.join(missing)}; using the other pairs")
        self.datasets[split] = MultiPairDataset(datasets, lang_ids, names, shuffle=True)
        logger.info(
            f"{split}: {len(self.datasets[split])} sentence pairs in {len(datasets)} pairs "
            + " ".join(f"{n}:{len(d)}" for n, d in zip(names, datasets))
        )

    def max_positions(self):
        return (self.args.max_source_positions, self.args.max_target_positions)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
