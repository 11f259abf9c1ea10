"""The one base of every table written beside a paper's: the papers' values, read from one place; the
rounding, Δ and cell formats the tables share; and one writer per form -- CSV (the machine-readable lines),
Markdown (what a run shows) and LaTeX (a booktabs ``tabular``, the form pasted into a paper) -- all three
from the same content: pandas DataFrames.

Why: each paper's reporter wrote its tables by hand, with its own copy of the rounding, the number formats
and the paper-value reader, and no LaTeX. A reporter now holds its table definitions only (rows, columns,
notes; :class:`Document`), and this module turns them into files, each written atomically
(:func:`laser_repro.core.textio.atomic_output`).

The paper values: ``laser_repro/paper_values/<paper>/<file>.csv``, a folder per paper (:data:`PAPERS`),
every value with its ``source`` (the paper's table, row and column as printed).

A table's content:

* the CSV: a DataFrame of the table's lines (:func:`csv_frame`; None as an empty cell), written by
  pandas (``to_csv``: the same bytes as the csv module's writer);
* the Markdown and LaTeX: a :class:`Document`, its text (Markdown, written as it is) and its
  :class:`Grid` s, each a DataFrame of display cells (Markdown inline: ``**bold**``, ```code```) with the
  columns' alignment. The LaTeX file has one ``table`` float per grid (booktabs rules, the special
  characters escaped, ``**``/````` as ``\\textbf``/``\\texttt``), captioned with the document's caption,
  which names the run and the paper's table.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    import pandas as pd

from laser_repro.core.textio import atomic_output
from laser_repro.reporting.seeds import seed_columns

#: the papers whose values the project ships: folder of ``laser_repro/paper_values`` -> the paper
PAPERS = {
    "laser_2019": "Artetxe & Schwenk 2019 (LASER), TACL",
    "schwenk_douze_2017": "Schwenk & Douze 2017",
    "labse_2020": "Feng et al. 2020 (LaBSE)",
    "bisent2vec_2019": "Sabet et al. 2019 (Bi-Sent2Vec)",
}


def _pandas():
    """pandas, imported at first use: every `laser-repro` command imports this module (0.9 s of each job's
    start when imported here), few of them write a table."""
    import pandas

    return pandas


# ---- the papers' values ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _paper_frame(paper: str, name: str) -> pd.DataFrame:
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r} (the folders of laser_repro/paper_values: {', '.join(PAPERS)})")
    path = resources.files("laser_repro").joinpath("paper_values", paper, name)
    with path.open("r", encoding="utf-8", newline="") as f:
        # every cell a string as printed ("" where the paper prints no value): the readers convert
        return _pandas().read_csv(f, dtype=str, keep_default_na=False, na_filter=False)


def paper_frame(paper: str, name: str) -> pd.DataFrame:
    """One paper-value file of ``paper`` (a key of :data:`PAPERS`) as a DataFrame of strings."""
    return _paper_frame(paper, name).copy()


def read_paper_values(paper: str, name: str) -> list[dict[str, str]]:
    """The lines of one paper-value file, each ``{column: string}`` ("" for an empty cell)."""
    return _paper_frame(paper, name).to_dict("records")


def paper_files(paper: str) -> list[str]:
    """The names of the paper-value files of ``paper``."""
    folder = resources.files("laser_repro").joinpath("paper_values", paper)
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".csv"))


# ---- numbers ---------------------------------------------------------------------------------------------
def number(text: str | None, kind=float):
    """A paper-value cell as a number (``kind``), None where it is empty."""
    return kind(text) if text not in (None, "") else None


def round2(value: float | None) -> float | None:
    """A value rounded to 2 decimals, None for None (a seed mean keeps its sd: reporting.seeds)."""
    return None if value is None else round(value, 2)


def delta(ours: float | None, paper: float | None) -> float | None:
    """Δ = ours − paper, rounded to 2 decimals; None unless both are there."""
    return None if ours is None or paper is None else round(ours - paper, 2)


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are there, None when none is."""
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def fmt2(value, missing: str = "n/a") -> str:
    """A table cell: floats with 2 decimals, other values as they are (an integer count), None as ``missing``."""
    if value is None:
        return missing
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def fixed2(value: float | None, missing: str = "–") -> str:
    """A number with 2 decimals (integers too), None as ``missing``."""
    return missing if value is None else f"{value:.2f}"


def fmt1(value: float | None, missing: str = "n/a") -> str:
    """A value with one decimal (as the papers print most), None as ``missing``."""
    return missing if value is None else f"{value:.1f}"


# ---- the content -----------------------------------------------------------------------------------------
def csv_frame(lines: Sequence[Mapping], fields: Sequence[str]) -> pd.DataFrame:
    """The CSV lines of a table as a DataFrame with the columns ``fields`` (a key a line lacks: empty), the
    values as they are (``dtype=object``: an integer stays one, None is an empty cell)."""
    return _pandas().DataFrame([{k: line.get(k) for k in fields} for line in lines], columns=list(fields), dtype=object)


