"""The laser_lstm fairseq model: shapes, padding invariance, incremental decoding, paper size."""

from argparse import Namespace
from types import SimpleNamespace

import pytest
import torch

fairseq = pytest.importorskip("fairseq")

import laser_repro.models.laser.fairseq_plugin  # noqa: E402,F401  (registers task + model)
from fairseq.data import Dictionary  # noqa: E402
from fairseq.models import ARCH_MODEL_REGISTRY, ARCH_CONFIG_REGISTRY  # noqa: E402
from laser_repro.models.laser.fairseq_plugin.laser_lstm import (  # noqa: E402
    DEFAULTS,
    PAPER_CONFIG,
    LaserLSTMModel,
    base_architecture,
    laser_lstm_paper,
)

@pytest.fixture(autouse=True)
def _single_thread(torch_single_thread):
    pass


SMALL = dict(
    encoder_embed_dim=12,
    encoder_hidden_size=10,
    encoder_layers=2,
    encoder_bidirectional=True,
    decoder_embed_dim=12,
    decoder_hidden_size=24,
    decoder_layers=1,
    decoder_lang_embed_dim=4,
    dropout=0.1,
)


def make_dictionary(n_symbols: int) -> Dictionary:
    d = Dictionary()
    for i in range(n_symbols):
        d.add_symbol(f"tok{i}")
    return d


def build(dictionary, target_langs=("eng", "spa"), arch=base_architecture, **overrides):
    args = Namespace(**overrides)
    arch(args)
    task = SimpleNamespace(source_dictionary=dictionary, target_dictionary=dictionary, target_langs=list(target_langs))
    return LaserLSTMModel.build_model(args, task)


def right_padded(seqs, pad):
    T = max(len(s) for s in seqs)
    out = torch.full((len(seqs), T), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s)
    return out, torch.tensor([len(s) for s in seqs])


def random_sentences(dictionary, lengths, generator):
    lo, hi = dictionary.nspecial, len(dictionary)
    return [torch.randint(lo, hi, (n - 1,), generator=generator).tolist() + [dictionary.eos()] for n in lengths]


def test_registered_architectures():
    assert ARCH_MODEL_REGISTRY["laser_lstm"] is LaserLSTMModel
    assert ARCH_MODEL_REGISTRY["laser_lstm_paper"] is LaserLSTMModel
    assert "laser_lstm_paper" in ARCH_CONFIG_REGISTRY
    args = Namespace()
    laser_lstm_paper(args)
    for key, value in PAPER_CONFIG.items():
        assert getattr(args, key) == value
    # the paper numbers of section 3.1/3.2
    assert (args.encoder_layers, args.encoder_hidden_size, args.encoder_embed_dim) == (5, 512, 320)
    assert (args.decoder_layers, args.decoder_hidden_size, args.decoder_lang_embed_dim) == (1, 2048, 32)
    assert args.dropout == 0.1 and args.decoder_out_embed_dim == 512  # the reference trainer's projection
    # explicit command-line values win over architecture defaults
    args = Namespace(encoder_layers=1)
    laser_lstm_paper(args)
    assert args.encoder_layers == 1
    assert set(PAPER_CONFIG) <= set(DEFAULTS)


def test_forward_shapes():
    torch.manual_seed(0)
    d = make_dictionary(30)
    model = build(d, **SMALL)
    g = torch.Generator().manual_seed(1)
    src, src_len = right_padded(random_sentences(d, [7, 3, 5], g), d.pad())
    tgt = random_sentences(d, [4, 6, 2], g)
    prev, _ = right_padded([[d.eos()] + t[:-1] for t in tgt], d.pad())
    enc = model.encoder(src, src_len)["sentemb"]
    assert enc.shape == (3, 2 * SMALL["encoder_hidden_size"])
    logits, extra = model(src, src_len, prev, tgt_lang_id=torch.tensor([0, 1, 0]))
    assert logits.shape == (3, prev.size(1), len(d))
    assert extra is None
    # the language id matters (it is an input of the decoder)
    model.eval()
    a, _ = model(src, src_len, prev, tgt_lang_id=torch.tensor([0, 0, 0]))
    b, _ = model(src, src_len, prev, tgt_lang_id=torch.tensor([1, 1, 1]))
    assert not torch.allclose(a, b)
    # several target languages -> the id is required
    with pytest.raises(ValueError):
        model(src, src_len, prev)
    # left padding is refused (the encoder packs right-padded input)
    left = torch.full_like(src, d.pad())
    for i, n in enumerate(src_len.tolist()):
        left[i, src.size(1) - n :] = src[i, :n]
    with pytest.raises(ValueError):
        model.encoder(left, src_len)


