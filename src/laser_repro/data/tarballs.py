"""Members of (compressed) tar archives extracted to files in one streaming pass, such as the FLORES-200
dev/devtest files of a language."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Mapping
from pathlib import Path

from laser_repro.core.archives import TAR_ERRORS, norm_member
from laser_repro.data.bitext import _WRITE_BUFFER, CorpusError, _part, _unlink

__all__ = [
    "FLORES200_URL",
    "flores200_member",
    "extract_tar_members",
    "extract_tar_member",
]

FLORES200_URL = "https://dl.fbaipublicfiles.com/nllb/flores200_dataset.tar.gz"


def flores200_member(code: str, split: str = "dev") -> str:
    """Tar member of a FLORES-200 file, e.g. ``flores200_member("deu_Latn")`` ->
    ``"flores200_dataset/dev/deu_Latn.dev"`` (split: ``dev`` or ``devtest``)."""
    if split not in ("dev", "devtest"):
        raise ValueError(f"FLORES-200 split must be 'dev' or 'devtest', not {split!r}")
    return f"flores200_dataset/{split}/{code}.{split}"


def extract_tar_members(
    tar_path: str | os.PathLike, members: Mapping[str, str | os.PathLike]
) -> dict[str, Path]:
    """Extract several regular-file members of a (compressed) tar in one streaming pass.

    ``members`` maps member names (a leading ``./`` is ignored) to output paths.  Each
    output is written to ``<out>.part`` and renamed when complete.  Raises CorpusError
    when a member is missing (listing a few available names), is not a regular file, or
    the archive is truncated/corrupt; on error no output of this call remains.
    """
    tar_path = Path(tar_path)
    wanted = {norm_member(m): Path(o) for m, o in members.items()}
    if not tar_path.is_file():
        raise CorpusError(f"{tar_path}: no such file")
    done: dict[str, Path] = {}
    seen: list[str] = []
    ok = False
    for o in wanted.values():
        _unlink(o)
    try:
        try:
            with tarfile.open(tar_path, mode="r|*") as tf:
                for ti in tf:
                    name = norm_member(ti.name)
                    seen.append(name)
                    if name not in wanted or name in done:
                        continue
                    if not ti.isfile():
                        raise CorpusError(f"{tar_path}: member {ti.name!r} is not a regular file")
                    out = wanted[name]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    part = _part(out)
                    try:
                        src = tf.extractfile(ti)
                        n = 0
                        with open(part, "wb") as fo:
                            while True:
                                block = src.read(_WRITE_BUFFER)
                                if not block:
                                    break
                                fo.write(block)
                                n += len(block)
                        if n != ti.size:
                            raise CorpusError(
                                f"{tar_path}: member {ti.name!r} is truncated ({n} of {ti.size} bytes)")
                        os.replace(part, out)
                    finally:
                        _unlink(part)
                    done[name] = out
                    if len(done) == len(wanted):
                        break
        except CorpusError:
            raise
        except TAR_ERRORS as e:
            raise CorpusError(f"{tar_path}: truncated or corrupt tar archive: {e}") from e
        missing = [m for m in wanted if m not in done]
        if missing:
            same_dir = [n for n in seen if n.rsplit("/", 1)[0] == missing[0].rsplit("/", 1)[0]]
            sample = (same_dir or seen)[:10]
            raise CorpusError(
                f"{tar_path}: member(s) {missing[:5]} not found among {len(seen)} entries; "
                f"e.g. {sample}"
            )
        ok = True
    finally:
        if not ok:
            for o in wanted.values():
                _unlink(o)
    return done


def extract_tar_member(tar_path: str | os.PathLike, member: str, out_path: str | os.PathLike) -> Path:
    """Extract one regular-file member of a (compressed) tar -- or of a zip (OPUS's Moses downloads,
    e.g. ParaCrawl's ``en-fr.txt.zip``) -- to ``out_path`` (streaming).

    See :func:`extract_tar_members` for the error behaviour.
    """
    import zipfile

    if Path(tar_path).is_file() and zipfile.is_zipfile(tar_path):
        return _extract_zip_member(Path(tar_path), member, Path(out_path))
    return extract_tar_members(tar_path, {member: out_path})[norm_member(member)]


def _extract_zip_member(zip_path: Path, member: str, out: Path) -> Path:
    import shutil
    import zipfile

    _unlink(out)
    part = _part(out)
    try:
        with zipfile.ZipFile(zip_path) as zf:
            names = {norm_member(n): n for n in zf.namelist()}
            name = names.get(norm_member(member))
            if name is None:
                raise CorpusError(f"{zip_path}: no member {member!r} (has: {', '.join(sorted(names)[:8])})")
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(name) as src, open(part, "wb") as dst:
                shutil.copyfileobj(src, dst, _WRITE_BUFFER)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        _unlink(part)
        raise CorpusError(f"{zip_path}: cannot read member {member!r}: {err}") from err
    except CorpusError:
        _unlink(part)
        raise
    os.replace(part, out)
    return out
