"""The README is a front page that links every page of docs/, and no link or anchor in them is broken."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[(?:[^\[\]]|\n)*?\]\(([^()\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) +(.+?) *$")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a ``[x](y)`` inside code is not a link)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def github_slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (``-`` and ``_`` kept), spaces to ``-``."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(page: Path) -> list[tuple[int, str]]:
    return [(len(m.group(1)), m.group(2)) for line in _prose(page.read_text()).splitlines()
            if (m := HEADING.match(line))]


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(_prose(page.read_text()))
            if not m.group(1).startswith(("http://", "https://", "mailto:"))]


def test_github_slug_of_headings_with_code_and_punctuation():
    assert github_slug("The GPU environment and `laser-repro doctor`") == \
        "the-gpu-environment-and-laser-repro-doctor"
    assert github_slug("Joint BPE (paper §3.1)") == "joint-bpe-paper-31"
    assert github_slug("Measured on a GPU (one NVIDIA H200, torch 2.11 + CUDA 13.0, 2026-11-26)") == \
        "measured-on-a-gpu-one-nvidia-h200-torch-211--cuda-130-2026-11-26"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in {github_slug(h) for _, h in headings(dest)}:
            broken.append(f"{target}: no heading with this anchor in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n" + "\n".join(broken)


def test_the_readme_is_a_front_page_linking_every_docs_page():
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= 200, "README.md: keep the front page to ~200 lines"
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in links(readme)}
    missing = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, f"README.md does not link these docs pages: {missing}"


def test_the_docs_index_lists_every_section():
    index = ROOT / "docs" / "README.md"
    listed = set(links(index))
    missing = [f"{page.name}#{github_slug(text)}" for page in PAGES[1:] if page != index
               for level, text in headings(page) if level in (2, 3)
               and f"{page.name}#{github_slug(text)}" not in listed]
    assert not missing, "docs/README.md: sections not listed:\n" + "\n".join(missing)
