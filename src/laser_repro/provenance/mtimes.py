"""mtime repair after a DVC pull (``laser-repro sync-mtimes ROOT...``): the outputs whose content and
inputs match their sidecars are re-dated (inputs first, each >= 1 s newer than its inputs, never
after now), with their jobs' benchmark files, so that Snakemake sees them up to date."""
from __future__ import annotations

import datetime as dt
import json
import os
import time

from laser_repro.provenance._common import SUFFIX, _display, _own_key, _resolve, log
from laser_repro.provenance.records import _Hasher, _stat_matches, stat_entry

MIN_GAP_NS = 1_000_000_000  # an output is dated at least 1 s after each of its inputs


def _find_sidecars(roots) -> list[str]:
    found = []
    for root in roots:
        root = os.path.abspath(os.fspath(root))
        if os.path.isfile(root) and root.endswith(SUFFIX):
            found.append(root)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            found.extend(os.path.join(dirpath, f) for f in filenames if f.endswith(SUFFIX))
    return sorted(set(found))


def _mtime_range(path: str) -> tuple[int, int]:
    """(oldest, newest) mtime_ns of a file, or of a directory and everything in it."""
    st = os.stat(path)
    if not os.path.isdir(path):
        return st.st_mtime_ns, st.st_mtime_ns
    lo = hi = st.st_mtime_ns
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            m = os.stat(os.path.join(dirpath, name)).st_mtime_ns
            lo, hi = min(lo, m), max(hi, m)
    return lo, hi


def _set_mtime(path: str, mtime_ns: int) -> None:
    """Date a file, or a directory with everything inside it (Snakemake may look at either)."""
    if os.path.isdir(path):
        for dirpath, _, filenames in os.walk(path):
            for name in filenames:
                full = os.path.join(dirpath, name)
                os.utime(full, ns=(os.stat(full).st_atime_ns, mtime_ns))
        for dirpath, _, _ in sorted(os.walk(path), key=lambda w: -w[0].count(os.sep)):
            os.utime(dirpath, ns=(os.stat(dirpath).st_atime_ns, mtime_ns))
    else:
        os.utime(path, ns=(os.stat(path).st_atime_ns, mtime_ns))


def _target_times(order: list[str], records: dict, now_ns: int) -> tuple[dict, dict]:
    """New mtimes of the verified outputs (in `order`, inputs first) and of the raw inputs, for the
    files whose mtime must change.

    Each file goes back to the mtime recorded when it was made (an output: its own sidecar; a raw
    input: the earliest its consumers recorded), raised to 1 s after its latest input where the
    original run was faster than that. A raw input is re-dated only when its current mtime is later
    than the recorded one. Times after `now` shift everything back (raw inputs included).
    Depends only on the sidecars and the raw files' current mtimes; running it twice changes nothing.
    """
    raw_recorded: dict[str, int] = {}
    for path in order:
        rec, _, root = records[path]
        for k, entry in rec.get("inputs", {}).items():
            ipath = _resolve(k, root)
            if ipath not in records and entry.get("mtime_ns") is not None and os.path.exists(ipath):
                raw_recorded[ipath] = min(raw_recorded.get(ipath, entry["mtime_ns"]), entry["mtime_ns"])
    current: dict[str, tuple[int, int]] = {}  # (oldest, newest) mtime of existing inputs and outputs

    def cur(path: str) -> tuple[int, int]:
        if path not in current:
            current[path] = _mtime_range(path)
        return current[path]

    times: dict[str, int] = {}
    raw_times: dict[str, int] = {}

    def input_time(ipath: str) -> int | None:
        if ipath in times:
            return times[ipath]
        if not os.path.exists(ipath):
            return None  # an absent input does not make Snakemake rerun
        if ipath not in raw_times:
            raw_times[ipath] = min(cur(ipath)[1], raw_recorded.get(ipath, cur(ipath)[1]))
        return raw_times[ipath]

    for path in order:
        rec, key, root = records[path]
        t = int(rec["outputs"][key].get("mtime_ns") or 0)
        for k in rec.get("inputs", {}):
            it = input_time(_resolve(k, root))
            if it is not None:
                t = max(t, it + MIN_GAP_NS)
        times[path] = t
    excess = max(times.values(), default=0) - now_ns
    if excess > 0:
        # the recorded times are too recent for 1 s steps: unless the files are already in a valid
        # order (as left by a previous run), shift everything back
        if _consistent(order, records, cur, now_ns):
            return {}, {}
        times = {p: t - excess for p, t in times.items()}
        raw_times = {p: t - excess for p, t in raw_times.items()}
    changed = {p: t for p, t in times.items() if cur(p) != (t, t)}
    return changed, {p: t for p, t in raw_times.items() if cur(p) != (t, t)}


def _benchmark_times(order: list[str], records: dict, times: dict) -> dict:
    """New mtimes of the benchmark files of the verified outputs' jobs: the newest of the job's
    outputs. Snakemake counts a benchmark as an output: one left older than a re-dated input
    would make the job rerun."""
    out: dict[str, int] = {}
    for path in order:
        rec, _, root = records[path]
        if not rec.get("benchmark"):
            continue
        bench = _resolve(rec["benchmark"], root)
        if os.path.isfile(bench):
            t = times.get(path, _mtime_range(path)[1])
            out[bench] = max(out.get(bench, t), t)
    return {p: t for p, t in out.items() if os.stat(p).st_mtime_ns != t}


