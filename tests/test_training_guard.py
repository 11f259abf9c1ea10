"""laser_repro.models.training_guard and its use by `laser-repro train`: a checkpoint directory is resumed
only by the model it was made for, a job that makes no update fails, one trainer per directory,
and the workers of a killed launcher die with it."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from laser_repro.models import training_guard as guard
from laser_repro.models.training_guard import planned_tokens_per_update

SETTINGS = {"pairs": ["deu-eng", "fra-spa", "eng-eng"], "targets": ["eng", "spa"],
            "model": {"encoder_layers": 1, "dropout": 0.1},
            "train": {"lr": 0.001, "max_tokens": 8000, "gpus": 16, "update_freq": 1,
                      "tokens_per_update": 128000, "max_epoch": 17, "seed": 1, "log_interval": 100}}


def fake_data(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "dict.txt").write_text("a 1\nb 1\n")
    for src, tgt in (("deu", "eng"), ("fra", "spa")):
        for lang in (src, tgt):
            for ext in ("bin", "idx"):
                (root / f"train.{src}-{tgt}.{lang}.{ext}").write_bytes(f"{src}{tgt}{lang}{ext}".encode())
    return root


def with_train(**changes):
    return dict(SETTINGS, train=dict(SETTINGS["train"], **changes))


# -- fingerprint (no fairseq) -------------------------------------------------------------------


def test_model_settings_leave_out_processes_stopping_and_logging():
    base = guard.model_settings(SETTINGS)
    assert base["train"] == {"lr": 0.001, "max_tokens": 8000, "seed": 1, "tokens_per_update": 128000}
    # other GPU counts, a longer run, another log interval: the same model
    assert guard.model_settings(with_train(gpus=4, update_freq=4, cpu_processes=2, max_epoch=20,
                                           log_interval=5, early_stopping={"patience": 3})) == base
    assert guard.model_settings(with_train(seed=2)) != base
    # without tokens_per_update the GPU count plans the batch: then it does change the model
    plain = {k: v for k, v in SETTINGS["train"].items() if k != "tokens_per_update"}
    assert planned_tokens_per_update(plain) == 128000
    assert planned_tokens_per_update(dict(plain, gpus=0)) == 8000
    # the NLI data is fingerprinted by content, not by its path
    nli = guard.model_settings(dict(SETTINGS, nli={"data": "/a/nli/train", "weight": 1}))
    assert nli["nli"] == {"weight": 1}


def test_fingerprint_names_what_differs(tmp_path):
    data = fake_data(tmp_path / "data")
    fp, _ = guard.compute_fingerprint(SETTINGS, data)
    assert set(fp["data"]) == {f"train.{pair}.{lang}.{ext}" for pair in ("deu-eng", "fra-spa")
                               for lang in pair.split("-") for ext in ("bin", "idx")}  # eng-eng: skipped
    assert guard.fingerprint_differences(fp, fp) == []
    other, _ = guard.compute_fingerprint(with_train(seed=2, gpus=1, max_epoch=3), data)
    assert guard.fingerprint_differences(fp, other) == ["settings: train.seed (1 -> 2)"]
    (data / "dict.txt").write_text("a 1\nc 1\n")
    (data / "train.fra-spa.spa.bin").write_bytes(b"new BPE")
    (data / "valid.deu-eng.deu.bin").write_bytes(b"held out")  # a file the run now reads
    changed, _ = guard.compute_fingerprint(SETTINGS, data)
    assert guard.fingerprint_differences(fp, changed) == [
        "dictionary: dict.txt", "data files: train.fra-spa.spa.bin, valid.deu-eng.deu.bin"]
    assert guard.fingerprint_differences(None, fp) == ["no fingerprint (a checkpoint directory of an older version)"]
    # the NLI objective's files, named by role (their directory may move)
    nli = {"data": str(tmp_path / "nli" / "train"), "weight": 1}
    files = guard.data_files(data, dict(SETTINGS, nli=nli))
    assert {k: v for k, v in files.items() if k.startswith("nli")} == {
        f"nli{suffix}": Path(f"{nli['data']}{suffix}") for suffix in (
            ".premise.bin", ".premise.idx", ".hypothesis.bin", ".hypothesis.idx", ".label.npy")}
    assert not [k for k in guard.data_files(data, dict(SETTINGS, nli=dict(nli, weight=0))) if k.startswith("nli")]


def test_unchanged_files_are_not_hashed_again(tmp_path, monkeypatch):
    data = fake_data(tmp_path / "data")
    first, stats = guard.compute_fingerprint(SETTINGS, data)
    read = []
    real = guard.sha256_file
    monkeypatch.setattr(guard, "sha256_file", lambda p: read.append(Path(p).name) or real(p))
    assert guard.compute_fingerprint(SETTINGS, data, stats)[0] == first and read == []
    (data / "train.deu-eng.deu.idx").unlink()  # rewritten (binarize replaces files): new inode and mtime
    (data / "train.deu-eng.deu.idx").write_bytes(b"other")
    again, _ = guard.compute_fingerprint(SETTINGS, data, stats)
    assert read == ["train.deu-eng.deu.idx"] and again != first


def test_prepare_save_dir_keeps_matching_and_moves_other_contents_aside(tmp_path, caplog):
    data = fake_data(tmp_path / "data")
    save = tmp_path / "run" / "checkpoints"
    first = guard.prepare_save_dir(save, SETTINGS, data)
    assert first["moved_to"] is None and guard.read_fingerprint_file(save)["digest"] == first["digest"]
    (save / "checkpoint_last.pt").write_bytes(b"seed 1 model")
    # same model (a longer run): resumable
    assert guard.prepare_save_dir(save, with_train(max_epoch=30), data)["moved_to"] is None
    assert (save / "checkpoint_last.pt").exists()
    # other seed: the contents move aside, the lock file stays
    with guard.TrainingLock(save), caplog.at_level(logging.WARNING):
        moved = guard.prepare_save_dir(save, with_train(seed=2), data)["moved_to"]
    assert moved.parent == save.parent and moved.name.startswith("checkpoints.stale-")
    assert (moved / "checkpoint_last.pt").read_bytes() == b"seed 1 model"
    assert sorted(p.name for p in save.iterdir()) == [guard.LOCK_FILE, guard.FINGERPRINT_FILE]
    assert "train.seed (1 -> 2)" in caplog.text and str(moved) in caplog.text
    # a directory of an older version (checkpoints, no fingerprint) is stale too
    (save / guard.FINGERPRINT_FILE).unlink()
    (save / "checkpoint_last.pt").write_bytes(b"old version")
    moved2 = guard.prepare_save_dir(save, with_train(seed=2), data)["moved_to"]
    assert moved2 != moved and (moved2 / "checkpoint_last.pt").read_bytes() == b"old version"


def test_lock_refuses_a_second_holder_and_dies_with_its_process(tmp_path):
    save = tmp_path / "checkpoints"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from laser_repro.models.training_guard import TrainingLock
        with TrainingLock({str(save)!r}):
            print("locked", flush=True)
            time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(guard.TrainingLockHeld, match=rf"{save}.*pid {holder.pid}\b"):
            guard.TrainingLock(save).__enter__()
    finally:
        holder.kill()  # SIGKILL: the kernel releases the flock
        holder.wait()
    with guard.TrainingLock(save) as lock:
        assert (save / guard.LOCK_FILE).read_text().split()[0] == str(os.getpid())
        assert lock.path == save / guard.LOCK_FILE


def test_second_trainer_is_refused_by_the_cli(tmp_path):
    save = tmp_path / "checkpoints"
    cmd = [sys.executable, "-m", "laser_repro.cli", "train", "--data", str(tmp_path / "data"), "--save-dir",
           str(save), "--final", str(tmp_path / "final.pt"), "--settings", json.dumps(SETTINGS)]
    with guard.TrainingLock(save):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert f"{save} is locked by another trainer (pid {os.getpid()}" in proc.stderr
    assert not (save / guard.FINGERPRINT_FILE).exists()  # refused before touching anything


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids, timeout=10.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl(PR_SET_PDEATHSIG) is Linux's")


@linux_only
def test_child_dies_with_the_process_that_started_it(tmp_path):
    """launch_workers' preexec_fn: SIGKILL of the launcher kills its child (in its own session)."""
    launcher = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import os, subprocess, sys, time
        from laser_repro.models.training_guard import die_with_parent_preexec
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,
                                 preexec_fn=die_with_parent_preexec(os.getpid()))
        print(child.pid, flush=True)
        time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    child = int(launcher.stdout.readline())
    assert alive(child)
    launcher.kill()
    launcher.wait()
    assert wait_gone([child]) == []


