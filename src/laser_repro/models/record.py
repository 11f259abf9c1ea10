"""A trained model's own record (``model_record.json`` beside its published checkpoint): what it was
trained with, written by ``laser-repro train`` when it publishes the model, read by the tables.

A table labels a model by its settings ("uni. + bi.", "3 layers", "no margin"). Those labels must come
from the model that was trained, not from the config as it reads today: a model left over from other
settings (a rerun that skipped training, ``--rerun-triggers mtime``, a hand-copied results directory)
would otherwise be presented as something it is not. :func:`check_model_records` compares each model's
record with the settings the config gives it now -- the part that determines the weights
(``fingerprint_settings``) and when training ends (``stopping_settings``) -- and refuses a mismatch,
naming the record, the config and every differing key.

Record::

    {"format": 1, "family": "bisent2vec", "settings": {... the --settings of the run ...},
     "fingerprint": "<digest of fingerprint.json>", "num_updates": N, "kept_update": K}
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

FORMAT = 1


class ModelRecordMismatch(ValueError):
    """A model's record disagrees with the config (or is missing or unreadable)."""


def write_model_record(path, *, family: str, settings: Mapping, status: Mapping) -> dict:
    """Write the record of a published model: its family, the run's settings and, from the run's
    train_status.json, its fingerprint digest and updates."""
    from laser_repro.core.textio import write_json

    record = {"format": FORMAT, "family": family, "settings": dict(settings),
              "fingerprint": status.get("fingerprint"), "num_updates": status.get("num_updates"),
              "kept_update": status.get("kept_update")}
    write_json(Path(path), record)
    return record


def read_model_record(path) -> dict:
    from laser_repro.core.textio import read_json

    try:
        record = read_json(path)
    except FileNotFoundError:
        raise ModelRecordMismatch(f"{path}: no model record (the model was published before records were "
                                  f"kept, or by hand): retrain the model") from None
    except (OSError, ValueError) as err:
        raise ModelRecordMismatch(f"{path}: unreadable model record ({err})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(record.get("settings"), dict):
        raise ModelRecordMismatch(f"{path}: not a model record of format {FORMAT}")
    return record


def setting_differences(recorded: Mapping, configured: Mapping) -> list[str]:
    """``key: recorded=... config=...`` for every dotted key whose values differ."""
    from laser_repro.core.nested import flatten_settings

    a, b = flatten_settings(recorded), flatten_settings(configured)
    return [f"{key}: record {json.dumps(a.get(key))}, config {json.dumps(b.get(key))}"
            for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def compared_settings(family: str, settings: Mapping) -> dict:
    """What must agree between a record and the config: the settings that determine the weights and
    those that end training (process geometry, threads and logging may differ)."""
    from laser_repro.models import registry

    f = registry.get(family)
    return {"weights": f.fingerprint_settings(settings), "stopping": f.stopping_settings(settings)}


def require_model_records(spec: Mapping[str, Mapping] | None, command: str) -> None:
    """A table command's ``--model-records`` check (:func:`check_model_records`; nothing when not given):
    a disagreement ends the command with one line naming it."""
    if spec is None:
        return
    try:
        check_model_records(spec)
    except ValueError as err:
        raise SystemExit(f"{command}: {err}") from None


def check_model_records(spec: Mapping[str, Mapping]) -> dict[str, dict]:
    """``spec``: ``{model name: {"family", "record": path, "settings": the config's --settings}}``.
    Returns ``{name: record}``; raises :class:`ModelRecordMismatch` naming the model, its record, the
    config and each differing key when a record disagrees (or is missing)."""
    out, problems = {}, []
    for name, entry in spec.items():
        try:
            record = read_model_record(entry["record"])
        except ModelRecordMismatch as err:
            problems.append(f"model {name}: {err}")
            continue
        if record["family"] != entry["family"]:
            problems.append(f"model {name}: {entry['record']} is a {record['family']} model, the config "
                            f"says family {entry['family']}")
            continue
        diffs = setting_differences(compared_settings(record["family"], record["settings"]),
                                    compared_settings(entry["family"], entry["settings"]))
        if diffs:
            problems.append(f"model {name}: its record {entry['record']} disagrees with the config: "
                            + "; ".join(diffs))
            continue
        out[name] = record
    if problems:
        raise ModelRecordMismatch(
            "refusing to tabulate models that were not trained with the config's settings (retrain them: "
            "rerun without --rerun-triggers / --allowed-rules that skip training):\n  " + "\n  ".join(problems))
    return out


def model_records_argument(value: str) -> dict:
    """A table command's --model-records: JSON ``{name: {"family", "record", "settings"}}``, inline or in a file."""
    text = value if value.lstrip().startswith("{") else Path(value).read_text(encoding="utf-8")
    spec = json.loads(text)
    if not isinstance(spec, dict) or not all(isinstance(v, dict) and {"family", "record", "settings"} <= set(v)
                                             for v in spec.values()):
        raise ValueError('--model-records: expected JSON {name: {"family", "record", "settings"}}')
    return spec


def add_model_records_option(parser) -> None:
    parser.add_argument("--model-records", type=model_records_argument, metavar="JSON",
                        help='{name: {"family", "record": model_record.json, "settings": the training settings the '
                             'config gives it}}: each model\'s record must agree with the config (else the '
                             'table is refused, naming the differences)')
