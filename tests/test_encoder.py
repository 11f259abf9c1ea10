"""Standalone encoder: loading (weights_only), parity with fairseq, ordering, streaming."""

import pickle
import subprocess
import sys
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from laser_repro.models.laser.encoder import BiLSTMMaxPoolEncoder, SentenceEncoder, _length_sorted_batches, embed_file

@pytest.fixture(autouse=True)
def _single_thread(torch_single_thread):
    pass


SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
WORDS = [f"w{i}" for i in range(40)]
LASER_PARAM_KEYS = {"num_embeddings", "padding_idx", "embed_dim", "hidden_size", "num_layers",
                    "bidirectional", "left_pad", "padding_value"}


def write_standalone(path, hidden=8, layers=2, embed_dim=6, seed=0):
    """A LASER-format encoder file with random weights, written without fairseq."""
    torch.manual_seed(seed)
    vocab = SPECIALS + WORDS
    module = BiLSTMMaxPoolEncoder(len(vocab), 1, embed_dim, hidden, layers, True)
    torch.save(
        {
            "params": dict(num_embeddings=len(vocab), padding_idx=1, embed_dim=embed_dim, hidden_size=hidden,
                           num_layers=layers, bidirectional=True, left_pad=False, padding_value=0.0),
            "model": module.state_dict(),
            "dictionary": {s: i for i, s in enumerate(vocab)},
            "meta": {"eos_idx": 2, "unk_idx": 3},
        },
        path,
    )
    return path


def random_lines(n, seed=0, max_len=15):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(0, max_len)))) for _ in range(n)]


def test_encoder_modules_do_not_import_fairseq():
    code = ("import sys, laser_repro.models.laser.encoder, laser_repro.models.laser.export; "
            "assert not [m for m in sys.modules if m.split('.')[0] in ('fairseq', 'fairseq_cli')], 'fairseq imported'")
    src = str(Path(__file__).resolve().parents[1] / "src")
    subprocess.run([sys.executable, "-c", code], check=True, env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})


def test_encode_tokens_like_fairseq_binarizer(tmp_path):
    enc = SentenceEncoder.load(write_standalone(tmp_path / "enc.pt"))
    assert enc.encode_tokens(["w1  w2\tw3 ", "", "w5 nope w0\n"]) == [[5, 6, 7, 2], [2], [9, 3, 4, 2]]


def test_embed_preserves_input_order(tmp_path):
    enc = SentenceEncoder.load(write_standalone(tmp_path / "enc.pt"))
    lines = random_lines(50, seed=1)
    out = enc.embed(lines, max_tokens=40)  # many small length-sorted batches
    assert out.dtype == np.float32 and out.shape == (50, 16)
    for i in (0, 7, 23, 49):
        alone = enc.embed([lines[i]])[0]
        np.testing.assert_allclose(out[i], alone, atol=1e-6, rtol=0)
    perm = np.random.default_rng(0).permutation(len(lines))
    np.testing.assert_allclose(enc.embed([lines[i] for i in perm], max_tokens=40), out[perm], atol=1e-6, rtol=0)
    np.testing.assert_allclose(enc.embed(lines, max_tokens=10_000, max_sentences=3), out, atol=1e-6, rtol=0)
    assert enc.embed([]).shape == (0, 16)


def test_length_sorted_batches_respect_bounds():
    lengths = np.array([3, 17, 5, 5, 1, 30, 2, 9, 9, 9, 4])
    batches = _length_sorted_batches(lengths, max_tokens=20, max_sentences=3)
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(lengths)))
    for b in batches:
        assert len(b) <= 3
        assert len(b) == 1 or len(b) * lengths[b].max() <= 20
        assert (np.diff(lengths[b]) <= 0).all()  # longest first


def test_embed_file_streams_same_result(tmp_path):
    enc = SentenceEncoder.load(write_standalone(tmp_path / "enc.pt"))
    lines = random_lines(57, seed=2)
    (tmp_path / "in.bpe").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "sub" / "emb.npy"
    rows = embed_file(enc, tmp_path / "in.bpe", out, max_tokens=50, chunk_lines=10, progress=False)
    assert rows == 57
    arr = np.load(out)
    assert arr.dtype == np.float32 and arr.shape == (57, 16)
    np.testing.assert_allclose(arr, enc.embed(lines), atol=1e-6, rtol=0)
    assert [p.name for p in out.parent.iterdir()] == ["emb.npy"]  # temporary file renamed
    # no trailing newline / empty file
    (tmp_path / "two.bpe").write_text("w1 w2\nw3", encoding="utf-8")
    assert embed_file(enc, tmp_path / "two.bpe", tmp_path / "two.npy", progress=False) == 2
    (tmp_path / "empty.bpe").write_text("", encoding="utf-8")
    assert embed_file(enc, tmp_path / "empty.bpe", tmp_path / "empty.npy", progress=False) == 0
    assert np.load(tmp_path / "empty.npy").shape == (0, 16)


