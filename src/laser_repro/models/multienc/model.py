"""One encoder and one decoder per language (Schwenk & Douze 2017, Section 2).

A sentence embedding is the fixed-size output of a language's encoder; a decoder generates a
target sentence conditioned on that embedding only (no attention), so everything the decoders need
must pass through the embedding. The vocabulary is shared (joint BPE), word embeddings are not:
every encoder and decoder has its own table.

Model settings (paper values)::

    {"encoder": {"kind": "bilstm_max" | "lstm_last", "layers": 1, "hidden": 512},
     "embed_dim": 384, "decoder": {"layers": 1, "hidden": 512}, "dropout": 0.2}
"""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Iterable, Mapping, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, BOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>")

ENCODER_KINDS = ("bilstm_max", "lstm_last")

#: the paper's settings (Section 4.1: BiLSTM 1x512 with max-pooling, 384-dim words, dropout 0.2)
DEFAULT_MODEL_SETTINGS = {
    "encoder": {"kind": "bilstm_max", "layers": 1, "hidden": 512},
    "embed_dim": 384,
    "decoder": {"layers": 1, "hidden": 512},
    "dropout": 0.2,
    # not in the paper (its encoders and decoders are per language): one word-embedding matrix for all,
    # so that the subwords the languages share (names, numbers) start out aligned
    "share_embeddings": False,
}


