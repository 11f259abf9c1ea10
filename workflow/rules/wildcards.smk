# The wildcards' patterns (a variant: exactly the LASER variants of the config).
from laser_repro.workflow.run import alternatives


wildcard_constraints:
    run=W.run_name,
    src="[a-z]{3}",
    tgt="[a-z]{3}",
    lang="[a-z]{3}",
    side="[a-z]{3}",
    corpus="[A-Za-z0-9_-]+",
    k="[0-9]+",
    n="[0-9]+",
    variant=alternatives(W.plan.variants),
