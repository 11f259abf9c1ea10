"""The launcher's SLURM queries (issue 36, item 8a): a ``squeue`` / ``scontrol`` that fails or hangs must not
end training -- the master trains without a deadline, a worker reads the rendezvous host from the node list
itself -- each with a warning; a failed ``scontrol show job`` is one line naming the command."""

import logging
import os
import time

import pytest

from laser_repro.models import launch


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """``fake_slurm(name, script)``: put a shell script named ``name`` first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def install(name, script):
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + script + "\n")
        path.chmod(0o755)

    return install


FAILING = 'echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2; exit 1'
HANGING = "exec sleep 60"


@pytest.mark.parametrize("script, why", [(FAILING, "exit status 1 (slurm_load_jobs error"),
                                         (HANGING, "no answer within")])
def test_failing_squeue_trains_without_a_deadline(fake_slurm, monkeypatch, caplog, script, why):
    monkeypatch.setattr(launch, "SLURM_QUERY_TIMEOUT_S", 0.5)
    fake_slurm("squeue", script)
    with caplog.at_level(logging.WARNING, logger=launch.__name__):
        assert launch.training_deadline(300, {"SLURM_JOB_ID": "7"}) is None
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "squeue -h -j 7 -o %L" in warning and why in warning and "without a deadline" in warning


def test_answering_squeue_still_sets_the_deadline(fake_slurm):
    fake_slurm("squeue", 'echo "1:00:00"')
    before = time.time()
    deadline = launch.training_deadline(300, {"SLURM_JOB_ID": "7"})
    assert before + 3300 <= deadline <= time.time() + 3300
    fake_slurm("squeue", 'echo "garbage:1:2:3"')  # an answer that is no duration: no deadline either
    assert launch.training_deadline(300, {"SLURM_JOB_ID": "7"}) is None


@pytest.mark.parametrize("script", [FAILING, HANGING])
def test_failing_scontrol_hostnames_falls_back_to_the_node_list(fake_slurm, monkeypatch, caplog, script):
    monkeypatch.setattr(launch, "SLURM_QUERY_TIMEOUT_S", 0.5)
    fake_slurm("scontrol", script)
    env = {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "16", "SLURM_STEP_NODELIST": "gpu[07-08]",
           "SLURM_JOB_ID": "123"}
    with caplog.at_level(logging.WARNING, logger=launch.__name__):
        rank = launch.worker_rank(env)
    assert (rank.world_size, rank.master_addr, rank.source) == (16, "gpu07", "srun")
    assert "scontrol show hostnames gpu[07-08]" in caplog.text and "read from the node list" in caplog.text
    fake_slurm("scontrol", 'echo gpu07; echo gpu08')  # when it answers, its answer counts
    assert launch.worker_rank(env).master_addr == "gpu07"


def test_failing_scontrol_show_job_is_one_line(fake_slurm):
    fake_slurm("scontrol", FAILING)
    with pytest.raises(RuntimeError) as err:
        launch.slurm_job_geometry("123")
    message = str(err.value)
    assert "\n" not in message and message.startswith("scontrol show job 123: exit status 1")
    assert "cannot be started" in message


def test_first_host_of_a_node_list():
    cases = {"gpu07": "gpu07", "gpu07,gpu08": "gpu07", "gpu[07-08,10],cpu1": "gpu07", "n[3,1-2]": "n3",
             "rack1-n[01-04],rack2-n[01-04]": "rack1-n01", "a[1-2]b[05-06]": "a1b05"}
    assert {k: launch.first_host_of_nodelist(k) for k in cases} == cases
    with pytest.raises(ValueError, match="not a SLURM host list"):
        launch.first_host_of_nodelist("gpu[07")


def test_workers_are_given_every_output_of_the_launcher():
    """The launcher never passed --record to its workers: every multi-process training (torchrun or srun) that
    trained to the end wrote no model_record.json, its job failed and the retry published without training
    (found by scripts/two_node_check.sh)."""
    from argparse import Namespace

    from laser_repro.models.training import _train_worker_argv

    a = Namespace(data="d", save_dir="s", final="f.pt", stop_before_limit=300, settings="{}", family="laser",
                  initial="i.pt", curves="c.jsonl", record="model_record.json")
    argv = _train_worker_argv(a, threads=2)
    for opt, value in (("--final", "f.pt"), ("--initial", "i.pt"), ("--curves", "c.jsonl"),
                       ("--record", "model_record.json")):
        assert argv[argv.index(opt) + 1] == value, (opt, argv)