@dataclass
class Grid:
    """One table of a document: ``header`` (one label per column), ``body`` (a DataFrame of display strings,
    one row per data row, Markdown inline), ``align`` ("l" or "r" per column). ``caption``: what the grid shows
    when a document has several (appended to the document's caption in LaTeX). ``compact_rows``: the rows
    whose empty cells are one space in the Markdown (``| |``, not ``|  |``: LASER's Table 1 average)."""

    header: list[str]
    body: pd.DataFrame
    align: str
    caption: str = ""
    compact_rows: tuple[int, ...] = ()

    def __post_init__(self):
        if len(self.align) != len(self.header) or set(self.align) - {"l", "r"}:
            raise ValueError(f"Grid: align {self.align!r} for {len(self.header)} columns")
        if self.body.shape[1] != len(self.header):
            raise ValueError(f"Grid: {self.body.shape[1]} cells per row for {len(self.header)} columns")

    @classmethod
    def of(cls, header: Sequence[str], rows: Iterable[Sequence], align: str, **kw) -> "Grid":
        """A grid of rows of cells (strings; None as an empty cell)."""
        header = list(header)
        body = _pandas().DataFrame([["" if c is None else str(c) for c in row] for row in rows],
                            columns=range(len(header)), dtype=object)
        return cls(header, body, align, **kw)

    def cells(self) -> list[list[str]]:
        return self.body.values.tolist()

    def markdown(self) -> str:
        out = ["| " + " | ".join(self.header) + " |\n",
               "|" + "|".join("---:" if a == "r" else "---" for a in self.align) + "|\n"]
        for i, row in enumerate(self.cells()):
            if i in self.compact_rows:
                out.append("|" + "".join(f" {c} |" if c else " |" for c in row) + "\n")
            else:
                out.append("| " + " | ".join(row) + " |\n")
        return "".join(out)

    def latex(self, caption: str, label: str) -> str:
        lines = [r"\begin{table}[htbp]", r"\centering", rf"\caption{{{latex_text(caption)}}}",
                 rf"\label{{{label}}}", rf"\begin{{tabular}}{{{self.align}}}", r"\toprule",
                 " & ".join(latex_text(h) for h in self.header) + r" \\", r"\midrule"]
        lines += [" & ".join(latex_text(c) for c in row) + r" \\" for row in self.cells()]
        lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
        return "\n".join(lines) + "\n"


@dataclass
class Document:
    """A table file's content: Markdown text and :class:`Grid` s in order (``add``), and the LaTeX caption
    (names the run and the paper's table). ``latex_note``: what the LaTeX file says when the document has no
    grid (a table without rows in this run)."""

    caption: str
    blocks: list = field(default_factory=list)
    latex_note: str = ""

    def add(self, *blocks: "str | Grid") -> "Document":
        self.blocks.extend(blocks)
        return self

    def grids(self) -> list[Grid]:
        return [b for b in self.blocks if isinstance(b, Grid)]

    def markdown(self) -> str:
        return "".join(b.markdown() if isinstance(b, Grid) else b for b in self.blocks)

    def latex(self, label: str) -> str:
        grids = self.grids()
        head = ("% " + _one_line(self.caption) + "\n% Written by laser-repro beside the Markdown and CSV of the same "
                "table; needs \\usepackage{booktabs}.\n")
        if not grids:
            note = self.latex_note or "No table in this run (see the Markdown file beside this one)."
            return (head + "\\begin{table}[htbp]\n\\centering\n" + rf"\caption{{{latex_text(self.caption)}}}" + "\n"
                    + rf"\label{{{label}}}" + "\n" + latex_text(note) + "\n\\end{table}\n")
        parts = []
        for i, g in enumerate(grids):
            caption = self.caption + (f" — {g.caption}" if g.caption else "")
            parts.append(g.latex(caption, label if i == 0 else f"{label}-{i + 1}"))
        return head + "\n".join(parts)


def _one_line(text: str) -> str:
    return " ".join(text.split())


# ---- LaTeX -----------------------------------------------------------------------------------------------
_LATEX_CHARS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # what the tables print beyond ASCII, as pdflatex without extra packages reads it
    "→": r"$\rightarrow$", "←": r"$\leftarrow$", "↑": r"$\uparrow$", "↓": r"$\downarrow$", "↳": r"$\hookrightarrow$",
    "Δ": r"$\Delta$", "−": r"$-$", "±": r"$\pm$", "×": r"$\times$", "·": r"$\cdot$", "≥": r"$\geq$", "≤": r"$\leq$",
    "²": r"$^2$", "–": "--", "—": "---", "…": r"\dots{}",
}
_MARKUP = re.compile(r"(`[^`]*`|\*\*.+?\*\*)")


