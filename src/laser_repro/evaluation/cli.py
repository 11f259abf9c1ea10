"""Command line of the Tatoeba evaluation and of embedding: ``tatoeba`` (embed one language pair and
score it) and ``embed`` (text files -> .npy with an exported encoder).

The tasks' own commands are registered by their modules (:mod:`laser_repro.evaluation.bucc`, ...), their
tables by :mod:`laser_repro.reporting.cli` (``tatoeba-table``, ``eval-table``).
torch is imported when a command runs, not when the parser is built.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from laser_repro.core.textio import write_json
from laser_repro.evaluation.word_translation import resolve_device

log = logging.getLogger("laser_repro")


def cmd_tatoeba(a):
    import numpy as np
    import torch

    from laser_repro.models.laser.encoder import SentenceEncoder, embed_file
    from laser_repro.models.similarity import tatoeba_error
    torch.set_num_threads(a.threads)
    encoder = SentenceEncoder.load(a.encoder)
    for bpe_path, npy in ((a.xx, a.xx_emb), (a.eng, a.eng_emb)):
        embed_file(encoder, bpe_path, npy, max_tokens=a.max_tokens, progress=False)
    result = tatoeba_error(np.load(a.xx_emb), np.load(a.eng_emb))
    result["language"] = a.lang
    # baselines on the same sentences: the encoder at update 0, and character n-gram TF-IDF of the raw text
    if a.init_encoder:
        from laser_repro.core.textio import iter_lines

        init = SentenceEncoder.load(a.init_encoder)
        xx, en = ([*iter_lines(p)] for p in (a.xx, a.eng))
        err = tatoeba_error(init.embed(xx, max_tokens=a.max_tokens), init.embed(en, max_tokens=a.max_tokens))
        result["init"] = {k: err[k] for k in ("en_xx_error", "xx_en_error")}
    if a.raw_xx and a.raw_eng:
        from laser_repro.core.textio import iter_lines
        from laser_repro.evaluation.xsim import tfidf_error

        err = tfidf_error(list(iter_lines(a.raw_xx)), list(iter_lines(a.raw_eng)))
        result["tfidf"] = {k: err[k] for k in ("en_xx_error", "xx_en_error")}
    write_json(a.scores, result)
    log.info("%s: %s", a.lang, json.dumps(result))


def cmd_embed(a):
    """Embed text files with an exported encoder of any family (one .npy per input, rows = lines). The
    inputs are the model's input text (BPE'd); with --codes or --raw they are raw text, prepared here first
    by the encoder's family (Moses, and BPE for the families that take codes: one process for both steps;
    the evaluation texts of every task and every model go through this)."""
    import tempfile

    import torch

    from laser_repro.models.laser.encoder import SentenceEncoder, embed_file
    if len(a.input) != len(a.output):
        raise SystemExit("embed: give one --output per --input")
    if a.codes and len(a.lang or []) != len(a.input):
        raise SystemExit("embed: with --codes, give one --lang per --input")
    torch.set_num_threads(a.threads)
    from laser_repro.models import registry

    header = registry.read_encoder_file(a.encoder)
    if header["family"] != "laser":
        return _embed_with_family(a, header)
    if a.raw and not a.codes:
        raise SystemExit(f"embed: {a.encoder} (laser) applies BPE codes to raw text: give --codes")
    if a.codes:  # the codes the export recorded (laser-repro export --codes); older files: a warning
        from laser_repro.models import subword

        subword.check_codes(a.encoder, header.get(subword.RECORD_KEY), a.codes)
    encoder = SentenceEncoder.load(a.encoder, device=resolve_device(a.device))
    applier = None
    if a.codes:
        from laser_repro.data.cli import prepare_text_file
        from laser_repro.data.subword_text import SubwordText

        applier = SubwordText(a.codes)
    for i, (path, npy) in enumerate(zip(a.input, a.output)):
        if applier is None:
            rows = embed_file(encoder, path, npy, max_tokens=a.max_tokens)
        else:
            Path(npy).parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=Path(npy).parent, prefix=".bpe-") as tmp:
                bpe_path = Path(tmp) / Path(path).name
                prepare_text_file(applier, a.lang[i], a.keep_case, path, bpe_path)
                rows = embed_file(encoder, bpe_path, npy, max_tokens=a.max_tokens)
        log.info("%s: %d sentences -> %s", path, rows, npy)


def _embed_with_family(a, header: dict) -> None:
    """``embed`` with an encoder of another family (laser_repro.models.registry; ``header``: its file, read
    by ``read_encoder_file``): per-language encoders need each input's --lang; with --codes the raw text
    goes through the family's ``prepare``, with the codes the encoder file names (laser_repro.models.subword)."""
    import numpy as np

    from laser_repro.core.textio import atomic_output, iter_lines
    from laser_repro.models import registry, subword

    if len(a.lang or []) != len(a.input):
        raise SystemExit(f"embed: {a.encoder} is not a LASER encoder: give one --lang per --input")
    family = registry.get(header["family"])
    if a.raw and family.takes_codes and not a.codes:
        raise SystemExit(f"embed: {a.encoder} ({family.name}) applies BPE codes to raw text: give --codes")
    if a.codes and family.takes_codes:
        subword.check_codes(a.encoder, header.get(subword.RECORD_KEY), a.codes)
    encoder = family.load_encoder(a.encoder)
    for path, npy, lang in zip(a.input, a.output, a.lang):
        lines = list(iter_lines(path))
        if a.codes or a.raw:
            lines = family.prepare(lines, lang, codes=a.codes, lowercase=not a.keep_case)
        with atomic_output(npy, "wb") as f:
            np.save(f, encoder.embed(lines, lang).astype(np.float32))
        log.info("%s: %d sentences -> %s (%s)", path, len(lines), npy, family.name)


def add_cli(sub) -> None:
    """Register ``tatoeba`` and ``embed`` on an argparse subparsers object."""
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
    s.add_argument("--keep-case", action="store_true", help="with --codes or --raw: do not lowercase")
    s.add_argument("--raw", action="store_true",
                   help="the inputs are raw text, prepared by the encoder's family (Moses, then the BPE --codes of a "
                        "family that takes codes; LaBSE and Bi-Sent2Vec take none); --codes implies it")
    s.add_argument("--max-tokens", type=int, default=12000)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    s.set_defaults(func=cmd_embed)
