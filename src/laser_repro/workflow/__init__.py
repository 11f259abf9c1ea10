"""The workflow layer: what the Snakemake rules ask of a run (paths, input functions, targets, resources, the
provenance-recording shell command), as one object, :class:`laser_repro.workflow.run.WorkflowRun`. The rule
files (workflow/rules/*.smk) hold rules and imports only."""
