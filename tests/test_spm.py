"""SentencePiece as LASER2 does it (bitext_data.<name>.subword.kind: spm): the language-agnostic text path is
token for token what laser_encoders' own LaserTokenizer produces (the PyPI package, installed without its
dependencies), the joint model is learned deterministically on a language-sampled part of the training text,
the workflow runs it end to end, and the LASER2 export is loaded by laser_encoders.SentenceEncoder with the
same vectors as ours."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import REPO, TOY_CONFIG
from laser_repro.core import languages
from laser_repro.core.errors import UserError
from laser_repro.data import spm
from laser_repro.data.subword_text import SubwordText, kind_of

DATA_ROOT = Path(os.environ.get("LASER_REPRO_DATA_ROOT", REPO.parent / "shared" / "data"))
TOY_SPM = REPO / "tests" / "toy" / "overlays" / "spm.yaml"
NWAY_SPM = REPO / "tests" / "toy" / "overlays" / "nway_spm.yaml"

# lines written for these tests: the normaliser's cases (control and format characters, the quotes Moses
# release 4.0 maps differently from sacremoses, no-break spaces before French punctuation, ellipses, dashes,
# tabs), in several scripts
LINES = [
    "Hello, World! It's a “test” — isn't it…",
    "‘Single’ quotes, a ‚low‘ one and `back ticks´´ here.",
    "Le prix\u00a0: 12\u00a0% « environ » ; n'est-ce pas\u00a0?",
    "Zero\u200bwidth\u200djoiner and a soft\u00adhyphen, tab\there\rreturn.",
    "Das Wetter (heute)  ist   schön ,sagt er : ja .",
    "Москва — столица России. «Да», сказал он.",
    "我们今天去北京，好吗？（是的）",
    "東京は日本の首都です。「はい」と言った。",
    "서울은 한국의 수도입니다.",
    "القاهرة هي عاصمة مصر، أليس كذلك؟",
    "नई दिल्ली भारत की राजधानी है।",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "ירושלים היא עיר.",
    "Hà Nội là thủ đô của Việt Nam.",
    "Numbers 1 000 000 and 3.14, e-mail a@b.c, URL https://x.org/a?b=1.",
    "",
    "   leading and trailing spaces   ",
]


def _learn(tmp_path: Path, texts: dict[str, list[str]], **settings) -> Path:
    norm = spm.Laser2Normalizer()
    files = {}
    for lang, lines in texts.items():
        path = tmp_path / "text" / f"{lang}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(norm(line) + "\n" for line in lines), encoding="utf-8")
        files[lang] = [path]
    model = tmp_path / "spm" / "spm.model"
    spm.learn(files, model, **{"vocab_size": 200, "model_type": "unigram", "character_coverage": 1.0,
                               "sample_sentences": 2000, "alpha": 0.3, "seed": 1, **settings})
    return model


def _laser_tokenizer(model: Path):
    from laser_encoders.laser_tokenizer import LaserTokenizer

    return LaserTokenizer(spm_model=model)


def test_text_path_is_token_identical_with_laser_encoders_tokenizer(tmp_path):
    model = _learn(tmp_path, {"all": LINES * 20})
    theirs = _laser_tokenizer(model)
    ours = SubwordText(model)
    assert ours.kind == "spm" and ours.text == "laser2"
    prepared = list(ours.prepare(LINES, "eng"))  # the language does not matter: one text path for all
    assert prepared == list(ours.prepare(LINES, "cmn"))
    for line, mine in zip(LINES, prepared):
        assert mine == theirs.tokenize(line), line
    # the two quotes LASER patches: double quotes, as Moses release 4.0 (sacremoses' table has apostrophes)
    assert spm.Laser2Normalizer()("‘a’ ‚b‘") == '"a" "b"'
    # a control or format character is a space, a tab too; the case is lowered unless asked
    assert spm.Laser2Normalizer(lowercase=False)("A\u200bB\tC") == "A B C"


@pytest.mark.skipif(not (DATA_ROOT / "flores200-dev").is_dir(), reason=f"no FLORES-200 dev under {DATA_ROOT}")
def test_token_identity_on_flores_lines_of_every_script_of_the_default_config(tmp_path):
    """FLORES dev lines of the 20 languages (9 scripts) of config/small.yaml: a model learned on lines 0-796,
    both tokenizers on every line (the held-out 797-996 included)."""
    config = yaml.safe_load((REPO / "config" / "small.yaml").read_text(encoding="utf-8"))
    langs = next(c for c in config["corpora"] if c["name"] == "flores200_dev")["languages"]
    texts = {lang: (DATA_ROOT / "flores200-dev" / f"{languages.get(lang).flores}.dev").read_text(encoding="utf-8")
             .splitlines() for lang in langs}
    assert {languages.get(lang).script for lang in langs} >= {"Latn", "Cyrl", "Grek", "Arab", "Hebr", "Deva", "Hani",
                                                             "Jpan", "Hang"}
    model = _learn(tmp_path, {lang: lines[:797] for lang, lines in texts.items()}, vocab_size=4000,
                   character_coverage=0.9995, sample_sentences=12000)
    theirs, ours = _laser_tokenizer(model), SubwordText(model)
    differ = []
    for lang, lines in texts.items():
        for number, (line, mine) in enumerate(zip(lines, ours.prepare(lines, lang))):
            if mine != theirs.tokenize(line):
                differ.append((lang, number, line))
    assert sum(map(len, texts.values())) == 20 * 997 and not differ, differ[:5]


def test_sample_sizes_follow_the_smoothing_exponent():
    counts = {"eng": 9000, "deu": 900, "kor": 100, "xxx": 0}
    flat = spm.sample_sizes(counts, 1000, 1.0)
    assert flat == {"deu": 90, "eng": 900, "kor": 10} and sum(flat.values()) == 1000
    smooth = spm.sample_sizes(counts, 1000, 0.3)
    assert sum(smooth.values()) == 1000 and smooth["kor"] > 100 > flat["kor"] and smooth["eng"] < 900
    # q ** 0.3 / sum: kor's share is 0.01 ** 0.3 / (0.9 ** 0.3 + 0.09 ** 0.3 + 0.01 ** 0.3)
    q = np.array([0.9, 0.09, 0.01]) ** 0.3
    assert abs(smooth["kor"] - 1000 * q[2] / q.sum()) < 1
    with pytest.raises(UserError, match="no line"):
        spm.sample_sizes({"eng": 0}, 10, 0.3)


def test_learning_is_deterministic_and_up_samples_by_repetition(tmp_path):
    texts = {"eng": [f"the {i} cat sat on mat number {i % 17}" for i in range(400)],
             "kor": [f"고양이 {i} 매트 위에" for i in range(20)]}
    first = _learn(tmp_path / "a", texts, vocab_size=60)
    second = _learn(tmp_path / "b", texts, vocab_size=60)
    assert first.read_bytes() == second.read_bytes()  # same text, settings, seed: the same model
    stats = yaml.safe_load(first.with_suffix(".json").read_text())
    assert stats["training_lines"] == {"eng": 400, "kor": 20} and stats["sample_sentences"] == 2000
    # kor: 20 lines, q = 20/420: q**0.3 / (q**0.3 + (400/420)**0.3) of 2000 = 579 draws, each line 28 or 29 times
    assert stats["sample_lines"]["kor"] == spm.sample_sizes({"eng": 400, "kor": 20}, 2000, 0.3)["kor"] == 579
    other = _learn(tmp_path / "c", texts, vocab_size=60, seed=2)
    assert yaml.safe_load(other.with_suffix(".json").read_text())["sample_lines"] == stats["sample_lines"]
    rng = np.random.default_rng(0)
    draws = spm._draws(20, 579, rng)
    assert len(draws) == 579 and set(np.bincount(draws, minlength=20)) == {28, 29}


def test_the_kind_is_read_from_the_file_and_recorded(tmp_path):
    from laser_repro.models import subword

    model = _learn(tmp_path, {"eng": LINES * 10})
    codes = tmp_path / "codes"
    codes.write_text("t h 10\ne r 5\n", encoding="utf-8")
    assert kind_of(model) == "spm" and kind_of(codes) == "bpe"
    assert subword.codes_record(model)["kind"] == "sentencepiece"
    assert subword.codes_record(codes)["kind"] == "fastbpe_codes"
    with pytest.raises(UserError, match="no such subword model"):
        kind_of(tmp_path / "absent")
    broken = tmp_path / "broken.model"
    broken.write_bytes(b"\n\x05junk")
    with pytest.raises(UserError, match="not a SentencePiece model"):
        SubwordText(broken)


def _config(*files: Path) -> dict:
    from laser_repro import config

    return config.load(list(files))


def test_config_subword_kind():
    from laser_repro.config.schema import ConfigError

    cfg = _config(REPO / "config" / "small.yaml", REPO / "config" / "overlays" / "spm.yaml")
    assert cfg["bitext_data"]["news"]["subword"]["kind"] == "spm" and cfg["bitext_data"]["news"]["bpe"] is None
    assert _config(REPO / "config" / "small.yaml")["bitext_data"]["news"]["subword"]["kind"] == "bpe"
    both = yaml.safe_load((REPO / "config" / "small.yaml").read_text(encoding="utf-8"))
    both["bitext_data"]["news"]["subword"] = {"kind": "spm"}
    from laser_repro.config import schema

    with pytest.raises(ConfigError, match=r"bitext_data\.news\.bpe: not used with subword\.kind: spm"):
        schema.validate(both, source="both.yaml")
    neither = yaml.safe_load((REPO / "config" / "small.yaml").read_text(encoding="utf-8"))
    del neither["bitext_data"]["news"]["bpe"]
    with pytest.raises(ConfigError, match="'bpe' is a required property"):
        schema.validate(neither, source="neither.yaml")


@pytest.mark.skipif(not (DATA_ROOT / "flores200-dev").is_dir(), reason=f"no shared data under {DATA_ROOT}")
def test_dry_run_of_the_default_config_with_spm_has_the_laser2_rules(tmp_path):
    from conftest import run_snakemake

    proc = run_snakemake("--profile", str(REPO / "profiles" / "local"), "--configfile", str(REPO / "config" / "small.yaml"),
                         str(REPO / "config" / "overlays" / "spm.yaml"), "--config", f"data_root={DATA_ROOT}",
                         "--directory", str(tmp_path), "-n", "-p", "data")
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    jobs = {line.split()[1].rstrip(":") for line in proc.stdout.splitlines() if line.startswith(("rule ", "localrule "))}
    assert {"laser2_lines", "laser2_shard", "spm_learn", "spm_dict", "spm_apply", "binarize_pair"} <= jobs, jobs
    assert not jobs & {"moses_lines", "preprocess_shard", "bpe_count", "bpe_learn", "fairseq_dict", "bpe_apply"}, jobs
    learn = next(line for line in proc.stdout.splitlines() if " spm-learn " in line)
    for arg in ("--vocab-size 10000", "--model-type unigram", "--sample-sentences 200000", "--sampling-alpha 0.3",
                "--seed 1"):
        assert arg in learn, learn


def test_toy_run_with_spm_trains_exports_and_loads_in_laser_encoders(tmp_path_factory, tmp_path):
    from conftest import make_toy_data, run_snakemake

    root = tmp_path_factory.mktemp("toy_spm")
    data_root = make_toy_data.make(root / "data")
    work = root / "work"
    work.mkdir()
    proc = run_snakemake("--profile", str(REPO / "profiles" / "local"), "--configfile", str(TOY_CONFIG), str(TOY_SPM),
                         "--config", f"data_root={data_root}", "--directory", str(work), "--cores", "2",
                         "results/toy_spm/models/base/encoder.pt")
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = work / "results" / "toy_spm"
    assert (run / "spm" / "spm.model").is_file() and not (run / "bpe" / "codes").exists()
    assert not (run / "tok").exists() and not (run / "moses").exists()  # no Moses anywhere in the LASER data
    stats = yaml.safe_load((run / "spm" / "spm.json").read_text())
    assert stats["vocab_size"] == 200 and stats["sample_sentences"] == 4000 and stats["alpha"] == 0.5
    dict_lines = (run / "bin" / "dict.txt").read_text(encoding="utf-8").splitlines()
    assert len(dict_lines) == 199 and sum(int(line.split()[1]) for line in dict_lines) > 0  # every piece but <unk>
    # the held-out FLORES lines of the learning curves went through the same text path and model
    assert (run / "flores" / "bpe" / "heldout.cmn").read_text(encoding="utf-8").startswith("▁")

    # LASER2's layout, loaded by LASER's own client from local files; its tokenizer on raw text, our pipeline on
    # the same raw text: the same vectors
    out = tmp_path / "laser2"
    done = subprocess.run([str(REPO / ".venv" / "bin" / "laser-repro"), "export", "--format", "laser2", "--encoder",
                           str(run / "models" / "base" / "encoder.pt"), "--output", str(out)], cwd=work,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["laser2.cvocab", "laser2.pt", "laser2.spm"]
    assert (out / "laser2.spm").read_bytes() == (run / "spm" / "spm.model").read_bytes()
    from laser_encoders.models import SentenceEncoder

    from laser_repro.models import registry

    client = SentenceEncoder(str(out / "laser2.pt"), spm_model=str(out / "laser2.spm"),
                             spm_vocab=str(out / "laser2.cvocab"), cpu=True, max_sentences=16)
    ours = registry.load_encoder(run / "models" / "base" / "encoder.pt")
    family = registry.get("laser")
    worst = 0.0
    for lang in ("eng", "spa", "deu", "ell", "cmn"):
        lines = (data_root / "flores200-dev" / f"{languages.get(lang).flores}.dev").read_text(
            encoding="utf-8").splitlines()[340:400]
        theirs = client(lines)
        mine = ours.embed(family.prepare(lines, lang, codes=run / "spm" / "spm.model"), lang)
        assert theirs.shape == mine.shape == (60, ours.dim)
        worst = max(worst, float(np.abs(theirs - mine).max()))
    assert worst <= 1e-5, worst

    # an existing directory is not overwritten
    again = subprocess.run([str(REPO / ".venv" / "bin" / "laser-repro"), "export", "--format", "laser2", "--encoder",
                            str(run / "models" / "base" / "encoder.pt"), "--output", str(out)], cwd=work,
                           capture_output=True, text=True)
    assert again.returncode != 0 and "exists and is not empty" in again.stderr


def test_laser2_export_refuses_an_encoder_trained_on_bpe(tmp_path):
    import torch

    from laser_repro.models import subword
    from laser_repro.models.laser.laser2 import export_laser2

    codes = tmp_path / "codes"
    codes.write_text("t h 10\n", encoding="utf-8")
    encoder = tmp_path / "encoder.pt"
    torch.save({"params": {"num_embeddings": 5}, "model": {"embed_tokens.weight": torch.zeros(5, 2)},
                "dictionary": {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "a": 4},
                subword.RECORD_KEY: subword.codes_record(codes)}, encoder)
    with pytest.raises(UserError, match=r"encoder\.pt: trained on subwords of kind 'fastbpe_codes'"):
        export_laser2(encoder, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_command_names_what_each_format_needs(tmp_path):
    from laser_repro import cli

    with pytest.raises(SystemExit, match="--format laser2: give --encoder"):
        cli.main(["export", "--format", "laser2", "--checkpoint", "x.pt", "--output", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="export: give --checkpoint"):
        cli.main(["export", "--encoder", "x.pt", "--output", str(tmp_path / "o")])


# ---- N-way data (nway_data.<name>.subword) -----------------------------------------------------------------
def _nway_text(tok_dir: Path, n: int = 120) -> list[str]:
    langs = ["eng", "fra", "cmn"]
    words = {"eng": "the cat sleeps on a mat today", "fra": "le chat dort sur un tapis aujourd'hui",
             "cmn": "猫 今天 睡 在 垫子 上"}
    tok_dir.mkdir(parents=True)
    for lang in langs:
        w = words[lang].split()
        lines = [" ".join(w[(i + k) % len(w)] for k in range(3 + i % 4)) for i in range(n)]
        lines[7] = " ".join(["word"] * 60) if lang == "fra" else lines[7]  # over max_words: dropped in every language
        (tok_dir / f"train.{lang}").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (tok_dir / f"valid.{lang}").write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    return langs


def test_nway_build_with_sentencepiece_is_deterministic_and_read_by_its_kind(tmp_path):
    from laser_repro.data import nway

    langs = _nway_text(tmp_path / "tok")
    settings = {"kind": "spm", "vocab_size": 40, "model_type": "unigram", "sampling_alpha": 0.5,
                "sample_sentences": 300, "character_coverage": 1.0, "seed": 1, "threads": 1}
    stats = nway.build(tmp_path / "tok", langs, tmp_path / "a", max_words=50, spm_settings=settings)
    nway.build(tmp_path / "tok", langs, tmp_path / "b", max_words=50, spm_settings=settings)
    assert stats["kept"] == 119 and stats["dropped_too_long"] == 1 and stats["subword"]["vocab_size"] == 40
    assert "merges" not in stats and stats["spm"]["sample_sentences"] == 300
    a, b = tmp_path / "a", tmp_path / "b"
    assert sorted(p.name for p in a.iterdir()) == ["dict.txt", "spm.json", "spm.model", "spm.vocab", "stats.json",
                                                   *(f"{s}.{lang}" for s in ("train", "valid") for lang in sorted(langs))]
    for p in a.iterdir():  # the same text and settings: the same bytes
        assert p.read_bytes() == (b / p.name).read_bytes(), p.name
    assert nway.subword_model_file(a) == a / "spm.model" and kind_of(a / "spm.model") == "spm"
    encoder = SubwordText(a / "spm.model")
    assert (a / "valid.cmn").read_text(encoding="utf-8").splitlines() == list(
        encoder.encode_stream((tmp_path / "tok" / "valid.cmn").read_text(encoding="utf-8").splitlines()))
    assert nway.subword_model_file(tmp_path / "tok") is None


def test_nway_spm_config_checks():
    from laser_repro import config

    toy = REPO / "tests" / "toy" / "compare.yaml"
    plan = config.Plan(config.load([toy, NWAY_SPM], {"data_root": "/d"}))
    assert plan.nway_subword_kind("toy_spm") == "spm" and plan.nway_data["toy_spm"]["subword"]["model_type"] == "unigram"
    assert plan.nway_subword_kind("toy") == "bpe" and "subword" not in plan.nway_data["toy"]  # absent: bpe
    cfg = config.load([toy, NWAY_SPM], {"data_root": "/d"})
    cfg["nway_data"]["toy_spm"]["bpe_merges"] = 100
    with pytest.raises(config.ConfigError, match=r"nway_data\.toy_spm\.bpe_merges: not used with subword\.kind: spm"):
        config.validate(cfg, source="toy")
    cfg["nway_data"]["toy_spm"].update(bpe_merges=None, subword={"kind": "bpe"})
    with pytest.raises(config.ConfigError, match=r"nway_data\.toy_spm\.bpe_merges: expected integer"):
        config.validate(cfg, source="toy")
    cfg = config.load([toy, NWAY_SPM], {"data_root": "/d"})
    cfg["models"]["toy_labse"]["data"] = "toy_spm"  # LaBSE reads Moses-tokenised words
    with pytest.raises(config.ConfigError, match=r"models\.toy_labse\.data: nway_data\.toy_spm has subword\.kind spm"):
        config.validate(cfg, source="toy")


def test_toy_multienc_model_on_sentencepiece_n_way_data(tmp_path_factory):
    """The N-way data with subword.kind spm through the real Snakemake: LASER2's lines (no Moses), the joint
    SentencePiece model, a multienc model trained on it, exported and scored on its validation lines, which
    went through the same text path as raw text embedded later (``embed --codes``)."""
    from conftest import make_toy_data, run_snakemake

    root = tmp_path_factory.mktemp("toy_nway_spm")
    data_root = make_toy_data.make(root / "data")
    work = root / "work"
    work.mkdir()
    proc = run_snakemake("--profile", str(REPO / "profiles" / "local"), "--configfile",
                         str(REPO / "tests" / "toy" / "compare.yaml"), str(NWAY_SPM), "--config", f"data_root={data_root}",
                         "--directory", str(work), "--cores", "2", "results/toy_nway_spm/eval/models/toy_all/similarity.json")
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = work / "results" / "toy_nway_spm"
    data = run / "nway" / "toy_spm" / "bpe"
    assert (data / "spm.model").is_file() and not (data / "codes").exists()
    assert not (run / "moses").exists() and (run / "laser2").is_dir()  # no Moses anywhere on this path
    stats = yaml.safe_load((data / "stats.json").read_text())
    assert stats["subword"]["vocab_size"] == 150 and stats["spm"]["alpha"] == 0.5
    import torch

    from laser_repro.models import subword

    record = torch.load(run / "models" / "toy_all" / "encoder.pt", weights_only=True)[subword.RECORD_KEY]
    assert record["kind"] == "sentencepiece" and record["file"].endswith("nway/toy_spm/bpe/spm.model")
    raw = (run / "nway" / "toy_spm" / "raw" / "valid.cmn").read_text(encoding="utf-8").splitlines()
    prepared = list(SubwordText(data / "spm.model").prepare(raw, "cmn"))
    assert prepared == (data / "valid.cmn").read_text(encoding="utf-8").splitlines()
    scores = yaml.safe_load((run / "eval" / "models" / "toy_all" / "similarity.json").read_text())
    assert scores["similarity"]["sentences"] == len(raw) and set(scores["similarity"]["languages"]) >= {"eng", "cmn"}
