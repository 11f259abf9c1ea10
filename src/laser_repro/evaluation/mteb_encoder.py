"""Any encoder file of this project (every family of laser_repro.models.registry) as a model of ``mteb``
(2.x), and mteb's bitext mining on local, line-aligned files -- nothing downloaded.

* :class:`MtebEncoder` has what mteb asks of an encoder (``mteb.models.models_protocols.EncoderProtocol``):
  ``encode(inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs)`` (``inputs``: a torch
  DataLoader of batches ``{"text": [...]}``), ``similarity`` / ``similarity_pairwise`` (cosine, as our
  retrieval) and ``mteb_model_meta`` (name ``laser-repro/...``, revision = the encoder file's sha256, so
  that mteb's result cache never mixes two files). The raw text goes through the family's ``prepare`` (Moses,
  or the BPE / SentencePiece model the encoder file records: laser_repro.models.subword) in the language of
  the batch: mteb passes it as ``hf_subset`` -- a subset of one language, or in a parallel bitext task the
  column, e.g. ``fra_Latn`` -- and :func:`our_language` maps mteb's codes (``fra-Latn``, ``zho-Hans``,
  ``arb_Arab``) to the registry's (laser_repro.core.languages).
* :func:`bitext_mining_task` is mteb's ``AbsTaskBitextMining`` on two line-aligned files: one parallel
  table whose columns are the two languages, both directions as its subsets, read from the files by
  ``load_data`` (mteb's own loader would call ``datasets.load_dataset`` on the Hub). One task per language
  pair: mteb holds a parallel task's columns in one table, and each pair has its own sentences.
* :func:`run_bitext_mining` runs ``mteb.evaluate`` on such tasks offline and writes mteb's result files
  under a directory; it returns the accuracy of each direction.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from laser_repro.core.errors import UserError

#: an mteb language code: ISO 639-3 (or 639-1) and, optionally, an ISO 15924 script after "-" or "_"
_MTEB_CODE = re.compile(r"^([a-z]{2,3})(?:[-_]([A-Z][a-z]{3}))?$")
SPLIT = "test"


def our_language(code: str) -> str:
    """The registry code (laser_repro.core.languages) of an mteb language code: ``fra-Latn`` / ``fra_Latn`` /
    ``fra`` -> ``fra``; a code the registry does not key on is looked up in its FLORES-200 column
    (``zho-Hans`` -> ``cmn``, ``arb-Arab`` -> ``ara``). UnknownLanguageError (a UserError) otherwise."""
    from laser_repro.core import languages

    match = _MTEB_CODE.match(code.strip())
    if not match:
        raise languages.UnknownLanguageError(f"{code!r} is not an mteb language code (e.g. fra-Latn, fra_Latn)")
    iso, script = match.groups()
    registry = languages.all_languages()
    if iso in registry:
        return iso
    by_flores = [lang.code for lang in registry.values() if lang.flores and lang.flores.split("_")[0] == iso
                 and (script is None or lang.flores.split("_")[1] == script)]
    if len(by_flores) == 1:
        return by_flores[0]
    return languages.get(iso).code  # raises, with the registry's hints


def mteb_language(code: str, sep: str = "-") -> str:
    """mteb's code of a registry language: ``fra`` -> ``fra-Latn`` (``sep="_"``: ``fra_Latn``, a column name)."""
    from laser_repro.core import languages

    return f"{code}{sep}{languages.get(code).script}"


