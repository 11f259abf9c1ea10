"""Joint BPE with fastBPE semantics (laser_repro.data.bpe): learning, fastBPE file formats, application,
the fairseq dictionary, and the size of the paper's encoder with LASER's vocabulary."""
import collections
import random

import pytest
import yaml

from conftest import REPO
from laser_repro.data import bpe
from laser_repro import cli
from laser_repro.core.textio import InputError


def _corpus(path, seed=0, lines=3000):
    rng = random.Random(seed)
    words = ["der", "die", "das", "haus", "house", "the", "casa", "la", "домик", "дом", "σπίτι", "家", "です",
             "running", "runner", "ran", "laufen", "läuft", "corriendo", "internationalization", "national"]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            f.write(" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) + "\n")


def _naive_learn(word_counts, merges):
    """Reference: recount every pair before each merge; most frequent, ties to the smallest (left, right)."""
    words = [(list(w[:-1]) + [w[-1] + "</w>"], c) for w, c in word_counts]
    codes = []
    for _ in range(merges):
        counts = collections.Counter()
        for syms, c in words:
            for pair in zip(syms, syms[1:]):
                counts[pair] += c
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        codes.append((*best, counts[best]))
        for k, (syms, c) in enumerate(words):
            out, j = [], 0
            while j < len(syms):
                if j < len(syms) - 1 and (syms[j], syms[j + 1]) == best:
                    out.append(best[0] + best[1])
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            words[k] = (out, c)
    return codes


# ---- learning -------------------------------------------------------------------------------------

def test_learn_hand_computed_merges_in_order():
    # words: l o w</w> x5, l o w e r</w> x2, n e w e s t</w> x6, w i d e s t</w> x3
    # pair counts: (w,e) 8, (e,s) 9, (s,t</w>) 9, (l,o) 7, (n,e) 6, (e,w) 6, (o,w</w>) 5, ...
    learned = bpe.learn_codes([("low", 5), ("lower", 2), ("newest", 6), ("widest", 3)], 7)
    assert learned.codes == [
        ("e", "s", 9),           # tie 9/9 with (s, t</w>): "e" < "s"
        ("es", "t</w>", 9),
        ("l", "o", 7),           # (w, e) fell from 8 to 2: "newest" is n e w es t</w> now
        ("e", "w", 6),           # tie with (n, e) and (w, est</w>)... "e" < "n" < "w"
        ("ew", "est</w>", 6),    # new pairs (n, ew) 6 and (ew, est</w>) 6: "ew" < "n"
        ("n", "ewest</w>", 6),
        ("lo", "w</w>", 5),
    ]
    # every word segmented by the codes, counted with the word's frequency (fastBPE getvocab)
    # low -> low; lower -> lo@@ w@@ e@@ r; newest -> newest; widest -> w@@ i@@ d@@ est
    assert learned.vocab == {"newest": 6, "low": 5, "w@@": 2 + 3, "lo@@": 2, "e@@": 2, "r": 2,
                             "i@@": 3, "d@@": 3, "est": 3}


@pytest.mark.parametrize("seed", range(60))
def test_learn_equals_recounting_reference(seed):
    rng = random.Random(seed)
    alphabet = rng.choice(["ab", "abc", "aab", "xyzw", "abcdefg"])
    counts = collections.Counter()
    for _ in range(rng.randint(1, 40)):
        counts["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))] += rng.randint(1, 5)
    merges = rng.randint(1, 50)
    learned = bpe.learn_codes(sorted(counts.items()), merges, log_every=1000)
    assert learned.codes == _naive_learn(sorted(counts.items()), merges)
    # the learner's final segmentation is what applying the codes gives
    assert learned.vocab == bpe.vocab_from_codes(learned.codes, counts.items())


def test_learn_stops_when_no_pair_is_left(caplog):
    learned = bpe.learn_codes([("ab", 3), ("a", 1)], 10)
    assert learned.codes == [("a", "b</w>", 3)] and learned.vocab == {"ab": 3, "a": 1}
    assert "no pair left to merge after 1 of 10" in caplog.text


def test_bad_learning_input_names_file_and_key(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"empty\.txt: no words to learn BPE from"):
        bpe.learn(tmp_path / "codes", tmp_path / "vocab", merges=10, inputs=[empty])
    with pytest.raises(ValueError, match=r"bpe\.merges must be at least 1, got 0"):
        bpe.learn(tmp_path / "codes", tmp_path / "vocab", merges=0, inputs=[empty])
    assert not (tmp_path / "codes").exists()
    words = tmp_path / "words"
    words.write_text("haus 3\nthe  2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"words: line 2: expected 'word count'"):
        bpe.learn(tmp_path / "codes", tmp_path / "vocab", merges=10, words_path=words)


def test_same_inputs_same_bytes(tmp_path):
    _corpus(tmp_path / "a.txt")
    _corpus(tmp_path / "b.txt", seed=1)
    outputs = []
    for run, inputs, threads in (("r1", ["a.txt", "b.txt"], 1), ("r2", ["b.txt", "a.txt"], 2)):
        d = tmp_path / run
        cli.main(["bpe-count", "--output", str(d / "words"), "--threads", str(threads),
                  "--inputs", *(str(tmp_path / f) for f in inputs)])
        cli.main(["bpe-learn", "--words", str(d / "words"), "--merges", "60",
                  "--codes", str(d / "codes"), "--vocab", str(d / "vocab")])
        # learning straight from the text gives the same files
        bpe.learn(d / "codes2", d / "vocab2", merges=60, inputs=[tmp_path / f for f in inputs])
        outputs.append([(d / name).read_bytes() for name in ("words", "codes", "vocab", "codes2", "vocab2")])
    assert outputs[0] == outputs[1]
    words, codes, vocab, codes2, vocab2 = outputs[0]
    assert codes == codes2 and vocab == vocab2
    assert len(codes.decode().splitlines()) == 60


# ---- fastBPE files and application ----------------------------------------------------------------

# A codes file written by hand in fastBPE's learnbpe format ("left right count", merge order).
HAND_CODES = "l o 9\nlo w 8\ne r</w> 7\nn e 6\nne w</w> 5\nb c 4\na b 3\na a 2\n"
HAND_CASES = {
    "lower": "low@@ er",           # l o w e r</w> -> lo w e r</w> -> low e r</w> -> low er</w>
    "low": "lo@@ w",               # (lo, w</w>) is not a merge: only (lo, w)
    "new": "new",                  # n e w</w> -> ne w</w> -> new</w>
    "newer": "ne@@ w@@ er",        # (e, r</w>) has the lowest rank present, then (n, e)
    "abcd": "a@@ bc@@ d",          # rank beats position: (b, c) before (a, b)
    "aaaaa": "aa@@ aa@@ a",        # all occurrences, left to right, no overlap
    "x": "x",
    "日本": "日@@ 本",              # characters the codes never saw stay single characters
}


def test_apply_hand_written_fastbpe_codes(tmp_path):
    codes = tmp_path / "93langs.fcodes"
    codes.write_text(HAND_CODES, encoding="utf-8")
    assert bpe.read_codes(codes)[:2] == [("l", "o", 9), ("lo", "w", 8)]
    applier = bpe.BpeApplier(codes)
    for word, expected in HAND_CASES.items():
        assert applier.encode_word(word) == expected
    line = "  ".join(HAND_CASES) + " "
    assert applier.encode_line(line) == " ".join(HAND_CASES.values())
    # the command line: plain files and shards (read back in the original order), into one file
    text = tmp_path / "text.tok"
    text.write_text(f"{line}\n\nlower\n", encoding="utf-8")
    shards = [tmp_path / f"s.tok.{k:03d}-of-002" for k in range(2)]
    shards[0].write_text("lower\n", encoding="utf-8")   # block_lines 1: line 1 in shard 0, line 2 in shard 1
    shards[1].write_text("abcd\n", encoding="utf-8")
    out = tmp_path / "text.bpe"
    cli.main(["bpe-apply", "--codes", str(codes), "--output", str(out), "--block-lines", "1",
              "--inputs", str(text), *map(str, shards)])
    assert out.read_text(encoding="utf-8").splitlines() == [
        " ".join(HAND_CASES.values()), "", "low@@ er", "low@@ er", "a@@ bc@@ d"]


@pytest.mark.parametrize("content, message", [
    ("l o 9\nlo w\n", r"line 2: expected a fastBPE merge 'left right count'"),
    ("l o 9\nl o w 3\n", r"line 2: expected a fastBPE merge"),
    ("l o 9\n\n", r"line 2: expected a fastBPE merge"),
    ("#version: 0.2\nl o\n", r"line 1: expected a fastBPE merge"),   # subword-nmt's format
    ("l o 9\nl o 8\n", r"line 2: the pair 'l' 'o' was already merged on line 1"),
    ("", r"no merges"),
])
def test_bad_codes_file_names_file_and_line(tmp_path, content, message):
    codes = tmp_path / "bad.codes"
    codes.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=rf"bad\.codes: {message}"):
        bpe.BpeApplier(codes)


def test_all_training_characters_kept(tmp_path):
    rng = random.Random(3)
    text = tmp_path / "train.txt"
    common = ["house", "mouse", "haus", "maus", "σπίτι", "домик"]
    lines = [" ".join(rng.choice(common) for _ in range(8)) for _ in range(500)]
    lines.append("qzx 龘 ʘ")             # characters seen once, in one word each
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stats = bpe.learn(tmp_path / "codes", tmp_path / "vocab", merges=20, inputs=[text])
    assert stats["characters"] == len({ch for line in lines for ch in line if not ch.isspace()})
    cli.main(["bpe-dict", "--vocab", str(tmp_path / "vocab"), "--output", str(tmp_path / "dict.txt")])
    entries = [line.split(" ") for line in (tmp_path / "dict.txt").read_text(encoding="utf-8").splitlines()]
    dictionary = {token for token, _ in entries}
    applier = bpe.BpeApplier(tmp_path / "codes")
    # the training text BPE'd: every token is a vocab entry (no <unk>), the rare characters included
    assert {t for line in lines for t in applier.encode_line(line).split()} == {
        token for token, count in entries if int(count) > 0}
    assert {"q@@", "z@@", "x", "龘", "ʘ"} <= dictionary
    # a new word made of training characters, in forms training never had, still maps to no <unk>
    for word in ("龘q", "xʘσ", "ιτίπσ", "zzz"):
        assert all(t in dictionary for t in applier.encode_word(word).split())
    # a character never seen in training stays one token, which the dictionary lacks (-> <unk>)
    assert applier.encode_word("ж€") == "ж@@ €" and "€" not in dictionary


def test_vocab_and_fairseq_dict_round_trip(tmp_path):
    from fairseq.data import Dictionary

    _corpus(tmp_path / "a.txt")
    (tmp_path / "b.txt").write_text("<unk> house <s>\n" * 3000, encoding="utf-8")  # frequent: one token each
    inputs = [tmp_path / "a.txt", tmp_path / "b.txt"]
    stats = bpe.learn(tmp_path / "codes", tmp_path / "vocab", merges=50, inputs=inputs)
    vocab = bpe.read_vocab(tmp_path / "vocab")
    assert stats["vocab"] == len(vocab)
    counts = [c for _, c in vocab]
    assert counts == sorted(counts, reverse=True)
    # the vocab is fastBPE's getvocab: the token counts of the BPE'd training text
    written = bpe.apply_files(tmp_path / "codes", inputs, tmp_path / "train.bpe")
    lines = (tmp_path / "train.bpe").read_text(encoding="utf-8").splitlines()
    assert written == len(lines) == 6000
    assert collections.Counter(t for line in lines for t in line.split()) == dict(vocab)
    # removing the markers gives the words back
    original = [line.split() for path in inputs for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line.replace("@@ ", "").split() for line in lines] == original

    info = bpe.write_fairseq_dict(tmp_path / "vocab", tmp_path / "dict.txt")
    d = Dictionary.load(str(tmp_path / "dict.txt"))
    assert len(d) == 4 + info["entries"]                            # fairseq adds <s> <pad> </s> <unk>
    in_dict = [(t, c) for t, c in vocab if t not in bpe.FAIRSEQ_SPECIALS]
    assert len(in_dict) == len(vocab) - 2 == info["vocab"]          # the text's "<unk>" and "<s>" left out
    assert [(d[i], d.count[i]) for i in range(4, 4 + len(in_dict))] == in_dict
    assert all(d.count[i] == 0 for i in range(4 + len(in_dict), len(d)))
    assert all(d.index(t) != d.unk() for line in lines for t in line.split() if t not in bpe.FAIRSEQ_SPECIALS)
    bpe.write_fairseq_dict(tmp_path / "vocab", tmp_path / "laser_dict.txt", characters=False)
    assert (tmp_path / "laser_dict.txt").read_text(encoding="utf-8").splitlines() == [
        f"{t} {c}" for t, c in in_dict]


# ---- the paper's encoder with LASER's vocabulary ----------------------------------------------------

LASER_VOCABULARY = 73_640   # rows of the embedding of LASER's released encoder (93langs)


def test_paper_encoder_has_52_2m_parameters_with_lasers_vocabulary():
    import torch
    from fairseq.data import Dictionary

    from laser_repro.models.laser.encoder import BiLSTMMaxPoolEncoder
    from laser_repro.models.laser.fairseq_plugin.laser_lstm import LaserLSTMEncoder

    model = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())["models"]["base"]["model"]
    embed, hidden, layers = model["encoder_embed_dim"], model["encoder_hidden_size"], model["encoder_layers"]
    assert (embed, hidden, layers) == (320, 512, 5)
    # embedding 73,640 x 320                                          = 23,564,800
    # BiLSTM, per layer and direction: 4 gates x hidden x (input + hidden) + 2 biases of 4 x hidden
    #   layer 1:    2 x (2048 x (320 + 512) + 2 x 2048)  = 2 x 1,708,032 =  3,416,064
    #   layers 2-5: 4 x 2 x (2048 x (1024 + 512) + 2 x 2048) = 8 x 3,149,824 = 25,198,592
    # total                                                            = 52,179,456 (52.2M; LASER's encoder)
    expected = 73_640 * 320 + 2 * (2048 * 832 + 4096) + 4 * 2 * (2048 * 1536 + 4096)
    assert expected == 52_179_456
    dictionary = Dictionary()                        # <s> <pad> </s> <unk> + the BPE vocabulary
    for i in range(LASER_VOCABULARY - len(dictionary)):
        dictionary.add_symbol(f"t{i}")
    assert len(dictionary) == LASER_VOCABULARY
    with torch.device("meta"):
        standalone = BiLSTMMaxPoolEncoder(LASER_VOCABULARY, dictionary.pad(), embed_dim=embed, hidden_size=hidden,
                                          num_layers=layers, bidirectional=True)
        trained = LaserLSTMEncoder(dictionary, embed_dim=embed, hidden_size=hidden, num_layers=layers,
                                   bidirectional=True)
    for encoder in (standalone, trained):
        assert all(p.is_meta for p in encoder.parameters())
        assert sum(p.numel() for p in encoder.parameters()) == expected
        assert encoder.embed_tokens.weight.numel() == 23_564_800
    # what the issue measured: 50k sentencepiece pieces (+ fairseq's 4 symbols) gave 44.6M
    assert expected - (LASER_VOCABULARY - 50_004) * 320 == 44_615_936


def test_learning_from_an_empty_words_file_names_it(tmp_path, capsys):
    words = tmp_path / "results" / "bpe" / "words"
    words.parent.mkdir(parents=True)
    words.write_bytes(b"")
    # a user's error: one line on stderr and exit status 1 (laser_repro.core.errors.UserError)
    assert cli.main(["bpe-learn", "--words", str(words), "--merges", "10",
                     "--codes", str(tmp_path / "codes"), "--vocab", str(tmp_path / "vocab")]) == 1
    msg = capsys.readouterr().err.strip().splitlines()[-1]
    assert msg.startswith(f"laser-repro bpe-learn: error: {words}: no words to learn BPE from")
    assert "word-count file is empty" in msg
    assert "stats.json" in msg  # where to look: the extraction statistics of the bitexts
    assert not (tmp_path / "codes").exists() and not (tmp_path / "vocab").exists()


def test_bpe_learn_request_follows_its_word_counts():
    """bpe_learn asked a fixed 32 GB, which holds ~90M distinct words: it is sized from its input now."""
    from laser_repro.data.bpe import WORD_COUNT_BYTES_PER_WORD, learn_resources

    small, paper = learn_resources(7_523_434), learn_resources(None)  # the default run's counts; a dry run
    assert small == {"mem_mb": 2000, "runtime": 5}
    assert 32_000 < paper["mem_mb"] < 48_000 and paper["runtime"] < 120
    big = learn_resources(int(150e6 * WORD_COUNT_BYTES_PER_WORD))  # 150M words: beyond the old 32 GB
    assert big["mem_mb"] > 1.25 * 150 * 350 and big["mem_mb"] > paper["mem_mb"] > learn_resources(10**8)["mem_mb"] / 2
