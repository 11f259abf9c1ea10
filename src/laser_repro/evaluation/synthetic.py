"""A synthetic N-way parallel corpus with a known answer: the alignment test of the LASER objective.

Every "language" writes the same concept sequences with its own words: concept ``c`` is the token
``<lang>_<perm_lang[c]>`` (an independent random permutation per language, so no token, and no
character n-gram that depends on the concept, is shared between languages); with
``reverse_odd=True`` the odd-numbered languages also reverse the word order. Sentence ``i`` of every language is the same concept sequence,
so the correct nearest neighbour of sentence ``i`` is sentence ``i`` of the other language.

Nothing but training can align two languages here: a random encoder and a character n-gram TF-IDF
are at chance (error about ``100 * (1 - 1/N)`` %). A correct encoder-decoder trained on the
translation pairs must map sentence ``i`` of every language close together, held-out sentences
included (they are new combinations of words it has seen), so its error must approach zero.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Dict, List, Sequence


def concept_sentences(n: int, *, concepts: int, min_len: int, max_len: int, rng: random.Random) -> List[List[int]]:
    """``n`` distinct concept sequences; concept frequencies fall off as 1/rank (Zipf)."""
    weights = [1.0 / (rank + 1) for rank in range(concepts)]
    seen, out = set(), []
    while len(out) < n:
        seq = tuple(rng.choices(range(concepts), weights=weights, k=rng.randint(min_len, max_len)))
        if seq not in seen:
            seen.add(seq)
            out.append(list(seq))
    return out


def render(seq: Sequence[int], lang: str, perm: Sequence[int], reverse: bool = False) -> str:
    words = [f"{lang}_{perm[c]}" for c in seq]
    return " ".join(words[::-1] if reverse else words)


def write_nway(root, langs: Sequence[str], *, train: int = 300, heldout: int = 100, concepts: int = 40,
               min_len: int = 4, max_len: int = 10, seed: int = 1, reverse_odd: bool = True
               ) -> Dict[str, Dict[str, Path]]:
    """Write ``<root>/<split>.<lang>`` for split in (train, heldout) and return their paths.

    The held-out sequences never occur in the training split."""
    rng = random.Random(seed)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    sentences = concept_sentences(train + heldout, concepts=concepts, min_len=min_len, max_len=max_len, rng=rng)
    perms = {}
    for lang in langs:
        perm = list(range(concepts))
        rng.shuffle(perm)
        perms[lang] = perm
    splits = {"train": sentences[:train], "heldout": sentences[train:]}
    paths: Dict[str, Dict[str, Path]] = {split: {} for split in splits}
    for split, seqs in splits.items():
        for i, lang in enumerate(langs):
            path = root / f"{split}.{lang}"
            path.write_text("".join(render(s, lang, perms[lang], reverse=reverse_odd and i % 2 == 1) + "\n" for s in seqs), encoding="utf-8")
            paths[split][lang] = path
    return paths


def write_dictionary(path, langs: Sequence[str], concepts: int = 40) -> Path:
    """A fairseq ``dict.txt`` with every word of every language."""
    path = Path(path)
    path.write_text("".join(f"{lang}_{c} 100\n" for lang in langs for c in range(concepts)), encoding="utf-8")
    return path


#: languages of the alignment experiment; the first two are the decoder's targets (as eng, spa)
LANGS = ("aaa", "bbb", "ccc", "ddd")

#: a small LASER model that aligns the synthetic languages in well under a minute on one core
MODEL = dict(encoder_layers=1, encoder_hidden_size=64, encoder_embed_dim=32, decoder_hidden_size=128,
             decoder_embed_dim=32, decoder_out_embed_dim=32, decoder_lang_embed_dim=8, dropout=0.1)
TRAIN = dict(lr=0.005, max_tokens=400, update_freq=1, max_epoch=12, seed=1, log_interval=50, clip_norm=5)


def run_alignment_experiment(workdir, *, model=None, train=None, langs=LANGS, train_sentences: int = 300,
                             heldout_sentences: int = 100, seed: int = 1, reverse_odd: bool = True) -> dict:
    """Train the LASER model of :mod:`laser_repro.models.laser.fairseq_plugin` on the synthetic corpus (every
    language into both targets, as the paper's eng/spa) and return the similarity error of every
    non-pivot language against ``langs[0]`` on the training and the held-out sentences, for the
    trained encoder and for the same encoder at its initialization (0 updates)."""
    from laser_repro.models.laser import fairseq_bridge
    from laser_repro.models.laser.encoder import SentenceEncoder
    from laser_repro.models.laser.export import export_encoder
    from laser_repro.models.similarity import xsim_error

    workdir = Path(workdir)
    texts = write_nway(workdir / "text", langs, train=train_sentences, heldout=heldout_sentences, seed=seed,
                       reverse_odd=reverse_odd)
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    dict_path = write_dictionary(data / "dict.txt", langs)
    targets = list(langs[:2])
    pairs = [(s, t) for t in targets for s in langs if s != t]
    for src, tgt in pairs:
        prefix = workdir / "text" / f"pair.{src}-{tgt}"
        for lang in (src, tgt):
            Path(f"{prefix}.{lang}").write_bytes(texts["train"][lang].read_bytes())
        fairseq_bridge.binarize_pair(src, tgt, prefix, dict_path, data, log=workdir / "binarize.log")
    settings = dict(TRAIN, **(train or {}))
    argv = fairseq_bridge.fairseq_train_argv(data, workdir / "checkpoints", pairs, targets, dict(MODEL, **(model or {})),
                                             settings, cpu=True, validate=False)
    result = {"init": {}, "trained": {}}
    encoders = {}
    outcome = fairseq_bridge.train(argv, initial_checkpoint=workdir / "checkpoint_init.pt")
    export_encoder(workdir / "checkpoints" / "checkpoint_last.pt", workdir / "encoder.pt")
    export_encoder(workdir / "checkpoint_init.pt", workdir / "encoder_init.pt")
    encoders["trained"] = SentenceEncoder.load(workdir / "encoder.pt")
    encoders["init"] = SentenceEncoder.load(workdir / "encoder_init.pt")
    result["num_updates"] = outcome["num_updates"]
    for name, enc in encoders.items():
        for split in ("train", "heldout"):
            emb = {lang: enc.embed(texts[split][lang].read_text(encoding="utf-8").splitlines()) for lang in langs}
            for lang in langs[1:]:
                err = xsim_error(emb[lang], emb[langs[0]])
                result[name].setdefault(split, {})[lang] = err
    return result
