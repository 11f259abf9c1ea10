"""Every OPUS URL the shipped configs can produce is a file OPUS publishes, checked offline against the
index of OPUS files that opustools bundles (opustools/opusdata.db.gz: one row per file, with its URL)."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

from laser_repro import config
from laser_repro.config import Plan
from laser_repro.core import languages
from laser_repro.data.opus import OPUS_BASE_URL, opus_moses_url

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = sorted([*ROOT.glob("config/*.yaml"), *ROOT.glob("tests/toy/*.yaml")])


@pytest.fixture(scope="module")
def opus_index(tmp_path_factory):
    opustools = pytest.importorskip("opustools")
    packed = Path(opustools.__file__).with_name("opusdata.db.gz")
    db = tmp_path_factory.mktemp("opus") / "opusdata.db"
    with gzip.open(packed, "rb") as fin, open(db, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    conn = sqlite3.connect(db)
    yield conn
    conn.close()


def _published(conn, url: str) -> bool:
    return conn.execute("SELECT 1 FROM opusfile WHERE url = ? LIMIT 1", (url,)).fetchone() is not None


def opus_urls(plan: Plan) -> dict[str, list[str]]:
    """config corpus name -> the OPUS URLs it downloads (below the public OPUS server): the zip of every
    pair of a kind: opus corpus, and every URL of a local corpus's download (written by hand or built
    from download.opus) that lies on the OPUS server."""
    out: dict[str, list[str]] = {}
    for b in plan.bitexts:
        c = plan.corpora[b.corpus]
        if c["kind"] == "opus":
            codes = (languages.opus_code(b.src, c.get("codes")), languages.opus_code(b.tgt, c.get("codes")))
            out.setdefault(b.corpus, []).append(opus_moses_url(c["corpus"], c["version"], *codes))
    for name, c in plan.corpora.items():
        if "download" in c and "sacrebleu" not in c["download"]:  # sacrebleu's WMT tarballs are not OPUS's
            for choice in plan.archive_urls(name):
                for url in [choice] if isinstance(choice, str) else choice:
                    if url.startswith(OPUS_BASE_URL + "/"):
                        out.setdefault(name, []).append(url)
    return out


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_opus_url_of_a_config_is_in_the_opus_index(opus_index, path):
    plan = Plan(config.load(path))
    for name, urls in opus_urls(plan).items():
        missing = [u for u in dict.fromkeys(urls) if not _published(opus_index, u)]
        if plan.corpora[name].get("allow_absent_pairs"):
            # pairs OPUS does not publish are expected there, but not a corpus/version OPUS lacks altogether
            assert len(missing) < len(set(urls)), f"{path.name}: corpus {name}: no URL is published: {missing[:3]}"
        else:
            assert not missing, f"{path.name}: corpus {name}: not in opustools' OPUS index: {missing}"


def test_the_index_check_can_fail(opus_index):
    assert _published(opus_index, "https://object.pouta.csc.fi/OPUS-ParaCrawl/v4/moses/de-en.txt.zip")
    assert not _published(opus_index, "https://object.pouta.csc.fi/OPUS-ParaCrawl/v4/moses/en-de.txt.zip")


def test_download_opus_builds_the_sorted_pair_and_its_member():
    cfg = config.load(ROOT / "config" / "bisent2vec_2019.yaml")
    download = Plan(cfg).corpora["paracrawl_en_de"]["download"]
    assert download["url"] == "https://object.pouta.csc.fi/OPUS-ParaCrawl/v4/moses/de-en.txt.zip"
    assert download["member"].format(code="de") == "ParaCrawl.de-en.de"
    assert Plan(cfg).archive_kind_name("paracrawl_en_de") == "de-en.txt.zip"
