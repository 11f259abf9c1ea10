"""Reporting: the paper tables and the ablation tables."""
