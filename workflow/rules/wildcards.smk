# The wildcards' patterns. {model} names a trained model's directory, results/<run>/models/<model>/: in a rule
# without its own constraint, a LASER model (the config's LASER models, their ablation variants and seed
# replicates); the other families' rules constrain it to their models (W.models_of(family)).
from laser_repro.workflow.run import alternatives


wildcard_constraints:
    run=alternatives([W.run_name]),
    src="[a-z]{3}",
    tgt="[a-z]{3}",
    lang="[a-z]{3}",
    side="[a-z]{3}",
    corpus="[A-Za-z0-9_-]+",
    k="[0-9]+",
    n="[0-9]+",
    model=alternatives(W.plan.variants),
