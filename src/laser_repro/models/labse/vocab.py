"""The LaBSE vocabulary: a cased WordPiece vocabulary learned on the training lines of every language
(HF ``tokenizers``), with the paper's language smoothing (Section 3.2, exponent 0.3).

Smoothing: a language with a share p_l of the training lines is given the share q_l ~ p_l ** alpha of
the text the vocabulary is learned from (alpha = 1: as is; alpha -> 0: every language alike). Lines of a
language are repeated (cyclically) or subsampled (seeded) to reach its share, so the result depends only
on the input files, the settings and the seed.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Mapping

import numpy as np

from laser_repro.core.textio import atomic_output, iter_lines

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)  # ids 0-4, in this order


def smoothed_counts(sizes: Mapping[str, int], alpha: float) -> dict[str, int]:
    """Lines per language after smoothing with exponent ``alpha``, keeping the total number of lines."""
    if not 0 < alpha <= 1:
        raise ValueError(f"language smoothing exponent must be in (0, 1], not {alpha}")
    empty = [lang for lang, n in sizes.items() if n <= 0]
    if empty:
        raise ValueError(f"no training lines for {empty}")
    total = sum(sizes.values())
    weights = {lang: (n / total) ** alpha for lang, n in sizes.items()}
    norm = sum(weights.values())
    return {lang: max(1, round(total * w / norm)) for lang, w in weights.items()}


def smoothed_selection(n_lines: int, count: int, seed: int) -> tuple[int, set[int]]:
    """``count`` of ``n_lines`` lines: every line ``copies`` times plus the seeded sample ``extra`` once more."""
    copies, rest = divmod(count, n_lines)
    return copies, set(np.random.default_rng(seed).choice(n_lines, size=rest, replace=False).tolist())


def new_tokenizer():
    """An untrained cased BERT-style WordPiece tokenizer: ``[CLS] a [SEP]`` and ``[CLS] a [SEP] b [SEP]``."""
    from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    tok = Tokenizer(WordPiece(unk_token=UNK))
    # cased as the paper's vocabulary; CJK characters split one by one as in BERT
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False,
                                                lowercase=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    return tok


def add_post_processor(tok) -> None:
    from tokenizers import processors

    cls, sep = tok.token_to_id(CLS), tok.token_to_id(SEP)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{CLS} $A {SEP}", pair=f"{CLS} $A {SEP} $B:1 {SEP}:1", special_tokens=[(CLS, cls), (SEP, sep)])


def learn(files: Mapping[str, Path], size: int, *, smoothing: float = 0.3, seed: int = 1) -> tuple[object, dict]:
    """Learn a WordPiece vocabulary of at most ``size`` entries on ``files`` (language -> text file).

    The merges are learned by the project's own BPE learner (laser_repro.data.bpe: ties broken by the
    symbols, so the same input gives the same vocabulary; the ``tokenizers`` trainer breaks ties by hash
    order and does not). WordPiece marks the *continuation* of a word (``##``) where fastBPE marks its end
    (``</w>``): the words are learned reversed, so a fastBPE word end is a WordPiece word start. Words come
    from the tokenizer's own normalizer and pre-tokenizer (BERT's: punctuation and CJK characters split)."""
    from laser_repro.data.bpe import END, learn_codes

    tok = new_tokenizer()

    def line_words(line: str):
        return (w for w, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(line)))

    sizes = {lang: sum(1 for _ in iter_lines(path)) for lang, path in files.items()}  # streamed: corpora can be large
    for lang, n in sizes.items():
        if not n:
            raise ValueError(f"{files[lang]}: empty (no training lines for {lang})")
    counts = smoothed_counts(sizes, smoothing)
    raw: dict[str, Counter] = {}  # words of each language's lines, each line once ([UNK] rates)
    words: Counter = Counter()    # words of the smoothed text the vocabulary is learned from
    for i, lang in enumerate(sorted(files)):
        copies, extra = smoothed_selection(sizes[lang], counts[lang], seed * 1000 + i)
        raw[lang], sampled = Counter(), Counter()
        for j, line in enumerate(iter_lines(files[lang])):
            found = list(line_words(line))
            raw[lang].update(found)
            if j in extra:
                sampled.update(found)
        for word, n in raw[lang].items():
            words[word] += copies * n
        words.update(sampled)

    def piece(symbol: str) -> str:  # a symbol of a reversed word -> its WordPiece entry
        return symbol[:-len(END)][::-1] if symbol.endswith(END) else "##" + symbol[::-1]

    alphabet = sorted({piece(c + END) if j == len(w) - 1 else piece(c) for w in words
                       for j, c in enumerate(w[::-1])})
    merges = size - len(SPECIAL_TOKENS) - len(alphabet)
    if merges < 1:
        raise ValueError(f"vocabulary size {size} is too small: the special tokens and the {len(alphabet)} "
                         f"characters of the training lines alone take {len(SPECIAL_TOKENS) + len(alphabet)}")
    learned = learn_codes(sorted(((w[::-1], n) for w, n in words.items()), key=lambda x: (-x[1], x[0])), merges)
    entries = set(alphabet) | {piece(left + right) for left, right, _ in learned.codes}
    order = [*SPECIAL_TOKENS, *sorted(entries, key=lambda t: (t.startswith("##"), t))]
    tok.model = _wordpiece({t: i for i, t in enumerate(order)})
    add_post_processor(tok)
    stats = {"size": tok.get_vocab_size(), "requested_size": size, "characters": len(alphabet),
             "merges": len(learned.codes), "smoothing": smoothing, "seed": seed,
             "lines": sizes, "smoothed_lines": counts}
    stats["unk_rate"] = unk_rates(tok, raw)
    return tok, stats


def _wordpiece(vocab: Mapping[str, int]):
    from tokenizers.models import WordPiece

    return WordPiece(dict(vocab), unk_token=UNK, continuing_subword_prefix="##", max_input_chars_per_word=100)


def unk_rates(tok, words: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    """% of the tokens of each language that are [UNK] (the paper's footnote 17 measures mBERT's), from its
    word counts: WordPiece segments each word alone, so each distinct word is encoded once."""
    unk = tok.token_to_id(UNK)
    rates = {}
    for lang, counts in words.items():
        distinct = list(counts)
        encoded = tok.encode_batch(distinct, add_special_tokens=False) if distinct else []
        total = sum(len(enc.ids) * counts[w] for w, enc in zip(distinct, encoded))
        unknown = sum(enc.ids.count(unk) * counts[w] for w, enc in zip(distinct, encoded))
        rates[lang] = round(100.0 * unknown / max(total, 1), 3)
    return rates


def load(path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def cmd_vocab(a) -> None:
    if len(a.langs) != len(a.texts):
        raise SystemExit("labse-vocab: give one --texts file per --langs language")
    tok, stats = learn(dict(zip(a.langs, map(Path, a.texts))), a.size, smoothing=a.smoothing, seed=a.seed)
    with atomic_output(a.output, "w") as f:
        f.write(tok.to_str(pretty=True) + "\n")
    if a.stats:
        with atomic_output(a.stats, "w") as f:
            f.write(json.dumps(stats, indent=1) + "\n")


def add_cli(sub) -> None:
    s = sub.add_parser("labse-vocab", help="learn the LaBSE WordPiece vocabulary (language smoothing)")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--texts", nargs="+", required=True, help="training lines, one file per language")
    s.add_argument("--size", type=int, required=True, help="vocabulary size (entries)")
    s.add_argument("--smoothing", type=float, default=0.3, help="language smoothing exponent (paper: 0.3)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--output", required=True, help="tokenizer.json")
    s.add_argument("--stats", help="vocabulary statistics (sizes, [UNK] rate per language) as JSON")
    s.set_defaults(func=cmd_vocab)
