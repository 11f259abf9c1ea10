"""N-way parallel text, for model families that read every language of a sentence at once
(Schwenk & Douze 2017: one encoder and one decoder per language, trained on 6-way UN text).

Two steps, each a workflow rule:

* ``nway-text`` (one job per language): split one language's N-way file into training lines and
  validation lines (the held-out line range of the same file, e.g. FLORES dev 797-996, or a separate
  dev file, e.g. the UN dev set), write the raw validation lines (the TF-IDF baseline reads them) and
  the Moses-preprocessed lines of both splits, taken from the file's ``moses-lines`` output (a
  corpus's language is preprocessed once, for every data entry and for LASER's pairs of it);
* ``nway-bpe`` (one job): the length filter on the training lines (a line index is dropped in every
  language when one of its sentences is empty or longer than ``max_words`` tokens: the paper limits
  training sentences to 50 words), the joint BPE learned on the kept training text, applied to both
  splits, and the joint vocabulary ``dict.txt`` (``token count``, count descending);
* ``nway-spm`` instead, for ``subword.kind: spm`` (LASER2's subwords): the same on lines of LASER2's
  normalisation (``nway-text`` got them instead of Moses' lines; words are whitespace-separated), a joint
  SentencePiece model (``spm.model``, :func:`laser_repro.data.spm.learn`) in place of the BPE codes.

Line ``i`` of every language's file is the same sentence: every step keeps that alignment and
fails naming the files when line counts differ.
"""
from __future__ import annotations

import contextlib
import json
import logging
from collections import Counter
from itertools import zip_longest
from pathlib import Path
from typing import Mapping, Sequence

from laser_repro.core.textio import InputError, atomic_output, count_lines, iter_lines, write_json

log = logging.getLogger("laser_repro")

SPLITS = ("train", "valid")
#: the subword model in a data set's directory, by subword kind (either is read by laser_repro.data.subword_text)
SUBWORD_MODEL_FILE = {"bpe": "codes", "spm": "spm.model"}


def subword_model_file(data_dir) -> Path | None:
    """The subword model of a built data set's directory (``codes`` or ``spm.model``); None without one (text
    prepared otherwise, e.g. a test's synthetic data)."""
    return next((Path(data_dir) / name for name in SUBWORD_MODEL_FILE.values() if (Path(data_dir) / name).is_file()),
                None)


def tok_files(data_dir, split: str, langs: Sequence[str]) -> dict[str, Path]:
    """language -> the Moses-preprocessed lines of ``split`` that ``prepare_language`` writes under ``data_dir``."""
    return {lang: Path(data_dir) / "tok" / f"{split}.{lang}" for lang in langs}


def _paths(files) -> list[Path]:
    """A file, or a list of files (a corpus in parts), as a list."""
    return [Path(files)] if isinstance(files, (str, Path)) else [Path(f) for f in files]


def line_counts_differ(files: Mapping[str, Sequence[Path]]) -> str | None:
    """None when the N-way files of every language (lang -> its files, concatenated) have as many lines; else
    the message naming every language's count, the odd ones first (``fra 399 lines (fra.txt), eng 400 lines
    (eng.txt) ...``)."""
    counts = {lang: sum(count_lines(p) for p in paths) for lang, paths in files.items()}
    if len(set(counts.values())) <= 1:
        return None
    (usual, n), *others = Counter(counts.values()).most_common()
    majority = n > others[0][1]  # most languages agree: the others' files are the odd ones
    order = sorted(counts, key=lambda lang: majority and counts[lang] == usual)  # the odd ones first
    listing = ", ".join(f"{lang} {counts[lang]} lines ({', '.join(map(str, files[lang]))})" for lang in order)
    odd = [lang for lang in order if counts[lang] != usual]
    todo = f"fix or replace the file of {', '.join(odd)}" if majority else "find the file that is wrong and fix it"
    return f"the N-way files are not line-aligned (line i is sentence i in every language): {listing}; {todo}"


