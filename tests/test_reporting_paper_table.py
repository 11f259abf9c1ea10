"""The paper-table base (laser_repro.reporting.paper_table): the papers' values in one place, rounding, Δ,
missing values, the CSV and Markdown writers, and the LaTeX beside every table (booktabs, escaped, one row per
data row); and the bytes of a few tables from fixed inputs, pinned: the Markdown and CSV every paper's
reporter wrote before it moved onto the base (hashes taken from the code before the move)."""
from __future__ import annotations

import csv
import hashlib
import io
import re
from importlib import resources
from itertools import permutations
from pathlib import Path

import pandas as pd
import pytest

from laser_repro.reporting import bisent2vec, compare, labse, paper_table as pt, multienc, tables
from laser_repro.reporting.seeds import SeedMean

SRC = Path(__file__).resolve().parents[1] / "src" / "laser_repro"


# ---- the papers' values ------------------------------------------------------------------------------------
def test_paper_values_one_folder_per_paper_and_nowhere_else():
    folders = sorted(p.name for p in (SRC / "paper_values").iterdir() if p.is_dir())
    assert folders == sorted(pt.PAPERS) == ["bisent2vec_2019", "labse_2020", "laser_2019", "schwenk_douze_2017"]
    assert pt.paper_files("laser_2019") == ["paper_table1.csv", "paper_table2_xnli.csv", "paper_table3_mldoc.csv",
                                            "paper_table4_bucc.csv", "paper_table8_xnli_cross.csv",
                                            "paper_table9_tatoeba_unseen.csv", "paper_tables5_7_ablations.csv"]
    for paper, module in (("schwenk_douze_2017", multienc), ("labse_2020", labse), ("bisent2vec_2019", bisent2vec)):
        assert pt.paper_files(paper) == [module.PAPER_CSV] and module.PAPER_DIR == paper
    # the old places hold none any more (reporting/paper_values, data/paper_table*.csv)
    assert not (SRC / "reporting" / "paper_values").exists()
    assert not [p.name for p in (SRC / "data").glob("paper_table*.csv")]


@pytest.mark.parametrize("paper", sorted(pt.PAPERS))
def test_every_value_keeps_its_source_and_reads_as_the_csv_module_does(paper):
    for name in pt.paper_files(paper):
        text = resources.files("laser_repro").joinpath("paper_values", paper, name).read_text(encoding="utf-8")
        assert pt.read_paper_values(paper, name) == list(csv.DictReader(io.StringIO(text))), name
        frame = pt.paper_frame(paper, name)
        assert isinstance(frame, pd.DataFrame) and len(frame) and "source" in frame.columns
        assert all(isinstance(v, str) for v in frame.to_numpy().ravel())  # as printed, "" for no value
        assert (frame["source"] != "").all(), name
        frame.loc[0, "source"] = "changed"  # a copy: the cached values stay as read
        assert pt.paper_frame(paper, name).loc[0, "source"] != "changed"


def test_unknown_paper_is_an_error():
    with pytest.raises(ValueError, match="unknown paper 'nope'"):
        pt.read_paper_values("nope", "x.csv")


# ---- numbers ----------------------------------------------------------------------------------------------
def test_rounding_delta_and_missing_values():
    assert pt.round2(12.3456) == 12.35 and pt.round2(None) is None and pt.round2(3) == 3
    assert pt.delta(12.3456, 10.0) == 2.35 and pt.delta(None, 1.0) is None and pt.delta(1.0, None) is None
    assert pt.mean([1.0, None, 2.0]) == 1.5 and pt.mean([None]) is None and pt.mean([]) is None
    assert pt.number("") is None and pt.number(None) is None and pt.number("8700000", int) == 8700000
    # cells: floats with 2 decimals, counts as they are, a missing value as the table's mark
    assert (pt.fmt2(1.5), pt.fmt2(1000), pt.fmt2(None), pt.fmt2(None, missing="–")) == ("1.50", "1000", "n/a", "–")
    assert (pt.fixed2(100), pt.fixed2(None), pt.fmt1(73.95), pt.fmt1(None, "–")) == ("100.00", "–", "74.0", "–")
    # a value over seeds keeps its spread through rounding and prints mean ± sd
    rounded = pt.round2(SeedMean(1.23456, 0.5678, 3))
    assert isinstance(rounded, SeedMean) and (float(rounded), rounded.sd) == (1.23, 0.57)
    assert pt.fmt2(rounded) == "1.23 ± 0.57 (n=3)"


