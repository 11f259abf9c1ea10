"""SentencePiece as LASER2 does it (``bitext_data.<name>.subword.kind: spm``).

The text path before the subwords is LASER2's language-agnostic one, the same for every language: no Moses
tokenizer, no jieba, no MeCab (:class:`Laser2Normalizer`: non-printing characters to spaces, Moses' punctuation
normalisation with its English rules, lowercasing); SentencePiece then segments the normalised line. That
is, token for token, what ``laser_encoders.LaserTokenizer`` does to a raw line (tests/test_spm.py checks it on
FLORES lines of every script of the default config).

The joint model is learned on a sample of the normalised training text (:func:`learn`): ``sample_sentences``
lines drawn over the languages with probability ``q_l ** alpha / sum(q ** alpha)`` (``q_l``: the language's share
of the training lines; ``alpha`` < 1 up-samples the small languages: LaBSE's vocabulary uses 0.3, LASER2 a
temperature, ``alpha = 1 / T``). The sample is drawn in two streaming passes over the training files (line
counts, then the chosen lines), so that learning is bounded by the sample, not the corpus: memory is the
sample's text in SentencePiece's trainer plus 8 bytes per sampled line (docs/laser.md gives the measured figures).
The same files, settings and seed give the same model, byte for byte.
"""
from __future__ import annotations

import hashlib
import io
import logging
import unicodedata
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from laser_repro.core.errors import UserError
from laser_repro.core.textio import iter_lines

log = logging.getLogger("laser_repro")


class Laser2Normalizer:
    """Raw line -> LASER2's normalised line (before SentencePiece), for any language."""

    def __init__(self, lowercase: bool = True):
        from sacremoses import MosesPunctNormalizer

        self.lowercase = lowercase
        self._punct = MosesPunctNormalizer("en", perl_parity=True)
        # Moses release 4.0's normalize-punctuation.perl turns the single left and low quotes into double quotes;
        # sacremoses' perl_parity table has apostrophes for them (LASER2 patches the same two entries). A new list:
        # another normalizer object must not see the change.
        self._punct.substitutions = [(pattern, '"') if pattern in ("‘", "‚") else (pattern, repl)
                                     for pattern, repl in self._punct.substitutions]

    def __call__(self, line: str) -> str:
        if not line.isprintable():  # isprintable: no character of Unicode category C (nor a separator but " ")
            line = "".join(" " if unicodedata.category(c)[0] == "C" else c for c in line)
        line = self._punct.normalize(line)
        return line.lower() if self.lowercase else line

    def __repr__(self) -> str:
        return f"Laser2Normalizer(lowercase={self.lowercase})"


def is_model_file(path) -> bool:
    """Whether ``path`` is a SentencePiece model (a protocol buffer whose first field is a piece) rather than
    fastBPE codes (text lines ``a b count``)."""
    with open(path, "rb") as f:
        return f.read(1) == b"\n"


class SpmEncoder:
    """A SentencePiece model applied to normalised lines: ``encode(line)`` -> pieces joined by spaces."""

    def __init__(self, model_path):
        import sentencepiece

        self.path = Path(model_path)
        if not self.path.is_file():
            raise UserError(f"{self.path}: no such SentencePiece model")
        try:
            self.processor = sentencepiece.SentencePieceProcessor(model_file=str(self.path))
        except (OSError, RuntimeError) as err:
            raise UserError(f"{self.path}: not a SentencePiece model ({err})") from None

    def encode(self, line: str) -> str:
        return " ".join(self.processor.encode(line, out_type=str))

    def encode_stream(self, lines: Iterable[str]) -> Iterator[str]:
        for line in lines:
            yield self.encode(line)

    def pieces(self) -> list[str]:
        """Every piece but the control symbols (<unk>, <s>, </s>), in id order."""
        p = self.processor
        return [p.id_to_piece(i) for i in range(p.get_piece_size())
                if not (p.is_control(i) or p.is_unknown(i))]


def sample_sizes(line_counts: Mapping[str, int], sample_sentences: int, alpha: float) -> dict[str, int]:
    """Lines to draw per language: ``sample_sentences * q_l ** alpha / sum(q ** alpha)``, rounded (largest
    remainders: the sizes add up to ``sample_sentences``); a language without lines gets none."""
    langs = sorted(lang for lang, n in line_counts.items() if n > 0)
    if not langs:
        raise UserError("SentencePiece: the training text has no line")
    total = sum(line_counts[lang] for lang in langs)
    weights = np.array([(line_counts[lang] / total) ** alpha for lang in langs])
    exact = sample_sentences * weights / weights.sum()
    sizes = np.floor(exact).astype(np.int64)
    for i in np.argsort(-(exact - sizes), kind="stable")[: sample_sentences - int(sizes.sum())]:
        sizes[i] += 1
    return {lang: int(k) for lang, k in zip(langs, sizes)}