def prepare_language(raw, moses, lang: str, *, out_dir, heldout: Sequence[int] | None = None, valid_raw=None,
                     valid_moses=None, aligned_with: Mapping[str, object] | None = None) -> dict:
    """Training and validation lines of one language: ``<out_dir>/tok/{train,valid}.<lang>`` (Moses)
    and ``<out_dir>/raw/valid.<lang>``. Validation: lines ``heldout`` [start, stop) of ``raw``, or all
    of ``valid_raw``; training: every other line of ``raw``. ``raw`` may be a list of files: their
    concatenation, in order (a pair's corpus in several parts, e.g. OpenSubtitles + Tanzil).
    ``moses`` / ``valid_moses``: the Moses-preprocessed lines of ``raw`` / ``valid_raw`` (same count,
    ``laser-repro moses-lines``: the corpus's language is preprocessed once, for LASER's pairs too).
    ``aligned_with``: the other languages' files of the same corpus (language -> a file or its parts): their
    line counts are compared with ``raw``'s first, and any difference fails naming every language's count."""
    if (heldout is None) == (valid_raw is None):
        raise ValueError("give either heldout lines or a validation file")
    if (valid_raw is None) != (valid_moses is None):
        raise InputError("a validation file goes with its Moses-preprocessed lines (--valid-raw, --valid-moses)")
    out_dir = Path(out_dir)
    start, stop = heldout if heldout is not None else (0, 0)
    raws, mosess = _paths(raw), _paths(moses)
    if len(raws) != len(mosess):
        raise InputError(f"{len(raws)} raw files but {len(mosess)} Moses files (--raw, --moses: one each)")
    if aligned_with:
        differ = line_counts_differ({lang: raws, **{other: _paths(f) for other, f in aligned_with.items()}})
        if differ:
            raise InputError(differ)
    counts = {"train": 0, "valid": 0}
    with contextlib.ExitStack() as stack:
        tok = {s: stack.enter_context(atomic_output(tok_files(out_dir, s, [lang])[lang])) for s in SPLITS}
        raw_valid = stack.enter_context(atomic_output(out_dir / "raw" / f"valid.{lang}"))

        def lines(raw_path, moses_path, desc: str):
            """(raw line, its Moses line) of a file and its Moses file, which must have as many lines."""
            for line, tokens in zip_longest(iter_lines(raw_path, progress=True, desc=desc), iter_lines(moses_path)):
                if line is None or tokens is None:
                    raise InputError(f"{moses_path}: {count_lines(moses_path)} lines, but {raw_path} has "
                                     f"{count_lines(raw_path)}: not its Moses-preprocessed lines (moses-lines)")
                yield line, tokens

        def put(split: str, line: str, tokens: str) -> None:
            tok[split].write(tokens + "\n")
            counts[split] += 1
            if split == "valid":
                raw_valid.write(line + "\n")

        both = (pair for r, m in zip(raws, mosess) for pair in lines(r, m, f"{lang} {Path(r).name}"))
        for i, (line, tokens) in enumerate(both):
            put("valid" if start <= i < stop else "train", line, tokens)
        if valid_raw is not None:
            for line, tokens in lines(valid_raw, valid_moses, f"{lang} {Path(valid_raw).name}"):
                put("valid", line, tokens)
        if heldout is not None and counts["valid"] != stop - start:
            raise InputError(f"{lang}: {', '.join(map(str, raws))}: {counts['train'] + counts['valid']} lines, so "
                             f"held-out lines {start}-{stop - 1} are not all there: the held-out range (config "
                             f"nway_data.*.valid.heldout_lines) is past the corpus's end, or this language's file is "
                             f"shorter than the other languages' (compare their line counts)")
        for split, n in counts.items():
            if n == 0:
                raise InputError(f"{', '.join(map(str, raws))}: no {split} line for {lang} (held out "
                                 f"{start}-{stop - 1}{'' if valid_raw is None else f', validation file {valid_raw}'})")
    return counts