def test_csv_is_the_csv_modules_bytes(tmp_path):
    lines = [{"a": 1, "b": None, "c": "x,y", "d": 0.1}, {"a": 2.5, "b": True, "c": 'q"', "d": SeedMean(1.5, 0.1, 2)},
             {"a": ""}]
    pt.write_csv(pt.csv_frame(lines, ["a", "b", "c", "d"]), tmp_path / "t.csv")
    expected = io.StringIO()
    writer = csv.DictWriter(expected, fieldnames=["a", "b", "c", "d"], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: ("" if line.get(k) is None else line.get(k)) for k in "abcd"} for line in lines)
    assert (tmp_path / "t.csv").read_text(encoding="utf-8") == expected.getvalue()
    assert expected.getvalue().splitlines()[1] == '1,,"x,y",0.1'  # an integer stays one, None is empty


# ---- Markdown and LaTeX -----------------------------------------------------------------------------------
def test_latex_escapes_and_converts_markdown():
    assert pt.latex_escape("a_b 50% & c #1 $x {y} ~^\\") == (
        r"a\_b 50\% \& c \#1 \$x \{y\} \textasciitilde{}\textasciicircum{}\textbackslash{}")
    assert pt.latex_text("**avg** of `bilstm_all`: en→xx − Δ ± 1") == (
        r"\textbf{avg} of \texttt{bilstm\_all}: en$\rightarrow$xx $-$ $\Delta$ $\pm$ 1")
    assert pt.latex_text("**`t2.custom_ams`**") == r"\textbf{\texttt{t2.custom\_ams}}"
    assert pt.latex_label("results/tables/toy run/table1.tex") == "tab:toy-run-table1"


def _tabulars(tex: str) -> list[tuple[str, list[str], list[str]]]:
    """(column spec, header cells, data rows) of every tabular of a LaTeX file, checking the booktabs frame."""
    out = []
    for m in re.finditer(r"\\begin\{tabular\}\{([lr]+)\}\n\\toprule\n(.*?) \\\\\n\\midrule\n(.*?)\\bottomrule\n"
                         r"\\end\{tabular\}", tex, re.S):
        rows = [r for r in m.group(3).split("\n") if r]
        assert all(r.endswith(r" \\") for r in rows), rows
        out.append((m.group(1), m.group(2).split(" & "), rows))
    assert len(out) == tex.count(r"\begin{tabular}") == tex.count(r"\end{table}")
    return out


def _markdown_tables(md: str) -> list[list[str]]:
    """The data rows of every pipe table of a Markdown file."""
    tables_, current = [], None
    for line in md.split("\n"):
        if line.startswith("|"):
            if current is None:
                current = []
                tables_.append(current)
            current.append(line)
        else:
            current = None
    return [t[2:] for t in tables_]


def test_grid_writes_markdown_and_a_booktabs_tabular(tmp_path):
    doc = pt.Document(caption="Table 9 — 50% of `a_b`, run `toy`; paper: TACL 2019 Table 9")
    doc.add("# Title\n\nintro\n\n",
            pt.Grid.of(["lang", "err. %", "Δ"], [["deu", "1.00", None], ["**avg**", "", "0.5"]], "lrr", compact_rows=(1,)),
            "\nnote & more\n")
    paths = pt.write_files(doc, pt.csv_frame([{"lang": "deu"}], ["lang"]), tmp_path / "t9.md", tmp_path / "t9.csv")
    assert paths == [tmp_path / "t9.md", tmp_path / "t9.csv", tmp_path / "t9.tex"]
    assert (tmp_path / "t9.md").read_text(encoding="utf-8") == (
        "# Title\n\nintro\n\n| lang | err. % | Δ |\n|---|---:|---:|\n| deu | 1.00 |  |\n| **avg** | | 0.5 |\n\nnote & more\n")
    tex = (tmp_path / "t9.tex").read_text(encoding="utf-8")
    [(spec, header, rows)] = _tabulars(tex)
    assert spec == "lrr" and header == ["lang", r"err. \%", r"$\Delta$"]
    assert rows == [r"deu & 1.00 &  \\", r"\textbf{avg} &  & 0.5 \\"]
    assert r"\caption{Table 9 --- 50\% of \texttt{a\_b}, run \texttt{toy}; paper: TACL 2019 Table 9}" in tex
    assert r"\label{tab:" in tex and "needs \\usepackage{booktabs}" in tex
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically: no temporary file left
    with pytest.raises(ValueError, match="align"):
        pt.Grid.of(["a", "b"], [["1", "2"]], "l")


