"""Command line of the training data: a local corpus's files from a sacrebleu test set
(``sacrebleu-corpus``), bitext extraction (``extract``), Moses preprocessing
(``preprocess``; ``--text laser2``: LASER2's language-agnostic normalisation), the joint BPE (``bpe-count``,
``bpe-learn``, ``bpe-dict``, ``bpe-apply``) or SentencePiece (``spm-learn``, ``spm-dict``, ``spm-apply``), the
pairs' deduplication (``pair-dedup``) and the subword text of evaluation text (``prepare-text``;
:func:`prepare_text_file` also serves ``laser-repro embed --codes``). The fairseq binarization of the
training data is LASER's (:mod:`laser_repro.models.laser.cli`).
"""
from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

from laser_repro.core.errors import UserError
from laser_repro.core.textio import write_json

log = logging.getLogger("laser_repro")


def _preprocessor(code: str, lowercase: bool, text: str = "moses"):
    from laser_repro.data.subword_text import normalizer

    return normalizer(text, code, lowercase=lowercase)


def cmd_extract(a):
    from laser_repro.data import corpora

    exclude = corpora.load_tatoeba_test_files(*a.exclude_tatoeba) if a.exclude_tatoeba else None
    common = dict(first_n=a.first_n, max_pairs=a.max_pairs, max_chars=a.max_chars, max_ratio=a.max_ratio,
                  exclude=exclude, seed=a.seed)
    given = [x is not None for x in (a.moses_src, a.moses_tgt, a.tok_src, a.tok_tgt)]
    if any(given) and (a.opus_zip or not all(given)):
        raise UserError("extract: --moses-src, --moses-tgt, --tok-src and --tok-tgt go together, with local files")
    if a.opus_zip:
        stats = corpora.extract_opus_moses(a.opus_zip, a.opus_corpus, a.src_code, a.tgt_code,
                                           a.out_src, a.out_tgt, **common)
        sources = [f"{a.opus_zip}:{m}" for m in corpora.opus_moses_members(a.opus_corpus, a.src_code, a.tgt_code)]
    else:
        skip = tuple(a.skip_lines) if a.skip_lines else None
        moses = {"moses": (a.moses_src, a.moses_tgt), "moses_out": (a.tok_src, a.tok_tgt)} if all(given) else {}
        stats = corpora.extract_nway_pair(a.src_file, a.tgt_file, a.out_src, a.out_tgt, skip_lines=skip, **moses,
                                          **common)
        sources = [a.src_file, a.tgt_file]
    # a pair with no sentence fails here, by name (not as an empty file in training), unless allowed
    corpora.require_sentences(stats, corpus=a.corpus or Path(a.out_src).parent.name, pair=f"{a.src}-{a.tgt}",
                              sources=sources, absent_ok=a.absent_ok,
                              outputs=[p for p in (a.out_src, a.out_tgt, a.tok_src, a.tok_tgt) if p],
                              archive=a.opus_zip, max_chars=a.max_chars, max_ratio=a.max_ratio)
    stats.update({"src": a.src, "tgt": a.tgt})
    log.info("%s-%s: %s", a.src, a.tgt, json.dumps(stats))
    write_json(a.stats, stats)


def cmd_sacrebleu_corpus(a):
    from laser_repro.data import sacrebleu_sets

    if bool(a.nway_file) == bool(a.pair_file):
        raise sacrebleu_sets.WmtError("give either --nway-file (an N-way corpus) or --pair-file (bitexts)")
    if a.nway_file:
        paths = dict(a.nway_file)
        if len(paths) != len(a.nway_file):
            raise sacrebleu_sets.WmtError("--nway-file: a language given twice")
        meta = sacrebleu_sets.write_nway_files(a.test_set, a.tarball, paths, a.meta, md5=a.md5)
        log.info("%s: %d N-way sentences in %s (%s)", a.test_set, meta["sentences"], ", ".join(paths),
                 json.dumps(meta["join"]))
    else:
        meta = sacrebleu_sets.write_pair_files(a.test_set, a.tarball, a.pair_file, a.meta, md5=a.md5)
        log.info("%s: %s", a.test_set, json.dumps(meta["pairs"]))


