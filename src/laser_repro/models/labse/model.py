"""The LaBSE model: one transformer encoder (HF ``transformers`` BertModel built from a config, trained
from scratch -- nothing is downloaded) for every language; the sentence embedding is the l2-normalised
``[CLS]`` state of the last layer (Section 3.2). Training scores pairs by their dot product times a scale
(10, footnote 11) with an additive margin on the translation pairs (Section 2.1), in both directions
(eq. 2); with several processes the negatives are the whole global batch (Section 3.3, Figure 3).
"""
from __future__ import annotations

from typing import Mapping

import torch
import torch.nn.functional as F

#: the paper's encoder (BERT base) and loss; a config overrides any of them
DEFAULT_ENCODER = {"layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072, "dropout": 0.1, "max_len": 128}
DEFAULT_LOSS = {"margin": 0.3, "scale": 10.0, "bidirectional": True}


def complete(settings: Mapping, defaults: Mapping, what: str) -> dict:
    unknown = set(settings) - set(defaults)
    if unknown:
        raise ValueError(f"labse settings: unknown key(s) {sorted(unknown)} in {what!r} (known: {sorted(defaults)})")
    return {**defaults, **settings}


def bert_config(encoder: Mapping, vocab_size: int, layers: int | None = None):
    """The transformers BertConfig of our encoder settings (``layers``: another depth, progressive stacking)."""
    from transformers import BertConfig

    if encoder["hidden"] % encoder["heads"]:
        raise ValueError(f"labse encoder: hidden {encoder['hidden']} is not a multiple of heads {encoder['heads']}")
    return BertConfig(vocab_size=vocab_size, hidden_size=encoder["hidden"],
                      num_hidden_layers=layers or encoder["layers"], num_attention_heads=encoder["heads"],
                      intermediate_size=encoder["intermediate"], hidden_dropout_prob=encoder["dropout"],
                      attention_probs_dropout_prob=encoder["dropout"],
                      max_position_embeddings=encoder["max_len"], type_vocab_size=2, pad_token_id=0)


def build_encoder(encoder: Mapping, vocab_size: int, layers: int | None = None):
    from transformers import BertModel

    return BertModel(bert_config(encoder, vocab_size, layers), add_pooling_layer=False)


def build_masked_lm(encoder: Mapping, vocab_size: int, layers: int | None = None):
    """The pre-training model: the encoder (``.bert``) and the masked-token prediction head."""
    from transformers import BertForMaskedLM

    return BertForMaskedLM(bert_config(encoder, vocab_size, layers))


def sentence_embedding(bert, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """l2-normalised [CLS] state of the last layer."""
    out = bert(input_ids=input_ids, attention_mask=attention_mask)
    return F.normalize(out.last_hidden_state[:, 0], dim=-1)


def ams_loss(x: torch.Tensor, y: torch.Tensor, *, margin: float, scale: float, bidirectional: bool = True,
             offset: int = 0, total: int | None = None) -> torch.Tensor:
    """Translation ranking loss with additive margin softmax (eq. 2-4), summed over this slice's rows
    and divided by the global batch size.

    ``x`` (n, d): this process's source embeddings, rows ``offset .. offset+n`` of the global batch;
    ``y`` (N, d): every target embedding of the global batch (all processes, gathered). Row i of x is a
    translation of row ``offset + i`` of y; every other row of y is a negative. The score is
    ``scale * (x . y - margin)`` on the translation pair and ``scale * x . y`` elsewhere. The reverse
    direction (y -> x) needs the gathered x and the local y: :func:`bidirectional_ams_loss`."""
    n = x.shape[0]
    total = total or n
    target = torch.arange(offset, offset + n, device=x.device)
    scores = x @ y.T
    scores = scores - margin * F.one_hot(target, y.shape[0]).to(scores.dtype)
    return F.cross_entropy(scale * scores, target, reduction="sum") / total


def bidirectional_ams_loss(x_local, y_local, x_all, y_all, *, margin: float, scale: float,
                           bidirectional: bool = True, offset: int = 0) -> torch.Tensor:
    """eq. 2 with eq. 4's margin: x -> y (softmax over the targets) plus y -> x (over the sources)."""
    total = y_all.shape[0]
    loss = ams_loss(x_local, y_all, margin=margin, scale=scale, offset=offset, total=total)
    if bidirectional:
        loss = loss + ams_loss(y_local, x_all, margin=margin, scale=scale, offset=offset, total=total)
    return loss


class _AllGather(torch.autograd.Function):
    """all_gather whose backward sums, over the processes, the gradient of each one's rows (all_reduce)."""

    @staticmethod
    def forward(ctx, tensor):
        import torch.distributed as dist

        parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, tensor.contiguous())
        ctx.rank = dist.get_rank()
        return torch.stack(parts)

    @staticmethod
    def backward(ctx, grad):
        import torch.distributed as dist

        grad = grad.contiguous()
        dist.all_reduce(grad)
        return grad[ctx.rank]


def gather_with_grad(tensor: torch.Tensor, sizes: list[int]) -> torch.Tensor:
    """Rows of every process, in rank order (``sizes[r]`` rows on rank r), differentiable: the backward
    sums the gradient of every process's loss with respect to a process's rows on that process, so a
    k-process step (gradients then summed) equals the one-process step on the whole batch."""
    if len(sizes) == 1:
        return tensor
    longest = max(sizes)  # all_gather needs one shape: pad, then drop the padding
    padded = F.pad(tensor, (0, 0, 0, longest - tensor.shape[0]))
    parts = _AllGather.apply(padded)
    return torch.cat([parts[r, :n] for r, n in enumerate(sizes)], dim=0)
