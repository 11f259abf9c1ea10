# Model families on the same data (config/compare.yaml): one FLORES xsim table with the LASER model and
# every other model validated on the held-out FLORES lines of flores_eval, beside TF-IDF and each
# model at update 0 (laser_repro.reporting.compare); what the run reproduces (config `reproduces`).
import shlex

from laser_repro.reporting.seeds import REPLICATES as SEED_REPLICATES
from laser_repro.workflow.tasks import TASK_COMPARISONS



rule compare_flores:
    input:
        laser=lambda w: [p for _, p in W.compare_scores("flores-xsim")],
        similarity=lambda w: [p for _, p in W.compare_scores("similarity")],
        tfidf=f"{W.run}/flores/tfidf.json",
        replicates=lambda w: [p for c in W.compare_columns().values() for r in c.get(SEED_REPLICATES, []) for p in r["scores"]],
        records=lambda w: [W.model_record_file(name) for name in W.with_replicates(W.plan.compared_models)],
    output:
        md="results/tables/{run}/compare_flores.md",
        csv=report("results/tables/{run}/compare_flores.csv", category="Similarity search", caption="../report/table.rst"),
        tex="results/tables/{run}/compare_flores.tex",
    log:
        "results/{run}/logs/compare_flores.log",
    params:
        laser=lambda w: [f"{n}={p}" for n, p in W.compare_scores("flores-xsim")],
        similarity=lambda w: [f"{n}={p}" for n, p in W.compare_scores("similarity")],
        models=lambda w: W.shell_quote_json(W.compare_models()),
        langs=lambda w: list(W.plan.flores_languages),
        heldout=lambda w: list(W.flores["heldout_lines"]),
        run=W.cfg["run_name"],
        records=lambda w: W.model_records_arg(W.with_replicates(W.plan.compared_models)),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro compare-flores --laser {params.laser:q} --similarity {params.similarity:q}"
               " --models {params.models} --tfidf {input.tfidf:q} --langs {params.langs:q}"
               " --heldout {params.heldout:q} --run-name {params.run:q} --md {output.md:q} --csv {output.csv:q}"
               " --model-records {params.records:q}")


# What this run reproduces (config `reproduces`): per claim of the papers, the two models' held-out FLORES
# error over the seeds, their inits, a verdict and the training wall time (laser_repro.reporting.reproduces).
rule reproduces_table:
    input:
        scores=lambda w: W.reproduces_files("scores"),
        benchmarks=lambda w: W.reproduces_files("benchmark"),
        tfidf=f"{W.run}/flores/tfidf.json",
        records=lambda w: [W.model_record_file(name) for name in W.reproduces_models()],
        other_records=lambda w: W.reproduces_files("records"),  # another run's models (better_run / worse_run)
    output:
        md="results/tables/{run}/reproduces.md",
        csv=report("results/tables/{run}/reproduces.csv", category="Similarity search", caption="../report/table.rst"),
        tex="results/tables/{run}/reproduces.tex",
    log:
        "results/{run}/logs/reproduces_table.log",
    params:
        claims=lambda w: W.shell_quote_json(W.reproduces_claims()),
        langs=lambda w: list(W.plan.flores_languages),
        heldout=lambda w: list(W.flores["heldout_lines"]),
        run=W.cfg["run_name"],
        records=lambda w: W.model_records_arg(W.reproduces_models()),
        absent=lambda w: W.reproduces_absent_args(),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro reproduces-table --claims {params.claims} --tfidf {input.tfidf:q} --langs {params.langs:q}"
               " --heldout {params.heldout:q} --run-name {params.run:q} --md {output.md:q} --csv {output.csv:q}"
               " --model-records {params.records:q} {params.absent:q}")


# One table per evaluation task with a column group per model (the LASER model and every model of another
# family as configured, each scored on the languages it embeds), beside the task's TF-IDF baseline where it
# has one (laser_repro.reporting.task_compare). Built when the config has two models or more
# (its input functions: laser_repro.workflow.tasks).
rule compare_task:
    input:
        scores=lambda w: [p for m in W.task_models_spec(w.task) for p in (*m["scores"], *m["init"])],
        tfidf=lambda w: W.task_tfidf_files(w.task),
        # the records of the models the table shows (a model that embeds none of the task's languages is a
        # "skipped" row: its record is neither read nor waited for, as it may not be trained yet)
        records=lambda w: [W.model_record_file(m["name"]) for m in W.task_models_spec(w.task) if m["scores"]],
    output:
        md="results/tables/{run}/compare_{task}.md",
        csv=report("results/tables/{run}/compare_{task}.csv", category="Model comparison", caption="../report/table.rst"),
        tex="results/tables/{run}/compare_{task}.tex",
    log:
        "results/{run}/logs/compare_{task}.log",
    wildcard_constraints:
        task="|".join(TASK_COMPARISONS),
    params:
        models=lambda w: W.shell_quote_json(W.task_models_spec(w.task)),
        langs=lambda w: W.configured_task_languages(w.task),
        tfidf=lambda w: shlex.join(["--tfidf", *W.task_tfidf_files(w.task)]) if W.task_tfidf_files(w.task) else "",
        run=W.cfg["run_name"],
        records=lambda w: W.model_records_arg([m["name"] for m in W.task_models_spec(w.task) if m["scores"]]),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro compare-task --task {wildcards.task:q} --run-name {params.run:q} --languages {params.langs:q}"
               " --models {params.models} {params.tfidf} --md {output.md:q} --csv {output.csv:q}"
               " --model-records {params.records:q}")
