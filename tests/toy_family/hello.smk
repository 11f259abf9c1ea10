# Family hello (tests/test_toy_family.py): trained on the Moses-preprocessed lines of its N-way data through
# the shared launcher; export, similarity error and curves come from encoders.smk.
import os

rule hello_train:
    input:
        text=lambda w: [f"{W.run}/nway/{W.family_models[w.model]['data']}/tok/{split}.{lang}"
                        for lang in W.plan.encoder_languages(w.model) for split in ("train", "valid")],
    output:
        final="results/{run}/models/{model}/checkpoint_final.pt",
        initial="results/{run}/models/{model}/checkpoint_init.pt",
        record="results/{run}/models/{model}/model_record.json",
        curves="results/{run}/models/{model}/curves.json",
    log:
        "results/{run}/logs/{model}/train.log",
    wildcard_constraints:
        model=alternatives(W.models_of("hello")),
    params:
        data=lambda w: f"{W.run}/nway/{W.family_models[w.model]['data']}",
        save_dir=lambda w, output: os.path.join(os.path.dirname(output.final), "checkpoints"),
        settings=lambda w: W.shell_quote_json(W.model_train_settings(w.model)),
    shell:
        W.logged("laser-repro train --family hello --data {params.data:q} --save-dir {params.save_dir:q}"
                 " --final {output.final:q} --initial {output.initial:q} --record {output.record:q}"
                 " --curves {output.curves:q} --threads {threads} --settings {params.settings}",
                 keys=["models", "nway_data"])


rule hello:
    input:
        W.family_targets("hello"),
