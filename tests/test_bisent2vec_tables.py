"""Sabet et al. 2019 (Bi-Sent2Vec) Tables 1, 3, 4 (and 5's values): the published values and the writer
that puts ours beside them.

Every cell of ``paper_values/bisent2vec_2019/bisent2vec_2019.csv`` is compared with the paper's text
(``$LASER_REPRO_PAPERS/002_1c7d87342c69e93e.txt``, default ``../shared/papers`` beside the repository; those
tests are skipped when it is absent): each table is located by its caption line ``Table N:``, its column
names are read from its header lines (language pairs, arrows, avg.) and its rows are the lines that end with
one printed value per column."""
from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import pytest

from laser_repro.reporting import bisent2vec as b2v
from laser_repro.reporting.paper_table import read_paper_values

REPO = Path(__file__).resolve().parents[1]
PAPERS = Path(os.environ.get("LASER_REPRO_PAPERS", REPO.parent / "shared" / "papers"))
TEXT = PAPERS / "002_1c7d87342c69e93e.txt"
SOURCE = re.compile(r"Sabet et al\. 2019 \(Bi-Sent2Vec\) Table (\d), row '(.+?)', column '(.+?)'"
                    r"(: printed '[^']+'(?: \(no value\))?)?$")
CELL = re.compile(r"\d+(?:\.\d+)?%?|–")
N_ROWS = {1: 13, 3: 13, 4: 12, 5: 2}
N_COLUMNS = {1: 11, 3: 9, 4: 8, 5: 9}


# ---- the paper's values, without the text ------------------------------------------------------------------
def test_csv_has_one_line_per_printed_cell_with_its_source():
    lines = read_paper_values(b2v.PAPER_DIR, b2v.PAPER_CSV)
    assert list(lines[0]) == ["table", "row_id", "block", "system", "column", "value", "source", "unit"]
    assert len(lines) == sum(N_ROWS[t] * N_COLUMNS[t] for t in N_ROWS) == 374
    assert len({(x["table"], x["row_id"], x["column"]) for x in lines}) == len(lines)
    for table in (1, 3, 4):
        rows = b2v.paper_rows(table)
        assert len(rows) == N_ROWS[table]
        for row in rows:
            assert list(row["values"]) == b2v.column_ids(table), row["row_id"]
            assert row["row_id"].startswith(f"t{table}.")
    assert b2v.paper_row_ids(5) == ["t5.laser", "t5.bis2v"]
    for x in lines:
        m = SOURCE.match(x["source"])
        assert m and m.group(1) == x["table"] and m.group(2) == x["system"], x
        reduction = x["row_id"].endswith(".reduction")
        assert x["unit"] == ("%" if reduction else "accuracy (%)" if x["table"] == "5" else "P@1 (%)"), x
        if x["value"]:
            assert re.fullmatch(r"\d+(?:\.\d+)?", x["value"]) and 0 < float(x["value"]) < 100, x
    # the only printed '–': Table 3's reduction in error has no avg.
    assert [(x["row_id"], x["column"]) for x in lines if not x["value"]] == [("t3.reduction", "avg")]


def test_rows_blocks_and_the_values_printed_without_decimals():
    ids = {t: b2v.paper_row_ids(t) for t in (1, 3, 4)}
    for t, row_ids in ids.items():
        bis2v = [f"t{t}.bis2v.{v}.{m}" for m in ("nn", "csls") for v in ("uni", "uni_bi")]
        assert set(bis2v) <= set(row_ids), t
        assert f"t{t}.transgram" in row_ids and f"t{t}.bivec.csls" in row_ids and f"t{t}.muse" in row_ids
        blocks = [r["block"] for r in b2v.paper_rows(t)]
        first_joint = blocks.index("jointly trained")
        assert row_ids[first_joint] == f"t{t}.bivec.nn"  # the paper: VECMAP mapping-based, BIVEC joint training
        assert set(blocks[:first_joint]) == {"mapping-based"}
        assert set(blocks[first_joint:]) <= {"jointly trained", "reduction in error"}
    assert "t1.procrustes_refine" in ids[1] and "t1.umwe" in ids[1] and "t3.reduction" in ids[3]
    assert "t4.reduction" in ids[4] and "t4.umwe" not in ids[4]
    printed = {(x["row_id"], x["column"]): x["value"] for x in read_paper_values(b2v.PAPER_DIR, b2v.PAPER_CSV)}
    assert printed[("t4.transgram", "sentences.en-hu.bwd")] == "55"
    assert printed[("t4.bis2v.uni_bi.csls", "sentences.en-fi.fwd")] == "66"
    assert printed[("t3.vecmap.sup", "en-it.bwd")] == "71"
    assert printed[("t1.bis2v.uni_bi.csls", "en-fr.bwd")] == "92.4"
    assert printed[("t3.reduction", "en-es.fwd")] == "36.8"
    assert printed[("t5.laser", "avg")] == "77.3" and printed[("t5.bis2v", "en-es.fwd")] == "74.0"


def _paper(table):
    return {r["row_id"]: r["values"] for r in b2v.paper_rows(table)}


@pytest.mark.parametrize("table", [1, 3, 5])
def test_printed_averages_are_the_row_means_except_three(table):
    off = set()
    for row_id, values in _paper(table).items():
        cells = [v for c, v in values.items() if c != "avg"]
        if values["avg"] is None:
            assert row_id == "t3.reduction"
            continue
        if abs(sum(cells) / len(cells) - values["avg"]) > 0.051:
            off.add(row_id)
    assert off == {r for r in b2v.PAPER_AVG_OFF if r.startswith(f"t{table}.")}


@pytest.mark.parametrize("table, reference", [(3, "t3.bis2v.uni_bi.csls"), (4, "t4.bis2v.uni.csls")])
def test_reduction_in_error_recomputes_from_the_printed_rows(table, reference):
    """The captions: reduction in error of the reference row w.r.t. the best non-BI-SENT2VEC method. It
    recomputes to 0.1 except in three printed cells (the paper's own)."""
    paper = _paper(table)
    off = set()
    for col in b2v.column_ids(table):
        if col == "avg":
            continue
        best = max(v[col] for r, v in paper.items() if ".bis2v." not in r and not r.endswith("reduction"))
        reduction = 100 * (paper[reference][col] - best) / (100 - best)
        if abs(reduction - paper[f"t{table}.reduction"][col]) > 0.1:
            off.add(col)
    assert off == {3: {"en-es.fwd", "en-es.bwd"}, 4: {"words.en-hu.fwd"}}[table]


