"""The UN Parallel Corpus v1.0 development and test sets (Ziemski et al., LREC 2016) as an evaluation
source of bitext retrieval P@1 (the LaBSE paper's "UN" task: for each non-English sentence, retrieve
its English translation; line i of one language translates line i of every other).

Data: one archive, ``UNv1.0.testsets.tar.gz``, published with the corpus. Its download address moved
over the years (all serve the same file name; none is reachable from every machine, hence the list):

* :data:`URL`, the corpus site's download handler (the address this project's configs already use,
  ``config/schwenk_douze_2017.yaml``, and public download scripts of the UN 6-way corpus);
* ``https://stuncorpusprod.blob.core.windows.net/corpusfiles/UNv1.0.testsets.tar.gz`` (mtdata's index,
  ``mtdata/index/unitednations.py``);
* ``https://www.un.org/dgacm/sites/www.un.org.dgacm/files/files/UNCORPUS/UNv1.0.testsets.tar.gz``
  (the DGACM site, the most recent address seen in public code).

Members, for xx in ar, en, es, fr, ru, zh (4000 lines each, plain UTF-8, one sentence a line)::

    testsets/devset/UNv1.0.devset.<xx>
    testsets/testset/UNv1.0.testset.<xx>

No checksum of the archive is published (neither by the UN site nor by sacrebleu, which does not
define the UN sets, nor by mtdata): :data:`SHA256` is None, and the first download's SHA-256, which
:func:`laser_repro.core.download.fetch_with_record` records, is the one to pin.

Download with :func:`laser_repro.core.download.fetch` (``fetch(URL, dest)``); this module only reads the
archive. Extracted lines are cleaned as every stage writes text (:func:`laser_repro.core.textio.one_line`:
control characters -> space, outer whitespace stripped), never dropped, so the alignment holds.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from laser_repro.core.textio import InputError, atomic_output, count_lines, one_line
from laser_repro.evaluation.bucc import iter_member_lines  # the package's streaming tar-member reader

log = logging.getLogger(__name__)

ARCHIVE_NAME = "UNv1.0.testsets.tar.gz"
#: the corpus site's download handler (as config/schwenk_douze_2017.yaml)
URL = f"https://conferences.unite.un.org/uncorpus/Home/DownloadFile?filename={ARCHIVE_NAME}"
#: every address the archive has been published at, :data:`URL` first
URLS = (
    URL,
    f"https://stuncorpusprod.blob.core.windows.net/corpusfiles/{ARCHIVE_NAME}",
    f"https://www.un.org/dgacm/sites/www.un.org.dgacm/files/files/UNCORPUS/{ARCHIVE_NAME}",
)
#: no checksum is published for the archive (see the module docstring)
SHA256: str | None = None
MD5: str | None = None

#: tar member of one language of one split: split in :data:`SPLITS`, code a value of :data:`LANGUAGES`
MEMBER_PATTERN = "testsets/{split}/UNv1.0.{split}.{code}"
SPLITS = ("devset", "testset")
#: lines of every member (4000 sentences each, Ziemski et al. 2016)
LINES = 4000
#: the six UN languages: ISO 639-3 code (the config's) -> the UN corpus's code
LANGUAGES = {"eng": "en", "fra": "fr", "spa": "es", "rus": "ru", "ara": "ar", "cmn": "zh"}


def un_code(lang: str) -> str:
    """The UN corpus's code of a language: an ISO 639-3 code of :data:`LANGUAGES` (``fra`` -> ``fr``)
    or the UN's own (``fr``). Anything else: ValueError naming it and the known codes."""
    if lang in LANGUAGES:
        return LANGUAGES[lang]
    if lang in LANGUAGES.values():
        return lang
    known = ", ".join(f"{k} ({v})" for k, v in LANGUAGES.items())
    raise ValueError(f"unknown UN corpus language {lang!r}; known: {known}")


def member_name(lang: str, split: str) -> str:
    """``testsets/<split>/UNv1.0.<split>.<xx>``: the member of ``lang`` (ISO 639-3 or UN code) in the
    ``split`` (``devset`` or ``testset``) of :data:`ARCHIVE_NAME`."""
    if split not in SPLITS:
        raise ValueError(f"unknown UN corpus split {split!r}; known: {', '.join(SPLITS)}")
    return MEMBER_PATTERN.format(split=split, code=un_code(lang))


def extract(archive: str | os.PathLike, lang: str, split: str, out_path: str | os.PathLike, *,
            expected_lines: int | None = None) -> int:
    """Stream the member of ``lang`` / ``split`` out of the .tar.gz ``archive`` into ``out_path``, one
    sentence a line (see the module docstring for the cleaning); return the number of lines.

    ``out_path`` appears only when everything succeeded: a missing archive or member, a corrupt archive,
    a line that is not UTF-8 or (``expected_lines`` given) another line count raise InputError naming
    the archive and the member, and leave no output behind."""
    member = member_name(lang, split)
    n = 0
    with atomic_output(out_path) as f:
        for n, line in iter_member_lines(archive, member):
            f.write(one_line(line) + "\n")
        if n == 0:
            raise InputError(f"{archive}:{member}: empty member")
        if expected_lines is not None and n != expected_lines:
            raise InputError(f"{archive}:{member}: {n} lines, expected {expected_lines}")
    log.info("%s: %d lines from %s:%s", out_path, n, archive, member)
    return n


def check_aligned(src_path: str | os.PathLike, eng_path: str | os.PathLike) -> int:
    """The common line count of a non-English side and its English side; InputError naming both files
    and their counts when they differ (line i must translate line i) or when they are empty."""
    n_src, n_eng = count_lines(src_path), count_lines(eng_path)
    if n_src != n_eng:
        raise InputError(f"UN sides not aligned: {src_path} has {n_src} lines, {eng_path} has {n_eng}")
    if n_src == 0:
        raise InputError(f"UN sides empty: {src_path} and {eng_path} have no lines")
    return n_src


def cmd_extract(a) -> None:
    try:
        n = extract(a.archive, a.lang, a.split, a.output, expected_lines=a.expect_lines)
    except (InputError, ValueError) as err:
        raise SystemExit(f"un-extract: {err}") from None
    log.info("un-extract: %s (%d lines)", Path(a.output), n)


def add_cli(sub) -> None:
    """Register ``un-extract`` on the main CLI."""
    s = sub.add_parser("un-extract", help="one language of the UN v1.0 dev or test set, out of UNv1.0.testsets.tar.gz")
    s.add_argument("--archive", required=True, help=f"the downloaded {ARCHIVE_NAME}")
    s.add_argument("--lang", required=True,
                   help=f"ISO 639-3 ({', '.join(LANGUAGES)}) or UN code ({', '.join(LANGUAGES.values())})")
    s.add_argument("--split", choices=SPLITS, default="testset")
    s.add_argument("--output", required=True, help="text file, one sentence a line (written atomically)")
    s.add_argument("--expect-lines", type=int, default=None,
                   help=f"fail unless the member has this many lines (the published sets: {LINES})")
    s.set_defaults(func=cmd_extract)
