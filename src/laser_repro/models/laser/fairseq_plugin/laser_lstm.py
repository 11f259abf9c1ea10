"""LASER encoder-decoder (Artetxe & Schwenk, TACL 2019, section 3.1) as a fairseq model.

* Encoder: token embeddings -> stacked BiLSTM (packed, right-padded input) -> max-pooling
  over time (padding masked to -inf) -> one fixed-size sentence embedding per sentence.
* Decoder: a single LSTM whose initial hidden and cell states are one linear map of the sentence
  embedding (``sentemb2init``, split into h and c) and whose input at every step is [token embedding; sentence embedding;
  target-language embedding].  There is no attention and no other encoder->decoder path, so
  everything the decoder knows about the source has to go through the sentence embedding.
* Optional NLI head (the paper's multitask ablation, Table 6; only built when the task's
  ``--nli-weight`` is > 0): premise and hypothesis go through the same encoder, and
  Linear(4D -> nli_hidden_dim) -> Tanh -> dropout -> Linear(nli_hidden_dim -> 3) classifies
  the features ``concat(p, h, p*h, |p-h|)`` into entailment / neutral / contradiction.
  It lives in the fairseq model only; export takes the ``encoder.*`` weights.
* Decoder output vocabulary (``--decoder-output-vocab``): ``joint`` (the paper: the softmax runs over
  the whole joint dictionary) or ``targets``: only over the tokens that occur in the target-language
  side of the training data (plus the special symbols), given by the task.  The decoder only ever
  has to produce the target languages' text, so the other rows (the scripts of source-only languages:
  two thirds of a 20-language dictionary with Chinese, Japanese and Korean characters) can only be
  pushed towards zero probability; leaving them out gives the same objective without that work and
  makes the output layer, most of an update on a CPU, several times smaller.  A target token outside
  that set (held-out text) is scored as ``<unk>``.  The encoder always reads the joint dictionary.

Where the paper is silent we follow fairseq's reference LASER trainer (``examples/laser/laser_src``):
every LSTM / Linear weight and bias and every embedding starts from U(-0.1, 0.1); the encoder's
dropout is also applied to the top layer's outputs before max-pooling (training only); one Linear
gives the decoder's initial (h, c); the decoder's output projection is 512-dimensional
(``decoder_out_embed_dim``); gradients are clipped at norm 5 (the training settings).

The encoder's parameter names (``embed_tokens.weight``, ``lstm.weight_ih_l0`` ...) are the
ones of the standalone LASER encoder (:mod:`laser_repro.models.laser.encoder`), so ``encoder.state_dict()``
can be exported as is.
"""

from __future__ import annotations

import argparse
from typing import Dict, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from fairseq.models import (
    FairseqEncoder,
    FairseqEncoderDecoderModel,
    FairseqIncrementalDecoder,
    register_model,
    register_model_architecture,
)
from torch import Tensor

# ---------------------------------------------------------------------------------------
# Hyper-parameters.  The ONLY place where model defaults live; the architecture functions
# below fill every value the command line left unset from these dicts.
# ---------------------------------------------------------------------------------------

#: paper, section 3.1/3.2: 320-dim input embeddings, 5 x 512 BiLSTM encoder (1024-dim
#: sentence embedding), one 2048-dim decoder LSTM layer, 32-dim language-ID embedding,
#: dropout 0.1.
PAPER_CONFIG: Dict[str, object] = {
    "encoder_embed_dim": 320,
    "encoder_hidden_size": 512,
    "encoder_layers": 5,
    "encoder_bidirectional": True,
    "decoder_embed_dim": 320,
    "decoder_hidden_size": 2048,
    "decoder_layers": 1,
    "decoder_lang_embed_dim": 32,
    "dropout": 0.1,
}

