"""End to end through fairseq on a tiny synthetic corpus: binarize -> batches -> train ->
resume -> export -> standalone encoder parity."""

from argparse import Namespace

import numpy as np
import pytest
import torch

pytest.importorskip("fairseq")

import laser_repro.models.laser.fairseq_plugin  # noqa: E402,F401
from laser_repro.models.laser import fairseq_bridge  # noqa: E402
from laser_repro.models.laser.encoder import SentenceEncoder  # noqa: E402
from laser_repro.models.laser.export import export_encoder  # noqa: E402
from laser_repro.models.laser.fairseq_plugin.laser_task import LaserMultilingualTask  # noqa: E402
from tiny_corpus import LANG_PAIRS, PAIRS, SMALL_MODEL, TARGETS, build_binarized  # noqa: E402

pytestmark = pytest.mark.slow

@pytest.fixture(autouse=True)
def _single_thread(torch_single_thread):
    pass


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return build_binarized(tmp_path_factory.mktemp("laser_train"))


def test_binarized_layout(data_dir):
    names = {p.name for p in data_dir.iterdir()}
    for src, tgt in PAIRS:
        for split in ("train", "valid"):
            for lang in (src, tgt):
                assert {f"{split}.{src}-{tgt}.{lang}.bin", f"{split}.{src}-{tgt}.{lang}.idx"} <= names
    assert not [n for n in names if n.startswith(".binarize")], "temporary directory left behind"
    assert not [n for n in names if "eng-eng" in n]
    assert "Wrote preprocessed data" in (data_dir.parent / "binarize.deu-eng.log").read_text()
    # in-process binarization leaves no FileHandler of fairseq's behind
    import logging

    assert not [h for h in logging.getLogger("fairseq_cli.preprocess").handlers if isinstance(h, logging.FileHandler)]
    with pytest.raises(ValueError):
        fairseq_bridge.binarize_pair("eng", "eng", data_dir / "x", data_dir / "dict.txt", data_dir)


def test_binarize_workers_write_the_same_bytes(tmp_path):
    """binarize_pair takes the rule's threads as fairseq-preprocess workers: the files must not depend on them."""
    import random

    rng = random.Random(3)
    words = [f"w{i}" for i in range(300)]
    (tmp_path / "dict.txt").write_text("".join(f"{w} 1\n" for w in words), encoding="utf-8")
    for lang in ("deu", "eng"):
        (tmp_path / f"train.{lang}").write_text("".join(" ".join(rng.choices(words, k=rng.randint(1, 30))) + "\n"
                                                        for _ in range(3000)), encoding="utf-8")
    written = {}
    for workers in (1, 3):
        dest = tmp_path / f"bin{workers}"
        fairseq_bridge.binarize_pair("deu", "eng", tmp_path / "train", tmp_path / "dict.txt", dest, workers=workers)
        written[workers] = {p.name: p.read_bytes() for p in sorted(dest.glob("train.*"))}
    assert len(written[1]) == 4 and written[1] == written[3]


def make_task(data_dir):
    args = Namespace(data=str(data_dir), lang_pairs=LANG_PAIRS, target_langs=TARGETS,
                     max_source_positions=250, max_target_positions=250)
    return LaserMultilingualTask.setup_task(args)


def epoch_batches(task, dataset, epoch, seed=1, max_tokens=60):
    itr = task.get_batch_iterator(
        dataset, max_tokens=max_tokens, max_positions=task.max_positions(), seed=seed, epoch=epoch,
        disable_iterator_cache=True,
    ).next_epoch_itr(shuffle=True)
    return list(itr)


def test_batches_are_single_pair_with_target_language_id(data_dir):
    task = make_task(data_dir)
    assert task.lang_pairs == PAIRS  # eng-eng skipped
    assert task.target_langs == ["eng", "spa"]
    task.load_dataset("train")
    ds = task.dataset("train")
    assert len(ds) == 70 * len(PAIRS)
    batches = epoch_batches(task, ds, epoch=1)
    seen = []
    pair_sequence = []
    for batch in batches:
        ids = batch["id"].numpy()
        pairs = set(ds.pair_index(ids).tolist())
        assert len(pairs) == 1, "a batch mixes language pairs"
        (pair,) = pairs
        lang_id = batch["net_input"]["tgt_lang_id"]
        assert lang_id.dtype == torch.long and lang_id.shape == (len(ids),)
        assert (lang_id == task.target_langs.index(PAIRS[pair][1])).all()
        assert batch["net_input"]["src_tokens"].size(1) == int(batch["net_input"]["src_lengths"].max())
        seen.extend(ids.tolist())
        pair_sequence.append(pair)
    assert sorted(seen) == list(range(len(ds)))  # every sentence pair exactly once
    assert set(pair_sequence) == set(range(len(PAIRS)))
    switches = sum(a != b for a, b in zip(pair_sequence, pair_sequence[1:]))
    assert switches >= len(PAIRS), "batches of the pairs should be interleaved"
    # deterministic for a seed, reshuffled across epochs
    again = [b["id"].tolist() for b in epoch_batches(task, ds, epoch=1)]
    assert again == [b["id"].tolist() for b in batches]
    assert [b["id"].tolist() for b in epoch_batches(task, ds, epoch=2)] != again
    # the right-padded source rows match the binarized sentences
    batch = batches[0]
    for row, idx in enumerate(batch["id"].tolist()):
        n = int(batch["net_input"]["src_lengths"][row])
        assert torch.equal(batch["net_input"]["src_tokens"][row, :n], ds[idx]["source"])


