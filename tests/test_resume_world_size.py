"""A LASER checkpoint resumed on another number of processes (issue 36, item 3): fairseq's
``iterations_in_epoch`` counts one process's batches, so the position is carried over to the new world size
when the batches done are the same set, and refused in one line, before training, when they cannot be."""

import json
from argparse import Namespace

import pytest
import torch

pytest.importorskip("fairseq")

import laser_repro.models.laser.fairseq_plugin  # noqa: E402,F401
from laser_repro.models.launch import Rank  # noqa: E402
from laser_repro.models.laser import fairseq_bridge  # noqa: E402
from laser_repro.models.laser.family import LaserFamily  # noqa: E402
from laser_repro.models.laser.fairseq_plugin.laser_task import LaserMultilingualTask  # noqa: E402
from laser_repro.models.training import TRAIN_STATUS  # noqa: E402
from tiny_corpus import LANG_PAIRS, SMALL_MODEL, TARGETS, build_binarized  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _single_thread(torch_single_thread):
    pass


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return build_binarized(tmp_path_factory.mktemp("laser_resume_world"))


def test_resume_position_carries_over_or_refuses():
    itr = {"epoch": 2, "iterations_in_epoch": 3}
    assert fairseq_bridge.resume_position(itr, 2, 2, "c.pt") == 3  # same world size
    assert fairseq_bridge.resume_position(itr, 2, 1, "c.pt") == 6  # 16 -> 8 GPUs: each does twice the batches
    assert fairseq_bridge.resume_position({"epoch": 2, "iterations_in_epoch": 4}, 1, 2, "c.pt") == 2
    for written_by in (3, None):  # at an epoch boundary any world size resumes
        assert fairseq_bridge.resume_position({"epoch": 3, "iterations_in_epoch": 0}, written_by, 2, "c.pt") == 0
    with pytest.raises(fairseq_bridge.ResumeRefused) as err:
        fairseq_bridge.resume_position(itr, 3, 2, "/ck/checkpoint_last.pt")
    message = str(err.value)
    assert "\n" not in message and "/ck/checkpoint_last.pt" in message
    assert "saved by 3 processes after 9 batches of epoch 2" in message and "2 processes cannot" in message
    assert "resume with 3 processes" in message and f"{fairseq_bridge.RESTART_EPOCH_ENV}=1" in message
    with pytest.raises(fairseq_bridge.ResumeRefused, match="unknown number of processes"):
        fairseq_bridge.resume_position(itr, None, 1, "c.pt")
    assert fairseq_bridge.resume_position(itr, 3, 2, "c.pt", restart_epoch=True) == 0


def test_geometry_of_a_checkpoint_without_the_record_comes_from_fairseqs_config():
    cfg = {"distributed_training": {"distributed_world_size": 2}, "optimization": {"update_freq": [1]},
           "dataset": {"max_tokens": 60}}
    expected = {"world_size": 2, "update_freq": 1, "max_tokens": 60}
    assert fairseq_bridge.checkpoint_geometry({"extra_state": {}, "cfg": cfg}) == expected
    recorded = {"world_size": 4, "update_freq": 1, "max_tokens": 30}
    assert fairseq_bridge.checkpoint_geometry({"extra_state": {fairseq_bridge.GEOMETRY_KEY: recorded},
                                               "cfg": cfg}) == recorded
    assert fairseq_bridge.checkpoint_geometry({"extra_state": {}, "cfg": None}) is None


def _task(data_dir):
    return LaserMultilingualTask.setup_task(Namespace(data=str(data_dir), lang_pairs=LANG_PAIRS, target_langs=TARGETS,
                                                      max_source_positions=250, max_target_positions=250))


def test_carried_over_position_skips_exactly_the_batches_done(data_dir):
    """fairseq's own iterators: W processes that did ``i`` batches each, resumed by W' processes at
    :func:`resume_position`, leave exactly the batches not done yet; the position as saved would not."""
    task = _task(data_dir)
    task.load_dataset("train")

    def shard(world, rank, position=None):
        itr = task.get_batch_iterator(task.dataset("train"), max_tokens=60, max_positions=task.max_positions(),
                                      seed=3, epoch=1, num_shards=world, shard_id=rank, disable_iterator_cache=True)
        if position is not None:
            itr.load_state_dict({"version": 2, "epoch": 1, "iterations_in_epoch": position, "shuffle": True})
        return [tuple(b["id"].tolist()) for b in itr.next_epoch_itr(shuffle=True) if b]

    everything = sorted(shard(1, 0))
    for written_by, done, world in ((2, 5, 1), (1, 6, 2), (4, 2, 2), (2, 6, 4)):
        trained = [b for r in range(written_by) for b in shard(written_by, r)[:done]]
        position = fairseq_bridge.resume_position({"epoch": 1, "iterations_in_epoch": done}, written_by, world, "c")
        rest = [b for r in range(world) for b in shard(world, r, position)]
        assert sorted(trained + rest) == everything, (written_by, done, world)
        if position != done:  # fairseq's own reading of the position: batches twice or never
            as_saved = [b for r in range(world) for b in shard(world, r, done)]
            assert sorted(trained + as_saved) != everything


