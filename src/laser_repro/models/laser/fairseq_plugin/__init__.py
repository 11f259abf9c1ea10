"""fairseq ``--user-dir`` plugin: the ``laser_multilingual`` task, the ``laser_lstm`` model and the
``laser_multitask`` criterion (translation + NLI).

fairseq imports a user dir as a top-level module named after the directory
(``fairseq_plugin``).  To register the task/model exactly once, whichever way this package is
imported, the canonical module is ``laser_repro.models.laser.fairseq_plugin`` and the top-level name is
made an alias of it.
"""

import importlib
import os
import sys

_CANONICAL = "laser_repro.models.laser.fairseq_plugin"
_ALIAS = "fairseq_plugin"

if __name__ == _CANONICAL:
    from . import laser_criterion, laser_lstm, laser_task  # noqa: F401  (registers criterion, model, task)

    sys.modules.setdefault(_ALIAS, sys.modules[__name__])
else:
    # imported by fairseq's import_user_module as top-level ``fairseq_plugin``
    _src_root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4))
    try:
        importlib.import_module("laser_repro")
    except ImportError:
        sys.path.insert(0, _src_root)
    _canonical = importlib.import_module(_CANONICAL)
    if os.path.realpath(os.path.dirname(_canonical.__file__)) != os.path.realpath(os.path.dirname(__file__)):
        raise ImportError(
            f"--user-dir {os.path.dirname(__file__)} is not the installed laser_repro "
            f"({os.path.dirname(_canonical.__file__)}); use the plugin of the installed package"
        )
    sys.modules[__name__] = _canonical
