"""Reproduction of LASER (Artetxe & Schwenk, TACL 2019) as a Snakemake + fairseq pipeline."""

__version__ = "0.1.0"
