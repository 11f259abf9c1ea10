"""The dual encoder's training step on a global batch larger than a device holds: gradient caching
(Gao et al. 2021, "Scaling deep contrastive learning batch size under memory limited setup").

The loss (bidirectional additive-margin softmax over the whole global batch, every process's embeddings
gathered as negatives: laser_repro.models.labse.model) depends on the parameters only through the
embeddings. So: (1) embed this process's slice in chunks of ``chunk`` pairs without keeping activations;
(2) compute the loss over all of it (gathered across processes as in the one-pass step) and its gradient
with respect to the embeddings; (3) embed each chunk again, now with activations, and backpropagate its
rows of that gradient. The parameters' gradient is the one-pass gradient: activation memory is one
chunk's, at the cost of a second forward pass. Each chunk's random state (dropout) is replayed in (3),
so the recomputed embeddings are the cached ones.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Optional

import torch

from laser_repro.models.labse.model import bidirectional_ams_loss, gather_with_grad

#: token ids of sentences -> their embeddings (n, d), differentiable in the encoder's parameters
Embed = Callable[[Sequence], torch.Tensor]


class _RandomState:
    """The CPU and (where the step runs on one) CUDA generator states at one point, to replay from it."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.device = device
        self.cpu_state = torch.get_rng_state()
        self.cuda_state = torch.cuda.get_rng_state(device) if self.cuda else None

    def restore(self) -> None:
        torch.set_rng_state(self.cpu_state)
        if self.cuda:
            torch.cuda.set_rng_state(self.cuda_state, self.device)


def dual_encoder_step(embed: Embed, sources: Sequence, targets: Sequence, *, sizes: list[int], offset: int,
                      loss: Mapping, chunk: Optional[int], device: torch.device,
                      scale_loss: Callable[[torch.Tensor], torch.Tensor] = lambda value: value) -> torch.Tensor:
    """Backpropagate the dual encoder's loss on this process's pairs into the parameters (their ``.grad``
    accumulates) and return the loss (detached; summed over this slice, divided by the global batch).

    ``sources[i]`` translates into ``targets[i]``: row ``offset + i`` of the global batch, whose slices
    have ``sizes`` rows on the processes (in rank order). ``loss``: margin, scale, bidirectional.
    ``chunk``: pairs embedded at once (None or 0: the whole slice, one pass). ``scale_loss``: applied to the
    loss before the backward pass (a mixed-precision loss scaler). Every process must pass the same
    ``sizes`` and ``chunk``: they decide the collectives, which all processes run together."""
    n = len(sources)
    if len(targets) != n:
        raise ValueError(f"dual_encoder_step: {n} sources but {len(targets)} targets")
    opts = dict(margin=loss["margin"], scale=loss["scale"], bidirectional=loss["bidirectional"], offset=offset)
    if not chunk or chunk >= max(sizes):  # one pass: the slice's activations fit
        x_local, y_local = embed(sources), embed(targets)
        value = bidirectional_ams_loss(x_local, y_local, gather_with_grad(x_local, sizes),
                                       gather_with_grad(y_local, sizes), **opts)
        scale_loss(value).backward()
        return value.detach()

    bounds = [(a, min(a + chunk, n)) for a in range(0, n, chunk)]
    states, x_parts, y_parts = [], [], []
    with torch.no_grad():  # (1) the embeddings, without activations
        for a, b in bounds:
            states.append(_RandomState(device))
            x_parts.append(embed(sources[a:b]))
            y_parts.append(embed(targets[a:b]))
    after = _RandomState(device)
    # (2) the loss over the global batch and its gradient with respect to this process's embeddings (the
    # backward of the gathers sums, over the processes, every loss's gradient of this process's rows)
    x_local = _rows(x_parts, n, embed, sources).requires_grad_()
    y_local = _rows(y_parts, n, embed, targets).requires_grad_()
    value = bidirectional_ams_loss(x_local, y_local, gather_with_grad(x_local, sizes),
                                   gather_with_grad(y_local, sizes), **opts)
    scale_loss(value).backward()
    # (3) each chunk again, with activations and its random state, backpropagating its rows of the gradient
    for (a, b), state in zip(bounds, states):
        state.restore()
        torch.autograd.backward([embed(sources[a:b]), embed(targets[a:b])],
                                [x_local.grad[a:b], y_local.grad[a:b]])
    after.restore()  # the random state an uninterrupted one-pass sequence of chunks would leave
    return value.detach()


def _rows(parts: list[torch.Tensor], n: int, embed: Embed, sentences: Sequence) -> torch.Tensor:
    """The embeddings of the chunks as one detached tensor (no chunk: an empty one, as ``embed`` makes)."""
    return torch.cat(parts).detach() if parts else embed(sentences[:0]).detach()
