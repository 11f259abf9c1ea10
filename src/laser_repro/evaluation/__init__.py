"""Evaluation tasks: mining, classifiers, Tatoeba, FLORES, xsim, BUCC, XNLI, MLDoc, WMT, curves."""
