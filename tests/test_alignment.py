"""The LASER objective must align languages: on a synthetic N-way corpus with a known answer (four
"languages" that are word-by-word ciphers of one another, no token shared; laser_repro.evaluation.synthetic),
the trained encoder must find the translation of (nearly) every sentence, held-out sentences
included, while the same encoder at update 0 is at chance. The second test shows the threshold
catches a broken objective: an encoder that gets no gradient stays at chance."""

import pytest

pytest.importorskip("fairseq")

from laser_repro.evaluation import synthetic  # noqa: E402

pytestmark = pytest.mark.slow

#: the error (%) the trained encoder must stay under, every language, both directions, both splits
MAX_TRAINED_ERROR = 5.0
#: the error (%) an encoder that learned nothing stays above (chance: 99% of 100 held-out sentences)
MIN_UNTRAINED_ERROR = 80.0
SETTINGS = dict(train={"max_epoch": 20}, reverse_odd=False)


@pytest.fixture(autouse=True)
def _single_thread(torch_single_thread):
    pass


def errors(result, encoder):
    return [e[d] for split in ("train", "heldout") for e in result[encoder][split].values()
            for d in ("en_xx_error", "xx_en_error")]


def test_laser_objective_aligns_cipher_languages(tmp_path):
    result = synthetic.run_alignment_experiment(tmp_path, **SETTINGS)
    assert min(errors(result, "init")) > MIN_UNTRAINED_ERROR, result["init"]
    assert max(errors(result, "trained")) <= MAX_TRAINED_ERROR, result["trained"]


def test_threshold_catches_an_encoder_that_does_not_learn(tmp_path, monkeypatch):
    from laser_repro.models.laser.fairseq_plugin.laser_lstm import LaserLSTMEncoder

    forward = LaserLSTMEncoder.forward

    def detached(self, src_tokens, src_lengths, **kwargs):  # the decoder learns, the encoder never does
        out = forward(self, src_tokens, src_lengths, **kwargs)
        return {"sentemb": out["sentemb"].detach()}

    monkeypatch.setattr(LaserLSTMEncoder, "forward", detached)
    result = synthetic.run_alignment_experiment(tmp_path, **SETTINGS)
    assert min(errors(result, "trained")) > MIN_UNTRAINED_ERROR, result["trained"]
