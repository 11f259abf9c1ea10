"""The contamination table's job (rule ``contamination``): which files are the run's training text per data
entry and language, which are its test sets, the spec ``laser-repro contamination`` reads
(:mod:`laser_repro.evaluation.contamination`) and the job's SLURM request."""
from __future__ import annotations

import os

from laser_repro.evaluation import contamination as counts
from laser_repro.provenance import spec_files
from laser_repro.workflow.targets import TABLE_FORMATS


class Contamination:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def contamination_targets(self):
        """The table's files (Markdown, CSV, LaTeX) of a run with training text (a LASER model or an N-way data
        entry a model trains on); the JSON is the same job's."""
        if not self._contamination_data():
            return []
        return [f"{self.tables_dir}/contamination.{ext}" for ext in TABLE_FORMATS]

    def _contamination_data(self):
        """The data entries a model trains on, as the table names them ("bitext_data.<name>", "nway_data.<name>"),
        without their files (what the rule file asks when it is read: no corpus path is resolved)."""
        laser = [f"bitext_data.{self.plan.laser_setup.data_name}"] if self.laser else []
        return laser + [f"nway_data.{name}" for name in self._nway_trained()]

    def _nway_trained(self):
        """The nway_data entries a model of `models` trains on, in config order."""
        used = {m["data"] for m in self.plan.family_entries.values()}
        return [name for name in self.nway if name in used]

    def contamination_training(self):
        """The training text of each data entry a model trains on: ``[{"data", "entry", "models", "text",
        "normalised_text", "languages": {lang: {"exact": [source], "normalised": [source]}}}]`` (sources:
        laser_repro.evaluation.contamination). LASER: both sides of every aligned pair, the extracted pair
        files (after the pair filters, before pair de-duplication and BPE) and their Moses shards; an
        nway_data entry: its training split, the corpus lines but the validation ones, and its Moses lines
        (tok/train.<lang>, before the length filter of nway_bpe)."""
        out = []
        if self.laser:
            setup = self.plan.laser_setup
            langs = {}
            for b in self.plan.bitexts:
                for lang in (b.src, b.tgt):
                    spec = langs.setdefault(lang, {"exact": [], "normalised": []})
                    spec["exact"].append({"files": [f"{self.run}/corpora/{b.corpus}/{b.src}-{b.tgt}.{lang}"], "skip": None})
                    spec["normalised"].append({"files": self.tok_shards(b.corpus, b.src, b.tgt, lang), "skip": None})
            b = self.plan.bitexts[0]
            shard = self.tok_shards(b.corpus, b.src, b.tgt, b.src)[0]
            shards = os.path.relpath(os.path.dirname(os.path.dirname(shard)), self.run)  # the shards' directory: tok
            ncorpora = len({b.corpus for b in self.plan.bitexts})
            filters = ", ".join(f"{k} {v}" for k, v in sorted(self.laser_data.get("filters", {}).items()) if v)
            text = (f"both sides of every aligned training pair of `bitext_data.{setup.data_name}` "
                    f"({len(self.plan.bitexts)} bitexts of {ncorpora} {'corpus' if ncorpora == 1 else 'corpora'}, "
                    f"{len(self.plan.pairs)} directions): the extracted pair files (`corpora/<corpus>/<src>-<tgt>.<lang>` "
                    f"of the run's directory), after the pair filters ({filters or 'none'}), without the held-out FLORES "
                    f"lines and any Tatoeba test sentence a corpus excludes; before pair de-duplication "
                    f"(`preprocess.dedup_pairs` drops repeated pairs, not sentences: each language keeps the same "
                    f"distinct sentences) and BPE. Every LASER model of the run trains on these pairs or a subset "
                    f"(an ablation's languages)")
            out.append({"data": f"bitext_data.{setup.data_name}", "entry": dict(self.laser_data),
                        "models": list(self.plan.laser_models), "text": text,
                        "normalised_text": f"the preprocessed shards the subwords are learned on and applied to, "
                                           f"`{shards}/<corpus>/<src>-<tgt>.<lang>.<k>-of-<n>` of the run's directory",
                        "languages": langs})
        for name in self._nway_trained():
            d = self.nway[name]
            heldout = d["valid"].get("heldout_lines")
            corpora = self.nway_corpora(d)
            langs = {lang: {"exact": [{"files": [self.local_corpus_file(c, lang) for c in corpora],
                                       "skip": list(heldout) if heldout else None}],
                            "normalised": [{"files": [f"{self.run}/nway/{name}/tok/train.{lang}"], "skip": None}]}
                     for lang in d["languages"]}
            valid = (f"lines {heldout[0]}-{heldout[1] - 1} held out for validation" if heldout
                     else f"its validation corpus {d['valid']['corpus']} apart")
            out.append({"data": f"nway_data.{name}", "entry": dict(d),
                        "models": [n for n, m in self.plan.family_entries.items() if m["data"] == name],
                        "text": (f"the N-way training split of `nway_data.{name}`: the lines of {', '.join(corpora)} "
                                 f"as given ({valid}), before the length filter of its subwords (`max_words`)"),
                        "normalised_text": (f"its {'LASER2-normalised' if self.plan.nway_subword_kind(name) == 'spm' else 'Moses'} "
                                            f"lines, `nway/{name}/tok/train.<lang>` of the run's directory"),
                        "languages": langs})
        return out

    def contamination_test_sets(self):
        """The run's test files, one entry per file: ``{"set", "label", "part", "language", "file", "data"}``
        (``data``: None for every training text, an nway_data entry's validation lines for its own)."""
        sets = []

        def add(key, label, part, lang, path, data=None):
            sets.append({"set": key, "label": label, "part": part, "language": lang, "file": path, "data": data})

        for lang in self.plan.tatoeba_languages:
            add("tatoeba", "Tatoeba v1", f"{lang}-eng", lang, self.tatoeba_test_file(lang, lang))
            add("tatoeba", "Tatoeba v1", f"{lang}-eng", "eng", self.tatoeba_test_file(lang, "eng"))
        if self.flores:
            start, stop = self.flores["heldout_lines"]
            for lang in ["eng", *self.plan.flores_languages]:
                add("flores_eval", f"{self.flores['corpus']} held-out lines {start}-{stop - 1}", "", lang,
                    f"{self.flores_dir}/raw/heldout.{lang}")
        if self.task_ready("wmt"):
            from laser_repro.data import sacrebleu_sets

            test_set = self.evaluation["wmt"]["test_set"]
            for lang in self.wmt_languages():
                add("wmt", f"WMT {sacrebleu_sets.text_file_stem(test_set)}", "", lang,
                    f"{self.run}/eval/wmt/text/{test_set}.{lang}.txt")
        if self.task_ready("bucc"):
            for xx in self.evaluation["bucc"]["languages"]:
                for split in ("training", "test"):
                    for side in (xx, "eng"):
                        add("bucc", "BUCC 2018", f"{xx}-eng {split}", side,
                            f"{self.run}/eval/bucc/text/{xx}-{split}-{side}.{side}.txt")
        if self.task_ready("xnli"):
            for lang in self.evaluation["xnli"]["languages"]:
                for kind, part in (("p", "premises"), ("h", "hypotheses")):
                    add("xnli", "XNLI test", part, lang, f"{self.run}/eval/xnli/text/test-{kind}.{lang}.txt")
        if self.task_ready("mldoc"):
            for lang in self.evaluation["mldoc"]["languages"]:
                add("mldoc", "MLDoc test", "", lang, f"{self.run}/eval/mldoc/text/test.{lang}.txt")
        for name in self._nway_trained():
            for lang in self.nway[name]["languages"]:
                add("nway_valid", f"nway_data.{name} validation lines", "", lang,
                    f"{self.run}/nway/{name}/raw/valid.{lang}", f"nway_data.{name}")
        return sets

    def contamination_absent(self):
        """{evaluation set: why it has no rows} (not configured, or its data absent)."""
        out = {} if self.plan.tatoeba_languages else {"tatoeba": "not configured (evaluation.tatoeba.languages)"}
        for task, why in self.missing_tasks().items():
            out[task] = why
        return out

    @staticmethod
    def _source_files(languages):
        return [f for spec in languages.values() for key in ("exact", "normalised") for s in spec[key] or []
                for f in s["files"]]

    def contamination_inputs(self, w=None):
        """The job's inputs: ``train`` (every training text file: pair files and their Moses shards, an N-way
        entry's corpus files and Moses lines) and ``tests`` (every test file)."""
        train = [f for t in self.contamination_training() for f in self._source_files(t["languages"])]
        return {"train": list(dict.fromkeys(train)),
                "tests": list(dict.fromkeys(s["file"] for s in self.contamination_test_sets()))}

    def contamination_spec(self, w=None):
        """params.spec of the job: the spec (laser_repro.evaluation.contamination) as a content-addressed file."""
        spec = {"run": self.run_name, "training": self.contamination_training(), "sets": self.contamination_test_sets(),
                "absent": self.contamination_absent()}
        return spec_files.write_content_file("contamination", spec)

    def contamination_config_keys(self):
        """The config keys the table depends on: the data entries, the held-out lines, the evaluation sets."""
        return [*self._contamination_data(), "flores_eval", "evaluation"]

    def contamination_resources(self, w=None, input=None):
        """The job's SLURM request {"mem_mb", "runtime"} from the training text's size (all of it, and the
        largest language's); 2 GB and 15 min while the files do not exist (a dry run)."""
        sizes, total = {}, 0
        for t in self.contamination_training():
            for lang, spec in t["languages"].items():
                files = self._source_files({lang: spec})
                if not all(os.path.exists(f) for f in files):
                    return counts.resources(None, None)
                n = sum(os.path.getsize(f) for f in files)
                sizes[lang] = sizes.get(lang, 0) + n
                total += n
        return counts.resources(total, max(sizes.values(), default=0))
