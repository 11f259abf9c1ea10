# Model families on the same data (config/compare.yaml): one FLORES xsim table with the LASER model and
# every other model validated on the held-out FLORES lines of flores_eval, beside TF-IDF and each
# model at update 0 (laser_repro.reporting.compare).


def compared_models():
    """name -> family of the models in the comparison: LASER's base model, then every multienc model
    whose validation lines are flores_eval's held-out lines of the same corpus (the same sentences)."""
    out = {"base": "laser"} if LASER else {}
    for name, m in MULTIENC.items():
        d = NWAY[m["data"]]
        if d["corpus"] == FLORES["corpus"] and list(d["valid"].get("heldout_lines", [])) == list(FLORES["heldout_lines"]):
            out[name] = "multienc"
    return out


def compare_languages():
    """The FLORES languages of flores_eval (a model without an encoder for one shows –)."""
    return list(PLAN.flores_languages)


def compare_scores(family):
    return lambda w: {name: f"{RUN}/flores/{name}/scores.json" if f == "laser" else f"{RUN}/models/{name}/similarity.json"
                      for name, f in compared_models().items() if f == family}


rule compare_flores:
    input:
        laser=lambda w: list(compare_scores("laser")(w).values()),
        multienc=lambda w: list(compare_scores("multienc")(w).values()),
        tfidf=f"{RUN}/flores/tfidf.json",
    output:
        md="results/tables/{run}/compare_flores.md",
        csv=report("results/tables/{run}/compare_flores.csv", category="Similarity search", caption="../report/table.rst"),
    log:
        "results/{run}/logs/compare_flores.log",
    params:
        laser=lambda w: [f"{n}={p}" for n, p in compare_scores("laser")(w).items()],
        multienc=lambda w: [f"{n}={p}" for n, p in compare_scores("multienc")(w).items()],
        models=lambda w: shell_quote_json([{"name": name, "family": f, "description": "LASER (this run's model section)"
                                            if f == "laser" else MULTIENC[name].get("description", name)}
                                           for name, f in compared_models().items()]),
        langs=lambda w: compare_languages(),
        heldout=lambda w: list(FLORES["heldout_lines"]),
        run=CFG["run_name"],
    conda:
        "../../envs/laser.yaml"
    shell:
        logged("laser-repro compare-flores --laser {params.laser:q} --multienc {params.multienc:q}"
               " --models {params.models} --tfidf {input.tfidf:q} --langs {params.langs:q}"
               " --heldout {params.heldout:q} --run-name {params.run:q} --md {output.md:q} --csv {output.csv:q}")
