"""Robust file downloads for the pipeline (corpora, test sets, tarballs).

Main entry point: :func:`fetch`.

* ``http://`` / ``https://`` URLs are streamed with :mod:`urllib` in 1 MiB chunks
  (tqdm progress bar on stderr); ``file://`` URLs and plain local paths are copied.
* Data is written to ``<dest>.part`` and only renamed to ``dest`` (atomically, with
  :func:`os.replace`) once it has been verified:

  - the byte count against ``Content-Length`` when the server sends one
    (a short transfer is retried),
  - the byte count against ``size`` when given,
  - the SHA-256 digest against ``sha256`` when given,
  - the archive itself, by the name of ``dest`` (:func:`verify_archive`): a ``.zip`` must open
    and its members pass their CRC check, a tar (``.tar``, ``.tar.gz``, ``.tgz``, ...) must list
    to its end, a ``.gz`` / ``.bz2`` / ``.xz`` file must decompress; otherwise
    :class:`CorruptDownloadError` names the URL and the reason (not retried: a complete transfer
    of a broken file; the server or mirror copy needs fixing), and nothing is cached at ``dest``,
  - any other file (plain text: a Tatoeba file, a MUSE dictionary) must not be an HTML page
    (:func:`check_not_html`: a ``text/html`` answer or a body that starts as HTML -- a login, error
    or "moved" page served with status 200), with the same :class:`CorruptDownloadError`.

* Each HTTP attempt has a total ``deadline`` (seconds, :data:`DEFAULT_DEADLINE`) besides the
  per-read ``timeout``: a server that trickles a byte now and then never trips the read timeout.
  An attempt past its deadline is not retried (the same server would be as slow again); the error
  says how far it got and names the setting.

* Connection errors, read timeouts, HTTP 5xx / 408 / 425 / 429 and truncated transfers are
  retried with exponential backoff (``backoff * 2**k`` seconds before retry ``k + 1``,
  capped at :data:`MAX_BACKOFF`).  Other HTTP errors (404 in particular) fail at once.
* A checksum mismatch of a *complete* file (its length was verified) is **not** retried:
  the server would send the same bytes again, so the mismatch means the upstream file
  changed or the pinned checksum is wrong, which needs a human decision.
  :class:`ChecksumMismatchError` names the URL, the expected and the actual digest.
* A missing local source (plain path or ``file://``, e.g. a file absent from a mirror directory)
  raises :class:`NotFoundError`, as an HTTP 404 does.
* A retry after a partial HTTP transfer (a dropped connection, a read timeout, a short body) resumes
  the ``.part`` file with ``Range: bytes=<have>-`` and ``If-Range`` (the first response's strong ETag,
  else its Last-Modified), so a changed file is sent whole instead of being spliced.  Only a ``206`` whose
  ``Content-Range`` starts at exactly that byte, with the total size already known (and the same
  validators, when it sends them) is appended; a ``200`` (Range ignored, or If-Range failed), a ``416``
  or any other ``206`` starts over from byte 0, with a warning saying why.  The SHA-256 and size checks
  cover the whole file.  ``<dest>.part.json`` records where the ``.part``'s bytes came from (URL,
  validators, total size): a ``.part`` left by a killed process (a preempted SLURM job, Ctrl-C) is
  resumed by the next call only when that record names the same URL and a validator, else it is
  discarded.
* On any failure the ``.part`` file (and its record) is removed and ``dest`` does not exist, so a failed
  download never leaves a complete-looking file behind.  A pre-existing ``dest`` that
  cannot be verified (no ``sha256`` given, or a wrong digest) is deleted before the new
  download starts; one whose digest matches ``sha256`` is kept and nothing is downloaded.

:func:`resolve_mirror` maps URLs below a public base URL onto a local mirror directory
or another URL prefix with the same relative layout (e.g. the OPUS object-store layout
``OPUS-{corpus}/{version}/moses/{l1}-{l2}.txt.zip``).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Sequence

__all__ = [
    "DownloadError",
    "ChecksumMismatchError",
    "CorruptDownloadError",
    "NotFoundError",
    "verify_archive",
    "check_not_html",
    "url_exists",
    "fetch_first",
    "fetch",
    "fetch_with_record",
    "sha256_file",
    "resolve_mirror",
    "is_url",
    "join_parts",
]

log = logging.getLogger(__name__)

CHUNK_SIZE = 1 << 20
#: Upper bound (seconds) for a single backoff sleep.
MAX_BACKOFF = 120.0
#: HTTP status codes that are worth retrying (besides every 5xx).
RETRY_STATUS = frozenset({408, 425, 429})
#: Total seconds one HTTP attempt may take (config opus.deadline_s / evaluation.deadline_s, `fetch --deadline`).
#: Generous on purpose: the largest file a shipped config downloads, OPUS ParaCrawl v4 en-fr (3.4 GiB in
#: opustools' index), fits at an average of 170 KiB/s; a trickling server is still stopped the same day.
DEFAULT_DEADLINE = 6 * 3600.0
USER_AGENT = "laser-repro-downloader/0.1 (+https://github.com/facebookresearch/LASER reproduction)"

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class DownloadError(RuntimeError):
    """A download failed for good (after retries, or with a non-retryable error)."""


class ChecksumMismatchError(DownloadError):
    """The downloaded bytes do not have the expected SHA-256 digest."""

    def __init__(self, url: str, expected: str, got: str, nbytes: int, resumed_at: int = 0):
        self.url, self.expected, self.got, self.nbytes = url, expected, got, nbytes
        resumed = (f" The transfer was resumed at byte {resumed_at}; the partial file was discarded, so a "
                   f"rerun downloads it whole." if resumed_at else "")
        super().__init__(
            f"SHA-256 mismatch for {url}: expected {expected}, got {got} "
            f"({nbytes} bytes received). Not retried: the transfer was complete, so either "
            f"the upstream file changed or the pinned checksum is wrong: if the file it serves now is the right "
            f"one, pin its checksum (--sha256, the config's sha256 of this file), else fix the URL or use a mirror "
            f"that has the pinned file.{resumed}"
        )


class NotFoundError(DownloadError):
    """The file does not exist at its source: an HTTP 404, or a local path / mirror file that is missing."""


class CorruptDownloadError(DownloadError):
    """The downloaded bytes are not a readable archive of the kind ``dest`` names (zip, tar, gzip...)."""


class DeadlineExceededError(DownloadError):
    """One HTTP attempt ran past its total deadline (the server sends, but too slowly)."""


class _Retryable(Exception):
    """Internal: a transient failure of one attempt."""


class _DeadlinePassed(Exception):
    """Internal: the attempt's deadline passed after ``args[0]`` bytes."""


