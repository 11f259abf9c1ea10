"""The command line on a user's mistakes: one line naming the file and what is wrong, exit status 1, no
traceback (laser_repro.core.errors.UserError, caught once in laser_repro.cli.main); and ``embed`` refusing
BPE codes other than those an encoder was trained with (laser_repro.models.subword)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from laser_repro.cli import main
from laser_repro.data import bpe
from laser_repro.models.bisent2vec.export import export_encoder as export_bisent2vec
from laser_repro.models.bisent2vec.trainer import train as train_bisent2vec
from laser_repro.models.launch import Rank

from test_bisent2vec import settings as bisent2vec_settings, write_pair
from test_multienc import LANGS, make_cipher_data, tiny_settings


def never():
    return False


@pytest.fixture(scope="module")
def bisent2vec_model(tmp_path_factory):
    """A trained eng-fra Bi-Sent2Vec model: its training checkpoint and its exported encoder."""
    root = tmp_path_factory.mktemp("b2v")
    data = write_pair(root / "d", n_train=50, n_valid=5)
    train_bisent2vec(data, root / "m", bisent2vec_settings(data, epochs=1), rank=Rank(), stop_requested=never)
    export_bisent2vec(root / "m" / "checkpoint_last.pt", root / "encoder.pt")
    (root / "text.txt").write_text("e1 e2\ne3\n")
    return root


def run_cli(capsys, *argv) -> tuple[int, list[str]]:
    """``main(argv)``: its status and the non-empty lines it wrote to stderr."""
    status = main([str(a) for a in argv])
    return status, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def embed_args(encoder, root: Path, lang: str = "eng") -> list:
    return ["embed", "--encoder", encoder, "--input", root / "text.txt", "--output", root / "out.npy", "--lang", lang]


def assert_one_line(status, lines, *fragments):
    assert status == 1
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    for fragment in fragments:
        assert str(fragment) in lines[0]


def test_wrong_language_for_a_pair_encoder(bisent2vec_model, capsys):
    status, lines = run_cli(capsys, *embed_args(bisent2vec_model / "encoder.pt", bisent2vec_model, "deu"))
    assert_one_line(status, lines, bisent2vec_model / "encoder.pt", "['eng', 'fra']", "'deu'")


def test_directory_as_encoder(bisent2vec_model, capsys):
    status, lines = run_cli(capsys, *embed_args(bisent2vec_model / "m", bisent2vec_model))
    assert_one_line(status, lines, bisent2vec_model / "m", "a directory")


def test_training_checkpoint_as_encoder(bisent2vec_model, tmp_path, capsys):
    checkpoint = bisent2vec_model / "m" / "checkpoint_last.pt"
    status, lines = run_cli(capsys, *embed_args(checkpoint, bisent2vec_model))
    assert_one_line(status, lines, checkpoint, "training checkpoint", "laser-repro export --family bisent2vec")
    # LaBSE's checkpoints name their family and format as its encoder files do (the KeyError 'encoder' of old)
    labse = tmp_path / "labse_checkpoint.pt"
    torch.save({"format": 1, "family": "labse", "stage": "train", "model": {}, "optimizer": {}, "settings": {}}, labse)
    status, lines = run_cli(capsys, *embed_args(labse, bisent2vec_model))
    assert_one_line(status, lines, labse, "training checkpoint", "--family labse")


def test_truncated_encoder_in_a_process_of_its_own(bisent2vec_model, tmp_path):
    """The console as a user sees it: stderr of a real process, its exit status."""
    cut = tmp_path / "cut.pt"
    cut.write_bytes((bisent2vec_model / "encoder.pt").read_bytes()[:300])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "laser_repro.cli", *map(str, embed_args(cut, bisent2vec_model))],
                          capture_output=True, text=True, env=env, timeout=300)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert_one_line(done.returncode, lines, cut, "truncated or corrupt")


def test_a_bug_keeps_its_traceback(monkeypatch, bisent2vec_model):
    from laser_repro.models import registry

    def broken(path):
        raise KeyError("a bug")

    monkeypatch.setattr(registry, "read_encoder_file", broken)
    with pytest.raises(KeyError, match="a bug"):
        main([str(a) for a in embed_args(bisent2vec_model / "encoder.pt", bisent2vec_model)])


# ---- the BPE codes of an encoder ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def multienc_model(tmp_path_factory):
    """A multienc encoder trained on cipher data BPE'd with its own codes, and other codes (another merge count)."""
    from laser_repro.models.multienc.export import export_encoder
    from laser_repro.models.multienc.trainer import train

    root = tmp_path_factory.mktemp("multienc")
    data = make_cipher_data(root / "data", n_train=100, n_valid=10)
    languages = dict(zip(LANGS, ["eng", "fra", "deu"]))  # codes embed's Moses step knows
    for split in ("train", "valid"):
        for cipher, lang in languages.items():
            (data / f"{split}.{cipher}").rename(data / f"{split}.{lang}")
    inputs = [data / f"train.{lang}" for lang in languages.values()]
    bpe.learn(data / "codes", root / "vocab", merges=8, inputs=inputs)
    bpe.learn(root / "other_codes", root / "other_vocab", merges=5, inputs=inputs)
    settings = tiny_settings({"sources": list(languages.values()), "targets": "all"}, max_update=2,
                             validate_interval_updates=2)
    settings["languages"] = list(languages.values())
    train(data, root / "save", settings, rank=Rank(), stop_requested=never)
    export_encoder(root / "save" / "checkpoint_last.pt", root / "encoder.pt")
    (root / "text.txt").write_text("a1 a2 a3\na4\n")
    return root