def test_the_source_lengths_stay_on_the_host_and_encode_the_same(data_dir):
    """The collater's NumPy copy of the lengths is left alone by fairseq's move to the GPU (no host sync to
    read them back for packing), and the encoder gives the same embeddings with it as without it."""
    from fairseq import utils

    from laser_repro.models.laser.fairseq_plugin.laser_lstm import LaserLSTMEncoder

    task = make_task(data_dir)
    task.load_dataset("train")
    batch = epoch_batches(task, task.dataset("train"), epoch=1)[0]
    net_input = batch["net_input"]
    host = net_input["src_lengths_host"]
    assert isinstance(host, np.ndarray) and host.tolist() == net_input["src_lengths"].tolist()
    moved = utils.apply_to_sample(lambda t: t.double(), batch)  # what move_to_cuda applies to, and only that
    assert moved["net_input"]["src_tokens"].dtype == torch.float64 and moved["net_input"]["src_lengths_host"] is host
    torch.manual_seed(0)
    encoder = LaserLSTMEncoder(task.source_dictionary, embed_dim=8, hidden_size=6, num_layers=2).eval()
    with torch.no_grad():
        with_host = encoder(net_input["src_tokens"], net_input["src_lengths"], src_lengths_host=host)["sentemb"]
        without = encoder(net_input["src_tokens"], net_input["src_lengths"])["sentemb"]
    assert torch.equal(with_host, without)


def test_resumed_epoch_sees_the_batches_of_an_uninterrupted_run(data_dir):
    """fairseq forms batches with seed + the epoch at which the iterator is created; the task
    re-forms them every epoch, so an iterator created at epoch 3 (a resumed run) matches one
    carried over from epoch 1."""
    task = make_task(data_dir)
    task.load_dataset("train")
    carried = task.get_batch_iterator(task.dataset("train"), max_tokens=60, max_positions=task.max_positions(),
                                      seed=3, epoch=1)
    for epoch in (1, 2, 3):
        carried_ids = [b["id"].tolist() for b in carried.next_epoch_itr(shuffle=True)]
        fresh = make_task(data_dir)
        fresh.load_dataset("train")
        created = fresh.get_batch_iterator(fresh.dataset("train"), max_tokens=60,
                                           max_positions=fresh.max_positions(), seed=3, epoch=epoch)
        assert [b["id"].tolist() for b in created.next_epoch_itr(shuffle=True)] == carried_ids, epoch


def test_missing_validation_data_needs_disable_validation(data_dir, tmp_path):
    task = make_task(data_dir)
    with pytest.raises(FileNotFoundError, match="disable-validation"):
        task.load_dataset("test")
    argv = fairseq_bridge.fairseq_train_argv(tmp_path, tmp_path / "ck", LANG_PAIRS, TARGETS, SMALL_MODEL,
                                             dict(lr=1e-3, max_tokens=10, update_freq=1, max_epoch=1, seed=1,
                                                  log_interval=1), cpu=True)
    assert "--disable-validation" in argv
    argv = fairseq_bridge.fairseq_train_argv(data_dir, tmp_path / "ck", LANG_PAIRS, TARGETS, SMALL_MODEL,
                                             dict(lr=1e-3, max_tokens=10, update_freq=1, max_epoch=1, seed=1,
                                                  log_interval=1), cpu=True)
    assert "--disable-validation" not in argv


def collate(ids_list, pad):
    T = max(len(x) for x in ids_list)
    tokens = torch.full((len(ids_list), T), pad, dtype=torch.long)
    for i, ids in enumerate(ids_list):
        tokens[i, : len(ids)] = torch.tensor(ids)
    return tokens, torch.tensor([len(x) for x in ids_list])