class _Partial:
    """Where the bytes of a ``.part`` file came from: the URL, the validators of the response that
    started it (ETag, Last-Modified) and the file's full size (its Content-Length, None if not sent).
    Saved as JSON beside it (:func:`_partial_record`), so that another process can resume it."""

    def __init__(self, url: str, etag: str | None = None, last_modified: str | None = None,
                 total: int | None = None):
        self.url, self.etag, self.last_modified, self.total = url, etag, last_modified, total

    @classmethod
    def from_response(cls, url: str, headers, total: int | None) -> "_Partial":
        return cls(url, headers.get("ETag"), headers.get("Last-Modified"), total)

    @property
    def if_range(self) -> str | None:
        """The If-Range value: a strong ETag (a weak one is not allowed there, RFC 9110), else Last-Modified."""
        if self.etag and not self.etag.startswith("W/"):
            return self.etag
        return self.last_modified

    def save(self, part: Path) -> None:
        _partial_record(part).write_text(json.dumps(
            {"url": self.url, "etag": self.etag, "last_modified": self.last_modified, "total": self.total}))


# --------------------------------------------------------------------------- helpers


def sha256_file(path: str | os.PathLike, chunk_size: int = CHUNK_SIZE) -> str:
    """Hex SHA-256 digest of a file, computed in streaming fashion."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk_size)
            if not block:
                break
            h.update(block)
    return h.hexdigest()


def is_url(s: str | os.PathLike) -> bool:
    """True for strings of the form ``scheme://...`` (http, https, file, ...)."""
    return isinstance(s, str) and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", s) is not None


def _local_source(url: str | os.PathLike) -> Path | None:
    """Path of a local source (``file://`` URL or plain path), or None for remote URLs."""
    if isinstance(url, os.PathLike):
        return Path(url)
    if not is_url(url):
        return Path(url).expanduser()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() == "file":
        if parts.netloc not in ("", "localhost"):
            raise DownloadError(f"{url}: file:// URLs with a remote host are not supported")
        return Path(urllib.request.url2pathname(parts.path))
    return None