#: defaults of the plain ``laser_lstm`` architecture (= the paper's model) plus the knobs
#: the paper does not mention.  ``None`` for the dropouts means "same as --dropout";
#: ``None`` for decoder_out_embed_dim means "same as --decoder-embed-dim".
DEFAULTS: Dict[str, object] = {
    **PAPER_CONFIG,
    "encoder_dropout_in": None,
    "encoder_dropout_out": None,
    "decoder_dropout_in": None,
    "decoder_dropout_out": None,
    # the reference trainer's output projection (hidden -> 512 -> vocabulary); None = decoder_embed_dim
    "decoder_out_embed_dim": 512,
    "share_decoder_input_output_embed": False,
    # softmax over the joint dictionary (the paper) or over the target languages' tokens only
    "decoder_output_vocab": "joint",
    "max_source_positions": 250,
    "max_target_positions": 250,
    # hidden units of the NLI classifier head (used only with --nli-weight > 0)
    "nli_hidden_dim": 512,
}

#: number of NLI classes: entailment, neutral, contradiction (``len(laser_repro.data.nli_labels.XNLI_LABELS)``, in
#: that order; a constant here because the fairseq plugin imports nothing of the package but
#: laser_repro.models.checkpoint_safety -- tests/test_architecture.py checks both)
NLI_NUM_CLASSES = 3


def _str2bool(value) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in ("1", "true", "yes", "y", "on"):
        return True
    if v in ("0", "false", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean, got {value!r}")


def _fill(args, values: Dict[str, object]) -> None:
    """Set every attribute in ``values`` that is missing (or None) on ``args``."""
    for key, value in values.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)


def _resolve_derived(args) -> None:
    for key in ("encoder_dropout_in", "encoder_dropout_out", "decoder_dropout_in", "decoder_dropout_out"):
        if getattr(args, key, None) is None:
            setattr(args, key, args.dropout)
    if getattr(args, "decoder_out_embed_dim", None) is None:
        args.decoder_out_embed_dim = args.decoder_embed_dim


# ---------------------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------------------


#: every weight and bias starts uniform in [-INIT_RANGE, INIT_RANGE] (the reference trainer's init)
INIT_RANGE = 0.1


def token_embedding(num: int, dim: int, padding_idx: int) -> nn.Embedding:
    """Token embeddings, uniform in [-0.1, 0.1], the padding row zero (encoder and decoder)."""
    emb = nn.Embedding(num, dim, padding_idx=padding_idx)
    nn.init.uniform_(emb.weight, -INIT_RANGE, INIT_RANGE)
    nn.init.zeros_(emb.weight[padding_idx])
    return emb


def _output_token_ids(tokens, dictionary) -> Tensor:
    """The decoder's output vocabulary as a sorted LongTensor of dictionary ids, with the special
    symbols (they keep their ids: padding is ignored by the loss under its own id)."""
    specials = [dictionary.bos(), dictionary.pad(), dictionary.eos(), dictionary.unk()]
    if sorted(specials) != list(range(len(specials))):
        raise ValueError("the dictionary's special symbols must be its first entries")
    ids = torch.unique(torch.cat([torch.tensor(specials), torch.as_tensor(tokens, dtype=torch.long).flatten()]))
    if int(ids[0]) < 0 or int(ids[-1]) >= len(dictionary):
        raise ValueError(f"decoder output tokens outside the dictionary (ids {int(ids[0])}..{int(ids[-1])}, "
                         f"{len(dictionary)} entries)")
    return ids  # sorted: the specials are rows 0-3, under their own ids


def uniform_init(module: nn.Module) -> nn.Module:
    """Every parameter of an LSTM / Linear uniform in [-0.1, 0.1] (PyTorch's defaults scale with
    the layer size; the reference trainer uses one range for all)."""
    for param in module.parameters():
        nn.init.uniform_(param, -INIT_RANGE, INIT_RANGE)
    return module