def test_embed_refuses_codes_other_than_the_encoders(multienc_model, capsys):
    root = multienc_model
    args = ["embed", "--encoder", root / "encoder.pt", "--input", root / "text.txt", "--output", root / "out.npy",
            "--lang", "eng", "--keep-case", "--codes"]
    status, lines = run_cli(capsys, *args, root / "other_codes")
    assert_one_line(status, lines, root / "other_codes", root / "encoder.pt", root / "data" / "codes")
    assert not (root / "out.npy").exists()
    assert main([str(a) for a in args] + [str(root / "data" / "codes")]) == 0
    assert np.load(root / "out.npy").shape[0] == 2


def test_an_encoder_exported_before_it_named_its_codes_is_accepted_with_a_warning(multienc_model, caplog):
    from laser_repro.models import subword

    root = multienc_model
    old = torch.load(root / "encoder.pt", weights_only=True)
    del old[subword.RECORD_KEY]
    torch.save(old, root / "old_encoder.pt")
    status = main(["embed", "--encoder", str(root / "old_encoder.pt"), "--input", str(root / "text.txt"),
                   "--output", str(root / "old.npy"), "--lang", "eng", "--codes", str(root / "other_codes")])
    assert status == 0 and np.load(root / "old.npy").shape[0] == 2
    assert any("names no BPE codes" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_retrieval_with_a_multienc_encoder_applies_its_codes(multienc_model, capsys):
    """Tatoeba / UN retrieval of a family that takes BPE codes (multienc): without --codes or with others a
    one-line refusal; with its codes both directions of every language, the model and its init in one process."""
    root = multienc_model
    (root / "fra.txt").write_text("a1 a2 a3\na4\na2 a1\n")
    (root / "eng.txt").write_text("a3 a2\na4 a1\na2\n")
    args = ["retrieval", "--task", "tatoeba", "--encoder", root / "encoder.pt", root / "encoder.pt", "--langs", "fra",
            "--xx", root / "fra.txt", "--eng", root / "eng.txt", "--output", root / "r.json", root / "r_init.json"]
    status, lines = run_cli(capsys, *args)
    assert_one_line(status, lines, root / "encoder.pt", "give --codes")
    status, lines = run_cli(capsys, *args, "--codes", root / "other_codes")
    assert_one_line(status, lines, root / "other_codes", root / "encoder.pt")
    assert main([str(a) for a in args] + ["--codes", str(root / "data" / "codes")]) == 0
    for out in ("r.json", "r_init.json"):
        fra = json.loads((root / out).read_text())["results"]["fra"]
        assert fra["n"] == 3 and 0 <= fra["error"] <= 100 and 0 <= fra["en_xx_error"] <= 100


# ---- every subcommand: expected errors are one line, a traceback with --debug (issue 40 item 10) ----------
from test_download import _payload, server  # noqa: E402,F401 (server: the misbehaving local HTTP server)


def laser_repro(*argv, env: dict | None = None) -> subprocess.CompletedProcess:
    """``laser-repro ARGV`` as a user runs it: the console script of this environment, in a process of its own."""
    script = Path(sys.executable).parent / "laser-repro"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "laser_repro.cli"]
    return subprocess.run([*command, *map(str, argv)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def stderr_lines(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip()]


def _fetch_case(server, tmp_path, case: str) -> tuple[str, list]:
    """The URL and the fetch options of one way a download fails, against the local server."""
    _, _, digest = _payload(server.root, "data.bin", n=3200)
    cases = {
        "html page": (f"{server.url}/html/en-fr.txt.zip", []),  # a login / moved page served with 200
        "html page, pinned checksum": (f"{server.url}/htmlbody/tatoeba.deu", ["--sha256", digest]),  # as text/plain
        "404": (f"{server.url}/files/en-kzj.txt.zip", []),
        "checksum": (f"{server.url}/files/data.bin", ["--sha256", "0" * 64]),
        "truncated": (f"{server.url}/short/data.bin", []),  # Content-Length 1000 bytes more than the body
        "stalled": (f"{server.url}/trickle/data.bin", ["--deadline", "0.5"]),  # a byte every 0.05 s
    }
    url, options = cases[case]
    dest = tmp_path / "out" / url.rsplit("/", 1)[1]
    return url, ["fetch", "--url", url, "--dest", dest, "--retries", "0", *options]


FETCH_CASES = {"html page": "an HTML page", "html page, pinned checksum": "an HTML page", "404": "HTTP 404", "checksum": "SHA-256 mismatch",
               "truncated": "truncated transfer", "stalled": "longer than its deadline of 0.5 s"}


@pytest.mark.parametrize("case", FETCH_CASES)
def test_a_failed_download_is_one_line_naming_the_url(server, tmp_path, case):
    url, argv = _fetch_case(server, tmp_path, case)
    done = laser_repro(*argv)
    lines = stderr_lines(done)
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("laser-repro fetch: error: ") and url in lines[0] and FETCH_CASES[case] in lines[0]
    assert not (tmp_path / "out" / url.rsplit("/", 1)[1]).exists()
    # --debug: the traceback, ending with the same error
    done = laser_repro("--debug", *argv)
    assert done.returncode == 1 and "Traceback (most recent call last)" in done.stderr
    assert stderr_lines(done)[-1].startswith("laser_repro.core.download.") and url in stderr_lines(done)[-1]


def test_debug_from_the_environment_and_with_the_workflows_provenance_spec(server, tmp_path):
    """Snakemake's command (laser_repro.workflow.shell, `W.logged`): `laser-repro --provenance-spec FILE CMD > log
    2>&1`: the log gets the one line (a traceback with LASER_REPRO_DEBUG=1), and no provenance record is written;
    --debug goes with --provenance-spec, and the record is written when the command succeeds."""
    url, argv = _fetch_case(server, tmp_path, "404")
    dest = Path(argv[argv.index("--dest") + 1])
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"rule": "fetch", "inputs": [], "outputs": [str(dest)], "log": None}))
    log = tmp_path / "fetch.log"
    command = f"laser-repro --provenance-spec {spec} {' '.join(map(str, argv))} > {log} 2>&1"
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    assert subprocess.run(command, shell=True, env=env, timeout=300).returncode == 1
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert len(lines) == 1 and url in lines[0] and "HTTP 404" in lines[0], lines
    assert not Path(f"{dest}.prov.json").exists()
    env["LASER_REPRO_DEBUG"] = "1"
    assert subprocess.run(command, shell=True, env=env, timeout=300).returncode == 1
    assert "Traceback (most recent call last)" in log.read_text() and "NotFoundError" in log.read_text()
    # a download that works, with both global options: the file and its record
    _, data, digest = _payload(server.root, "ok.bin", n=3200)
    ok = tmp_path / "ok.bin"
    spec.write_text(json.dumps({"rule": "fetch", "inputs": [], "outputs": [str(ok)], "log": None}))
    done = laser_repro("--debug", "--provenance-spec", spec, "fetch", "--url", f"{server.url}/files/ok.bin",
                       "--dest", ok, "--sha256", digest)
    assert done.returncode == 0, done.stderr
    assert ok.read_bytes() == data
    assert json.loads(Path(f"{ok}.prov.json").read_text())["rule"] == "fetch"


