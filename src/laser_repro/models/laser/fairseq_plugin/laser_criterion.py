"""``laser_multitask`` criterion: translation cross-entropy plus the NLI objective.

Translation batches: exactly fairseq's ``cross_entropy`` (summed token NLL, sample_size =
target tokens).  NLI batches (``sample["task"] == "nli"``, see the ``laser_multilingual`` task):
the summed cross-entropy of the model's NLI head over the batch's examples, sample_size = the
number of examples; so the gradient of a batch is its mean per-token / per-example
cross-entropy (the weight of the NLI objective is how often its batches come: ``--nli-weight``).

Logged (base 2, as fairseq's ``loss``): ``loss`` -- the translation cross-entropy per target
token (NLI batches do not enter it; nan over a log interval without translation batches), ``ppl``,
``nli_loss`` -- the NLI cross-entropy per example (chance: log2(3) = 1.585), ``nli_accuracy``
-- percent of NLI examples classified right (both only over intervals with NLI batches).

Every logging output has the same keys, of the same types, whatever the batch kind: fairseq
sums them across processes with one all-reduce of the values of the first rank's keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch.nn.functional as F
from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.cross_entropy import (
    CrossEntropyCriterion,
    CrossEntropyCriterionConfig,
)
from fairseq.logging import metrics

NLI_TASK = "nli"


def is_nli_batch(sample) -> bool:
    return isinstance(sample, dict) and sample.get("task") == NLI_TASK


def _logging_output(loss, ntokens, nsentences, sample_size, translation_ntokens, nli_loss, nli_correct, nli_examples):
    # one fixed key order and type per key for both batch kinds (see the module docstring)
    return {
        "loss": loss,                                # tensor: translation NLL sum
        "ntokens": int(ntokens),                     # tokens of the batch (wps/wpb)
        "nsentences": int(nsentences),
        "sample_size": int(sample_size),
        "translation_ntokens": int(translation_ntokens),
        "nli_loss": nli_loss,                        # tensor: NLI cross-entropy sum
        "nli_correct": nli_correct,                  # tensor
        "nli_examples": int(nli_examples),
    }


@dataclass
class LaserMultitaskCriterionConfig(CrossEntropyCriterionConfig):
    """The options of ``cross_entropy`` (sentence_avg, from --sentence-avg); nothing else."""


@register_criterion("laser_multitask", dataclass=LaserMultitaskCriterionConfig)
class LaserMultitaskCriterion(CrossEntropyCriterion):
    """Cross-entropy on translation batches, NLI cross-entropy on NLI batches."""

    def forward(self, model, sample, reduce=True):
        if is_nli_batch(sample):
            return self.nli_forward(model, sample, reduce=reduce)
        loss, sample_size, log = super().forward(model, sample, reduce=reduce)
        zero = loss.detach().new_zeros(())
        return loss, sample_size, _logging_output(
            log["loss"], log["ntokens"], log["nsentences"], sample_size, sample["ntokens"], zero, zero.clone(), 0)

    def nli_forward(self, model, sample, reduce=True):
        logits = model(**sample["net_input"])  # B x 3
        target = sample["target"].view(-1)
        loss = F.cross_entropy(logits.float(), target, reduction="sum" if reduce else "none")
        examples = target.numel()
        correct = (logits.detach().argmax(dim=-1) == target).sum().to(loss.dtype)
        zero = loss.detach().new_zeros(())
        return loss, examples, _logging_output(
            zero, sample["ntokens"], sample["nsentences"], examples, 0, loss.data, correct, examples)

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        ntokens = total("translation_ntokens")
        loss = total("loss")
        # always logged, with weight 0 (and value nan) for updates without translation batches
        # (fairseq logs -1 when there is no "loss"); weight-0 values do not enter the averages
        metrics.log_scalar("loss", loss / ntokens / math.log(2) if ntokens else float("nan"), ntokens, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["loss"].avg))
        examples = total("nli_examples")
        if examples:
            metrics.log_scalar("nli_loss", total("nli_loss") / examples / math.log(2), examples, round=3)
            metrics.log_scalar("nli_accuracy", 100.0 * total("nli_correct") / examples, examples, round=2)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
