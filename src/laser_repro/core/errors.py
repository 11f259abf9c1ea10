"""The exception types of a user's mistake, and which errors the command line prints as one line
(:func:`expected_error`). Standard library only: the fairseq plugin's imports reach it through
laser_repro.models.checkpoint_safety."""
from __future__ import annotations

import linecache
import os
import sys
from pathlib import Path


class UserError(ValueError):
    """A mistake in what the user gave -- a file, an option, a config value -- not a bug. The message
    names the file (or option) and what is wrong; the command line (laser_repro.cli.main) prints it as
    one line and exits with status 1, as it does the other expected errors (:func:`expected_error`). Any
    other exception is a bug and keeps its traceback."""


class ConfigError(UserError):
    """A config value is invalid; the message names the file (when known) and the key path (also the
    parameters of an evaluation classifier, :mod:`laser_repro.evaluation.classifier`)."""


#: The project's other exception types of an expected failure, (module, name): their messages name the file or
#: URL and say what to do. Looked up in sys.modules (an exception of a type comes from an imported module; this
#: module imports no other): the downloads' (404, checksum, HTML page, truncated, deadline), a malformed corpus,
#: a model record that disagrees with the config, a device a worker cannot use.
EXPECTED = (("laser_repro.core.download", "DownloadError"), ("laser_repro.data.bitext", "CorpusError"),
            ("laser_repro.models.record", "ModelRecordMismatch"), ("laser_repro.models.device", "DeviceError"))
#: An operation that failed for its path (a missing input, a directory given as a file, no permission).
PATH_ERRORS = {FileNotFoundError: "check the path", IsADirectoryError: "give a file, not a directory",
               NotADirectoryError: "a part of the path is a file, not a directory",
               PermissionError: "check its permissions"}
PACKAGE_DIR = str(Path(__file__).resolve().parents[1]) + os.sep


def raised_on_purpose(err: BaseException) -> bool:
    """``err`` comes from a ``raise`` statement of laser_repro (a message written for the reader), not from
    inside a library or an implicit error of our code (``a, b = line.split()``)."""
    tb = err.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    return path.startswith(PACKAGE_DIR) and linecache.getline(path, tb.tb_lineno).lstrip().startswith("raise")


def expected_error(err: BaseException) -> str | None:
    """The message the command line prints (on one line) for an expected error; None for a bug, which keeps
    its traceback:

    * UserError (ConfigError, InputError ...) and the types of :data:`EXPECTED`: their message;
    * an OSError of a path (:data:`PATH_ERRORS`): the path, the reason and what to check;
    * a ValueError raised on purpose by laser_repro (:func:`raised_on_purpose`): its message. One raised inside
      numpy, the standard library ... (or implicitly) is a bug.
    """
    expected = tuple(getattr(sys.modules[module], name) for module, name in EXPECTED if module in sys.modules)
    if isinstance(err, (UserError, *expected)):
        return str(err)
    if isinstance(err, tuple(PATH_ERRORS)):
        if err.filename is None:  # raised by our code with its own message (MLDocMissingError)
            return str(err)
        paths = " -> ".join(os.fsdecode(f) if isinstance(f, bytes) else str(f)
                            for f in (err.filename, err.filename2) if f is not None)
        hint = next(h for cls, h in PATH_ERRORS.items() if isinstance(err, cls))
        return f"{paths}: {err.strerror or err}; {hint}"
    if isinstance(err, ValueError) and raised_on_purpose(err):
        return str(err)
    return None