def _draws(n_lines: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """How often each chosen line of a language's ``n_lines`` is taken, as sorted line numbers with repeats:
    every line ``k // n_lines`` times (a small language is up-sampled by repetition, not by chance), plus
    ``k % n_lines`` distinct lines drawn without replacement."""
    reps, rest = divmod(k, n_lines)
    extra = np.sort(rng.choice(n_lines, size=rest, replace=False, shuffle=False)) if rest else np.empty(0, np.int64)
    if not reps:
        return extra.astype(np.int64)
    return np.sort(np.concatenate([np.repeat(np.arange(n_lines, dtype=np.int64), reps), extra]), kind="stable")


def _lines(files: Sequence[Path]) -> Iterator[str]:
    """The lines of ``files`` one after the other (invalid UTF-8 named by file and line)."""
    for path in files:
        yield from iter_lines(path)


def write_sample(files_by_lang: Mapping[str, Sequence[Path]], out_path, *, sample_sentences: int, alpha: float,
                 seed: int) -> dict:
    """Write the learning sample (one line per drawn sentence, languages in code order) and return its
    statistics (lines per language in the training text and in the sample)."""
    counts = {}
    for lang, files in sorted(files_by_lang.items()):
        counts[lang] = sum(1 for _ in _lines(files))
    sizes = sample_sizes(counts, sample_sentences, alpha)
    written, size = {}, 0
    with open(out_path, "w", encoding="utf-8", newline="\n") as out:
        for lang in sorted(sizes):
            # one generator per language, seeded by the seed and the language: adding a language does not
            # change another's sample
            rng = np.random.default_rng([seed, int.from_bytes(hashlib.sha256(lang.encode()).digest()[:8], "little")])
            chosen = _draws(counts[lang], sizes[lang], rng)
            pos, n = 0, 0
            for number, line in enumerate(_lines(files_by_lang[lang])):
                while pos < len(chosen) and chosen[pos] == number:
                    size += out.write(line + "\n")
                    pos += 1
                    n += 1
                if pos == len(chosen):
                    break
            written[lang] = n
    return {"training_lines": counts, "sample_lines": written, "sample_sentences": sum(written.values()),
            "sample_chars": size, "alpha": alpha, "seed": seed}


def learn(files_by_lang: Mapping[str, Sequence[Path]], model_path, *, vocab_size: int, model_type: str,
          character_coverage: float, sample_sentences: int, alpha: float, seed: int, threads: int = 1) -> dict:
    """Learn the joint SentencePiece model on a sample of the normalised training text into ``model_path``
    (its vocabulary beside it, ``.vocab``); returns the statistics, also written to ``<model>.json``."""
    import sentencepiece

    from laser_repro.core.textio import atomic_output, write_json

    model_path = Path(model_path)
    model_path.parent.mkdir(parents=True, exist_ok=True)
    sample = model_path.with_name(model_path.name + ".sample.txt")
    stats = write_sample(files_by_lang, sample, sample_sentences=sample_sentences, alpha=alpha, seed=seed)
    sentencepiece.set_random_generator_seed(seed)
    model = io.BytesIO()
    try:
        # lines from an iterator and the model into memory: no file name enters the model (its trainer_spec
        # would record the sample's path), so the same text and settings give the same bytes in any directory
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=_lines([sample]), model_writer=model, vocab_size=vocab_size, model_type=model_type,
            character_coverage=character_coverage,
            input_sentence_size=0, shuffle_input_sentence=False,  # the sample is the input: no second sampling
            num_threads=threads, minloglevel=1,
            # LASER2's dictionary: fairseq's specials are its own, so SentencePiece keeps <unk> only as id 0
            unk_id=0, bos_id=-1, eos_id=-1, pad_id=-1)
    except RuntimeError as err:
        raise UserError(f"SentencePiece could not learn {model_path} with vocab_size {vocab_size} and "
                        f"character_coverage {character_coverage} on {stats['sample_sentences']} sampled lines: "
                        f"{err}") from None
    finally:
        sample.unlink(missing_ok=True)
    processor = sentencepiece.SentencePieceProcessor(model_proto=model.getvalue())
    with atomic_output(model_path.with_suffix(".vocab")) as out:  # SentencePiece's own .vocab form: piece, score
        for i in range(processor.get_piece_size()):
            out.write(f"{processor.id_to_piece(i)}\t{processor.get_score(i):g}\n")
    with atomic_output(model_path, "wb") as out:
        out.write(model.getvalue())
    stats.update({"vocab_size": vocab_size, "model_type": model_type, "character_coverage": character_coverage})
    write_json(model_path.with_suffix(".json"), stats)
    return stats


def write_fairseq_dict(model_path, out_path, count_files: Sequence[Path] = ()) -> dict:
    """The fairseq dictionary of a SentencePiece model (LASER2's ``.cvocab`` has this form): every piece but
    the control symbols, in the model's id order, with its count in ``count_files`` (the encoded training
    text; 0 without them)."""
    from collections import Counter

    from laser_repro.core.textio import atomic_output

    pieces = SpmEncoder(model_path).pieces()
    counts: Counter = Counter()
    for line in _lines([Path(p) for p in count_files]):
        counts.update(line.split())
    with atomic_output(out_path) as out:
        for piece in pieces:
            out.write(f"{piece} {counts.get(piece, 0)}\n")
    known = set(pieces)
    unknown = sum(c for piece, c in counts.items() if piece not in known)
    return {"pieces": len(pieces), "tokens": sum(counts.values()), "tokens_not_in_model": unknown}


#: measured by scripts/bench_spm.py on 2 busy cores (docs/results.md#sentencepiece): the unigram trainer on real
#: multilingual news text (~128 characters a line), vocabulary 8k, 2 threads: 0.43 GB / 161 s at 100k sampled
#: lines, 1.0 GB / 394 s at 300k, 3.2 GB / 938 s at 1M: about 3.1 GB and 15 min per million lines
_MB_PER_MILLION_LINES = 3100
_MIN_PER_MILLION_LINES = 15


def learn_resources(subword: Mapping, headroom: float = 1.5) -> dict:
    """SLURM request of rule spm_learn from its sample's size (``subword``: the bitext_data entry's settings):
    the trainer holds the sample, so neither grows with the corpus."""
    millions = subword["sample_sentences"] / 1e6
    mem_mb = int(headroom * (300 + _MB_PER_MILLION_LINES * millions))
    minutes = headroom * (2 + _MIN_PER_MILLION_LINES * millions) * 2 / max(1, subword["threads"])
    return {"mem_mb": max(mem_mb, 1000), "runtime": max(10, int(minutes) + 5)}
