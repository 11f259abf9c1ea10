"""LASER text preprocessing: one line in, one line out.

The order of the steps follows LASER's ``source/lib/text_processing.py``
(``Token()``), which pipes every file through::

    remove-non-printing-char.perl
    | normalize-punctuation.perl -l LANG
    | tokenizer.perl -q -no-escape -l LANG
    | python3 -m jieba -d ' '          (zh only)
    | mecab -O wakati                  (ja only)
    | romanize_lc.py -l LANG|none      (Greek transliteration, then lower case)

so :class:`TextPreprocessor` applies, in this order:

1. non-printing characters (Unicode category ``C*``: control, format,
   private use, unassigned) become spaces, as ``s/\\p{C}/ /g``;
2. Moses punctuation normalisation (``sacremoses.MosesPunctNormalizer`` with
   its default flags, per language);
3. Moses tokenisation without XML escaping and without aggressive dash
   splitting (``MosesTokenizer(lang).tokenize(text, escape=False,
   return_str=True)``);
4. word segmentation: jieba (default dictionary, HMM on) for Chinese, MeCab
   wakati with the IPADIC dictionary, as LASER (``fugashi`` + the ``ipadic``
   package, which ships the compiled dictionary and its mecabrc: no system
   MeCab needed) for Japanese;
5. romanisation with ``transliterate`` (``translit(text, lang,
   reversed=True)``, LASER uses it for Greek only);
6. lower casing (``str.lower``).

Whitespace in the output is always single spaces with none at either end
(jieba emits the spaces between tokens as tokens of their own, and sacremoses
leaves a trailing space after a final ".'"; both are collapsed).  The tokens
are exactly those of the pipeline above.  Moses semantics are those of
sacremoses (as in the ``laserembeddings`` package), not of the Perl scripts.

Steps 2 and 3 have two interchangeable back-ends.  ``"reference"`` calls
sacremoses.  ``"fast"`` (the default) gives byte-identical output --
``tests/test_preprocess.py`` checks it against sacremoses on FLORES-200 and
Tatoeba text in many languages, on tricky hand-written strings and on random
strings -- several times faster.  It is built from the rule lists, character
classes and non-breaking prefix lists of the installed sacremoses objects and
applies the rules in the same order, but

* skips every rule whose trigger characters are absent from the line (one
  character-class scan per line, then cheap substring tests);
* uses ``str.replace``/``split``+``join`` or small closures instead of
  ``re.sub`` templates (which Python 3.11 expands in Python, per match);
* takes exact shortcuts for the common cases of commas and apostrophes (each
  guarded by a check that the case applies, the rule chain otherwise);
* checks non-breaking prefixes only at token-final periods, against
  precomputed sets (sacremoses rebuilds ``set(IsAlpha)`` per call);
* writes the big character classes as ranges, which sre tests quickly (the
  CJK-extended classes sacremoses builds for zh/ja hold 50k characters beyond
  U+FFFF, tested one by one: milliseconds per line).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

from laser_repro.core.textio import atomic_output, iter_lines

__all__ = [
    "LANG_ALIASES",
    "FastMosesTokenizer",
    "FastPunctNormalizer",
    "TextPreprocessor",
    "preprocess_file",
    "preprocessor_for",
    "remove_non_printing",
]

#: Language codes that LASER maps onto a Moses code (``Token()`` does the same).
LANG_ALIASES = {"cmn": "zh", "zho": "zh", "wuu": "zh", "yue": "zh", "jpn": "ja", "ell": "el"}

SEGMENTERS = (None, "jieba", "mecab")
BACKENDS = ("fast", "reference")


# --------------------------------------------------------------------------
# Step 1: remove-non-printing-char.perl
# --------------------------------------------------------------------------

def remove_non_printing(text: str) -> str:
    """Replace every character of Unicode category C* by a space."""
    # isprintable() is False for every C* character (and for separators other
    # than ' ', which stay), so most lines need no further look.
    if text.isprintable():
        return text
    for c in set(text):
        if not c.isprintable() and unicodedata.category(c)[0] == "C":
            text = text.replace(c, " ")
    return text


# --------------------------------------------------------------------------
# Shared helpers for the fast back-end
# --------------------------------------------------------------------------

_ALNUM_ESCAPES = {"r": "\r", "n": "\n", "t": "\t", "f": "\f", "v": "\v"}


def _as_literal(pattern: str) -> str | None:
    """The string a regex pattern matches if it only matches one fixed string."""
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt in _ALNUM_ESCAPES:
                out.append(_ALNUM_ESCAPES[nxt])
            elif not nxt or nxt.isalnum() or nxt == "_":
                return None  # \d, \s, \1, ... are not literals
            else:
                out.append(nxt)
            i += 2
            continue
        if c in ".^$*+?{}[]|()":
            return None
        out.append(c)
        i += 1
    return "".join(out)


_GROUP_REF = re.compile(r"\\(?:g<(\d+)>|(\d)(?!\d))")


def _template_fn(template: str) -> Callable | str:
    """Turn a ``re.sub`` template into something faster but equivalent.

    Python 3.11 expands templates with group references in Python for every
    match; a closure doing plain concatenation is cheaper.  Templates without
    a backslash are literals already; anything other than plain group
    references (``\\1`` / ``\\g<1>``) is returned unchanged.  Only for
    patterns whose referenced groups always take part in a match (true of
    every Moses rule used here).
    """
    if "\\" not in template:
        return template
    parts: list[str | int] = []
    pos = 0
    for m in _GROUP_REF.finditer(template):
        if m.start() > pos:
            parts.append(template[pos : m.start()])
        parts.append(int(m.group(1) or m.group(2)))
        pos = m.end()
    tail = template[pos:]
    if tail:
        parts.append(tail)
    if any(isinstance(p, str) and "\\" in p for p in parts):
        return template
    if parts == [1, " ' ", 2]:  # the most common shape: skip the generic loop
        return lambda m: m[1] + " ' " + m[2]
    if len(parts) == 2 and parts[0] == 1 and isinstance(parts[1], str):
        lit = parts[1]
        return lambda m: m[1] + lit
    if len(parts) == 2 and isinstance(parts[0], str) and parts[1] == 1:
        lit = parts[0]
        return lambda m: lit + m[1]
    frozen = tuple(parts)
    return lambda m: "".join(p if isinstance(p, str) else m[p] for p in frozen)


_CLASS_SPECIAL = frozenset("\\[]^-")


def _class_body(chars: str) -> str:
    """A regex character-class body for exactly the characters in ``chars``,
    runs merged into ranges.

    sacremoses pastes its Perl property strings into ``[...]``; sre keeps the
    characters beyond U+FFFF of such a class one by one and tests them in
    turn, which for the CJK-extended classes of zh/ja (50k such characters)
    costs milliseconds per character that is not in the class.
    """
    cps = sorted(set(map(ord, chars)))
    parts = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        a, b = cps[i], cps[j]
        parts.append(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}")
        i = j + 1
    return "".join(parts)


def _compacted(rx: re.Pattern, *charsets: str) -> re.Pattern:
    """``rx`` with each pasted-in character string replaced by its compact
    class body: the same character sets, hence the same matches.  Strings with
    characters that are special inside a class are left alone."""
    pattern = rx.pattern
    for chars in sorted(charsets, key=len, reverse=True):
        if chars and chars in pattern and not _CLASS_SPECIAL & set(chars):
            pattern = pattern.replace(chars, _class_body(chars))
    return re.compile(pattern, rx.flags)


# --------------------------------------------------------------------------
# Step 2: punctuation normalisation
# --------------------------------------------------------------------------

# Regex rules of MosesPunctNormalizer -> a substring that every match contains.
# A rule whose needle is not in the current text cannot change it.  Rules not
# listed here (and not plain literals) are always applied.
_NORM_REGEX_NEEDLES = {
    r" +": "  ",  # a single space maps onto itself
    r"\) ([.!:?;,])": ") ",
    r"(\d) %": " %",
    "([a-zA-Z])‘([a-zA-Z])": "‘",
    "([a-zA-Z])’([a-zA-Z])": "’",
    r'"([,.]+)': '"',
    r'(\.+)"(\s*[^<])': '."',
    "(\\d)\u00a0(\\d)": "\u00a0",
}


_SPACES = "  "


def _rarest_char(needle: str) -> str | None:
    """The character of ``needle`` least likely to occur in ordinary text."""
    common = " ,.'-:"  # ordered from most to least common
    best = max(needle, key=lambda c: (c not in common, common.find(c) if c in common else ord(c)))
    return None if best == " " else best


def _replace(text: str, old: str, new: str) -> str:
    return text.replace(old, new)


class FastPunctNormalizer:
    """Byte-identical, faster ``MosesPunctNormalizer(lang).normalize``."""

    def __init__(self, lang: str = "en"):
        from sacremoses import MosesPunctNormalizer

        self.lang = lang
        ref = MosesPunctNormalizer(lang=lang)
        steps: list[tuple[str | None, Callable[[str], str]]] = []
        for pattern, repl in ref.substitutions:
            lit = _as_literal(pattern)
            if lit and "\\" not in repl:
                steps.append((lit, functools.partial(_replace, old=lit, new=repl)))
            else:
                rx = re.compile(pattern)
                steps.append(
                    (_NORM_REGEX_NEEDLES.get(pattern), functools.partial(rx.sub, _template_fn(repl)))
                )
        self._steps = tuple(steps)
        # Each rule gets a key: the rarest character of its needle, or "  "
        # for the all-space needle.  One scan lists the keys present in a
        # line; only the rules indexed under them can fire.  When a rule
        # fires, the keys it may bring in (characters of its replacement, or
        # a new double space) are added; a superset of the keys present is
        # enough, since every needle is still tested on the current text.
        self._always = tuple(i for i, (needle, _) in enumerate(steps) if needle is None)
        self._by_key: dict[str, list[int]] = {}
        for i, (needle, _) in enumerate(steps):
            if needle is not None:
                self._by_key.setdefault(_rarest_char(needle) or _SPACES, []).append(i)
        chars = sorted(k for k in self._by_key if k != _SPACES)
        self._find_chars = re.compile("[" + "".join(re.escape(c) for c in chars) + "]" if chars else "(?!)").findall
        self._adds = tuple(
            frozenset(c for c in (repl if isinstance(repl, str) else "") if c in self._by_key)
            for repl in (ref_repl for _, ref_repl in ref.substitutions)
        )
        self._candidates = functools.lru_cache(maxsize=4096)(self._rules_for)

    def _rules_for(self, keys: frozenset) -> tuple[int, ...]:
        found = set(self._always)
        for key in keys:
            found.update(self._by_key[key])
        return tuple(sorted(found))

    def normalize(self, text: str) -> str:
        keys = set(self._find_chars(text))
        if _SPACES in text:
            keys.add(_SPACES)
        if not keys and not self._always:
            return text.strip()
        steps = self._steps
        todo = self._candidates(frozenset(keys))
        k = 0
        while k < len(todo):
            j = todo[k]
            k += 1
            needle, apply = steps[j]
            if needle is None or needle in text:
                new = apply(text)
                if new != text:
                    text = new
                    more = self._adds[j] - keys
                    if _SPACES not in keys and _SPACES in text:
                        more = more | {_SPACES}
                    if more:
                        keys |= more
                        todo = tuple(i for i in self._candidates(frozenset(keys)) if i > j)
                        k = 0
        return text.strip()

    __call__ = normalize


# --------------------------------------------------------------------------
# Step 3: tokenisation
# --------------------------------------------------------------------------

_WHITESPACE = re.compile(r"\s+")
_ASCII_JUNK = re.compile(r"[\000-\037]")


class FastMosesTokenizer:
    """Byte-identical, faster ``MosesTokenizer(lang).tokenize(text,
    escape=False, return_str=True)`` (no aggressive dash splits, no
    protected patterns)."""

    def __init__(self, lang: str = "en"):
        from sacremoses import MosesTokenizer

        self.lang = lang
        ref = MosesTokenizer(lang=lang)
        self._ref = ref
        alpha, num, alnum = ref.IsAlpha, ref.IsN, ref.IsAlnum

        # "([^alnum\s.'`,-])" -> " \1 ": the group is the whole match, so
        # splitting on the pattern and joining with spaces is the same thing.
        self._pad_split = _compacted(ref.PAD_NOT_ISALNUM[0], alnum).split

        # Commas: the three sacremoses rules, plus a shortcut that is exact
        # when no comma touches a number character or another comma and none
        # starts the text: rule 1 turns each comma into " , " (keeping the
        # character before it), rule 2 then pads it once more and rule 3
        # cannot match, i.e. "," -> "  ,  ".
        comma_rules = (ref.COMMA_SEPARATE_1, ref.COMMA_SEPARATE_2, ref.COMMA_SEPARATE_3)
        self._comma = tuple(
            functools.partial(_compacted(rx, num).sub, _template_fn(tpl)) for rx, tpl in comma_rules
        )
        expected = [(f"([^{num}])[,]", r"\1 , "), (f"[,]([^{num}])", r" , \1"), (f"([{num}])[,]$", r"\1 , ")]
        self._comma_hard = None
        if [(rx.pattern, tpl) for rx, tpl in comma_rules] == expected:
            # ",," or a number character on either side; every alternative
            # starts with the comma, so the regex engine can skip to commas.
            hard = re.compile(f",(?:(?=[,{num}])|(?<=[{num}],))")
            self._comma_hard = _compacted(hard, num).search

        # Apostrophes, per language as sacremoses.  For en/fr/it the rules only
        # look at the two neighbours of each apostrophe; when every apostrophe
        # sits between two letters and no two are within two characters of
        # each other (so that no match consumes another one's context), only
        # the letter'letter rule fires, on every apostrophe.
        self._apos_hard = None
        if lang == "en":
            rules = ref.ENGLISH_SPECIFIC_APOSTROPHE
            expected = [
                (f"([^{alpha}])[']([^{alpha}])", r"\1 ' \2"),
                (f"([^{alpha}{num}])[']([{alpha}])", r"\1 ' \2"),
                (f"([{alpha}])[']([^{alpha}])", r"\1 ' \2"),
                (f"([{alpha}])[']([{alpha}])", r"\1 '\2"),
                (f"([{num}])[']([s])", r"\1 '\2"),
            ]
            self._apos_easy = " '"
        elif lang in ("fr", "it"):
            rules = ref.FR_IT_SPECIFIC_APOSTROPHE
            expected = [
                (f"([^{alpha}])[']([^{alpha}])", r"\1 ' \2"),
                (f"([^{alpha}])[']([{alpha}])", r"\1 ' \2"),
                (f"([{alpha}])[']([^{alpha}])", r"\1 ' \2"),
                (f"([{alpha}])[']([{alpha}])", r"\1' \2"),
            ]
            self._apos_easy = "' "
        else:
            rules = [ref.NON_SPECIFIC_APOSTROPHE]
            expected = None
        if expected is not None and [(rx.pattern, tpl) for rx, tpl in rules] == expected:
            # Not a letter after it, another apostrophe two on, or not a
            # letter before it (text starting with one is tested apart).
            hard = re.compile(f"'(?:(?![{alpha}])|(?=.')|(?<=[^{alpha}]'))")
            self._apos_hard = _compacted(hard, alpha).search
        apos: list[Callable[[str], str]] = []
        for rx, tpl in rules:
            lit = _as_literal(rx.pattern)
            if lit and "\\" not in tpl:
                apos.append(functools.partial(_replace, old=lit, new=tpl))
            else:
                apos.append(functools.partial(_compacted(rx, alpha, num).sub, _template_fn(tpl)))
        self._apostrophe = tuple(apos)

        self._trailing_dot_apos = functools.partial(
            ref.TRAILING_DOT_APOSTROPHE[0].sub, ref.TRAILING_DOT_APOSTROPHE[1]
        )

        # Non-breaking prefixes.  sacremoses splits into tokens and, for each
        # token "PREFIX." , tests (rebuilding set(IsAlpha)/set(IsLower) and
        # scanning lists on every call):
        #   keep if PREFIX has a "." and a letter, or PREFIX is a non-breaking
        #   prefix (not numeric-only), or the next token starts lower-case;
        #   keep if PREFIX is numeric-only and the next token starts with 0-9;
        #   otherwise "PREFIX ." .
        # Here the same tests on precomputed sets, visiting only the periods
        # that end a token of the single-spaced text.
        self._alpha_disjoint = frozenset(alpha).isdisjoint
        self._lower = frozenset(ref.IsLower)
        self._numeric_only = frozenset(ref.NUMERIC_ONLY_PREFIXES)
        self._nonbreaking = frozenset(p for p in ref.NONBREAKING_PREFIXES if p not in self._numeric_only)

    def _split_final_periods(self, text: str) -> str:
        """sacremoses' handles_nonbreaking_prefixes, on stripped single-spaced text."""
        n = len(text)
        dots = []  # positions of periods that end a token
        pos = text.find(". ")
        while pos >= 0:
            dots.append(pos)
            pos = text.find(". ", pos + 2)
        if text[-1] == ".":
            dots.append(n - 1)
        pieces = []
        done = 0
        for dot in dots:
            start = text.rfind(" ", 0, dot) + 1
            if start == dot:  # a lone "." is not "PREFIX."
                continue
            prefix = text[start:dot]
            nxt = text[dot + 2] if dot + 2 < n else ""  # first char of the next token
            if (
                ("." in prefix and not self._alpha_disjoint(prefix))
                or prefix in self._nonbreaking
                or nxt in self._lower
                or (prefix in self._numeric_only and "0" <= nxt <= "9")
            ):
                continue
            pieces.append(text[done:dot])  # "PREFIX." -> "PREFIX ."
            done = dot
        if not pieces:
            return text
        pieces.append(text[done:])
        return " ".join(pieces)

    def tokenize(self, text: str) -> str:
        # De-duplicate whitespace, drop ASCII control characters, strip.  For
        # text without control characters this is split + join, since
        # str.split() and re's \s agree on what whitespace is.
        if text.isprintable() or _ASCII_JUNK.search(text) is None:
            text = " ".join(text.split())
        else:
            text = _ASCII_JUNK.sub("", _WHITESPACE.sub(" ", text)).strip()
        if not text:
            return text
        text = " ".join(self._pad_split(text))
        if ".." in text:
            text = self._ref.replace_multidots(text)
        if "," in text:
            if self._comma_hard is None or text[0] == "," or self._comma_hard(text):
                for apply in self._comma:
                    text = apply(text)
            else:
                text = text.replace(",", "  ,  ")
        if "'" in text:
            if self._apos_hard is None or text[0] == "'" or self._apos_hard(text):
                for apply in self._apostrophe:
                    text = apply(text)
            else:
                text = text.replace("'", self._apos_easy)
        # From here on the text is single-spaced and stripped, which makes
        # sacremoses' de-duplication after the prefix step a no-op.
        text = " ".join(text.split())
        if "." in text:
            text = self._split_final_periods(text)
        if text.endswith(".'"):
            text = self._trailing_dot_apos(text)
        if "MULTI" in text:
            text = self._ref.restore_multidots(text)
        return text

    __call__ = tokenize