@linux_only
def test_worker_whose_launcher_is_gone_exits():
    """die_with_parent: a worker checks that its parent is still the launcher's child."""
    code = "from laser_repro.models.training_guard import die_with_parent; die_with_parent(); print('alive')"
    middle = f"import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', {code!r}]).returncode)"
    env = dict(os.environ, **{guard.LAUNCHER_PID_ENV: str(os.getpid())})
    ok = subprocess.run([sys.executable, "-c", middle], env=env, capture_output=True, text=True)
    assert (ok.returncode, ok.stdout.strip()) == (0, "alive"), ok.stderr
    env[guard.LAUNCHER_PID_ENV] = "1"  # not its grandparent: the launcher died before the prctl
    orphan = subprocess.run([sys.executable, "-c", middle], env=env, capture_output=True, text=True)
    assert orphan.returncode == 1 and "alive" not in orphan.stdout and "launcher (pid 1) is gone" in orphan.stderr


# -- through `laser-repro train` (fairseq) ------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    pytest.importorskip("fairseq")
    from tiny_corpus import build_binarized

    return build_binarized(tmp_path_factory.mktemp("guard_corpus"))


def tiny_settings(**train):
    from tiny_corpus import LANG_PAIRS, SMALL_MODEL, TARGETS

    return {"pairs": LANG_PAIRS.split(","), "targets": TARGETS.split(","), "model": SMALL_MODEL,
            "train": dict({"lr": 0.005, "max_tokens": 120, "gpus": 0, "update_freq": 1, "max_epoch": 1,
                           "seed": 1, "log_interval": 5}, **train)}