def test_missing_input_file_of_any_subcommand_is_one_line(tmp_path, capsys):
    """A FileNotFoundError of an input (here bpe-dict's vocabulary, opened by the standard library)."""
    missing = tmp_path / "vocab.txt"
    status, lines = run_cli(capsys, "bpe-dict", "--vocab", missing, "--output", tmp_path / "dict.txt")
    assert_one_line(status, lines, missing, "No such file or directory", "check the path")
    with pytest.raises(FileNotFoundError):
        main(["--debug", "bpe-dict", "--vocab", str(missing), "--output", str(tmp_path / "dict.txt")])


def test_value_error_raised_on_purpose_is_one_line_and_a_librarys_is_a_bug(tmp_path, monkeypatch):
    """A ValueError of a `raise` in laser_repro is a message for the user; one from inside a library (or an
    implicit one of our code) is a bug, with its traceback."""
    from laser_repro.core import errors

    def raise_here():
        raise ValueError(f"{tmp_path}/x.tsv: line 3 has 2 columns, expected 3")

    with pytest.raises(ValueError) as ei:
        raise_here()
    assert errors.expected_error(ei.value) is None  # a test's raise: not the package's
    monkeypatch.setattr(errors, "PACKAGE_DIR", str(Path(__file__).parent) + os.sep)
    assert errors.expected_error(ei.value) == f"{tmp_path}/x.tsv: line 3 has 2 columns, expected 3"
    with pytest.raises(ValueError) as ei:
        int("x")
    assert errors.expected_error(ei.value) is None
    with pytest.raises(ValueError) as ei:
        a, b = "one two three".split()
    assert errors.expected_error(ei.value) is None