class _ReferenceMoses:
    """Plain sacremoses, for verification and comparison."""

    def __init__(self, lang: str):
        from sacremoses import MosesPunctNormalizer, MosesTokenizer

        self.normalize = MosesPunctNormalizer(lang=lang).normalize
        self._tokenize = MosesTokenizer(lang=lang).tokenize

    def tokenize(self, text: str) -> str:
        return self._tokenize(text, escape=False, return_str=True)


# --------------------------------------------------------------------------
# The whole pipeline
# --------------------------------------------------------------------------


class TextPreprocessor:
    """LASER preprocessing for one language (see the module docstring).

    All set-up (rule compilation, jieba dictionary, MeCab tagger) happens here,
    once; ``__call__`` maps one line (without its newline) to one line.
    """

    def __init__(
        self,
        moses_lang: str,
        *,
        segmenter: str | None = None,
        romanize: bool = False,
        lowercase: bool = True,
        backend: str = "fast",
    ):
        if not isinstance(moses_lang, str) or not moses_lang:
            raise ValueError(f"moses_lang must be a non-empty string, got {moses_lang!r}")
        if segmenter not in SEGMENTERS:
            raise ValueError(f"segmenter must be one of {SEGMENTERS}, got {segmenter!r}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.moses_lang = moses_lang
        self.segmenter = segmenter
        self.romanize = romanize
        self.lowercase = lowercase
        self.backend = backend

        if backend == "fast":
            self._normalize = FastPunctNormalizer(moses_lang).normalize
            self._tokenize = FastMosesTokenizer(moses_lang).tokenize
        else:
            ref = _ReferenceMoses(moses_lang)
            self._normalize, self._tokenize = ref.normalize, ref.tokenize

        self._segment: Callable[[str], str] | None = None
        if segmenter == "jieba":
            self._segment = _jieba_segmenter()
        elif segmenter == "mecab":
            self._segment = _mecab_segmenter()

        self._romanize: Callable[[str], str] | None = None
        if romanize:
            from transliterate import (
                get_available_language_codes,
                get_translit_function,
            )

            if moses_lang not in get_available_language_codes():
                raise ValueError(f"transliterate cannot romanize language {moses_lang!r}")
            # What translit(text, lang, reversed=True) does, but with one
            # language pack (translit() builds a new one, tables and all, per call).
            self._romanize = functools.partial(get_translit_function(moses_lang), reversed=True)

    def __call__(self, line: str) -> str:
        text = remove_non_printing(line)
        text = self._normalize(text)
        text = self._tokenize(text)
        if self._segment is not None and text:
            text = self._segment(text)
        if self._romanize is not None:
            text = self._romanize(text)
        if self.lowercase:
            text = text.lower()
        # Moses leaves single ' ' separators, but a trailing one after a final
        # ".'" (sacremoses emits " . ' "); this also guards the one-line-out
        # contract against anything a later step might emit.
        if text[-1:] == " " or not text.isprintable():
            text = " ".join(text.split())
        return text

    def __repr__(self) -> str:
        return (
            f"TextPreprocessor({self.moses_lang!r}, segmenter={self.segmenter!r}, "
            f"romanize={self.romanize}, lowercase={self.lowercase}, backend={self.backend!r})"
        )


def _jieba_segmenter() -> Callable[[str], str]:
    """As ``python -m jieba -d ' '``: default dictionary, accurate mode, HMM."""
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    tok = jieba.Tokenizer()  # default dictionary; own instance, not the global one
    tok.initialize()

    def segment(text: str) -> str:
        # jieba yields the existing spaces as tokens; collapse them.
        return " ".join(" ".join(tok.cut(text, cut_all=False, HMM=True)).split())

    return segment


def _mecab_segmenter() -> Callable[[str], str]:
    """As LASER's ``mecab -O wakati`` with the IPADIC dictionary.

    The dictionary and its (empty) mecabrc come from the ``ipadic`` pip
    package; ``ipadic.MECAB_ARGS`` is ``-r "<dicdir>/mecabrc" -d "<dicdir>"``,
    so neither a system MeCab nor /etc/mecabrc is looked for.
    ``GenericTagger`` because fugashi's ``Tagger`` expects UniDic features.
    """
    import fugashi
    import ipadic

    tagger = fugashi.GenericTagger(ipadic.MECAB_ARGS + " -Owakati")

    def segment(text: str) -> str:
        return " ".join(tagger.parse(text).split())

    segment.tagger = tagger  # for inspection (tests: which dictionary is loaded)
    return segment


def preprocessor_for(moses_lang: str, *, lowercase: bool = True, backend: str = "fast") -> TextPreprocessor:
    """The LASER set-up for a language: jieba for zh, MeCab for ja, romanised el.

    A few ISO 639-3 codes LASER itself maps (cmn/zho/wuu/yue -> zh, jpn -> ja,
    ell -> el) are accepted too.
    """
    lang = LANG_ALIASES.get(moses_lang, moses_lang)
    return TextPreprocessor(
        lang,
        segmenter={"zh": "jieba", "ja": "mecab"}.get(lang),
        romanize=lang == "el",
        lowercase=lowercase,
        backend=backend,
    )


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


def preprocess_file(in_path, out_path, preprocessor: Callable[[str], str], *, progress: bool = True) -> dict:
    """Preprocess ``in_path`` line by line into ``out_path``.

    Lines are split on ``\\n`` only (a ``\\r``, U+2028 etc. inside a line stays
    in that line and becomes a space), so the output has exactly as many lines
    as the input; every output line ends with ``\\n``, the last one too.  Input must be strict UTF-8: otherwise a ValueError naming
    the file and the 1-based line number is raised.  Output goes to a
    temporary file next to ``out_path`` that is renamed onto it only when
    everything succeeded, and removed otherwise.

    Returns ``{"lines": N, "empty_after": number of empty output lines}``.
    """
    n_lines = n_empty = 0
    with atomic_output(out_path) as out:
        for line in iter_lines(in_path, progress=progress):
            processed = preprocessor(line)
            n_lines += 1
            n_empty += not processed
            out.write(processed + "\n")
    return {"lines": n_lines, "empty_after": n_empty}


def language_preprocessor(code: str, *, lowercase: bool = True) -> TextPreprocessor:
    """The preprocessor of a language of the registry (ISO 639-3 ``code``): its Moses language,
    segmenter (jieba, MeCab) and romanization (Greek), as in LASER."""
    from laser_repro.core import languages

    lang = languages.get(code)
    return TextPreprocessor(lang.moses, segmenter=lang.segmenter or None, romanize=bool(lang.romanize),
                            lowercase=lowercase)
