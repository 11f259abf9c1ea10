"""Tests for laser_repro.reporting.compare: the FLORES table of models of several families."""
from __future__ import annotations

import copy
import csv
import json

import pytest

from laser_repro import cli
from laser_repro.reporting import compare

LANGS = ["fra", "spa", "cmn"]
N = 200

LASER = {
    "model": {"heldout": {
        "fra": {"en_xx": 5.5, "xx_en": 6.5, "sentences": N},
        "spa": {"en_xx": 4.0, "xx_en": 3.0, "sentences": N},
        "cmn": {"en_xx": 10.0, "xx_en": 12.5, "sentences": N},
    }},
    "init": {"heldout": {
        "fra": {"en_xx": 90.0, "xx_en": 91.0, "sentences": N},
        "spa": {"en_xx": 92.0, "xx_en": 93.0, "sentences": N},
        "cmn": {"en_xx": 99.0, "xx_en": 98.0, "sentences": N},
    }},
}

# no encoder for cmn (a fixed target of a 1:1 system): no eng-cmn / cmn-eng pairs
MULTIENC = {
    "similarity": {"sentences": N, "pairs": {"eng-fra": 7.123, "fra-eng": 8.456, "eng-spa": 2.0, "spa-eng": 20.0,
                                             "fra-spa": 1.0, "spa-fra": 1.5},
                   "mean": 6.7},
    "init": {"sentences": N, "pairs": {"eng-fra": 80.0, "fra-eng": 81.0, "eng-spa": 82.0, "spa-eng": 83.0,
                                       "fra-spa": 84.0, "spa-fra": 85.0},
             "mean": 82.5},
}

TFIDF = {"heldout": {
    "fra": {"en_xx": 30.0, "xx_en": 31.0, "sentences": N},
    "spa": {"en_xx": 32.0, "xx_en": 33.0, "sentences": N},
    "cmn": {"en_xx": 60.0, "xx_en": 61.0, "sentences": N},
}}

MODELS = {"sd": {"family": "multienc", "description": "Schwenk & Douze"},
          "base": {"family": "laser", "description": "LASER base"}}


def _rows(laser=LASER, multienc=MULTIENC, tfidf=TFIDF):
    return compare.compare_rows({"sd": ("multienc", multienc), "base": ("laser", laser)}, tfidf, LANGS)


def test_compare_rows_cells():
    rows = _rows()
    assert [r["language"] for r in rows] == LANGS
    fra, spa, cmn = rows
    assert fra["name"] == "French" and cmn["name"] == "Mandarin Chinese"
    # multienc: eng-xx is en->xx, xx-eng is xx->en (rounded to 2 decimals)
    assert fra["sd"] == (7.12, 8.46)
    assert fra["sd init"] == (80.0, 81.0)
    assert spa["sd"] == (2.0, 20.0)
    assert spa["sd init"] == (82.0, 83.0)
    assert fra["base"] == (5.5, 6.5)
    assert fra["base init"] == (90.0, 91.0)
    assert spa["base"] == (4.0, 3.0)
    assert cmn["base"] == (10.0, 12.5)
    assert fra["TF-IDF"] == (30.0, 31.0) and cmn["TF-IDF"] == (60.0, 61.0)
    # no encoder for cmn
    assert cmn["sd"] is None and cmn["sd init"] is None
    assert all(r["sentences"] == N for r in rows)


@pytest.mark.parametrize("where", ["tfidf", "multienc", "laser"])
def test_compare_rows_different_sentence_counts(where):
    laser, multienc, tfidf = copy.deepcopy(LASER), copy.deepcopy(MULTIENC), copy.deepcopy(TFIDF)
    if where == "tfidf":
        tfidf["heldout"]["spa"]["sentences"] = N - 1
        lang = "spa"
    elif where == "multienc":
        multienc["similarity"]["sentences"] = N + 5
        multienc["init"]["sentences"] = N + 5
        lang = "fra"  # the first language with multienc pairs
    else:
        laser["model"]["heldout"]["cmn"]["sentences"] = 150
        laser["init"]["heldout"]["cmn"]["sentences"] = 150
        lang = "cmn"
    with pytest.raises(ValueError) as err:
        _rows(laser, multienc, tfidf)
    assert str(err.value).startswith(f"{lang}: ")
    assert "different numbers of sentences" in str(err.value)


