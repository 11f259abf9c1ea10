"""Joint BPE: learn one sentencepiece BPE model on all training text, apply it, export the fairseq dictionary.

Learning is deterministic: the training sample is drawn line by line with a seeded RNG (streaming, so
the corpus is never held in memory), and sentencepiece is given that sample as-is (no internal
sampling or shuffling), so the same inputs and seed give the same model bytes.
"""
from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import sentencepiece as spm

from laser_repro.textio import atomic_output, count_lines, iter_lines

# Special pieces: sentencepiece keeps only <unk>; fairseq's Dictionary adds <s> <pad> </s> <unk> itself.
_UNK = "<unk>"


def sample_lines(paths: Sequence[Path | str], out_path: Path | str, *, max_lines: int, seed: int,
                 progress: bool = False) -> dict:
    """Write a seeded uniform sample of about `max_lines` non-empty lines drawn from all `paths`.

    Two streaming passes: count, then keep each line with probability max_lines / total.
    """
    total = sum(count_lines(p) for p in paths)
    keep_prob = 1.0 if total <= max_lines else max_lines / total
    rng = random.Random(seed)
    kept = 0
    with atomic_output(out_path) as out:
        for path in paths:
            for line in iter_lines(path, progress=progress):
                # draw for every line (even empty) so the sample depends only on position
                if rng.random() < keep_prob and line.strip():
                    out.write(line + "\n")
                    kept += 1
    return {"input_lines": total, "sampled_lines": kept, "keep_probability": keep_prob}


def learn(sample_path: Path | str, model_prefix: Path | str, *, vocab_size: int,
          character_coverage: float = 0.9999, seed: int = 1, threads: int = 1) -> Path:
    """Train a sentencepiece BPE model on the (already sampled) text; returns the .model path.

    The text is streamed to sentencepiece and the model is written from memory, so no file path
    ends up inside the model (its bytes depend only on the text and the settings). Writes
    `<prefix>.model` and `<prefix>.vocab` ("piece<TAB>score", as spm_train) atomically.
    """
    model_prefix = Path(model_prefix)
    spm.set_random_generator_seed(seed)
    buffer = io.BytesIO()
    try:
        _train_spm(sample_path, buffer, vocab_size, character_coverage, threads)
    except RuntimeError as err:
        if "required_chars" in str(err):
            raise ValueError(
                f"{sample_path}: bpe.vocab_size={vocab_size} is smaller than the number of characters "
                f"needed to cover {character_coverage} of the text (sentencepiece: {err}). Raise "
                "bpe.vocab_size or lower bpe.character_coverage in the config.") from err
        raise
    model_path = Path(f"{model_prefix}.model")
    processor = spm.SentencePieceProcessor(model_proto=buffer.getvalue())
    with atomic_output(f"{model_prefix}.vocab") as out:
        for i in range(processor.get_piece_size()):
            out.write(f"{processor.id_to_piece(i)}\t{processor.get_score(i):g}\n")
    with atomic_output(model_path, "wb") as out:
        out.write(buffer.getvalue())
    return model_path


def _train_spm(sample_path, buffer, vocab_size, character_coverage, threads) -> None:
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter_lines(sample_path),
        model_writer=buffer,
        model_type="bpe",
        vocab_size=vocab_size,
        character_coverage=character_coverage,
        input_sentence_size=0,          # we sampled already: use every line, in file order
        shuffle_input_sentence=False,
        num_threads=threads,
        normalization_rule_name="identity",  # Moses preprocessing already normalised the text
        split_by_whitespace=True,
        hard_vocab_limit=False,          # small corpora may not support the requested size
        max_sentence_length=1 << 16,
        unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1,
        minloglevel=2,
    )


def write_fairseq_dict(model_path: Path | str, dict_path: Path | str) -> int:
    """Write the BPE vocabulary as a fairseq dict.txt ("piece count" per line); returns its size.

    Pieces keep sentencepiece's order; counts are rank-derived placeholders (fairseq only uses them
    for thresholding, which a given dictionary never triggers).
    """
    processor = spm.SentencePieceProcessor(model_file=str(model_path))
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    pieces = [p for p in pieces if p != _UNK]
    with atomic_output(dict_path) as out:
        for rank, piece in enumerate(pieces):
            if any(ch.isspace() for ch in piece):
                raise ValueError(f"{model_path}: BPE piece {piece!r} contains whitespace")
            out.write(f"{piece} {len(pieces) - rank}\n")
    return len(pieces)


class BpeApplier:
    """Applies a sentencepiece model to tokenized text, batch-wise."""

    def __init__(self, model_path: Path | str, batch_lines: int = 10000):
        self.processor = spm.SentencePieceProcessor(model_file=str(model_path))
        self.batch_lines = batch_lines

    def encode(self, lines: Sequence[str]) -> list[str]:
        return [" ".join(pieces) for pieces in self.processor.encode(list(lines), out_type=str)]

    def encode_stream(self, lines: Iterable[str]) -> Iterator[str]:
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) >= self.batch_lines:
                yield from self.encode(batch)
                batch = []
        if batch:
            yield from self.encode(batch)


def apply_files(model_path: Path | str, inputs: Sequence[Path | str], out_path: Path | str,
                *, progress: bool = False) -> int:
    """BPE-encode the concatenation of `inputs` into `out_path` (one output line per input line)."""
    applier = BpeApplier(model_path)
    written = 0
    with atomic_output(out_path) as out:
        for path in inputs:
            for encoded in applier.encode_stream(iter_lines(path, progress=progress)):
                out.write(encoded + "\n")
                written += 1
    return written
