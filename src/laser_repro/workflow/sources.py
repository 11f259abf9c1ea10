"""Where raw inputs come from: local corpus files under data_root or their downloads, the evaluation data,
the public URL recorded for each raw file, and the arguments of the download and extraction commands."""
from __future__ import annotations

import os
import shlex

from laser_repro.config.plan import corpus_bitexts, corpus_code, local_languages, sacrebleu_langpair
from laser_repro.core import languages
from laser_repro.data import corpora
from laser_repro.evaluation import bucc, europarl
from laser_repro.provenance import spec_files


class SourceArgs:
    """params.sources of a rule: called with (wildcards, input[, output]), the quoted ``--source PATH=URL``
    arguments of its raw inputs; its ``items`` (wildcards, input, output) the PATH=URL items themselves (what
    the in-process provenance record reads)."""

    def __init__(self, items):
        self.items = items

    def __call__(self, w, input=None, output=None):
        return Sources.source_args(self.items(w, input, output))


class Sources:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def raw_input(self, path, url):
        """A raw input file (corpus, test set) under data_root, its public URL noted for provenance records."""
        self.raw_urls[path] = url
        return path

    @staticmethod
    def source_args(items):
        """--source PATH=URL arguments (quoted) of provenance's PATH=URL items."""
        return " ".join(f"--source {shlex.quote(item)}" for item in items)

    def downloaded_from(self, url_of):
        """params.sources of a download rule: its output comes from url_of(wildcards). Its `items`: the
        PATH=URL items themselves (the in-process record)."""
        return SourceArgs(lambda w, input, output: [f"{output[0]}={url_of(w)}"])

    def raw_source_items(self, w, input, output=None):
        return [f"{path}={self.raw_urls[path]}" for path in input if path in self.raw_urls]

    @property
    def raw_sources(self):
        """params.sources of a rule reading raw inputs: --source PATH=URL for each (SourceArgs)."""
        return SourceArgs(self.raw_source_items)

    def opus_zip(self, corpus, src, tgt):
        c = self.plan.corpora[corpus]
        codes = (languages.opus_code(src, c.get("codes")), languages.opus_code(tgt, c.get("codes")))
        return f"resources/opus/{corpora.opus_moses_path(c['corpus'], c['version'], *codes)}"

    def opus_url(self, w):
        """The OPUS URL of rule download_opus's zip (OPUS language codes hold no '-')."""
        return corpora.opus_moses_url(w.opus_corpus, w.version, *w.zipname.split("-", 1),
                                      base_url=self.cfg["opus"]["base_url"])

    def opus_pair_url_args(self, w):
        """--pair-urls-from: every configured pair of the OPUS corpus and version that download_opus fetches: with
        allow_absent_pairs, a missing zip is an absent pair only if another of them exists."""
        urls = []
        for b in self.plan.bitexts:
            c = self.plan.corpora[b.corpus]
            if c["kind"] == "opus" and c["corpus"] == w.opus_corpus and c["version"] == w.version:
                codes = (languages.opus_code(b.src, c.get("codes")), languages.opus_code(b.tgt, c.get("codes")))
                urls.append(corpora.opus_moses_url(w.opus_corpus, w.version, *codes, base_url=self.cfg["opus"]["base_url"]))
        # a file: at the paper's scale 114 URLs, 15 kB, in each of the corpus's download commands
        listed = spec_files.write_content_file(f"opus-pairs-{w.opus_corpus}-{w.version}", list(dict.fromkeys(urls)))
        return f"--pair-urls-from {shlex.quote(listed)}"

    @staticmethod
    def fetch_urls(urls):
        """`laser-repro fetch`'s --url and --alternative arguments (quoted) of URLs tried in this order."""
        return " ".join([f"--url {shlex.quote(urls[0])}", *(f"--alternative {shlex.quote(u)}" for u in urls[1:])])

    def sacrebleu_urls(self, tarball):
        """`laser-repro fetch`'s URL arguments of a sacrebleu test set's archive: its URL, then its mirrors."""
        archive = self.plan.sacrebleu_archives[tarball]
        return self.fetch_urls([archive["url"], *archive["alternatives"]])

    def europarl_sha256_arg(self, xx):
        """`laser-repro fetch`'s ``--sha256`` of Europarl's xx-en archive, where the config pins it ('' if not)."""
        sha = self.evaluation["europarl"]["sha256"].get(f"{xx}-en.tgz")
        return f"--sha256 {shlex.quote(sha)}" if sha else ""

    @staticmethod
    def download_label(url):
        """An archive's URL, or its parts' URLs joined by ' + ' (an archive published in parts)."""
        return url if isinstance(url, str) else " + ".join(url)

    def downloaded_file(self, corpus, lang, bitext=None):
        """Where a local corpus's file is written when data_root is null: resources/<corpus>/<code> (layout
        nway: the language's code in the corpus, as the archive members), resources/<corpus>/<src>-<tgt>.<lang>
        (layout bitext, `bitext` = (src, tgt): converted from its sacrebleu test set)."""
        if bitext is None:
            return f"resources/{corpus}/{corpus_code(self.plan.corpora[corpus], lang)}"
        return f"resources/{corpus}/{bitext[0]}-{bitext[1]}.{lang}"

    def local_corpus_file(self, corpus, lang, bitext=None):
        """A language's file of a local corpus (layout bitext: of the bitext `bitext` = (src, tgt)): under
        data_root, or from the download (an archive's member, a sacrebleu test set converted to text)."""
        c = self.plan.corpora[corpus]
        download = c.get("download", {})
        if self.data_root:
            code = corpus_code(c, lang)
            if bitext is None:
                path = c["path"].format(root=self.data_root, code=code)
            else:
                path = c["path"].format(root=self.data_root, src=corpus_code(c, bitext[0]), tgt=corpus_code(c, bitext[1]),
                                        side=code)
            if "sacrebleu" in download:
                self.raw_input(path, self.plan.sacrebleu_source(corpus, lang, bitext))
            elif "url" in download:
                self.raw_input(path, f"{self.download_label(download['url'])}#{download['member'].format(code=code)}")
            return path
        if not download or (bitext is not None and "sacrebleu" not in download):
            need = "download section" if bitext is None else "download.sacrebleu section (layout bitext)"
            raise ValueError(f"corpora: {corpus}: data_root is null and the corpus has no {need}")
        return self.downloaded_file(corpus, lang, bitext)

    def sacrebleu_conversion(self, corpus):
        """(argument, file) of every file a sacrebleu corpus's conversion writes (`laser-repro sacrebleu-corpus`
        --nway-file LANG / --pair-file LANGPAIR LANG, then the file): those local_corpus_file names when
        data_root is null."""
        c = self.plan.corpora[corpus]
        if c["layout"] == "nway":
            return [(["--nway-file", lang], self.downloaded_file(corpus, lang)) for lang in local_languages(c, self.plan.targets)]
        return [(["--pair-file", sacrebleu_langpair(c, b.src, b.tgt), lang], self.downloaded_file(corpus, lang, (b.src, b.tgt)))
                for b in corpus_bitexts(c, self.plan.targets) for lang in (b.src, b.tgt)]

    def tatoeba_test_file(self, lang, side):
        if self.data_root:
            return self.raw_input(self.cfg["evaluation"]["tatoeba"]["path"].format(root=self.data_root, lang=lang, side=side),
                       self.cfg["evaluation"]["tatoeba"]["url"].format(lang=lang, side=side))
        return f"resources/tatoeba-v1/tatoeba.{lang}-eng.{side}"

    def extract_inputs(self, w):
        c = self.plan.corpora[w.corpus]
        if c["kind"] == "opus":
            files = {"zip": self.opus_zip(w.corpus, w.src, w.tgt)}
        elif c["layout"] == "nway":  # with the sides' Moses lines, taken for the kept pairs (extract_nway_bitext)
            files = {"src_file": self.local_corpus_file(w.corpus, w.src), "tgt_file": self.local_corpus_file(w.corpus, w.tgt),
                     "moses_src": self.laser_text_file(w.corpus, w.src),
                     "moses_tgt": self.laser_text_file(w.corpus, w.tgt)}
        else:  # layout bitext: one pair of files per language pair
            files = {side: self.local_corpus_file(w.corpus, lang, (w.src, w.tgt))
                     for side, lang in (("src_file", w.src), ("tgt_file", w.tgt))}
        if c.get("exclude_tatoeba_test"):
            xx = w.src if w.src != "eng" else w.tgt
            if xx != "eng" and languages.get(xx).tatoeba_test:
                files["tatoeba"] = [self.tatoeba_test_file(xx, xx), self.tatoeba_test_file(xx, "eng")]
        return files

    def extract_args(self, w, input, output):
        c = self.plan.corpora[w.corpus]
        args = ["--src", w.src, "--tgt", w.tgt]  # words, quoted at the end (paths, codes: config values)
        if c.get("allow_absent_pairs"):  # a pair with no sentence: empty bitext, "absent": true in its stats
            args.append("--absent-ok")
        if c["kind"] == "opus":
            args += ["--opus-zip", input.zip, "--opus-corpus", c["corpus"],
                     "--src-code", languages.opus_code(w.src, c.get("codes")),
                     "--tgt-code", languages.opus_code(w.tgt, c.get("codes"))]
        else:
            args += ["--src-file", input.src_file, "--tgt-file", input.tgt_file]
        if "moses_src" in input.keys():
            args += ["--moses-src", input.moses_src, "--moses-tgt", input.moses_tgt,
                     "--tok-src", output.tok_src, "--tok-tgt", output.tok_tgt]
        for key in ("first_n", "max_pairs"):
            if c.get(key):
                args += [f"--{key.replace('_', '-')}", c[key]]
        filters = self.laser_data["filters"]
        args += ["--max-chars", filters["max_chars"]]
        if filters.get("max_ratio"):
            args += ["--max-ratio", filters["max_ratio"]]
        if "tatoeba" in input.keys():
            args += ["--exclude-tatoeba", input.tatoeba[0], input.tatoeba[1]]
        heldout = self.plan.heldout_lines(w.corpus)
        if heldout:  # the FLORES evaluation lines (flores_eval.heldout_lines) are never trained on
            args += ["--skip-lines", heldout[0], heldout[1]]
        return shlex.join(map(str, args))

    def opus_sha256_arg(self, w):
        """--sha256 for an OPUS zip when a corpus of the config pins its checksum."""
        name = f"{w.zipname}.txt.zip"
        for c in self.plan.corpora.values():
            if c.get("corpus") == w.opus_corpus and name in c.get("sha256", {}):
                return f"--sha256 {shlex.quote(c['sha256'][name])}"
        return ""

    def opus_absent_ok_arg(self, w):
        """--absent-ok with the pairs' URLs, where a config's corpus of this OPUS corpus allows absent pairs."""
        if any(c.get("allow_absent_pairs") for c in self.plan.corpora.values() if c.get("corpus") == w.opus_corpus):
            return f"--absent-ok {self.opus_pair_url_args(w)}"
        return ""

    def archive_sha256_arg(self, corpus):
        """--sha256 of a corpus's archive, where the config pins it ('' if not)."""
        sha = self.plan.corpora[corpus]["download"].get("sha256")
        return f"--sha256 {shlex.quote(sha)}" if sha else ""

    def eval_input(self, url, path_template, sha256=None, **fields):
        """Where an evaluation file comes from: <data_root>/... when data_root is set (read as is), else
        the download destination resources/eval/<host>/<path> (rule download_eval, mirror-capable)."""
        url = url.format(**fields)
        if self.data_root:
            path = path_template.format(root=self.data_root, **fields)
            return self.raw_input(path, url)
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        dest = f"resources/eval/{parts.netloc}{parts.path}"
        self.eval_downloads[dest] = (url, sha256)
        return dest

    def missing_note(self, task, files, how=""):
        """None when every input of a task is there (or will be downloaded); else the table's note,
        with the command that fetches each absent file into place."""
        absent = [f for f in files if not f.startswith("resources/eval/") and not os.path.exists(f)]
        if not absent:
            return None
        # a member of an archive (url#member) is not fetched on its own: `how` says how to get it
        fetch = "; ".join(f"`laser-repro fetch --url {shlex.quote(self.raw_urls[f])} --dest {shlex.quote(f)}`"
                          for f in absent if f in self.raw_urls and "#" not in self.raw_urls[f])
        return (f"data missing: {', '.join(absent)}. " + (f"Obtain with {fetch} (or set data_root: null to download "
                f"into resources/eval/). " if fetch else "") + how).strip()

    def bucc_archive(self, xx, split):
        """split: training (sentences + gold) or test (sentences only; the test gold is private)."""
        cfg = self.evaluation["bucc"]
        return self.eval_input(cfg["url"], cfg["path"], cfg["sha256"].get(bucc.archive_name(xx, split)),
                          xx=bucc.bucc_code(xx), split=bucc.ARCHIVE_SPLITS[split])

    def xnli_zip(self):
        cfg = self.evaluation["xnli"]
        return self.eval_input(cfg["url"], cfg["path"], cfg["sha256"].get("XNLI-1.0.zip"))

    def multinli_zip(self):
        cfg = self.evaluation["xnli"]
        return self.eval_input(cfg["multinli_url"], cfg["multinli_path"], cfg["sha256"].get("multinli_1.0.zip"))

    def mldoc_file(self, lang, split):
        from laser_repro.evaluation import mldoc

        cfg = self.evaluation["mldoc"]
        directory = cfg["path"].format(root=self.data_root)
        return str(mldoc.expected_files(directory, [lang], cfg["train_size"], check=False)[lang][split])

    def wmt_sources(self):
        """The WMT test set's raw files: with data_root its N-way plain-text files ({language: path}, read
        as they are), else sacrebleu's archive(s) as downloaded by download_eval ({"archive<i>": path})."""
        from laser_repro.data import sacrebleu_sets

        cfg = self.evaluation["wmt"]
        if self.data_root:
            stem = sacrebleu_sets.text_file_stem(cfg["test_set"])
            return {lang: self.raw_input(cfg["path"].format(root=self.data_root, stem=stem, code=sacrebleu_sets.sacrebleu_code(lang)),
                              sacrebleu_sets.text_file_source(cfg["test_set"], lang)) for lang in self.wmt_languages()}
        # data_root is null: eval_input gives the download destination (no path template is used)
        return {f"archive{i}": self.eval_input(url, None, sha256)
                for i, (url, sha256) in enumerate(sacrebleu_sets.test_set_downloads(cfg["test_set"], cfg["sha256"]))}

    def wmt_source_args(self, input):
        """wmt-texts' source options for the inputs of wmt_sources(): --text LANG FILE, or --tarball (and --md5)."""
        if self.data_root:
            return shlex.join([x for lang in self.wmt_languages() for x in ("--text", lang, input[lang])])
        return shlex.join([x for path in input for x in ("--tarball", path)]
                          + [x for md5 in self.evaluation["wmt"]["md5"] for x in ("--md5", md5)])

    def wmt_languages(self):
        """English and the configured languages the test set pairs with it (others: absent in its table)."""
        from laser_repro.data import sacrebleu_sets

        cfg = self.evaluation["wmt"]
        present, _ = sacrebleu_sets.language_pairs(cfg["test_set"], cfg["languages"])
        return [code for code in cfg["languages"] if code == "eng" or code in present]

    def muse_dictionary(self, src, tgt):
        """The MUSE test dictionary of a direction (ISO 639-3 codes): under data_root, or downloaded."""
        s, t = self.iso1(src), self.iso1(tgt)
        if self.data_root:
            return self.raw_input(self.evaluation["muse_words"]["path"].format(root=self.data_root, src=s, tgt=t),
                       self.evaluation["muse_words"]["url"].format(src=s, tgt=t))
        return f"resources/muse/dictionaries/{s}-{t}.5000-6500.txt"

    def europarl_file(self, src, tgt, side):
        """The Europarl v7 file of ``side`` for the pair of src and tgt (one is English): the xx-en release."""
        xx = self.iso1(tgt if src == "eng" else src)
        s = self.iso1(side)
        if self.data_root:
            e = self.evaluation["europarl"]
            return self.raw_input(e["path"].format(root=self.data_root, xx=xx, side=s),
                       f"{e['url'].format(xx=xx)}#{e['member'].format(xx=xx, side=s)}")
        return f"resources/europarl/europarl-v7.{xx}-en.{s}"

    def eval_mirror_args(self, url):
        """fetch's options for an evaluation download from `evaluation.mirror`, which holds <host>/<path>:
        scheme://host is mapped onto <mirror>/<host> ("" without a mirror)."""
        if not self.evaluation.get("mirror"):
            return ""
        scheme, rest = url.split("://", 1)
        host = rest.split("/", 1)[0]
        return shlex.join(["--base-url", f"{scheme}://{host}", "--mirror", f"{self.evaluation['mirror'].rstrip('/')}/{host}"])

    @staticmethod
    def iso1(lang):
        return languages.get(lang).paper

    def flores_raw_file(self, lang):
        return self.local_corpus_file(self.flores["corpus"], lang)

    @staticmethod
    def nway_corpora(data):
        """The corpora of an nway_data entry, in order (one, or the parts of a pair's corpus)."""
        return [data["corpus"]] if isinstance(data["corpus"], str) else list(data["corpus"])

    def nway_raw_inputs(self, w):
        """The language's file of the N-way training corpus and, with a separate validation corpus, its file there."""
        d, kind = self.nway[w.data], self.plan.nway_subword_kind(w.data)
        # "moses": the lines its subwords are learned on: Moses' for bpe, LASER2's normalisation for spm
        files = {"raw": [self.local_corpus_file(c, w.lang) for c in self.nway_corpora(d)],
                 "moses": [self.text_file(c, w.lang, d["lowercase"], kind) for c in self.nway_corpora(d)]}
        if "corpus" in d["valid"]:
            files["valid_raw"] = self.local_corpus_file(d["valid"]["corpus"], w.lang)
            files["valid_moses"] = self.text_file(d["valid"]["corpus"], w.lang, d["lowercase"], kind)
        else:  # held-out lines: every language's file is compared first, a short one named with every count
            files["aligned"] = [self.local_corpus_file(c, other) for other in d["languages"] if other != w.lang
                                for c in self.nway_corpora(d)]
        return files

    def nway_data_of_kind(self, kind):
        """The nway_data entries whose subwords are of ``kind`` (bpe or spm)."""
        return [name for name in self.nway if self.plan.nway_subword_kind(name) == kind]

    def nway_max_words_arg(self, data):
        """nway-bpe's / nway-spm's --max-words of an nway_data entry ('' without the length filter)."""
        max_words = self.nway[data].get("max_words")
        return f"--max-words {int(max_words)}" if max_words else ""

    def nway_spm_args(self, data):
        """nway-spm's --subword (the entry's subword section as JSON) and --max-words, as a list (the rule quotes
        each item)."""
        import json

        d = self.nway[data]
        return ["--subword", json.dumps(d["subword"], sort_keys=True),
                *(["--max-words", str(int(d["max_words"]))] if d.get("max_words") else [])]

    def nway_valid_args(self, w, input):
        d = self.nway[w.data]
        if "corpus" in d["valid"]:
            return f"--valid-raw {shlex.quote(input.valid_raw)} --valid-moses {shlex.quote(input.valid_moses)}"
        start, stop = d["valid"]["heldout_lines"]
        aligned = "".join(f" --aligned-with {shlex.quote(other)} "
                          + " ".join(shlex.quote(self.local_corpus_file(c, other)) for c in self.nway_corpora(d))
                          for other in d["languages"] if other != w.lang)
        return f"--heldout {int(start)} {int(stop)}{aligned}"

    def task_ready(self, task):
        return task in self.evaluation and self.task_missing.get(task) is None

    def missing_arg(self, task):
        """--missing NOTE for a table whose task cannot run (not configured, or data absent)."""
        if task not in self.evaluation:
            note = f"not configured: add evaluation.{task} to the config (see config/paper.yaml)"
        else:
            note = self.task_missing.get(task)
        import shlex

        return "" if note is None else f"--missing {shlex.quote(note)}"

    def bpe_apply_inputs(self, w):
        """Inputs of bpe_apply / spm_apply: the subword model, one side's shards of every corpus, the dedup mask."""
        files = {"codes": self.subword_model(), "shards": self.pair_tok_shards(w)}
        if self.laser_data["preprocess"]["dedup_pairs"]:
            files["keep"] = f"{self.run}/bpe/keep/{w.src}-{w.tgt}.npy"
        return files
