# Stage 11: the paper's ablations (section 5). Every variant of config `ablations` is a model of its own
# (rule laser_train with {model}), evaluated on every task like the base model; its scores are summed up in
# results/{run}/metrics/{model}.json and set side by side in Tables 5 (depth), 6 (NLI multitask) and
# 7 (number of training languages), with a figure each. `snakemake variant_<name>` builds one variant.
import shlex

rule variant_metrics:
    input:
        unpack(lambda w: W.variant_scores(w.model)),
    output:
        "results/{run}/metrics/{model}.json",
    log:
        "results/{run}/logs/{model}/metrics.log",
    params:
        files=lambda w, input: " ".join(f"--{task} {' '.join(map(shlex.quote, input[task]))}" for task in input.keys()),
        flores_languages=lambda w: W.flores_languages_arg(),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro variant-metrics --variant {wildcards.model:q} {params.files} {params.flores_languages}"
               " --output {output:q}")


rule metrics_summary:
    input:
        [f"{W.metrics_dir}/{name}.json" for name in W.variants if W.buildable(name)],
    output:
        "results/{run}/metrics.json",
    log:
        "results/{run}/logs/metrics_summary.log",
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro metrics-summary --metrics {input:q} --output {output:q}")


rule ablation_table:
    input:
        metrics=lambda w: W.table_metrics(int(w.n)),
        records=lambda w: [W.model_record_file(name) for name in W.table_models(int(w.n))],
    output:
        md="results/tables/{run}/table{n}.md",
        csv=report("results/tables/{run}/table{n}.csv", category="Ablations", caption="../report/ablation.rst"),
        tex="results/tables/{run}/table{n}.tex",
        png=report("results/figures/{run}/table{n}.png", category="Ablations", caption="../report/ablation.rst"),
    log:
        "results/{run}/logs/table{n}.log",
    wildcard_constraints:
        n="|".join(str(n) for n in W.table_ablation) or "none",
    params:
        rows=lambda w: W.shell_quote_json(W.table_rows(int(w.n))),
        missing=W.shell_quote_json(W.missing_tasks()),
        records=lambda w: W.model_records_arg(W.table_models(int(w.n))),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro ablation-table --table {wildcards.n:q} --run-name {wildcards.run:q} --rows {params.rows}"
               " --missing-tasks {params.missing} --md {output.md:q} --csv {output.csv:q} --png {output.png:q}"
               " --model-records {params.records:q}")


rule ablations:
    input:
        expand("results/tables/{run}/table{n}.{ext}", run=W.cfg["run_name"], n=sorted(W.table_ablation), ext=["md", "csv", "tex"]),
        expand("results/figures/{run}/table{n}.png", run=W.cfg["run_name"], n=sorted(W.table_ablation)),


# One target per variant name (also those equal to the base model): its training, export, evaluation
# and metrics, nothing of the other variants.
for _name, _model in W.plan.variant_aliases.items():
    if W.buildable(_model):

        rule:
            name:
                f"variant_{_name}"
            input:
                f"{W.metrics_dir}/{_model}.json",
