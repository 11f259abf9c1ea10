"""Shared plumbing: text I/O, downloads, archives, the language registry, SLURM resources of a job, user errors."""