def latex_escape(text: str) -> str:
    """Plain text with LaTeX's special characters escaped (and the tables' symbols in math mode)."""
    return "".join(_LATEX_CHARS.get(ch, ch) for ch in text)


def latex_text(text: str) -> str:
    """A Markdown cell or caption as LaTeX: ```code``` as ``\\texttt``, ``**bold**`` as ``\\textbf``, the rest
    escaped (:func:`latex_escape`)."""
    out = []
    for part in _MARKUP.split(_one_line(text)):
        if part.startswith("`") and part.endswith("`") and len(part) >= 2:
            out.append(r"\texttt{" + latex_escape(part[1:-1]) + "}")
        elif part.startswith("**") and part.endswith("**") and len(part) >= 4:
            out.append(r"\textbf{" + latex_text(part[2:-2]) + "}")
        else:
            out.append(latex_escape(part.replace("\\*", "*")))
    return "".join(out)


def latex_label(path: Path | str) -> str:
    """``tab:<folder>-<stem>`` of a table file (the folder: the run or the paper), letters, digits, - and _."""
    path = Path(path)
    return "tab:" + re.sub(r"[^A-Za-z0-9_-]+", "-", f"{path.parent.name}-{path.stem}")


# ---- the files -------------------------------------------------------------------------------------------
def tex_path(md_path: Path | str) -> Path:
    """The LaTeX file beside a table's Markdown: the same name with ``.tex``."""
    return Path(md_path).with_suffix(".tex")


def write_csv(frame: pd.DataFrame, path: Path | str) -> None:
    with atomic_output(path) as f:
        frame.to_csv(f, index=False, lineterminator="\n")


def write_markdown(doc: Document, path: Path | str) -> None:
    with atomic_output(path) as f:
        f.write(doc.markdown())


def write_latex(doc: Document, path: Path | str) -> None:
    with atomic_output(path) as f:
        f.write(doc.latex(latex_label(path)))


def write_files(doc: Document, frame: pd.DataFrame, md_path: Path | str, csv_path: Path | str) -> list[Path]:
    """A table's three files: ``csv_path`` (``frame``), ``md_path`` and the LaTeX beside it (:func:`tex_path`).
    Returns their paths (Markdown, CSV, LaTeX)."""
    write_csv(frame, csv_path)
    write_markdown(doc, md_path)
    write_latex(doc, tex_path(md_path))
    return [Path(md_path), Path(csv_path), tex_path(md_path)]


# ---- a table of rows: the evaluation tables, the ablations, the comparisons ------------------------------
def write_table(md_path: Path | str, csv_path: Path | str, *, title: str, intro: str,
                columns: list[tuple[str, str]], rows: list[dict], notes: Sequence[str] = (),
                caption: str | None = None) -> None:
    """One table as CSV (every key of the rows; values over seeds as mean, sd, n: reporting.seeds), Markdown
    and LaTeX (`columns`: key, header; the first column left-aligned, the others right). ``caption``: the
    LaTeX caption (the title when None)."""
    keys = list(dict.fromkeys(k for row in rows for k in row)) or [k for k, _ in columns]
    csv_rows, keys = seed_columns(rows, keys)
    doc = Document(caption=title if caption is None else caption)
    doc.add(f"# {title}\n\n{intro}\n\n",
            Grid.of([h for _, h in columns], [[_table_cell(row, k) for k, _ in columns] for row in rows],
                    "l" + "r" * (len(columns) - 1)))
    doc.add(*(f"\n{note}\n" for note in notes))
    write_files(doc, csv_frame(csv_rows, keys), md_path, csv_path)


def _table_cell(row: dict, key: str) -> str:
    value = row.get(key)
    not_ours = ("paper", "laser_readme", "language", "name")  # published values and labels are never "missing"
    if value is None and row.get("status") == "missing" and not key.startswith(not_ours):
        return "missing"
    return fmt2(value)


# ---- the inputs of the table commands -------------------------------------------------------------------
def models_argument(value: str) -> list:
    """A table command's --models: a JSON list of model entries, inline or in a file."""
    import json

    text = value if value.lstrip().startswith("[") else Path(value).read_text(encoding="utf-8")
    specs = json.loads(text)
    if not isinstance(specs, list):
        raise ValueError("--models: expected a JSON list")
    return specs


def load_checked_json(path, check, what: str):
    """The JSON file ``path`` (None for None) after ``check(data, "<what> <path>")``; a ValueError naming the
    file when it cannot be read or the check fails (the table commands' inputs)."""
    from laser_repro.core.textio import read_json

    if path is None:
        return None
    try:
        data = read_json(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"{what} {path}: {e}") from e
    check(data, f"{what} {path}")
    return data
