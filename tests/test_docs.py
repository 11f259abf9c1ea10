"""The README is a front page that links every page of docs/, and no link or anchor in them is broken;
config/README.md is one screen and every config key it names exists in the schema."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONFIG_README = ROOT / "config" / "README.md"
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
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


@pytest.mark.parametrize("page", [*PAGES, CONFIG_README], ids=lambda p: p.relative_to(ROOT).as_posix())
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


# ---- config/README.md: what to set, in keys the schema has ----------------------------------------------

# A span in backticks that reads as a config key: `data_root`, `models.<name>.train.lr`, `run_name=x`.
CONFIG_KEY = re.compile(r"^([a-z][a-z0-9_]*(?:\.(?:<[a-z_]+>|[a-z0-9_]+))*)(?:=\S*)?$")
FILE_SUFFIXES = {"yaml", "yml", "md", "py", "json", "csv", "tsv", "txt", "smk"}


def config_keys(text: str) -> list[str]:
    """Every backticked span of the prose that reads as a config key (file names and commands do not)."""
    spans = re.findall(r"`([^`\n]+)`", _prose(text))
    keys = [m.group(1) for s in spans if (m := CONFIG_KEY.match(s))]
    return [k for k in keys if "." not in k or k.rsplit(".", 1)[-1] not in FILE_SUFFIXES]


def _resolve(node: dict, root: dict) -> dict:
    """The node a `$ref` (`#/$defs/...`) points to, or the node itself."""
    while "$ref" in node:
        target = root
        for part in node["$ref"].lstrip("#").strip("/").split("/"):
            target = target[part]
        node = target
    return node


def schema_has(path: list[str], node: dict, root: dict) -> bool:
    """Whether the key path exists under this schema node: a named property, or any name (`<name>`, `base`)
    where the node takes names of its own (additionalProperties); through $ref, oneOf / anyOf / allOf and
    the items of a list."""
    if not path:
        return True
    node = _resolve(node, root)
    branches = [node] + [b for k in ("oneOf", "anyOf", "allOf") for b in node.get(k, [])]
    for branch in branches:
        branch = _resolve(branch, root)
        if branch is not node and schema_has(path, branch, root):
            return True
        head, rest = path[0], path[1:]
        props = branch.get("properties", {})
        if head in props and schema_has(rest, props[head], root):
            return True
        extra = branch.get("additionalProperties")
        if head not in props and isinstance(extra, dict) and schema_has(rest, extra, root):
            return True
        if isinstance(branch.get("items"), dict) and schema_has(path, branch["items"], root):
            return True
    return False


def test_schema_has_follows_refs_families_and_names():
    root = yaml.safe_load(SCHEMA.read_text())
    for key in ("data_root", "models.<name>.family", "models.base.train.lr", "models.<name>.ablations.depth",
                "models.<name>.pretrain.gpus", "bitext_data.<name>.bpe.merges", "evaluation.tatoeba.languages",
                "corpora.download", "evaluation.xnli.classifier.grid.lr"):
        assert schema_has(key.split("."), root, root), key
    for key in ("data_rot", "models.<name>.trian.lr", "models.<name>.train.lrr", "model", "evaluation.tatoeba.langs"):
        assert not schema_has(key.split("."), root, root), key
    assert config_keys("`data_root`, `models.<name>.train.lr`, `run_name=x`, `config/small.yaml`, "
                       "`--config k=v`, `small.yaml`, `data_root: null`") == [
        "data_root", "models.<name>.train.lr", "run_name"]


def test_config_readme_is_one_screen_naming_only_keys_the_schema_has():
    text = CONFIG_README.read_text()
    assert len(text.splitlines()) <= 60, "config/README.md: keep it to one screen (~50 lines)"
    root = yaml.safe_load(SCHEMA.read_text())
    keys = config_keys(text)
    unknown = sorted({k for k in keys if not schema_has(k.split("."), root, root)})
    assert not unknown, f"config/README.md names keys the schema ({SCHEMA.relative_to(ROOT)}) does not have: {unknown}"
    named = set(keys)
    assert {"data_root", "run_name", "corpora", "models.<name>.family", "evaluation"} <= named
    assert any(k.startswith("models.<name>.train.") for k in named), "config/README.md: name the training settings"
