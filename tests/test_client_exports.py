"""Encoders of this project in other tools, offline: a LaBSE encoder file as a sentence-transformers model
directory (``laser-repro export --format sentence-transformers``) gives the encoder's vectors, and mteb's
bitext mining of any family's encoder file on local files scores what our own retrieval scores.

The LaBSE encoder is trained here (a few updates of a 2-layer model on five languages of five scripts); the
LASER one is a random BiLSTM over a tiny BPE vocabulary, written in the exported file's layout."""
from __future__ import annotations

import json
import re
import socket
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from laser_repro import cli
from laser_repro.core.errors import UserError

LANGS = ["eng", "fra", "rus", "cmn", "ara"]
WORDS = {"eng": "red blue green cat dog house tree sun moon water fire stone bird fish river",
         "fra": "rouge bleu vert chat chien maison arbre soleil lune eau feu pierre oiseau poisson fleuve",
         "rus": "красный синий зелёный кот собака дом дерево солнце луна вода огонь камень птица рыба река",
         "cmn": "红 蓝 绿 猫 狗 房子 树 太阳 月亮 水 火 石头 鸟 鱼 河",
         "ara": "أحمر أزرق أخضر قطة كلب بيت شجرة شمس قمر ماء نار حجر طائر سمكة نهر"}
MAX_LEN = 16
TOLERANCE = 1e-5


def word_rows(n: int, seed: int, lo: int = 3, hi: int = 8) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 15, size=rng.integers(lo, hi)) for _ in range(n)]


def lines_of(rows, lang: str) -> list[str]:
    words = WORDS[lang].split()
    return [" ".join(words[i] for i in row) for row in rows]


@pytest.fixture(scope="module")
def labse_encoder(tmp_path_factory) -> Path:
    """A LaBSE encoder file: 12 updates of the dual encoder (the best checkpoint, exported as the workflow does)."""
    from laser_repro.models.labse import vocab
    from laser_repro.models.labse.export import export_encoder
    from laser_repro.models.labse.trainer import train
    from laser_repro.models.launch import Rank

    root = tmp_path_factory.mktemp("labse")
    (root / "tok").mkdir()
    for split, rows in (("train", word_rows(60, 0)), ("valid", word_rows(12, 1))):
        for lang in LANGS:
            (root / "tok" / f"{split}.{lang}").write_text("".join(f"{line}\n" for line in lines_of(rows, lang)),
                                                           encoding="utf-8")
    tok, _ = vocab.learn({lang: root / "tok" / f"train.{lang}" for lang in LANGS}, 200)
    tok.save(str(root / "tokenizer.json"))
    settings = {"stage": "dual", "languages": LANGS, "pivot": "eng", "tokenizer": str(root / "tokenizer.json"),
                "encoder": {"layers": 2, "hidden": 16, "heads": 2, "intermediate": 32, "dropout": 0.0,
                            "max_len": MAX_LEN},
                "loss": {"margin": 0.3, "scale": 10.0},
                "train": {"batch_size": 16, "lr": 3e-3, "max_update": 12, "validate_interval_updates": 6,
                          "log_interval": 0}}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: intra-op threads only cost time on a shared machine
    try:
        train(root, root / "save", settings, rank=Rank(), stop_requested=lambda: False)
    finally:
        torch.set_num_threads(threads)
    export_encoder(root / "save" / "checkpoint_best.pt", root / "encoder.pt")
    return root / "encoder.pt"


def write_laser_encoder(path: Path, codes: Path, lines: list[str], lang: str, seed: int = 0) -> Path:
    """A LASER encoder file (the layout laser_repro.models.laser.export writes) with random weights, whose
    dictionary holds the BPE pieces of ``lines`` and which records ``codes`` as its subword model."""
    from laser_repro.models import registry, subword
    from laser_repro.models.laser.encoder import BiLSTMMaxPoolEncoder

    pieces = sorted({p for line in registry.get("laser").prepare(lines, lang, codes=codes) for p in line.split()})
    symbols = ["<s>", "<pad>", "</s>", "<unk>", *pieces]
    torch.manual_seed(seed)
    module = BiLSTMMaxPoolEncoder(len(symbols), 1, 8, 12, 1, True)
    torch.save({"params": dict(num_embeddings=len(symbols), padding_idx=1, embed_dim=8, hidden_size=12, num_layers=1,
                               bidirectional=True, left_pad=False, padding_value=0.0),
                "model": module.state_dict(), "dictionary": {s: i for i, s in enumerate(symbols)},
                "meta": {"eos_idx": 2, "unk_idx": 3}, subword.RECORD_KEY: subword.codes_record(codes)}, path)
    return path