def test_the_expected_error_types_exist():
    """core.errors names them (it imports no other module of the package): a renamed one would be a bug's."""
    import importlib

    from laser_repro.core import errors

    for module, name in errors.EXPECTED:
        assert issubclass(getattr(importlib.import_module(module), name), Exception), (module, name)


@pytest.mark.parametrize("command", ["embed", "similarity", "retrieval"])
def test_bad_input_of_embed_similarity_retrieval_is_still_one_line(bisent2vec_model, tmp_path, command):
    """In a process of its own: a missing text file (embed, similarity), a test set whose two sides differ in
    length (retrieval: a ValueError of laser_repro's own)."""
    root = bisent2vec_model
    (tmp_path / "valid.eng").write_text("e1 e2\ne3\n")
    (tmp_path / "fra.txt").write_text("f1\nf2\nf3\n")
    argv, named = {
        "embed": (["embed", "--encoder", root / "encoder.pt", "--input", tmp_path / "missing.txt",
                   "--output", tmp_path / "o.npy", "--lang", "eng"], tmp_path / "missing.txt"),
        "similarity": (["similarity", "--encoder", root / "encoder.pt", "--data-dir", tmp_path, "--langs", "eng",
                        "fra", "--output", tmp_path / "s.json"], tmp_path / "valid.fra"),
        "retrieval": (["retrieval", "--task", "tatoeba", "--encoder", root / "encoder.pt", "--langs", "fra",
                       "--xx", tmp_path / "fra.txt", "--eng", root / "text.txt", "--output", tmp_path / "r.json"],
                      tmp_path / "fra.txt")}[command]
    done = laser_repro(*argv)
    assert_one_line(done.returncode, stderr_lines(done), named)
    assert stderr_lines(done)[0].startswith(f"laser-repro {command}: error: ")
    done = laser_repro("--debug", *argv)
    assert done.returncode == 1 and "Traceback (most recent call last)" in done.stderr


