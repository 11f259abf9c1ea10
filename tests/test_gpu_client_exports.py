"""scripts/gpu_client_exports.py on the CPU: ``prepare`` (our exports, FLORES-like sentences, our reference
vectors) on a toy LASER encoder over a SentencePiece model and a LaBSE encoder it trains itself, then ``check
--device cpu`` (the client libraries against those vectors), and a reference vector moved by 1e-3 fails it."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
import torch

from conftest import REPO

# three languages, line i of each the same sentence (the files are named as FLORES-200's)
SENTENCES = {
    "eng": ["The cat sleeps on the red chair.", "A dog runs in the park.", "The sun rises early today.",
            "We drink water from the river.", "Birds fly over the old house.", "The fish swims under the stone.",
            "My brother reads a long book.", "Fire warms the cold room."],
    "fra": ["Le chat dort sur la chaise rouge.", "Un chien court dans le parc.", "Le soleil se lève tôt aujourd'hui.",
            "Nous buvons l'eau de la rivière.", "Les oiseaux volent au-dessus de la vieille maison.",
            "Le poisson nage sous la pierre.", "Mon frère lit un long livre.", "Le feu réchauffe la pièce froide."],
    "rus": ["Кошка спит на красном стуле.", "Собака бежит в парке.", "Солнце сегодня встаёт рано.",
            "Мы пьём воду из реки.", "Птицы летают над старым домом.", "Рыба плавает под камнем.",
            "Мой брат читает длинную книгу.", "Огонь согревает холодную комнату."],
}
FLORES_NAMES = {"eng": "eng_Latn", "fra": "fra_Latn", "rus": "rus_Cyrl"}
CHECKED = 4  # --lines: the first 4 of each language are checked, the rest train the LaBSE encoder


def load_script():
    spec = importlib.util.spec_from_file_location("gpu_client_exports", REPO / "scripts" / "gpu_client_exports.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toy_laser_run(run_dir, lines_by_lang):
    """A workflow run directory holding a SentencePiece model and a random LASER encoder whose record names that
    model by its path relative to the run directory, as the workflow writes it."""
    from laser_repro.data import spm
    from laser_repro.models import registry, subword
    from laser_repro.models.laser.encoder import BiLSTMMaxPoolEncoder

    run_dir.mkdir()
    text = run_dir / "text.txt"
    norm = spm.Laser2Normalizer()
    text.write_text("".join(norm(line) + "\n" for lines in lines_by_lang.values() for line in lines * 5),
                    encoding="utf-8")
    model = run_dir / "results" / "toy" / "spm" / "spm.model"
    spm.learn({"all": [text]}, model, vocab_size=120, model_type="unigram", character_coverage=1.0,
              sample_sentences=200, alpha=0.3, seed=1)
    family = registry.get("laser")
    pieces = sorted({p for lang, lines in lines_by_lang.items() for line in family.prepare(lines, lang, codes=model)
                     for p in line.split()})
    symbols = ["<s>", "<pad>", "</s>", "<unk>", *pieces]
    torch.manual_seed(0)
    module = BiLSTMMaxPoolEncoder(len(symbols), 1, 8, 12, 1, True)
    record = dict(subword.codes_record(model), file="results/toy/spm/spm.model")  # relative to the run
    encoder = run_dir / "results" / "toy" / "models" / "base" / "encoder.pt"
    encoder.parent.mkdir(parents=True)
    torch.save({"params": dict(num_embeddings=len(symbols), padding_idx=1, embed_dim=8, hidden_size=12, num_layers=1,
                               bidirectional=True, left_pad=False, padding_value=0.0),
                "model": module.state_dict(), "dictionary": {s: i for i, s in enumerate(symbols)},
                "meta": {"eos_idx": 2, "unk_idx": 3, "lang_pairs": ["fra-eng", "rus-eng"]},
                subword.RECORD_KEY: record}, encoder)
    return encoder


def test_prepare_then_check_on_the_cpu(tmp_path, monkeypatch, capsys):
    from laser_repro.models.similarity import similarity_error_matrix

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):  # (restored after the test)
        monkeypatch.setenv(var, "1")
    script = load_script()
    flores = tmp_path / "flores200-dev"
    flores.mkdir()
    for lang, lines in SENTENCES.items():
        (flores / f"{FLORES_NAMES[lang]}.dev").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    run_dir = tmp_path / "run"
    encoder = toy_laser_run(run_dir, SENTENCES)

    out = tmp_path / "prepared"
    assert script.main(["prepare", str(out), "--laser-encoder", str(encoder), "--laser-run-dir", str(run_dir),
                        "--flores", str(flores), "--lines", str(CHECKED), "--labse-updates", "2"]) == 0
    assert "MiB)" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    langs = ["eng", "fra", "rus"]  # the encoder's training languages, English first
    assert manifest["languages"] == langs and manifest["labse"]["built"]
    assert manifest["labse"]["trained_on_flores_lines"] == [CHECKED, len(SENTENCES["eng"])]
    assert sorted(p.name for p in (out / "laser2").iterdir()) == ["laser2.cvocab", "laser2.pt", "laser2.spm"]
    assert (out / "labse-st" / "modules.json").is_file()
    sentences = json.loads((out / "sentences.json").read_text())
    assert sentences["laser2"]["rus"] == SENTENCES["rus"][:CHECKED]  # raw text for LASER2's own tokenizer
    assert sentences["sentence_transformers"]["eng"][0] == "the cat sleeps on the red chair ."  # Moses, lowercased
    laser_ref = np.load(out / "laser2_reference.npy")
    assert laser_ref.shape == (3 * CHECKED, 24) and laser_ref.dtype == np.float32
    assert np.load(out / "sentence_transformers_reference.npy").shape == (3 * CHECKED, 64)
    for name in ("laser2", "sentence_transformers"):
        assert manifest["cpu_clients"][name]["max_abs_diff"] <= 1e-5, manifest["cpu_clients"]
    # the script's retrieval is the project's (laser_repro.models.similarity)
    ours = similarity_error_matrix({lang: laser_ref[i * CHECKED:(i + 1) * CHECKED] for i, lang in enumerate(langs)})
    assert manifest["reference_xsim_errors"]["laser2"] == {lang: ours["pairs"][f"{lang}-eng"] for lang in langs[1:]}

    report_path = tmp_path / "check.json"
    assert script.main(["check", str(out), str(report_path), "--device", "cpu"]) == 0
    report = json.loads(report_path.read_text())
    assert report["ok"] and not report["failures"] and report["fp32_threshold_max_abs_diff"] == 1e-4
    env = report["environment"]
    for key in ("torch", "laser-encoders", "sentence-transformers", "transformers", "sentencepiece"):
        assert env[key], key
    assert set(env["tf32_torch_defaults"]) == {"matmul_allow_tf32", "cudnn_allow_tf32", "float32_matmul_precision"}
    for name in ("laser2", "sentence_transformers"):
        assert report[name]["cpu_client_here"] == manifest["cpu_clients"][name]
        for variant, bound in (("fp32", 1e-5), ("fp32_torch_defaults", 1e-5), ("fp16", 1e-2)):
            r = report[name][variant]
            assert "error" not in r, r
            assert r["max_abs_diff"] <= bound and r["min_cosine"] > 0.999 and r["sentences_per_s"] > 0, (name, variant)
            assert r["retrieval"]["pairs"] == 2
        assert report[name]["fp32"]["retrieval"]["same_error_in_every_pair"]
        assert report[name]["fp32"]["retrieval"]["neighbours_changed"] == 0
        assert report[name]["fp32"]["tf32"]["cudnn_allow_tf32"] is False

    # a reference vector off by 1e-3: the check fails and names the client
    laser_ref[4, 3] += 1e-3
    np.save(out / "laser2_reference.npy", laser_ref)
    assert script.main(["check", str(out), str(report_path), "--device", "cpu"]) == 1
    report = json.loads(report_path.read_text())
    assert not report["ok"] and len(report["failures"]) == 1 and report["failures"][0].startswith("laser2 fp32")
    assert report["laser2"]["fp32"]["max_abs_diff"] == pytest.approx(1e-3, rel=1e-2)