def cmd_preprocess(a):
    from laser_repro.data.sharding import write_shard

    preprocessor = _preprocessor(a.lang, not a.keep_case, a.text)
    start = time.perf_counter()
    n = write_shard(a.input, a.output, int(a.shard), int(a.of), a.block_lines, preprocessor, progress=True)
    _log_rate(a.output, n, start)


def cmd_moses_lines(a):
    from laser_repro.data import corpora

    start = time.perf_counter()
    n = corpora.write_moses_lines(a.input, a.output, _preprocessor(a.lang, a.case == "lower", a.text))
    _log_rate(a.output, n, start)


def _log_rate(output, n: int, start: float) -> None:
    elapsed = time.perf_counter() - start
    log.info("%s: %d lines in %.1fs (%.0f lines/s)", output, n, elapsed, n / max(elapsed, 1e-9))


def cmd_bpe_count(a):
    from laser_repro.data import bpe

    inputs = a.inputs
    if a.inputs_from:
        from laser_repro.provenance.spec_files import read_path_list

        try:
            inputs = read_path_list(a.inputs_from)
        except ValueError as err:
            raise UserError(str(err)) from None
    counts, stats = bpe.count_words(inputs, threads=a.threads, progress=True)
    bpe.write_word_counts(counts, a.output)
    log.info("%s: %s", a.output, json.dumps(stats))


def cmd_bpe_learn(a):
    from laser_repro.data import bpe

    stats = bpe.learn(a.codes, a.vocab, merges=a.merges, words_path=a.words, inputs=a.inputs, threads=a.threads)
    log.info("BPE codes %s, vocab %s: %s", a.codes, a.vocab, json.dumps(stats))


def cmd_bpe_dict(a):
    from laser_repro.data import bpe

    stats = bpe.write_fairseq_dict(a.vocab, a.output, characters=not a.vocab_only)
    log.info("%s: %s", a.output, json.dumps(stats))


def cmd_bpe_apply(a):
    from laser_repro.data import bpe
    from laser_repro.core.textio import atomic_output
    from laser_repro.data.subword_text import SubwordText

    applier = SubwordText(a.codes)  # fastBPE codes (bpe-apply) or a SentencePiece model (spm-apply)
    lines = bpe.iter_input_lines(a.inputs, a.block_lines)
    if a.keep:  # one copy of each pair of the direction (preprocess.dedup_pairs)
        from laser_repro.data.dedup import kept_lines, read_keep_mask

        lines = kept_lines(lines, read_keep_mask(a.keep), name=" + ".join(a.inputs))

    def write(out) -> int:
        written = 0
        for encoded in applier.encode_stream(lines):
            out.write(encoded + "\n")
            written += 1
        return written

    if a.output == "-":
        with open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False) as out:
            written = write(out)
    else:
        with atomic_output(a.output) as out:
            written = write(out)
    log.info("%s: %d lines", a.output, written)


def cmd_spm_learn(a):
    from laser_repro.data import spm
    from laser_repro.provenance.spec_files import read_json_file

    try:
        inputs = read_json_file(a.inputs_from, "--inputs-from")
    except ValueError as err:
        raise UserError(str(err)) from None
    if not isinstance(inputs, dict) or not all(isinstance(v, list) and all(isinstance(p, str) for p in v)
                                               for v in inputs.values()):
        raise UserError(f"spm-learn --inputs-from {a.inputs_from}: expected a JSON object language -> list of files")
    by_lang = {lang: [Path(p) for p in paths] for lang, paths in inputs.items()}
    start = time.perf_counter()
    stats = spm.learn(by_lang, a.model, vocab_size=a.vocab_size, model_type=a.model_type,
                      character_coverage=a.character_coverage, sample_sentences=a.sample_sentences,
                      alpha=a.sampling_alpha, seed=a.seed, threads=a.threads)
    log.info("SentencePiece model %s in %.1fs: %s", a.model, time.perf_counter() - start, json.dumps(stats))