def resolve_mirror(url: str, mirror: str | os.PathLike | None, base_url: str) -> str:
    """Map ``url`` onto ``mirror`` if it lies below ``base_url``.

    ``mirror`` is either a local directory (plain path) or a URL prefix
    (``http://host/path``, ``file:///dir``).  The part of ``url`` after ``base_url`` is
    appended to it unchanged, so the mirror must replicate the upstream layout::

        resolve_mirror("https://object.pouta.csc.fi/OPUS-Tatoeba/v2/moses/de-en.txt.zip",
                       "/data/opus", "https://object.pouta.csc.fi")
        -> "/data/opus/OPUS-Tatoeba/v2/moses/de-en.txt.zip"

    With no mirror configured (None or ""), or for a URL outside ``base_url``, ``url`` is
    returned unchanged.  For a local-directory mirror the relative part is URL-decoded
    (``%20`` -> space) and its query string dropped; ``..`` components are rejected.
    """
    if mirror is None or str(mirror) == "":
        return url
    base = base_url.rstrip("/")
    if url == base or not url.startswith(base + "/"):
        return url
    rel = url[len(base) + 1 :]
    mirror_s = os.fspath(mirror)
    if is_url(mirror_s):
        return mirror_s.rstrip("/") + "/" + rel
    rel_path = urllib.parse.unquote(urllib.parse.urlsplit(rel).path)
    parts = [p for p in rel_path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise DownloadError(f"refusing to map {url!r} into mirror {mirror_s!r}: '..' in path")
    return str(Path(mirror_s).expanduser().joinpath(*parts))


#: Seconds between two states of the progress bar when stderr is not a terminal (a job's log), and before the
#: first: a short download (or one that fails at once) leaves no bar in the log, only its outcome.
LOG_PROGRESS_INTERVAL = 30.0


def _progress_bar(total: int | None, desc: str, enabled: bool, initial: int = 0):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # progress is cosmetic; never fail because of it
        return None
    quiet = {} if sys.stderr.isatty() else {"delay": LOG_PROGRESS_INTERVAL, "mininterval": LOG_PROGRESS_INTERVAL}
    return tqdm(
        **quiet,
        total=total,
        initial=initial,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc=desc,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )


def _copy_stream(src, dst, total: int | None, desc: str, progress: bool,
                 deadline_at: float | None = None, hasher=None, initial: int = 0) -> tuple[int, str]:
    """Copy a binary stream to a binary file; return (bytes copied, sha256 hex).

    ``hasher``: a sha256 object that has already seen the file's first ``initial`` bytes (a resumed
    transfer; the progress bar starts there too); the digest returned is then the whole file's.

    ``deadline_at`` (a :func:`time.monotonic` time): checked after every read; the stream's
    ``read1`` is used when it has one, which returns what one receive brings instead of waiting for
    a full chunk, so a trickle is noticed within one read timeout of the deadline."""
    h = hasher if hasher is not None else hashlib.sha256()
    n = 0
    read = getattr(src, "read1", src.read) if deadline_at is not None else src.read
    bar = _progress_bar(total, desc, progress, initial)
    try:
        while True:
            block = read(CHUNK_SIZE)
            if not block:
                break
            dst.write(block)
            h.update(block)
            n += len(block)
            if bar is not None:
                bar.update(len(block))
            if deadline_at is not None and time.monotonic() > deadline_at:
                raise _DeadlinePassed(n)
    finally:
        if bar is not None:
            bar.close()
    return n, h.hexdigest()


def _normalise_sha(sha256: str | None) -> str | None:
    if sha256 is None:
        return None
    s = sha256.strip().lower()
    if s.startswith("sha256:"):
        s = s[len("sha256:") :]
    if not _HEX64.match(s):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    return s


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except FileNotFoundError:
        pass


def _partial_record(part: Path) -> Path:
    """The JSON record of a ``.part`` file (:class:`_Partial`): ``<dest>.part.json``."""
    return part.with_name(part.name + ".json")


def _discard(part: Path) -> None:
    _unlink(part)
    _unlink(_partial_record(part))


def _leftover(part: Path, url: str, size: int | None, need_validator: bool) -> _Partial | None:
    """The record of the bytes already in ``part`` when they can be resumed from ``url``; otherwise the
    ``.part`` and its record are removed (with a warning naming the reason when there were bytes) and
    None is returned.  ``need_validator``: the bytes may be old (a killed earlier process), so only a
    record with an ETag or Last-Modified is trusted -- the If-Range request then guards against a
    file changed since."""
    have = part.stat().st_size if part.is_file() else 0
    why = None
    if have == 0:
        pass
    elif not _partial_record(part).is_file():
        why = f"no record {_partial_record(part).name} of where it came from"
    else:
        try:
            d = json.loads(_partial_record(part).read_text())
            rec = _Partial(d["url"], d.get("etag"), d.get("last_modified"), d.get("total"))
        except (OSError, ValueError, KeyError, TypeError) as e:
            rec, why = None, f"its record {_partial_record(part).name} is unreadable ({e})"
        if rec is None:
            pass
        elif rec.url != url:
            why = f"it came from another URL ({rec.url})"
        elif need_validator and rec.if_range is None:
            why = "the server gave no ETag / Last-Modified to check that the file is unchanged"
        elif rec.total is not None and have > rec.total:
            why = f"it has {have} bytes, more than the file's {rec.total}"
        elif rec.total is not None and size is not None and rec.total != size:
            why = f"it is part of a {rec.total}-byte file, {size} bytes expected"
        else:
            return rec
    if why is not None:
        log.warning("discarding the partial download %s (%d bytes): %s", part, have, why)
    _discard(part)
    return None


_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", re.IGNORECASE)


def _refuse_resume(resp, rec: _Partial, offset: int, size: int | None) -> tuple[str | None, int | None]:
    """(why the answer to a ``Range: bytes=<offset>-`` request cannot be appended to the first
    ``offset`` bytes -- None when it can --, the file's full size when known)."""
    total = rec.total if rec.total is not None else size
    etag, modified = resp.headers.get("ETag"), resp.headers.get("Last-Modified")
    if resp.status != 206:
        if etag and rec.etag and etag != rec.etag:
            return f"the file changed on the server (ETag {etag}, was {rec.etag}): HTTP {resp.status}", total
        return (f"the server sent the whole file (HTTP {resp.status}): it ignores Range requests, "
                f"or the file changed (If-Range)"), total
    m = _CONTENT_RANGE.match(resp.headers.get("Content-Range") or "")
    if m is None:
        return f"HTTP 206 with an unreadable Content-Range {resp.headers.get('Content-Range')!r}", total
    start, end, whole = int(m[1]), int(m[2]), m[3]
    if start != offset:
        return f"the server sent bytes from {start} on, not {offset} (Content-Range {m[0].strip()!r})", total
    if whole != "*":
        whole = int(whole)
        for known, what in ((rec.total, "the first response's Content-Length"), (size, "the expected size")):
            if known is not None and whole != known:
                return f"Content-Range says the file has {whole} bytes, {what} is {known}", total
        total = whole
    if end < start or (total is not None and end >= total):
        return f"an impossible Content-Range {m[0].strip()!r}", total
    if etag and rec.etag and etag != rec.etag:
        return f"the file changed on the server (ETag {etag}, was {rec.etag})", total
    if modified and rec.last_modified and modified != rec.last_modified:
        return f"the file changed on the server (Last-Modified {modified}, was {rec.last_modified})", total
    return None, total


# --------------------------------------------------------------------------- archive check


_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


def verify_archive(path: str | os.PathLike, name: str | None = None) -> str | None:
    """Check that ``path`` reads as the archive its ``name`` (default: the file name) says.

    ``.zip``: opens, and every member passes its CRC check; tar (:data:`_TAR_SUFFIXES`): every
    entry lists and its data reads to the end; ``.gz`` / ``.bz2`` / ``.xz``: decompresses to the
    end.  Returns the kind checked (``"zip"``, ``"tar"``, ``"gzip"``...) or None for other names;
    raises :class:`CorruptDownloadError` (message: what is wrong, without the URL) otherwise."""
    import bz2
    import gzip
    import lzma
    import tarfile
    import zipfile
    import zlib

    from laser_repro.core.archives import TAR_ERRORS, ZIP_ERRORS

    path = Path(path)
    low = (name or path.name).lower()
    if low.endswith(".zip"):
        try:
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
        except ZIP_ERRORS as e:
            raise CorruptDownloadError(f"not a valid zip archive (truncated or corrupt): {e}") from e
        if bad is not None:
            raise CorruptDownloadError(f"not a valid zip archive: member {bad!r} fails its CRC check")
        return "zip"
    if low.endswith(_TAR_SUFFIXES):
        entries = 0
        try:
            with tarfile.open(path, mode="r|*") as tf:
                for info in tf:
                    entries += 1
                    if info.isfile():
                        tf.extractfile(info).read()  # streams the compressed data through its checks
        except TAR_ERRORS as e:
            raise CorruptDownloadError(f"not a valid tar archive (truncated or corrupt after {entries} "
                                       f"entries): {e}") from e
        if entries == 0:
            raise CorruptDownloadError("not a valid tar archive: it has no entries")
        return "tar"
    openers = {".gz": ("gzip", gzip.open), ".bz2": ("bzip2", bz2.open), ".xz": ("xz", lzma.open)}
    for suffix, (kind, opener) in openers.items():
        if low.endswith(suffix):
            try:
                with opener(path, "rb") as f:
                    while f.read(CHUNK_SIZE):
                        pass
            except (OSError, EOFError, zlib.error, lzma.LZMAError) as e:
                raise CorruptDownloadError(f"not a valid {kind} file (truncated or corrupt): {e}") from e
            return kind
    return None


# --------------------------------------------------------------------------- attempts


def _attempt_local(src: Path, part: Path, url: str, progress: bool, desc: str) -> tuple[int, str]:
    if not src.exists():
        raise NotFoundError(f"{url}: local source file does not exist ({src})")
    if not src.is_file():
        raise DownloadError(f"{url}: local source is not a regular file ({src})")
    total = src.stat().st_size
    with open(src, "rb") as fin, open(part, "wb") as fout:
        n, digest = _copy_stream(fin, fout, total, desc, progress)
        fout.flush()
        os.fsync(fout.fileno())
    if n != total:
        raise DownloadError(f"{url}: copied {n} bytes but the source has {total} (file changed while copying?)")
    return n, digest


def _http_open(url: str, timeout: float, headers: dict | None = None):
    """``urlopen`` with the download's headers (and ``headers``); HTTP errors become _Retryable,
    NotFoundError or DownloadError, except a 416 to a Range request, which returns None."""
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept-Encoding": "identity",
                                               **(headers or {})})
    try:
        return urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        e.close()
        if e.code == 416 and headers and "Range" in headers:
            return None
        if e.code >= 500 or e.code in RETRY_STATUS:
            raise _Retryable(f"HTTP {e.code} {e.reason}") from e
        if e.code == 404:
            raise NotFoundError(
                f"{url}: HTTP 404 Not Found - the file does not exist on the server "
                f"(check corpus name, version and language pair, or the mirror setting)"
            ) from e
        raise DownloadError(f"{url}: HTTP {e.code} {e.reason} - the server refuses the file: check the URL, or "
                            f"use a mirror") from e
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        reason = getattr(e, "reason", e)
        raise _Retryable(f"connection failed: {reason}") from e


