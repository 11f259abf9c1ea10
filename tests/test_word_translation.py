"""MUSE word translation (laser_repro.evaluation.word_translation): tiny hand-checkable vocabularies."""
from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

from laser_repro.cli import main
from laser_repro.evaluation.word_translation import (
    dictionary_url, identical_strings, read_dictionary, vocabulary_index, word_translation)


def _unit(*rows):
    x = np.array(rows, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _hub_space():
    """Three source words at 0, 120, 240 degrees around the z axis, tilted up (z = 1.2); their translations
    at the same angles in the plane (z = 0); a hub target on the z axis. cos(source, hub) = 1.2 / sqrt(2.44)
    = 0.768 beats cos(source, its translation) = 1 / sqrt(2.44) = 0.640: NN sends every word to the hub.
    CSLS (k capped at the 3 source words): r_S(hub) = 0.768, r_S(t_i) = (0.640 - 0.320 - 0.320) / 3 = 0;
    2 * 0.768 - 0.768 = 0.768 < 2 * 0.640 - 0 = 1.280: every word gets its translation."""
    angles = np.deg2rad([0, 120, 240])
    src = _unit(*[(np.cos(a), np.sin(a), 1.2) for a in angles])
    tgt = _unit((0, 0, 1), *[(np.cos(a), np.sin(a), 0) for a in angles])
    return ["one", "two", "three"], src, ["hub", "un", "deux", "trois"], tgt


PAIRS = [("one", "un"), ("two", "deux"), ("three", "trois")]


def test_csls_demotes_the_hub_that_nn_returns_for_every_query():
    sw, sv, tw, tv = _hub_space()
    nn = word_translation(sw, sv, tw, tv, PAIRS, method="nn")
    csls = word_translation(sw, sv, tw, tv, PAIRS, method="csls_knn_10")
    assert nn["p@1"] == 0.0 and nn["p@5"] == 100.0  # the translation is second, behind the hub
    assert csls["p@1"] == 100.0
    assert nn["n"] == csls["n"] == 3 and nn["n_dictionary"] == 3


def _csls_reference(src, tgt, queries, k):
    """CSLS written out on the full matrices (MUSE's formula), top-10 targets of each query."""
    src = src / np.linalg.norm(src, axis=1, keepdims=True)
    tgt = tgt / np.linalg.norm(tgt, axis=1, keepdims=True)
    sims = src @ tgt.T
    r_t = np.sort(sims, axis=1)[:, -k:].mean(1)  # each source word: its k nearest targets
    r_s = np.sort(sims.T, axis=1)[:, -k:].mean(1)  # each target word: its k nearest source words
    scores = 2 * sims[queries] - r_t[queries, None] - r_s[None, :]
    return np.argsort(-scores, axis=1)[:, :10]


def test_csls_matches_the_formula_on_random_vectors_across_batches():
    rng = np.random.default_rng(0)
    sv, tv = rng.normal(size=(40, 6)).astype(np.float32), rng.normal(size=(55, 6)).astype(np.float32)
    sw, tw = [f"s{i}" for i in range(40)], [f"t{i}" for i in range(55)]
    queries = [3, 7, 11, 20, 39]
    top = _csls_reference(sv.astype(np.float64), tv.astype(np.float64), queries, 10)
    # gold = the reference's 5th target: p@1 = p@4 = 0, p@5 = p@10 = 100 only when the ranking matches
    pairs = [(sw[q], tw[top[i, 4]]) for i, q in enumerate(queries)]
    got = word_translation(sw, sv, tw, tv, pairs, method="csls_knn_10", batch=3)
    assert (got["p@1"], got["p@5"], got["p@10"]) == (0.0, 100.0, 100.0)
    pairs = [(sw[q], tw[top[i, 0]]) for i, q in enumerate(queries)]
    assert word_translation(sw, sv, tw, tv, pairs, method="csls_knn_10", batch=2)["p@1"] == 100.0


def test_any_gold_translation_counts_and_each_query_once():
    # query "cat" has gold {chat, minou}: the nearest is minou -> correct at 1; "dog" -> chien is 2nd
    sw, sv = ["cat", "dog"], _unit((1, 0, 0), (0, 1, 0))
    tw, tv = ["chat", "minou", "chien", "loup"], _unit((0.8, 0.2, 0), (1, 0.05, 0), (0.3, 1, 0.3), (0.1, 1, 0))
    pairs = [("cat", "chat"), ("cat", "minou"), ("dog", "chien")]
    got = word_translation(sw, sv, tw, tv, pairs, method="nn")
    assert got["n"] == 2 and got["n_dictionary"] == 2
    assert got["p@1"] == 50.0 and got["p@5"] == 100.0 and got["p@10"] == 100.0


def test_queries_outside_the_vocabularies_are_excluded_and_counted():
    sw, sv = ["cat", "dog", "bird"], _unit((1, 0), (0, 1), (1, 1))
    tw, tv = ["chat", "chien"], _unit((1, 0), (0, 1))
    pairs = [("cat", "chat"), ("dog", "chien"), ("dog", "toutou"),  # dog: one translation in the space
             ("bird", "oiseau"),  # in the source vocabulary, no translation in the target space
             ("fish", "poisson"), ("fish", "chat")]  # not in the source vocabulary
    got = word_translation(sw, sv, tw, tv, pairs, method="nn")
    assert got["n_dictionary"] == 4 and got["n"] == 2
    assert got["n_missing_source"] == 1 and got["n_missing_target"] == 1
    assert got["p@1"] == 100.0


def test_max_target_truncates_the_target_space():
    # the 3rd target word "chien" is the nearest of both "cat" (wrong) and "dog" (right; its gold "chien"):
    # full space: p@1 = 50; out of a 2-word space, "dog" is no query and "cat" finds "chat"
    sw, sv = ["cat", "dog"], _unit((1, 0, 0), (0, 1, 0))
    tw, tv = ["x", "chat", "chien"], _unit((-1, 0, 0), (0.6, 0, 0.8), (1, 1, 0))  # cos(cat, chien) 0.71 > 0.6
    pairs = [("cat", "chat"), ("dog", "chien")]
    full = word_translation(sw, sv, tw, tv, pairs, method="nn")
    assert full["n"] == 2 and full["n_target"] == 3 and full["p@1"] == 50.0
    cut = word_translation(sw, sv, tw, tv, pairs, method="nn", max_target=2)
    assert cut["n"] == 1 and cut["n_missing_target"] == 1 and cut["n_target"] == 2 and cut["p@1"] == 100.0


def test_vocabulary_is_lowercased_the_first_casing_wins():
    assert vocabulary_index(["The", "the", "Cat", "dog"], 10) == {"the": 0, "cat": 2, "dog": 3}
    assert vocabulary_index(["The", "the", "Cat", "dog"], 2) == {"the": 0, "cat": 2}


def test_identical_strings_baseline():
    pairs = [("paris", "paris"), ("taxi", "taxi"), ("taxi", "taxis"), ("cat", "chat"), ("radio", "radio"),
             ("unknown", "unknown")]
    # without vocabularies: paris, taxi, radio, unknown right, cat wrong
    got = identical_strings(None, None, pairs)
    assert got["p@1"] == got["p@5"] == got["p@10"] == 80.0 and got["n"] == 5
    # "radio" not in the target space: it is no query; "unknown" not in the source vocabulary
    got = identical_strings(["paris", "taxi", "cat", "radio"], ["chat", "taxi", "paris", "taxis"], pairs)
    assert got["n"] == 3 and got["n_missing_source"] == 1 and got["n_missing_target"] == 1
    assert got["p@1"] == pytest.approx(200 / 3)


def test_read_dictionary_several_translations_and_errors(tmp_path):
    path = tmp_path / "en-fr.5000-6500.txt"
    path.write_text("cat chat\ncat\tminou\n\ndog chien\n", encoding="utf-8")
    assert read_dictionary(path) == [("cat", "chat"), ("cat", "minou"), ("dog", "chien")]
    path.write_text("cat chat\ndog\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"en-fr\.5000-6500\.txt: line 2"):
        read_dictionary(path)
    path.write_text("cat chat\nice cream glace\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2"):
        read_dictionary(path)


def test_dictionary_url_uses_iso639_1():
    assert dictionary_url("eng", "fra") == "https://dl.fbaipublicfiles.com/arrival/dictionaries/en-fr.5000-6500.txt"
    assert dictionary_url("hun", "eng").endswith("/hu-en.5000-6500.txt")
    with pytest.raises(ValueError, match="xxx"):
        dictionary_url("eng", "xxx")


def test_unknown_method_is_refused():
    sw, sv, tw, tv = _hub_space()
    with pytest.raises(ValueError, match="unknown retrieval method"):
        word_translation(sw, sv, tw, tv, PAIRS, method="cosine")


class StandIn:
    """The API of laser_repro.models.bisent2vec.export.BiSent2VecEncoder that the commands use."""

    def __init__(self):
        sw, sv, tw, tv = _hub_space()
        self.languages, self.dim = ("eng", "fra"), 3
        self._words = {"eng": (sw, sv), "fra": (tw, tv)}

    @classmethod
    def load(cls, path):
        return cls()

    def word_vectors(self, lang):
        return self._words[lang]


def stand_in_module(monkeypatch, cls):
    module = types.ModuleType("laser_repro.models.bisent2vec.export")
    module.BiSent2VecEncoder = cls
    monkeypatch.setitem(sys.modules, "laser_repro.models.bisent2vec.export", module)


def test_cli_end_to_end(tmp_path, monkeypatch):
    stand_in_module(monkeypatch, StandIn)
    dictionary = tmp_path / "en-fr.txt"
    dictionary.write_text("".join(f"{s} {t}\n" for s, t in PAIRS), encoding="utf-8")
    out = tmp_path / "words.json"
    assert main(["word-translation", "--encoder", "enc.pt", "--src", "eng", "--tgt", "fra",
                 "--dictionary", str(dictionary), "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["task"] == "muse_words" and data["encoder"] == "enc.pt" and data["src"] == "eng"
    assert data["dictionary"] == str(dictionary) and set(data["results"]) == {"nn", "csls_knn_10"}
    assert data["results"]["nn"]["p@1"] == 0.0 and data["results"]["csls_knn_10"]["p@1"] == 100.0

    assert main(["word-translation", "--identical-strings", str(out), "--src", "eng", "--tgt", "fra",
                 "--dictionary", str(dictionary)]) == 0
    data = json.loads(out.read_text())
    assert data["encoder"] == "identical_strings" and list(data["results"]) == ["identical_strings"]
    assert data["results"]["identical_strings"]["p@1"] == 0.0 and data["results"]["identical_strings"]["n"] == 3

    # one job: two encoders (the model, update 0) and the baseline on the first one's vocabularies
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    assert main(["word-translation", "--encoder", "a.pt", "b.pt", "--output", *map(str, outs), "--identical-strings",
                 str(tmp_path / "same.json"), "--src", "eng", "--tgt", "fra", "--dictionary", str(dictionary)]) == 0
    assert [json.loads(o.read_text())["encoder"] for o in outs] == ["a.pt", "b.pt"]
    assert json.loads((tmp_path / "same.json").read_text())["vocabulary"] == "a.pt"

    with pytest.raises(SystemExit, match="--encoder"):
        main(["word-translation", "--src", "eng", "--tgt", "fra", "--dictionary", str(dictionary)])
    with pytest.raises(SystemExit, match="one --output per --encoder"):
        main(["word-translation", "--encoder", "a.pt", "b.pt", "--output", str(out), "--src", "eng", "--tgt", "fra",
              "--dictionary", str(dictionary)])