def train_in_process(data, run_dir, settings):
    """`laser-repro train` in this process (one worker: no torchrun); returns train_status.json."""
    from laser_repro import cli

    cli.main(["train", "--data", str(data), "--save-dir", str(run_dir / "checkpoints"), "--final",
              str(run_dir / "final.pt"), "--initial", str(run_dir / "init.pt"), "--threads", "1",
              "--settings", json.dumps(settings)])
    return json.loads((run_dir / "checkpoints" / "train_status.json").read_text())


def weights(path):
    from laser_repro.models.laser import fairseq_bridge

    return fairseq_bridge.load_checkpoint(path)["model"]


def same_weights(a, b) -> bool:
    return a.keys() == b.keys() and all(a[k].shape == b[k].shape and bool((a[k] == b[k]).all()) for k in a)


@pytest.fixture
def trained(corpus, tmp_path_factory, torch_single_thread):
    """A run trained for one epoch with seed 1 (trained once, copied for each test)."""
    cache = tmp_path_factory.getbasetemp() / "guard_trained"
    if not cache.exists():
        assert train_in_process(corpus, cache, tiny_settings())["status"] == "completed"
    run = tmp_path_factory.mktemp("run")
    shutil.copytree(cache, run, dirs_exist_ok=True)
    return run


def test_other_seed_or_dictionary_trains_afresh_beside_the_old_model(corpus, trained, caplog, tmp_path):
    before = weights(trained / "final.pt")
    with caplog.at_level(logging.WARNING):
        status = train_in_process(corpus, trained, tiny_settings(seed=2))
    (stale,) = trained.glob("checkpoints.stale-*")
    assert "train.seed (1 -> 2)" in caplog.text and str(stale) in caplog.text
    assert status["status"] == "completed" and status["start_updates"] == 0 and status["num_updates"] > 0
    assert same_weights(weights(stale / "checkpoint_last.pt"), before)  # kept aside, untouched
    assert not same_weights(weights(trained / "final.pt"), before)
    assert status["fingerprint"] == json.loads((trained / "checkpoints" / "fingerprint.json").read_text())["digest"]
    assert (status["threads"], status["world_size"]) == (1, 1)

    # new preprocessing (here: one more dictionary entry; same binarized data)
    data = tmp_path / "data"
    shutil.copytree(corpus, data)
    with open(data / "dict.txt", "a", encoding="utf-8") as fh:
        fh.write("zz▁new 1\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        status = train_in_process(data, trained, tiny_settings(seed=2))
    (warning,) = [r.getMessage() for r in caplog.records if "not resumed" in r.getMessage()]
    assert "not resumed: dictionary: dict.txt." in warning
    assert len(list(trained.glob("checkpoints.stale-*"))) == 2 and status["start_updates"] == 0
    assert weights(trained / "final.pt")["encoder.embed_tokens.weight"].shape[0] == \
        before["encoder.embed_tokens.weight"].shape[0] + 1


def test_same_model_resumes(corpus, trained, caplog):
    done = json.loads((trained / "checkpoints" / "train_status.json").read_text())["num_updates"]
    # a longer run of the same model resumes (max_epoch is not in the fingerprint)
    with caplog.at_level(logging.INFO):
        status = train_in_process(corpus, trained, tiny_settings(max_epoch=2))
    assert f"@ {done} updates" in caplog.text and not list(trained.glob("checkpoints.stale-*"))
    assert (status.get("start_updates"), status["num_updates"]) == (done, 2 * done)


def test_a_job_without_update_fails_unless_its_run_had_completed(corpus, trained, caplog):
    done = json.loads((trained / "checkpoints" / "train_status.json").read_text())["num_updates"]
    last = trained / "checkpoints" / "checkpoint_last.pt"
    # the job completed but died before publishing: the rerun publishes that model, no training
    (trained / "final.pt").unlink()
    with caplog.at_level(logging.INFO):
        status = train_in_process(corpus, trained, tiny_settings())
    assert "training already completed at update" in caplog.text and "Loaded checkpoint" not in caplog.text
    assert status["num_updates"] == done and same_weights(weights(trained / "final.pt"), weights(last))

    # other stopping criteria under which the checkpoint is already done: an error, nothing published
    # (fairseq itself would make one update past --max-update)
    (trained / "final.pt").unlink()
    with pytest.raises(SystemExit, match=rf"no update was made: {last} is already at update {done}, "
                                         rf".*max_update={done}"):
        train_in_process(corpus, trained, tiny_settings(max_update=done))
    assert not (trained / "final.pt").exists()
    assert json.loads((trained / "checkpoints" / "train_status.json").read_text())["status"] == "failed"
    # no record that the run completed: an error even with the settings it was trained with
    with pytest.raises(SystemExit, match="no update was made"):
        train_in_process(corpus, trained, tiny_settings())
    assert not (trained / "final.pt").exists()
    assert fairseq_updates(last) == done


def fairseq_updates(path) -> int:
    from laser_repro.models.laser import fairseq_bridge

    return fairseq_bridge.checkpoint_num_updates(fairseq_bridge.load_checkpoint(path))


@linux_only
def test_killed_launcher_takes_its_workers_along(corpus, tmp_path):
    """SIGKILL to the launcher of a 2-process (torchrun, gloo) run: torchrun and both workers end."""
    psutil = pytest.importorskip("psutil")
    run = tmp_path / "run"
    run.mkdir()
    conf = tiny_settings(max_epoch=1000, log_interval=1, cpu_processes=2, update_freq=2)  # 2 x 120 tokens
    cmd = [sys.executable, "-m", "laser_repro.cli", "train", "--data", str(corpus), "--save-dir",
           str(run / "checkpoints"), "--final", str(run / "final.pt"), "--threads", "2", "--settings", json.dumps(conf)]
    log_path = run / "train.log"
    with open(log_path, "w") as log:
        launcher = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    descendants = []
    try:
        deadline = time.monotonic() + 240
        while '"num_updates"' not in log_path.read_text():  # both workers are training
            assert launcher.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.1)
        descendants = [p.pid for p in psutil.Process(launcher.pid).children(recursive=True)]
        assert len(descendants) >= 3, descendants  # torchrun + 2 workers
        launcher.kill()
        launcher.wait()
        assert wait_gone(descendants) == [], [psutil.Process(p).cmdline() for p in descendants if alive(p)]
    finally:
        if launcher.poll() is None:
            launcher.kill()
        for pid in descendants:  # whatever this test started and left
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
