"""Partial training paths (Schwenk & Douze 2017, Section 2 and 4.2): which encoders and decoders
one homogeneous mini-batch uses.

Spec::

    {"sources": ["eng", "fra", "spa", "rus"],   # languages with an encoder
     "targets": ["ara"] | "all",                # fixed decoders, or 1:N into every other source
     "inputs": {"1": 0.9, "2": 0.05}}           # M:1 resampling coefficients per number of sources

A batch first draws its number of inputs m with probability proportional to its coefficient (Table 3
of the paper), then m distinct sources uniformly; their embeddings are averaged and decoded into the
fixed targets. With ``"targets": "all"`` (only m = 1) the one source is decoded into every other source
language, never into itself (no auto-encoder).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

SPEC_KEYS = ("sources", "targets", "inputs")


class TrainingPaths:
    """Validated path spec with :meth:`sample`."""

    def __init__(self, spec: Mapping):
        unknown = set(spec) - set(SPEC_KEYS)
        if unknown:
            raise ValueError(f"paths: unknown key(s) {sorted(unknown)} (known: {list(SPEC_KEYS)})")
        sources = spec.get("sources")
        if not sources or isinstance(sources, str) or len(set(sources)) != len(sources):
            raise ValueError(f"paths: 'sources' must be a non-empty list of distinct languages, not {sources!r}")
        self.sources = list(sources)
        targets = spec.get("targets")
        self.all_targets = targets == "all"
        if self.all_targets:
            if len(self.sources) < 2:
                raise ValueError(f"paths: 'targets': 'all' decodes into the other sources; {self.sources} has none")
            self.targets = None
        else:
            if not targets or isinstance(targets, str) or len(set(targets)) != len(targets):
                raise ValueError(f"paths: 'targets' must be 'all' or a non-empty list of distinct languages, "
                                 f"not {targets!r}")
            both = [lang for lang in targets if lang in self.sources]
            if both:
                raise ValueError(f"paths: 'targets' {both} are also 'sources': that trains an auto-encoder; "
                                 f"use 'targets': 'all' to decode into every other source")
            self.targets = list(targets)
        self.inputs = self._coefficients(spec.get("inputs", {1: 1.0}))

    def _coefficients(self, inputs: Mapping) -> dict[int, float]:
        if not isinstance(inputs, Mapping) or not inputs:
            raise ValueError(f"paths: 'inputs' must map numbers of sources to coefficients, not {inputs!r}")
        coefficients = {}
        for key, value in inputs.items():
            try:
                m = int(key)
            except (TypeError, ValueError):
                raise ValueError(f"paths: 'inputs' key {key!r} is not a number of sources") from None
            if not 1 <= m <= len(self.sources):
                raise ValueError(f"paths: 'inputs' key {key!r}: between 1 and {len(self.sources)} sources "
                                 f"({self.sources})")
            if self.all_targets and m > 1:
                raise ValueError(f"paths: 'inputs' key {key!r}: 'targets': 'all' (1:N) takes one source per batch")
            if not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"paths: 'inputs' key {key!r}: the coefficient must be a number >= 0, not {value!r}")
            if m in coefficients:
                raise ValueError(f"paths: 'inputs' key {key!r}: {m} sources given twice")
            coefficients[m] = float(value)
        if sum(coefficients.values()) <= 0:
            raise ValueError(f"paths: 'inputs' {dict(inputs)}: the coefficients sum to 0")
        return dict(sorted(coefficients.items()))

    def probabilities(self) -> dict[int, float]:
        """Probability of a batch with m sources (the normalised coefficients)."""
        total = sum(self.inputs.values())
        return {m: c / total for m, c in self.inputs.items()}

    def sample(self, rng: np.random.Generator) -> tuple[list[str], list[str]]:
        """The ``(sources, targets)`` of one batch; sources in the order of the spec."""
        probabilities = self.probabilities()
        m = int(rng.choice(list(probabilities), p=list(probabilities.values())))
        chosen = sorted(rng.choice(len(self.sources), size=m, replace=False))
        sources = [self.sources[i] for i in chosen]
        if self.all_targets:
            return sources, [lang for lang in self.sources if lang not in sources]
        return sources, list(self.targets)

    def encoder_languages(self) -> list[str]:
        return list(self.sources)

    def decoder_languages(self) -> list[str]:
        return list(self.sources) if self.all_targets else list(self.targets)

    def model_languages(self) -> dict[str, list[str]]:
        """``{"encoders": [...], "decoders": [...]}`` for :func:`laser_repro.models.multienc.model.build_model`."""
        return {"encoders": self.encoder_languages(), "decoders": self.decoder_languages()}

    def dev_pairs(self) -> list[tuple[str, str]]:
        """The 1:1 (source, target) pairs the dev loss covers: every encoder into every other decoder."""
        return [(s, t) for s in self.encoder_languages() for t in self.decoder_languages() if s != t]