def _attempt_http(url: str, part: Path, timeout: float, progress: bool, desc: str,
                  deadline: float | None = None, resume: _Partial | None = None,
                  size: int | None = None) -> tuple[int, str, int | None, str | None, int]:
    """One HTTP(S) attempt; returns (bytes of the file, its sha256, its full size when the server said
    it, content_type, the byte it resumed at -- 0 for a whole transfer). ``resume``: the record of the
    bytes already in ``part``, continued with a Range request (see the module docstring). Raises
    _Retryable, DeadlineExceededError or DownloadError; ``part`` keeps what arrived."""
    started = time.monotonic()
    deadline_at = started + deadline if deadline is not None else None
    offset = part.stat().st_size if resume is not None and part.is_file() else 0
    resp = None
    hasher = hashlib.sha256()
    if offset > 0:
        # the digest covers the whole file, the bytes kept included; hashed before the request, which
        # then does not sit idle while a large prefix is read
        with open(part, "rb") as f:
            while block := f.read(CHUNK_SIZE):
                hasher.update(block)
        headers = {"Range": f"bytes={offset}-"}
        if resume.if_range is not None:
            headers["If-Range"] = resume.if_range
        resp = _http_open(url, timeout, headers)
        why, total = ("the server cannot serve that range (HTTP 416)", None) if resp is None else \
            _refuse_resume(resp, resume, offset, size)
        if why is not None:
            log.warning("%s: cannot resume at byte %d: %s; downloading it from byte 0", url, offset, why)
            offset, hasher = 0, hashlib.sha256()
            if resp is not None and resp.status == 206:
                resp.close()  # a range we cannot use: ask again for the whole file
                resp = None
    if resp is None:
        resp = _http_open(url, timeout)

    with resp:
        cl_header = resp.headers.get("Content-Length")
        content_type = resp.headers.get("Content-Type")
        try:
            content_length = int(cl_header) if cl_header is not None else None
        except ValueError:
            content_length = None
        if offset > 0:
            log.info("%s: resuming at byte %d of %s", url, offset, total if total is not None else "?")
        else:
            total = content_length
            # recorded before the first byte: a process killed mid-body leaves a .part that can be resumed
            _Partial.from_response(url, resp.headers, total).save(part)
        try:
            with open(part, "ab" if offset > 0 else "wb") as fout:
                n, digest = _copy_stream(resp, fout, total, desc, progress, deadline_at, hasher, offset)
                fout.flush()
                os.fsync(fout.fileno())
        except _DeadlinePassed as e:
            of = f" of {total}" if total is not None else ""
            raise DeadlineExceededError(
                f"{url}: the download took longer than its deadline of {deadline:g} s "
                f"({offset + e.args[0]}{of} bytes in {time.monotonic() - started:.0f} s); not retried: the server "
                f"is too slow. Use a mirror, or raise the deadline (fetch --deadline, config opus.deadline_s / "
                f"evaluation.deadline_s)") from None
        except (OSError, http.client.HTTPException) as e:
            # socket errors, timeouts (TimeoutError is an OSError), IncompleteRead, ...
            # A local disk-full error is also an OSError; it will fail again on retry and
            # then be reported with its message, which is acceptable.
            raise _Retryable(f"transfer interrupted: {e!r}") from e
    if content_length is not None and n != content_length:
        raise _Retryable(f"truncated transfer: received {offset + n} of {offset + content_length} bytes "
                         f"(Content-Length)")
    if total is not None and offset + n != total:  # a 206 may stop short of the end
        raise _Retryable(f"truncated transfer: received {offset + n} of {total} bytes (Content-Range)")
    return offset + n, digest, total, content_type, offset