def _settings(max_update=None, max_epoch=2):
    train = {"lr": 0.005, "max_tokens": 60, "gpus": 0, "update_freq": 2, "max_epoch": max_epoch, "seed": 3,
             "log_interval": 100, "cpu_processes": 1}
    if max_update is not None:
        train["max_update"] = max_update
    return {"pairs": LANG_PAIRS.split(","), "targets": TARGETS.split(","),
            # no dropout: the masks are drawn per process (the batches are what must be the same)
            "model": dict(SMALL_MODEL, dropout=0.0), "train": train}


def _train(data_dir, save_dir, settings, rank=Rank()):
    return LaserFamily().train_worker(data_dir, save_dir, settings, rank=rank, threads=1,
                                      device=torch.device("cpu"), stop_requested=lambda: False)


def _pretend_written_by(checkpoint, world_size):
    """Rewrite a one-process checkpoint (update_freq 2) as ``world_size`` processes save the same update:
    the batches per process and the record scale (what a run with that many gloo ranks saves,
    tests/test_distributed.py)."""
    state = fairseq_bridge.load_checkpoint(checkpoint)
    itr = state["extra_state"]["train_iterator"]
    assert state["extra_state"][fairseq_bridge.GEOMETRY_KEY] == {"world_size": 1, "update_freq": 2, "max_tokens": 60}
    assert itr["iterations_in_epoch"] % world_size == 0
    itr["iterations_in_epoch"] //= world_size
    state["extra_state"][fairseq_bridge.GEOMETRY_KEY] = {"world_size": world_size, "update_freq": 2 // world_size,
                                                         "max_tokens": 60}
    torch.save(state, checkpoint)
    return itr


def test_checkpoint_of_two_processes_continues_at_its_batch_on_one(data_dir, tmp_path):
    reference = _train(data_dir, tmp_path / "reference", _settings(max_update=8))
    assert reference["num_updates"] == 8
    interrupted = tmp_path / "interrupted"
    _train(data_dir, interrupted, _settings(max_update=4))
    itr = _pretend_written_by(interrupted / "checkpoint_last.pt", 2)
    assert (itr["epoch"], itr["iterations_in_epoch"]) == (1, 4), "the checkpoint should be mid-epoch"
    resumed = _train(data_dir, interrupted, _settings(max_update=8))
    assert (resumed["start_updates"], resumed["num_updates"]) == (4, 8)
    a = fairseq_bridge.load_checkpoint(tmp_path / "reference" / "checkpoint_last.pt")
    b = fairseq_bridge.load_checkpoint(interrupted / "checkpoint_last.pt")
    # one process throughout, the same batches in the same updates: the same weights, bit for bit
    assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    assert b["extra_state"]["train_iterator"] == a["extra_state"]["train_iterator"]


def test_epoch_boundary_resumes_and_a_position_that_cannot_be_carried_over_is_refused(data_dir, tmp_path):
    save_dir = tmp_path / "checkpoints"
    done = _train(data_dir, save_dir, _settings(max_epoch=1))
    last = save_dir / "checkpoint_last.pt"
    state = fairseq_bridge.load_checkpoint(last)
    assert state["extra_state"]["train_iterator"]["iterations_in_epoch"] == 0  # saved at the epoch's end
    state["extra_state"][fairseq_bridge.GEOMETRY_KEY]["world_size"] = 3
    torch.save(state, last)
    resumed = _train(data_dir, save_dir, _settings(max_update=done["num_updates"] + 2))
    assert (resumed["start_updates"], resumed["num_updates"]) == (done["num_updates"], done["num_updates"] + 2)

    # mid-epoch now; say 3 processes of an older version (update_freq rounded up to 1, 180 tokens per update)
    # wrote it at their update 3: 9 batches of epoch 2 done, which 2 processes cannot split
    state = fairseq_bridge.load_checkpoint(last)
    itr = state["extra_state"]["train_iterator"]
    assert (itr["epoch"], itr["iterations_in_epoch"]) == (2, 4)
    itr["iterations_in_epoch"] = 3
    state["extra_state"][fairseq_bridge.GEOMETRY_KEY] = {"world_size": 3, "update_freq": 1, "max_tokens": 60}
    torch.save(state, last)
    before = last.read_bytes()
    with pytest.raises(fairseq_bridge.ResumeRefused) as err:
        _train(data_dir, save_dir, _settings(max_update=done["num_updates"] + 6),
               rank=Rank(world_size=2, rank=0, source="torchrun"))
    message = str(err.value)
    assert "\n" not in message and str(last) in message
    assert "saved by 3 processes after 9 batches of epoch 2" in message and "2 processes cannot" in message
    status = json.loads((save_dir / TRAIN_STATUS).read_text())
    assert status["status"] == "failed" and status["error"] == message  # the launcher's last line
    assert last.read_bytes() == before  # refused before training
    assert fairseq_bridge.resume_plan(last, 1)["position"] == 9  # one process can continue at that batch