def test_a_document_without_a_grid_still_has_its_latex(tmp_path):
    doc = pt.Document(caption="Table 9, run `r`", latex_note="No language without training data.")
    doc.add("# Table 9\n\nNo language.\n")
    pt.write_files(doc, pt.csv_frame([], ["language"]), tmp_path / "t.md", tmp_path / "t.csv")
    tex = (tmp_path / "t.tex").read_text(encoding="utf-8")
    assert r"\caption{Table 9, run \texttt{r}}" in tex and "No language without training data." in tex
    assert r"\begin{tabular}" not in tex and (tmp_path / "t.csv").read_text() == "language\n"


# ---- the tables of the papers' reporters, from fixed inputs -------------------------------------------------
LANGS6 = ("eng", "fra", "spa", "rus", "ara", "cmn")


def _matrix(scale, offset=0.0, sentences=200):
    pairs = {f"{p}-{q}": round(offset + scale * (i + 1) / 30, 4) for i, (p, q) in enumerate(permutations(LANGS6, 2))}
    return {"pairs": pairs, "sentences": sentences}


def _wmt(shift):
    return {"test_set": "newstest2013", "sentences": 3000, "average_error": 1.2345 + shift,
            "pairs": [{"src": "eng", "trg": "spa", "error": 1.0 + shift, "errors": 30},
                      {"src": "spa", "trg": "eng", "error": 1.469 + shift, "errors": 44}]}


def _retrieval(task, errors):
    return {"task": task, "direction": "xx->eng", "results": {k: {"error": v, "n": 1000} for k, v in errors.items()}}


def _write_fixed_tables(out: Path) -> None:
    results = {"deu": {"language": "deu", "en_xx_error": 12.345, "xx_en_error": 10.0, "test_sentences": 1000,
                       "tfidf": {"en_xx_error": 30.0, "xx_en_error": 31.5},
                       "init": {"en_xx_error": 99.0, "xx_en_error": 98.25}},
               "fra": {"language": "fra", "en_xx_error": 5.5, "xx_en_error": 6.125, "test_sentences": 1000,
                       "tfidf": {"en_xx_error": 20.0, "xx_en_error": 21.0},
                       "init": {"en_xx_error": 97.0, "xx_en_error": 96.5}}}
    tables.write_tatoeba_table(tables.table1_rows(results, {"deu": 1_200_000, "fra": 15_000}), out / "table1.md",
                               out / "table1.csv", run_name="pin", unseen=False)
    tables.write_wmt_table(out / "wmt.md", out / "wmt.csv", run_name="pin", languages_=["eng", "spa"],
                           scores=_wmt(0.0), missing=None, init=_wmt(90.0), tfidf=_wmt(30.0),
                           paper=(0.54, "TACL 2019 Table 7"))
    rows = [{"language": "fra", "name": "French", "m1": (10.0, 12.5), "m1 init": (90.0, 91.0), "m2": None,
             "m2 init": None, "TF-IDF": (30.0, 31.0), "sentences": 200},
            {"language": "rus", "name": "Russian", "m1": (20.25, 22.5), "m1 init": (95.0, 96.0), "m2": (50.0, 51.0),
             "m2 init": (99.0, 99.5), "TF-IDF": (60.0, 61.0), "sentences": 200}]
    compare.write_table(rows, {"m1": {"family": "laser", "description": "LASER, 1 layer"},
                               "m2": {"family": "multienc", "description": "BiLSTM max-pool, efsra_z"}},
                        out / "compare_flores.md", out / "compare_flores.csv", run_name="pin", heldout=(340, 400))
    sd_results = [{"name": "bilstm_all", "description": "BiLSTM 1x64 max-pool, efsraz-all",
                   "paper_rows": ["t1.bilstm1x512.efsrz-all", "t4.*"], "similarity": _matrix(40.0),
                   "init": _matrix(5.0, 90.0)},
                  {"name": "lstm_1to1", "description": "LSTM last state, efsra-z", "paper_rows": ["t2.lstm3x512.efsra-z"],
                   "similarity": _matrix(30.0, 20.0), "init": None}]
    multienc.write_tables(sd_results, _matrix(20.0, 10.0), out / "schwenk_douze_2017", run_name="pin")
    models = [{"name": "labse_small", "description": "dual encoder + AMS, customized vocab", "paper_row": "t2.custom.ams",
               "tatoeba": _retrieval("tatoeba", {"fra": 12.5, "deu": 20.0, "swh": 70.0}),
               "tatoeba_init": _retrieval("tatoeba", {"fra": 99.0, "deu": 98.0, "swh": 99.9}),
               "un": _retrieval("un", {"spa": 40.0, "fra": 45.0, "rus": 60.0, "cmn": 65.5}), "un_init": None}]
    labse.write_table2(labse.table2_rows(models, _retrieval("tatoeba", {"fra": 30.0, "deu": 35.0, "swh": 50.0})),
                       out / "labse_2020" / "table2.md", out / "labse_2020" / "table2.csv", "pin")


