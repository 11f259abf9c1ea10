"""The NLI multitask objective (paper, Table 6): binarize-nli, the epoch's batch list (w copies of
the NLI batches, single-kind batches), training with the laser_multitask criterion (1 and 2
processes), export of the encoder alone, and w = 0 = the plain translation training."""

import json
import logging
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("fairseq")

import laser_repro.models.laser.fairseq_plugin  # noqa: E402,F401
from laser_repro import cli  # noqa: E402
from laser_repro.data.nli_labels import XNLI_LABELS, read_labels  # noqa: E402
from laser_repro.models.laser import fairseq_bridge
from laser_repro.models.laser.encoder import SentenceEncoder  # noqa: E402
from laser_repro.models.laser.export import export_encoder  # noqa: E402
from laser_repro.models.laser.fairseq_plugin.laser_criterion import LaserMultitaskCriterion  # noqa: E402
from laser_repro.models.laser.fairseq_plugin.laser_task import LaserMultilingualTask, MultitaskDataset  # noqa: E402
from tiny_corpus import CONCEPTS, LANG_PAIRS, SMALL_MODEL, TARGETS, build_binarized, word  # noqa: E402

pytestmark = pytest.mark.slow

NLI_PAIRS = 48
MODEL = dict(SMALL_MODEL, nli_hidden_dim=16)


@pytest.fixture(autouse=True)
def _single_thread(torch_single_thread):
    pass