def test_embed_command_files_and_device(tmp_path):
    from laser_repro import cli

    enc_path = write_standalone(tmp_path / "enc.pt")
    lines = random_lines(20, seed=3)
    for name in ("a", "b"):
        (tmp_path / f"{name}.bpe").write_text("\n".join(lines[:10] if name == "a" else lines) + "\n", encoding="utf-8")
    cli.main(["embed", "--encoder", str(enc_path), "--threads", "1", "--device", "auto",
              "--input", str(tmp_path / "a.bpe"), "--output", str(tmp_path / "a.npy"),
              "--input", str(tmp_path / "b.bpe"), "--output", str(tmp_path / "b.npy")])
    enc = SentenceEncoder.load(enc_path)
    np.testing.assert_allclose(np.load(tmp_path / "b.npy"), enc.embed(lines), atol=1e-6, rtol=0)
    assert np.load(tmp_path / "a.npy").shape == (10, 16)
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="torch sees no GPU"):
            cli.main(["embed", "--encoder", str(enc_path), "--device", "cuda",
                      "--input", str(tmp_path / "a.bpe"), "--output", str(tmp_path / "c.npy")])


class _Exploit:
    """Unpickling this object runs code (creates a marker file)."""

    marker: Path = Path("unused")

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_foreign_pickles_are_refused(tmp_path):
    from laser_repro.models.laser import fairseq_bridge

    evil = _Exploit()
    evil.marker = tmp_path / "pwned"
    bad = tmp_path / "bad.pt"
    good = write_standalone(tmp_path / "enc.pt")
    state = torch.load(good, weights_only=True)
    state["meta"]["payload"] = evil
    torch.save(state, bad)
    with pytest.raises(pickle.UnpicklingError):
        SentenceEncoder.load(bad)
    with pytest.raises(pickle.UnpicklingError):
        fairseq_bridge.load_checkpoint(bad)  # our checkpoint loader allowlists Namespace only
    assert not evil.marker.exists()
    # ... while an unsafe load would have executed the payload
    torch.load(bad, weights_only=False)
    assert evil.marker.exists()
    # a plain (non-allowlisted) class is refused as well
    torch.save({"params": SimpleNamespace(a=1)}, tmp_path / "ns.pt")
    with pytest.raises(pickle.UnpicklingError):
        SentenceEncoder.load(tmp_path / "ns.pt")


# ----------------------------------------------------------------------------------------
# export of a randomly initialised fairseq model and parity with the fairseq encoder
# ----------------------------------------------------------------------------------------


def fake_training_checkpoint(path, seed=0):
    """A checkpoint laid out like fairseq's (cfg.model = Namespace, task_state from our task),
    for a randomly initialised model."""
    pytest.importorskip("fairseq")
    import laser_repro.models.laser.fairseq_plugin  # noqa: F401
    from fairseq.data import Dictionary

    from laser_repro.models.laser.fairseq_plugin.laser_lstm import LaserLSTMModel, base_architecture

    d = Dictionary()
    for w in WORDS:
        d.add_symbol(w)
    args = Namespace(encoder_embed_dim=10, encoder_hidden_size=12, encoder_layers=3, decoder_embed_dim=10,
                     decoder_hidden_size=20, decoder_lang_embed_dim=4, dropout=0.1, arch="laser_lstm")
    base_architecture(args)
    torch.manual_seed(seed)
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d, target_langs=["eng", "spa"])
    model = LaserLSTMModel.build_model(args, task)
    torch.save(
        {
            "args": None,
            "cfg": {"model": args, "task": Namespace(data="unused")},
            "model": model.state_dict(),
            "optimizer_history": [{"num_updates": 0}],
            "task_state": {
                "laser_dictionary": {"symbols": list(d.symbols), "indices": dict(d.indices),
                                     "bos": d.bos(), "pad": d.pad(), "eos": d.eos(), "unk": d.unk()},
                "laser_target_langs": ["eng", "spa"],
            },
            "extra_state": {},
        },
        path,
    )
    return model.eval(), d


