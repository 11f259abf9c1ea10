"""A trained model's record (laser_repro.models.record) and the launcher's ties to its job
(training_guard.JobGuard, the per-attempt logs): issue 24's stale tables, orphan trainers and shared logs."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from laser_repro.models.record import (ModelRecordMismatch, check_model_records, model_records_argument,
                                       write_model_record)
from test_bisent2vec import settings as b2v_settings, write_pair
from test_training_guard import alive

LASER_REPRO = [sys.executable, "-m", "laser_repro.cli"]


def _b2v(root, **model):
    s = b2v_settings(root)
    s["model"].update(model)
    return s


def _spec(path, settings, family="bisent2vec"):
    return {"toy_b2v": {"family": family, "record": str(path), "settings": settings}}


def test_a_record_that_agrees_passes_and_process_settings_may_differ(tmp_path):
    trained = _b2v(tmp_path)
    write_model_record(tmp_path / "model_record.json", family="bisent2vec", settings=trained,
                       status={"fingerprint": "abc", "num_updates": 12, "kept_update": 12})
    now = json.loads(json.dumps(trained))
    now["train"]["threads"] = 8  # how it runs, not what it learns
    records = check_model_records(_spec(tmp_path / "model_record.json", now))
    assert records["toy_b2v"]["settings"]["model"]["ngrams"] == 2 and records["toy_b2v"]["num_updates"] == 12


def test_a_record_that_disagrees_is_refused_naming_the_record_and_the_setting(tmp_path):
    path = tmp_path / "model_record.json"
    write_model_record(path, family="bisent2vec", settings=_b2v(tmp_path, ngrams=2), status={})
    with pytest.raises(ModelRecordMismatch) as err:
        check_model_records(_spec(path, _b2v(tmp_path, ngrams=1)))
    message = str(err.value)
    assert f"model toy_b2v: its record {path} disagrees" in message
    assert "weights.model.ngrams: record 2, config 1" in message
    # stopping criteria: a model trained for fewer epochs is another model
    longer = _b2v(tmp_path)
    longer["train"]["epochs"] = 60
    with pytest.raises(ModelRecordMismatch, match="train.epochs: record 6, config 60"):
        check_model_records(_spec(path, longer))


def test_missing_foreign_or_other_family_records_are_refused(tmp_path):
    settings = _b2v(tmp_path)
    with pytest.raises(ModelRecordMismatch, match="no model record"):
        check_model_records(_spec(tmp_path / "absent.json", settings))
    (tmp_path / "other.json").write_text('{"family": "bisent2vec"}')
    with pytest.raises(ModelRecordMismatch, match="not a model record"):
        check_model_records(_spec(tmp_path / "other.json", settings))
    write_model_record(tmp_path / "r.json", family="bisent2vec", settings=settings, status={})
    with pytest.raises(ModelRecordMismatch, match="is a bisent2vec model, the config says family labse"):
        check_model_records(_spec(tmp_path / "r.json", settings, family="labse"))
    with pytest.raises(ValueError, match="--model-records"):
        model_records_argument('{"m": {"record": "x"}}')


def test_a_table_refuses_a_stale_model_in_one_line(tmp_path):
    """The table command (here Bi-Sent2Vec's) ends with one line naming both, no traceback."""
    path = tmp_path / "model_record.json"
    write_model_record(path, family="bisent2vec", settings=_b2v(tmp_path, ngrams=2), status={})
    spec = json.dumps(_spec(path, _b2v(tmp_path, ngrams=1)))
    models = json.dumps([{"name": "toy_b2v", "description": "d", "pair": ["eng", "fra"], "ngrams": 1}])
    proc = subprocess.run([*LASER_REPRO, "bisent2vec-tables", "--models", models, "--model-records", spec,
                           "--out-dir", str(tmp_path / "t"), "--run-name", "r"], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "model toy_b2v" in proc.stderr and "weights.model.ngrams: record 2, config 1" in proc.stderr
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())



def test_a_task_comparison_refuses_a_stale_model(tmp_path):
    """compare-task (the per-task tables of every model) checks the models' records like the paper tables."""
    path = tmp_path / "model_record.json"
    write_model_record(path, family="bisent2vec", settings=_b2v(tmp_path, ngrams=2), status={})
    spec = json.dumps(_spec(path, _b2v(tmp_path, ngrams=1)))
    models = json.dumps([{"name": "toy_b2v", "family": "bisent2vec", "description": "d", "scores": [], "init": [],
                          "skipped": "no encoder"}])
    args = [*LASER_REPRO, "compare-task", "--task", "europarl", "--run-name", "r", "--languages", "fra",
            "--models", models, "--md", str(tmp_path / "t.md"), "--csv", str(tmp_path / "t.csv")]
    proc = subprocess.run([*args, "--model-records", spec], capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("compare-task europarl: refusing") and "model toy_b2v" in proc.stderr
    assert "record 2, config 1" in proc.stderr
    assert not (tmp_path / "t.md").exists()
    spec = json.dumps(_spec(path, _b2v(tmp_path, ngrams=2)))
    proc = subprocess.run([*args, "--model-records", spec], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "toy_b2v (bisent2vec): not scored: no encoder" in (tmp_path / "t.md").read_text()


# ---- the launcher and its job ------------------------------------------------------------------------------
def _train_cmd(root, save, settings):
    return [*LASER_REPRO, "train", "--family", "bisent2vec", "--data", str(root), "--save-dir", str(save),
            "--final", str(save.parent / "checkpoint_final.pt"), "--record", str(save.parent / "model_record.json"),
            "--threads", "1", "--settings", json.dumps(settings)]


def _wait_for(predicate, timeout=120.0, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def _long_settings(root):
    s = b2v_settings(root)
    s["train"].update(epochs=200_000, validations_per_epoch=1)  # far longer than the test waits
    return s


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux-only")
def test_a_trainer_whose_job_shell_is_killed_stops_and_publishes_nothing(tmp_path):
    """SIGKILL to the job's shell (a Snakemake job killed hard): the trainer must not train on and publish
    later. It gets SIGTERM from the kernel, checkpoints and exits 75; nothing is published."""
    root = write_pair(tmp_path / "d", n_train=200, n_valid=20)
    save = tmp_path / "m" / "checkpoints"
    cmd = " ".join(f"'{c}'" for c in _train_cmd(root, save, _long_settings(root)))
    # `; true`: bash stays the trainer's parent (it would exec a lone command)
    shell = subprocess.Popen(["bash", "-c", f"{cmd} > '{tmp_path}/train.log' 2>&1; true"], start_new_session=True)
    try:
        _wait_for(lambda: (save / "curves.json").exists(), what="the trainer's first validation")
        [trainer] = _children(shell.pid)
        os.kill(shell.pid, signal.SIGKILL)
        shell.wait()
        _wait_for(lambda: not alive(trainer), timeout=60, what="the orphaned trainer to stop")
    finally:
        os.killpg(shell.pid, signal.SIGKILL) if alive(shell.pid) else None
    log = (tmp_path / "train.log").read_text()
    assert "stop requested: saved checkpoint_last.pt" in log, log[-3000:]
    assert not (tmp_path / "m" / "checkpoint_final.pt").exists() and not (tmp_path / "m" / "model_record.json").exists()
    assert (save / "checkpoint_last.pt").exists()  # the next run resumes from here
    status = json.loads((save / "train_status.json").read_text())
    assert status["status"] == "preempted"


def test_an_orphan_that_missed_the_signal_publishes_nothing(tmp_path, monkeypatch):
    from laser_repro.models import training_guard

    guard = training_guard.JobGuard()
    monkeypatch.setattr(guard, "parent", os.getppid() + 1)  # as if re-parented since it started
    with pytest.raises(SystemExit, match="is an orphan and publishes nothing"):
        guard.check()


def test_two_trainers_on_one_model_each_keep_their_own_log(tmp_path):
    """A second job on the same checkpoint directory is refused (the lock); both attempts' output survives
    in <save_dir>/attempts/, whatever happens to the rule's shared log."""
    root = write_pair(tmp_path / "d", n_train=200, n_valid=20)
    save = tmp_path / "m" / "checkpoints"
    first = subprocess.Popen(_train_cmd(root, save, _long_settings(root)), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        _wait_for(lambda: (save / "curves.json").exists(), what="the first trainer's first validation")
        second = subprocess.run(_train_cmd(root, save, _long_settings(root)), capture_output=True, text=True,
                                timeout=120)
        assert second.returncode != 0 and "Traceback" not in second.stderr
        assert f"pid {first.pid}" in second.stderr, second.stderr[-2000:]
    finally:
        os.killpg(first.pid, signal.SIGTERM)
        out, _ = first.communicate(timeout=120)
    assert first.returncode == 75, out[-3000:]
    attempts = sorted((save / "attempts").iterdir())
    assert len(attempts) == 2, attempts
    texts = {p.name.rsplit("-", 1)[1].removesuffix(".log"): p.read_text() for p in attempts}
    assert f"pid {first.pid}" in texts[str(first.pid)] and "stop requested" in texts[str(first.pid)]
    [other] = [t for pid, t in texts.items() if pid != str(first.pid)]
    assert f"pid {first.pid}" in other and "lock" in other.lower()
    # the first attempt's output reached its own stdout too (the rule's log)
    assert "stop requested" in out