def learn_codes_file(path: Path, lines: list[str], merges: int = 25) -> Path:
    from laser_repro.data import bpe

    counts = Counter(word for line in lines for word in line.split())
    bpe.write_codes(bpe.learn_codes(sorted(counts.items(), key=lambda x: (-x[1], x[0])), merges).codes, path)
    return path


@pytest.fixture
def offline(monkeypatch) -> list:
    """No network: the Hugging Face libraries told so, and any TCP connection refused and recorded (the
    test asserts none was tried: a library that catches the refusal would otherwise go unnoticed)."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # (read when it was imported)
    tried = []
    connect = socket.socket.connect

    def refuse(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            tried.append(address)
            raise OSError(f"test_client_exports: no network ({address})")
        return connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return tried


# ---- sentence-transformers ---------------------------------------------------------------------------------

def probe_sentences() -> list[str]:
    """~20 sentences: the training words in each script, words the vocabulary lacks ([UNK] pieces), an
    empty line, and lines longer than max_len tokens (truncated)."""
    rows = word_rows(3, 7)
    known = [line for lang in LANGS for line in lines_of(rows, lang)]  # 15
    unknown = ["Der Hund schläft im Garten.", "Собака спит в саду, а кот — нет!", "狗在花园里睡觉。",
               "الكلب ينام في الحديقة"]
    long_rows = word_rows(1, 8, 25, 26)
    long = [lines_of(long_rows, "eng")[0], lines_of(long_rows, "cmn")[0] * 2, " ".join(unknown * 3)]
    return [*known, *unknown, "", *long]


def test_sentence_transformers_export_gives_the_encoders_vectors(labse_encoder, tmp_path, offline, capsys):
    from sentence_transformers import SentenceTransformer

    from laser_repro.models.labse.export import LabseEncoder

    out = tmp_path / "st"
    assert cli.main(["export", "--format", "sentence-transformers", "--encoder", str(labse_encoder),
                     "--output", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["st"]  # no temporary directory left beside it
    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling", "Normalize"]
    assert json.loads((out / "1_Pooling" / "config.json").read_text())["pooling_mode"] == "cls"
    assert json.loads((out / "sentence_bert_config.json").read_text())["max_seq_length"] == MAX_LEN
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "config_sentence_transformers.json"):
        assert (out / name).is_file(), name

    model = SentenceTransformer(str(out), device="cpu", local_files_only=True)
    encoder = LabseEncoder.load(labse_encoder)
    sentences = probe_sentences()
    # the same token ids: [CLS] ... [SEP], truncated to max_len with [SEP] kept, padded on the right
    theirs = model.tokenizer(sentences, truncation=True)["input_ids"]
    ours = [enc.ids for enc in encoder.tokenizer.encode_batch(sentences)]
    assert theirs == ours and max(map(len, ours)) == MAX_LEN and model.max_seq_length == MAX_LEN
    assert model.tokenizer.padding_side == "right"
    assert any(encoder.tokenizer.token_to_id("[UNK]") in ids for ids in ours)
    expected = encoder.embed(sentences, "eng")
    for batch_size in (4, 32):
        got = model.encode(sentences, batch_size=batch_size, convert_to_numpy=True)
        diff = float(np.abs(got - expected).max())
        print(f"sentence-transformers vs LabseEncoder.embed, {len(sentences)} sentences, batch {batch_size}: "
              f"max |diff| = {diff:.2e}")
        assert got.shape == expected.shape and diff <= TOLERANCE
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert not offline, f"the export or the load tried the network: {offline}"


def test_sentence_transformers_export_refuses_another_family_and_an_existing_directory(labse_encoder, tmp_path,
                                                                                       capsys):
    from laser_repro.models.labse.sentence_transformers_export import export_sentence_transformers

    codes = learn_codes_file(tmp_path / "codes", ["red blue green"])
    laser = write_laser_encoder(tmp_path / "laser.pt", codes, ["red blue green"], "eng")
    with pytest.raises(UserError, match=re.escape(f"{laser}: a laser encoder file, not a labse one")):
        export_sentence_transformers(laser, tmp_path / "st")
    argv = ["export", "--format", "sentence-transformers", "--encoder", str(laser), "--output", str(tmp_path / "st")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert str(laser) in err and "laser encoder file" in err and "Traceback" not in err
    assert not (tmp_path / "st").exists()

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine\n")
    full = re.escape(f"{tmp_path / 'full'}: already exists and is not an empty directory")
    with pytest.raises(UserError, match=full):
        export_sentence_transformers(labse_encoder, tmp_path / "full")
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["keep.txt"]


# ---- mteb ------------------------------------------------------------------------------------------------

def test_our_language_codes_from_mtebs():
    from laser_repro.evaluation.mteb_encoder import mteb_language, our_language

    assert [our_language(c) for c in ("fra-Latn", "fra_Latn", "fra", "zho-Hans", "arb_Arab", "cmn-Hans")] == \
        ["fra", "fra", "fra", "cmn", "ara", "cmn"]
    assert mteb_language("cmn") == "cmn-Hani" and mteb_language("rus", "_") == "rus_Cyrl"
    with pytest.raises(UserError, match="qqq"):
        our_language("qqq-Latn")


def our_accuracy(encoder: Path, lang: str, xx: Path, eng: Path, codes=None) -> tuple[float, float]:
    """(xx -> eng, eng -> xx) accuracy of the project's own retrieval (cosine nearest neighbour)."""
    from laser_repro.evaluation.retrieval import retrieval_errors

    result = retrieval_errors([lang], [xx], [eng], encoder=encoder, codes=codes)[lang]
    return 1 - result["error"] / 100, 1 - result["en_xx_error"] / 100