_DOCTYPE_HTML = re.compile(rb"<!doctype\s+html[\s>]")
_HTML_TAG = re.compile(rb"<html[\s>]")
_HTML_PARTS = re.compile(rb"<(head|body|title)[\s>]|</html>")


def _looks_like_html(head: bytes) -> bool:
    """The first bytes of a file are those of an HTML page: ``<!DOCTYPE html``, or ``<html`` with a
    ``<head>`` / ``<body>`` / ``<title>`` / ``</html>`` after it (data that merely starts with the word
    "<html>" is not one)."""
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip().lower()
    return bool(_DOCTYPE_HTML.match(text) or (_HTML_TAG.match(text) and _HTML_PARTS.search(text)))


def check_not_html(path: str | os.PathLike, content_type: str | None = None, name: str | None = None) -> None:
    """Raise :class:`CorruptDownloadError` when a download meant as data is an HTML page: the server
    said ``text/html`` (``content_type``), or the file starts as an HTML page does
    (:func:`_looks_like_html`). Files named
    ``.html`` / ``.htm`` (``name``, default: the file name) are not checked."""
    path = Path(path)
    if (name or path.name).lower().endswith((".html", ".htm")):
        return
    media = (content_type or "").split(";")[0].strip().lower()
    if media in ("text/html", "application/xhtml+xml"):
        raise CorruptDownloadError(f"an HTML page (the server sent Content-Type {content_type!r}), "
                                   f"not the data file: an error, login or moved-page answer")
    with open(path, "rb") as f:
        head = f.read(512)
    if _looks_like_html(head):
        raise CorruptDownloadError(f"an HTML page (it starts with {head.lstrip()[:40]!r}), not the data file: "
                                   f"an error, login or moved-page answer")


