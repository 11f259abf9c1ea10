"""Tests for laser_repro.core.download.join_parts and the join-parts subcommand (a multi-part archive)."""
from __future__ import annotations

import hashlib
import io
import random
import tarfile
from pathlib import Path

import pytest

from laser_repro import cli
from laser_repro.core.download import CorruptDownloadError, join_parts, verify_archive


def _tar_gz(tmp_path: Path) -> Path:
    """A small real .tar.gz whose compressed bytes are not all header (random member data)."""
    rng = random.Random(0)
    path = tmp_path / "src" / "corpus.tar.gz"
    path.parent.mkdir()
    with tarfile.open(path, "w:gz") as tf:
        for name, size in (("corpus/eng.txt", 3000), ("corpus/fra.txt", 5000), ("corpus/README", 200)):
            data = bytes(rng.getrandbits(8) for _ in range(size))
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def _split(path: Path, n: int, out_dir: Path, *, drop_tail: int = 0) -> list[Path]:
    data = path.read_bytes()
    if drop_tail:
        data = data[:-drop_tail]
    cuts = [len(data) * k // n for k in range(n + 1)]
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = []
    for k in range(n):
        part = out_dir / f"{path.name}.{k:02d}"
        part.write_bytes(data[cuts[k]:cuts[k + 1]])
        parts.append(part)
    assert all(p.stat().st_size > 0 for p in parts)
    return parts


def _leftovers(dest: Path) -> list[str]:
    return sorted(p.name for p in dest.parent.iterdir()) if dest.parent.exists() else []


def test_join_parts_identical(tmp_path):
    original = _tar_gz(tmp_path)
    parts = _split(original, 3, tmp_path / "parts")
    dest = tmp_path / "joined" / "corpus.tar.gz"
    sha = hashlib.sha256(original.read_bytes()).hexdigest()
    assert join_parts(parts, dest, sha256=sha) == dest
    assert dest.read_bytes() == original.read_bytes()
    assert verify_archive(dest) == "tar"
    assert _leftovers(dest) == ["corpus.tar.gz"]  # no .joining temp left
    with tarfile.open(dest) as tf:
        assert tf.getnames() == ["corpus/eng.txt", "corpus/fra.txt", "corpus/README"]


def test_join_parts_sha256_prefix_and_case(tmp_path):
    original = _tar_gz(tmp_path)
    parts = _split(original, 3, tmp_path / "parts")
    dest = tmp_path / "joined" / "corpus.tar.gz"
    sha = "sha256:" + hashlib.sha256(original.read_bytes()).hexdigest().upper()
    join_parts(parts, dest, sha256=sha)
    assert dest.read_bytes() == original.read_bytes()


def test_join_parts_wrong_order_is_corrupt(tmp_path):
    original = _tar_gz(tmp_path)
    parts = _split(original, 3, tmp_path / "parts")
    dest = tmp_path / "joined" / "corpus.tar.gz"
    with pytest.raises(CorruptDownloadError):
        join_parts([parts[1], parts[0], parts[2]], dest)
    assert _leftovers(dest) == []


def test_join_parts_truncated(tmp_path):
    original = _tar_gz(tmp_path)
    parts = _split(original, 3, tmp_path / "parts", drop_tail=500)
    dest = tmp_path / "joined" / "corpus.tar.gz"
    with pytest.raises(CorruptDownloadError) as err:
        join_parts(parts, dest)
    msg = str(err.value)
    assert str(dest) in msg and str(parts[0]) in msg and str(parts[2]) in msg
    assert "tar" in msg
    assert not dest.exists()
    assert not dest.with_name(dest.name + ".joining").exists()
    assert _leftovers(dest) == []


def test_join_parts_wrong_sha256(tmp_path):
    original = _tar_gz(tmp_path)
    parts = _split(original, 3, tmp_path / "parts")
    dest = tmp_path / "joined" / "corpus.tar.gz"
    wrong = "0" * 64
    with pytest.raises(CorruptDownloadError) as err:
        join_parts(parts, dest, sha256=wrong)
    msg = str(err.value)
    assert wrong in msg
    assert hashlib.sha256(original.read_bytes()).hexdigest() in msg
    assert "3 parts" in msg
    assert not dest.exists()
    assert not dest.with_name(dest.name + ".joining").exists()
    assert _leftovers(dest) == []


def test_join_parts_replaces_stale_dest_only_on_success(tmp_path):
    original = _tar_gz(tmp_path)
    dest = tmp_path / "joined" / "corpus.tar.gz"
    dest.parent.mkdir()
    dest.write_bytes(b"stale")
    parts = _split(original, 3, tmp_path / "parts")
    join_parts(parts, dest)
    assert dest.read_bytes() == original.read_bytes()


def test_join_parts_cli(tmp_path):
    original = _tar_gz(tmp_path)
    parts = _split(original, 3, tmp_path / "parts")
    dest = tmp_path / "out" / "corpus.tar.gz"
    sha = hashlib.sha256(original.read_bytes()).hexdigest()
    assert cli.main(["join-parts", "--parts", *map(str, parts), "--output", str(dest), "--sha256", sha]) == 0
    assert dest.read_bytes() == original.read_bytes()


def test_join_parts_cli_truncated(tmp_path):
    original = _tar_gz(tmp_path)
    parts = _split(original, 3, tmp_path / "parts", drop_tail=500)
    dest = tmp_path / "out" / "corpus.tar.gz"
    with pytest.raises(CorruptDownloadError):
        cli.main(["--debug", "join-parts", "--parts", *map(str, parts), "--output", str(dest)])
    assert _leftovers(dest) == []