def test_fetch_with_a_missing_pair_url_list_is_one_line(server, tmp_path, capsys):
    """fetch --absent-ok --pair-urls-from FILE that is absent: the option's error, not a NameError."""
    url, argv = _fetch_case(server, tmp_path, "404")
    status, lines = run_cli(capsys, *argv, "--absent-ok", "--pair-urls-from", tmp_path / "pairs.json")
    assert_one_line(status, lines, "--pair-urls-from", tmp_path / "pairs.json", "no such file")


# ---- N-way files of different lengths name every language's count (issue 40 item 11) ---------------------
def _nway_files(root: Path, counts: dict) -> dict:
    files = {}
    for lang, n in counts.items():
        files[lang] = root / f"flores.{lang}"
        files[lang].write_text("".join(f"{lang} sentence {i}\n" for i in range(n)))
    return files


def test_nway_file_with_another_line_count_names_every_count(tmp_path, capsys):
    files = _nway_files(tmp_path, {"eng": 400, "fra": 399, "deu": 400})

    def nway_text(lang, *more):  # the raw file as its own Moses lines: the same count is all that matters here
        status, lines = run_cli(capsys, "nway-text", "--raw", files[lang], "--moses", files[lang], "--lang", lang,
                                "--out-dir", tmp_path / "out", "--heldout", 340, 400, *more)
        # the error after the progress bar of the file's lines (laser_repro.core.textio.iter_lines)
        return status, [line for line in lines if not re.fullmatch(r"fra flores\.fra: \d+ lines \[.*\]", line)]

    others = [a for lang in ("eng", "deu") for a in ("--aligned-with", lang, files[lang])]
    status, lines = nway_text("fra", *others)
    assert_one_line(status, lines, f"fra 399 lines ({files['fra']}), eng 400 lines ({files['eng']}), deu 400 lines "
                                   f"({files['deu']})", "fix or replace the file of fra")
    assert not (tmp_path / "out" / "tok" / "train.fra").exists()
    # without the other languages' files: the language, its file and its count, and what may be wrong
    status, lines = nway_text("fra")
    assert_one_line(status, lines, f"fra: {files['fra']}: 399 lines, so held-out lines 340-399 are not all there",
                    "heldout_lines", "shorter than the other languages'")
    # the aligned ones pass
    assert nway_text("eng", "--aligned-with", "deu", files["deu"])[0] == 0
    assert len((tmp_path / "out" / "tok" / "valid.eng").read_text().splitlines()) == 60


def test_two_nway_files_of_different_lengths_name_no_culprit(tmp_path):
    from laser_repro.data.nway import line_counts_differ

    files = _nway_files(tmp_path, {"eng": 400, "fra": 399})
    message = line_counts_differ({lang: [path] for lang, path in files.items()})
    assert f"eng 400 lines ({files['eng']}), fra 399 lines ({files['fra']})" in message
    assert "find the file that is wrong" in message
    assert line_counts_differ({"eng": [files["eng"]], "deu": [files["eng"]]}) is None
