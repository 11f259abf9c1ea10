"""The exception types of a user's mistake (standard library only: the fairseq plugin's imports
reach it through laser_repro.models.checkpoint_safety)."""
from __future__ import annotations


class UserError(ValueError):
    """A mistake in what the user gave -- a file, an option, a config value -- not a bug. The message
    names the file (or option) and what is wrong; the command line (laser_repro.cli.main) prints it as
    one line and exits with status 1. Any other exception is a bug and keeps its traceback."""


class ConfigError(UserError):
    """A config value is invalid; the message names the file (when known) and the key path (also the
    parameters of an evaluation classifier, :mod:`laser_repro.evaluation.classifier`)."""