def cmd_spm_dict(a):
    from laser_repro.data import spm

    stats = spm.write_fairseq_dict(a.model, a.output, a.count_from or ())
    log.info("%s: %s", a.output, json.dumps(stats))


def cmd_pair_dedup(a):
    from laser_repro.data import bpe
    from laser_repro.data.dedup import keep_mask, write_keep_mask

    mask, stats = keep_mask(bpe.iter_input_lines(a.src_inputs, a.block_lines),
                            bpe.iter_input_lines(a.tgt_inputs, a.block_lines),
                            names=(" + ".join(a.src_inputs), " + ".join(a.tgt_inputs)))
    write_keep_mask(mask, stats, a.keep, a.stats)
    log.info("%s: %s", a.keep, stats)


def prepare_text_file(subwords, code: str, keep_case: bool, src, dst) -> None:
    """One raw text file of language ``code`` -> its subword text in ``dst`` (atomic), streaming; ``subwords``:
    a :class:`laser_repro.data.subword_text.SubwordText` (Moses + BPE, or LASER2's normalisation + SentencePiece)."""
    from laser_repro.core.textio import atomic_output, iter_lines

    with atomic_output(dst) as out:
        for encoded in subwords.prepare(iter_lines(src), code, lowercase=not keep_case):
            out.write(encoded + "\n")
    log.info("%s -> %s", src, dst)


def cmd_prepare_text(a):
    """Evaluation files -> subword text, streaming (no intermediate file)."""
    from laser_repro.data.subword_text import SubwordText

    if not (len(a.lang) == len(a.input) == len(a.output)):
        raise SystemExit("prepare-text: give one --lang and --output per --input")
    applier = SubwordText(a.codes)
    for code, src, dst in zip(a.lang, a.input, a.output):
        prepare_text_file(applier, code, a.keep_case, src, dst)