class Dictionary:
    """Joint token list of all languages; ids 0-3 are the specials of :data:`SPECIALS`."""

    def __init__(self, tokens: Sequence[str] = (), counts: Optional[Sequence[int]] = None):
        counts = [0] * len(tokens) if counts is None else list(counts)
        if len(counts) != len(tokens):
            raise ValueError(f"{len(tokens)} tokens but {len(counts)} counts")
        self.symbols = list(SPECIALS) + list(tokens)
        self.counts = [0] * len(SPECIALS) + counts
        self.index = {}
        for i, symbol in enumerate(self.symbols):
            if symbol in self.index:
                raise ValueError(f"token {symbol!r} appears twice in the dictionary")
            self.index[symbol] = i

    @classmethod
    def build(cls, lines: Iterable[str], max_size: Optional[int] = None) -> "Dictionary":
        """Tokens of space-separated (BPE'd) ``lines``, most frequent first, ties by token;
        ``max_size`` keeps that many (specials not counted)."""
        counter = Counter(token for line in lines for token in line.split())
        for special in SPECIALS:
            counter.pop(special, None)
        ranked = sorted(counter.items(), key=lambda item: (-item[1], item[0]))[:max_size]
        return cls([t for t, _ in ranked], [c for _, c in ranked])

    @classmethod
    def from_symbols(cls, symbols: Sequence[str]) -> "Dictionary":
        """The dictionary whose ids are the positions in ``symbols`` (specials first), e.g. as
        stored in an exported encoder."""
        if tuple(symbols[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a dictionary starts with {SPECIALS}, not {tuple(symbols[:len(SPECIALS)])}")
        return cls(symbols[len(SPECIALS):])

    @classmethod
    def load(cls, path) -> "Dictionary":
        """Read a file of ``token count`` lines (as written by :meth:`save`); a special token found
        there (literal ``<unk>`` in the text, say) is skipped: it has its id already."""
        tokens, counts = [], []
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                fields = line.rstrip("\n").rsplit(" ", 1)
                if len(fields) != 2 or not fields[0] or not fields[1].isdigit():
                    raise ValueError(f"{path}:{number}: expected 'token count', got {line!r}")
                if fields[0] in SPECIALS:
                    continue
                tokens.append(fields[0])
                counts.append(int(fields[1]))
        return cls(tokens, counts)

    def save(self, path) -> None:
        Path(path).write_text("".join(f"{t} {c}\n" for t, c in zip(self.symbols[len(SPECIALS):],
                                                                   self.counts[len(SPECIALS):])),
                              encoding="utf-8")

    def encode(self, line: str) -> list[int]:
        """Ids of the tokens of ``line`` (unknown ones: ``<unk>``) followed by ``</s>``."""
        return [self.index.get(token, UNK) for token in line.split()] + [EOS]

    def __len__(self) -> int:
        return len(self.symbols)


def complete_model_settings(model_settings: Mapping) -> dict:
    """``model_settings`` over :data:`DEFAULT_MODEL_SETTINGS`; unknown keys and encoder kinds raise."""
    merged = copy.deepcopy(DEFAULT_MODEL_SETTINGS)
    for key, value in model_settings.items():
        if key not in merged:
            raise ValueError(f"model settings: unknown key {key!r} (known: {sorted(merged)})")
        if isinstance(merged[key], dict):
            unknown = set(value) - set(merged[key])
            if unknown:
                raise ValueError(f"model settings: unknown key(s) {sorted(unknown)} in {key!r} "
                                 f"(known: {sorted(merged[key])})")
            merged[key].update(value)
        else:
            merged[key] = value
    if merged["encoder"]["kind"] not in ENCODER_KINDS:
        raise ValueError(f"model settings: encoder kind {merged['encoder']['kind']!r} is not one of {ENCODER_KINDS}")
    return merged


def embedding_dim(model_settings: Mapping) -> int:
    """Size of a sentence embedding: the hidden size, twice it for the BiLSTM."""
    encoder = complete_model_settings(model_settings)["encoder"]
    return encoder["hidden"] * (2 if encoder["kind"] == "bilstm_max" else 1)


class LanguageEncoder(nn.Module):
    """Word embeddings -> stacked LSTM -> one vector per sentence.

    ``lstm_last``: the top layer's final hidden state; ``bilstm_max``: element-wise max over time of
    the top BiLSTM layer's outputs. Sequences are packed, so a sentence's embedding does not depend
    on the padding of the batch it is in."""

    def __init__(self, vocab_size: int, embed_dim: int, kind: str, layers: int, hidden: int,
                 dropout: float):
        super().__init__()
        if kind not in ENCODER_KINDS:
            raise ValueError(f"encoder kind {kind!r} is not one of {ENCODER_KINDS}")
        self.kind = kind
        self.embed_tokens = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(embed_dim, hidden, num_layers=layers, batch_first=True,
                            bidirectional=kind == "bilstm_max", dropout=dropout if layers > 1 else 0.0)
        self.output_dim = hidden * (2 if kind == "bilstm_max" else 1)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``tokens``: [B, T] right-padded ids, ``lengths``: [B] -> [B, output_dim]."""
        emb = self.dropout(self.embed_tokens(tokens))
        packed = nn.utils.rnn.pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.lstm(packed)
        if self.kind == "lstm_last":
            return h_n[-1]  # packing unsorts h_n back to the batch order
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, padding_value=float("-inf"))
        return out.max(dim=1).values


class LanguageDecoder(nn.Module):
    """LSTM language model of one language conditioned on a sentence embedding: the embedding sets
    the initial hidden state (linear projection, tanh) and is concatenated to every input word."""

    def __init__(self, vocab_size: int, embed_dim: int, sentence_dim: int, layers: int, hidden: int,
                 dropout: float):
        super().__init__()
        self.layers, self.hidden = layers, hidden
        self.embed_tokens = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.init_state = nn.Linear(sentence_dim, layers * hidden)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(embed_dim + sentence_dim, hidden, num_layers=layers, batch_first=True,
                            dropout=dropout if layers > 1 else 0.0)
        self.output = nn.Linear(hidden, vocab_size)

    def forward(self, sentence: torch.Tensor, targets: torch.Tensor, lengths: torch.Tensor):
        """Teacher-forced cross-entropy of ``targets`` ([B, T] ids ending with ``</s>``, right-padded)
        given ``sentence`` ([B, D]): ``(sum over non-pad target tokens, number of those tokens)``."""
        batch, steps = targets.shape
        inputs = torch.cat([targets.new_full((batch, 1), BOS), targets[:, :-1]], dim=1)
        emb = self.dropout(self.embed_tokens(inputs))
        x = torch.cat([emb, sentence.unsqueeze(1).expand(batch, steps, sentence.size(1))], dim=2)
        h0 = torch.tanh(self.init_state(sentence)).view(batch, self.layers, self.hidden).transpose(0, 1).contiguous()
        out, _ = self.lstm(x, (h0, torch.zeros_like(h0)))
        logits = self.output(self.dropout(out))
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                               ignore_index=PAD, reduction="sum")
        return loss, int(lengths.sum())


def build_encoder(model_settings: Mapping, vocab_size: int) -> LanguageEncoder:
    s = complete_model_settings(model_settings)
    return LanguageEncoder(vocab_size, s["embed_dim"], s["encoder"]["kind"], s["encoder"]["layers"],
                           s["encoder"]["hidden"], s["dropout"])


class MultiEncoderModel(nn.Module):
    """Encoders and decoders keyed by language code (``"eng"``, ...)."""

    def __init__(self, model_settings: Mapping, encoder_languages: Sequence[str],
                 decoder_languages: Sequence[str], vocab_size: int):
        super().__init__()
        s = complete_model_settings(model_settings)
        self.settings = s
        self.encoders = nn.ModuleDict({lang: build_encoder(s, vocab_size) for lang in encoder_languages})
        self.decoders = nn.ModuleDict({
            lang: LanguageDecoder(vocab_size, s["embed_dim"], embedding_dim(s), s["decoder"]["layers"],
                                  s["decoder"]["hidden"], s["dropout"])
            for lang in decoder_languages})
        if s["share_embeddings"]:
            shared = nn.Embedding(vocab_size, s["embed_dim"], padding_idx=PAD)
            for module in [*self.encoders.values(), *self.decoders.values()]:
                module.embed_tokens = shared

    def embed(self, lang: str, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.encoders[lang](tokens, lengths)

    def loss(self, sources: Mapping[str, tuple], targets: Mapping[str, tuple]):
        """Summed cross-entropy of every target given the average of the sources' embeddings
        (M:1 when several sources; 1:N when several targets): ``(loss_sum, n_target_tokens)``."""
        if not sources or not targets:
            raise ValueError("a training path needs at least one source and one target")
        sentence = torch.stack([self.embed(lang, *batch) for lang, batch in sources.items()]).mean(dim=0)
        total, n_tokens = sentence.new_zeros(()), 0
        for lang, (tokens, lengths) in targets.items():
            loss, n = self.decoders[lang](sentence, tokens, lengths)
            total, n_tokens = total + loss, n_tokens + n
        return total, n_tokens


def build_model(model_settings: Mapping, languages: Mapping[str, Sequence[str]], vocab_size: int) -> MultiEncoderModel:
    """The model with an encoder per ``languages["encoders"]`` and a decoder per
    ``languages["decoders"]`` (see :meth:`laser_repro.models.multienc.paths.TrainingPaths.model_languages`)."""
    return MultiEncoderModel(model_settings, languages["encoders"], languages["decoders"], vocab_size)
