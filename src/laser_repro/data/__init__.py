"""Training data: corpora, preprocessing, sharding, BPE.

Also holds the package data files (``languages.tsv``, ``paper_table*.csv``), read with
``importlib.resources.files("laser_repro.data")``.
"""