# ---- the paper's values, against the text -------------------------------------------------------------------
@pytest.fixture(scope="module")
def text() -> list[str]:
    if not TEXT.is_file():
        pytest.skip(f"paper text not found at {TEXT} (set LASER_REPRO_PAPERS to the folder holding it)")
    return [line.strip() for line in TEXT.read_text(encoding="utf-8").splitlines()]


def _printed_table(lines: list[str], number: int) -> dict[tuple[str, str], str]:
    """{(row label, column as printed): cell as printed} of Table ``number``."""
    captions = [i for i, line in enumerate(lines) if re.match(r"Table \d+:", line)]
    here = [i for i in captions if lines[i].startswith(f"Table {number}:")]
    assert len(here) == 1
    block = lines[max([i for i in captions if i < here[0]], default=-1) + 1:here[0]]
    pairs_line = next(line for line in block if re.fullmatch(r"(?:Method )?(?:en-[a-z]{2} ?)+", line))
    pairs = re.findall(r"en-[a-z]{2}", pairs_line)
    arrows_line = next(line for line in block if re.fullmatch(r"(?:avg\.)?[→←]( [→←])+", line))
    arrows = re.findall(r"[→←]", arrows_line)
    assert len(arrows) == 2 * len(pairs) and arrows == ["→", "←"] * len(pairs)
    if number == 4:  # "Method word retrieval sentence retrieval": the first half of the pairs, then the second
        assert any(line == "Method word retrieval sentence retrieval" for line in block)
        kinds = ["word retrieval "] * (len(pairs) // 2) + ["sentence retrieval "] * (len(pairs) // 2)
    else:
        kinds = [""] * len(pairs)
    cols = [f"{k}{p} {a}" for k, p in zip(kinds, pairs) for a in ("→", "←")]
    if arrows_line.startswith("avg."):
        cols.append("avg.")  # printed over the arrows, its values end the rows
    out = {}
    for line in block:
        tokens = line.split()
        if len(tokens) > len(cols) and all(CELL.fullmatch(t) for t in tokens[-len(cols):]) \
                and not CELL.fullmatch(tokens[-len(cols) - 1]):
            label = " ".join(tokens[:-len(cols)])
            for col, value in zip(cols, tokens[-len(cols):]):
                assert (label, col) not in out
                out[(label, col)] = value
    return out


@pytest.mark.parametrize("table", [1, 3, 4, 5])
def test_every_cell_is_the_printed_one(text, table):
    printed = _printed_table(text, table)
    assert len(printed) == N_ROWS[table] * N_COLUMNS[table]
    seen = set()
    for x in read_paper_values(b2v.PAPER_DIR, b2v.PAPER_CSV):
        if int(x["table"]) != table:
            continue
        _, label, column, note = SOURCE.match(x["source"]).groups()
        value = printed[(label, column)]
        if value == "–":
            assert x["value"] == "" and note == ": printed '–' (no value)", x
        elif value.endswith("%"):
            assert x["unit"] == "%" and x["value"] == value[:-1] and note == f": printed '{value}'", x
        else:
            assert x["value"] == value and note is None, (x, value)  # the string as printed: "66" stays "66"
        seen.add((label, column))
    assert seen == set(printed)  # and no printed cell is missing from the CSV


def test_csv_column_ids_follow_the_printed_columns(text):
    for table in (1, 3, 4, 5):
        cols = list(dict.fromkeys(c for _, c in _printed_table(text, table)))
        ids = b2v.column_ids(table) if table != 5 else b2v.column_ids(3)
        assert len(cols) == len(ids)
        for printed, col in zip(cols, ids):
            if col == "avg":
                assert printed == "avg."
                continue
            kind, _, rest = col.rpartition(".")[0].rpartition(".")
            arrow = {"fwd": "→", "bwd": "←"}[col.rsplit(".", 1)[1]]
            prefix = {"words": "word retrieval ", "sentences": "sentence retrieval ", "": ""}[kind]
            assert printed == f"{prefix}{rest} {arrow}", (printed, col)


# ---- our rows ----------------------------------------------------------------------------------------------
def _res(kind, src, tgt, nn, csls=None, n=None, candidates=None):
    count, cand = b2v.N_KEY[kind], b2v.CANDIDATES_KEY[kind]
    n = n if n is not None else (1480 if kind == "words" else 2000)
    candidates = candidates if candidates is not None else (1500 if kind == "words" else 200000)
    results = {"nn": {"p@1": nn, count: n, cand: candidates}}
    if kind == "words":
        results["nn"].update({"p@5": nn + 5, "p@10": nn + 8})
    if csls is not None:
        results["csls_knn_10"] = {"p@1": csls, count: n, cand: candidates}
    return {"task": b2v.TASKS[kind], "src": src, "tgt": tgt, "results": results}


def _ident(src, tgt, p):
    """The identical-strings baseline as `word-translation --identical-strings` writes it: one method."""
    return {"task": "muse_words", "encoder": "identical_strings", "src": src, "tgt": tgt,
            "results": {"identical_strings": {"p@1": p, "p@5": p, "p@10": p, "n": 1400, "n_dictionary": 1500}}}


def _models():
    fr_uni = {"name": "bis2v_en_fr_uni", "description": "en-fr unigrams", "pair": ["eng", "fra"], "ngrams": 1,
              "words": {"eng-fra": _res("words", "eng", "fra", 71.2, 72.5),
                        "fra-eng": _res("words", "fra", "eng", 75.0, 76.0)},
              "words_init": {"eng-fra": _res("words", "eng", "fra", 0.1, 0.2)},
              "sentences": {"eng-fra": _res("sentences", "eng", "fra", 60.0, 65.0), "fra-eng": None},
              "sentences_init": {}}
    fi_bi = {"name": "bis2v_en_fi_bi", "description": "en-fi uni+bi", "pair": ["eng", "fin"], "ngrams": 2,
             "words": {"eng-fin": _res("words", "eng", "fin", 50.0, 55.0, n=1200)},
             "sentences": {"eng-fin": _res("sentences", "eng", "fin", 40.0, 45.0),
                           "fin-eng": _res("sentences", "fin", "eng", 42.0, 47.0)}}
    return [fr_uni, fi_bi]


def _complete_models():
    """uni. models of all four Table 3 pairs, both directions: the avg. is there."""
    iso3 = {"es": "spa", "fr": "fra", "de": "deu", "it": "ita"}
    return [{"name": f"m_{x}", "pair": ["eng", x], "ngrams": 1,
             "sentences": {f"eng-{x}": _res("sentences", "eng", x, 80.0 + i, 81.0 + i),
                           f"{x}-eng": _res("sentences", x, "eng", 70.0 + i, 71.0 + i)}}
            for i, x in enumerate(iso3.values())]


def _by_row(rows):
    return {r["row"]: r for r in rows}


def test_table1_ours_beside_the_paper_init_and_missing_pairs():
    rows = b2v.table_rows(1, _models(), identical={"eng-fra": _ident("eng", "fra", 30.0)})
    assert [r["row"] for r in rows] == ["ours.uni.nn", "ours.uni.csls", "init.uni.nn", "init.uni.csls",
                                        "identical_strings"]
    r = _by_row(rows)
    assert r["ours.uni.nn"]["paper_row"] == "t1.bis2v.uni.nn" and r["ours.uni.csls"]["paper_row"] == "t1.bis2v.uni.csls"
    assert r["ours.uni.nn"]["values"]["en-fr.fwd"] == 71.2 and r["ours.uni.csls"]["values"]["en-fr.bwd"] == 76.0
    assert r["ours.uni.nn"]["paper"]["en-fr.fwd"] == 86.9 and r["ours.uni.csls"]["paper"]["avg"] == 84.2
    assert r["ours.uni.nn"]["n"]["en-fr.fwd"] == 1480 and r["ours.uni.nn"]["candidates"]["en-fr.fwd"] == 1500
    assert r["ours.uni.nn"]["models"]["en-fr.fwd"] == "bis2v_en_fr_uni"
    # en-es was not trained: empty (None), never 0, with the reason; so no average
    assert r["ours.uni.nn"]["values"]["en-es.fwd"] is None and r["ours.uni.nn"]["values"]["avg"] is None
    assert "not trained" in r["ours.uni.nn"]["missing"]["en-es.fwd"]
    assert r["init.uni.nn"]["values"]["en-fr.fwd"] == 0.1 and r["init.uni.nn"]["values"]["en-fr.bwd"] is None
    assert "not evaluated" in r["init.uni.nn"]["missing"]["en-fr.bwd"] and r["init.uni.nn"]["paper"] == {}
    assert "random init" in r["init.uni.nn"]["label"]
    ident = r["identical_strings"]
    assert ident["values"]["en-fr.fwd"] == 30.0 and ident["paper_row"] is None and ident["n"]["en-fr.fwd"] == 1400
    assert ident["label"] == "Identical strings (a word translated as itself; no learning)"
    # a baseline with NN / CSLS results gets one row per method
    both = b2v.table_rows(1, _models(), identical={"eng-fra": _res("words", "eng", "fra", 30.0, 31.0)})
    assert [r["row"] for r in both][-2:] == ["identical_strings.nn", "identical_strings.csls"]
    assert both[-1]["values"]["en-fr.fwd"] == 31.0 and both[-1]["label"].endswith(", CSLS")
    # the fi model is not in Table 1, the uni. + bi. rows are in Table 4
    assert not any("uni_bi" in row for row in r)


def test_table3_average_only_when_every_column_is_there():
    rows = _by_row(b2v.table_rows(3, _complete_models()))
    nn = rows["ours.uni.nn"]
    assert nn["values"]["avg"] == pytest.approx((80 + 81 + 82 + 83 + 70 + 71 + 72 + 73) / 8)
    assert nn["n"]["avg"] == 8 * 2000 and nn["paper"]["avg"] == 84.6
    models = _complete_models()
    models[2]["sentences"]["deu-eng"] = None
    nn = _by_row(b2v.table_rows(3, models))["ours.uni.nn"]
    assert nn["values"]["avg"] is None and nn["values"]["en-de.bwd"] is None and nn["values"]["en-de.fwd"] == 82.0


def test_table4_words_and_sentences_with_the_tfidf_baseline():
    rows = b2v.table_rows(4, _models(), tfidf={"eng-fin": _res("sentences", "eng", "fin", 20.0, 21.0)},
                          identical={"eng-fra": _res("words", "eng", "fra", 30.0)})
    r = _by_row(rows)
    assert list(r) == ["ours.uni_bi.nn", "ours.uni_bi.csls", "tfidf.nn", "tfidf.csls"]  # no fra in Table 4
    ours = r["ours.uni_bi.csls"]
    assert ours["paper_row"] == "t4.bis2v.uni_bi.csls" and ours["paper"]["sentences.en-fi.fwd"] == 66.0
    assert ours["values"]["words.en-fi.fwd"] == 55.0 and ours["n"]["words.en-fi.fwd"] == 1200
    assert ours["values"]["sentences.en-fi.bwd"] == 47.0 and ours["values"]["words.en-fi.bwd"] is None
    assert "avg" not in ours["values"]
    assert r["tfidf.csls"]["values"]["sentences.en-fi.fwd"] == 21.0
    assert r["tfidf.csls"]["values"]["words.en-fi.fwd"] is None


def test_no_rows_when_nothing_covers_the_table():
    assert b2v.table_rows(4, _models()[:1]) == []


def test_models_are_checked():
    models = _models()
    models[1]["pair"] = ["fin", "eng"]
    with pytest.raises(ValueError, match=r"bis2v_en_fi_bi: 'pair' must be \['eng', xx\]"):
        b2v.table_rows(1, models)
    models = _models()
    models.append({**models[0], "name": "again"})
    with pytest.raises(ValueError, match=r"bis2v_en_fr_uni and again: both are uni\. eng-fra"):
        b2v.table_rows(1, models)
    models = _models()
    models[0]["words"]["fra-eng"] = _res("words", "eng", "fra", 1.0)
    with pytest.raises(ValueError, match=r"bis2v_en_fr_uni 'words' 'fra-eng': results of eng-fra, expected fra-eng"):
        b2v.table_rows(1, models)
    models = _models()
    models[0]["sentences"]["eng-fra"] = _res("words", "eng", "fra", 1.0)
    with pytest.raises(ValueError, match=r"task 'muse_words', expected 'europarl'"):
        b2v.table_rows(3, models)
    models = _models()
    models[0]["words"]["eng-fra"] = _ident("eng", "fra", 1.0)  # a model's results need NN or CSLS
    with pytest.raises(ValueError, match=r"'words' 'eng-fra': 'results' has none of 'nn', 'csls_knn_10'"):
        b2v.table_rows(1, models)
    models = _models()
    models[0]["ngrams"] = 3
    with pytest.raises(ValueError, match="'ngrams' must be 1"):
        b2v.table_rows(3, models)


# ---- writer ------------------------------------------------------------------------------------------------
def test_write_table1_md_and_csv(tmp_path):
    models = _models()
    rows = b2v.table_rows(1, models, identical={"eng-fra": _ident("eng", "fra", 30.0)})
    md, csv_path = tmp_path / "t1.md", tmp_path / "t1.csv"
    assert b2v.write_table(1, rows, md, csv_path, "run-x", models) == [md, csv_path, md.with_suffix(".tex")]
    text = md.read_text(encoding="utf-8")
    assert "run `run-x`" in text
    # the paper's table as printed: all 13 rows
    assert ("| mapping-based | MUSE (Lample et al., 2018) | 81.7 | 83.3 | 82.3 | 82.1 | 74.0 | 72.2 | 44.0 | 59.1 "
            "| 78.6 | 77.9 | 73.5 |") in text
    assert "| jointly trained | BI-SENT2VEC uni. + bi. CSLS | 89.0 | 92.1 |" in text
    assert sum(line.startswith(("| mapping-based |", "| jointly trained |")) for line in text.splitlines()) == 13
    ours = next(line for line in text.splitlines() if line.startswith("| `ours.uni.nn` |"))
    assert "| `t1.bis2v.uni.nn` | – / 86.9 | – / 91.6 | 71.20 / 86.9 | 75.00 / 91.0 |" in ours
    assert ours.endswith("| – / 84.3 |")  # no avg. of ours: en-es, en-de, en-ru, en-it not trained
    init = next(line for line in text.splitlines() if line.startswith("| `init.uni.csls` |"))
    assert "| 0.20 |" in init and "/" not in init
    assert ("| `identical_strings` | Identical strings (a word translated as itself; no learning) |  "
            "| – | – | 30.00 |") in text
    counts = next(line for line in text.splitlines() if line.startswith("| `ours.uni.nn` | –"))
    assert "| 1480 (1500) | 1480 (1500) |" in counts
    assert "en-es →, en-es ←, en-de →" in text and "not trained" in text
    assert "1500 source queries" in text and "only when every column" in text
    assert "`bis2v_en_fr_uni` — en-fr unigrams" in text and "bis2v_en_fi_bi" not in text
    with open(csv_path, encoding="utf-8") as f:
        lines = list(csv.DictReader(f))
    assert list(lines[0]) == list(b2v.CSV_FIELDS)
    assert len(lines) == (13 + len(rows)) * 11
    cell = next(x for x in lines if x["row"] == "ours.uni.nn" and x["column"] == "en-fr.fwd")
    assert (cell["model"], cell["ours"], cell["paper"], cell["n"], cell["n_candidates"]) == \
        ("bis2v_en_fr_uni", "71.20", "86.90", "1480", "1500")
    assert "column 'en-fr →'" in cell["source"] and "BI-SENT2VEC uni. NN" in cell["source"]
    empty = next(x for x in lines if x["row"] == "ours.uni.nn" and x["column"] == "en-es.fwd")
    assert (empty["ours"], empty["paper"], empty["n"]) == ("", "86.90", "") and "not trained" in empty["source"]
    paper_cell = next(x for x in lines if x["row"] == "t1.vecmap.sup" and x["column"] == "en-ru.bwd")
    assert (paper_cell["ours"], paper_cell["paper"], paper_cell["n"], paper_cell["n_candidates"]) == \
        ("", "65.60", "1500", "200000")


def test_write_tables_writes_all_three_and_table3_reduction_row(tmp_path):
    paths = b2v.write_tables(_complete_models(), tmp_path, "r",
                             tfidf={"eng-spa": _res("sentences", "eng", "spa", 50.0)})
    assert [p.name for p in paths] == [f"table{n}.{ext}" for n in (1, 3, 4) for ext in ("md", "csv", "tex")]
    t3 = (tmp_path / "table3.md").read_text(encoding="utf-8")
    assert "| reduction in error | Reduction in error | 36.8% | 37.6% |" in t3 and t3.count("46.9% | – |") == 1
    ours = next(line for line in t3.splitlines() if line.startswith("| `ours.uni.csls` |"))
    assert ours.startswith("| `ours.uni.csls` | BI-SENT2VEC uni. CSLS (ours) | `t3.bis2v.uni.csls` | 81.00 / 88.5 |")
    assert ours.endswith(f"| {(81 + 82 + 83 + 84 + 71 + 72 + 73 + 74) / 8:.2f} / 86.8 |")
    assert "| `tfidf.nn` | TF-IDF (no learning), NN |  | 50.00 |" in t3
    t4 = (tmp_path / "table4.md").read_text(encoding="utf-8")
    assert "| jointly trained | TRANSGRAM | 69.7 | 81.1 | 73.1 | 80.8 | 35.4 | 40.5 | 52.1 | 55 |" in t4
    assert "No model of ours covers" in t4
    t1 = (tmp_path / "table1.md").read_text(encoding="utf-8")
    assert "No model of ours covers" not in t1  # es, fr, de, it are Table 1 pairs too (ru is not there)


# ---- command line ------------------------------------------------------------------------------------------
def _write(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _spec(tmp_path):
    fr = {"name": "bis2v_en_fr_uni", "description": "uni", "pair": ["eng", "fra"], "ngrams": 1,
          "words": {"eng-fra": _write(tmp_path / "w_ef.json", _res("words", "eng", "fra", 71.2, 72.5)),
                    "fra-eng": None},
          "words_init": {"eng-fra": _write(tmp_path / "wi_ef.json", _res("words", "eng", "fra", 0.1, 0.2))},
          "sentences": {"fra-eng": _write(tmp_path / "s_fe.json", _res("sentences", "fra", "eng", 60.0, 65.0))}}
    return [fr]


def _main(argv):
    from laser_repro.cli import main

    return main(argv)


def test_cli_end_to_end(tmp_path, capsys):
    models = tmp_path / "models.json"
    models.write_text(json.dumps(_spec(tmp_path)), encoding="utf-8")
    ident = _write(tmp_path / "ident.json", _ident("eng", "fra", 33.0))
    tfidf = _write(tmp_path / "tfidf.json", _res("sentences", "fra", "eng", 44.0))
    out = tmp_path / "out"
    assert _main(["bisent2vec-tables", "--models", str(models), "--identical-strings", f"eng-fra={ident}",
                  "--tfidf", f"fra-eng={tfidf}", "--out-dir", str(out), "--run-name", "toy"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out / f"table{t}.{e}") for t in (1, 3, 4) for e in ("md", "csv", "tex")]
    t1 = (out / "table1.md").read_text(encoding="utf-8")
    assert "| 71.20 / 86.9 | – / 91.0 |" in t1 and "| `identical_strings` |" in t1 and "| 33.00 |" in t1
    t3 = (out / "table3.md").read_text(encoding="utf-8")
    assert "| 65.00 / 87.1 |" in t3 and "| `tfidf.nn` |" in t3 and "| 44.00 |" in t3
    assert "not evaluated (no sentences result of bis2v_en_fr_uni for the direction)" in t3


@pytest.mark.parametrize("bad, pattern", [
    ("{not json", r"w_ef\.json: Expecting property name"),
    ({"task": "europarl", "src": "eng", "tgt": "fra", "results": {"nn": {"p@1": 1.0, "n_queries": 1}}},
     r"w_ef\.json: results of task 'europarl', expected 'muse_words'"),
    ({"task": "muse_words", "src": "fra", "tgt": "eng", "results": {"nn": {"p@1": 1.0, "n": 1}}},
     r"w_ef\.json: results of fra-eng, expected eng-fra"),
    ({"task": "muse_words", "src": "eng", "tgt": "fra", "results": {"nn": {"p@5": 1.0, "n": 1}}},
     r"w_ef\.json: results\['nn'\] has no numeric 'p@1'"),
    ({"task": "muse_words", "src": "eng", "tgt": "fra", "results": {"csls_knn_10": {"p@1": 1.0}}},
     r"w_ef\.json: results\['csls_knn_10'\] has no numeric 'n'"),
    ({"task": "muse_words", "src": "eng", "tgt": "fra", "results": {"knn": {"p@1": 1.0, "n": 1}}},
     r"w_ef\.json: 'results' has none of 'nn', 'csls_knn_10'"),
    ({"task": "muse_words", "src": "eng", "tgt": "fra"}, r"w_ef\.json: not retrieval results"),
])
def test_cli_names_the_malformed_file(tmp_path, bad, pattern):
    spec = _spec(tmp_path)
    path = tmp_path / "w_ef.json"
    path.write_text(bad if isinstance(bad, str) else json.dumps(bad), encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match=rf"bisent2vec-tables: results file \S*{pattern}"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--out-dir", str(out), "--run-name", "r"])
    assert not out.exists()  # nothing written


def test_cli_refuses_bad_baselines_and_model_keys(tmp_path):
    spec = _spec(tmp_path)
    out = ["--out-dir", str(tmp_path / "o"), "--run-name", "r"]
    words = _write(tmp_path / "ident.json", _res("words", "eng", "fra", 3.0))
    with pytest.raises(SystemExit, match=r"--identical-strings 'ident\.json': expected DIRECTION=PATH"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--identical-strings", "ident.json", *out])
    with pytest.raises(SystemExit, match=r"ident\.json: results of task 'muse_words', expected 'europarl'"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--tfidf", f"eng-fra={words}", *out])
    with pytest.raises(SystemExit, match=r"ident\.json: results of eng-fra, expected fra-eng"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--identical-strings", f"fra-eng={words}", *out])
    spec[0]["paper_row"] = "t1.bis2v.uni.nn"
    with pytest.raises(SystemExit, match=r"'bis2v_en_fr_uni': unknown keys \['paper_row'\]"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), *out])
    with pytest.raises(SystemExit, match=r"missing\.json"):
        _main(["bisent2vec-tables", "--models", str(tmp_path / "missing.json"), *out])
    assert not (tmp_path / "o").exists()


# ---- the pairs table: FLORES held-out xsim and Tatoeba ------------------------------------------------------
def _matrix(pairs, sentences=200):
    return {"sentences": sentences, "languages": sorted({x for p in pairs for x in p.split("-")}),
            "pairs": dict(pairs), "mean": sum(pairs.values()) / len(pairs)}


def _tatoeba(results, n=1000):
    return {"task": "tatoeba", "direction": "xx->eng", "encoder": "x",
            "results": {lang: {"error": e, "n": n} for lang, e in results.items()}}


def _pair_models():
    """fra uni.: FLORES model + init, Tatoeba model + init; fra uni. + bi.: FLORES without init, no Tatoeba;
    swh uni. (not a paper language): no similarity file, Tatoeba of the model only."""
    fr_uni = {"name": "fr_uni", "description": "en-fr unigrams", "pair": ["eng", "fra"], "ngrams": 1,
              "similarity": {"similarity": _matrix({"eng-fra": 12.5, "fra-eng": 15.0}),
                             "init": _matrix({"eng-fra": 87.5, "fra-eng": 90.0})},
              "tatoeba": _tatoeba({"fra": 20.0, "deu": 99.0}), "tatoeba_init": _tatoeba({"fra": 95.5})}
    fr_bi = {"name": "fr_bi", "pair": ["eng", "fra"], "ngrams": 2,
             "similarity": {"similarity": _matrix({"eng-fra": 10.0, "fra-eng": 11.0})}}
    sw_uni = {"name": "sw_uni", "pair": ["eng", "swh"], "ngrams": 1, "tatoeba": _tatoeba({"swh": 40.0}, n=500)}
    return [fr_uni, fr_bi, sw_uni]


TFIDF_FLORES = _matrix({"eng-fra": 30.0, "fra-eng": 31.0, "eng-deu": 50.0, "deu-eng": 51.0, "fra-deu": 60.0,
                        "deu-fra": 61.0})


def test_pairs_columns_follow_the_ngram_orders_present():
    cols = [c["column"] for c in b2v.pairs_columns(_pair_models())]
    assert cols == ["flores.uni.en-xx", "flores.uni.xx-en", "flores.uni.init.en-xx", "flores.uni.init.xx-en",
                    "flores.uni_bi.en-xx", "flores.uni_bi.xx-en", "flores.uni_bi.init.en-xx",
                    "flores.uni_bi.init.xx-en", "flores.tfidf.en-xx", "flores.tfidf.xx-en", "flores.sentences",
                    "tatoeba.uni", "tatoeba.uni.init", "tatoeba.uni_bi", "tatoeba.uni_bi.init", "tatoeba.tfidf",
                    "tatoeba.n"]
    only_bi = [c["column"] for c in b2v.pairs_columns(_pair_models()[1:2])]
    assert not any(".uni." in c or c.endswith((".uni", ".uni.init")) for c in only_bi)
    assert "flores.uni_bi.en-xx" in only_bi and "tatoeba.uni_bi.init" in only_bi
    headers = {c["column"]: c["header"] for c in b2v.pairs_columns(_pair_models())}
    assert headers["flores.uni_bi.init.xx-en"] == "uni. + bi. init xx→en" and headers["tatoeba.tfidf"] == "Tatoeba TF-IDF"


def test_pairs_rows_values_init_tfidf_and_empty_cells():
    rows = b2v.pairs_rows(_pair_models(), TFIDF_FLORES, _tatoeba({"fra": 70.0, "deu": 80.0}))
    assert [r["row"] for r in rows] == ["eng-fra", "eng-swh"]
    fr, sw = rows
    v = fr["values"]
    # en→xx is the eng-fra pair of the matrix (English queries), xx→en fra-eng
    assert (v["flores.uni.en-xx"], v["flores.uni.xx-en"]) == (12.5, 15.0)
    assert (v["flores.uni.init.en-xx"], v["flores.uni.init.xx-en"]) == (87.5, 90.0)
    assert (v["flores.uni_bi.en-xx"], v["flores.uni_bi.xx-en"]) == (10.0, 11.0)
    assert (v["flores.tfidf.en-xx"], v["flores.tfidf.xx-en"]) == (30.0, 31.0) and v["flores.sentences"] == 200
    assert (v["tatoeba.uni"], v["tatoeba.uni.init"], v["tatoeba.tfidf"], v["tatoeba.n"]) == (20.0, 95.5, 70.0, 1000)
    assert fr["models"]["flores.uni.init.en-xx"] == "fr_uni" and fr["models"]["flores.tfidf.en-xx"] == "TF-IDF"
    # empty, never 0, each with its reason
    assert v["flores.uni_bi.init.en-xx"] is None and v["tatoeba.uni_bi"] is None and v["tatoeba.uni_bi.init"] is None
    assert fr["missing"]["flores.uni_bi.init.xx-en"] == "no 'init' matrix in the similarity file of fr_bi"
    assert fr["missing"]["tatoeba.uni_bi"] == "not evaluated (no tatoeba file of fr_bi)"
    assert set(fr["missing"]) == {"flores.uni_bi.init.en-xx", "flores.uni_bi.init.xx-en", "tatoeba.uni_bi",
                                  "tatoeba.uni_bi.init"}
    s = sw["values"]
    assert all(s[c] is None for c in s if c.startswith("flores.")) and s["tatoeba.uni"] == 40.0
    assert s["tatoeba.n"] == 500 and s["tatoeba.uni.init"] is None and s["tatoeba.tfidf"] is None
    assert sw["missing"]["flores.uni.en-xx"] == "not evaluated (no similarity file of sw_uni)"
    assert sw["missing"]["flores.uni_bi.en-xx"] == "not trained (no uni. + bi. model for the pair)"
    assert sw["missing"]["flores.tfidf.xx-en"] == "no 'swh-eng' pair in the TF-IDF FLORES matrix"
    assert sw["missing"]["tatoeba.tfidf"] == "swh is not among the languages of the TF-IDF Tatoeba results"
    assert sw["missing"]["tatoeba.uni.init"] == "not evaluated (no tatoeba_init file of sw_uni)"
    assert "flores.sentences" not in sw["missing"] and s["flores.sentences"] is None
    # without baselines: their cells are empty, with the option to give them
    fr = b2v.pairs_rows(_pair_models())[0]
    assert fr["values"]["flores.tfidf.en-xx"] is None and fr["values"]["tatoeba.tfidf"] is None
    assert fr["missing"]["flores.tfidf.en-xx"] == "no TF-IDF FLORES matrix given (--tfidf-flores)"
    assert fr["missing"]["tatoeba.tfidf"] == "no TF-IDF Tatoeba results given (--tfidf-tatoeba)"
    # a model's Tatoeba results without the pair's language
    models = _pair_models()
    models[2]["tatoeba"] = _tatoeba({"fra": 1.0})
    sw = b2v.pairs_rows(models)[1]
    assert sw["missing"]["tatoeba.uni"] == "swh is not among the languages of the tatoeba results of sw_uni"


def test_pairs_rows_refuse_values_on_different_sentences():
    with pytest.raises(ValueError, match=r"eng-fra: the flores errors are on different numbers of sentences"):
        b2v.pairs_rows(_pair_models(), _matrix({"eng-fra": 30.0, "fra-eng": 31.0}, sentences=150))
    with pytest.raises(ValueError, match=r"eng-fra: the tatoeba errors are on different numbers of sentences"):
        b2v.pairs_rows(_pair_models(), tfidf_tatoeba=_tatoeba({"fra": 70.0}, n=999))


def test_pairs_inputs_are_checked():
    models = _pair_models()
    models[0]["similarity"]["init"]["pairs"]["fra-eng"] = 190.0
    with pytest.raises(ValueError, match=r"model fr_uni 'similarity' 'init': 'pairs' 'fra-eng' is not an error %"):
        b2v.pairs_rows(models)
    models = _pair_models()
    models[1]["similarity"] = _matrix({"eng-fra": 1.0})  # the matrix itself, not {"similarity": M}
    with pytest.raises(ValueError, match=r"model fr_bi 'similarity': no 'similarity' matrix"):
        b2v.pairs_rows(models)
    models = _pair_models()
    models[2]["tatoeba"]["task"] = "un"
    with pytest.raises(ValueError, match=r"model sw_uni 'tatoeba': results of task 'un', expected 'tatoeba'"):
        b2v.pairs_rows(models)
    with pytest.raises(ValueError, match=r"TF-IDF FLORES matrix: 'sentences' is not a positive integer"):
        b2v.pairs_rows(_pair_models(), {"pairs": {"eng-fra": 1.0}})
    with pytest.raises(ValueError, match=r"TF-IDF Tatoeba results: results\['fra'\] has no numeric 'error'"):
        b2v.pairs_rows(_pair_models(), tfidf_tatoeba={"task": "tatoeba", "results": {"fra": {"n": 3}}})
    models = _pair_models()
    models[2]["pair"] = ["eng", "Swahili"]
    with pytest.raises(ValueError, match=r"sw_uni: 'pair' must be \['eng', xx\] with xx an ISO 639-3 code"):
        b2v.pairs_rows(models)


def test_write_tables_pairs_only_without_word_or_sentence_results(tmp_path, caplog):
    caplog.set_level("INFO", logger="laser_repro")
    paths = b2v.write_tables(_pair_models(), tmp_path, "run-p", tfidf_flores=TFIDF_FLORES,
                             tfidf_tatoeba=_tatoeba({"fra": 70.0}))
    assert [p.name for p in paths] == ["pairs.md", "pairs.csv", "pairs.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pairs.csv", "pairs.md", "pairs.tex"]  # no table1/3/4
    assert "Tables 1, 3, 4 not written: no model has word translation or sentence retrieval results" in caplog.text
    text = (tmp_path / "pairs.md").read_text(encoding="utf-8")
    assert text.startswith("# Sabet et al. 2019 (Bi-Sent2Vec) — similarity search on the trained pairs: FLORES "
                           "held-out xsim and Tatoeba, run `run-p`")
    assert ("| pair | uni. en→xx | uni. xx→en | uni. init en→xx | uni. init xx→en | uni. + bi. en→xx | "
            "uni. + bi. xx→en | uni. + bi. init en→xx | uni. + bi. init xx→en | TF-IDF en→xx | TF-IDF xx→en | "
            "sentences | Tatoeba uni. | Tatoeba uni. init | Tatoeba uni. + bi. | Tatoeba uni. + bi. init | "
            "Tatoeba TF-IDF | Tatoeba n |") in text
    assert ("| eng-fra | 12.50 | 15.00 | 87.50 | 90.00 | 10.00 | 11.00 | – | – | 30.00 | 31.00 | 200 | 20.00 | "
            "95.50 | – | – | 70.00 | 1000 |") in text
    assert "| eng-swh | – | – | – | – | – | – | – | – | – | – | – | 40.00 | – | – | – | – | 500 |" in text
    assert "- eng-fra: uni. + bi. init en→xx, uni. + bi. init xx→en — no 'init' matrix in the similarity file of fr_bi" in text
    assert "- eng-swh: uni. en→xx, uni. xx→en, uni. init en→xx, uni. init xx→en — not evaluated (no similarity file of sw_uni)" in text
    assert "`fr_uni` — en-fr unigrams: eng-fra, uni. (ngrams 1); FLORES similarity: model and init; Tatoeba: tatoeba, tatoeba_init" in text
    assert "`sw_uni`: eng-swh, uni. (ngrams 1); FLORES similarity: none; Tatoeba: tatoeba" in text
    assert not re.search(r"\| 0(?:\.00)? \|", text)  # an empty cell is never 0
    with open(tmp_path / "pairs.csv", encoding="utf-8") as f:
        lines = list(csv.DictReader(f))
    assert list(lines[0]) == list(b2v.PAIRS_CSV_FIELDS)
    assert len(lines) == 2 * 15  # the value columns: all but the two counts
    by = {(x["row"], x["column"]): x for x in lines}
    x = by[("eng-fra", "flores.uni.init.xx-en")]
    assert (x["task"], x["system"], x["direction"], x["value"], x["n"], x["model"], x["note"]) == \
        ("flores", "init.uni", "fra-eng", "90.00", "200", "fr_uni", "")
    x = by[("eng-fra", "flores.tfidf.en-xx")]
    assert (x["system"], x["direction"], x["value"], x["model"]) == ("tfidf", "eng-fra", "30.00", "TF-IDF")
    x = by[("eng-swh", "tatoeba.uni")]
    assert (x["task"], x["system"], x["direction"], x["value"], x["n"]) == ("tatoeba", "ours.uni", "swh-eng", "40.00", "500")
    x = by[("eng-fra", "tatoeba.uni_bi.init")]
    assert (x["value"], x["n"], x["model"], x["note"]) == ("", "", "", "not evaluated (no tatoeba_init file of fr_bi)")


def test_write_tables_without_similarity_and_with_nothing(tmp_path, caplog):
    caplog.set_level("INFO", logger="laser_repro")
    paths = b2v.write_tables(_complete_models(), tmp_path, "r")
    assert [p.name for p in paths] == [f"table{n}.{ext}" for n in (1, 3, 4) for ext in ("md", "csv", "tex")]
    assert "pairs.md not written: no model has a similarity file" in caplog.text
    both = _complete_models()
    both[0]["similarity"] = {"similarity": _matrix({"eng-spa": 5.0, "spa-eng": 6.0})}
    paths = b2v.write_tables(both, tmp_path / "both", "r")
    assert [p.name for p in paths][-3:] == ["pairs.md", "pairs.csv", "pairs.tex"] and len(paths) == 12
    nothing = [{"name": "m", "pair": ["eng", "fra"], "ngrams": 1, "words": {"eng-fra": None},
                "tatoeba": _tatoeba({"fra": 3.0})}]
    with pytest.raises(ValueError, match="nothing to report"):
        b2v.write_tables(nothing, tmp_path / "none", "r")
    assert not (tmp_path / "none").exists()
    # a bad baseline is refused even when the tables it belongs to are not written
    with pytest.raises(ValueError, match=r"TF-IDF baseline 'eng-fra': results of task 'muse_words'"):
        b2v.write_tables(_pair_models(), tmp_path / "bad", "r", tfidf={"eng-fra": _res("words", "eng", "fra", 1.0)})
    assert not (tmp_path / "bad").exists()


def _pair_spec(tmp_path):
    fr = {"name": "fr_uni", "description": "uni", "pair": ["eng", "fra"], "ngrams": 1,
          "words": {"eng-fra": None}, "sentences": {},
          "similarity": _write(tmp_path / "sim_fr.json", {"similarity": _matrix({"eng-fra": 12.5, "fra-eng": 15.0}),
                                                          "init": _matrix({"eng-fra": 87.5, "fra-eng": 90.0})}),
          "tatoeba": _write(tmp_path / "tat_fr.json", _tatoeba({"fra": 20.0})), "tatoeba_init": None}
    bi = {"name": "fr_bi", "pair": ["eng", "fra"], "ngrams": 2,
          "similarity": _write(tmp_path / "sim_fr_bi.json", {"similarity": _matrix({"eng-fra": 10.0, "fra-eng": 11.0}),
                                                             "init": None}),
          "tatoeba_init": _write(tmp_path / "tat_fr_bi_init.json", _tatoeba({"fra": 97.0}))}
    return [fr, bi]


def test_cli_pairs_end_to_end(tmp_path, capsys, caplog):
    caplog.set_level("INFO", logger="laser_repro")
    models = tmp_path / "models.json"
    models.write_text(json.dumps(_pair_spec(tmp_path)), encoding="utf-8")
    flores = _write(tmp_path / "tfidf_flores.json", TFIDF_FLORES)
    tatoeba = _write(tmp_path / "tfidf_tatoeba.json", _tatoeba({"fra": 70.0, "deu": 80.0}))
    out = tmp_path / "out"
    assert _main(["bisent2vec-tables", "--models", str(models), "--tfidf-flores", flores, "--tfidf-tatoeba", tatoeba,
                  "--out-dir", str(out), "--run-name", "toy"]) == 0
    assert capsys.readouterr().out.split() == [str(out / "pairs.md"), str(out / "pairs.csv"), str(out / "pairs.tex")]
    assert not (out / "table1.md").exists() and "Tables 1, 3, 4 not written" in caplog.text
    text = (out / "pairs.md").read_text(encoding="utf-8")
    assert ("| eng-fra | 12.50 | 15.00 | 87.50 | 90.00 | 10.00 | 11.00 | – | – | 30.00 | 31.00 | 200 | 20.00 | – | "
            "– | 97.00 | 70.00 | 1000 |") in text
    assert "uni. init — not evaluated (no tatoeba_init file of fr_uni)" in text
    # with word results too: all four tables
    spec = _pair_spec(tmp_path)
    spec[0]["words"] = {"eng-fra": _write(tmp_path / "w_ef.json", _res("words", "eng", "fra", 71.2, 72.5))}
    assert _main(["bisent2vec-tables", "--models", json.dumps(spec), "--out-dir", str(out / "all"),
                  "--run-name", "toy"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(out / "all" / f"{t}.{e}") for t in ("table1", "table3", "table4", "pairs")
                       for e in ("md", "csv", "tex")]


@pytest.mark.parametrize("key, bad, pattern", [
    ("similarity", "{not json", r"similarity file \S*sim_fr\.json: Expecting property name"),
    ("similarity", {"pairs": {"eng-fra": 1.0}, "sentences": 3},
     r"similarity file \S*sim_fr\.json: no 'similarity' matrix"),
    ("similarity", {"similarity": {"pairs": {"eng-fra": "12"}, "sentences": 3}},
     r"similarity file \S*sim_fr\.json 'similarity': 'pairs' 'eng-fra' is not an error %"),
    ("similarity", {"similarity": {"pairs": {"eng-fra": 1.0}, "sentences": 3}, "init": {"pairs": {}}},
     r"similarity file \S*sim_fr\.json 'init': 'sentences' is not a positive integer"),
    ("tatoeba", {"task": "tatoeba", "direction": "eng->xx", "results": {}},
     r"tatoeba file \S*tat_fr\.json: direction 'eng->xx', expected 'xx->eng'"),
    ("tatoeba", {"task": "tatoeba", "results": {"fra": {"error": 1.0, "n": 0}}},
     r"tatoeba file \S*tat_fr\.json: results\['fra'\]\['n'\] is not a positive integer"),
])
def test_cli_pairs_names_the_malformed_file(tmp_path, key, bad, pattern):
    spec = _pair_spec(tmp_path)
    path = tmp_path / ("sim_fr.json" if key == "similarity" else "tat_fr.json")
    path.write_text(bad if isinstance(bad, str) else json.dumps(bad), encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match=rf"bisent2vec-tables: {pattern}"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--out-dir", str(out), "--run-name", "r"])
    assert not out.exists()


def test_cli_pairs_refuses_bad_baselines_and_keys(tmp_path):
    spec = _pair_spec(tmp_path)
    out = ["--out-dir", str(tmp_path / "o"), "--run-name", "r"]
    tat = _write(tmp_path / "tfidf_tat.json", _tatoeba({"fra": 70.0}))
    with pytest.raises(SystemExit, match=r"TF-IDF FLORES matrix \S*tfidf_tat\.json: not a similarity error matrix"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--tfidf-flores", tat, *out])
    flores = _write(tmp_path / "tfidf_flores.json", TFIDF_FLORES)
    with pytest.raises(SystemExit, match=r"TF-IDF Tatoeba results \S*tfidf_flores\.json: not retrieval results"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--tfidf-tatoeba", flores, *out])
    with pytest.raises(SystemExit, match=r"TF-IDF Tatoeba results \S*absent\.json: .*No such file"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), "--tfidf-tatoeba", str(tmp_path / "absent.json"),
               *out])
    spec[0]["similarity"] = {"eng-fra": spec[0]["similarity"]}
    with pytest.raises(SystemExit, match=r"'fr_uni' 'similarity': expected a path or null"):
        _main(["bisent2vec-tables", "--models", json.dumps(spec), *out])
    assert not (tmp_path / "o").exists()
