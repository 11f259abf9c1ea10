"""The tables' model specs: which score, record and benchmark files each table reads, per model and seed."""
from __future__ import annotations

import os
import shlex

from laser_repro.models import registry
from laser_repro.reporting.seeds import REPLICATES as SEED_REPLICATES


class Tables:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def bisent2vec_tables(self):
        """The tables of paper 002 this run writes: Tables 1, 3, 4 with their tasks, the pairs table always."""
        with_results = any(self.bisent2vec_words_directions(n) or self.europarl_directions(n) for n in self.bisent2vec)
        return [*(["table1", "table3", "table4"] if with_results else []), "pairs"]

    def bisent2vec_result_files(self, name):
        """A Bi-Sent2Vec model's result files in the tables' model spec."""
        words, sentences = self.bisent2vec_words_directions(name), self.europarl_directions(name)
        tatoeba = bool(self.plan.model_tatoeba_languages(name))
        return {"words": self._direction_files(name, "words", words, "encoder"),
                "words_init": self._direction_files(name, "words", words, "encoder_init"),
                "sentences": self._direction_files(name, "europarl", sentences, "encoder"),
                "sentences_init": self._direction_files(name, "europarl", sentences, "encoder_init"),
                "similarity": f"{self.run}/eval/models/{name}/similarity.json",
                "tatoeba": f"{self.run}/eval/models/{name}/tatoeba_encoder.json" if tatoeba else None,
                "tatoeba_init": f"{self.run}/eval/models/{name}/tatoeba_encoder_init.json" if tatoeba else None}

    def bisent2vec_table_models(self):
        """The models argument of bisent2vec-tables (every result file by model and direction, and by seed)."""
        out = []
        for name in self.tabled(self.bisent2vec):
            m = self.bisent2vec[name]
            out.append({"name": name, "description": m.get("description", name), "pair": list(m["pair"]),
                        "ngrams": int(m["model"]["ngrams"]), **self.bisent2vec_result_files(name),
                        **self.seed_replicate_specs(name, self.bisent2vec_result_files)})
        return out

    def _baselines(self):
        """direction -> identical-strings file, direction -> Europarl TF-IDF file: those written beside the
        direction's first model (the baselines do not depend on the model, only on its vocabulary and data)."""
        identical, tfidf = {}, {}
        for name in self.bisent2vec:
            for s, t in self.bisent2vec_words_directions(name):
                identical.setdefault(f"{s}-{t}", f"{self.run}/eval/models/{name}/words_{s}-{t}_identical.json")
            for s, t in self.europarl_directions(name):
                tfidf.setdefault(f"{s}-{t}", self.europarl_tfidf_file(s, t))
        return identical, tfidf

    def bisent2vec_table_inputs(self, w):
        models = [self.bisent2vec_result_files(name) for name in self.bisent2vec]  # seed replicates included
        files = [p for m in models for key in ("words", "words_init", "sentences", "sentences_init") for p in m[key].values()]
        files += [m[key] for m in models for key in ("similarity", "tatoeba", "tatoeba_init") if m[key]]
        identical, tfidf = self._baselines()
        datas = sorted({m["data"] for m in self.bisent2vec.values()})
        return {"results": files, "identical": list(identical.values()), "europarl_tfidf": list(tfidf.values()),
                "flores_tfidf": [f"{self.run}/eval/nway/{d}/tfidf.json" for d in datas],
                "tatoeba_tfidf": [f"{self.run}/eval/tfidf/tatoeba.json"] if self.family_tatoeba_languages() else []}

    def bisent2vec_baseline_args(self, input):
        identical, tfidf = self._baselines()
        args = [f"--identical-strings {shlex.quote(f'{d}={p}')}" for d, p in identical.items()]
        args += [f"--tfidf {shlex.quote(f'{d}={p}')}" for d, p in tfidf.items()]
        args += [f"--tfidf-flores {shlex.quote(p)}" for p in input.flores_tfidf[:1]]
        args += [f"--tfidf-tatoeba {shlex.quote(p)}" for p in input.tatoeba_tfidf]
        return " ".join(args)

    def labse_result_files(self, name):
        """A LaBSE model's result files in labse-table2's model spec."""
        return {"tatoeba": f"{self.run}/eval/models/{name}/tatoeba_encoder.json" if self.labse_tatoeba_languages() else None,
                "tatoeba_init": f"{self.run}/eval/models/{name}/tatoeba_encoder_init.json" if self.labse_tatoeba_languages() else None,
                "un": f"{self.run}/eval/models/{name}/un_encoder.json" if self.labse_un() else None,
                "un_init": f"{self.run}/eval/models/{name}/un_encoder_init.json" if self.labse_un() else None}

    def compare_columns(self):
        """The columns of the FLORES comparison, in order: column name -> {"family", "description", "scores": [files]}.
        One column per model, unless its family puts models together (laser_repro.models.declaration:
        compare_column; the Bi-Sent2Vec models, one per en-xx pair, are one column per n-gram setting)."""
        out = {}
        for name, f in self.plan.compared_models.items():
            family = self.declaration_of(name)
            # the score files of each seed (config `seeds`), this model's first
            by_seed = [family.heldout_scores_file(self, r) for r in self.plan.seed_replicates(name)]
            key, description = family.compare_column(self, name)
            if key in out:
                out[key]["description"] += f" {name}"
            else:
                out[key] = {"family": f, "description": description + (f" {name}" if key != name else ""), "scores": []}
            column = out[key]
            column["scores"].append(by_seed[0])
            for k, path in enumerate(by_seed[1:]):
                replicates = column.setdefault(SEED_REPLICATES, [])
                if len(replicates) <= k:
                    replicates.append({"scores": []})
                replicates[k]["scores"].append(path)
        return out

    def compare_models(self):
        """--models of compare-flores: each column's name, family, description and seed replicates' files."""
        return [{"name": n, "family": c["family"], "description": c["description"],
                 **({SEED_REPLICATES: c[SEED_REPLICATES]} if SEED_REPLICATES in c else {})}
                for n, c in self.compare_columns().items()]

    def multienc_table_models(self):
        """--models of multienc-tables (paper 004's Tables 1-4): each configured model's rows of the paper and
        its seed replicates' similarity files."""
        return [{"name": name, "description": self.multienc[name].get("description", name),
                 "paper_rows": list(self.multienc[name]["paper_rows"]),
                 **self.seed_replicate_specs(name, lambda r: {"similarity": self.heldout_scores_file(r)})}
                for name in self.tabled(self.multienc)]

    def labse_table_models(self):
        """--models of labse-table2 (paper 003's Table 2): each configured model's row, whether it was
        pre-trained, its result files and its seed replicates'."""
        return [{"name": name, "description": self.labse[name].get("description", name),
                 "paper_row": self.labse[name]["paper_row"], "pretrained": self.labse[name]["pretrain"]["enabled"],
                 **self.labse_result_files(name), **self.seed_replicate_specs(name, self.labse_result_files)}
                for name in self.tabled(self.labse)]

    def labse_table2_inputs(self, w=None):
        """labse_table2's inputs: each LaBSE model's Tatoeba and UN scores (its encoder and at update 0) and the
        TF-IDF baselines', where those tasks are configured, and the models' records."""
        both = ("encoder", "encoder_init")
        tatoeba, un = self.labse_tatoeba_languages(), self.labse_un()
        return {"tatoeba": [f"{self.run}/eval/models/{name}/tatoeba_{e}.json" for name in self.labse for e in both]
                if tatoeba else [],
                "tfidf": [f"{self.run}/eval/tfidf/tatoeba.json"] if tatoeba else [],
                "un": [f"{self.run}/eval/models/{name}/un_{e}.json" for name in self.labse for e in both] if un else [],
                "un_tfidf": [f"{self.run}/eval/tfidf/un.json"] if un else [],
                "records": [self.model_record_file(name) for name in self.labse]}

    @staticmethod
    def labse_tfidf_args(input):
        """labse-table2's TF-IDF baselines (quoted): its Tatoeba and UN scores, where labse_table2 has them."""
        return " ".join([*([f"--tfidf-tatoeba {shlex.quote(input.tfidf[0])}"] if input.tfidf else []),
                         *([f"--tfidf-un {shlex.quote(input.un_tfidf[0])}"] if input.un_tfidf else [])])

    def compare_scores(self, heldout):
        """The first seed's score files of the FLORES comparison's columns whose family's held-out scores are
        of format ``heldout`` (laser_repro.models.declaration.HELDOUT_FORMATS), as (column, file) pairs."""
        return [(n, p) for n, c in self.compare_columns().items()
                if registry.declaration(c["family"]).heldout == heldout for p in c["scores"]]

    def reproduces_model(self, name, run=None):
        """A model of a claim for --claims: its score and training benchmark files per seed, and its shared
        pre-training's benchmark (LaBSE's MLM + TLM; shared by the seeds). ``run``: another run's model of that
        name (the same config with an overlay: the same seeds and file layout, under results/<run>/)."""
        family = self.declaration_of(name)
        spec = {"name": name, "family": family.name,
                "runs": [{"seed": seed, "scores": family.heldout_scores_file(self, trained), "benchmark": self.train_benchmark(trained)}
                         for seed, trained in self.plan.seed_runs(name).items()],
                "pretraining": family.pretraining(self, name)}
        if run is None:
            return spec
        moved = {**spec, "name": f"{name} (run {run})",
                 "runs": [{k: self.in_run(v, run) if k != "seed" else v for k, v in r.items()} for r in spec["runs"]]}
        if spec["pretraining"]:
            moved["pretraining"] = {**spec["pretraining"], "benchmark": self.in_run(spec["pretraining"]["benchmark"], run)}
        return moved

    def in_run(self, path, run):
        """This run's file ``path`` (results/<this run>/...) as another run's (results/<run>/...)."""
        head = f"{self.run}/"
        if not path.startswith(head):
            raise ValueError(f"{path} is not a file of run {self.run_name}")
        return f"results/{run}/{path[len(head):]}"

    def _claim_sides(self, claim):
        """{side: [model specs]} of a configured claim."""
        return {key: [self.reproduces_model(n, claim["runs"][key]) for n in claim[key]] for key in ("better", "worse")}

    def _other_run_files(self, claim):
        """The files of a claim's models in other runs (scores, benchmarks, records), in order."""
        files = []
        for key in ("better", "worse"):
            run = claim["runs"][key]
            for name in claim[key] if run is not None else ():
                m = self.reproduces_model(name, run)
                files += [f for r in m["runs"] for f in (r["scores"], r["benchmark"])]
                files += [m["pretraining"]["benchmark"]] if m["pretraining"] else []
                files += [self.in_run(self.model_record_file(t), run) for t in self.plan.seed_runs(name).values()]
        return files

    def reproduces_absent(self):
        """(claim, why) of the claims whose other run has not built every file they read (not measured yet:
        no rule of this run builds another run's files)."""
        out = []
        for claim in self.plan.reproduces:
            missing = [f for f in self._other_run_files(claim) if not os.path.exists(f)]
            if missing:
                runs = sorted({r for r in claim["runs"].values() if r})
                out.append((claim["claim"], f"run {', '.join(runs)} has not built {missing[0]}"
                                            f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}: build it "
                                            f"with its own config (this config, its overlay and run_name), then "
                                            f"this table again"))
        return out

    def _measured(self):
        absent = {claim for claim, _ in self.reproduces_absent()}
        return [c for c in self.plan.reproduces if c["claim"] not in absent]

    def reproduces_claims(self):
        """--claims: the measurable claims, each side's model specs."""
        return [{"claim": c["claim"], **self._claim_sides(c)} for c in self._measured()]

    def reproduces_absent_args(self):
        """reproduces-table's --absent CLAIM WHY of the claims not measured, as a list (the rule quotes each item)."""
        return [x for claim, why in self.reproduces_absent() for x in ("--absent", claim, why)]

    def reproduces_models(self):
        """Every trained model of this run in the measurable claims (seed replicates included)."""
        return list(dict.fromkeys(trained for c in self._measured() for key in ("better", "worse") if c["runs"][key] is None
                                  for name in c[key] for trained in self.plan.seed_runs(name).values()))

    def reproduces_files(self, kind):
        """The "scores" or "benchmark" files of the measurable claims' models (pre-trainings' benchmarks too);
        "records": the other runs' model records (this run's are the --model-records)."""
        if kind == "records":
            return list(dict.fromkeys(f for c in self._measured() for f in self._other_run_files(c)
                                      if f.endswith("model_record.json")))
        models = [m for c in self.reproduces_claims() for key in ("better", "worse") for m in c[key]]
        files = [r[kind] for m in models for r in m["runs"]]
        if kind == "benchmark":
            files += [m["pretraining"]["benchmark"] for m in models if m["pretraining"]]
        return list(dict.fromkeys(files))

    def table_rows(self, table):
        """--rows of an ablation table: label, variant name, model trained, the paper's setting key, metrics file
        (or why there is none)."""
        rows = []
        for r in self.plan.ablation_rows[self.table_ablation[table]]:
            row = {"label": r.label, "variant": r.name, "model": r.variant.name, "setting": r.setting, "metrics": None,
                   "note": ""}
            if self.buildable(r.variant.name):
                row["metrics"] = f"{self.metrics_dir}/{r.variant.name}.json"
                replicates = self.plan.seed_replicates(r.variant.name)[1:]
                if replicates:  # mean ± sd over the seeds (laser_repro.reporting.seeds)
                    row[SEED_REPLICATES] = [{"metrics": f"{self.metrics_dir}/{name}.json"} for name in replicates]
            else:
                row["note"] = f"not trained: the NLI multitask needs MultiNLI. {self.task_missing.get('xnli') or ''}".strip()
            rows.append(row)
        return rows

    def table_models(self, table):
        """The trained models of an ablation table's rows, with their seed replicates."""
        return [name for row in self.table_rows(table) if row["metrics"] for name in self.plan.seed_replicates(row["model"])]

    def table_metrics(self, table):
        """An ablation table's metrics files: each row's with a trained model, then its seed replicates'."""
        return [path for row in self.table_rows(table) if row["metrics"]
                for path in [row["metrics"], *(r["metrics"] for r in row.get(SEED_REPLICATES, []))]]

    def flores_languages_arg(self):
        """variant-metrics' ``--flores-languages`` (quoted): the held-out FLORES languages the model was trained
        on ('' without FLORES)."""
        if not self.flores:
            return ""
        return shlex.join(["--flores-languages", *(lang for lang in self.plan.flores_languages
                                                   if lang in self.plan.trained_languages)])

    def missing_tasks(self):
        """--missing-tasks of an ablation table: {task: why it has no scores in this run}."""
        out = {}
        for task in ("bucc", "xnli", "mldoc", "wmt"):
            if task not in self.evaluation:
                out[task] = f"not configured: add evaluation.{task} to the config (see config/paper.yaml)"
            elif self.task_missing.get(task):
                out[task] = self.task_missing[task]
        if not self.flores:
            out["flores"] = "not configured: the config has no flores_eval"
        return out