def write_nli(root, n=NLI_PAIRS, seed=5):
    """Synthetic NLI over English words: entailment = the hypothesis is a part of the premise,
    contradiction = no common concept, neutral = some of both."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    prem, hyp, lab = root / "train.prem", root / "train.hyp", root / "train.labels"
    with open(prem, "w", encoding="utf-8") as fp, open(hyp, "w", encoding="utf-8") as fh, \
            open(lab, "w", encoding="utf-8") as fl:
        for i in range(n):
            label = XNLI_LABELS[i % 3]
            p = rng.sample(range(CONCEPTS), rng.randint(2, 5))
            others = [c for c in range(CONCEPTS) if c not in p]
            if label == "entailment":
                h = p[: rng.randint(1, len(p))]
            elif label == "contradiction":
                h = rng.sample(others, rng.randint(1, 3))
            else:
                h = [p[0], others[0]]
            fp.write(" ".join(word("eng", c) for c in p) + "\n")
            fh.write(" ".join(word("eng", c) for c in h) + "\n")
            fl.write(f"{1000 + i}\t{label}\n")
    return prem, hyp, lab


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("laser_nli")
    data = build_binarized(root)
    prem, hyp, lab = write_nli(root / "nli_text")
    prefix = root / "nli" / "train"
    assert fairseq_bridge.binarize_nli(prem, hyp, lab, data / "dict.txt", prefix) == NLI_PAIRS
    return data, prefix, (prem, hyp, lab)


# -- binarize-nli -------------------------------------------------------------------------------


def test_binarize_nli_round_trip_deterministic_and_cli(corpus, tmp_path):
    from fairseq.data import Dictionary, data_utils

    data, prefix, (prem, hyp, lab) = corpus
    dictionary = Dictionary.load(str(data / "dict.txt"))
    for side, text in (("premise", prem), ("hypothesis", hyp)):
        ds = data_utils.load_indexed_dataset(f"{prefix}.{side}", dictionary)
        lines = text.read_text(encoding="utf-8").splitlines()
        assert len(ds) == len(lines) == NLI_PAIRS
        for i, line in enumerate(lines):
            assert ds[i].tolist() == dictionary.encode_line(line, add_if_not_exist=False).tolist()
    labels = np.load(f"{prefix}.label.npy")
    assert labels.dtype == np.int64 and labels.tolist() == read_labels(lab)[1].tolist()
    assert sorted(set(labels.tolist())) == [0, 1, 2]
    assert not [p.name for p in prefix.parent.iterdir() if p.name.startswith(".")], "temporary files left"

    # the CLI subcommand writes the same bytes
    other = tmp_path / "again" / "nli"
    assert cli.main(["binarize-nli", "--premise", str(prem), "--hypothesis", str(hyp), "--labels", str(lab),
                     "--dict", str(data / "dict.txt"), "--dest-prefix", str(other)]) == 0
    for suffix in fairseq_bridge.NLI_SUFFIXES:
        assert Path(f"{other}{suffix}").read_bytes() == Path(f"{prefix}{suffix}").read_bytes(), suffix
    assert sorted(p.name for p in other.parent.iterdir()) == sorted(f"nli{s}" for s in fairseq_bridge.NLI_SUFFIXES)


def test_binarize_nli_refuses_files_of_different_lengths(corpus, tmp_path):
    data, _, (prem, hyp, lab) = corpus
    short = tmp_path / "short.hyp"
    short.write_text("".join(hyp.read_text(encoding="utf-8").splitlines(keepends=True)[:-1]), encoding="utf-8")
    dest = tmp_path / "out" / "nli"
    with pytest.raises(ValueError, match="short.hyp: 47 lines") as err:
        fairseq_bridge.binarize_nli(prem, short, lab, data / "dict.txt", dest)
    assert str(prem) in str(err.value) and str(lab) in str(err.value)
    assert not dest.parent.exists() or not list(dest.parent.iterdir())


# -- settings -> fairseq command line -----------------------------------------------------------


TRAIN = dict(lr=0.002, max_tokens=120, update_freq=1, max_epoch=2, seed=7, log_interval=1)


def test_train_argv_with_and_without_nli(corpus, tmp_path):
    data, prefix, _ = corpus
    plain = fairseq_bridge.fairseq_train_argv(data, tmp_path, LANG_PAIRS, TARGETS, SMALL_MODEL, TRAIN, cpu=True)
    for off in (None, {"data": str(prefix), "weight": 0}, {"weight": 0}):
        assert fairseq_bridge.fairseq_train_argv(data, tmp_path, LANG_PAIRS, TARGETS, SMALL_MODEL, TRAIN,
                                                 cpu=True, nli=off) == plain
    argv = fairseq_bridge.fairseq_train_argv(data, tmp_path, LANG_PAIRS, TARGETS, MODEL, TRAIN, cpu=True,
                                             nli={"data": str(prefix), "weight": 2})
    assert argv[argv.index("--nli-data") + 1] == str(prefix) and argv[argv.index("--nli-weight") + 1] == "2"
    assert argv[argv.index("--criterion") + 1] == "laser_multitask"
    assert argv[argv.index("--nli-hidden-dim") + 1] == "16"
    assert "cross_entropy" in plain and "--nli-weight" not in plain
    for bad in ({"data": "x", "weight": -1}, {"data": "x", "weight": 1.5}, {"data": "x", "weight": True},
                {"weight": 1}, {"data": "x", "weight": 1, "extra": 0}):
        with pytest.raises(ValueError):
            fairseq_bridge.fairseq_train_argv(data, tmp_path, LANG_PAIRS, TARGETS, MODEL, TRAIN, cpu=True, nli=bad)
    # torch DDP (GPUs) must be told that batches leave parameters unused; CPU runs use legacy_ddp
    gpu = fairseq_bridge.distributed_argv(2, 0, torch.device("cuda", 0), unused_parameters=True)
    assert "--find-unused-parameters" in gpu and "--ddp-backend" not in gpu
    assert "--find-unused-parameters" not in fairseq_bridge.distributed_argv(2, 0, torch.device("cuda", 0))
    cpu = fairseq_bridge.distributed_argv(2, 0, torch.device("cpu"), unused_parameters=True)
    assert cpu[cpu.index("--ddp-backend") + 1] == "legacy_ddp"


# -- the epoch's batch list ---------------------------------------------------------------------


def make_task(data, prefix, weight):
    from argparse import Namespace

    args = Namespace(data=str(data), lang_pairs=LANG_PAIRS, target_langs=TARGETS, max_source_positions=250,
                     max_target_positions=250, nli_data=str(prefix), nli_weight=weight, train_subset="train")
    return LaserMultilingualTask.setup_task(args)


def epoch_batches(task, epoch, seed=1, max_tokens=60):
    itr = task.get_batch_iterator(task.dataset("train"), max_tokens=max_tokens, max_positions=task.max_positions(),
                                  seed=seed, epoch=epoch, disable_iterator_cache=True)
    return list(itr.next_epoch_itr(shuffle=True))


@pytest.mark.parametrize("weight", [1, 3])
def test_epoch_holds_w_copies_of_the_nli_batches(corpus, weight):
    data, prefix, _ = corpus
    task = make_task(data, prefix, weight)
    task.load_dataset("train")
    task.load_dataset("valid")
    ds = task.dataset("train")
    assert isinstance(ds, MultitaskDataset) and not isinstance(task.dataset("valid"), MultitaskDataset)
    n_trans = ds.offset
    batches = epoch_batches(task, epoch=1)
    trans_ids, nli_batches, kinds = [], [], []
    for batch in batches:
        ids = batch["id"].tolist()
        if batch.get("task") == "nli":
            assert min(ids) >= n_trans, "an NLI batch holds translation pairs"
            net = batch["net_input"]
            assert set(net) == {"premise_tokens", "premise_lengths", "hypothesis_tokens", "hypothesis_lengths"}
            assert batch["target"].tolist() == [int(ds.nli.labels[i - n_trans]) for i in ids]
            assert net["premise_tokens"].size(1) == int(net["premise_lengths"].max())
            assert net["premise_tokens"].numel() + net["hypothesis_tokens"].numel() <= 2 * 60
            nli_batches.append(tuple(sorted(ids)))
            kinds.append("nli")
        else:
            assert max(ids) < n_trans, "a translation batch holds NLI pairs"
            assert "tgt_lang_id" in batch["net_input"]
            trans_ids.extend(ids)
            kinds.append("translation")
    assert sorted(trans_ids) == list(range(n_trans))  # every translation pair once
    distinct = set(nli_batches)
    assert all(nli_batches.count(b) == weight for b in distinct)  # every NLI batch w times
    assert sorted(i for b in distinct for i in b) == list(range(n_trans, n_trans + NLI_PAIRS))
    assert len(nli_batches) == weight * len(distinct)
    # the copies are shuffled in among the translation batches
    switches = sum(a != b for a, b in zip(kinds, kinds[1:]))
    assert switches >= 4
    # deterministic for a seed, reshuffled across epochs
    assert [b["id"].tolist() for b in epoch_batches(task, epoch=1)] == [b["id"].tolist() for b in batches]
    assert [b["id"].tolist() for b in epoch_batches(task, epoch=2)] != [b["id"].tolist() for b in batches]


def test_missing_nli_data_is_reported(corpus, tmp_path):
    data, prefix, _ = corpus
    task = make_task(data, tmp_path / "nowhere", 1)
    with pytest.raises(FileNotFoundError, match="nowhere.premise.*nowhere.label.npy.*binarize-nli"):
        task.load_dataset("train")
    with pytest.raises(ValueError, match="--nli-data"):
        make_task(data, "", 1)


def test_too_long_nli_pairs_are_left_out(corpus, caplog):
    data, prefix, _ = corpus
    task = make_task(data, prefix, 2)
    task.load_dataset("train")
    ds = task.dataset("train")
    nli = ds.nli
    longest = np.maximum(nli.premise_sizes, nli.hypothesis_sizes)
    with caplog.at_level(logging.WARNING):
        # max_positions (5, 250): sentences of 6 tokens are too long for the encoder
        kept, _ = ds.filter_indices_by_size(np.arange(len(ds)), (5, 250))
        nli_kept = kept[kept >= ds.offset] - ds.offset
        assert sorted(nli_kept.tolist()) == np.flatnonzero(longest <= 5).tolist() and 0 < len(nli_kept) < NLI_PAIRS
        # max_tokens 9: premise + hypothesis of more tokens cannot form a batch
        batches = ds.batch_by_size(np.arange(ds.offset, len(ds)), max_tokens=9)
        in_batches = sorted({int(i) - ds.offset for b in batches for i in b})
        assert in_batches == np.flatnonzero(nli.sizes <= 9).tolist() and 0 < len(in_batches) < NLI_PAIRS
        assert len(batches) % 2 == 0
    assert "are left out" in caplog.text


def test_translation_batches_unchanged_and_weight_zero_is_plain(corpus):
    data, prefix, _ = corpus
    plain = make_task(data, prefix, 0)
    plain.load_dataset("train")
    assert not isinstance(plain.dataset("train"), MultitaskDataset)
    multi = make_task(data, prefix, 2)
    multi.load_dataset("train")
    plain_batches = sorted(b["id"].tolist() for b in epoch_batches(plain, epoch=1))
    multi_batches = sorted(b["id"].tolist() for b in epoch_batches(multi, epoch=1) if b.get("task") != "nli")
    assert plain_batches == multi_batches  # the same translation batches, only the order differs


def test_criterion_logs_the_same_keys_for_both_kinds(corpus):
    """fairseq sums the logging outputs of all processes by the keys of the first: both batch
    kinds must give the same keys of the same types."""
    from argparse import Namespace

    from fairseq.criterions.cross_entropy import CrossEntropyCriterion

    data, prefix, _ = corpus
    task = make_task(data, prefix, 1)
    task.load_dataset("train")
    args = Namespace(**vars(task.args), arch="laser_lstm", **MODEL)
    model = task.build_model(args)
    criterion = LaserMultitaskCriterion(task, sentence_avg=False)
    batches = epoch_batches(task, epoch=1)
    nli = next(b for b in batches if b.get("task") == "nli")
    trans = next(b for b in batches if b.get("task") != "nli")
    model.eval()
    with torch.no_grad():
        loss_n, size_n, log_n = criterion(model, nli)
        loss_t, size_t, log_t = criterion(model, trans)
        expected_nli = torch.nn.functional.cross_entropy(model(**nli["net_input"]), nli["target"], reduction="sum")
        reference = CrossEntropyCriterion(task, sentence_avg=False)(model, trans)
    assert list(log_n) == list(log_t)
    assert all(torch.is_tensor(log_n[k]) == torch.is_tensor(log_t[k]) for k in log_n)
    assert size_n == len(nli["target"]) == log_n["nli_examples"] and size_t == trans["ntokens"]
    assert float(log_n["loss"]) == 0 and float(log_t["nli_loss"]) == 0
    assert float(loss_n) == pytest.approx(float(expected_nli), rel=1e-5)
    # translation batches: exactly fairseq's cross_entropy
    assert float(loss_t) == float(reference[0]) and size_t == reference[1]


# -- training -----------------------------------------------------------------------------------


def train(data, save_dir, nli, caplog):
    """Train in this process; returns (checkpoint_last.pt, fairseq's JSON log lines)."""
    save_dir.mkdir(parents=True)
    argv = fairseq_bridge.fairseq_train_argv(data, save_dir, LANG_PAIRS, TARGETS, MODEL, TRAIN, cpu=True, nli=nli)
    caplog.clear()
    with caplog.at_level(logging.INFO):
        fairseq_bridge.train(argv)
    stats = []
    for record in caplog.records:
        if record.module == "progress_bar" and record.getMessage().startswith("{"):
            stats.append(json.loads(record.getMessage()))
    return save_dir / "checkpoint_last.pt", stats


def test_train_with_nli_then_export(corpus, tmp_path, caplog):
    data, prefix, _ = corpus
    with_nli, log = train(data, tmp_path / "w1", {"data": str(prefix), "weight": 1}, caplog)
    without, plain_log = train(data, tmp_path / "w0", {"data": str(prefix), "weight": 0}, caplog)

    # fairseq's end-of-epoch stats: translation loss and NLI loss / accuracy apart
    epochs = [stats for stats in log if "train_nli_loss" in stats]
    assert len(epochs) == 2, log
    for stats in epochs:
        assert 0 < float(stats["train_nli_loss"]) < 5 and 0 <= float(stats["train_nli_accuracy"]) <= 100
        assert 0 < float(stats["train_loss"]) < 10
    assert any("nli_loss" in stats and "nli_accuracy" in stats for stats in log if "epoch" in stats
               and "train_loss" not in stats)  # per-update lines (train_inner)
    assert [s for s in log if "valid_loss" in s] and not [s for s in log if "valid_nli_loss" in s]
    assert plain_log and not [s for s in plain_log if any("nli" in k for k in s)]

    state = fairseq_bridge.load_checkpoint(with_nli)
    head = {k: v.shape for k, v in state["model"].items() if k.startswith("nli_head.")}
    assert head == {"nli_head.hidden.weight": (16, 4 * 32), "nli_head.hidden.bias": (16,),
                    "nli_head.out.weight": (3, 16), "nli_head.out.bias": (3,)}
    plain_state = fairseq_bridge.load_checkpoint(without)
    assert not [k for k in plain_state["model"] if k.startswith("nli_head")]
    assert set(state["model"]) - set(plain_state["model"]) == set(head)
    # 48 NLI pairs, batched by 120 tokens, once per epoch: more updates than without
    assert fairseq_bridge.checkpoint_num_updates(state) > fairseq_bridge.checkpoint_num_updates(plain_state)

    # the fairseq model loads (weights_only) with its head; export takes the encoder only
    model, dictionary, _ = fairseq_bridge.load_model(with_nli)
    assert model.nli_head.out.out_features == 3
    out = tmp_path / "encoder_w1.pt"
    info = export_encoder(with_nli, out)
    exported = torch.load(out, map_location="cpu", weights_only=True)
    assert all(not k.startswith("nli") for k in exported["model"])
    assert set(exported["model"]) == {k[len("encoder."):] for k in state["model"] if k.startswith("encoder.")}
    assert info["params"]["hidden_size"] == 16
    encoder = SentenceEncoder.load(out)
    lines = ["en▁1 en▁2 en▁3", "en▁4"]
    ids = encoder.encode_tokens(lines)
    with torch.no_grad():
        tokens = torch.full((2, 4), dictionary.pad(), dtype=torch.long)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = torch.tensor(row)
        reference = model.encoder(tokens, torch.tensor([len(r) for r in ids]))["sentemb"].numpy()
    assert float(np.abs(encoder.embed(lines) - reference).max()) <= 1e-5

    # the objective acts: same seed, other encoder
    export_encoder(without, tmp_path / "encoder_w0.pt")
    plain = torch.load(tmp_path / "encoder_w0.pt", map_location="cpu", weights_only=True)
    diff = max(float((exported["model"][k] - plain["model"][k]).abs().max()) for k in plain["model"])
    print(f"encoder w=1 vs w=0: max |weight diff| = {diff:.2e}")
    assert diff > 1e-3


# -- two processes ------------------------------------------------------------------------------


def cli_train(data, run_dir, prefix, processes, update_freq):
    conf = {"pairs": LANG_PAIRS.split(","), "targets": TARGETS.split(","), "model": dict(MODEL, dropout=0.0),
            "train": {"lr": 0.005, "max_tokens": 60, "gpus": 0, "update_freq": update_freq, "max_epoch": 1,
                      "seed": 3, "log_interval": 1, "cpu_processes": processes},
            "nli": {"data": str(prefix), "weight": 2}}
    run_dir.mkdir(parents=True)
    cmd = [sys.executable, "-m", "laser_repro.cli", "train", "--data", str(data), "--save-dir",
           str(run_dir / "checkpoints"), "--final", str(run_dir / "final.pt"), "--threads", "1",
           "--settings", json.dumps(conf)]
    with open(run_dir / "train.log", "w") as log:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=300, check=False)
    text = (run_dir / "train.log").read_text()
    assert proc.returncode == 0, text[-3000:]
    status = json.loads((run_dir / "checkpoints" / "train_status.json").read_text())
    return status, fairseq_bridge.load_checkpoint(run_dir / "final.pt"), text


def test_two_gloo_processes_with_nli_match_one(corpus, tmp_path):
    """Batches that leave parameters unused (decoder / head) in a 2-process legacy_ddp run; the
    unused ones get zero gradients in both cases, so 2 x 1 batch = 1 x 2 accumulated batches."""
    data, prefix, _ = corpus
    one, one_ckpt, _ = cli_train(data, tmp_path / "one", prefix, processes=1, update_freq=2)
    two, two_ckpt, text = cli_train(data, tmp_path / "two", prefix, processes=2, update_freq=2)
    assert (one["world_size"], two["world_size"], two["update_freq"]) == (1, 2, 1)
    assert one["num_updates"] == two["num_updates"] > 0
    assert "--nli-weight 2" in text and "legacy_ddp" in text
    assert "nli_head.hidden.weight" in two_ckpt["model"]
    diff = max(float((one_ckpt["model"][k] - two_ckpt["model"][k]).abs().max()) for k in one_ckpt["model"])
    print(f"NLI w=2: 1 process x update_freq 2 vs 2 processes: max |weight diff| = {diff:.2e}")
    assert diff <= 1e-5