class MtebEncoder:
    """An encoder file of any family, for ``mteb.evaluate``.

    ``codes``: a family that applies a subword model to raw text (LASER, multienc) takes the one its encoder
    file records; give ``codes`` where that file has moved (checked against the record's sha256).
    ``keep_case``: no lowercasing in the preprocessing (as ``laser-repro retrieval --keep-case``).
    ``lang``: the language of every input, for tasks whose subset names several languages and does not say
    which one a batch is in (mteb's non-parallel bitext tasks: ``sentence1`` / ``sentence2`` of ``fra-eng``).
    ``name``: the model's name in mteb's results (``org/name``; default ``laser-repro/<family>-<directory>``)."""

    def __init__(self, encoder_path, *, codes=None, keep_case: bool = False, lang: Optional[str] = None,
                 name: Optional[str] = None):
        from laser_repro.core.download import sha256_file
        from laser_repro.models import registry, subword

        self.path = Path(encoder_path)
        header = registry.read_encoder_file(self.path)
        self.family = registry.get(header["family"])
        self.codes: Optional[str] = None
        if self.family.takes_codes:
            record = header.get(subword.RECORD_KEY)
            if codes is None:
                if record is None:
                    raise UserError(f"{self.path} ({self.family.name}) names no subword model (exported before encoder "
                                    "files recorded them): give the codes it was trained with (codes=...)")
                codes = record["file"]
            subword.check_codes(self.path, record, codes)  # a missing or other file named with the encoder's
            self.codes = str(codes)
        self.lowercase = not keep_case
        self.lang = our_language(lang) if lang else None
        self.encoder = self.family.load_encoder(self.path)
        self.dim = int(self.encoder.dim)
        default_name = f"laser-repro/{self.family.name}-{self.path.parent.name or self.path.stem}"
        self._meta = self._model_meta(name or default_name, sha256_file(self.path)[:12], header)

    def _model_meta(self, name: str, revision: str, header: Mapping):
        from mteb.models.model_meta import ModelMeta

        max_tokens = (header.get("encoder") or {}).get("max_len") if self.family.name == "labse" else None
        return ModelMeta(loader=None, name=name, revision=revision, release_date=None, languages=None,
                         n_parameters=None, memory_usage_mb=None, max_tokens=max_tokens, embed_dim=self.dim,
                         license=None, open_weights=None, public_training_code=None, public_training_data=None,
                         framework=["PyTorch"], reference=None, similarity_fn_name="cosine", use_instructions=False,
                         training_datasets=None)

    @property
    def mteb_model_meta(self):
        return self._meta

    def language(self, task_metadata, hf_subset: str) -> str:
        """Our code of the language of the batch mteb encodes in ``hf_subset`` of the task ``task_metadata``."""
        if self.lang:
            return self.lang
        langs = task_metadata.hf_subsets_to_langscripts.get(hf_subset)
        if langs is None:  # a parallel task's column: a language itself
            return our_language(hf_subset)
        ours = sorted({our_language(code) for code in langs})
        if len(ours) != 1:
            raise UserError(f"mteb task {task_metadata.name}, subset {hf_subset}: its sentences are in {ours} and mteb "
                            f"does not say which a batch is in: give the language (lang=...) or a parallel task")
        return ours[0]

    def encode(self, inputs, *, task_metadata, hf_split: str, hf_subset: str, prompt_type=None,
               **kwargs: Any) -> np.ndarray:
        """float32 ``(n, dim)`` embeddings of the raw sentences of ``inputs`` (mteb's prompts and batch size do
        not apply: the family batches by length itself)."""
        lines = []
        for batch in inputs:
            if "text" not in batch:
                raise UserError(f"{self.path}: mteb task {task_metadata.name} gives {sorted(batch)} inputs; "
                                "this project's encoders embed text only")
            lines.extend(batch["text"])
        if not lines:
            return np.zeros((0, self.dim), dtype=np.float32)
        lang = self.language(task_metadata, hf_subset)
        prepared = self.family.prepare(lines, lang, codes=self.codes, lowercase=self.lowercase)
        return np.asarray(self.encoder.embed(prepared, lang), dtype=np.float32)

    def similarity(self, embeddings1, embeddings2):
        from mteb.similarity_functions import cos_sim

        return cos_sim(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1, embeddings2):
        from mteb.similarity_functions import pairwise_cos_sim

        return pairwise_cos_sim(embeddings1, embeddings2)


