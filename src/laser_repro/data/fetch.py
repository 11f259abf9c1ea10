"""Command line of the downloads: ``laser-repro fetch`` (a URL or its alternatives in order, with retries,
checksum, a deadline and an OPUS mirror; a missing OPUS pair recorded as absent, unless no pair of its
corpus exists at all) and ``laser-repro extract-member`` (one file of a tar).

The corpus-specific parts (the OPUS base URL, the absent-pair record, tar extraction) are in
:mod:`laser_repro.data.corpora`, imported when a command runs (the base URL when the parser is built).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger("laser_repro")


def url_pattern(urls) -> str:
    """The URLs as one pattern: their common beginning and end around a ``*`` (one URL: itself)."""
    import os

    urls = sorted(set(urls))
    if len(urls) == 1:
        return urls[0]
    head = os.path.commonprefix(urls)
    tail = os.path.commonprefix([u[len(head):][::-1] for u in urls])[::-1]
    return f"{head}*{tail}"


def require_some_pair(url: str, pair_urls, a) -> None:
    """``url`` does not exist: accept it as an absent pair only when another pair of its corpus
    (``pair_urls``, as configured, mapped like ``url``) exists at the same source; when none does, the
    URL pattern is wrong (a mistyped mirror, base URL, corpus or version), which is an error."""
    from laser_repro.core import download

    others = [download.resolve_mirror(u, a.mirror, a.base_url) if a.mirror else u for u in pair_urls]
    others = [u for u in dict.fromkeys(others) if u != url]
    for other in others:
        if download.url_exists(other, retries=a.retries):
            log.info("%s exists: the corpus is there, %s is an absent pair", other, url)
            return
    pattern = url_pattern([url, *others])
    raise download.NotFoundError(
        f"none of the {len(others) + 1} pair(s) of this corpus exists at {pattern} ({url} and the others "
        f"all missing): not absent pairs but a wrong URL -- check the mirror / base_url (config opus.mirror, "
        f"opus.base_url) and the corpus's name and version")


def cmd_fetch(a):
    from laser_repro.core import download

    urls = [download.resolve_mirror(u, a.mirror, a.base_url) if a.mirror else u for u in [a.url, *a.alternative]]
    local_mirror = a.mirror and not download.is_url(a.mirror)
    if local_mirror and not Path(a.mirror).expanduser().is_dir():
        # not an absent pair: every file would be "absent" from a mistyped mirror path
        raise download.DownloadError(f"mirror directory {a.mirror} does not exist (--mirror, config opus.mirror)")
    try:
        record = download.fetch_first(urls, Path(a.dest), sha256=a.sha256, retries=a.retries,
                                      deadline=a.deadline or None, verify_as=a.verify_as)
    except download.NotFoundError:
        if not a.absent_ok:
            raise
        from laser_repro.data.corpora import write_absent_pair_record

        url = urls[0]
        pair_urls = list(a.pair_url)
        if a.pair_urls_from:
            from laser_repro.core.errors import UserError
            from laser_repro.provenance.spec_files import read_path_list

            try:
                pair_urls += read_path_list(a.pair_urls_from, "--pair-urls-from")
            except ValueError as err:
                raise UserError(str(err)) from None
        if pair_urls:
            require_some_pair(url, pair_urls, a)
        if download.is_url(url) and not url.lower().startswith("file:"):
            why = "HTTP 404"
        else:
            why = f"not in the mirror directory {a.mirror}" if local_mirror and url != a.url else "no such local file"
        write_absent_pair_record(a.dest, url, why)
        log.warning("%s does not exist (%s); recorded as an absent pair in %s", url, why, a.dest)
        return
    # the URL that served the file (one of the alternatives), in the job's provenance record
    a.runtime = {"download": {k: record[k] for k in ("url", "sha256", "bytes", "attempts", "failed")}}
    log.info("fetched %s", json.dumps(record))


def cmd_extract_member(a):
    from laser_repro.data import corpora

    corpora.extract_tar_member(a.archive, a.member, a.output)


def add_cli(sub) -> None:
    """Register ``fetch`` and ``extract-member`` on an argparse subparsers object."""
    from laser_repro.core.download import DEFAULT_DEADLINE
    from laser_repro.data.corpora import OPUS_BASE_URL

    s = sub.add_parser("fetch", help="download a URL with retries and checksum, atomically")
    s.add_argument("--url", required=True)
    s.add_argument("--alternative", action="append", default=[], metavar="URL",
                   help="another URL of the same file, tried (in the order given) when --url fails")
    s.add_argument("--dest", required=True)
    s.add_argument("--sha256")
    s.add_argument("--verify-as", metavar="NAME",
                   help="check the file as the archive kind this name's suffix says (default: --dest's name)")
    s.add_argument("--retries", type=int, default=5)
    s.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE, metavar="SECONDS",
                   help=f"total seconds one HTTP attempt may take (default {DEFAULT_DEADLINE:g}; 0: no limit); "
                        "each read also times out after 60 s")
    s.add_argument("--mirror", help="local directory or URL mirroring --base-url")
    s.add_argument("--base-url", default=OPUS_BASE_URL)
    s.add_argument("--absent-ok", action="store_true",
                   help="on HTTP 404 (or a file missing from a local --mirror directory), record the pair "
                        "as absent (OPUS corpora with allow_absent_pairs)")
    s.add_argument("--pair-url", action="append", default=[], metavar="URL",
                   help="with --absent-ok: the URL of another pair of the same corpus (repeat for each); a "
                        "missing file is an absent pair only if one of them exists (else the URL is wrong)")
    s.add_argument("--pair-urls-from", metavar="FILE", help="with --absent-ok: a JSON list of such URLs")
    s.set_defaults(func=cmd_fetch)

    s = sub.add_parser("extract-member", help="extract one file of a tar (or zip) archive")
    s.add_argument("--archive", required=True)
    s.add_argument("--member", required=True)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_extract_member)