@pytest.mark.parametrize("system", ["laser", "multienc"])
def test_compare_rows_init_scored_on_other_sentences(system):
    """A trained model scored on other sentences than its init and the other systems: the init's
    count must not hide the model's."""
    laser, multienc = copy.deepcopy(LASER), copy.deepcopy(MULTIENC)
    if system == "laser":
        laser["model"]["heldout"]["spa"]["sentences"] = N - 10
        lang = "spa"
    else:
        multienc["similarity"]["sentences"] = N - 10
        lang = "fra"
    with pytest.raises(ValueError, match=f"^{lang}: "):
        _rows(laser, multienc)


def test_write_table(tmp_path):
    rows = _rows()
    md, csv_path = tmp_path / "t.md", tmp_path / "t.csv"
    compare.write_table(rows, MODELS, md, csv_path, run_name="cmp", heldout=(797, 997))
    text = md.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert "run `cmp`" in lines[0]
    assert "797–996" in text
    assert "- **sd** (multienc): Schwenk & Douze" in lines
    assert "- **base** (laser): LASER base" in lines
    assert text.index("- **sd**") < text.index("- **base**")
    assert "| lang | name | sd | sd init | base | base init | TF-IDF |" in lines
    table = [line for line in lines if line.startswith("| ")]
    by_lang = {line.split(" | ")[0].lstrip("| ").strip("*"): line for line in table[1:]}
    assert set(by_lang) == {"avg", *LANGS}
    assert by_lang["fra"] == "| fra | French | 7.1 / 8.5 | 80.0 / 81.0 | 5.5 / 6.5 | 90.0 / 91.0 | 30.0 / 31.0 |"
    assert by_lang["cmn"] == "| cmn | Mandarin Chinese | – | – | 10.0 / 12.5 | 99.0 / 98.0 | 60.0 / 61.0 |"
    # avg: None (–) for the multienc columns (cmn missing), the mean of the three languages otherwise
    avg = by_lang["avg"]
    assert avg.startswith("| **avg** | 3 languages | – | – | ")
    assert avg.split(" | ")[4] == "6.5 / 7.3"        # base: (5.5+4+10)/3, (6.5+3+12.5)/3 = 6.5, 7.33
    assert avg.split(" | ")[6].rstrip(" |") == "40.7 / 41.7"  # TF-IDF: (30+32+60)/3, (31+33+61)/3

    with open(csv_path, newline="", encoding="utf-8") as f:
        records = list(csv.reader(f))
    assert records[0] == ["language", "system", "en_xx", "xx_en", "sentences"]
    body = records[1:]
    columns = ["sd", "sd init", "base", "base init", "TF-IDF"]
    assert len(body) == (1 + len(LANGS)) * len(columns)
    assert [(r[0], r[1]) for r in body] == [(lang, c) for lang in ["avg", *LANGS] for c in columns]
    cells = {(r[0], r[1]): r[2:] for r in body}
    assert cells[("fra", "sd")] == ["7.12", "8.46", str(N)]
    assert cells[("spa", "base init")] == ["92.0", "93.0", str(N)]
    assert cells[("cmn", "sd")] == ["", "", str(N)]
    assert cells[("avg", "sd")] == ["", "", ""]
    assert cells[("avg", "base")] == ["6.5", "7.33", ""]
    assert cells[("avg", "sd init")] == ["", "", ""]


def test_write_table_other_order_and_full_avg(tmp_path):
    langs = ["fra", "spa"]  # both with multienc pairs: the avg row has the multienc mean
    rows = compare.compare_rows({"base": ("laser", LASER), "sd": ("multienc", MULTIENC)}, TFIDF, langs)
    models = {"base": MODELS["base"], "sd": MODELS["sd"]}
    md, csv_path = tmp_path / "t.md", tmp_path / "t.csv"
    compare.write_table(rows, models, md, csv_path, run_name="r", heldout=(0, 10))
    lines = md.read_text(encoding="utf-8").splitlines()
    assert "| lang | name | base | base init | sd | sd init | TF-IDF |" in lines
    avg = next(line for line in lines if line.startswith("| **avg**"))
    assert avg.split(" | ")[4] == "4.6 / 14.2"   # sd: (7.12+2)/2 = 4.56, (8.46+20)/2 = 14.23
    with open(csv_path, newline="", encoding="utf-8") as f:
        cells = {(r[0], r[1]): r[2:] for r in list(csv.reader(f))[1:]}
    assert cells[("avg", "sd")] == ["4.56", "14.23", ""]
    assert cells[("avg", "sd init")] == ["81.0", "82.0", ""]