def bitext_mining_task(src_lang: str, src_file, tgt_lang: str, tgt_file, *, name: Optional[str] = None):
    """An mteb bitext mining task of two line-aligned files (line i of ``tgt_file`` is the translation of line i
    of ``src_file``): subsets ``src-tgt`` (``src`` queries ``tgt``) and ``tgt-src``, accuracy its main score,
    the data read from the files (the dataset ``revision`` is their sha256: mteb records it)."""
    from mteb.abstasks.task_metadata import TaskMetadata
    from mteb.abstasks.text.bitext_mining import AbsTaskBitextMining

    from laser_repro.core.download import sha256_file
    from laser_repro.evaluation.retrieval import read_pair

    src_lang, tgt_lang = our_language(src_lang), our_language(tgt_lang)
    if src_lang == tgt_lang:
        raise UserError(f"{src_file}, {tgt_file}: both in {src_lang}: a bitext mining task pairs two languages")
    files = {src_lang: Path(src_file), tgt_lang: Path(tgt_file)}
    read_pair(files[src_lang], files[tgt_lang])  # aligned and not empty, or an error naming both, before mteb runs
    column = {lang: mteb_language(lang, "_") for lang in files}
    code = {lang: mteb_language(lang) for lang in files}
    revision = "-".join(sha256_file(path)[:12] for path in files.values())
    s, t = src_lang, tgt_lang
    metadata = TaskMetadata(
        name=name or f"LocalBitextMining.{s}-{t}", type="BitextMining", category="t2t", main_score="accuracy",
        description=f"Bitext mining on local line-aligned files: {files[s]} ({s}) and {files[t]} ({t}).",
        dataset={"path": str(files[s]), "revision": revision}, eval_splits=[SPLIT],
        eval_langs={f"{column[s]}-{column[t]}": [code[s], code[t]], f"{column[t]}-{column[s]}": [code[t], code[s]]})

    def load_data(self, num_proc: Optional[int] = None, **kwargs: Any) -> None:
        from datasets import Dataset, DatasetDict

        if self.data_loaded:
            return
        xx, yy = read_pair(files[s], files[t])
        self.dataset = DatasetDict({SPLIT: Dataset.from_dict({column[s]: xx, column[t]: yy})})
        self.data_loaded = True

    # a class per task: mteb reads a task's metadata from its class (unload_data drops an instance's own)
    cls = type("LocalBitextMining", (AbsTaskBitextMining,),
               {"metadata": metadata, "parallel_subsets": True, "load_data": load_data, "__module__": __name__})
    return cls()


def run_bitext_mining(encoder, pairs: Sequence[tuple[str, Any, str, Any]], output_dir, *, codes=None,
                      keep_case: bool = False, batch_size: int = 256) -> dict[str, dict[str, float]]:
    """``mteb.evaluate`` of the encoder file ``encoder`` on one local bitext task per (src_lang, src_file,
    tgt_lang, tgt_file) of ``pairs``, its results (mteb's JSON, one file per task, and model_meta.json) written
    under ``output_dir`` (mteb's result cache there; nothing read from earlier runs). Returns
    ``{task name: {"src-tgt": accuracy, "tgt-src": accuracy}}`` (our codes, accuracy in [0, 1]). Nothing is
    downloaded; run it with HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 to have the libraries refuse to try."""
    import mteb

    model = MtebEncoder(encoder, codes=codes, keep_case=keep_case)
    tasks = [bitext_mining_task(*pair) for pair in pairs]
    results = mteb.evaluate(model, tasks, cache=mteb.ResultCache(cache_path=Path(output_dir)),
                            overwrite_strategy="always", co2_tracker=False, show_progress_bar=False,
                            encode_kwargs={"batch_size": batch_size, "show_progress_bar": False})
    out: dict[str, dict[str, float]] = {}
    for result in results.task_results:
        for scores in result.scores[SPLIT]:
            pair = "-".join(our_language(column) for column in scores["hf_subset"].split("-"))
            out.setdefault(result.task_name, {})[pair] = float(scores["accuracy"])
    return out