def test_export_random_model_parity(tmp_path):
    model, d = fake_training_checkpoint(tmp_path / "ckpt.pt")
    from laser_repro.models.laser.export import export_encoder

    info = export_encoder(tmp_path / "ckpt.pt", tmp_path / "enc.pt")
    assert info["num_parameters"] == sum(p.numel() for p in model.encoder.parameters())

    raw = torch.load(tmp_path / "enc.pt", weights_only=True)  # no allowlist needed
    assert set(raw) == {"params", "model", "dictionary", "meta"}
    assert set(raw["params"]) == LASER_PARAM_KEYS
    assert raw["params"] == dict(num_embeddings=len(d), padding_idx=d.pad(), embed_dim=10, hidden_size=12,
                                 num_layers=3, bidirectional=True, left_pad=False, padding_value=0.0)
    assert raw["dictionary"] == dict(d.indices)
    assert set(raw["model"]) == set(model.encoder.state_dict())
    assert all(v.dtype == torch.float32 for v in raw["model"].values())

    enc = SentenceEncoder.load(tmp_path / "enc.pt")
    lines = random_lines(120, seed=3, max_len=40) + ["", "w1", "oov w2 oov"]
    ids = enc.encode_tokens(lines)
    assert ids == [d.encode_line(line, add_if_not_exist=False).tolist() for line in lines]
    T = max(map(len, ids))
    tokens = torch.full((len(ids), T), d.pad(), dtype=torch.long)
    for i, x in enumerate(ids):
        tokens[i, : len(x)] = torch.tensor(x)
    with torch.no_grad():
        reference = model.encoder(tokens, torch.tensor([len(x) for x in ids]))["sentemb"].numpy()
    for max_tokens in (60, 12000):
        diff = float(np.abs(enc.embed(lines, max_tokens=max_tokens) - reference).max())
        print(f"random init, max_tokens={max_tokens}: max |diff| = {diff:.2e}")
        assert diff <= 1e-5


def test_truncated_encoder_file_is_named_with_how_to_rebuild(tmp_path):
    from laser_repro.models.checkpoint_safety import CorruptFileError

    good = write_standalone(tmp_path / "good.pt").read_bytes()
    enc = tmp_path / "encoder.pt"
    for cut in (len(good) // 2, len(good) - 10, 100, 0):
        enc.write_bytes(good[:cut])
        with pytest.raises(CorruptFileError) as ei:
            SentenceEncoder.load(enc)
        msg = str(ei.value)
        assert str(enc) in msg and "truncated or corrupt" in msg and "delete" in msg, (cut, msg)
    assert ei.value.__cause__ is not None
    # a refused (non-allowlisted) pickle keeps its type, and now names the file
    torch.save({"params": SimpleNamespace(a=1)}, tmp_path / "ns.pt")
    with pytest.raises(pickle.UnpicklingError, match="ns.pt"):
        SentenceEncoder.load(tmp_path / "ns.pt")


def test_truncated_training_checkpoint_is_named(tmp_path):
    from laser_repro.models.laser import fairseq_bridge
    from laser_repro.models.checkpoint_safety import CorruptFileError

    good = write_standalone(tmp_path / "good.pt").read_bytes()
    ckpt = tmp_path / "checkpoint_last.pt"
    ckpt.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorruptFileError, match=r"checkpoint_last\.pt.*truncated or corrupt.*delete"):
        fairseq_bridge.load_checkpoint(ckpt)
    with pytest.raises(FileNotFoundError):
        fairseq_bridge.load_checkpoint(tmp_path / "missing.pt")


def test_a_laser_encoder_names_its_codes_and_embed_refuses_others(tmp_path):
    """Issue 24: LASER's export records the BPE codes (its checkpoint cannot: training reads binarized
    data), and embed --codes refuses another codes file in one line."""
    from laser_repro import cli

    fake_training_checkpoint(tmp_path / "ckpt.pt")
    (tmp_path / "codes").write_text("a b 5\nab c 3\n", encoding="utf-8")
    (tmp_path / "other_codes").write_text("x y 5\n", encoding="utf-8")
    (tmp_path / "raw.txt").write_text("abc def\n", encoding="utf-8")
    assert cli.main(["export", "--checkpoint", str(tmp_path / "ckpt.pt"), "--codes", str(tmp_path / "codes"),
                     "--output", str(tmp_path / "enc.pt")]) == 0
    embed = ["embed", "--encoder", str(tmp_path / "enc.pt"), "--lang", "eng", "--input", str(tmp_path / "raw.txt"),
             "--output", str(tmp_path / "e.npy")]
    proc = subprocess.run([sys.executable, "-m", "laser_repro.cli", *embed, "--codes", str(tmp_path / "other_codes")],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "is not the subword model encoder" in proc.stderr and str(tmp_path / "codes") in proc.stderr
    assert not (tmp_path / "e.npy").exists()
    assert cli.main([*embed, "--codes", str(tmp_path / "codes")]) == 0 and np.load(tmp_path / "e.npy").shape[0] == 1
