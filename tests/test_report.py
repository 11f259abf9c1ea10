"""Snakemake's HTML report as docs/provenance.md documents it (issue 40, item 8): the documented command runs
as written on the session's toy run (conftest.toy_local_run) and the HTML holds every table and figure the
run registers with ``report(...)``, each with its bytes, category and caption.

The report is one self-contained HTML file: a React app whose data are JavaScript literals in
``<script id="...">`` elements (``var results = {...};``: one entry per registered file, keyed by its path,
with the file itself as a base64 ``data:`` URI; ``var categories = {...};``: category -> subcategory ->
paths). The tests read those literals. Where Debian's headless Chromium is installed (chromium-headless-shell,
~16 s and 86 MB with apt-get), one more opens the report in it and checks what the app shows for each category;
without it that test is skipped."""
from __future__ import annotations

import base64
import html as html_lib
import json
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, VENV_BIN

DOCS = REPO / "docs" / "provenance.md"

# The tables and figures of the toy run (tests/toy/config.yaml: LASER with every evaluation task and the
# ablation variants of Tables 5-7) and the category their rule gives them (report(..., category=...)).
EXPECTED = {
    "results/tables/toy/table1.csv": "Paper tables",
    "results/tables/toy/table9.csv": "Paper tables",
    "results/tables/toy/table2.csv": "Paper tables",
    "results/tables/toy/table8.csv": "Paper tables",
    "results/tables/toy/table3.csv": "Paper tables",
    "results/tables/toy/table4.csv": "Paper tables",
    "results/tables/toy/wmt.csv": "Paper tables",
    "results/tables/toy/flores_xsim.csv": "Similarity search",
    "results/tables/toy/table5.csv": "Ablations",
    "results/tables/toy/table6.csv": "Ablations",
    "results/tables/toy/table7.csv": "Ablations",
    "results/figures/toy/table5.png": "Ablations",
    "results/figures/toy/table6.png": "Ablations",
    "results/figures/toy/table7.png": "Ablations",
    "results/figures/toy/curves_base.png": "Learning curves",
    "results/figures/toy/curves_layers2.png": "Learning curves",
    "results/figures/toy/curves_nli1.png": "Learning curves",
    "results/figures/toy/curves_subset_languages.png": "Learning curves",
}
CHROMIUM = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def report_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    assert "\n## Report\n" in text, f"{DOCS}: no '## Report' section"
    return text.split("\n## Report\n", 1)[1].split("\n## ", 1)[0]


def documented_report_command() -> list[str]:
    """The one command line with ``--report`` in the bash blocks of docs/provenance.md's "Report" section."""
    blocks = re.findall(r"```bash\n(.*?)```", report_section(), flags=re.S)
    lines = [line.split(" #", 1)[0].strip() for block in blocks for line in block.splitlines() if "--report" in line]
    assert len(lines) == 1, f"{DOCS} (Report): expected one command with --report in a bash block, got {lines}"
    return shlex.split(lines[0])


def with_toy_run(argv: list[str], toy_args: list[str], report: Path) -> list[str]:
    """The documented command on the toy run: its --config values replaced by the toy run's --configfile,
    --config and --directory (ToyRun.args: the toy config, its data_root, its work directory), and the
    report path made absolute under that directory. Nothing else is added: no --cores."""
    toy = {}
    for i, arg in enumerate(toy_args):
        if arg in ("--configfile", "--config", "--directory"):
            toy[arg] = toy_args[i + 1]
    out, i = [], 0
    while i < len(argv):
        if argv[i] in ("--config", "--configfile", "--directory"):  # values of one option (until the next option)
            i += 1
            while i < len(argv) and not argv[i].startswith("-"):
                i += 1
            continue
        if argv[i] == "--report":
            out += ["--report", str(report)]
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return [*out, *(x for k, v in toy.items() for x in (k, v))]


def embedded(html: str, name: str):
    """The JSON literal of ``<script id="NAME"> var NAME = ...;`` in the report (``-`` in the id: ``_``)."""
    var = name.replace("-", "_")
    match = re.search(r'<script id="%s">\s*var %s = (.*?);\s*</script>' % (name, var), html, flags=re.S)
    assert match, f"report: no <script id={name!r}> with 'var {var} = ...;'"
    return json.loads(match.group(1))


def test_the_documented_command_is_the_runs_command_with_report():
    argv = documented_report_command()
    assert Path(argv[0]).name == "snakemake", argv
    assert argv[argv.index("--report") + 1] == "results/report.html"
    # the workflow is read only with a number of cores (the training rules' threads: workflow.cores): the
    # profile carries them, as for the run
    profile = argv[argv.index("--profile") + 1]
    assert re.search(r"^cores: \S+", (REPO / profile / "config.yaml").read_text(encoding="utf-8"), flags=re.M)


