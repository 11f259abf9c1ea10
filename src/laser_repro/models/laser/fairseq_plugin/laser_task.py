"""fairseq task for LASER training: many (source, target) pairs, one shared dictionary.

Each configured pair ``src-tgt`` is one :class:`~fairseq.data.LanguagePairDataset`; they are
concatenated by :class:`MultiPairDataset`, whose batches always hold sentences of ONE pair.
fairseq's epoch iterator shuffles the order of the batches every epoch (seeded by
``--seed`` + epoch), so training alternates over all language combinations as in the paper
(section 3.2).  Pairs with ``src == tgt`` are dropped: the paper does not auto-encode.

NLI multitask objective (the paper's ablation, Table 6), options ``--nli-weight W
--nli-data PREFIX`` (files of ``laser_repro.models.laser.fairseq_bridge.binarize_nli``; criterion
``laser_multitask``, :mod:`laser_repro.models.laser.fairseq_plugin.laser_criterion`).  Definition of the
weight ``W``: an integer >= 0.  ``W = 0`` (the default) switches the objective off: no NLI data
is read, the model has no classifier head, and training is byte-identical to a run without the
option.  With ``W > 0``, every epoch the NLI training pairs are batched by ``--max-tokens``
(premise + hypothesis tokens counted), and these NLI batches enter the epoch's batch list ``W``
times (``W`` copies), shuffled by fairseq (seed + epoch) together with the translation batches;
a batch is either one language pair or NLI, never mixed, so each NLI example is seen ``W`` times
per epoch.  The loss of an NLI batch is the summed cross-entropy of the classifier
Linear(4D -> H) -> Tanh -> dropout -> Linear(H -> 3) on ``concat(p, h, p*h, |p-h|)`` (``p``,
``h``: the max-pooled sentence embeddings of premise and hypothesis, D their size, H the model's
``--nli-hidden-dim``), with sample_size = the number of examples, so that the gradient of that
batch is the mean per-example cross-entropy, as a translation batch's is the mean per-token
cross-entropy (fairseq divides the summed loss of all batches of one update -- several with
``--update-freq`` > 1 or several processes -- by their summed sample_size).

NLI pairs with a sentence longer than ``--max-source-positions``, or more than ``--max-tokens``
tokens in all, are left out (with a warning).  Parameters a batch does not use (the decoder on
NLI batches, the head on translation batches) get zero gradients, so that Adam treats them alike
whatever the number of processes (the multi-process all-reduce gives them zeros).
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
from fairseq.data.indexed_dataset import MMapIndexedDataset, data_file_path, index_file_path
from fairseq.tasks import LegacyFairseqTask, register_task

from laser_repro.models.checkpoint_safety import CHECKPOINT_SAFE_GLOBALS
from laser_repro.models.laser.fairseq_plugin.laser_criterion import LaserMultitaskCriterion
from laser_repro.models.laser.fairseq_plugin.laser_lstm import NLI_NUM_CLASSES

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


def parse_nli_weight(value) -> int:
    """The NLI weight as an int >= 0 (``None`` -> 0); anything else raises ValueError."""
    if value is None:
        return 0
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"--nli-weight must be an integer >= 0, got {value!r}")
    weight = int(value)
    if weight < 0:
        raise ValueError(f"--nli-weight must be an integer >= 0, got {value!r}")
    return weight


def parse_langs(value) -> List[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [x.strip() for x in items if x.strip()]


class _SizedDataset(FairseqDataset):
    """A dataset whose ``_sizes`` array holds the tokens each item counts for ``--max-tokens``:
    ``sizes``, ``num_tokens`` and ``num_tokens_vec`` (int64) from it; fairseq's ``batch_by_size`` and
    no prefetching (FairseqDataset's)."""

    _sizes: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return self._sizes

    def num_tokens(self, index: int) -> int:
        return int(self._sizes[index])

    def num_tokens_vec(self, indices) -> np.ndarray:
        return self._sizes[indices].astype(np.int64, copy=False)


class MultiPairDataset(_SizedDataset):
    """Concatenation of several LanguagePairDatasets with single-pair batches.

    Global index ``i`` belongs to pair ``p`` with ``offsets[p] <= i < offsets[p + 1]``.
    ``collater`` adds ``net_input["tgt_lang_id"]`` (LongTensor [B]) and ``net_input["src_lengths_host"]``
    (the lengths as a NumPy array, which fairseq leaves on the host).
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
            batches.extend(super().batch_by_size(sel, max_tokens=max_tokens, max_sentences=max_sentences,
                                                 required_batch_size_multiple=required_batch_size_multiple))
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
        # a NumPy copy stays on the host when fairseq moves the batch's tensors to the GPU: the encoder's
        # pack_padded_sequence needs the lengths there, and reading them back from the GPU is a host sync per step
        batch["net_input"]["src_lengths_host"] = batch["net_input"]["src_lengths"].numpy().copy()
        return batch

    # -- misc -----------------------------------------------------------------------------
    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        for d in self.datasets:
            if hasattr(d, "set_epoch"):
                d.set_epoch(epoch)


class NliPairDataset(_SizedDataset):
    """Premise/hypothesis/label triples (``binarize_nli`` output) for the NLI multitask objective.

    An item: ``{"id", "premise": LongTensor, "hypothesis": LongTensor, "label": int}`` (the
    binarized sentences end with EOS, as the source side of a translation pair does).
    ``num_tokens`` = premise + hypothesis tokens.  ``collater`` gives
    ``{"task": "nli", "id", "nsentences", "ntokens", "net_input": {premise_tokens,
    premise_lengths, hypothesis_tokens, hypothesis_lengths}, "target": labels}`` with
    right-padded tokens (the encoder packs them).
    """

    def __init__(self, premises, hypotheses, labels, dictionary: Dictionary, name: str = "nli"):
        super().__init__()
        labels = np.asarray(labels, dtype=np.int64)
        if not (len(premises) == len(hypotheses) == len(labels)):
            raise ValueError(f"{name}: {len(premises)} premises, {len(hypotheses)} hypotheses and "
                             f"{len(labels)} labels; they must be the same")
        if len(labels) and (labels.min() < 0 or labels.max() >= NLI_NUM_CLASSES):
            raise ValueError(f"{name}: labels must be in [0, {NLI_NUM_CLASSES})")
        self.premises, self.hypotheses, self.labels = premises, hypotheses, labels
        self.dictionary = dictionary
        self.name = name
        self.premise_sizes = np.asarray(premises.sizes, dtype=np.int64)
        self.hypothesis_sizes = np.asarray(hypotheses.sizes, dtype=np.int64)
        self._sizes = self.premise_sizes + self.hypothesis_sizes

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index):
        return {"id": int(index), "premise": self.premises[index], "hypothesis": self.hypotheses[index],
                "label": int(self.labels[index])}

    def size(self, index: int):
        return (int(self.premise_sizes[index]), int(self.hypothesis_sizes[index]))

    def ordered_indices(self) -> np.ndarray:
        """Random permutation (numpy RNG seeded by fairseq) sorted by premise + hypothesis length."""
        indices = np.random.permutation(len(self)).astype(np.int64)
        return indices[np.argsort(self._sizes[indices], kind="mergesort")]

    def collater(self, samples, pad_to_length=None):
        if len(samples) == 0:
            return {}
        pad, eos = self.dictionary.pad(), self.dictionary.eos()

        def tokens(key):
            values = [s[key] for s in samples]
            return (data_utils.collate_tokens(values, pad, eos, left_pad=False),
                    torch.tensor([v.numel() for v in values], dtype=torch.long))

        premise, premise_lengths = tokens("premise")
        hypothesis, hypothesis_lengths = tokens("hypothesis")
        return {
            "task": "nli",
            "id": torch.tensor([s["id"] for s in samples], dtype=torch.long),
            "nsentences": len(samples),
            "ntokens": int(premise_lengths.sum() + hypothesis_lengths.sum()),
            "net_input": {
                "premise_tokens": premise, "premise_lengths": premise_lengths,
                "hypothesis_tokens": hypothesis, "hypothesis_lengths": hypothesis_lengths,
            },
            "target": torch.tensor([s["label"] for s in samples], dtype=torch.long),
        }


class MultitaskDataset(_SizedDataset):
    """Translation pairs (a :class:`MultiPairDataset`, global indices ``0 .. N-1``) plus NLI pairs
    (an :class:`NliPairDataset`, global indices ``N .. N+M-1``) with single-kind batches.

    ``batch_by_size`` returns the translation batches (batched as by MultiPairDataset) followed by
    ``nli_weight`` copies of the NLI batches (batched by ``max_tokens`` counting premise +
    hypothesis tokens); fairseq's epoch iterator shuffles that list (seed + epoch).  NLI pairs
    with a sentence longer than the encoder's maximum (``max_positions[0]``) or more than
    ``max_tokens`` tokens in all are left out with a warning; too long translation pairs are
    reported as by MultiPairDataset (fairseq raises).
    """

    def __init__(self, translation: "MultiPairDataset", nli: NliPairDataset, nli_weight: int):
        super().__init__()
        if parse_nli_weight(nli_weight) < 1:
            raise ValueError("MultitaskDataset needs --nli-weight >= 1")
        self.translation, self.nli, self.nli_weight = translation, nli, int(nli_weight)
        self.offset = len(translation)
        self._sizes = np.concatenate([np.asarray(translation.sizes, dtype=np.int64), nli.sizes])

    # -- indexing -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.offset + len(self.nli)

    def is_nli(self, indices) -> np.ndarray:
        return np.asarray(indices, dtype=np.int64) >= self.offset

    def __getitem__(self, index):
        if index < self.offset:
            return self.translation[index]
        item = self.nli[index - self.offset]
        item["id"] = int(index)
        return item

    # -- sizes ----------------------------------------------------------------------------
    def size(self, index: int):
        if index < self.offset:
            return self.translation.size(index)
        return self.nli.size(index - self.offset)

    def filter_indices_by_size(self, indices, max_sizes):
        indices = np.asarray(indices, dtype=np.int64)
        nli_mask = self.is_nli(indices)
        kept, ignored = self.translation.filter_indices_by_size(indices[~nli_mask], max_sizes)
        nli = indices[nli_mask]
        limit = max_sizes[0] if isinstance(max_sizes, (tuple, list)) else max_sizes
        if limit is not None:
            local = nli - self.offset
            ok = (self.nli.premise_sizes[local] <= limit) & (self.nli.hypothesis_sizes[local] <= limit)
            if not ok.all():
                logger.warning(f"{self.nli.name}: {int((~ok).sum()):,} of {len(nli):,} NLI pairs have a sentence "
                               f"longer than {limit} tokens and are left out")
            nli = nli[ok]
        return np.concatenate([np.asarray(kept, dtype=np.int64), nli]), ignored

    # -- ordering / batching --------------------------------------------------------------
    def ordered_indices(self) -> np.ndarray:
        """Translation order of MultiPairDataset (drawn first from fairseq's seeded RNG), then
        the NLI pairs (random permutation sorted by length), shifted by ``N``."""
        translation = self.translation.ordered_indices()
        return np.concatenate([translation, self.nli.ordered_indices() + self.offset])

    def batch_by_size(self, indices, max_tokens=None, max_sentences=None, required_batch_size_multiple=1):
        indices = np.asarray(indices, dtype=np.int64)
        nli_mask = self.is_nli(indices)
        batches = list(self.translation.batch_by_size(
            indices[~nli_mask], max_tokens=max_tokens, max_sentences=max_sentences,
            required_batch_size_multiple=required_batch_size_multiple))
        nli = indices[nli_mask]
        if max_tokens is not None and len(nli):
            fits = self.num_tokens_vec(nli) <= max_tokens
            if not fits.all():
                logger.warning(f"{self.nli.name}: {int((~fits).sum()):,} NLI pairs have more than --max-tokens "
                               f"{max_tokens} premise + hypothesis tokens and are left out")
                nli = nli[fits]
        nli_batches = []
        if len(nli):
            nli_batches = super().batch_by_size(nli, max_tokens=max_tokens, max_sentences=max_sentences,
                                                required_batch_size_multiple=required_batch_size_multiple)
        for _ in range(self.nli_weight):
            batches.extend(np.array(b, dtype=np.int64, copy=True) for b in nli_batches)
        return batches

    def collater(self, samples, pad_to_length=None):
        if len(samples) == 0:
            return {}
        kinds = {bool(s["id"] >= self.offset) for s in samples}
        if len(kinds) != 1:
            raise ValueError("a batch mixes translation and NLI pairs")
        if kinds.pop():
            return self.nli.collater(samples, pad_to_length=pad_to_length)
        return self.translation.collater(samples, pad_to_length=pad_to_length)

    # -- misc -----------------------------------------------------------------------------
    def set_epoch(self, epoch):
        super().set_epoch(epoch)
        self.translation.set_epoch(epoch)
        self.nli.set_epoch(epoch)


def load_nli_dataset(prefix: str, dictionary: Dictionary) -> NliPairDataset:
    """The ``{prefix}.premise`` / ``{prefix}.hypothesis`` indexed datasets and
    ``{prefix}.label.npy`` written by ``laser_repro.models.laser.fairseq_bridge.binarize_nli``."""
    premises = data_utils.load_indexed_dataset(f"{prefix}.premise", dictionary)
    hypotheses = data_utils.load_indexed_dataset(f"{prefix}.hypothesis", dictionary)
    label_path = f"{prefix}.label.npy"
    missing = [f"{prefix}.{side}.{{bin,idx}}" for side, ds in (("premise", premises), ("hypothesis", hypotheses))
               if ds is None]
    if not os.path.isfile(label_path):
        missing.append(label_path)
    if missing:
        raise FileNotFoundError(f"--nli-data {prefix}: missing {', '.join(missing)} (run laser-repro binarize-nli)")
    return NliPairDataset(premises, hypotheses, np.load(label_path), dictionary, name=f"--nli-data {prefix}")


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
        parser.add_argument(
            "--nli-weight", type=int, default=0, metavar="W",
            help="NLI multitask objective: the NLI batches enter every epoch's batch list W times "
                 "(0 = off); needs --nli-data and --criterion laser_multitask",
        )
        parser.add_argument(
            "--nli-data", metavar="PREFIX", default=None,
            help="binarized NLI training pairs: PREFIX.premise.{bin,idx}, PREFIX.hypothesis.{bin,idx}, "
                 "PREFIX.label.npy (laser-repro binarize-nli)",
        )

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
        self.nli_weight = parse_nli_weight(getattr(args, "nli_weight", 0))
        self.nli_data = getattr(args, "nli_data", None)
        if self.nli_weight > 0 and not self.nli_data:
            raise ValueError("--nli-weight > 0 needs --nli-data PREFIX")
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
        # context manager of fairseq_bridge.train; laser_repro.models.checkpoint_safety).  Loading stays weights_only.
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

    def decoder_output_tokens(self) -> np.ndarray:
        """The dictionary ids that occur on the target side of the training pairs (sorted; the model's
        ``--decoder-output-vocab targets``).  Read from the binarized files, so a resumed run (same data:
        the trainer's fingerprint) rebuilds the same output layer."""
        data_path = utils.split_paths(self.args.data)[0]
        split = getattr(self.args, "train_subset", "train")
        seen = np.zeros(len(self.dictionary), dtype=bool)
        for src, tgt in self.lang_pairs:
            prefix = os.path.join(data_path, f"{split}.{src}-{tgt}.{tgt}")
            if not MMapIndexedDataset.exists(prefix):
                raise FileNotFoundError(f"{prefix}.idx/.bin: no binarized target side (mmap format) for {src}-{tgt}")
            dtype = MMapIndexedDataset.Index(index_file_path(prefix)).dtype
            ids = np.memmap(data_file_path(prefix), dtype=dtype, mode="r")
            if ids.size and int(ids.max()) >= len(self.dictionary):
                raise ValueError(f"{data_file_path(prefix)}: token id {int(ids.max())} outside the dictionary "
                                 f"({len(self.dictionary)} entries)")
            seen[ids] = True
        tokens = np.flatnonzero(seen)
        logger.info(f"decoder output vocabulary: {len(tokens)} of {len(self.dictionary)} dictionary entries "
                    f"occur on the target side ({', '.join(self.target_langs)})")
        return tokens

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
        if self.nli_weight > 0 and split == getattr(self.args, "train_subset", "train"):
            nli = load_nli_dataset(self.nli_data, self.dictionary)
            self.datasets[split] = MultitaskDataset(self.datasets[split], nli, self.nli_weight)
            logger.info(f"{split}: + {len(nli)} NLI pairs from {self.nli_data}, "
                        f"their batches {self.nli_weight} times per epoch")

    def build_criterion(self, args):
        criterion = super().build_criterion(args)
        if self.nli_weight > 0 and not isinstance(criterion, LaserMultitaskCriterion):
            raise ValueError(f"--nli-weight {self.nli_weight} needs --criterion laser_multitask, "
                             f"not {type(criterion).__name__}")
        return criterion

    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        out = super().train_step(sample, model, criterion, optimizer, update_num, ignore_grad)
        if self.nli_weight > 0:
            # parameters this batch did not use (decoder on NLI, head on translation batches):
            # zero gradients, as the all-reduce of a multi-process run gives them, so that Adam
            # does the same whatever the number of processes
            for p in model.parameters():
                if p.requires_grad and p.grad is None:
                    p.grad = torch.zeros_like(p)
        return out

    def max_positions(self):
        return (self.args.max_source_positions, self.args.max_target_positions)

    @property
    def source_dictionary(self):
        return self.dictionary

    @property
    def target_dictionary(self):
        return self.dictionary
