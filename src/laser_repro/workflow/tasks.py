"""Every model (any family) through every evaluation task: the task's languages each model embeds, its
score files, and why a model has none."""
from __future__ import annotations

import shlex

from laser_repro.evaluation import europarl

#: the tasks of the comparison tables (compare_<task>), in their order
TASK_COMPARISONS = ("tatoeba", "un", "bucc", "xnli", "mldoc", "wmt", "europarl")
#: the tasks that score each model at update 0 too
TASKS_WITH_INIT = ("tatoeba", "un", "wmt", "europarl")
#: languages with a Europarl v7 xx-en release (no Russian, no Chinese: the paper's Table 3 has no en-ru)
EUROPARL_LANGUAGES = frozenset(europarl.EUROPARL_LANGUAGES)


class Tasks:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def labse_tatoeba_languages(self):
        return list(self.cfg.get("evaluation", {}).get("tatoeba", {}).get("languages", [])) if self.labse else []

    def family_tatoeba_languages(self):
        """The Tatoeba languages of the TF-IDF baseline beside the models of `models` (tatoeba_tfidf): those any
        of them is scored on; every configured one when the Tatoeba comparison table has them all (LASER's)."""
        if "tatoeba" in self.compared_tasks():
            return list(self.plan.tatoeba_languages)
        langs = {lang for name in self.family_models for lang in self.plan.model_tatoeba_languages(name)}
        return [lang for lang in self.plan.tatoeba_languages if lang in langs]

    def bisent2vec_words_directions(self, name):
        return self.plan.bisent2vec_directions(name) if "muse_words" in self.evaluation else []

    def europarl_languages(self):
        """The xx of the Europarl task (each with English): the configured ones, or every Europarl v7 language."""
        langs = self.evaluation["europarl"].get("languages")
        if langs is None:
            return sorted(EUROPARL_LANGUAGES)
        unknown = [lang for lang in langs if lang not in EUROPARL_LANGUAGES]
        if unknown:
            raise ValueError(f"evaluation.europarl.languages: {unknown} have no Europarl v7 xx-en release (the "
                             f"languages: {', '.join(sorted(EUROPARL_LANGUAGES))})")
        return list(langs)

    def europarl_size_args(self):
        """europarl-retrieval's sizes and seed (quoted): MUSE's protocol as configured."""
        e = self.evaluation["europarl"]
        return shlex.join(str(x) for x in ("--n-keys", e["n_keys"], "--n-queries", e["n_queries"], "--n-idf", e["n_idf"],
                                           "--seed", e["seed"]))

    def europarl_directions(self, name):
        """The Europarl directions a model (any family) is scored on: (eng, xx) and (xx, eng) for each xx of
        the task that it embeds with English (a Bi-Sent2Vec model: its pair's)."""
        if "europarl" not in self.evaluation:
            return []
        return [d for xx in self.task_languages("europarl", name) for d in (("eng", xx), (xx, "eng"))]

    def labse_un(self):
        """evaluation.un of the LaBSE models (None: not evaluated)."""
        return self.cfg.get("evaluation", {}).get("un") if self.labse else None

    def configured_task_languages(self, task):
        """A task's languages as configured: Tatoeba's, UN's and BUCC's xx (each paired with English), the test
        languages of XNLI and MLDoc (English included), WMT's present in the test set."""
        if task == "europarl":
            return self.europarl_languages()
        return self.wmt_languages() if task == "wmt" else list(self.evaluation[task]["languages"])

    def task_languages(self, task, name):
        """The languages of `task` that model `name` embeds, in the task's order: all for a LASER variant (one
        encoder for every language); for a model of another family those it has an encoder for, none when it
        has none for English (every task pivots on it: BUCC pairs with it, XNLI and MLDoc train their
        classifier on it) or, for WMT, fewer than two."""
        langs = self.configured_task_languages(task)
        if name in self.variants:
            return langs
        if task == "tatoeba":
            return self.plan.model_tatoeba_languages(name)
        own = set(self.plan.encoder_languages(name))
        kept = [lang for lang in langs if lang in own]
        if "eng" not in own or (task == "wmt" and len(kept) < 2) or not kept:
            return []
        return kept

    def task_skip_reason(self, task, name):
        """Why `name` has no score on `task` ('' when it has): the table says it."""
        if self.task_languages(task, name):
            return ""
        own = self.plan.encoder_languages(name)
        return (f"no encoder for the task's languages ({', '.join(self.configured_task_languages(task))}); the model embeds "
                f"{', '.join(own)}")

    def task_tfidf_files(self, task):
        """The TF-IDF baseline's score files of a task (Europarl: one per direction of a compared model)."""
        if task == "europarl":
            return list(dict.fromkeys(self.europarl_tfidf_file(s, t) for name in self.task_compared_models()
                                      for s, t in self.europarl_directions(name)))
        return {"tatoeba": [f"{self.run}/eval/tfidf/tatoeba.json"], "un": [f"{self.run}/eval/tfidf/un.json"],
                "wmt": [f"{self.run}/eval/wmt/tfidf_scores.json"]}.get(task, [])

    def task_compared_models(self):
        names = self.plan.laser_models + self.plan.configured(list(self.family_models))
        return names if len(names) > 1 else []

    def compared_tasks(self):
        return [task for task in TASK_COMPARISONS if self.task_ready(task)] if self.task_compared_models() else []

    def task_score_files(self, task, name, init=False):
        """A model's score files of a task (none when it embeds none of its languages); init: at update 0
        (Tatoeba, WMT; a LASER model's Tatoeba scores hold both, one file per language)."""
        langs = self.task_languages(task, name)
        if not langs:
            return []
        if task == "tatoeba":
            if name in self.variants:
                return [f"{self.run}/tatoeba/{name}/scores/{lang}.json" for lang in langs]
            return [f"{self.run}/eval/models/{name}/tatoeba_{'encoder_init' if init else 'encoder'}.json"]
        if task == "un":
            return [f"{self.run}/eval/models/{name}/un_{'encoder_init' if init else 'encoder'}.json"]
        if task == "bucc":
            return [f"{self.run}/eval/bucc/{name}/scores/{xx}.json" for xx in langs]
        if task == "europarl":
            return [f"{self.run}/eval/models/{name}/europarl_{s}-{t}_{'encoder_init' if init else 'encoder'}.json"
                    for s, t in self.europarl_directions(name)]
        return [f"{self.run}/eval/{task}/{name}/{'init_scores' if init else 'scores'}.json"]

    def task_models_spec(self, task):
        """--models of compare-task: every compared model with its score files, or why it has none."""
        out = []
        for name in self.task_compared_models():
            family = self.declaration_of(name)
            out.append({"name": name, "family": family.name, "description": family.description(self, name),
                        "scores": self.task_score_files(task, name),
                        "init": self.task_score_files(task, name, init=True) if task in TASKS_WITH_INIT else [],
                        "skipped": family.task_skip_reason(self, task, name)})
        return out

    def xnli_classify_inputs(self, w):
        langs = self.task_languages("xnli", w.model)
        v = w.model
        files = {"train": [self.emb("xnli", "train-p", "eng", v), self.emb("xnli", "train-h", "eng", v),
                           f"{self.run}/eval/xnli/labels/train.eng.tsv"],
                 "dev": [self.emb("xnli", "dev-p", "eng", v), self.emb("xnli", "dev-h", "eng", v),
                         f"{self.run}/eval/xnli/labels/dev.eng.tsv"]}
        for lang in langs:
            files[f"test_{lang}"] = [self.emb("xnli", "test-p", lang, v), self.emb("xnli", "test-h", lang, v),
                                     f"{self.run}/eval/xnli/labels/test.{lang}.tsv"]
        return files

    def mldoc_classify_inputs(self, w):
        v = w.model
        files = {"train": [self.emb("mldoc", "train", "eng", v), f"{self.run}/eval/mldoc/docs/train.eng.tsv"],
                 "dev": [self.emb("mldoc", "dev", "eng", v), f"{self.run}/eval/mldoc/docs/dev.eng.tsv"]}
        for lang in self.task_languages("mldoc", v):
            files[f"test_{lang}"] = [self.emb("mldoc", "test", lang, v), f"{self.run}/eval/mldoc/docs/test.{lang}.tsv"]
        return files

    def variant_scores(self, variant):
        """The score files of every task that can run, for one LASER variant (a model: its name): the inputs of
        its metrics."""
        files = {"tatoeba": [f"{self.run}/tatoeba/{variant}/scores/{lang}.json" for lang in self.plan.tatoeba_seen]}
        if self.task_ready("bucc"):
            files["bucc"] = [f"{self.run}/eval/bucc/{variant}/scores/{xx}.json" for xx in self.evaluation["bucc"]["languages"]]
        for task in ("xnli", "mldoc", "wmt"):
            if self.task_ready(task):
                files[task] = [f"{self.run}/eval/{task}/{variant}/scores.json"]
        if self.flores:
            files["flores"] = [f"{self.flores_dir}/{variant}/scores.json"]
        return files

    # -- the tasks' command-line arguments (quoted), as the rules pass them
    @staticmethod
    def flores_prepare_args(input, output):
        """prepare-text's ``--lang --input --output`` (quoted) of each held-out FLORES text: the language is the
        file's suffix."""
        return " ".join(f"--lang {shlex.quote(src.rsplit('.', 1)[1])} --input {shlex.quote(src)} "
                        f"--output {shlex.quote(dst)}" for src, dst in zip(input.texts, output))

    def bucc_mine_args(self):
        """bucc-mine's settings: k, margin, mode, shard rows and the k-NN device, as configured."""
        b = self.evaluation["bucc"]
        return shlex.join(str(x) for x in ("--k", b["k"], "--margin", b["margin"], "--mode", b["mode"],
                                           "--shard-rows", b["shard_rows"], "--knn-device", self.evaluation["knn_device"]))

    def multinli_cap_args(self):
        """nli-texts' cap on the MultiNLI training pairs (and the LASER model's seed that draws them), where set."""
        cap = self.evaluation["xnli"].get("train_max_pairs")
        return shlex.join(["--max-pairs", str(cap), "--seed", str(self.laser_model["train"]["seed"])]) if cap else ""

    def wmt_emb_args(self, name, init=False):
        """wmt-similarity's ``--emb LANG FILE`` of model `name` (its encoder at update 0 with `init`), one per
        WMT language it embeds."""
        test_set = self.evaluation["wmt"]["test_set"]
        return " ".join(shlex.join(["--emb", lang, self.emb("wmt", test_set, lang, name, init=init)])
                        for lang in self.task_languages("wmt", name))

    def wmt_text_args(self, texts):
        """wmt-similarity's ``--text LANG FILE`` of the TF-IDF baseline: the WMT languages' texts, in order."""
        return shlex.join([x for lang, text in zip(self.wmt_languages(), texts) for x in ("--text", lang, text)])

    @staticmethod
    def wmt_table_scores_arg(input):
        """eval-table wmt's score files (the model's, at update 0, TF-IDF's); none without them (data absent)."""
        return shlex.join(["--scores", input.scores, "--init-scores", input.init,
                           "--tfidf-scores", input.tfidf]) if input else ""

    def classify_test_args(self, task, name, input):
        """xnli-classify's or mldoc-classify's ``--test LANG FILE...``: each test language of the task that model
        `name` embeds, with its input files ``test_<lang>``."""
        return " ".join(shlex.join(["--test", lang, *input[f"test_{lang}"]]) for lang in self.task_languages(task, name))