# --------------------------------------------------------------------------- public API


def fetch_with_record(
    url: str | os.PathLike,
    dest: str | os.PathLike,
    *,
    sha256: str | None = None,
    size: int | None = None,
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 60,
    deadline: float | None = DEFAULT_DEADLINE,
    verify_as: str | None = None,
    progress: bool = True,
) -> dict:
    """Download ``url`` (http/https/file URL or local path) to ``dest``; return a provenance record
    for logging::

        {"url": str, "dest": str, "sha256": str, "bytes": int,
         "skipped": bool,   # True when an existing dest matched ``sha256``
         "attempts": int,   # 0 when skipped
         "resumed_at": int, # the byte the last (successful) request started at; 0: the whole file
         "seconds": float}

    ``retries`` is the number of *additional* attempts after the first one for transient
    failures (so at most ``retries + 1`` requests); the k-th retry waits
    ``backoff * 2**(k-1)`` seconds (capped at :data:`MAX_BACKOFF`).  ``timeout`` is the
    socket timeout in seconds (each read), ``deadline`` the total seconds one HTTP attempt may
    take (None: no limit); ``verify_as`` the file name whose suffix says what the file is (default: the
    name of ``dest``; an OPUS zip saved under another name).  See the module docstring for the verification and
    cleanup guarantees.  Raises :class:`DownloadError` (or its subclass
    :class:`ChecksumMismatchError`).
    """
    t0 = time.monotonic()
    url_s = os.fspath(url)
    dest = Path(dest)
    want_sha = _normalise_sha(sha256)
    if retries < 0:
        raise ValueError("retries must be >= 0")
    if deadline is not None and deadline <= 0:
        raise ValueError("deadline must be > 0 seconds (or None)")

    if dest.exists():
        if want_sha is not None and dest.is_file():
            have = sha256_file(dest)
            nbytes = dest.stat().st_size
            if have == want_sha and (size is None or nbytes == size):
                log.info("%s already present with the expected SHA-256; skipping download", dest)
                _discard(dest.with_suffix(dest.suffix + ".part"))
                return {"url": url_s, "dest": str(dest), "sha256": have, "bytes": nbytes,
                        "skipped": True, "attempts": 0, "resumed_at": 0, "seconds": time.monotonic() - t0}
            log.warning("%s exists but does not match the expected SHA-256; downloading again", dest)
        elif dest.is_dir():
            raise DownloadError(f"destination {dest} is a directory")
        # Unverifiable or wrong: remove so that a failure below leaves nothing behind.
        _unlink(dest)

    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_suffix(dest.suffix + ".part")
    desc = dest.name
    attempts = 0
    content_type = None
    resumed_at = 0
    try:
        local = _local_source(url)
        if local is not None:
            _discard(part)
            attempts = 1
            nbytes, digest = _attempt_local(local, part, url_s, progress, desc)
        else:
            scheme = urllib.parse.urlsplit(url_s).scheme.lower()
            if scheme not in ("http", "https"):
                raise DownloadError(f"{url_s}: unsupported URL scheme {scheme!r}")
            # a .part left by an earlier process (killed, preempted): resumed if its record is coherent
            resume = _leftover(part, url_s, size, need_validator=True)
            while True:
                attempts += 1
                try:
                    nbytes, digest, content_length, content_type, resumed_at = _attempt_http(
                        url_s, part, timeout, progress, desc, deadline, resume, size)
                    if size is not None and nbytes < size and content_length is None:
                        # No Content-Length: a short body may be a dropped connection.
                        raise _Retryable(f"truncated transfer: received {nbytes} of {size} expected bytes")
                    break
                except _Retryable as e:
                    # keep the bytes that arrived: the next attempt asks for the rest
                    resume = _leftover(part, url_s, size, need_validator=False)
                    if attempts > retries:
                        raise DownloadError(
                            f"{url_s}: giving up after {attempts} attempt(s); last error: {e}. The server or the "
                            f"network failed each time: rerun later, allow more attempts (fetch --retries, config "
                            f"opus.retries / evaluation.retries) or use a mirror (config opus.mirror / "
                            f"evaluation.mirror)"
                        ) from e
                    delay = min(backoff * (2 ** (attempts - 1)), MAX_BACKOFF)
                    log.warning("download of %s failed (attempt %d/%d): %s; retrying in %.1fs",
                                url_s, attempts, retries + 1, e, delay)
                    if delay > 0:
                        time.sleep(delay)

        if size is not None and nbytes != size:
            raise DownloadError(f"{url_s}: size mismatch: expected {size} bytes, got {nbytes}")
        try:  # before the rename: a broken archive or an HTML page must not be cached (the next run would reuse it)
            # an HTML page (a login, error or moved page) is named as one, not only as a wrong checksum or archive
            if want_sha is not None and digest != want_sha:
                check_not_html(part, content_type, verify_as or dest.name)
                raise ChecksumMismatchError(url_s, want_sha, digest, nbytes, resumed_at)
            try:
                kind = verify_archive(part, verify_as or dest.name)
            except CorruptDownloadError:
                check_not_html(part, content_type, verify_as or dest.name)
                raise
            if kind is None:
                check_not_html(part, content_type, verify_as or dest.name)
        except CorruptDownloadError as e:
            raise CorruptDownloadError(
                f"{url_s}: the downloaded file ({nbytes} bytes) is {e}; nothing was saved at {dest}. "
                f"The copy on the server or mirror is broken: fix it (or the URL) and rerun") from e
        os.replace(part, dest)
        _unlink(_partial_record(part))
    except Exception:
        # a failed download leaves nothing; an interrupted one (KeyboardInterrupt, SystemExit: not an
        # Exception) keeps its .part and record for the next run to resume
        _discard(part)
        raise
    log.info("fetched %s -> %s (%d bytes, sha256 %s%s)", url_s, dest, nbytes, digest,
             f", resumed at byte {resumed_at}" if resumed_at else "")
    return {"url": url_s, "dest": str(dest), "sha256": digest, "bytes": nbytes, "skipped": False,
            "attempts": attempts, "resumed_at": resumed_at, "seconds": time.monotonic() - t0}