class LaserLSTMEncoder(FairseqEncoder):
    """BiLSTM + max-pooling sentence encoder.

    Input must be RIGHT-padded (``left_pad_source=False``), so that the sequence can be packed.
    Dropout (training only): on the token embeddings (``dropout_in``), between stacked LSTM
    layers and on the top layer's outputs before max-pooling (``dropout_out``), as the reference
    trainer; in eval mode the pooled embedding is exactly what the standalone encoder computes.
    """

    def __init__(
        self,
        dictionary,
        embed_dim: int = 320,
        hidden_size: int = 512,
        num_layers: int = 5,
        bidirectional: bool = True,
        dropout_in: float = 0.1,
        dropout_out: float = 0.1,
        padding_value: float = 0.0,
        max_source_positions: int = 250,
    ):
        super().__init__(dictionary)
        self.padding_idx = dictionary.pad()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.bidirectional = bidirectional
        self.dropout_in = dropout_in
        self.padding_value = padding_value
        self.max_source_positions = max_source_positions
        self.embed_tokens = token_embedding(len(dictionary), embed_dim, self.padding_idx)
        self.dropout_out = dropout_out
        self.lstm = uniform_init(nn.LSTM(
            input_size=embed_dim,
            hidden_size=hidden_size,
            num_layers=num_layers,
            dropout=dropout_out if num_layers > 1 else 0.0,
            bidirectional=bidirectional,
        ))
        self.output_units = hidden_size * (2 if bidirectional else 1)

    def forward(self, src_tokens: Tensor, src_lengths: Tensor, src_lengths_host=None, **unused) -> Dict[str, Tensor]:
        """``src_lengths_host``: the same lengths on the host (a NumPy array, the task's collater): given, the
        packing reads them without waiting for the GPU."""
        bsz, seqlen = src_tokens.shape
        # checked where it costs nothing: on a GPU the check is a host sync per step, and the task always
        # pads on the right (laser_task: left_pad_source=False)
        if seqlen > 1 and src_tokens.device.type == "cpu" and bool(src_tokens[:, 0].eq(self.padding_idx).any()):
            raise ValueError("LaserLSTMEncoder expects right-padded input (left_pad_source=False)")
        x = self.embed_tokens(src_tokens)
        x = F.dropout(x, p=self.dropout_in, training=self.training)
        x = x.transpose(0, 1)  # T x B x C
        host_lengths = (torch.as_tensor(src_lengths_host, dtype=torch.int64) if src_lengths_host is not None
                        else src_lengths.detach().to("cpu", torch.int64))
        packed = nn.utils.rnn.pack_padded_sequence(x, host_lengths, enforce_sorted=False)
        packed_out, _ = self.lstm(packed)
        x, _ = nn.utils.rnn.pad_packed_sequence(
            packed_out, padding_value=self.padding_value, total_length=seqlen
        )  # T x B x output_units
        x = F.dropout(x, p=self.dropout_out, training=self.training)
        # max-pool over time; positions beyond each sentence's length never win
        positions = torch.arange(seqlen, device=x.device).unsqueeze(1)
        padding_mask = positions >= src_lengths.to(x.device).unsqueeze(0)  # T x B
        x = x.masked_fill(padding_mask.unsqueeze(-1), float("-inf"))
        sentemb = x.max(dim=0).values  # B x output_units
        return {"sentemb": sentemb}

    def reorder_encoder_out(self, encoder_out: Dict[str, Tensor], new_order: Tensor):
        return {"sentemb": encoder_out["sentemb"].index_select(0, new_order)}

    def max_positions(self) -> int:
        return self.max_source_positions


# ---------------------------------------------------------------------------------------
# Decoder
# ---------------------------------------------------------------------------------------


