"""Raw text -> a model's subword text, for either kind of subword model a LASER run learns
(``bitext_data.<name>.subword.kind``): fastBPE codes after the Moses preprocessing of the line's language
(the paper), or a SentencePiece model after LASER2's language-agnostic normalisation
(:mod:`laser_repro.data.spm`). The kind is read from the file itself, so every command that takes
``--codes`` (prepare-text, embed, retrieval, ...) takes either."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from laser_repro.core.errors import UserError

#: the text path before each kind's subwords (``laser-repro preprocess --text``, ``moses-lines --text``)
TEXT_OF_KIND = {"bpe": "moses", "spm": "laser2"}


def normalizer(text: str, lang: str, *, lowercase: bool = True) -> Callable[[str], str]:
    """The line preprocessing of one text path: ``moses`` (per language: Moses tokenizer, jieba, MeCab,
    romanization) or ``laser2`` (one normalisation for every language)."""
    if text == "laser2":
        from laser_repro.data.spm import Laser2Normalizer

        return Laser2Normalizer(lowercase=lowercase)
    if text == "moses":
        from laser_repro.data.preprocess import language_preprocessor

        return language_preprocessor(lang, lowercase=lowercase)
    raise ValueError(f"unknown text path {text!r} (expected one of {sorted(TEXT_OF_KIND.values())})")


def kind_of(path) -> str:
    """``spm`` for a SentencePiece model, ``bpe`` for fastBPE codes."""
    from laser_repro.data.spm import is_model_file

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such subword model (fastBPE codes or a SentencePiece model)")
    return "spm" if is_model_file(path) else "bpe"


class SubwordText:
    """A subword model file and the text path before it."""

    def __init__(self, path):
        self.path = Path(path)
        self.kind = kind_of(self.path)
        if self.kind == "spm":
            from laser_repro.data.spm import SpmEncoder

            self._encoder = SpmEncoder(self.path)
        else:
            from laser_repro.data.bpe import BpeApplier

            self._encoder = BpeApplier(self.path)

    @property
    def text(self) -> str:
        return TEXT_OF_KIND[self.kind]

    def encode_stream(self, lines: Iterable[str]) -> Iterator[str]:
        """Already preprocessed lines -> subword lines."""
        return self._encoder.encode_stream(lines)

    def prepare(self, lines: Iterable[str], lang: str, *, lowercase: bool = True) -> Iterator[str]:
        """Raw lines of ``lang`` -> subword lines: the kind's text path, then the model."""
        preprocess = normalizer(self.text, lang, lowercase=lowercase)
        return self.encode_stream(preprocess(line) for line in lines)