def fetch(url: str | os.PathLike, dest: str | os.PathLike, **options) -> Path:
    """Download ``url`` (http/https/file URL or local path) to ``dest`` and return ``dest``.

    ``options``: those of :func:`fetch_with_record` (``sha256``, ``size``, ``retries``, ``backoff``,
    ``timeout``, ``progress``), which does the work."""
    return Path(fetch_with_record(url, dest, **options)["dest"])


def fetch_first(urls: Sequence[str | os.PathLike], dest: str | os.PathLike, **options) -> dict:
    """Download the first of ``urls`` that works (alternative hosts of one file, in order of preference)
    to ``dest``, each with the retries and checks of :func:`fetch_with_record`; return that one's record
    with ``"failed"``: ``[{"url", "error"}]`` of those tried before it.  Any failure moves on to the next
    URL, a checksum mismatch too (a host may serve another release); when all fail, the
    :class:`DownloadError` lists every URL with its error (a :class:`NotFoundError` when all were 404)."""
    if not urls:
        raise ValueError("fetch_first: no URL given")
    failed, errors = [], []
    for url in urls:
        try:
            record = fetch_with_record(url, dest, **options)
        except DownloadError as e:
            failed.append({"url": os.fspath(url), "error": str(e)})
            errors.append(e)
            if len(urls) > 1:
                log.warning("%s failed (%s); %s", url, e,
                            "trying the next alternative" if len(failed) < len(urls) else "no alternative left")
            continue
        record["failed"] = failed
        return record
    if len(urls) == 1:
        raise errors[0]
    listing = "; ".join(f"[{i + 1}] {f['error']}" for i, f in enumerate(failed))
    kind = NotFoundError if all(isinstance(e, NotFoundError) for e in errors) else DownloadError
    raise kind(f"{dest}: none of the {len(urls)} alternative URLs worked: {listing}")


