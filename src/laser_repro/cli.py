"""Command line of the pipeline: one subcommand per workflow step (`python -m laser_repro.cli STEP ...`).

Each subcommand parses its arguments and calls into the package; Snakemake rules stay one line
(`train` lives in laser_repro.models.training).
Heavy imports (torch, fairseq) happen inside the subcommands that need them.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from laser_repro.core.textio import read_json, write_json
from laser_repro.models.training import cmd_train

log = logging.getLogger("laser_repro")


def _preprocessor(code: str, lowercase: bool):
    from laser_repro.core import languages
    from laser_repro.data.preprocess import TextPreprocessor

    lang = languages.get(code)
    return TextPreprocessor(lang.moses, segmenter=lang.segmenter or None, romanize=bool(lang.romanize),
                            lowercase=lowercase)


def cmd_fetch(a):
    from laser_repro.core import download

    url = download.resolve_mirror(a.url, a.mirror, a.base_url) if a.mirror else a.url
    local_mirror = a.mirror and not download.is_url(a.mirror)
    if local_mirror and not Path(a.mirror).expanduser().is_dir():
        # not an absent pair: every file would be "absent" from a mistyped mirror path
        raise download.DownloadError(f"mirror directory {a.mirror} does not exist (--mirror, config opus.mirror)")
    try:
        record = download.fetch_with_record(url, Path(a.dest), sha256=a.sha256, retries=a.retries)
    except download.NotFoundError:
        if not a.absent_ok:
            raise
        from laser_repro.data.corpora import write_absent_pair_record

        if download.is_url(url) and not url.lower().startswith("file:"):
            why = "HTTP 404"
        else:
            why = f"not in the mirror directory {a.mirror}" if local_mirror and url != a.url else "no such local file"
        write_absent_pair_record(a.dest, url, why)
        log.warning("%s does not exist (%s); recorded as an absent pair in %s", url, why, a.dest)
        return
    log.info("fetched %s", json.dumps(record))


def cmd_extract_member(a):
    from laser_repro.data import corpora

    corpora.extract_tar_member(a.archive, a.member, a.output)


def cmd_extract(a):
    from laser_repro.data import corpora

    exclude = corpora.load_tatoeba_test_files(*a.exclude_tatoeba) if a.exclude_tatoeba else None
    common = dict(first_n=a.first_n, max_pairs=a.max_pairs, max_chars=a.max_chars, max_ratio=a.max_ratio,
                  exclude=exclude, seed=a.seed)
    if a.opus_zip:
        stats = corpora.extract_opus_moses(a.opus_zip, a.opus_corpus, a.src_code, a.tgt_code,
                                           a.out_src, a.out_tgt, **common)
        sources = [f"{a.opus_zip}:{m}" for m in corpora.opus_moses_members(a.opus_corpus, a.src_code, a.tgt_code)]
    else:
        skip = tuple(a.skip_lines) if a.skip_lines else None
        stats = corpora.extract_nway_pair(a.src_file, a.tgt_file, a.out_src, a.out_tgt, skip_lines=skip, **common)
        sources = [a.src_file, a.tgt_file]
    # a pair with no sentence fails here, by name (not as an empty file in training), unless allowed
    corpora.require_sentences(stats, corpus=a.corpus or Path(a.out_src).parent.name, pair=f"{a.src}-{a.tgt}",
                              sources=sources, absent_ok=a.absent_ok, outputs=(a.out_src, a.out_tgt),
                              archive=a.opus_zip, max_chars=a.max_chars, max_ratio=a.max_ratio)
    stats.update({"src": a.src, "tgt": a.tgt})
    log.info("%s-%s: %s", a.src, a.tgt, json.dumps(stats))
    write_json(a.stats, stats)


def cmd_preprocess(a):
    from laser_repro.data.sharding import write_shard

    preprocessor = _preprocessor(a.lang, not a.keep_case)
    start = time.perf_counter()
    n = write_shard(a.input, a.output, int(a.shard), int(a.of), a.block_lines, preprocessor, progress=True)
    elapsed = time.perf_counter() - start
    log.info("%s: %d lines in %.1fs (%.0f lines/s)", a.output, n, elapsed, n / max(elapsed, 1e-9))


def cmd_bpe_count(a):
    from laser_repro.data import bpe

    counts, stats = bpe.count_words(a.inputs, threads=a.threads, progress=True)
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

    applier = bpe.BpeApplier(a.codes)

    def write(out) -> int:
        written = 0
        for encoded in applier.encode_stream(bpe.iter_input_lines(a.inputs, a.block_lines)):
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


def cmd_binarize(a):
    from laser_repro.models.laser import fairseq_bridge

    fairseq_bridge.binarize_pair(a.src, a.tgt, a.train_prefix, a.dict, a.dest, valid_prefix=a.valid_prefix)


def cmd_binarize_valid(a):
    from laser_repro.models.laser import fairseq_bridge

    for pair in a.pairs:
        src, tgt = pair.split("-")
        fairseq_bridge.binarize_pair(src, tgt, None, a.dict, a.dest, valid_prefix=a.prefix)


def cmd_export(a):
    from laser_repro.models.laser.export import export_encoder

    log.info("exported %s", json.dumps(export_encoder(a.checkpoint, a.output), default=str))


def _prepare_text(applier, code: str, keep_case: bool, src, dst) -> None:
    """Moses-preprocess and BPE-encode one text file into ``dst`` (atomic), streaming."""
    from laser_repro.core.textio import atomic_output, iter_lines

    preprocessor = _preprocessor(code, not keep_case)
    with atomic_output(dst) as out:
        for encoded in applier.encode_stream(preprocessor(line) for line in iter_lines(src)):
            out.write(encoded + "\n")
    log.info("%s -> %s", src, dst)


def cmd_prepare_text(a):
    """Moses-preprocess and BPE-encode evaluation files, streaming (no intermediate file)."""
    from laser_repro.data import bpe

    if not (len(a.lang) == len(a.input) == len(a.output)):
        raise SystemExit("prepare-text: give one --lang and --output per --input")
    applier = bpe.BpeApplier(a.codes)
    for code, src, dst in zip(a.lang, a.input, a.output):
        _prepare_text(applier, code, a.keep_case, src, dst)


def cmd_tatoeba(a):
    import numpy as np
    import torch

    from laser_repro.evaluation import tatoeba
    from laser_repro.models.laser.encoder import SentenceEncoder, embed_file
    torch.set_num_threads(a.threads)
    encoder = SentenceEncoder.load(a.encoder)
    for bpe_path, npy in ((a.xx, a.xx_emb), (a.eng, a.eng_emb)):
        embed_file(encoder, bpe_path, npy, max_tokens=a.max_tokens, progress=False)
    result = tatoeba.tatoeba_error(np.load(a.xx_emb), np.load(a.eng_emb))
    result["language"] = a.lang
    # baselines on the same sentences: the encoder at update 0, and character n-gram TF-IDF of the raw text
    if a.init_encoder:
        from laser_repro.core.textio import iter_lines

        init = SentenceEncoder.load(a.init_encoder)
        xx, en = ([*iter_lines(p)] for p in (a.xx, a.eng))
        err = tatoeba.tatoeba_error(init.embed(xx, max_tokens=a.max_tokens), init.embed(en, max_tokens=a.max_tokens))
        result["init"] = {k: err[k] for k in ("en_xx_error", "xx_en_error")}
    if a.raw_xx and a.raw_eng:
        from laser_repro.core.textio import iter_lines
        from laser_repro.evaluation.xsim import tfidf_error

        err = tfidf_error(list(iter_lines(a.raw_xx)), list(iter_lines(a.raw_eng)))
        result["tfidf"] = {k: err[k] for k in ("en_xx_error", "xx_en_error")}
    write_json(a.scores, result)
    log.info("%s: %s", a.lang, json.dumps(result))


def _device(choice: str) -> str:
    """--device auto: the GPU when torch sees one (paper-scale evaluation sets), else the CPU."""
    import torch

    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no GPU")
    return choice


def cmd_embed(a):
    """Embed text files with an exported encoder (one .npy per input, rows = lines). The inputs are
    BPE'd text; with --codes they are raw text, Moses-preprocessed and BPE-encoded here first (one
    process for both steps: the evaluation texts of every task go through this)."""
    import tempfile

    import torch

    from laser_repro.models.laser.encoder import SentenceEncoder, embed_file
    if len(a.input) != len(a.output):
        raise SystemExit("embed: give one --output per --input")
    if a.codes and len(a.lang or []) != len(a.input):
        raise SystemExit("embed: with --codes, give one --lang per --input")
    torch.set_num_threads(a.threads)
    encoder = SentenceEncoder.load(a.encoder, device=_device(a.device))
    applier = None
    if a.codes:
        from laser_repro.data import bpe

        applier = bpe.BpeApplier(a.codes)
    for i, (path, npy) in enumerate(zip(a.input, a.output)):
        if applier is None:
            rows = embed_file(encoder, path, npy, max_tokens=a.max_tokens)
        else:
            Path(npy).parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=Path(npy).parent, prefix=".bpe-") as tmp:
                bpe_path = Path(tmp) / Path(path).name
                _prepare_text(applier, a.lang[i], a.keep_case, path, bpe_path)
                rows = embed_file(encoder, bpe_path, npy, max_tokens=a.max_tokens)
        log.info("%s: %d sentences -> %s", path, rows, npy)


def cmd_tatoeba_table(a):
    from laser_repro.reporting import tables
    from laser_repro.models.laser.fairseq_bridge import binarized_sentences

    results = {}
    for path in a.scores or []:
        res = read_json(path)
        results[res["language"]] = res
    sizes: dict[str, int] = {}
    for path in a.train:  # binarized source side: train.<src>-<tgt>.<src>.idx
        src = Path(path).with_suffix("").suffix.lstrip(".")
        sizes[src] = sizes.get(src, 0) + binarized_sentences(path)
    rows = tables.table1_rows(results, sizes)
    tables.write_tatoeba_table(rows, a.md, a.csv, run_name=a.run_name, unseen=a.unseen)
    log.info("wrote %s and %s", a.md, a.csv)


def cmd_eval_table(a):
    """Table of one evaluation task, ours beside the paper; `--missing` when the task could not run."""
    from laser_repro.reporting import tables

    if bool(a.scores) == bool(a.missing):
        raise SystemExit(f"eval-table {a.task}: give --scores or --missing (not both, not neither)")
    common = dict(run_name=a.run_name, languages_=a.languages, missing=a.missing)
    if a.task == "bucc":
        results = [read_json(p) for p in a.scores]
        tables.write_bucc_table(a.md, a.csv, scores=results or None, pairs=a.pairs, **common)
        return
    scores = read_json(a.scores[0]) if a.scores else None
    if a.task == "xnli":
        if not (a.md8 and a.csv8):
            raise SystemExit("eval-table xnli: --md8 and --csv8 (Table 8) are required")
        tables.write_xnli_tables(a.md, a.csv, a.md8, a.csv8, scores=scores, **common)
    elif a.task == "mldoc":
        tables.write_mldoc_table(a.md, a.csv, scores=scores, **common)
    else:
        tables.write_wmt_table(a.md, a.csv, scores=scores, **common)


def build_parser() -> argparse.ArgumentParser:
    from laser_repro.data.corpora import OPUS_BASE_URL

    p = argparse.ArgumentParser(prog="laser-repro", description=__doc__)
    p.add_argument("--provenance-json", metavar="JSON",
                   help="once the subcommand succeeded, write the provenance record of its job (Snakemake rules): "
                        "JSON {rule, inputs, outputs, log, config, sources: [PATH=URL]}; see laser_repro.provenance")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("fetch", help="download a URL with retries and checksum, atomically")
    s.add_argument("--url", required=True)
    s.add_argument("--dest", required=True)
    s.add_argument("--sha256")
    s.add_argument("--retries", type=int, default=5)
    s.add_argument("--mirror", help="local directory or URL mirroring --base-url")
    s.add_argument("--base-url", default=OPUS_BASE_URL)
    s.add_argument("--absent-ok", action="store_true",
                   help="on HTTP 404 (or a file missing from a local --mirror directory), record the pair "
                        "as absent (OPUS corpora with allow_absent_pairs)")
    s.set_defaults(func=cmd_fetch)

    s = sub.add_parser("extract-member", help="extract one file of a tar archive")
    s.add_argument("--archive", required=True)
    s.add_argument("--member", required=True)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_extract_member)

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
    s.add_argument("--out-src", required=True)
    s.add_argument("--out-tgt", required=True)
    s.add_argument("--stats", required=True)
    s.add_argument("--corpus", help="corpus name for messages (default: the directory of --out-src)")
    s.add_argument("--absent-ok", action="store_true",
                   help="no sentence pair left: write the empty bitext, stats 'absent': true, and warn "
                        "(corpora with allow_absent_pairs) instead of failing")
    s.set_defaults(func=cmd_extract)

    s = sub.add_parser("preprocess", help="Moses-preprocess one shard of a corpus side")
    s.add_argument("--lang", required=True)
    s.add_argument("--input", required=True)
    s.add_argument("--output", required=True)
    s.add_argument("--shard", default="0")
    s.add_argument("--of", default="1")
    s.add_argument("--block-lines", type=int, default=10000)
    s.add_argument("--keep-case", action="store_true")
    s.set_defaults(func=cmd_preprocess)

    s = sub.add_parser("bpe-count", help="word frequencies of all training text (input of bpe-learn)")
    s.add_argument("--output", required=True, help="'word count' per line, count descending")
    s.add_argument("--threads", type=int, default=1, help="count this many files in parallel")
    s.add_argument("--inputs", nargs="+", required=True)
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
    s.set_defaults(func=cmd_bpe_apply)

    s = sub.add_parser("binarize", help="fairseq-preprocess one pair with the joint dictionary")
    s.add_argument("--src", required=True)
    s.add_argument("--tgt", required=True)
    split = s.add_mutually_exclusive_group(required=True)
    split.add_argument("--train-prefix", help="training text: PREFIX.SRC, PREFIX.TGT")
    split.add_argument("--valid-prefix", help="held-out text (valid.* files: loss on the learning curves)")
    s.add_argument("--dict", required=True)
    s.add_argument("--dest", required=True)
    s.set_defaults(func=cmd_binarize)

    s = sub.add_parser("binarize-valid", help="binarize the held-out lines of several pairs (valid.*)")
    s.add_argument("--pairs", nargs="+", required=True, help="SRC-TGT ...")
    s.add_argument("--prefix", required=True, help="held-out text: PREFIX.LANG")
    s.add_argument("--dict", required=True)
    s.add_argument("--dest", required=True)
    s.set_defaults(func=cmd_binarize_valid)

    s = sub.add_parser("train", help="train (or resume) the encoder-decoder with fairseq")
    s.add_argument("--data", required=True)
    s.add_argument("--save-dir", required=True)
    s.add_argument("--final", required=True)
    s.add_argument("--threads", type=int, default=1)
    s.add_argument("--settings", required=True,
                   help='JSON: pairs, targets, model, train (+ optional nli: {"data": PREFIX, "weight": W}, '
                        'curves: {"interval_updates", "languages", "loss_sentences"})')
    s.add_argument("--initial", help="also write the model at update 0 here (the random-encoder baseline)")
    s.add_argument("--curves", help="also write the learning curves (JSON lines) here; needs settings.curves")
    s.add_argument("--launcher", default="local", choices=["local", "srun", "worker"],
                   help="local: in-process, or torchrun over the GPUs (or train.cpu_processes) of this "
                        "machine; srun: one worker per task of the SLURM allocation; worker: internal")
    s.add_argument("--stop-before-limit", type=int, default=300, metavar="SECONDS",
                   help="inside a SLURM job: checkpoint and exit 75 this long before the job's time limit")
    s.set_defaults(func=cmd_train)

    s = sub.add_parser("export", help="export the encoder to a standalone LASER-format file")
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_export)

    s = sub.add_parser("prepare-text", help="Moses + BPE for evaluation text")
    s.add_argument("--codes", required=True, help="fastBPE codes file")
    s.add_argument("--keep-case", action="store_true")
    s.add_argument("--lang", action="append", required=True)
    s.add_argument("--input", action="append", required=True)
    s.add_argument("--output", action="append", required=True)
    s.set_defaults(func=cmd_prepare_text)

    s = sub.add_parser("tatoeba", help="embed one Tatoeba language pair and score it")
    s.add_argument("--encoder", required=True)
    s.add_argument("--lang", required=True)
    s.add_argument("--xx", required=True)
    s.add_argument("--eng", required=True)
    s.add_argument("--xx-emb", required=True)
    s.add_argument("--eng-emb", required=True)
    s.add_argument("--scores", required=True)
    s.add_argument("--max-tokens", type=int, default=12000)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--init-encoder", help="baseline: the same encoder at update 0, on the same BPE'd sentences")
    s.add_argument("--raw-xx", help="baseline: character n-gram TF-IDF of the raw test sentences (with --raw-eng)")
    s.add_argument("--raw-eng")
    s.set_defaults(func=cmd_tatoeba)

    s = sub.add_parser("embed", help="embed BPE'd text files (raw text with --codes) with an exported encoder")
    s.add_argument("--encoder", required=True)
    s.add_argument("--input", action="append", required=True)
    s.add_argument("--output", action="append", required=True)
    s.add_argument("--codes", help="fastBPE codes: the inputs are raw text, Moses + BPE'd first")
    s.add_argument("--lang", action="append", help="with --codes: the language of each --input")
    s.add_argument("--keep-case", action="store_true", help="with --codes: do not lowercase")
    s.add_argument("--max-tokens", type=int, default=12000)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    s.set_defaults(func=cmd_embed)

    s = sub.add_parser("tatoeba-table", help="assemble Table 1 (or 9 with --unseen) beside the paper")
    s.add_argument("--run-name", required=True)
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.add_argument("--scores", nargs="*", default=[])
    s.add_argument("--train", nargs="+", required=True, help="binarized source sides: train.<src>-<tgt>.<src>.idx")
    s.add_argument("--unseen", action="store_true", help="Table 9: languages without training data")
    s.set_defaults(func=cmd_tatoeba_table)

    s = sub.add_parser("eval-table", help="assemble the table of an evaluation task beside the paper")
    s.add_argument("task", choices=["bucc", "xnli", "mldoc", "wmt"])
    s.add_argument("--run-name", required=True)
    s.add_argument("--languages", nargs="*", default=[])
    s.add_argument("--scores", nargs="*", default=[], help="the task's scores JSON (bucc: one per language)")
    s.add_argument("--pairs", nargs="*", default=[], help="bucc: the extracted test pairs per language")
    s.add_argument("--missing", help="why the task could not run and how to get its data")
    s.add_argument("--md", required=True)
    s.add_argument("--csv", required=True)
    s.add_argument("--md8", help="xnli: Table 8 Markdown")
    s.add_argument("--csv8", help="xnli: Table 8 CSV")
    s.set_defaults(func=cmd_eval_table)

    from laser_repro.reporting import ablation
    from laser_repro.evaluation import bucc, flores, mldoc, wmt, xnli
    from laser_repro.models.laser import nli_multitask
    from laser_repro import provenance
    for task in (bucc, xnli, mldoc, wmt, provenance, ablation, nli_multitask, flores):
        task.add_cli(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    started = time.time()  # the job's start in its provenance record: before any input is read
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # one INFO line per CPU variant it probes
    args = build_parser().parse_args(argv)
    args.func(args)
    if args.provenance_json:  # only reached when the subcommand succeeded
        from laser_repro import provenance

        runtime = dict(getattr(args, "runtime", None) or {})
        if "torch" in sys.modules:  # results differ (~1e-7) with the thread count
            runtime.setdefault("torch_threads", sys.modules["torch"].get_num_threads())
        provenance.record_job(args.provenance_json, start=started, runtime=runtime or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
