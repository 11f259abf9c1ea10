"""Language registry: one row per language in ``data/languages.tsv``.

Our key is the ISO 639-3 code used by the Tatoeba test file names (``deu``, ``cmn``,
``pes``...). The other columns map that key to the paper's Table 1 code, the Moses
language code, the word segmenter, the default OPUS code and the FLORES-200 code.
"""

from __future__ import annotations

import csv
import difflib
import functools
import io
from dataclasses import dataclass, fields
from importlib import resources

from laser_repro.core.errors import UserError

REGISTRY_PATH = "src/laser_repro/data/languages.tsv"


class UnknownLanguageError(UserError):
    """A language code that is not in the registry."""


@dataclass(frozen=True)
class Language:
    code: str  # ISO 639-3, as in tatoeba.<code>-eng.*
    paper: str | None  # code in the paper's Table 1 (None: not a training language)
    name: str
    script: str  # ISO 15924
    moses: str  # language code for the Moses tokenizer / punctuation normalizer
    segmenter: str | None  # "jieba", "mecab" or None
    romanize: bool
    opus: str  # default OPUS code; corpora may override it (config `codes:`)
    flores: str | None  # FLORES-200 code, e.g. deu_Latn
    paper_training: bool
    tatoeba_test: bool


def _convert(name: str, value: str):
    if name in ("romanize", "paper_training", "tatoeba_test"):
        if value not in ("0", "1"):
            raise ValueError(f"{REGISTRY_PATH}: column {name} must be 0 or 1, got {value!r}")
        return value == "1"
    if name in ("paper", "segmenter", "flores"):
        return value or None
    return value


@functools.cache
def all_languages() -> dict[str, Language]:
    """All registry rows keyed by code (loaded once)."""
    text = resources.files("laser_repro").joinpath("data/languages.tsv").read_text(encoding="utf-8")
    names = [f.name for f in fields(Language)]
    reader = csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    if reader.fieldnames != names:
        raise ValueError(f"{REGISTRY_PATH}: expected columns {names}, got {reader.fieldnames}")
    langs: dict[str, Language] = {}
    for row in reader:
        lang = Language(**{n: _convert(n, row[n]) for n in names})
        if lang.code in langs:
            raise ValueError(f"{REGISTRY_PATH}: duplicate code {lang.code!r}")
        langs[lang.code] = lang
    return langs


@functools.cache
def _by_paper() -> dict[str, Language]:
    return {lang.paper: lang for lang in all_languages().values() if lang.paper}


def _unknown(code: object) -> UnknownLanguageError:
    langs = all_languages()
    key = str(code).strip().lower()
    # The most common slip is a 2-letter / paper / OPUS / FLORES code instead of the ISO 639-3 key.
    hints = [
        c
        for c, lang in langs.items()
        if key and key in (lang.paper, lang.opus, lang.moses, (lang.flores or "").split("_")[0])
    ]
    hints += [c for c in difflib.get_close_matches(key, list(langs), n=3, cutoff=0.6) if c not in hints]
    msg = f"unknown language code {code!r}"
    msg += "; did you mean " + ", ".join(f"{h} ({langs[h].name})" for h in hints) + "?" if hints else "."
    return UnknownLanguageError(
        msg + f" Languages are listed in {REGISTRY_PATH} (keys are the ISO 639-3 codes of the Tatoeba test files)."
    )


def get(code: str) -> Language:
    """The registry entry for an ISO 639-3 code, e.g. ``get("deu")``."""
    try:
        return all_languages()[code]
    except (KeyError, TypeError):
        raise _unknown(code) from None


def by_paper_code(c: str) -> Language:
    """The registry entry for a Table 1 code of the paper, e.g. ``by_paper_code("de")``."""
    try:
        return _by_paper()[c]
    except (KeyError, TypeError):
        pass
    papers = _by_paper()
    hints = [all_languages()[c].paper] if c in all_languages() and all_languages()[c].paper else []
    hints += [h for h in difflib.get_close_matches(str(c).strip().lower(), list(papers), n=3, cutoff=0.6) if h not in hints]
    msg = f"unknown paper (Table 1) code {c!r}"
    msg += "; did you mean " + ", ".join(f"{h} ({papers[h].name})" for h in hints) + "?" if hints else "."
    raise UnknownLanguageError(msg + f" The paper codes are the `paper` column of {REGISTRY_PATH}.")


def opus_code(code: str, overrides: dict[str, str] | None = None) -> str:
    """OPUS code of ``code`` in a corpus; ``overrides`` is that corpus's ``codes:`` mapping."""
    lang = get(code)
    if overrides and code in overrides:
        return overrides[code]
    return lang.opus