def test_max_pool_ignores_padding():
    torch.manual_seed(0)
    d = make_dictionary(40)
    model = build(d, **SMALL).eval()
    g = torch.Generator().manual_seed(2)
    seqs = random_sentences(d, [9, 2, 5, 1, 7], g)
    src, src_len = right_padded(seqs, d.pad())
    with torch.no_grad():
        ref = model.encoder(src, src_len)["sentemb"]
        # garbage ids in the padding positions
        noisy = src.clone()
        pad_mask = torch.arange(src.size(1)).unsqueeze(0) >= src_len.unsqueeze(1)
        noisy[pad_mask] = torch.randint(4, len(d), (int(pad_mask.sum()),), generator=g)
        assert torch.equal(model.encoder(noisy, src_len)["sentemb"], ref)
        # extra padding columns
        wide = torch.cat([src, torch.full((src.size(0), 6), d.pad(), dtype=torch.long)], dim=1)
        assert torch.allclose(model.encoder(wide, src_len)["sentemb"], ref, atol=1e-6, rtol=0)
        # each sentence alone, without any padding
        for i, s in enumerate(seqs):
            one = model.encoder(torch.tensor([s]), torch.tensor([len(s)]))["sentemb"][0]
            assert torch.allclose(one, ref[i], atol=1e-6, rtol=0)
    # padding positions never win the max: all values are finite
    assert torch.isfinite(ref).all()


def test_incremental_decoding_matches_full_forward():
    torch.manual_seed(0)
    d = make_dictionary(25)
    model = build(d, **SMALL).eval()
    g = torch.Generator().manual_seed(3)
    src, src_len = right_padded(random_sentences(d, [6, 4], g), d.pad())
    prev = torch.tensor([[d.eos(), 5, 6, 7, 8], [d.eos(), 9, 10, 11, 12]])
    lang = torch.tensor([1, 0])
    with torch.no_grad():
        enc = model.encoder(src, src_len)
        full, _ = model.decoder(prev, encoder_out=enc, tgt_lang_id=lang)
        state = {}
        steps = [model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state, tgt_lang_id=lang)[0]
                 for t in range(prev.size(1))]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5, rtol=0)


def test_shared_output_embedding():
    d = make_dictionary(20)
    model = build(d, share_decoder_input_output_embed=True, **SMALL)
    assert model.decoder.fc_out is None
    src, src_len = right_padded([[5, 6, d.eos()]], d.pad())
    logits, _ = model(src, src_len, torch.tensor([[d.eos(), 5, 6]]), tgt_lang_id=torch.tensor([1]))
    assert logits.shape == (1, 3, len(d))


# vocabulary of the paper-size count: 50,000 BPE symbols (joint BPE, 50k operations; paper
# section 3.1) + fairseq's 4 specials <s> <pad> </s> <unk>  =>  V = 50,004
PAPER_BPE_SYMBOLS = 50_000


def lstm_params(input_size: int, hidden: int) -> int:
    """One LSTM layer, one direction: W_ih (4h x in) + W_hh (4h x h) + b_ih (4h) + b_hh (4h)."""
    return 4 * hidden * (input_size + hidden) + 8 * hidden


def linear_params(n_in: int, n_out: int) -> int:
    return n_in * n_out + n_out


def paper_param_count(V: int) -> tuple[int, int]:
    E, H, L, S = 320, 512, 5, 1024  # input embedding, encoder LSTM, encoder layers, sentence embedding
    HD, LANG, NL = 2048, 32, 2  # decoder LSTM, language embedding, number of target languages
    P = 512  # output projection (the reference trainer's decoder_out_embed_dim)
    encoder = V * E + 2 * lstm_params(E, H) + (L - 1) * 2 * lstm_params(2 * H, H)
    decoder = (
        V * E  # token embeddings
        + NL * LANG  # language-ID embeddings
        + linear_params(S, 2 * HD)  # [h0; c0] from the sentence embedding (sentemb2init)
        + lstm_params(E + S + LANG, HD)  # input = [token emb; sentence emb; language emb]
        + linear_params(HD, P)  # hidden -> decoder-out-embed-dim (512)
        + linear_params(P, V)  # -> vocabulary
    )
    return encoder, decoder