def add_cli(sub) -> None:
    """Register the data commands on an argparse subparsers object."""
    s = sub.add_parser("extract", help="extract one filtered, capped bitext (OPUS zip or local files)")
    s.add_argument("--src", required=True)
    s.add_argument("--tgt", required=True)
    s.add_argument("--opus-zip")
    s.add_argument("--opus-corpus")
    s.add_argument("--src-code")
    s.add_argument("--tgt-code")
    s.add_argument("--src-file")
    s.add_argument("--tgt-file")
    s.add_argument("--first-n", type=int)
    s.add_argument("--max-pairs", type=int)
    s.add_argument("--max-chars", type=int, default=1000)
    s.add_argument("--max-ratio", type=float)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--exclude-tatoeba", nargs=2, metavar=("XX_FILE", "ENG_FILE"))
    s.add_argument("--skip-lines", nargs=2, type=int, metavar=("START", "STOP"),
                   help="N-way files: leave out lines START..STOP-1 (0-based; the held-out evaluation lines)")
    s.add_argument("--moses-src", help="local files: --src-file's Moses-preprocessed lines (moses-lines)")
    s.add_argument("--moses-tgt", help="local files: --tgt-file's Moses-preprocessed lines (moses-lines)")
    s.add_argument("--tok-src", help="with --moses-src: output, the kept pairs' lines of --moses-src")
    s.add_argument("--tok-tgt", help="with --moses-tgt: output, the kept pairs' lines of --moses-tgt")
    s.add_argument("--out-src", required=True)
    s.add_argument("--out-tgt", required=True)
    s.add_argument("--stats", required=True)
    s.add_argument("--corpus", help="corpus name for messages (default: the directory of --out-src)")
    s.add_argument("--absent-ok", action="store_true",
                   help="no sentence pair left: write the empty bitext, stats 'absent': true, and warn "
                        "(corpora with allow_absent_pairs) instead of failing")
    s.set_defaults(func=cmd_extract)

    s = sub.add_parser("sacrebleu-corpus", help="a local corpus's files from a sacrebleu test set's archive, offline")
    s.add_argument("--test-set", required=True, help="sacrebleu test-set name, e.g. wmt19")
    s.add_argument("--tarball", action="append", required=True, help="the test set's archive (repeat if several)")
    s.add_argument("--md5", action="append",
                   help="md5 to expect instead of sacrebleu's, one per --tarball (re-packed mirror, test fixture)")
    s.add_argument("--nway-file", nargs=2, action="append", metavar=("LANG", "PATH"),
                   help="N-way corpus: LANG's side of the xx-en pairs joined on English (repeat per language)")
    s.add_argument("--pair-file", nargs=3, action="append", metavar=("LANGPAIR", "LANG", "PATH"),
                   help="bitext: LANG's side of sacrebleu's pair LANGPAIR, e.g. en-de deu PATH (repeat per side)")
    s.add_argument("--meta", required=True, help="JSON record: archives, pairs, line counts (N-way: the join)")
    s.set_defaults(func=cmd_sacrebleu_corpus)

    s = sub.add_parser("preprocess", help="Moses-preprocess one shard of a corpus side")
    s.add_argument("--lang", required=True)
    s.add_argument("--input", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--shard", default="0")
    s.add_argument("--of", default="1")
    s.add_argument("--block-lines", type=int, default=10000)
    s.add_argument("--keep-case", action="store_true")
    s.add_argument("--text", choices=("moses", "laser2"), default="moses",
                   help="moses (default): the language's Moses preprocessing; laser2: LASER2's language-agnostic "
                        "normalisation (before SentencePiece)")
    s.set_defaults(func=cmd_preprocess)

    s = sub.add_parser("moses-lines", help="Moses-preprocess every line of a local corpus file (an N-way "
                                           "corpus's language, once for every pair and data entry reading it)")
    s.add_argument("--lang", required=True)
    s.add_argument("--input", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--case", required=True, choices=("lower", "cased"), help="lowercased, or the case kept")
    s.add_argument("--text", choices=("moses", "laser2"), default="moses",
                   help="moses (default) or laser2: LASER2's language-agnostic normalisation")
    s.set_defaults(func=cmd_moses_lines)

    s = sub.add_parser("bpe-count", help="word frequencies of all training text (input of bpe-learn)")
    s.add_argument("--output", required=True, help="'word count' per line, count descending")
    s.add_argument("--threads", type=int, default=1, help="count this many files in parallel")
    files = s.add_mutually_exclusive_group(required=True)
    files.add_argument("--inputs", nargs="+", help="the tokenized text files")
    files.add_argument("--inputs-from", metavar="FILE", help="or a JSON list of them (what the workflow passes)")
    s.set_defaults(func=cmd_bpe_count)

    s = sub.add_parser("bpe-learn", help="learn the joint BPE (fastBPE learnbpe + getvocab)")
    source = s.add_mutually_exclusive_group(required=True)
    source.add_argument("--words", help="word frequencies written by bpe-count")
    source.add_argument("--inputs", nargs="+", help="or the text files themselves")
    s.add_argument("--merges", type=int, required=True, help="number of merge operations (paper: 50000)")
    s.add_argument("--codes", required=True, help="output: fastBPE codes, 'left right count' per merge")
    s.add_argument("--vocab", required=True, help="output: fastBPE vocab, 'token count' of the BPE'd text")
    s.add_argument("--threads", type=int, default=1, help="with --inputs: count this many files in parallel")
    s.set_defaults(func=cmd_bpe_learn)

    s = sub.add_parser("bpe-dict", help="write the BPE vocabulary as a fairseq dictionary")
    s.add_argument("--vocab", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--vocab-only", action="store_true",
                   help="only the vocab's tokens (no count-0 entries for the missing forms of its characters)")
    s.set_defaults(func=cmd_bpe_dict)

    s = sub.add_parser("bpe-apply", help="apply fastBPE codes (ours or LASER's 93langs.fcodes) to tokenized text")
    s.add_argument("--codes", required=True, help="fastBPE codes file: 'left right count' per line")
    s.add_argument("--output", required=True, help="'-': standard output")
    s.add_argument("--block-lines", type=int, default=10000, help="block size of sharded inputs")
    s.add_argument("--inputs", nargs="+", required=True,
                   help="files, concatenated; shards (NAME.KKK-of-NNN) are read back in the original order; "
                        "'-': standard input")
    s.add_argument("--keep", help="keep mask of pair-dedup (.npy): write only the lines it marks")
    s.set_defaults(func=cmd_bpe_apply)

    s = sub.add_parser("spm-apply", help="apply a SentencePiece model to normalised text (preprocess --text laser2)")
    s.add_argument("--model", dest="codes", required=True, help="the SentencePiece model (spm-learn)")
    s.add_argument("--output", required=True, help="'-': standard output")
    s.add_argument("--block-lines", type=int, default=10000, help="block size of sharded inputs")
    s.add_argument("--inputs", nargs="+", required=True,
                   help="files, concatenated; shards (NAME.KKK-of-NNN) are read back in the original order")
    s.add_argument("--keep", help="keep mask of pair-dedup (.npy): write only the lines it marks")
    s.set_defaults(func=cmd_bpe_apply)

    s = sub.add_parser("spm-learn", help="learn the joint SentencePiece model on a language-sampled part of the "
                                         "normalised training text")
    s.add_argument("--inputs-from", required=True, metavar="FILE",
                   help="JSON object: language -> its normalised training files (what the workflow passes)")
    s.add_argument("--model", required=True, help="output: the model (its .vocab and .json statistics beside it)")
    s.add_argument("--vocab-size", type=int, required=True)
    s.add_argument("--model-type", choices=("unigram", "bpe"), default="unigram")
    s.add_argument("--character-coverage", type=float, default=0.9995)
    s.add_argument("--sample-sentences", type=int, required=True, help="lines of the learning sample")
    s.add_argument("--sampling-alpha", type=float, required=True,
                   help="a language's lines are drawn with probability q**alpha / sum(q**alpha)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--threads", type=int, default=1)
    s.set_defaults(func=cmd_spm_learn)

    s = sub.add_parser("spm-dict", help="write a SentencePiece model's pieces as a fairseq dictionary")
    s.add_argument("--model", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--count-from", nargs="*", help="the encoded training text: the pieces' counts (else 0)")
    s.set_defaults(func=cmd_spm_dict)

    s = sub.add_parser("pair-dedup", help="mark the first copy of each sentence pair of one direction")
    s.add_argument("--src-inputs", nargs="+", required=True, help="source side, files or shards, concatenated")
    s.add_argument("--tgt-inputs", nargs="+", required=True, help="target side, in the same order")
    s.add_argument("--block-lines", type=int, default=10000, help="block size of sharded inputs")
    s.add_argument("--keep", required=True, help="output: the keep mask (.npy, one boolean per pair)")
    s.add_argument("--stats", required=True, help="output: pairs, kept, dropped_duplicate (JSON)")
    s.set_defaults(func=cmd_pair_dedup)

    s = sub.add_parser("prepare-text", help="evaluation text -> subword text (Moses + BPE, or LASER2's normalisation "
                                            "+ SentencePiece)")
    s.add_argument("--codes", required=True, help="fastBPE codes or a SentencePiece model (the kind is read from the file)")
    s.add_argument("--keep-case", action="store_true")
    s.add_argument("--lang", action="append", required=True)
    s.add_argument("--input", action="append", required=True)
    s.add_argument("--output", action="append", required=True)
    s.set_defaults(func=cmd_prepare_text)