class LaserLSTMDecoder(FairseqIncrementalDecoder):
    """One (or more) LSTM layer(s) conditioned only on the sentence embedding and a target
    language ID.

    Initial state: ``[h0; c0] = W s + b`` (``sentemb2init``) -- one plain linear map of the
    sentence embedding ``s`` WITHOUT a tanh, following the paper's wording ("used to
    initialize the decoder LSTM through a linear transformation") and the reference trainer.  Input at every step:
    ``[embed(y_{t-1}); s; embed_lang(tgt_lang)]``.  Output: Linear(hidden -> out_embed_dim)
    then Linear(out_embed_dim -> vocab) (optionally tied to the input embeddings).
    """

    def __init__(
        self,
        dictionary,
        sentemb_dim: int,
        num_langs: int,
        embed_dim: int = 320,
        hidden_size: int = 2048,
        num_layers: int = 1,
        lang_embed_dim: int = 32,
        out_embed_dim: int = 320,
        dropout_in: float = 0.1,
        dropout_out: float = 0.1,
        share_input_output_embed: bool = False,
        max_target_positions: int = 250,
        output_tokens: Optional[Tensor] = None,
    ):
        super().__init__(dictionary)
        if num_langs < 1:
            raise ValueError("the decoder needs at least one target language")
        self.padding_idx = dictionary.pad()
        self.num_layers = num_layers
        self.hidden_size = hidden_size
        self.num_langs = num_langs
        self.dropout_in = dropout_in
        self.dropout_out = dropout_out
        self.max_target_positions = max_target_positions
        self.share_input_output_embed = share_input_output_embed

        self.embed_tokens = token_embedding(len(dictionary), embed_dim, self.padding_idx)
        self.embed_langs = nn.Embedding(num_langs, lang_embed_dim)
        nn.init.uniform_(self.embed_langs.weight, -INIT_RANGE, INIT_RANGE)
        # layer l's h0 and c0 are columns [2l*H, (2l+1)*H) and [(2l+1)*H, (2l+2)*H)
        self.sentemb2init = uniform_init(nn.Linear(sentemb_dim, 2 * num_layers * hidden_size))
        self.lstm = uniform_init(nn.LSTM(
            input_size=embed_dim + sentemb_dim + lang_embed_dim,
            hidden_size=hidden_size,
            num_layers=num_layers,
            dropout=dropout_out if num_layers > 1 else 0.0,
        ))
        self.fc_hidden = uniform_init(nn.Linear(hidden_size, out_embed_dim))
        num_outputs = len(dictionary)
        if output_tokens is not None:
            output_tokens = _output_token_ids(output_tokens, dictionary)
            num_outputs = len(output_tokens)
            # dictionary id -> output row; ids outside the output vocabulary score as <unk> (its own row)
            index = torch.full((len(dictionary),), dictionary.unk(), dtype=torch.long)
            index[output_tokens] = torch.arange(num_outputs)
            self.register_buffer("output_tokens", output_tokens)
            self.register_buffer("output_index", index)
        else:
            self.output_tokens = None
            self.output_index = None
        if share_input_output_embed:
            if out_embed_dim != embed_dim:
                raise ValueError(
                    "--share-decoder-input-output-embed requires "
                    "--decoder-out-embed-dim == --decoder-embed-dim"
                )
            self.fc_out = None
        else:
            self.fc_out = uniform_init(nn.Linear(out_embed_dim, num_outputs))

    def output_targets(self, target: Tensor) -> Tensor:
        """Dictionary ids -> rows of the output layer (the identity without an output vocabulary)."""
        return target if self.output_index is None else self.output_index[target]

    def _initial_state(self, sentemb: Tensor):
        bsz = sentemb.size(0)
        init = self.sentemb2init(sentemb).view(bsz, self.num_layers, 2, self.hidden_size)
        h0, c0 = init[:, :, 0], init[:, :, 1]
        return h0.transpose(0, 1).contiguous(), c0.transpose(0, 1).contiguous()

    def forward(
        self,
        prev_output_tokens: Tensor,
        encoder_out: Optional[Dict[str, Tensor]] = None,
        incremental_state: Optional[Dict[str, Dict[str, Optional[Tensor]]]] = None,
        tgt_lang_id: Optional[Tensor] = None,
        **unused,
    ):
        x = self.extract_features(prev_output_tokens, encoder_out, incremental_state, tgt_lang_id)
        return self.output_layer(x), None

    def extract_features(
        self,
        prev_output_tokens: Tensor,
        encoder_out: Optional[Dict[str, Tensor]] = None,
        incremental_state=None,
        tgt_lang_id: Optional[Tensor] = None,
        **unused,
    ) -> Tensor:
        if encoder_out is None:
            raise ValueError("LaserLSTMDecoder needs the encoder output (sentence embedding)")
        sentemb = encoder_out["sentemb"]
        if incremental_state is not None:
            prev_output_tokens = prev_output_tokens[:, -1:]
        bsz, seqlen = prev_output_tokens.shape
        if tgt_lang_id is None:
            if self.num_langs != 1:
                raise ValueError("tgt_lang_id is required when there are several target languages")
            tgt_lang_id = torch.zeros(bsz, dtype=torch.long, device=prev_output_tokens.device)
        tgt_lang_id = tgt_lang_id.view(-1)

        tok = self.embed_tokens(prev_output_tokens)  # B x T x E
        tok = F.dropout(tok, p=self.dropout_in, training=self.training)
        lang = self.embed_langs(tgt_lang_id)  # B x L
        x = torch.cat(
            [
                tok,
                sentemb.unsqueeze(1).expand(bsz, seqlen, sentemb.size(1)),
                lang.unsqueeze(1).expand(bsz, seqlen, lang.size(1)),
            ],
            dim=2,
        ).transpose(0, 1)  # T x B x (E + S + L)

        cached = None
        if incremental_state is not None:
            cached = self.get_incremental_state(incremental_state, "lstm_state")
        if cached is not None:
            h0, c0 = cached["h"], cached["c"]
        else:
            h0, c0 = self._initial_state(sentemb)
        out, (hn, cn) = self.lstm(x, (h0, c0))
        if incremental_state is not None:
            self.set_incremental_state(incremental_state, "lstm_state", {"h": hn, "c": cn})
        out = F.dropout(out, p=self.dropout_out, training=self.training)
        return out.transpose(0, 1)  # B x T x H

    def output_layer(self, features: Tensor) -> Tensor:
        x = self.fc_hidden(features)
        x = F.dropout(x, p=self.dropout_out, training=self.training)
        if self.fc_out is None:
            weight = self.embed_tokens.weight
            if self.output_tokens is not None:
                weight = weight.index_select(0, self.output_tokens)
            return F.linear(x, weight)
        return self.fc_out(x)

    def reorder_incremental_state(self, incremental_state, new_order: Tensor):
        cached = self.get_incremental_state(incremental_state, "lstm_state")
        if cached is None:
            return
        reordered = {k: v.index_select(1, new_order) for k, v in cached.items() if v is not None}
        self.set_incremental_state(incremental_state, "lstm_state", reordered)

    def max_positions(self) -> int:
        return self.max_target_positions