def _consistent(order: list[str], records: dict, cur, now_ns: int) -> bool:
    """Whether every verified output is already >= 1 s newer than each existing input, and not in the future."""
    for path in order:
        rec, _, root = records[path]
        lo, hi = cur(path)
        if hi > now_ns:
            return False
        for k in rec.get("inputs", {}):
            ipath = _resolve(k, root)
            if os.path.exists(ipath) and lo < cur(ipath)[1] + MIN_GAP_NS:
                return False
    return True


def sync_mtimes(roots, *, dry_run: bool = False, now_ns: int | None = None, workers: int | None = None) -> dict:
    """Re-date the verified outputs under `roots` so each is >= 1 s newer than each of its inputs.

    An output is verified when its sha256 equals its sidecar's, each of its existing inputs has the
    sha256 its sidecar recorded (an absent input is fine) and each input that is itself an output
    (has a sidecar under the roots) is verified. New times: see _target_times (the recorded ones,
    with >= 1 s between a file and its inputs, never after now). Files are dated inputs first.
    Unverified outputs are not touched. Every file is hashed once (sidecar stats are not trusted
    here), in `workers` threads. Restoring the recorded mtimes also revives the hash cache.

    Returns {"verified": [paths], "untouched": {path: reason}, "times": {path: new mtime_ns}} where
    times lists the files re-dated (raw inputs included; verified outputs already right are not).
    """
    now_ns = time.time_ns() if now_ns is None else now_ns
    records: dict[str, tuple[dict, str, str]] = {}  # output abs path -> (record, key, root)
    for side in _find_sidecars(roots):
        target = side[:-len(SUFFIX)]
        try:
            with open(side, encoding="utf-8") as f:
                rec = json.load(f)
            own = _own_key(target, rec)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            log.warning("ignoring unreadable provenance sidecar %s: %s", side, err)
            continue
        if own:
            records[target] = (rec, own[0], own[1])
    hasher = _Hasher(use_cache=False)
    # an output untouched since its record (same size and mtime_ns) keeps its recorded digest: a DVC
    # stage run without a `dvc pull` before it hashes nothing again; restored files get new mtimes
    for target, (rec, own, _) in records.items():
        recorded = rec.get("outputs", {}).get(own)
        if os.path.exists(target) and _stat_matches(stat_entry(target), recorded):
            hasher.memo[target] = recorded["sha256"]
    to_hash = set(records)
    for rec, _, root in records.values():
        to_hash.update(_resolve(k, root) for k in rec.get("inputs", {}))
    hasher.prefetch(to_hash, workers or min(8, os.cpu_count() or 1))

    verdict: dict[str, str | None] = {}  # path -> None (verified) or the reason it is not
    order: list[str] = []  # verified outputs, inputs first

    def check(path: str, stack: tuple = ()) -> str | None:
        if path in verdict:
            return verdict[path]
        if path in stack:
            return "cycle in the recorded dependencies"
        rec, key, root = records[path]
        reason = None
        current = hasher(path)
        if current is None:
            reason = "missing"
        elif current != rec["outputs"][key].get("sha256"):
            reason = "content differs from its sidecar"
        else:
            for k, entry in sorted(rec.get("inputs", {}).items()):
                ipath = _resolve(k, root)
                isha = hasher(ipath)
                if isha is None:
                    continue
                if isha != entry.get("sha256"):
                    reason = f"input {_display(ipath)} differs from what it was made from"
                    break
                if ipath in records and check(ipath, stack + (path,)) is not None:
                    reason = f"input {_display(ipath)} is not verified"
                    break
        verdict[path] = reason
        if reason is None:
            order.append(path)
        return reason

    for path in sorted(records):
        check(path)

    times, raw_times = _target_times(order, records, now_ns)
    times.update(_benchmark_times(order, records, times))
    if not dry_run:
        for path, t in sorted(raw_times.items()):
            try:
                _set_mtime(path, t)
            except OSError as err:  # e.g. a read-only shared corpus: its consumers may be rerun
                log.warning("cannot re-date raw input %s: %s", path, err)
        for path in sorted(times):
            _set_mtime(path, times[path])
    untouched = {p: r for p, r in sorted(verdict.items()) if r is not None}
    return {"verified": order, "untouched": untouched, "times": {**raw_times, **times}}


def cmd_sync_mtimes(a) -> None:
    result = sync_mtimes(a.roots, dry_run=a.dry_run)
    verb = "would date" if a.dry_run else "dated"
    for path, t in result["times"].items():
        stamp = dt.datetime.fromtimestamp(t / 1e9).isoformat(timespec="seconds")
        print(f"{verb} {_display(path)}  {stamp}")
    for path, reason in result["untouched"].items():
        print(f"untouched {_display(path)}: {reason}")
    print(f"verified {len(result['verified'])}, untouched {len(result['untouched'])}, "
          f"{'to re-date' if a.dry_run else 're-dated'} {len(result['times'])}")
