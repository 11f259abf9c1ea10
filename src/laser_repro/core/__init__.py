"""Shared plumbing: text I/O, downloads, archives, the language registry, process launch."""