def _aligned(files: dict[str, Path]) -> int:
    counts = {lang: count_lines(path) for lang, path in files.items()}
    if len(set(counts.values())) != 1:
        raise InputError("N-way files are not line-aligned: "
                         + ", ".join(f"{files[lang]}: {n} lines" for lang, n in counts.items()))
    return next(iter(counts.values()))


def _lockstep(files: dict[str, Path], progress: bool = False):
    """Tuples of line i of every file (languages in ``files`` order)."""
    yield from zip(*(iter_lines(path, progress=progress and k == 0) for k, path in enumerate(files.values())))


def build(tok_dir, langs: Sequence[str], out_dir, *, merges: int | None = None, max_words: int | None,
          spm_settings: Mapping | None = None) -> dict:
    """Length filter, joint subwords and vocabulary (module docstring). Writes ``<out_dir>/{train,valid}.<lang>``,
    ``dict.txt``, ``stats.json`` and the subword model: BPE ``codes`` and ``vocab`` with ``merges``, or with
    ``spm_settings`` (the config's ``subword`` section) ``spm.model`` and its ``.vocab`` / ``.json``; returns
    the statistics."""
    from laser_repro.data import bpe, spm

    tok_dir, out_dir = Path(tok_dir), Path(out_dir)
    langs = list(langs)
    files = {s: {lang: tok_dir / f"{s}.{lang}" for lang in langs} for s in SPLITS}
    sizes = {s: _aligned(files[s]) for s in SPLITS}
    kept_dir = out_dir / "kept"
    kept = 0
    too_long = empty = 0
    with contextlib.ExitStack() as stack:
        outs = [stack.enter_context(atomic_output(kept_dir / f"train.{lang}")) for lang in langs]
        for lines in _lockstep(files["train"], progress=True):
            lengths = [len(line.split()) for line in lines]
            if min(lengths) == 0:
                empty += 1
            elif max_words is not None and max(lengths) > max_words:
                too_long += 1
            else:
                kept += 1
                for out, line in zip(outs, lines):
                    out.write(line + "\n")
    if kept == 0:
        for lang in langs:
            (kept_dir / f"train.{lang}").unlink(missing_ok=True)
        kept_dir.rmdir()
        raise InputError(f"{tok_dir}: no training line left after the length filter "
                         f"({empty} with an empty sentence, {too_long} over {max_words} words)")
    kept_files = [kept_dir / f"train.{lang}" for lang in langs]
    if spm_settings is None:
        learned = bpe.learn(out_dir / "codes", out_dir / "vocab", merges=merges, inputs=kept_files)
        applier = bpe.BpeApplier(out_dir / "codes")
    else:
        s = spm_settings
        model = out_dir / SUBWORD_MODEL_FILE["spm"]
        learned = spm.learn({lang: [path] for lang, path in zip(langs, kept_files)}, model,
                            vocab_size=s["vocab_size"], model_type=s["model_type"],
                            character_coverage=s["character_coverage"], sample_sentences=s["sample_sentences"],
                            alpha=s["sampling_alpha"], seed=s["seed"], threads=s["threads"])
        applier = spm.SpmEncoder(model)
    counts: Counter = Counter()
    for split in SPLITS:
        for lang in langs:
            src = kept_dir / f"train.{lang}" if split == "train" else files[split][lang]
            with atomic_output(out_dir / f"{split}.{lang}") as out:
                for encoded in applier.encode_stream(iter_lines(src)):
                    out.write(encoded + "\n")
                    if split == "train":
                        counts.update(encoded.split())
    for path in kept_files:
        path.unlink()
    kept_dir.rmdir()
    with atomic_output(out_dir / "dict.txt") as out:
        for token, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            out.write(f"{token} {n}\n")
    stats = {"languages": langs, "train_lines": sizes["train"], "kept": kept, "dropped_empty": empty,
             "dropped_too_long": too_long, "max_words": max_words, "valid_lines": sizes["valid"],
             **({"merges": merges} if spm_settings is None else {"subword": {"kind": "spm", **spm_settings}}),
             "dictionary": len(counts),
             # the statistics of the subwords, not their timing: the same inputs give the same file
             ("bpe" if spm_settings is None else "spm"): {k: v for k, v in learned.items() if not k.endswith("_seconds")}}
    write_json(out_dir / "stats.json", stats)
    return stats