def test_train_resume_export(data_dir, tmp_path):
    save_dir = tmp_path / "checkpoints"
    train_cfg = dict(lr=0.001, max_tokens=120, update_freq=1, max_epoch=2, seed=7, log_interval=5)
    argv = fairseq_bridge.fairseq_train_argv(data_dir, save_dir, LANG_PAIRS, TARGETS, SMALL_MODEL, train_cfg, cpu=True)
    assert argv[argv.index("--lr-scheduler") + 1] == "fixed"
    assert "--disable-validation" not in argv  # valid.* files exist
    fairseq_bridge.train(argv)

    last = save_dir / "checkpoint_last.pt"
    assert last.is_file() and (save_dir / "checkpoint_best.pt").is_file()
    assert not list(save_dir.glob("checkpoint[0-9]*.pt"))  # --no-epoch-checkpoints
    state = fairseq_bridge.load_checkpoint(last)
    updates_2 = fairseq_bridge.checkpoint_num_updates(state)
    assert updates_2 > 0 and updates_2 % 2 == 0  # same number of batches in both epochs
    assert state["extra_state"]["train_iterator"]["epoch"] == 3
    assert len(state["optimizer_history"]) == 1
    assert state["model"]["decoder.embed_langs.weight"].shape == (2, SMALL_MODEL["decoder_lang_embed_dim"])

    # rerun with one more epoch: resumes from checkpoint_last.pt instead of starting over
    train_cfg["max_epoch"] = 3
    fairseq_bridge.train(
        fairseq_bridge.fairseq_train_argv(data_dir, save_dir, LANG_PAIRS, TARGETS, SMALL_MODEL, train_cfg, cpu=True)
    )
    state = fairseq_bridge.load_checkpoint(last)
    history = state["optimizer_history"]
    assert len(history) == 2 and history[0]["num_updates"] == updates_2  # restored, then continued
    assert fairseq_bridge.checkpoint_num_updates(state) == updates_2 + updates_2 // 2
    assert state["extra_state"]["train_iterator"]["epoch"] == 4

    # export -> standalone encoder == fairseq encoder
    out = tmp_path / "encoder.pt"
    info = export_encoder(last, out)
    assert info["params"]["num_layers"] == 2 and info["params"]["hidden_size"] == 16
    assert info["meta"]["num_updates"] == updates_2 + updates_2 // 2
    model, dictionary, _ = fairseq_bridge.load_model(last)
    encoder = SentenceEncoder.load(out)
    assert encoder.dim == 32

    lines = []
    for src, tgt in PAIRS:
        for lang in (src, tgt):
            lines += (data_dir.parent / "text" / f"train.{src}-{tgt}.{lang}").read_text(encoding="utf-8").splitlines()
    lines += ["", "de▁1 zz▁unknown de▁2"]
    ids = encoder.encode_tokens(lines)
    assert ids == [dictionary.encode_line(line, add_if_not_exist=False).tolist() for line in lines]
    standalone = encoder.embed(lines, max_tokens=100)
    with torch.no_grad():
        tokens, lengths = collate(ids, dictionary.pad())
        reference = model.encoder(tokens, lengths)["sentemb"].numpy()
    diff = float(np.abs(standalone - reference).max())
    print(f"trained model: standalone vs fairseq encoder max |diff| = {diff:.2e} over {len(lines)} sentences")
    assert diff <= 1e-5


def test_target_output_vocabulary_trains_resumes_and_loads(data_dir, tmp_path):
    """model.decoder_output_vocab: targets end to end: the output layer covers exactly the tokens of the
    target sides of the training files (read by the task), a resumed run rebuilds the same layer, and
    load_model / export rebuild the model from the checkpoint alone."""
    from fairseq.data import Dictionary

    save_dir = tmp_path / "checkpoints"
    model_cfg = dict(SMALL_MODEL, decoder_output_vocab="targets")
    train_cfg = dict(lr=0.001, max_tokens=120, update_freq=1, max_epoch=1, seed=7, log_interval=5)
    argv = fairseq_bridge.fairseq_train_argv(data_dir, save_dir, LANG_PAIRS, TARGETS, model_cfg, train_cfg, cpu=True)
    assert argv[argv.index("--decoder-output-vocab") + 1] == "targets"
    fairseq_bridge.train(argv)
    train_cfg["max_epoch"] = 2
    fairseq_bridge.train(
        fairseq_bridge.fairseq_train_argv(data_dir, save_dir, LANG_PAIRS, TARGETS, model_cfg, train_cfg, cpu=True))
    last = save_dir / "checkpoint_last.pt"
    assert len(fairseq_bridge.load_checkpoint(last)["optimizer_history"]) == 2  # resumed: same layer shapes

    dictionary = Dictionary.load(str(data_dir / "dict.txt"))
    expected = set(range(dictionary.nspecial))
    for src, tgt in PAIRS:
        for line in (data_dir.parent / "text" / f"train.{src}-{tgt}.{tgt}").read_text(encoding="utf-8").splitlines():
            expected |= set(dictionary.encode_line(line, add_if_not_exist=False).tolist())
    model, _, state = fairseq_bridge.load_model(last)
    assert model.decoder.output_tokens.tolist() == sorted(expected) and len(expected) < len(dictionary)
    assert state["model"]["decoder.fc_out.weight"].shape[0] == len(expected)
    info = export_encoder(last, tmp_path / "encoder.pt")
    assert info["params"]["num_layers"] == SMALL_MODEL["encoder_layers"]
