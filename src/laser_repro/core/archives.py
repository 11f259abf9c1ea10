"""Members of the zip and tar archives the corpora and evaluation data come in: how their names are
matched, and which exceptions mean that an archive is truncated or corrupt."""
from __future__ import annotations

import lzma
import os
import tarfile
import zipfile
import zlib

#: what reading a truncated or corrupt zip (or one of its members) raises
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError)
#: what reading a truncated or corrupt (compressed) tar raises
TAR_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError)

_SHOWN = 20  # member names an error message lists


def norm_member(name: str) -> str:
    """A tar member name as written in the archive or asked for: without leading ``./`` and
    trailing ``/`` (``./a/b`` and ``a/b`` are the same member)."""
    while name.startswith("./"):
        name = name[2:]
    return name.rstrip("/")


def find_zip_member(zf: zipfile.ZipFile, wanted: str, zip_path: str | os.PathLike,
                    error: type[Exception]) -> str:
    """The name of member ``wanted`` of ``zf`` or, failing that, of the one member with the same file
    name in another directory (macOS ``__MACOSX/`` entries left out). None or several: ``error``
    naming ``zip_path`` and listing the members."""
    names = zf.namelist()
    if wanted in names:
        return wanted
    base = wanted.rsplit("/", 1)[-1]
    hits = [n for n in names if n.rsplit("/", 1)[-1] == base and not n.startswith("__MACOSX/")]
    if len(hits) == 1:
        return hits[0]
    shown = ", ".join(names[:_SHOWN]) + (f", ... ({len(names)} members)" if len(names) > _SHOWN else "")
    raise error(f"{zip_path}: no member {wanted!r}; the zip contains: {shown or '(nothing)'}")