def test_every_report_command_has_cores():
    """Every Snakemake command line that writes the report (the docs, the README, dvc.yaml and its generator)
    names a profile (which sets `cores`) or --cores: a bare `snakemake --report` stops ("Workflow requires a
    total number of cores to be defined")."""
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "dvc.yaml",
             *sorted((REPO / "workflow").rglob("*.smk")), REPO / "workflow" / "Snakefile",
             REPO / "src" / "laser_repro" / "config" / "dvc_stages.py"]
    seen = 0
    for path in files:
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":  # dvc_stages.py: the command's `{snakemake}`, defined once
            text = text.replace("{snakemake}", re.search(r'^ *snakemake = "([^"]+)"', text, flags=re.M).group(1))
        for n, line in enumerate(text.splitlines(), 1):
            for command in re.split(r"&&|`", line):
                if "--report" in command and "snakemake" in command:
                    seen += 1
                    assert "--profile" in command or "--cores" in command, f"{path}:{n}: {command.strip()}"
    assert seen >= 3  # docs/provenance.md, dvc.yaml, dvc_stages.py


@dataclass
class Report:
    path: Path
    html: str
    results: dict     # path -> {"caption", "mime_type", "data_uri", ...}
    categories: dict  # category -> subcategory -> [path]


@pytest.fixture(scope="module")
def report(toy_local_run) -> Report:
    """The documented command run once on the toy run, from the repository root as a user types it
    (Snakemake finds workflow/Snakefile; the profile's path is relative), without --cores."""
    toy = toy_local_run
    assert toy.proc.returncode == 0, (toy.proc.stdout + toy.proc.stderr)[-8000:]
    path = toy.workdir / "results" / "report.html"
    argv = with_toy_run(documented_report_command(), toy.args, path)
    assert "--cores" not in argv and "-c" not in argv
    start = time.monotonic()
    proc = subprocess.run([str(Path(VENV_BIN) / "snakemake"), *argv[1:]], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"{shlex.join(argv)}\n{(proc.stdout + proc.stderr)[-6000:]}"
    print(f"report: {time.monotonic() - start:.1f} s, {path.stat().st_size / 1e6:.2f} MB")
    html = path.read_text(encoding="utf-8")
    return Report(path, html, embedded(html, "results"), embedded(html, "categories"))


@pytest.mark.slow
def test_documented_report_has_every_table(report, toy_local_run):
    workdir = toy_local_run.workdir
    in_category = {path: category for category, subcats in report.categories.items()
                   for paths in subcats.values() for path in paths}
    # every table and figure of the run is in the report: the expected ones, and any other CSV / PNG the run
    # wrote under its tables and figures (a table registered with report() later is checked too)
    patterns = ("results/tables/toy/**/*.csv", "results/figures/toy/**/*.png")
    written = {str(p.relative_to(workdir)) for pattern in patterns for p in workdir.glob(pattern)}
    missing = sorted((set(EXPECTED) | written) - set(report.results))
    assert not missing, f"not in the report: {missing}; it has {sorted(report.results)}"
    assert set(in_category) == set(report.results)
    for path, entry in report.results.items():
        match = re.fullmatch(r"data:([^;,]+)(?:;[^,]*)?;base64,(.*)", entry["data_uri"], flags=re.S)
        assert match, (path, entry["data_uri"][:80])
        assert match.group(1) == ("text/csv" if path.endswith(".csv") else "image/png"), (path, match.group(1))
        assert base64.b64decode(match.group(2)) == (workdir / path).read_bytes(), f"{path}: embedded bytes differ"
        assert in_category[path] == EXPECTED.get(path, in_category[path]), (path, in_category[path])
        if path.endswith(".csv") or in_category[path] == "Ablations":  # a caption naming the run (``toy``)
            assert ">toy<" in entry["caption"], (path, entry["caption"])
    # the landing page: workflow/report/workflow.rst
    assert "LASER (Artetxe &amp; Schwenk, TACL 2019) reproduced end to end" in embedded(report.html, "workflow-desc")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium (Debian: apt-get install chromium-headless-shell)")
def test_report_renders_every_table_in_chromium(report, tmp_path):
    """The report opened in headless Chromium: for each category and subcategory, the app's own view (its
    setView, as a click on the category does) lists every file of it, each CSV as a download of its bytes."""
    end = report.html.rindex("</body>")
    for (category, subcategory), paths in {(c, sub): paths for c, subcats in report.categories.items()
                                           for sub, paths in subcats.items()}.items():
        page = tmp_path / "report.html"
        view = json.dumps({"navbarMode": "subcategory", "category": category, "subcategory": subcategory})
        script = ('<script>window.addEventListener("load", () => setTimeout(() => app.setView(%s), 100));'
                  "</script>\n" % view)
        page.write_text(report.html[:end] + script + report.html[end:], encoding="utf-8")
        proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                               "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        dom = re.sub(r"<(script|style)\b.*?</\1>", "", proc.stdout, flags=re.S)  # what the app rendered
        shown = set(re.findall(r'<td class="[^"]*">(results/[^<]+)</td>', dom))
        expected = set(paths)
        assert shown == expected, (category, subcategory, sorted(shown), sorted(expected))
        # each CSV is a link that downloads its bytes (Snakemake's report shows a CSV as a download)
        links = {}
        for tag in re.findall(r"<a\b[^>]*>", dom):
            attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
            if attrs.get("href", "").startswith("data:"):
                links[attrs.get("download")] = html_lib.unescape(attrs["href"])
        for path in expected:
            if path.endswith(".csv"):
                assert Path(path).name in links, (category, path, sorted(links))
                assert links[Path(path).name] == report.results[path]["data_uri"], path
