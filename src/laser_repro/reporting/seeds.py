"""Seed replicates (config ``seeds``): a table's numbers as mean ± sample standard deviation over the seeds
its models were trained with, so that a reader sees whether a difference is larger than the noise.

A table command given replicates computes its rows once per seed, from that seed's models (the k-th
replicate of every model, :func:`per_seed_specs`), and :func:`over_seeds` merges the per-seed rows cell by
cell: a number that differs between seeds becomes a :class:`SeedMean` -- the mean, printed
``mean ± sd (n=N)`` by any float format -- and a value equal in every seed (the paper's values, TF-IDF,
sentence counts) stays as it is. Averages (over languages, pairs) are taken per seed before the merge, so
their spread is that of the average. With one seed the rows are returned unchanged (byte-identical tables).
CSV files keep each column (the mean where it varies) and get ``<column>_sd`` and ``<column>_n_seeds``
beside every column that varies (:func:`seed_columns`).
"""
from __future__ import annotations

import statistics
from numbers import Real
from typing import Any, Mapping, Sequence

#: the key of a model's (or table row's) spec that lists its further seeds' inputs, one mapping each
REPLICATES = "seed_replicates"
#: the Markdown note of a table with seed replicates
NOTE = ("Values over several training seeds (config `seeds`): mean ± sample standard deviation (n = seeds "
        "with a value); averages are taken per seed first. A value without ± is the same in every seed "
        "(the paper's values, TF-IDF, sentence counts, or a score the seeds agree on).")


class SeedMean(float):
    """The mean of one table value over ``n`` seeds with its sample standard deviation ``sd`` (None for
    n = 1). It is a float (the mean) wherever arithmetic or a CSV needs a number; a float format prints
    ``mean ± sd (n=N)`` (``mean (n=1)`` when one seed has a value)."""

    sd: float | None
    n: int

    def __new__(cls, mean: float, sd: float | None, n: int):
        self = super().__new__(cls, mean)
        self.sd, self.n = sd, n
        return self

    def __format__(self, spec: str) -> str:
        mean = float.__format__(self, spec)
        if self.sd is None:
            return f"{mean} (n={self.n})"
        return f"{mean} ± {format(self.sd, spec.replace('+', ''))} (n={self.n})"

    def __round__(self, ndigits: int | None = None) -> "SeedMean":
        return SeedMean(round(float(self), ndigits), None if self.sd is None else round(self.sd, ndigits), self.n)

    def __reduce__(self):
        return SeedMean, (float(self), self.sd, self.n)


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def seed_mean(values: Sequence[float | None]) -> float | SeedMean | None:
    """One value per seed -> their mean with sample sd (:class:`SeedMean`) over the seeds with a value; the
    value itself when every seed has the same one (or there is one seed); None when no seed has one."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    if len(values) == 1 or (len(present) == len(values) and all(v == values[0] for v in values)):
        return values[0]
    sd = statistics.stdev(present) if len(present) > 1 else None
    return SeedMean(statistics.fmean(present), sd, len(present))


def over_seeds(per_seed: Sequence[Any], where: str = "") -> Any:
    """The same structure computed once per seed (rows: lists, dicts, tuples of numbers and labels) ->
    one, numbers merged by :func:`seed_mean`. Labels (strings, booleans) must agree between seeds, as must
    the shape; ValueError naming the place otherwise."""
    if not per_seed:
        raise ValueError("over_seeds: no seed")
    first = per_seed[0]
    if len(per_seed) == 1:
        return first
    if all(v is None or _number(v) for v in per_seed) and any(_number(v) for v in per_seed):
        return seed_mean(per_seed)
    if isinstance(first, Mapping):
        if not all(isinstance(v, Mapping) for v in per_seed):
            raise ValueError(f"seed replicates differ in shape at {where or 'top'}")
        keys = list(dict.fromkeys(k for v in per_seed for k in v))
        return {k: over_seeds([v.get(k) for v in per_seed], f"{where}.{k}" if where else str(k)) for k in keys}
    if isinstance(first, (list, tuple)):
        if not all(isinstance(v, type(first)) and len(v) == len(first) for v in per_seed):
            raise ValueError(f"seed replicates differ in shape at {where or 'top'}")
        merged = [over_seeds(list(items), f"{where}[{i}]") for i, items in enumerate(zip(*per_seed))]
        return tuple(merged) if isinstance(first, tuple) else merged
    if any(v != first for v in per_seed):
        raise ValueError(f"seed replicates disagree at {where or 'top'}: {per_seed!r}")
    return first


def per_seed_specs(specs: Sequence[Mapping]) -> list[list[dict]]:
    """Model (or row) specs of a table command, each with optional ``seed_replicates``: a list of mappings,
    one per further seed, of the keys that differ for that seed (its result files) -> one list of specs per
    seed, the first the specs as given. Every spec with replicates must have as many; a spec without
    any stands for itself in every seed."""
    counts = {len(s.get(REPLICATES) or ()) for s in specs} - {0}
    if len(counts) > 1:
        raise ValueError(f"{REPLICATES}: the models have different numbers of seed replicates {sorted(counts)}")
    n = 1 + (counts.pop() if counts else 0)
    plain = [{k: v for k, v in s.items() if k != REPLICATES} for s in specs]
    out = [plain]
    for k in range(n - 1):
        out.append([{**p, **(s[REPLICATES][k] if s.get(REPLICATES) else {})} for p, s in zip(plain, specs)])
    return out


def seed_columns(lines: Sequence[Mapping], fields: Sequence[str]) -> tuple[list[dict], list[str]]:
    """CSV lines and their fields with every :class:`SeedMean` as its mean and, beside each field that
    holds one, ``<field>_sd`` and ``<field>_n_seeds`` (empty where the value is the same in every seed). Lines
    and fields unchanged when no value varies between seeds."""
    varying = [f for f in fields if any(isinstance(line.get(f), SeedMean) for line in lines)]
    if not varying:
        return [dict(line) for line in lines], list(fields)
    out_fields = [name for f in fields for name in ((f, f"{f}_sd", f"{f}_n_seeds") if f in varying else (f,))]
    out = []
    for line in lines:
        row = dict(line)
        for f in varying:
            v = line.get(f)
            spread = isinstance(v, SeedMean)
            row[f] = float(v) if spread else v
            row[f"{f}_sd"], row[f"{f}_n_seeds"] = (v.sd, v.n) if spread else (None, None)
        out.append(row)
    return out, out_fields


def has_replicates(rows: Any) -> bool:
    """Whether any value of ``rows`` (nested) varies between seeds: the table then says what ± means."""
    if isinstance(rows, SeedMean):
        return True
    if isinstance(rows, Mapping):
        return any(has_replicates(v) for v in rows.values())
    if isinstance(rows, (list, tuple)):
        return any(has_replicates(v) for v in rows)
    return False