# ---------------------------------------------------------------------------------------
# NLI head (multitask ablation)
# ---------------------------------------------------------------------------------------


def nli_features(premise: Tensor, hypothesis: Tensor) -> Tensor:
    """``concat(p, h, p*h, |p-h|)`` (B x 4D) of two B x D sentence embeddings."""
    return torch.cat([premise, hypothesis, premise * hypothesis, (premise - hypothesis).abs()], dim=1)


class NliHead(nn.Module):
    """Linear(4 * sentemb_dim -> hidden_dim) -> Tanh -> dropout -> Linear(hidden_dim -> 3)."""

    def __init__(self, sentemb_dim: int, hidden_dim: int, dropout: float, num_classes: int = NLI_NUM_CLASSES):
        super().__init__()
        self.hidden = uniform_init(nn.Linear(4 * sentemb_dim, hidden_dim))
        self.dropout = dropout
        self.out = uniform_init(nn.Linear(hidden_dim, num_classes))

    def forward(self, premise: Tensor, hypothesis: Tensor) -> Tensor:
        x = torch.tanh(self.hidden(nli_features(premise, hypothesis)))
        x = F.dropout(x, p=self.dropout, training=self.training)
        return self.out(x)  # B x num_classes (logits)


# ---------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------


@register_model("laser_lstm")
class LaserLSTMModel(FairseqEncoderDecoderModel):
    """LASER BiLSTM encoder + language-conditioned LSTM decoder (+ the NLI head ``nli_head``
    when the task trains with ``--nli-weight`` > 0; otherwise the model has no such module)."""

    def __init__(self, encoder, decoder, nli_head: Optional[NliHead] = None):
        super().__init__(encoder, decoder)
        if nli_head is not None:
            self.nli_head = nli_head

    @staticmethod
    def add_args(parser):
        # no defaults here on purpose: they come from DEFAULTS via the architecture functions
        parser.add_argument("--encoder-embed-dim", type=int, metavar="N", help="encoder token embedding dim")
        parser.add_argument("--encoder-hidden-size", type=int, metavar="N", help="encoder LSTM size per direction")
        parser.add_argument("--encoder-layers", type=int, metavar="N", help="number of stacked encoder LSTM layers")
        parser.add_argument("--encoder-bidirectional", type=_str2bool, metavar="BOOL", help="bidirectional encoder")
        parser.add_argument("--encoder-dropout-in", type=float, metavar="D", help="dropout on encoder embeddings")
        parser.add_argument("--encoder-dropout-out", type=float, metavar="D", help="dropout between encoder layers")
        parser.add_argument("--decoder-embed-dim", type=int, metavar="N", help="decoder token embedding dim")
        parser.add_argument("--decoder-hidden-size", type=int, metavar="N", help="decoder LSTM size")
        parser.add_argument("--decoder-layers", type=int, metavar="N", help="number of decoder LSTM layers")
        parser.add_argument("--decoder-lang-embed-dim", type=int, metavar="N", help="target-language ID embedding dim")
        parser.add_argument("--decoder-out-embed-dim", type=int, metavar="N", help="decoder output projection dim")
        parser.add_argument("--decoder-dropout-in", type=float, metavar="D", help="dropout on decoder embeddings")
        parser.add_argument("--decoder-dropout-out", type=float, metavar="D", help="dropout on decoder outputs")
        parser.add_argument(
            "--share-decoder-input-output-embed",
            type=_str2bool,
            nargs="?",
            const=True,
            metavar="BOOL",
            help="tie the decoder input embedding and output projection",
        )
        parser.add_argument("--decoder-output-vocab", choices=("joint", "targets"),
                            help="softmax over the joint dictionary (the paper) or over the target "
                                 "languages' training tokens only (the task's decoder_output_tokens())")
        parser.add_argument("--nli-hidden-dim", type=int, metavar="N",
                            help="hidden units of the NLI classifier head (only with --nli-weight > 0)")
        # in fairseq 0.12 --dropout is a per-model option; add it unless already present
        try:
            parser.add_argument("--dropout", type=float, metavar="D", help="dropout probability")
        except argparse.ArgumentError:
            pass

    @classmethod
    def build_model(cls, args, task):
        base_architecture(args)
        dictionary = task.source_dictionary
        if task.target_dictionary is not None and len(task.target_dictionary) != len(dictionary):
            raise ValueError("laser_lstm needs one joint source/target dictionary")
        num_langs = len(task.target_langs)
        output_tokens = None
        if args.decoder_output_vocab == "targets":
            if not hasattr(task, "decoder_output_tokens"):
                raise ValueError("--decoder-output-vocab targets needs a task with decoder_output_tokens() "
                                 "(laser_multilingual)")
            output_tokens = task.decoder_output_tokens()
        elif args.decoder_output_vocab != "joint":
            raise ValueError(f"--decoder-output-vocab {args.decoder_output_vocab!r}: expected joint or targets")
        max_source_positions = getattr(args, "max_source_positions", None) or DEFAULTS["max_source_positions"]
        max_target_positions = getattr(args, "max_target_positions", None) or DEFAULTS["max_target_positions"]
        encoder = LaserLSTMEncoder(
            dictionary,
            embed_dim=args.encoder_embed_dim,
            hidden_size=args.encoder_hidden_size,
            num_layers=args.encoder_layers,
            bidirectional=args.encoder_bidirectional,
            dropout_in=args.encoder_dropout_in,
            dropout_out=args.encoder_dropout_out,
            max_source_positions=max_source_positions,
        )
        decoder = LaserLSTMDecoder(
            task.target_dictionary if task.target_dictionary is not None else dictionary,
            sentemb_dim=encoder.output_units,
            num_langs=num_langs,
            embed_dim=args.decoder_embed_dim,
            hidden_size=args.decoder_hidden_size,
            num_layers=args.decoder_layers,
            lang_embed_dim=args.decoder_lang_embed_dim,
            out_embed_dim=args.decoder_out_embed_dim,
            dropout_in=args.decoder_dropout_in,
            dropout_out=args.decoder_dropout_out,
            share_input_output_embed=args.share_decoder_input_output_embed,
            max_target_positions=max_target_positions,
            output_tokens=output_tokens,
        )
        nli_head = None
        if int(getattr(args, "nli_weight", 0) or 0) > 0:  # the task's option; see laser_task.py
            nli_head = NliHead(encoder.output_units, int(args.nli_hidden_dim), dropout=args.dropout)
        return cls(encoder, decoder, nli_head)

    def forward(
        self,
        src_tokens=None,
        src_lengths=None,
        prev_output_tokens=None,
        tgt_lang_id=None,
        src_lengths_host=None,
        premise_tokens=None,
        premise_lengths=None,
        hypothesis_tokens=None,
        hypothesis_lengths=None,
        **kwargs,
    ):
        """Translation batch: decoder output (logits, None).  NLI batch (``premise_*`` and
        ``hypothesis_*`` given, see the ``laser_multilingual`` task): B x 3 class logits.
        Both go through ``model(**net_input)``, so that DistributedDataParallel sees the call."""
        if premise_tokens is not None:
            return self.forward_nli(premise_tokens, premise_lengths, hypothesis_tokens, hypothesis_lengths)
        encoder_out = self.encoder(src_tokens, src_lengths=src_lengths, src_lengths_host=src_lengths_host)
        return self.decoder(prev_output_tokens, encoder_out=encoder_out, tgt_lang_id=tgt_lang_id)

    def get_targets(self, sample, net_output):
        """Targets as rows of the decoder's output (its output vocabulary, ``--decoder-output-vocab``);
        fairseq's cross-entropy takes them from here."""
        return self.decoder.output_targets(sample["target"])

    def forward_nli(self, premise_tokens, premise_lengths, hypothesis_tokens, hypothesis_lengths) -> Tensor:
        """NLI class logits (B x 3): premises and hypotheses are encoded in ONE encoder call
        (2B right-padded rows), max-pooled, and classified by the head on concat(p, h, p*h, |p-h|)."""
        if getattr(self, "nli_head", None) is None:
            raise ValueError("this model has no NLI head (trained without --nli-weight > 0)")
        bsz = premise_tokens.size(0)
        seqlen = max(premise_tokens.size(1), hypothesis_tokens.size(1))
        pad = self.encoder.padding_idx
        tokens = premise_tokens.new_full((2 * bsz, seqlen), pad)
        tokens[:bsz, : premise_tokens.size(1)] = premise_tokens
        tokens[bsz:, : hypothesis_tokens.size(1)] = hypothesis_tokens
        lengths = torch.cat([premise_lengths, hypothesis_lengths])
        sentemb = self.encoder(tokens, src_lengths=lengths)["sentemb"]
        return self.nli_head(sentemb[:bsz], sentemb[bsz:])

    def max_positions(self):
        return (self.encoder.max_positions(), self.decoder.max_positions())


@register_model_architecture("laser_lstm", "laser_lstm")
def base_architecture(args):
    # tied input/output embeddings need the projection to the embedding size, not the default 512
    tied_unsized = (_str2bool(getattr(args, "share_decoder_input_output_embed", None) or False)
                    and getattr(args, "decoder_out_embed_dim", None) is None)
    _fill(args, DEFAULTS)
    if tied_unsized:
        args.decoder_out_embed_dim = args.decoder_embed_dim
    _resolve_derived(args)


@register_model_architecture("laser_lstm", "laser_lstm_paper")
def laser_lstm_paper(args):
    _fill(args, PAPER_CONFIG)
    base_architecture(args)
