"""A tiny synthetic parallel corpus (three pairs, two target languages) binarized with fairseq,
shared by the training and distributed-training tests."""

import random
from pathlib import Path

from laser_repro.models.laser import fairseq_bridge

# three source languages (deu, fra, eng) -> two target languages (eng, spa); eng-eng is listed
# on purpose: the task must skip it (no auto-encoding)
PAIRS = [("deu", "eng"), ("fra", "spa"), ("eng", "spa")]
LANG_PAIRS = "deu-eng,fra-spa,eng-spa,eng-eng"
TARGETS = "eng,spa"
CONCEPTS = 8
SMALL_MODEL = dict(
    encoder_layers=2, encoder_hidden_size=16, encoder_embed_dim=8,
    decoder_hidden_size=32, decoder_embed_dim=8, decoder_lang_embed_dim=4, dropout=0.1,
)


def word(lang, concept):
    return f"{lang[:2]}▁{concept}"


def write_corpus(root: Path):
    """~70 training + 8 validation lines per pair; a 'translation' is the same concept
    sequence written with the target language's words (reversed for spa, to make it a
    little less trivial)."""
    rng = random.Random(1234)
    langs = sorted({lang for pair in PAIRS for lang in pair})
    with open(root / "dict.txt", "w", encoding="utf-8") as fh:
        for lang in langs:
            for c in range(CONCEPTS):
                fh.write(f"{word(lang, c)} 100\n")
    prefixes = {}
    for src, tgt in PAIRS:
        for split, n in (("train", 70), ("valid", 8)):
            prefix = root / "text" / f"{split}.{src}-{tgt}"
            prefix.parent.mkdir(exist_ok=True)
            with open(f"{prefix}.{src}", "w", encoding="utf-8") as fs, open(f"{prefix}.{tgt}", "w", encoding="utf-8") as ft:
                for _ in range(n):
                    seq = [rng.randrange(CONCEPTS) for _ in range(rng.randint(1, 9))]
                    out = seq[::-1] if tgt == "spa" else seq
                    fs.write(" ".join(word(src, c) for c in seq) + "\n")
                    ft.write(" ".join(word(tgt, c) for c in out) + "\n")
            prefixes[(src, tgt, split)] = prefix
    return prefixes



def build_binarized(root: Path) -> Path:
    """Write the corpus under ``root`` and binarize it (train + valid) into ``root/data``."""
    prefixes = write_corpus(root)
    data = root / "data"
    data.mkdir()
    (data / "dict.txt").write_bytes((root / "dict.txt").read_bytes())
    for src, tgt in PAIRS:
        fairseq_bridge.binarize_pair(
            src, tgt, prefixes[(src, tgt, "train")], root / "dict.txt", data,
            valid_prefix=prefixes[(src, tgt, "valid")], log=root / f"binarize.{src}-{tgt}.log",
        )
    return data
