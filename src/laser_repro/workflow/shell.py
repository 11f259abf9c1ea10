"""The rules' shell commands with their provenance: a rule's command is one ``laser-repro SUBCOMMAND ...``, which
records its provenance in the same process (``laser-repro --provenance-spec FILE SUBCOMMAND ...``), FILE being the
job's spec (rule name, inputs, outputs, log, config values, raw sources) written when the job is scheduled."""
from __future__ import annotations

import json
import shlex

from laser_repro.provenance import spec_files


def shell_quote_json(data) -> str:
    """JSON for one shell argument."""
    return shlex.quote(json.dumps(data, sort_keys=True))


class RecordedCommand(str):
    """The shell command of a rule whose `laser-repro` process records its provenance (see
    :meth:`Shell.logged`), with `settings` (the config values it depends on) and `sources` (whether
    params.sources names raw inputs)."""

    def __new__(cls, shell, settings, sources):
        self = super().__new__(cls, shell)
        self.settings, self.sources = settings, sources
        return self

    def __getnewargs__(self):  # copies (`use rule ... with`) keep the attributes
        return str(self), self.settings, self.sources


def provenance_spec(rule_, settings, sources):
    """params.provenance_spec of a rule: the file of one job's rule name, inputs, outputs, log, config and
    `PATH=URL` sources (content-addressed under .snakemake/laser-repro/, laser_repro.provenance.spec_files)."""
    source_items = getattr(rule_.params.get("sources"), "items", None) if sources else None
    if sources and source_items is None:
        raise ValueError(f"{rule_.name}: logged(sources=True) needs params.sources=W.raw_sources or W.downloaded_from(...)")

    def param(wildcards, input, output):
        logs = rule_.expand_log(dict(wildcards.items()))
        bench = rule_.expand_benchmark(dict(wildcards.items())) if rule_.benchmark else None
        spec = {"rule": rule_.name, "inputs": list(input), "outputs": list(output),
                "log": str(logs[0]) if logs else None, "benchmark": str(bench) if bench else None,
                "config": settings,
                "sources": source_items(wildcards, input, output) if source_items else []}
        return spec_files.write_content_file(f"provenance-{rule_.name}", spec)

    return param


class Shell:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    shell_quote_json = staticmethod(shell_quote_json)

    def config_value(self, key):
        """A dotted config key's value (None when absent)."""
        value = self.cfg
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def laser_keys(self, *sections):
        """The dotted config keys of LASER settings, as the config writes them: "preprocess.lowercase" ->
        "bitext_data.<data>.preprocess.lowercase", "embed.max_tokens" -> "models.<base>.embed.max_tokens"
        (laser_repro.config.plan.LaserSetup.key; the section names themselves without a LASER model)."""
        setup = self.plan.laser_setup
        return [setup.key(s) if setup else s for s in sections]

    def laser_model_keys(self):
        """The config keys of every LASER model's entry (what LASER's training depends on, ablations included)."""
        return [f"models.{name}" for name in self.plan.laser_models]

    def logged(self, cmd, keys=(), sources=False):
        """The shell command of a rule: `cmd`, one ``laser-repro SUBCOMMAND ...``, with its stdout and stderr
        sent to the rule's log and, once it succeeded, a provenance record beside every output
        (<output>.prov.json: inputs with sha256, the config `keys` the rule depends on, code and library
        versions, host, start/end; laser_repro.provenance). `sources`: the rule reads raw files; their public
        URLs are recorded (params.sources). The record is written by the same process (``laser-repro
        --provenance-spec FILE``, FILE: params.provenance_spec, set by :meth:`name_recorded_rules`)."""
        if not cmd.startswith("laser-repro ") or any(c in cmd for c in "();|&<>`$\n"):
            raise ValueError(f"logged: a rule's command is one `laser-repro SUBCOMMAND ...` (no shell operators), "
                             f"so that its process records the provenance; got {cmd!r}")
        settings = {key: self.config_value(key) for key in keys}
        return RecordedCommand(f"laser-repro --provenance-spec {{params.provenance_spec:q}}"
                               f" {cmd.removeprefix('laser-repro ')} > {{log:q}} 2>&1", settings, sources)

    @staticmethod
    def name_recorded_rules(rules):
        """Set params.provenance_spec of every rule whose command records its provenance (`rules`: the
        workflow's, once all are defined)."""
        for rule_ in rules:
            if isinstance(rule_.shellcmd, RecordedCommand):
                rule_.set_params(provenance_spec=provenance_spec(rule_, rule_.shellcmd.settings, rule_.shellcmd.sources))
