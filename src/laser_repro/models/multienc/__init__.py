"""Multilingual sentence embeddings by NMT with one encoder and one decoder per language
(Schwenk & Douze 2017, "Learning Joint Multilingual Sentence Representations with Neural Machine
Translation"): model (:mod:`.model`), partial training paths (:mod:`.paths`), N-way parallel data
(:mod:`.data`), training (:mod:`.trainer`) and the exported encoder (:mod:`.export`)."""
