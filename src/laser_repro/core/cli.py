"""Command line of the downloads: ``laser-repro fetch`` (a URL, with retries, checksum and an OPUS
mirror; a missing OPUS pair recorded as absent) and ``laser-repro extract-member`` (one file of a tar).

The corpus-specific parts (the OPUS base URL, the absent-pair record, tar extraction) are in
:mod:`laser_repro.data.corpora`, imported when a command runs (the base URL when the parser is built).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger("laser_repro")


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


def add_cli(sub) -> None:
    """Register ``fetch`` and ``extract-member`` on an argparse subparsers object."""
    from laser_repro.data.corpora import OPUS_BASE_URL

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

    s = sub.add_parser("extract-member", help="extract one file of a tar (or zip) archive")
    s.add_argument("--archive", required=True)
    s.add_argument("--member", required=True)
    s.add_argument("--output", required=True)
    s.set_defaults(func=cmd_extract_member)