def test_paper_config_parameter_count():
    d = make_dictionary(PAPER_BPE_SYMBOLS)
    V = len(d)
    assert V == 50_004
    with torch.device("meta"):  # no memory, no init cost
        model = build(d, arch=laser_lstm_paper)
    n_encoder = sum(p.numel() for p in model.encoder.parameters())
    n_total = sum(p.numel() for p in model.parameters())
    exp_encoder, exp_decoder = paper_param_count(V)
    assert n_encoder == exp_encoder == 44_615_936
    assert n_total == exp_encoder + exp_decoder == 119_582_612
    assert model.encoder.output_units == 1024
    print(f"paper config (V={V}): encoder {n_encoder:,} parameters, total {n_total:,}")


def test_target_output_vocabulary_is_the_joint_softmax_restricted_to_target_tokens():
    """--decoder-output-vocab targets: the output layer has a row per target-side token (+ specials);
    its log-probabilities are the joint model's softmax taken over those rows only; a target token outside
    them scores as <unk>, padding keeps its id (ignored by the loss)."""
    torch.manual_seed(0)
    d = make_dictionary(30)
    target_side = [9, 4, 17, 12, 4]
    joint = build(d, **SMALL)
    args = Namespace(**SMALL, decoder_output_vocab="targets")
    base_architecture(args)
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d, target_langs=["eng", "spa"],
                           decoder_output_tokens=lambda: target_side)
    restricted = LaserLSTMModel.build_model(args, task)
    rows = restricted.decoder.output_tokens
    assert rows.tolist() == [0, 1, 2, 3, 4, 9, 12, 17]  # the specials, then the target-side ids, sorted
    assert restricted.decoder.fc_out.weight.shape == (len(rows), restricted.decoder.fc_out.in_features)
    # same weights: the joint model's parameters, its output rows selected
    state = joint.state_dict()
    state["decoder.fc_out.weight"] = state["decoder.fc_out.weight"][rows]
    state["decoder.fc_out.bias"] = state["decoder.fc_out.bias"][rows]
    state["decoder.output_tokens"] = rows
    state["decoder.output_index"] = restricted.decoder.output_index
    restricted.load_state_dict(state, strict=True)
    joint.eval(), restricted.eval()
    g = torch.Generator().manual_seed(1)
    src, src_len = right_padded(random_sentences(d, [7, 3], g), d.pad())
    prev, _ = right_padded([[d.eos(), 9, 12], [d.eos(), 4]], d.pad())
    lang = torch.tensor([0, 1])
    full = torch.log_softmax(joint(src, src_len, prev, tgt_lang_id=lang)[0], dim=-1)
    out = restricted(src, src_len, prev, tgt_lang_id=lang)
    assert out[0].shape == (2, 3, len(rows))
    lprobs = restricted.get_normalized_probs(out, log_probs=True)
    expected = torch.log_softmax(full[..., rows], dim=-1)
    assert torch.allclose(lprobs, expected, atol=1e-6)
    # targets: dictionary ids -> output rows; 25 is no target-side token -> <unk>'s row
    target = torch.tensor([[9, 17, d.eos()], [25, d.eos(), d.pad()]])
    mapped = restricted.get_targets({"target": target}, out)
    assert mapped.tolist() == [[5, 7, 2], [3, 2, 1]]
    assert joint.get_targets({"target": target}, None) is target
    # a tied output layer takes the embedding rows of the same tokens
    tied = Namespace(**{**SMALL, "decoder_out_embed_dim": SMALL["decoder_embed_dim"]},
                     share_decoder_input_output_embed=True, decoder_output_vocab="targets")
    base_architecture(tied)
    tied_model = LaserLSTMModel.build_model(tied, task)
    assert tied_model(src, src_len, prev, tgt_lang_id=lang)[0].shape == (2, 3, len(rows))


def test_target_output_vocabulary_refuses_ids_outside_the_dictionary():
    d = make_dictionary(10)
    args = Namespace(**SMALL, decoder_output_vocab="targets")
    base_architecture(args)
    task = SimpleNamespace(source_dictionary=d, target_dictionary=d, target_langs=["eng"],
                           decoder_output_tokens=lambda: [5, len(d)])
    with pytest.raises(ValueError, match="outside the dictionary"):
        LaserLSTMModel.build_model(args, task)
    no_tokens = SimpleNamespace(source_dictionary=d, target_dictionary=d, target_langs=["eng"])
    with pytest.raises(ValueError, match="decoder_output_tokens"):
        LaserLSTMModel.build_model(args, no_tokens)