def url_exists(url: str | os.PathLike, *, retries: int = 2, backoff: float = 2.0, timeout: float = 60) -> bool:
    """Whether ``url`` (http/https/file URL or local path) names an existing file, without downloading
    it: a HEAD request (a GET, closed at once, where HEAD is refused). HTTP 404 / 410 -> False;
    transient errors are retried as in :func:`fetch_with_record`; any other failure raises
    :class:`DownloadError`."""
    local = _local_source(url)
    if local is not None:
        return local.is_file()
    url_s = os.fspath(url)
    attempts = 0
    method = "HEAD"
    while True:
        attempts += 1
        req = urllib.request.Request(url_s, method=method, headers={"User-Agent": USER_AGENT})
        try:
            with urllib.request.urlopen(req, timeout=timeout):
                return True
        except urllib.error.HTTPError as e:
            e.close()
            if e.code in (404, 410):
                return False
            if e.code in (405, 501) and method == "HEAD":
                method, attempts = "GET", attempts - 1
                continue
            if not (e.code >= 500 or e.code in RETRY_STATUS):
                raise DownloadError(f"{url_s}: HTTP {e.code} {e.reason}") from e
            error = f"HTTP {e.code} {e.reason}"
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            error = f"connection failed: {getattr(e, 'reason', e)}"
        if attempts > retries:
            raise DownloadError(f"{url_s}: cannot tell whether it exists after {attempts} attempt(s): {error}")
        time.sleep(min(backoff * (2 ** (attempts - 1)), MAX_BACKOFF))


def join_parts(parts: Sequence[str | os.PathLike], dest: str | os.PathLike, *, sha256: str | None = None) -> Path:
    """An archive published in parts (the UN corpus's ``UNv1.0.6way.tar.gz.00`` .. ``.03``): the
    downloaded parts concatenated in order into ``dest``, which appears only once the whole reads as
    the archive its name says (and has ``sha256``, when given)."""
    import shutil

    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".joining")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(tmp, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, CHUNK_SIZE)
        try:
            verify_archive(tmp, dest.name)
        except CorruptDownloadError as e:
            raise CorruptDownloadError(f"{dest} joined from {', '.join(map(str, parts))}: {e}") from None
        expected = _normalise_sha(sha256)
        if expected:
            got = sha256_file(tmp)
            if got != expected:
                raise CorruptDownloadError(f"{dest} joined from {len(parts)} parts: sha256 {got}, expected {expected}")
        os.replace(tmp, dest)
    finally:
        _unlink(tmp)
    return dest


def cmd_join_parts(a) -> None:
    log.info("joined %s", join_parts(a.parts, a.output, sha256=a.sha256))


def add_cli(sub) -> None:
    s = sub.add_parser("join-parts", help="concatenate a downloaded multi-part archive and verify it")
    s.add_argument("--parts", nargs="+", required=True, help="the parts, in order")
    s.add_argument("--output", required=True)
    s.add_argument("--sha256", help="of the joined archive")
    s.set_defaults(func=cmd_join_parts)
