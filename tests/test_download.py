"""Tests for laser_repro.core.download, against a real HTTP server on 127.0.0.1 (port 0)."""

from __future__ import annotations

import hashlib
import re
import http.server
import socket
import threading
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from laser_repro.data.corpora import extract_opus_moses, opus_moses_url
from laser_repro.core.download import (
    ChecksumMismatchError,
    DownloadError,
    fetch,
    fetch_with_record,
    resolve_mirror,
    sha256_file,
)

FAST = dict(backoff=0.01, timeout=5, progress=False)


class _Server:
    def __init__(self, root: Path):
        self.root = root
        self.hits: Counter[str] = Counter()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.httpd: http.server.ThreadingHTTPServer | None = None
        self.url = ""


@pytest.fixture
def server(tmp_path):
    """Serves tmp_path/'srv' under several behaviours:

    /files/NAME     the file (404 when absent)
    /flaky/NAME     503 for the first 2 requests of that path, then the file
    /short/NAME     Content-Length larger than the body, then the connection closes
    /nolength/NAME  the file without a Content-Length header
    /error500/NAME  always 500
    /stall/NAME     headers + half the body, then hangs until teardown
    /trickle/NAME   headers, then one byte every 0.05 s (never a read timeout)
    /html/NAME      an HTML page with status 200 (Content-Type text/html), whatever NAME
    /htmlbody/NAME  the same page sent as text/plain
    """
    root = tmp_path / "srv"
    root.mkdir()
    state = _Server(root)

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_GET(self):
            with state.lock:
                state.hits[self.path] += 1
                count = state.hits[self.path]
            parts = self.path.lstrip("/").split("/", 1)
            if len(parts) != 2:
                self.send_error(404)
                return
            mode, name = parts
            f = root / name
            if mode == "error500":
                self.send_error(500, "Internal Server Error")
                return
            if mode in ("html", "htmlbody"):
                page = b"<!DOCTYPE html>\n<html><head><title>Moved</title></head><body>gone</body></html>\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8" if mode == "html" else "text/plain")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                return
            if mode == "flaky" and count <= 2:
                self.send_error(503, "Service Unavailable")
                return
            if not f.is_file():
                self.send_error(404, "Not Found")
                return
            body = f.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            if mode == "short":
                self.send_header("Content-Length", str(len(body) + 1000))
            elif mode != "nolength":
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if mode == "trickle":
                for i in range(len(body)):
                    if state.release.wait(0.05):
                        return
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                return
            if mode == "stall":
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                state.release.wait(10)
                return
            if mode == "nolength" and count <= 1 and name.startswith("cut"):
                self.wfile.write(body[: len(body) // 2])
                return
            self.wfile.write(body)
            self.close_connection = True

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.httpd = httpd
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        t.join(5)


def _payload(root: Path, name: str = "data.bin", n: int = 300_000) -> tuple[Path, bytes, str]:
    data = hashlib.sha256(name.encode()).digest() * (n // 32)
    p = root / name
    p.write_bytes(data)
    return p, data, hashlib.sha256(data).hexdigest()


def _no_leftovers(dest: Path) -> None:
    assert not dest.exists()
    assert not dest.with_suffix(dest.suffix + ".part").exists()
    assert not dest.with_suffix(dest.suffix + ".part.json").exists()  # the .part's record


# --------------------------------------------------------------------------- HTTP


def test_http_download_verified(server, tmp_path):
    _, data, digest = _payload(server.root)
    dest = tmp_path / "out" / "data.bin"
    got = fetch(f"{server.url}/files/data.bin", dest, sha256=digest, size=len(data), **FAST)
    assert got == dest
    assert dest.read_bytes() == data
    assert not dest.with_suffix(".bin.part").exists()
    assert sha256_file(dest) == digest


def test_progress_bar_goes_to_stderr(server, tmp_path, capsys):
    _, data, _ = _payload(server.root)
    dest = tmp_path / "d.bin"
    fetch(f"{server.url}/files/data.bin", dest, backoff=0.01, progress=True)
    assert dest.read_bytes() == data
    assert capsys.readouterr().out == ""


def test_skip_when_existing_checksum_matches(server, tmp_path):
    _, data, digest = _payload(server.root)
    dest = tmp_path / "data.bin"
    url = f"{server.url}/files/data.bin"
    rec1 = fetch_with_record(url, dest, sha256=digest, **FAST)
    assert rec1["skipped"] is False and rec1["attempts"] == 1
    rec2 = fetch_with_record(url, dest, sha256=digest.upper(), **FAST)
    assert rec2["skipped"] is True and rec2["attempts"] == 0
    assert rec2["sha256"] == digest and rec2["bytes"] == len(data)
    assert server.hits["/files/data.bin"] == 1


def test_existing_dest_with_wrong_content_is_replaced(server, tmp_path):
    _, data, digest = _payload(server.root)
    dest = tmp_path / "data.bin"
    dest.write_bytes(b"stale")
    fetch(f"{server.url}/files/data.bin", dest, sha256=digest, **FAST)
    assert dest.read_bytes() == data
    dest.write_bytes(b"stale again")
    fetch(f"{server.url}/files/data.bin", dest, **FAST)  # no checksum: always re-downloaded
    assert dest.read_bytes() == data


def test_retry_after_two_503(server, tmp_path):
    _, data, digest = _payload(server.root)
    dest = tmp_path / "data.bin"
    rec = fetch_with_record(f"{server.url}/flaky/data.bin", dest, sha256=digest, retries=3, **FAST)
    assert server.hits["/flaky/data.bin"] == 3
    assert rec["attempts"] == 3
    assert dest.read_bytes() == data


def test_503_exhausting_retries_fails(server, tmp_path):
    _payload(server.root)
    dest = tmp_path / "data.bin"
    with pytest.raises(DownloadError, match=r"503.*") as ei:
        fetch(f"{server.url}/flaky/data.bin", dest, retries=1, **FAST)
    assert "giving up after 2 attempt" in str(ei.value)
    assert server.hits["/flaky/data.bin"] == 2
    _no_leftovers(dest)


def test_persistent_500_is_retried_then_fails(server, tmp_path):
    dest = tmp_path / "x.bin"
    with pytest.raises(DownloadError, match="HTTP 500"):
        fetch(f"{server.url}/error500/x.bin", dest, retries=2, **FAST)
    assert server.hits["/error500/x.bin"] == 3
    _no_leftovers(dest)


def test_truncated_transfer_is_retried_then_fails(server, tmp_path):
    _, data, _ = _payload(server.root)
    dest = tmp_path / "data.bin"
    with pytest.raises(DownloadError) as ei:
        fetch(f"{server.url}/short/data.bin", dest, retries=2, **FAST)
    msg = str(ei.value)
    assert "truncated" in msg and f"received {len(data)} of {len(data) + 1000} bytes" in msg
    assert f"{server.url}/short/data.bin" in msg
    assert server.hits["/short/data.bin"] == 3
    _no_leftovers(dest)


def test_short_body_without_content_length_is_caught_by_size(server, tmp_path):
    # First response is cut in half and has no Content-Length; `size` reveals the truncation.
    _, data, digest = _payload(server.root, "cut.bin")
    dest = tmp_path / "cut.bin"
    rec = fetch_with_record(f"{server.url}/nolength/cut.bin", dest, size=len(data), sha256=digest, **FAST)
    assert rec["attempts"] == 2
    assert dest.read_bytes() == data


def test_404_fails_immediately(server, tmp_path):
    dest = tmp_path / "nope.zip"
    with pytest.raises(DownloadError, match="404") as ei:
        fetch(f"{server.url}/files/nope.zip", dest, retries=5, backoff=10, timeout=5, progress=False)
    assert f"{server.url}/files/nope.zip" in str(ei.value)
    assert server.hits["/files/nope.zip"] == 1
    _no_leftovers(dest)


def test_checksum_mismatch_leaves_no_dest_and_is_not_retried(server, tmp_path):
    _, data, digest = _payload(server.root)
    wrong = "0" * 64
    dest = tmp_path / "data.bin"
    url = f"{server.url}/files/data.bin"
    with pytest.raises(ChecksumMismatchError) as ei:
        fetch(url, dest, sha256=wrong, retries=3, **FAST)
    msg = str(ei.value)
    assert url in msg and wrong in msg and digest in msg
    assert server.hits["/files/data.bin"] == 1
    _no_leftovers(dest)


def test_checksum_mismatch_removes_stale_dest(server, tmp_path):
    _payload(server.root)
    dest = tmp_path / "data.bin"
    dest.write_bytes(b"old")
    with pytest.raises(ChecksumMismatchError):
        fetch(f"{server.url}/files/data.bin", dest, sha256="1" * 64, **FAST)
    _no_leftovers(dest)


def test_size_mismatch(server, tmp_path):
    _, data, _ = _payload(server.root)
    dest = tmp_path / "data.bin"
    with pytest.raises(DownloadError, match=f"expected {len(data) - 1} bytes, got {len(data)}"):
        fetch(f"{server.url}/files/data.bin", dest, size=len(data) - 1, **FAST)
    _no_leftovers(dest)


def test_read_timeout_is_retried(server, tmp_path):
    _payload(server.root)
    dest = tmp_path / "data.bin"
    with pytest.raises(DownloadError, match="giving up after 2 attempt"):
        fetch(f"{server.url}/stall/data.bin", dest, retries=1, backoff=0.01, timeout=0.3, progress=False)
    assert server.hits["/stall/data.bin"] == 2
    _no_leftovers(dest)


def test_connection_refused_is_retried(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there any more
    dest = tmp_path / "x"
    with pytest.raises(DownloadError, match="giving up after 3 attempt.*connection failed"):
        fetch(f"http://127.0.0.1:{port}/x", dest, retries=2, **FAST)
    _no_leftovers(dest)


def test_unsupported_scheme(tmp_path):
    with pytest.raises(DownloadError, match="unsupported URL scheme"):
        fetch("ftp://example.org/x", tmp_path / "x", **FAST)


def test_bad_sha_argument(tmp_path):
    with pytest.raises(ValueError):
        fetch("/nonexistent", tmp_path / "x", sha256="abc", **FAST)


# --------------------------------------------------------------------------- local sources


def test_local_path_and_file_url(tmp_path):
    src, data, digest = _payload(tmp_path)
    d1 = fetch(src, tmp_path / "a" / "copy1.bin", sha256=digest, **FAST)
    d2 = fetch(src.as_uri(), tmp_path / "a" / "copy2.bin", sha256=digest, **FAST)
    d3 = fetch(str(src), tmp_path / "a" / "copy3", **FAST)
    for d in (d1, d2, d3):
        assert d.read_bytes() == data
    rec = fetch_with_record(src.as_uri(), tmp_path / "a" / "copy4.bin", **FAST)
    assert rec == {**rec, "url": src.as_uri(), "sha256": digest, "bytes": len(data), "skipped": False}


def test_local_missing_source(tmp_path):
    dest = tmp_path / "d.bin"
    with pytest.raises(DownloadError, match="does not exist"):
        fetch(tmp_path / "missing.bin", dest, **FAST)
    _no_leftovers(dest)


def test_local_checksum_mismatch(tmp_path):
    src, _, _ = _payload(tmp_path)
    dest = tmp_path / "d.bin"
    with pytest.raises(ChecksumMismatchError):
        fetch(src, dest, sha256="f" * 64, **FAST)
    _no_leftovers(dest)


def test_sha256_file(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"hello\n" * 100_000)
    assert sha256_file(p) == hashlib.sha256(b"hello\n" * 100_000).hexdigest()


# --------------------------------------------------------------------------- mirrors

BASE = "https://object.pouta.csc.fi"


def test_resolve_mirror_variants(tmp_path):
    url = f"{BASE}/OPUS-Tatoeba/v2/moses/de-en.txt.zip"
    assert resolve_mirror(url, None, BASE) == url
    assert resolve_mirror(url, "", BASE) == url
    assert resolve_mirror(url, str(tmp_path), BASE) == str(tmp_path / "OPUS-Tatoeba/v2/moses/de-en.txt.zip")
    assert resolve_mirror(url, tmp_path, BASE + "/") == str(tmp_path / "OPUS-Tatoeba/v2/moses/de-en.txt.zip")
    assert resolve_mirror(url, "http://127.0.0.1:1/m/", BASE) == "http://127.0.0.1:1/m/OPUS-Tatoeba/v2/moses/de-en.txt.zip"
    assert resolve_mirror(url, "file:///srv/m", BASE) == "file:///srv/m/OPUS-Tatoeba/v2/moses/de-en.txt.zip"
    other = "https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz"
    assert resolve_mirror(other, str(tmp_path), BASE) == other
    # prefix must match on a path boundary
    assert resolve_mirror(BASE + "x/file", str(tmp_path), BASE) == BASE + "x/file"
    with pytest.raises(DownloadError, match=r"\.\."):
        resolve_mirror(f"{BASE}/../etc/passwd", str(tmp_path), BASE)


def _opus_zip(path: Path, corpus: str, l1: str, l2: str, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{corpus}.{l1}-{l2}.{l1}", "".join(f"{l1} sentence {i}\n" for i in range(n)))
        zf.writestr(f"{corpus}.{l1}-{l2}.{l2}", "".join(f"{l2} sentence {i}\n" for i in range(n)))
        zf.writestr("README", "readme\n")
        zf.writestr("LICENSE", "license\n")


@pytest.mark.parametrize("via", ["directory", "http"])
def test_fetch_through_opus_mirror(server, tmp_path, via):
    # Mirror with the OPUS object-store layout OPUS-{corpus}/{version}/moses/{pair}.txt.zip
    mirror_dir = server.root / "opus-mirror"
    zpath = mirror_dir / "OPUS-Tatoeba" / "v2023-04-12" / "moses" / "de-en.txt.zip"
    _opus_zip(zpath, "Tatoeba", "de", "en", 7)
    digest = sha256_file(zpath)
    url = opus_moses_url("Tatoeba", "v2023-04-12", "en", "de", base_url=BASE)
    assert url == f"{BASE}/OPUS-Tatoeba/v2023-04-12/moses/de-en.txt.zip"
    mirror = str(mirror_dir) if via == "directory" else f"{server.url}/files/opus-mirror"
    resolved = resolve_mirror(url, mirror, BASE)
    dest = fetch(resolved, tmp_path / "dl" / "de-en.txt.zip", sha256=digest, **FAST)
    stats = extract_opus_moses(dest, "Tatoeba", "en", "de", tmp_path / "t.en", tmp_path / "t.de", progress=False)
    assert stats["written"] == 7
    assert (tmp_path / "t.en").read_text().splitlines()[3] == "en sentence 3"
    assert (tmp_path / "t.de").read_text().splitlines()[3] == "de sentence 3"
    if via == "http":
        assert server.hits["/files/opus-mirror/OPUS-Tatoeba/v2023-04-12/moses/de-en.txt.zip"] == 1


def test_missing_file_in_mirror_directory(tmp_path):
    url = opus_moses_url("Tatoeba", "v1", "fr", "en", base_url=BASE)
    resolved = resolve_mirror(url, str(tmp_path / "mirror"), BASE)
    with pytest.raises(DownloadError, match="does not exist"):
        fetch(resolved, tmp_path / "x.zip", **FAST)
    _no_leftovers(tmp_path / "x.zip")


def test_cli_fetch_404_is_an_error_unless_absent_pairs_allowed(server, tmp_path):
    import zipfile

    from laser_repro import cli
    from laser_repro.data.corpora import absent_pair_url

    url = f"{server.url}/files/en-kzj.txt.zip"
    dest = tmp_path / "en-kzj.txt.zip"
    with pytest.raises(DownloadError, match="404"):
        cli.main(["--debug", "fetch", "--url", url, "--dest", str(dest), "--retries", "0"])
    assert not dest.exists()
    cli.main(["fetch", "--url", url, "--dest", str(dest), "--retries", "0", "--absent-ok"])
    with zipfile.ZipFile(dest) as zf:
        assert absent_pair_url(zf).startswith(url)


def test_cli_fetch_file_missing_from_mirror_directory_counts_as_absent(tmp_path):
    from laser_repro import cli
    from laser_repro.data.corpora import absent_pair_url
    from laser_repro.core.download import NotFoundError

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    url = opus_moses_url("Tatoeba", "v1", "kzj", "en", base_url=BASE)
    dest = tmp_path / "res" / "en-kzj.txt.zip"
    argv = ["fetch", "--url", url, "--dest", str(dest), "--retries", "0", "--mirror", str(mirror), "--base-url", BASE]
    with pytest.raises(NotFoundError, match="does not exist"):
        cli.main(["--debug", *argv])
    assert not dest.exists()
    cli.main(argv + ["--absent-ok"])
    with zipfile.ZipFile(dest) as zf:
        reason = absent_pair_url(zf)
    assert reason.startswith(str(mirror)) and "mirror" in reason
    # a mirror directory that does not exist at all is a configuration error, not an absent pair
    dest.unlink()
    bad = ["fetch", "--url", url, "--dest", str(dest), "--mirror", str(tmp_path / "nope"), "--base-url", BASE]
    with pytest.raises(DownloadError, match=r"mirror directory .*nope.* does not exist"):
        cli.main(["--debug", *bad, "--absent-ok"])
    assert not dest.exists()


@pytest.mark.parametrize("via", ["directory", "http"])
def test_archive_that_does_not_open_is_not_kept(server, tmp_path, via):
    zpath = server.root / "de-en.txt.zip"
    _opus_zip(zpath, "Tatoeba", "de", "en", 50)
    good = zpath.read_bytes()
    zpath.write_bytes(good[: len(good) // 2])  # a truncated copy on the mirror
    url = str(zpath) if via == "directory" else f"{server.url}/files/de-en.txt.zip"
    dest = tmp_path / "resources" / "de-en.txt.zip"
    with pytest.raises(DownloadError, match="not a valid zip archive") as ei:
        fetch(url, dest, retries=0, **FAST)
    assert url in str(ei.value) and str(dest) in str(ei.value)
    _no_leftovers(dest)
    zpath.write_bytes(good)  # the mirror is fixed: the next fetch succeeds
    assert fetch(url, dest, retries=0, **FAST) == dest
    with zipfile.ZipFile(dest) as zf:
        assert zf.testzip() is None


def test_tarball_and_gzip_are_verified_before_commit(tmp_path):
    import gzip
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = bytes(range(256)) * 4000
        info = tarfile.TarInfo("flores200_dataset/dev/x.dev")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    blob = buf.getvalue()
    src = tmp_path / "archive.tar.gz"
    src.write_bytes(blob[: len(blob) - 200])
    dest = tmp_path / "res" / "archive.tar.gz"
    with pytest.raises(DownloadError, match="not a valid tar archive"):
        fetch(src, dest, **FAST)
    _no_leftovers(dest)
    src.write_bytes(blob)
    fetch(src, dest, **FAST)
    assert dest.read_bytes() == blob
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(b"hello\n" * 1000)[:-30])
    with pytest.raises(DownloadError, match="gzip"):
        fetch(gz, tmp_path / "res" / "t.txt.gz", **FAST)
    _no_leftovers(tmp_path / "res" / "t.txt.gz")


# --------------------------------------------------------------------------- deadline, HTML, alternatives


def test_trickling_server_hits_the_deadline_and_is_not_retried(server, tmp_path):
    import time

    _payload(server.root, n=3200)
    dest = tmp_path / "data.bin"
    t0 = time.monotonic()
    with pytest.raises(DownloadError, match=r"longer than its deadline of 0\.5 s .*deadline") as ei:
        fetch(f"{server.url}/trickle/data.bin", dest, retries=3, backoff=0.01, timeout=5, deadline=0.5, progress=False)
    assert time.monotonic() - t0 < 3  # the 5-s read timeout never fires: a byte comes every 0.05 s
    assert f"of {3200} bytes" in str(ei.value)
    assert server.hits["/trickle/data.bin"] == 1
    _no_leftovers(dest)


def test_deadline_leaves_a_normal_download_alone(server, tmp_path):
    _, data, digest = _payload(server.root)
    dest = tmp_path / "data.bin"
    fetch(f"{server.url}/files/data.bin", dest, sha256=digest, deadline=30, **FAST)
    assert dest.read_bytes() == data
    with pytest.raises(ValueError, match="deadline"):
        fetch(f"{server.url}/files/data.bin", dest, deadline=0, **FAST)


@pytest.mark.parametrize("mode", ["html", "htmlbody"])
def test_html_page_is_not_stored_as_text(server, tmp_path, mode):
    from laser_repro.core.download import CorruptDownloadError

    url = f"{server.url}/{mode}/tatoeba.deu-eng.deu"
    dest = tmp_path / "tatoeba-v1" / "tatoeba.deu-eng.deu"
    with pytest.raises(CorruptDownloadError, match="HTML page") as ei:
        fetch(url, dest, retries=2, **FAST)
    assert url in str(ei.value) and ("text/html" in str(ei.value)) == (mode == "html")
    assert server.hits[f"/{mode}/tatoeba.deu-eng.deu"] == 1  # a complete answer: not retried
    _no_leftovers(dest)


def test_html_copy_in_a_mirror_directory_is_refused(tmp_path):
    from laser_repro.core.download import CorruptDownloadError

    src = tmp_path / "mirror" / "de-en.5000-6500.txt"
    src.parent.mkdir()
    src.write_bytes(b"\xef\xbb\xbf  <HTML>\n<body>Access denied</body></HTML>\n")
    with pytest.raises(CorruptDownloadError, match="HTML page"):
        fetch(src, tmp_path / "res" / "de-en.txt", **FAST)
    _no_leftovers(tmp_path / "res" / "de-en.txt")
    # text that merely mentions a tag is data
    src.write_text("<html> is a tag\tune balise\nhouse\tmaison\n")
    assert fetch(src, tmp_path / "res" / "de-en.txt", **FAST).read_text() == src.read_text()


def test_alternatives_are_tried_in_order_and_the_one_used_is_recorded(server, tmp_path):
    from laser_repro.core.download import NotFoundError, fetch_first

    _, data, digest = _payload(server.root)
    dest = tmp_path / "archive.bin"
    urls = [f"{server.url}/files/moved.bin", f"{server.url}/error500/data.bin", f"{server.url}/files/data.bin"]
    rec = fetch_first(urls, dest, sha256=digest, retries=1, **FAST)
    assert rec["url"] == urls[2] and dest.read_bytes() == data
    assert [f["url"] for f in rec["failed"]] == urls[:2]
    assert "404" in rec["failed"][0]["error"] and "HTTP 500" in rec["failed"][1]["error"]
    assert server.hits["/error500/data.bin"] == 2  # each alternative gets its retries
    dest.unlink()
    with pytest.raises(NotFoundError, match=r"none of the 2 alternative URLs worked: \[1\] .*moved.*\[2\] .*gone"):
        fetch_first(urls[:1] + [f"{server.url}/files/gone.bin"], dest, **FAST)
    _no_leftovers(dest)


def test_cli_fetch_records_the_alternative_used(server, tmp_path):
    import json

    from laser_repro import cli

    _, data, digest = _payload(server.root)
    dest = tmp_path / "res" / "data.bin"
    spec = {"rule": "download_archive", "inputs": [], "outputs": [str(dest)], "log": None, "config": {},
            "sources": [f"{dest}={server.url}/files/old-host.bin"]}
    cli.main(["--provenance-json", json.dumps(spec), "fetch", "--url", f"{server.url}/files/old-host.bin",
              "--alternative", f"{server.url}/files/data.bin", "--dest", str(dest), "--sha256", digest,
              "--retries", "0"])
    assert dest.read_bytes() == data
    from laser_repro.provenance._common import read_sidecar

    used = read_sidecar(dest)["runtime"]["download"]
    assert used["url"] == f"{server.url}/files/data.bin" and used["sha256"] == digest
    assert used["failed"][0]["url"] == f"{server.url}/files/old-host.bin"


def test_url_exists(server, tmp_path):
    from laser_repro.core.download import url_exists

    _payload(server.root)
    assert url_exists(f"{server.url}/files/data.bin", **{k: FAST[k] for k in ("backoff", "timeout")})
    assert not url_exists(f"{server.url}/files/none.bin")
    assert url_exists(server.root / "data.bin") and not url_exists((server.root / "none.bin").as_uri())
    with pytest.raises(DownloadError, match="cannot tell.*HTTP 500"):
        url_exists(f"{server.url}/error500/data.bin", retries=1, backoff=0.01)


def test_cli_fetch_all_pairs_absent_is_an_error_naming_the_url_pattern(server, tmp_path):
    """allow_absent_pairs: a 404 is an absent pair only when the corpus exists at that source."""
    from laser_repro import cli
    from laser_repro.core.download import NotFoundError
    from laser_repro.data.corpora import absent_pair_url

    mirror = server.root / "opus-mirror"
    pairs = [("en", "kzj"), ("de", "en"), ("en", "fr")]
    urls = [opus_moses_url("Tatoeba", "v2", s, t, base_url=BASE) for s, t in pairs]
    dest = tmp_path / "res" / "en-kzj.txt.zip"

    def fetch_kzj(mirror_url):
        cli.main(["--debug", "fetch", "--url", urls[0], "--dest", str(dest), "--retries", "0", "--absent-ok",
                  "--base-url", BASE, "--mirror", mirror_url, *[a for u in urls for a in ("--pair-url", u)]])

    # the mirror URL is mistyped (or the version wrong): every pair 404s -> an error, no absent record
    with pytest.raises(NotFoundError, match=r"none of the 3 pair\(s\) of this corpus exists at "
                       + re.escape(f"{server.url}/files/opus-mirorr/OPUS-Tatoeba/v2/moses/*.txt.zip")):
        fetch_kzj(f"{server.url}/files/opus-mirorr")
    assert not dest.exists()
    # the right mirror has de-en: en-kzj is a true absent pair
    _opus_zip(mirror / "OPUS-Tatoeba" / "v2" / "moses" / "de-en.txt.zip", "Tatoeba", "de", "en", 3)
    fetch_kzj(f"{server.url}/files/opus-mirror")
    with zipfile.ZipFile(dest) as zf:
        assert absent_pair_url(zf) == f"{server.url}/files/opus-mirror/OPUS-Tatoeba/v2/moses/en-kzj.txt.zip (HTTP 404)"
    # a local mirror directory without any pair of the corpus: the same error
    dest.unlink()
    (tmp_path / "empty-mirror").mkdir()
    with pytest.raises(NotFoundError, match=r"none of the 3 pair\(s\)"):
        fetch_kzj(str(tmp_path / "empty-mirror"))
    assert not dest.exists()


# --------------------------------------------------------------------------- resuming with Range requests


class _RangeServer:
    """State of the ``range_server`` fixture: the files it serves and how it behaves."""

    def __init__(self):
        self.files: dict[str, tuple[bytes, str]] = {}  # name -> (body, ETag)
        self.validator = "etag"  # "etag": sends an ETag; "last-modified": only a Last-Modified date
        self.cut_after: int | None = None  # the first response of a path ends after this many body bytes...
        self.stall = False  # ... and then hangs (until teardown) instead of dropping the connection
        self.ranges = True  # honours Range (False: always 200, the whole file)
        self.if_range = True  # honours If-Range (False: a 206 even when the validator does not match)
        self.range_from: int | None = None  # a faulty server: its 206 starts at this byte, whatever was asked
        self.on_cut = None  # called after the first response was cut (e.g. to change the file)
        self.requests: list[dict] = []  # {path, range, if_range, status, sent: body bytes of the response}
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.url = ""

    def put(self, name: str, body: bytes, etag: str) -> None:
        self.files[name] = (body, etag)

    def validator_of(self, name: str) -> str:
        body, etag = self.files[name]
        return etag if self.validator == "etag" else self.last_modified(etag)

    @staticmethod
    def last_modified(etag: str) -> str:  # one date per version of a file
        return f"Sun, 0{len(etag) % 9 + 1} Nov 2026 10:00:00 GMT"


@pytest.fixture
def range_server():
    """An HTTP server for resumed downloads: /NAME (or /alias/NAME, the same file under another URL)
    serves ``files[NAME]`` with Range / If-Range support and the faults set on the state."""
    state = _RangeServer()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            name = self.path.rsplit("/", 1)[-1]
            if name not in state.files:
                self.send_error(404)
                return
            body, etag = state.files[name]
            validator = state.validator_of(name)
            rng, if_range = self.headers.get("Range"), self.headers.get("If-Range")
            with state.lock:
                first = not any(r["path"] == self.path for r in state.requests)
                entry = {"path": self.path, "range": rng, "if_range": if_range, "status": 200, "sent": 0}
                state.requests.append(entry)
            start = 0
            m = re.fullmatch(r"bytes=(\d+)-", rng or "")
            if m and state.ranges and (if_range is None or if_range == validator or not state.if_range):
                start = int(m[1]) if state.range_from is None else state.range_from
                if start >= len(body):
                    entry["status"] = 416
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(body)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                entry["status"] = 206
            self.send_response(entry["status"])
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body) - start))
            self.send_header("Accept-Ranges", "bytes")
            if state.validator == "etag":
                self.send_header("ETag", etag)
            else:
                self.send_header("Last-Modified", validator)
            if entry["status"] == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.end_headers()
            chunk = body[start:]
            cut = first and state.cut_after is not None
            if cut:
                chunk = chunk[: state.cut_after]
            # recorded before writing: the client may read the last byte (and the test go on) before this
            # thread runs its next line
            entry["sent"] = len(chunk)
            self.wfile.write(chunk)
            self.wfile.flush()
            if cut:
                if state.stall:
                    state.release.wait(30)
                if state.on_cut is not None:
                    state.on_cut()
                self.close_connection = True  # the client sees the body end early

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    t = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    t.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        t.join(5)


def _versions(n: int = 200_000) -> tuple[bytes, bytes]:
    """Two versions of a file of the same length (a splice of them would pass a size check)."""
    return (hashlib.sha256(b"v1").digest() * (n // 32), hashlib.sha256(b"v2").digest() * (n // 32))


@pytest.mark.parametrize("validator", ["etag", "last-modified"])
def test_dropped_connection_is_resumed_with_a_range_request(range_server, tmp_path, monkeypatch, validator):
    from laser_repro.core import download

    old, _ = _versions()
    range_server.put("data.bin", old, '"v1"')
    range_server.validator = validator
    range_server.cut_after = 70_000
    bars = []
    real_bar = download._progress_bar
    monkeypatch.setattr(download, "_progress_bar",
                        lambda total, desc, enabled, initial=0: bars.append((total, initial)) or
                        real_bar(total, desc, enabled, initial))
    dest = tmp_path / "data.bin"
    rec = fetch_with_record(f"{range_server.url}/data.bin", dest, sha256=hashlib.sha256(old).hexdigest(),
                            size=len(old), retries=2, **FAST)
    assert dest.read_bytes() == old
    full, ranged = range_server.requests
    assert (full["range"], full["status"], full["sent"]) == (None, 200, 70_000)
    assert ranged["range"] == "bytes=70000-" and ranged["status"] == 206
    assert ranged["if_range"] == range_server.validator_of("data.bin")
    assert full["sent"] + ranged["sent"] == len(old)  # one full and one ranged request, not two full ones
    assert rec["attempts"] == 2 and rec["resumed_at"] == 70_000 and rec["bytes"] == len(old)
    assert bars == [(len(old), 0), (len(old), 70_000)]  # the progress bar starts at the resumed byte
    assert not (tmp_path / "data.bin.part").exists() and not (tmp_path / "data.bin.part.json").exists()


@pytest.mark.parametrize("fault", ["ignores-range", "wrong-content-range"])
def test_resume_refused_by_the_server_starts_over(range_server, tmp_path, caplog, fault):
    old, _ = _versions()
    range_server.put("data.bin", old, '"v1"')
    range_server.cut_after = 70_000
    if fault == "ignores-range":
        range_server.ranges = False
    else:  # a 206 for another range than the one asked
        range_server.range_from = 100
    dest = tmp_path / "data.bin"
    with caplog.at_level("WARNING", logger="laser_repro.core.download"):
        rec = fetch_with_record(f"{range_server.url}/data.bin", dest, sha256=hashlib.sha256(old).hexdigest(),
                                retries=2, **FAST)
    assert dest.read_bytes() == old and rec["resumed_at"] == 0
    why = "ignores Range" if fault == "ignores-range" else "bytes from 100 on, not 70000"
    assert any("cannot resume at byte 70000" in r.message and why in r.message for r in caplog.records)
    statuses = [r["status"] for r in range_server.requests]
    # a refused 206 is closed and the whole file asked for again; a 200 is used as it is
    assert statuses == ([200, 200] if fault == "ignores-range" else [200, 206, 200])
    assert range_server.requests[-1]["sent"] == len(old)


@pytest.mark.parametrize("server_checks_if_range", [True, False])
def test_file_changed_between_attempts_is_never_spliced(range_server, tmp_path, caplog, server_checks_if_range):
    old, new = _versions()
    range_server.put("data.bin", old, '"v1"')
    range_server.cut_after = 70_000
    range_server.on_cut = lambda: range_server.put("data.bin", new, '"v2"')
    # False: a server that ignores If-Range and sends the new file's bytes as a 206 (with its new ETag)
    range_server.if_range = server_checks_if_range
    dest = tmp_path / "data.bin"
    with caplog.at_level("WARNING", logger="laser_repro.core.download"):
        fetch(f"{range_server.url}/data.bin", dest, size=len(new), retries=2, **FAST)
    assert dest.read_bytes() == new
    assert range_server.requests[1]["if_range"] == '"v1"'
    assert [r["status"] for r in range_server.requests] == ([200, 200] if server_checks_if_range else [200, 206, 200])
    assert any("changed on the server" in r.message and '"v2"' in r.message for r in caplog.records)


def test_checksum_failure_after_a_resumed_transfer_discards_the_part(range_server, tmp_path):
    old, new = _versions()
    range_server.put("data.bin", old, '"v1"')
    range_server.cut_after = 70_000
    # a server that changes the file but not its ETag: the resume splices, the checksum catches it
    range_server.on_cut = lambda: range_server.put("data.bin", new, '"v1"')
    dest = tmp_path / "data.bin"
    with pytest.raises(ChecksumMismatchError, match="resumed at byte 70000; the partial file was discarded"):
        fetch(f"{range_server.url}/data.bin", dest, sha256=hashlib.sha256(old).hexdigest(), retries=2, **FAST)
    _no_leftovers(dest)
    range_server.on_cut = None
    fetch(f"{range_server.url}/data.bin", dest, size=len(new), **FAST)  # the next run starts from byte 0
    assert dest.read_bytes() == new and range_server.requests[-1]["range"] is None


def _killed_download(range_server, url: str, dest: Path) -> int:
    """Run a download in another process, kill it (SIGKILL, as a preempted job) once part of the body
    is in ``<dest>.part``; return how many bytes the .part kept."""
    import os
    import subprocess
    import sys
    import time

    range_server.cut_after, range_server.stall = 150_000, True
    part = dest.with_suffix(dest.suffix + ".part")
    code = "import sys; from laser_repro.core.download import fetch; fetch(sys.argv[1], sys.argv[2], progress=False)"
    proc = subprocess.Popen([sys.executable, "-c", code, url, str(dest)])
    try:
        for _ in range(1500):  # wait (up to 30 s) for the first bytes on disk; the server then stalls
            if part.is_file() and part.stat().st_size > 0 or proc.poll() is not None:
                break
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -9 and part.stat().st_size > 0
    range_server.cut_after, range_server.stall = None, False
    return part.stat().st_size


def test_part_left_by_a_killed_run_is_resumed_only_from_its_own_url(range_server, tmp_path, caplog):
    import shutil

    old, _ = _versions()
    range_server.put("data.bin", old, '"v1"')
    url = f"{range_server.url}/data.bin"
    dest = tmp_path / "a" / "data.bin"
    have = _killed_download(range_server, url, dest)
    # the same leftover beside another destination that is fetched from another URL
    other = tmp_path / "b" / "data.bin"
    other.parent.mkdir()
    for suffix in (".part", ".part.json"):
        shutil.copy(dest.with_suffix(".bin" + suffix), other.with_suffix(".bin" + suffix))

    rec = fetch_with_record(url, dest, sha256=hashlib.sha256(old).hexdigest(), **FAST)
    assert dest.read_bytes() == old and rec["resumed_at"] == have and rec["attempts"] == 1
    assert range_server.requests[-1]["range"] == f"bytes={have}-" and range_server.requests[-1]["status"] == 206

    with caplog.at_level("WARNING", logger="laser_repro.core.download"):
        fetch(f"{range_server.url}/alias/data.bin", other, **FAST)
    assert other.read_bytes() == old
    assert range_server.requests[-1]["range"] is None and range_server.requests[-1]["sent"] == len(old)
    assert any("discarding the partial download" in r.message and "another URL" in r.message for r in caplog.records)
    assert sorted(p.name for p in other.parent.iterdir()) == ["data.bin"]


@pytest.mark.parametrize("leftover", ["no-record", "no-validator", "complete"])
def test_leftover_part_that_cannot_be_trusted_is_discarded(range_server, tmp_path, caplog, leftover):
    import json

    old, new = _versions()
    range_server.put("data.bin", new, '"v2"')
    url = f"{range_server.url}/data.bin"
    dest = tmp_path / "data.bin"
    part, record = tmp_path / "data.bin.part", tmp_path / "data.bin.part.json"
    part.write_bytes(old[:50_000] if leftover != "complete" else new)
    if leftover != "no-record":
        etag = None if leftover == "no-validator" else '"v2"'
        record.write_text(json.dumps({"url": url, "etag": etag, "last_modified": None, "total": len(new)}))
    with caplog.at_level("WARNING", logger="laser_repro.core.download"):
        fetch(url, dest, size=len(new), **FAST)
    assert dest.read_bytes() == new and not part.exists() and not record.exists()
    if leftover == "complete":  # killed after its last byte: the server answers 416, then the whole file
        assert [(r["range"], r["status"]) for r in range_server.requests] == [(f"bytes={len(new)}-", 416),
                                                                             (None, 200)]
        assert any("HTTP 416" in r.message for r in caplog.records)
    else:
        assert [(r["range"], r["status"]) for r in range_server.requests] == [(None, 200)]
        why = "no record" if leftover == "no-record" else "no ETag / Last-Modified"
        assert any("discarding the partial download" in r.message and why in r.message for r in caplog.records)


def test_interrupted_download_keeps_its_part_for_the_next_run(range_server, tmp_path, monkeypatch):
    """Ctrl-C (KeyboardInterrupt) is not a failure of the download: the .part and its record stay."""
    from laser_repro.core import download

    old, _ = _versions()
    range_server.put("data.bin", old, '"v1"')
    real_copy = download._copy_stream

    def copy_then_interrupt(src, dst, *args, **kwargs):
        dst.write(src.read(30_000))
        raise KeyboardInterrupt

    monkeypatch.setattr(download, "_copy_stream", copy_then_interrupt)
    dest = tmp_path / "data.bin"
    url = f"{range_server.url}/data.bin"
    with pytest.raises(KeyboardInterrupt):
        fetch(url, dest, **FAST)
    assert (tmp_path / "data.bin.part").stat().st_size == 30_000 and (tmp_path / "data.bin.part.json").is_file()
    monkeypatch.setattr(download, "_copy_stream", real_copy)
    assert fetch_with_record(url, dest, **FAST)["resumed_at"] == 30_000
    assert dest.read_bytes() == old and range_server.requests[-1]["range"] == "bytes=30000-"