#: sha256 of each file as the reporters wrote it before they moved onto the base (the same inputs)
PINNED = {
    "compare_flores.csv": "8af54956eb2378e082e479395b04e3a4859285134a70c324815cf3dd190a58f2",
    "compare_flores.md": "8b302c16997822bfca54880cdaf0fb84456f1221e834a83e99a8679ee3c7490d",
    "labse_2020/table2.csv": "896a77f07c5965ae59cd5ed6469a818c008c66b8892801abedce0435454e9d98",
    # the one change: the paper values' new place in its note (paper_values/labse_2020/labse_2020.csv); with the
    # old path put back the file's sha256 is the earlier 58f4107a...
    "labse_2020/table2.md": "d8e77c554ea1be7b61284f8e470ef530cacf5642465c139bc73d78a89a8a5c5c",
    "schwenk_douze_2017/table1.csv": "4c7dc06a78324384214c55e957abb9fe752f792e971a19f447505eb0109222ba",
    "schwenk_douze_2017/table1.md": "8d8419f52bb4e329a38aee0c0ae61d7e891a93deaeb62b32ab5631898ea71feb",
    "schwenk_douze_2017/table2.csv": "b6fb461938d40994e310c736f77b5ca19f2ea83aaf557d8ac3c7e309be149377",
    "schwenk_douze_2017/table2.md": "721442192ed28d69646357df71bf2bc689e385f9ce10eaa830c28a7c97f18912",
    "schwenk_douze_2017/table3.csv": "ee6e92d9b05c62508d75c47111193c76addd328995512ce25e5e956ae1f058c5",
    "schwenk_douze_2017/table3.md": "c88c309067d0fa3094b47b73d735cd1cd28f99a905bb1525fee58057bbc4ac26",
    "schwenk_douze_2017/table4.csv": "40bfe6399fae9d6aa9eba797ff9514157ac390f14ab96fbc4a2db7d6e6d31d1a",
    "schwenk_douze_2017/table4.md": "1b46296c38f1ecdeb04ac79a36f82a129f69888a7c957dddcb7d2d009be095d4",
    "table1.csv": "0220ea2d079addf4253117efb6b1ba49aa49bf14f23e067672fd29b5daf21b55",
    "table1.md": "8ceed2bb9c0227044143db6157dc4e162a29f814a7fa723f6944edea7d2d6766",
    "wmt.csv": "51b3cbc2751625d351f3b628bdb239407f74261a91303979a7e8b179d99fa4f9",
    "wmt.md": "10df34fc15db1f72a3f70ff6b9bc7c0c6013d4e3fc29c100d7bd3af20f6edbb1",
}

