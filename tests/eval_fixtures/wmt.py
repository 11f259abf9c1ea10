"""Toy WMT test-set archives in the layout sacrebleu expects, for offline tests of ``wmt-texts``.

sacrebleu (2.6.0) names every file of a test set in ``sacrebleu.dataset.DATASETS[test_set].langpairs``
(wmt14: ``test/newstest2014-csen-src.cs.sgm``, ``test/newstest2014-csen-ref.en.sgm``, ...), so the
archive written here has exactly those members, in WMT's "fake SGML": ``<srcset>``/``<refset>``,
``<doc docid=... origlang=...>``, ``<p>``, one ``<seg id=...>`` per line. Only the pairs whose two
languages are given get files; sacrebleu reads only the files of the pairs it is asked for.

From WMT21 on (sacrebleu's ``WMTXMLDataset``) a pair is one XML file (``test/newstest2021.en-de.xml``)
with the source and each translator's reference of every document.

File names fix the languages a test set can hold: wmt14 has cs, de, fr, hi and ru with en (no es);
wmt13 (N-way newstest2013) has cs, de, es, fr and ru. To test with other toy languages, put their
sentences under one of those codes, e.g. ``{"en": eng, "es": spa, "de": deu, "cs": ell, "fr": cmn}``
with ``test_set="wmt13"``, and ask ``wmt-texts`` for ``eng spa deu ces fra``: ``ces.txt`` then holds
the Greek sentences. The archive's md5 is not sacrebleu's, so pass ``--md5 <fixture md5>``.

Usage::

    from eval_fixtures.wmt import make_test_set
    fx = make_test_set(tmp / "test-filtered.tgz", {"en": [...], "de": [...], "fr": [...]})
    # laser-repro wmt-texts --tarball fx.path --md5 fx.md5 --test-set wmt14 --langs eng deu fra --out-dir D
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape


@dataclass(frozen=True)
class FixtureArchive:
    path: Path
    test_set: str
    url: str  # the sacrebleu URL this archive stands in for
    md5: str
    sha256: str
    langpairs: list[str]  # the pairs whose files it holds
    members: list[str]


def _sgm(kind: str, setid: str, lang: str, docs: Sequence[tuple[str, str, Sequence[str]]]) -> str:
    """One WMT fake-SGML file: kind 'src' -> <srcset>, 'ref' -> <refset trglang=...>."""
    if kind == "src":
        lines = [f'<srcset setid="{setid}" srclang="any">']
    else:
        lines = [f'<refset setid="{setid}" srclang="any" trglang="{lang}">']
    for docid, origlang, segs in docs:
        sysid = ' sysid="ref"' if kind == "ref" else ""
        lines += [f'<doc{sysid} docid="{docid}" genre="news" origlang="{origlang}">', "<p>"]
        for i, seg in enumerate(segs, start=1):
            if "\n" in seg or "<" in seg or ">" in seg:
                raise ValueError(f"toy sentence {seg!r}: no newline or angle bracket (the SGML is line-based)")
            lines.append(f'<seg id="{i}">{seg}</seg>')
        lines += ["</p>", "</doc>"]
    lines.append("</srcset>" if kind == "src" else "</refset>")
    return "\n".join(lines) + "\n"


def _xml(setid: str, src_lang: str, trg_lang: str, docs_src, docs_ref, translators: Sequence[str]) -> str:
    """One WMT21-style XML file of a pair (sacrebleu's ``WMTXMLDataset``): per document its ``<src>`` and
    one ``<ref translator=...>`` per translator, in the order given; a translator other than ``A`` writes
    ``<name>: `` before each segment, so that a test sees which reference was read."""
    lines = [f'<dataset id="{setid}">', '<collection id="general">']
    for (docid, origlang, src_segs), (_, _, ref_segs) in zip(docs_src, docs_ref):
        lines.append(f'<doc id="{docid}" origlang="{origlang}">')
        lines += [f'<src lang="{src_lang}">', "<p>", *(f'<seg id="{i}">{escape(seg)}</seg>' for i, seg in
                                                       enumerate(src_segs, start=1)), "</p>", "</src>"]
        for translator in translators:
            mark = "" if translator == "A" else f"{translator}: "
            lines += [f'<ref lang="{trg_lang}" translator="{translator}">', "<p>",
                      *(f'<seg id="{i}">{escape(mark + seg)}</seg>' for i, seg in enumerate(ref_segs, start=1)), "</p>", "</ref>"]
        lines.append("</doc>")
    lines += ["</collection>", "</dataset>"]
    return "\n".join(lines) + "\n"


def _documents(texts: Mapping[str, Sequence[str]], lang: str, xx: str, doc_size: int,
               pair_only: Mapping[str, Sequence[tuple[str, str]]]) -> list[tuple[str, str, list[str]]]:
    """Documents of one pair (xx with en) in language ``lang``: the pair's own segments first (as in
    newstest2014, whose pairs each start with their own documents), then the shared ones."""
    docs = []
    own = list(pair_only.get(xx, []))
    for k in range(0, len(own), doc_size):
        chunk = own[k:k + doc_size]
        docs.append((f"{xx}-only-{k // doc_size}.example", xx, [en if lang == "en" else x for en, x in chunk]))
    shared = texts[lang]
    for k in range(0, len(shared), doc_size):
        docs.append((f"shared-{k // doc_size}.example", "en", list(shared[k:k + doc_size])))
    return docs


def make_test_set(path: Path | str, texts: Mapping[str, Sequence[str]], *, test_set: str = "wmt14",
                  doc_size: int = 2, pair_only: Mapping[str, Sequence[tuple[str, str]]] | None = None,
                  translators: Sequence[str] = ("A",)) -> FixtureArchive:
    """Write a deterministic .tgz standing in for ``test_set``'s archive.

    ``texts``: aligned sentences per sacrebleu language code ('en' required), shared by every pair
    as English-origin documents of ``doc_size`` segments. ``pair_only``: per code, extra ``(en, xx)``
    segments that only that pair has (its own documents), to mimic test sets that are not N-way.
    ``translators``: the references of each segment in the XML of WMT21 on (see :func:`_xml`).
    """
    from sacrebleu.dataset import DATASETS

    pair_only = pair_only or {}
    if "en" not in texts:
        raise ValueError("texts needs English ('en'): it is the pivot of every pair")
    n = {len(v) for v in texts.values()}
    if len(n) != 1:
        raise ValueError(f"texts are not aligned: {({k: len(v) for k, v in texts.items()})}")
    ds = DATASETS[test_set]
    if len(ds.data) != 1:
        raise ValueError(f"{test_set} has {len(ds.data)} archives; this fixture writes single-archive test sets")
    files: dict[str, str] = {}
    langpairs = []
    for langpair, paths in ds.langpairs.items():
        src_lang, trg_lang = langpair.split("-")
        if {src_lang, trg_lang} - set(texts) or "en" not in (src_lang, trg_lang):
            continue
        xx = trg_lang if src_lang == "en" else src_lang
        langpairs.append(langpair)
        if type(ds).__name__ == "WMTXMLDataset":  # one file holds both sides
            setid = os.path.basename(paths[0]).split(".")[0]
            files[paths[0]] = _xml(setid, src_lang, trg_lang, _documents(texts, src_lang, xx, doc_size, pair_only),
                                   _documents(texts, trg_lang, xx, doc_size, pair_only), translators)
            continue
        for member, lang in zip(paths, (src_lang, trg_lang)):
            kind = "ref" if "-ref." in os.path.basename(member) else "src"
            setid = os.path.basename(member).split("-")[0]
            content = _sgm(kind, setid, lang, _documents(texts, lang, xx, doc_size, pair_only))
            if files.setdefault(member, content) != content:
                raise ValueError(f"{test_set}: {member} is shared by several pairs (an N-way test set), so "
                                 f"pair_only segments cannot be given for it")
    if not langpairs:
        raise ValueError(f"{test_set} has no pair between the given languages {sorted(texts)}: "
                         f"{sorted(ds.langpairs)}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for member in sorted(files):
            data = files[member].encode("utf-8")
            info = tarfile.TarInfo(member)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    raw = buf.getvalue()
    return FixtureArchive(path, test_set, ds.data[0], hashlib.md5(raw).hexdigest(), hashlib.sha256(raw).hexdigest(),
                          langpairs, sorted(files))