def cmd_text(a) -> None:
    aligned_with = {}
    for lang, *files in a.aligned_with or []:
        if not files or lang in aligned_with or lang == a.lang:
            raise InputError(f"--aligned-with {lang}: give LANG FILE [FILE ...], once per other language")
        aligned_with[lang] = files
    counts = prepare_language(a.raw, a.moses, a.lang, out_dir=a.out_dir, heldout=a.heldout, valid_raw=a.valid_raw,
                              valid_moses=a.valid_moses, aligned_with=aligned_with)
    log.info("%s: %s", a.lang, json.dumps(counts))


def cmd_bpe(a) -> None:
    stats = build(a.tok_dir, a.langs, a.out_dir, merges=a.merges, max_words=a.max_words)
    log.info("%s: %s", a.out_dir, json.dumps(stats))


SPM_KEYS = ("vocab_size", "model_type", "sampling_alpha", "sample_sentences", "character_coverage", "seed", "threads")


def cmd_spm(a) -> None:
    try:
        settings = json.loads(a.subword)
        settings = {key: settings[key] for key in SPM_KEYS}
    except (ValueError, KeyError, TypeError) as err:
        raise InputError(f"--subword: a JSON object with {', '.join(SPM_KEYS)} (the config's subword section): "
                         f"{err}") from None
    stats = build(a.tok_dir, a.langs, a.out_dir, max_words=a.max_words, spm_settings=settings)
    log.info("%s: %s", a.out_dir, json.dumps(stats))


def add_cli(sub) -> None:
    s = sub.add_parser("nway-text", help="N-way data: one language's training / validation lines, Moses-preprocessed")
    s.add_argument("--raw", required=True, nargs="+",
                   help="the language's N-way file (line i = sentence i); several: their concatenation")
    s.add_argument("--moses", required=True, nargs="+",
                   help="the Moses-preprocessed lines of each --raw file (moses-lines), in the same order")
    s.add_argument("--lang", required=True)
    s.add_argument("--out-dir", required=True, help="writes tok/{train,valid}.LANG and raw/valid.LANG")
    valid = s.add_mutually_exclusive_group(required=True)
    valid.add_argument("--heldout", nargs=2, type=int, metavar=("START", "STOP"),
                       help="validation = lines START..STOP-1 (0-based) of --raw")
    valid.add_argument("--valid-raw", help="validation = this file (e.g. the UN dev set)")
    s.add_argument("--valid-moses", help="with --valid-raw: its Moses-preprocessed lines (moses-lines)")
    s.add_argument("--aligned-with", nargs="+", action="append", metavar=("LANG", "FILE"),
                   help="another language's file(s) of the same N-way corpus (repeat per language): every "
                        "language's line count is checked first, and a difference fails naming them all")
    s.set_defaults(func=cmd_text)

    s = sub.add_parser("nway-bpe", help="N-way data: length filter, joint BPE, vocabulary")
    s.add_argument("--tok-dir", required=True, help="tok/{train,valid}.LANG of nway-text")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--out-dir", required=True)
    s.add_argument("--merges", type=int, required=True)
    s.add_argument("--max-words", type=int, help="drop a training line with a sentence longer than this")
    s.set_defaults(func=cmd_bpe)

    s = sub.add_parser("nway-spm", help="N-way data: length filter, joint SentencePiece model, vocabulary")
    s.add_argument("--tok-dir", required=True, help="tok/{train,valid}.LANG of nway-text (LASER2-normalised lines)")
    s.add_argument("--langs", nargs="+", required=True)
    s.add_argument("--out-dir", required=True)
    s.add_argument("--subword", required=True,
                   help=f"the config's subword section as JSON ({', '.join(SPM_KEYS)})")
    s.add_argument("--max-words", type=int, help="drop a training line with a sentence of more words than this")
    s.set_defaults(func=cmd_spm)
