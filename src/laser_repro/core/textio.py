"""Streaming text I/O shared by every stage: strict UTF-8 line reading and atomic outputs."""
from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import IO, Iterator

from tqdm import tqdm

from laser_repro.core.errors import UserError


class InputError(UserError):
    """Bad input data; the message names the file and line."""


# C0 and C1 control characters except tab (whitespace, kept inside a sentence), and the line and
# paragraph separators U+2028 / U+2029. Among them are all the characters other tools (Python's
# str.splitlines, Moses, editors) treat as line ends -- \n \r \v \f \x1c-\x1e \x85 and LS / PS: inside a
# sentence they would shift the alignment of parallel files -- and NUL, a C string end for such tools.
# All of them are non-printable, so str.isprintable() is a fast path around the regex.
CONTROL_CHARS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """The text on one line, as every stage writes it: control characters (:data:`CONTROL_CHARS`)
    become spaces, outer whitespace goes."""
    if not text.isprintable():  # fast path: every character of CONTROL_CHARS is non-printable
        text = CONTROL_CHARS.sub(" ", text)
    return text.strip()


def iter_lines(path: Path | str, *, progress: bool = False, desc: str | None = None) -> Iterator[str]:
    """Yield the lines of a UTF-8 file without their trailing newline, one at a time.

    Only '\\n' ends a line (a stray '\\r' or U+2028 inside a line must not shift alignment);
    invalid UTF-8 raises InputError naming the file and the 1-based line number.
    """
    path = Path(path)
    with open(path, "rb") as f, tqdm(desc=desc or path.name, unit=" lines", disable=not progress,
                                     file=sys.stderr, mininterval=2) as bar:
        for _, line in decode_lines(f, path):
            bar.update()
            yield line


def decode_lines(stream: IO[bytes], where) -> Iterator[tuple[int, str]]:
    """(1-based number, line without its '\\n') of a binary stream (file, tar or zip member); invalid
    UTF-8 raises InputError naming `where` and the line."""
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InputError(f"{where}: line {number}: invalid UTF-8 at byte {err.start} of the line: "
                             f"{raw[max(0, err.start - 10):err.start + 10]!r}") from None
        yield number, line[:-1] if line.endswith("\n") else line


def count_lines(path: Path | str) -> int:
    """Number of lines (a last line without newline counts), counted in binary blocks."""
    count, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: mkstemp creates 0600 files; results get the permissions of a plain open() (0666 & ~umask)
_FILE_MODE = 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_output(path: Path | str, mode: str = "w") -> Iterator[IO]:
    """Open a temp file next to `path`; rename it onto `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as f:
            yield f
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Path | str, data) -> None:
    with atomic_output(path) as f:
        json.dump(data, f, indent=2, ensure_ascii=False, sort_keys=False)
        f.write("\n")


def read_json(path: Path | str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)
