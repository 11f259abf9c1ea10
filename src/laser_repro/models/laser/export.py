"""Export the encoder of a ``laser_lstm`` training checkpoint to a standalone LASER-format file.

Output (``torch.save``; loadable with ``torch.load(weights_only=True)``)::

    {"params": {num_embeddings, padding_idx, embed_dim, hidden_size, num_layers,
                bidirectional, left_pad, padding_value},   # exactly LASER's Encoder(**params)
     "model": encoder state dict (embed_tokens.weight, lstm.weight_ih_l0, ...; float32),
     "dictionary": {symbol: index},
     "meta": {bos_idx, pad_idx, eos_idx, unk_idx, num_updates, train_iterator,
              target_langs, lang_pairs, format}}

The checkpoint is read through :func:`laser_repro.models.laser.fairseq_bridge.load_checkpoint`
(``weights_only=True`` with a minimal allowlist); fairseq itself is not needed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from laser_repro.models.laser import fairseq_bridge

FORMAT = "laser_repro.models.laser.encoder/1"
_LSTM_KEY = re.compile(r"^lstm\.(weight_ih|weight_hh|bias_ih|bias_hh)_l(\d+)(_reverse)?$")


def encoder_state_from_checkpoint(state: dict) -> dict:
    """The ``encoder.*`` entries of a checkpoint's model state, prefix removed, float32."""
    out = {}
    for key, value in state["model"].items():
        if not key.startswith("encoder."):
            continue
        name = key[len("encoder."):]
        if name != "embed_tokens.weight" and not _LSTM_KEY.match(name):
            raise ValueError(f"unexpected encoder parameter {name!r} in checkpoint")
        t = value.detach().to("cpu")
        if t.is_floating_point():
            t = t.float()
        out[name] = t.clone().contiguous()
    if "embed_tokens.weight" not in out:
        raise ValueError("checkpoint has no encoder.embed_tokens.weight (not a laser_lstm checkpoint?)")
    return out


def export_encoder(checkpoint_path, out_path, subword_model=None) -> dict:
    """Write the standalone encoder file for ``checkpoint_path`` to ``out_path`` (atomically).

    Returns ``{"params", "meta", "out_path", "num_parameters"}``."""
    state = fairseq_bridge.load_checkpoint(checkpoint_path)
    args = fairseq_bridge.checkpoint_model_args(state)
    dinfo = fairseq_bridge.checkpoint_dictionary(state)
    model_sd = encoder_state_from_checkpoint(state)

    num_embeddings, embed_dim = (int(x) for x in model_sd["embed_tokens.weight"].shape)
    layers = sorted({int(m.group(2)) for m in map(_LSTM_KEY.match, model_sd) if m})
    bidirectional = any(k.endswith("_reverse") for k in model_sd)
    hidden_size = int(model_sd["lstm.weight_hh_l0"].shape[1])
    params = {
        "num_embeddings": num_embeddings,
        "padding_idx": int(dinfo["pad"]),
        "embed_dim": embed_dim,
        "hidden_size": hidden_size,
        "num_layers": len(layers),
        "bidirectional": bool(bidirectional),
        "left_pad": False,
        "padding_value": 0.0,
    }
    # consistency between the stored arguments, the tensors and the dictionary
    expected = {
        "embed_dim": getattr(args, "encoder_embed_dim", embed_dim),
        "hidden_size": getattr(args, "encoder_hidden_size", hidden_size),
        "num_layers": getattr(args, "encoder_layers", len(layers)),
        "bidirectional": getattr(args, "encoder_bidirectional", bidirectional),
    }
    for key, value in expected.items():
        if value != params[key]:
            raise ValueError(f"checkpoint arguments say {key}={value!r} but the weights say {params[key]!r}")
    if layers != list(range(len(layers))):
        raise ValueError(f"non-contiguous LSTM layers {layers}")
    if num_embeddings != len(dinfo["symbols"]):
        raise ValueError(f"embedding has {num_embeddings} rows but the dictionary {len(dinfo['symbols'])} symbols")

    dictionary = {str(sym): int(idx) for sym, idx in dinfo["indices"].items()}
    task_state = state.get("task_state") or {}
    train_iterator = (state.get("extra_state") or {}).get("train_iterator") or {}
    meta = {
        "format": FORMAT,
        "bos_idx": int(dinfo["bos"]),
        "pad_idx": int(dinfo["pad"]),
        "eos_idx": int(dinfo["eos"]),
        "unk_idx": int(dinfo["unk"]),
        "num_updates": fairseq_bridge.checkpoint_num_updates(state),
        "train_iterator": {str(k): v for k, v in train_iterator.items() if isinstance(v, (int, bool, str, float))},
        "target_langs": [str(x) for x in task_state.get("laser_target_langs", [])],
        "lang_pairs": [str(x) for x in task_state.get("laser_lang_pairs", [])],
    }
    payload = {"params": params, "model": model_sd, "dictionary": dictionary, "meta": meta}
    if subword_model is not None:  # the BPE codes of its data (laser_repro.models.subword): embed checks them
        from laser_repro.models import subword

        payload[subword.RECORD_KEY] = subword_model

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.tmp{os.getpid()}")
    try:
        torch.save(payload, tmp)
        torch.load(tmp, map_location="cpu", weights_only=True)  # must stay weights_only-loadable
        os.replace(tmp, out_path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return {
        "params": params,
        "meta": meta,
        "out_path": str(out_path),
        "num_parameters": int(sum(t.numel() for t in model_sd.values())),
    }