def _cli_files(tmp_path):
    files = {}
    for name, data in (("laser", LASER), ("multienc", MULTIENC), ("tfidf", TFIDF)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(data), encoding="utf-8")
    return files


def _cli_args(tmp_path, files, models):
    return ["compare-flores", "--laser", f"base={files['laser']}", "--similarity", f"sd={files['multienc']}",
            "--models", json.dumps(models), "--tfidf", str(files["tfidf"]), "--langs", *LANGS,
            "--heldout", "797", "997", "--run-name", "cmp", "--md", str(tmp_path / "out.md"),
            "--csv", str(tmp_path / "out.csv")]


def test_cmd_compare(tmp_path):
    files = _cli_files(tmp_path)
    models = [{"name": "sd", "family": "multienc", "description": "Schwenk & Douze"},
              {"name": "base", "family": "laser", "description": "LASER base"}]
    assert cli.main(_cli_args(tmp_path, files, models)) == 0
    lines = (tmp_path / "out.md").read_text(encoding="utf-8").splitlines()
    assert "| lang | name | sd | sd init | base | base init | TF-IDF |" in lines
    assert "| fra | French | 7.1 / 8.5 | 80.0 / 81.0 | 5.5 / 6.5 | 90.0 / 91.0 | 30.0 / 31.0 |" in lines
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        body = list(csv.reader(f))[1:]
    assert len(body) == 4 * 5
    assert body[0][:2] == ["avg", "sd"]


@pytest.mark.parametrize("names", [["sd", "other"], ["sd"], ["sd", "base", "extra"]])
def test_cmd_compare_mismatched_names(tmp_path, names):
    files = _cli_files(tmp_path)
    family = {"sd": "multienc"}
    models = [{"name": n, "family": family.get(n, "laser"), "description": n} for n in names]
    with pytest.raises(SystemExit) as err:
        cli.main(_cli_args(tmp_path, files, models))
    assert "compare-flores" in str(err.value.code)
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "out.csv").exists()


def test_cmd_compare_bad_named_argument(tmp_path):
    files = _cli_files(tmp_path)
    args = _cli_args(tmp_path, files, [{"name": "sd", "family": "multienc"}, {"name": "base", "family": "laser"}])
    args[args.index("--laser") + 1] = str(files["laser"])  # no NAME=
    with pytest.raises(SystemExit) as err:
        cli.main(args)
    assert "--laser" in str(err.value.code) and "NAME=JSON" in str(err.value.code)


def test_per_pair_models_make_one_column():
    """Bi-Sent2Vec: one model per en-xx pair, shown as one column (as its paper reports them)."""
    import pytest

    from laser_repro.reporting.compare import merge_matrices

    fr = {"similarity": {"pairs": {"eng-fra": 50.0, "fra-eng": 48.0}, "sentences": 200},
          "init": {"pairs": {"eng-fra": 99.0, "fra-eng": 99.5}, "sentences": 200}}
    ru = {"similarity": {"pairs": {"eng-rus": 70.0, "rus-eng": 68.0}, "sentences": 200},
          "init": {"pairs": {"eng-rus": 100.0, "rus-eng": 99.0}, "sentences": 200}}
    merged = merge_matrices([fr, ru], ["fr.json", "ru.json"])
    assert merged["similarity"]["pairs"] == {"eng-fra": 50.0, "fra-eng": 48.0, "eng-rus": 70.0, "rus-eng": 68.0}
    assert merged["init"]["sentences"] == 200
    with pytest.raises(SystemExit, match="scores \\['eng-fra', 'fra-eng'\\] again"):
        merge_matrices([fr, fr], ["a.json", "b.json"])
    with pytest.raises(SystemExit, match="different numbers of sentences"):
        merge_matrices([fr, {**ru, "similarity": {**ru["similarity"], "sentences": 100}}], ["fr.json", "ru.json"])