TABLE1_MD = (
    "# Table 1 — Tatoeba similarity error (%), languages with training data, run `pin`\n\nError = share of sentences "
    "whose nearest neighbour (cosine) in the other language is not its translation; en→xx queries with English. "
    "Baselines on the same sentences: TF-IDF = character 1–4-gram TF-IDF cosine of the raw sentences (no learning), "
    "init = the same encoder at update 0 (`en→xx / xx→en`). Paper: Artetxe & Schwenk (2019), TACL, Tables 1 and 9 "
    "(93-language model; the paper column names the table a value comes from, since a language unseen here may have "
    "been a training language of the paper). Δ = ours − paper.\n\n"
    "| lang | name | train sent. | en→xx err. | xx→en err. | TF-IDF | init | test sent. | paper train | paper en→xx "
    "| paper xx→en | paper test | paper table (code) | Δ en→xx | Δ xx→en |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n"
    "| deu | German | 1.2M | 12.35 | 10.00 | 30.0 / 31.5 | 99.0 / 98.2 | 1000 | 8.7M | 0.90 | 1.00 | 1000 | 1 (de) "
    "| 11.45 | 9.00 |\n"
    "| fra | French | 15k | 5.50 | 6.12 | 20.0 / 21.0 | 97.0 / 96.5 | 1000 | 8.8M | 4.40 | 4.30 | 1000 | 1 (fr) "
    "| 1.10 | 1.83 |\n"
    "| **avg** | 2 languages | | 8.93 | 8.06 | 25.0 / 26.2 | 98.0 / 97.4 | | | 2.65 | 2.65 | | | | |\n")
TABLE1_CSV = (
    "language,paper_code,name,train_sentences,en_xx_error,xx_en_error,test_sentences,paper_train_sentences,"
    "paper_en_xx_error,paper_xx_en_error,paper_test_sentences,paper_table,delta_en_xx_error,delta_xx_en_error,"
    "tfidf_en_xx_error,tfidf_xx_en_error,init_en_xx_error,init_xx_en_error\n"
    "deu,de,German,1200000,12.35,10.0,1000,8700000,0.9,1.0,1000,1,11.45,9.0,30.0,31.5,99.0,98.25\n"
    "fra,fr,French,15000,5.5,6.12,1000,8800000,4.4,4.3,1000,1,1.1,1.83,20.0,21.0,97.0,96.5\n")


@pytest.fixture(scope="module")
def fixed_tables(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fixed")
    _write_fixed_tables(out)
    return out


def test_the_tables_bytes_are_pinned(fixed_tables):
    assert (fixed_tables / "table1.md").read_text(encoding="utf-8") == TABLE1_MD
    assert (fixed_tables / "table1.csv").read_text(encoding="utf-8") == TABLE1_CSV
    written = sorted(str(p.relative_to(fixed_tables)) for p in fixed_tables.rglob("*") if p.suffix in (".md", ".csv"))
    assert written == sorted(PINNED)
    changed = [name for name, digest in PINNED.items()
               if hashlib.sha256((fixed_tables / name).read_bytes()).hexdigest() != digest]
    assert not changed, f"the bytes of {changed} changed"


def test_every_table_has_its_latex_with_one_row_per_markdown_row(fixed_tables):
    for md in sorted(fixed_tables.rglob("*.md")):
        tex = md.with_suffix(".tex").read_text(encoding="utf-8")
        found = _tabulars(tex)
        markdown = _markdown_tables(md.read_text(encoding="utf-8"))
        assert [len(rows) for _, _, rows in found] == [len(rows) for rows in markdown], md.name
        for (spec, header, rows), md_rows in zip(found, markdown):
            assert len(spec) == len(header) and all(r.count(" & ") == len(spec) - 1 for r in rows), md.name
        caption = re.search(r"\\caption\{(.*)\}", tex).group(1)
        assert r"run \texttt{pin}" in caption, (md.name, caption)
        assert "Table" in caption or "not a table of a paper" in caption, (md.name, caption)
    # the caption names the paper's table
    assert "paper: Artetxe \\& Schwenk 2019 (TACL) Tables 1 and 9" in (fixed_tables / "table1.tex").read_text()
    assert "Schwenk \\& Douze 2017, Table 4" in (fixed_tables / "schwenk_douze_2017" / "table4.tex").read_text()
    # underscores of a model's name escaped inside \texttt
    assert r"\texttt{bilstm\_all}" in (fixed_tables / "schwenk_douze_2017" / "table1.tex").read_text()
