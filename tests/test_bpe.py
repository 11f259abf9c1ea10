import random

from laser_repro import bpe


def _corpus(path, seed=0, lines=3000):
    rng = random.Random(seed)
    words = ["der", "die", "das", "haus", "house", "the", "casa", "la", "домик", "дом", "σπίτι", "家", "です",
             "running", "runner", "ran", "laufen", "läuft", "corriendo", "internationalization", "national"]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) + "\n")


def test_same_seed_same_model_bytes(tmp_path):
    _corpus(tmp_path / "a.txt")
    _corpus(tmp_path / "b.txt", seed=1)
    models = []
    for run in ("r1", "r2"):
        sample = tmp_path / run / "sample.txt"
        stats = bpe.sample_lines([tmp_path / "a.txt", tmp_path / "b.txt"], sample, max_lines=2000, seed=7)
        assert stats["input_lines"] == 6000 and 1700 < stats["sampled_lines"] < 2300
        models.append(bpe.learn(sample, tmp_path / run / "spm", vocab_size=120, seed=7, threads=2).read_bytes())
    assert models[0] == models[1]
    other = tmp_path / "r3" / "sample.txt"
    bpe.sample_lines([tmp_path / "a.txt", tmp_path / "b.txt"], other, max_lines=2000, seed=8)
    assert other.read_bytes() != (tmp_path / "r1" / "sample.txt").read_bytes()


def test_dict_and_apply(tmp_path):
    _corpus(tmp_path / "a.txt")
    model = bpe.learn(tmp_path / "a.txt", tmp_path / "spm", vocab_size=100, seed=1)
    n = bpe.write_fairseq_dict(model, tmp_path / "dict.txt")
    entries = (tmp_path / "dict.txt").read_text(encoding="utf-8").splitlines()
    assert len(entries) == n and all(len(e.split(" ")) == 2 for e in entries)
    assert "<unk>" not in {e.split(" ")[0] for e in entries}
    written = bpe.apply_files(model, [tmp_path / "a.txt"], tmp_path / "a.bpe")
    out = (tmp_path / "a.bpe").read_text(encoding="utf-8").splitlines()
    assert written == len(out) == 3000
    vocab = {e.split(" ")[0] for e in entries}
    assert all(piece in vocab for line in out[:200] for piece in line.split())
    # decoding the pieces gives the original words back
    first = (tmp_path / "a.txt").read_text(encoding="utf-8").splitlines()[0]
    assert "".join(out[0].split()).replace("▁", " ").strip() == first


def test_vocab_smaller_than_alphabet_names_the_config_keys(tmp_path):
    import pytest
    # 300 distinct CJK characters cannot fit a 100-piece vocabulary at full coverage
    sample = tmp_path / "sample.txt"
    sample.write_text("".join(chr(0x4E00 + i) + " " for i in range(300)) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bpe\.vocab_size=100 .*bpe\.character_coverage"):
        bpe.learn(sample, tmp_path / "spm", vocab_size=100, character_coverage=1.0)
    assert not (tmp_path / "spm.model").exists()