def test_mteb_bitext_mining_offline_scores_our_retrieval(labse_encoder, tmp_path, offline):
    """mteb's own BitextMining evaluator (its data read from local files) on a LaBSE and a LASER encoder file
    gives, in both directions, the accuracy of our retrieval on the same raw sentences: neither 0 nor 1, so
    that the two agreeing is no accident."""
    from laser_repro.evaluation.mteb_encoder import run_bitext_mining

    rows = word_rows(30, 11)
    files = {}
    for lang in ("eng", "fra", "cmn"):
        files[lang] = tmp_path / f"test.{lang}"
        files[lang].write_text("".join(f"{line}\n" for line in lines_of(rows, lang)), encoding="utf-8")
    # LASER: a random encoder, and a "deu" side that is the English line with a third of its words replaced,
    # so that some of its nearest neighbours are the translation and some are not
    rng = np.random.default_rng(3)
    noisy = [np.where(rng.random(len(row)) < 0.34, rng.integers(0, 15, len(row)), row) for row in rows]
    files["deu"] = tmp_path / "test.deu"
    files["deu"].write_text("".join(f"{line}\n" for line in lines_of(noisy, "eng")), encoding="utf-8")
    codes = learn_codes_file(tmp_path / "codes", lines_of(rows, "eng"))
    laser = write_laser_encoder(tmp_path / "laser.pt", codes, lines_of(rows + noisy, "eng"), "eng")

    cases = [(labse_encoder, "fra"), (labse_encoder, "cmn"), (laser, "deu")]
    measured = {}
    for encoder, lang in cases:
        out = tmp_path / f"mteb-{encoder.stem}"
        scores = run_bitext_mining(encoder, [(lang, files[lang], "eng", files["eng"])], out)
        task = f"LocalBitextMining.{lang}-eng"
        measured[f"{encoder.stem} {lang}"] = scores[task]
        ours = our_accuracy(encoder, lang, files[lang], files["eng"], codes=codes if encoder == laser else None)
        assert scores[task] == pytest.approx({f"{lang}-eng": ours[0], "eng-" + lang: ours[1]}, abs=1e-12), (lang, ours)
        assert any(0 < accuracy < 1 for accuracy in ours), (encoder, lang, ours)
        # mteb's result file, written under out (its cache there) and nowhere else
        (result,) = out.glob(f"results/laser-repro__*/*/{task}.json")
        written = {s["hf_subset"]: s["accuracy"] for s in json.loads(result.read_text())["scores"]["test"]}
        assert sorted(written.values()) == pytest.approx(sorted(scores[task].values()), abs=1e-6)  # (rounded)
    print("mteb accuracy (= ours):", measured)
    assert not offline, f"mteb tried the network: {offline}"
