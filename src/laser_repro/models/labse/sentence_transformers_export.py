"""A LaBSE encoder file of this project (laser_repro.models.labse.export) as a sentence-transformers model
directory: ``SentenceTransformer(path).encode(sentences)`` gives the vectors of ``LabseEncoder.embed``.

The directory holds the Transformer module at its root (``config.json`` and ``model.safetensors`` of the
BertModel without pooling layer, the WordPiece tokenizer as ``tokenizer.json`` / ``tokenizer_config.json``,
``sentence_bert_config.json`` with ``max_seq_length``), then ``1_Pooling`` (the [CLS] state, as
``sentence_embedding`` takes it) and ``2_Normalize`` (l2), ``modules.json`` and
``config_sentence_transformers.json`` (cosine similarity). Tokenization is the encoder file's own
``tokenizers`` JSON, loaded as is: the same normalizer, pre-tokenizer, ``[CLS] ... [SEP]`` template and
truncation to ``max_len`` tokens, the special tokens included; padding on the right ([PAD] = 0), as
``labse_data.collate`` pads. Before the directory is published the export embeds a few sentences of
several scripts (one past ``max_len``) both ways and refuses a difference above :data:`TOLERANCE`.

Written into a temporary sibling directory, then renamed onto ``out_dir`` (which must not exist or be
empty): a reader sees no directory or a whole one.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

from laser_repro.core.errors import UserError

#: the largest |difference| between the exported model's vectors and ``LabseEncoder.embed``'s the export accepts
TOLERANCE = 1e-5
#: sentences the export checks itself on (Latin, Cyrillic, CJK, Arabic, Devanagari, an empty line); a
#: sentence past max_len tokens is added to them (truncation)
PROBE = ("The cat sleeps on the red chair.", "Le chat dort sur la chaise rouge.", "Кошка спит на красном стуле.",
         "猫在红色的椅子上睡觉。", "القطة تنام على الكرسي الأحمر.", "बिल्ली लाल कुर्सी पर सोती है।", "")
SPECIAL_TOKENS = {"unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                  "mask_token": "[MASK]"}  # laser_repro.models.labse.vocab, ids 0-4
ST_CONFIG = "sentence_bert_config.json"


def _check_target(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out}: already exists and is not an empty directory: the sentence-transformers export "
                        "writes a new directory (remove it or give another --output)")


def _load_labse(encoder_path):
    """The LabseEncoder of ``encoder_path``; any other family's file refused, naming the file and its family."""
    from laser_repro.models import registry
    from laser_repro.models.labse.export import LabseEncoder

    header = registry.read_encoder_file(encoder_path)  # names the file when it is no encoder file at all
    if header["family"] != "labse":
        raise UserError(f"{encoder_path}: a {header['family']} encoder file, not a labse one: --format "
                        "sentence-transformers exports LaBSE encoders only (laser-repro export --family labse ...)")
    try:
        return LabseEncoder(header, encoder_path), header
    except (KeyError, ValueError) as err:
        raise UserError(f"{encoder_path}: not a labse encoder file this version reads ({err}): rerun its "
                        "export") from err


def _fast_tokenizer(tokenizer_json: str, max_len: int):
    """The encoder file's tokenizer behind transformers' fast-tokenizer class, unchanged: the generic class
    keeps the JSON's pipeline (BertTokenizerFast would rebuild it from the vocabulary with its own defaults)."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer.from_str(tokenizer_json)
    tok.no_truncation()  # the wrapper truncates to model_max_length itself
    tok.no_padding()
    # right padding: BERT's positions count from the first token, so left padding would shift [CLS]'s
    return PreTrainedTokenizerFast(tokenizer_object=tok, model_max_length=max_len, padding_side="right",
                                   truncation_side="right", **SPECIAL_TOKENS)


def _write(encoder, header: dict, scratch: Path, model_dir: Path) -> None:
    """The sentence-transformers directory of a loaded LabseEncoder into ``model_dir`` (``scratch``: a work
    directory for the plain transformers model it is built from)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    tokenizer = _fast_tokenizer(header["tokenizer"], encoder.max_len)
    encoder.bert.save_pretrained(scratch)
    tokenizer.save_pretrained(scratch)
    # our BertModel has no pooling layer: loading it without one keeps transformers from initialising one at random
    model_kwargs = {"add_pooling_layer": False}
    transformer = Transformer(str(scratch), max_seq_length=encoder.max_len, model_kwargs=model_kwargs,
                              config_kwargs={"local_files_only": True},
                              processor_kwargs={"local_files_only": True})
    model = SentenceTransformer(modules=[transformer, Pooling(encoder.dim, pooling_mode="cls"), Normalize()],
                                device="cpu", similarity_fn_name="cosine")
    model.save(str(model_dir), create_model_card=False)
    del model, transformer
    tokenizer.save_pretrained(model_dir)  # the tokenizer's own config, without the loading options of the line above
    # the two settings sentence-transformers does not write back but reads when it loads the directory
    config_path = model_dir / ST_CONFIG
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.update(max_seq_length=encoder.max_len, model_kwargs=model_kwargs)
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    mode = config_path.stat().st_mode & 0o777  # the umask's; safetensors writes its file owner-only
    for path in model_dir.rglob("*"):
        if path.is_file():
            path.chmod(mode)


def compare(model_dir, encoder, sentences: Sequence[str]) -> float:
    """max |SentenceTransformer(model_dir).encode - encoder.embed| over ``sentences``, loaded from local files only."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    ours = encoder.embed(list(sentences), "eng")  # (one encoder for every language)
    theirs = model.encode(list(sentences), convert_to_numpy=True, batch_size=32)
    if theirs.shape != ours.shape:
        raise RuntimeError(f"{model_dir}: vectors of shape {theirs.shape}, the encoder's are {ours.shape}")
    return float(np.abs(theirs.astype(np.float64) - ours).max())


def export_sentence_transformers(encoder_path, out_dir) -> dict:
    """Write the sentence-transformers directory of the LaBSE encoder file ``encoder_path`` to ``out_dir``;
    returns a summary (output, dim, num_updates, files, the checked max |difference|)."""
    out = Path(out_dir)
    _check_target(out)
    encoder, header = _load_labse(encoder_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        model_dir = tmp / "model"
        _write(encoder, header, tmp / "transformers", model_dir)
        probe = [*PROBE, " ".join(PROBE)]  # the last one: longer than any max_len we train with
        diff = compare(model_dir, encoder, probe)
        if not diff <= TOLERANCE:
            raise RuntimeError(f"{encoder_path}: the sentence-transformers model in {model_dir} differs from the "
                               f"encoder by {diff:.3g} (> {TOLERANCE}) on the probe sentences: not published")
        files = sorted(p.relative_to(model_dir).as_posix() for p in model_dir.rglob("*") if p.is_file())
        _check_target(out)  # (again: another process may have written it meanwhile)
        os.rename(model_dir, out)  # onto a missing or empty directory of the same file system: all at once
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"output": str(out), "format": "sentence-transformers", "encoder": str(encoder_path), "dim": encoder.dim,
            "max_seq_length": encoder.max_len, "num_updates": int(header["num_updates"]), "stage": header.get("stage"),
            "pooling": "cls", "normalize": True, "files": files, "probe_max_abs_diff": diff}
