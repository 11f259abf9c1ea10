"""This project's exported encoders in the field's own client libraries, on a GPU, against our CPU pipeline.

``prepare OUT_DIR`` (here, on the CPU, with this project installed): exports a LASER encoder trained on
SentencePiece to LASER2's layout (``laser-repro export --format laser2``) and a LaBSE encoder to a
sentence-transformers directory (``--format sentence-transformers``; without ``--labse-encoder`` a small one is
trained first on FLORES lines the check does not use), writes FLORES-200 dev sentences and the reference vectors
of OUR pipeline (LASER: ``laser-repro embed --codes SPM --lang xx``; LaBSE: ``LabseEncoder.embed`` of the
family's prepared text), and the CPU clients' differences from them (``manifest.json``).

``check PREPARED_DIR OUT_JSON [--device cuda|cpu]`` (there; imports nothing of this project): loads both
exports with ``laser_encoders.models.SentenceEncoder`` (its own tokenizer on the raw sentences) and
``SentenceTransformer(..., local_files_only=True)``, each in IEEE fp32 (TF32 off), fp32 with PyTorch's
defaults (cuDNN TF32 on) and fp16, and writes the max |difference| and min cosine from the reference vectors,
the xx->eng nearest-neighbour error (%) of the client's vectors beside the reference's, throughput (one call on
the whole set after a warm-up; LASER2's includes its tokenizer), TF32 settings and versions. Exit 1 when a
client does not load or its IEEE fp32 vectors differ by more than :data:`FP32_THRESHOLD`.

    .venv/bin/python scripts/gpu_client_exports.py prepare .device_exports
    python3 scripts/gpu_client_exports.py check .device_exports out/client_exports.json --device cuda
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FP32_THRESHOLD = 1e-4  # fp32 max |difference| a client may show from our CPU vectors (float rounding: ~1e-6)
PIVOT = "eng"
MANIFEST = "manifest.json"
CLIENTS = {"laser2": "laser2", "sentence_transformers": "labse-st"}  # client -> its export's directory


# ---- shared: comparison and retrieval (numpy only) -----------------------------------------------------------

def compare(got: np.ndarray, ref: np.ndarray) -> dict:
    got, ref = got.astype(np.float64), ref.astype(np.float64)
    if got.shape != ref.shape:
        raise ValueError(f"vectors of shape {got.shape}, the reference's are {ref.shape}")
    cos = (got * ref).sum(1) / np.maximum(np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1), 1e-12)
    return {"max_abs_diff": float(np.abs(got - ref).max()), "min_cosine": float(cos.min())}


def nearest_english(vectors: np.ndarray, langs: list[str], n: int) -> dict[str, np.ndarray]:
    """Per language but English: the index of each sentence's nearest English row by cosine (ties: the lowest
    index, as laser_repro.models.similarity). Rows: ``n`` per language, in ``langs``' order."""
    unit = vectors.astype(np.float32) / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    blocks = {lang: unit[i * n:(i + 1) * n] for i, lang in enumerate(langs)}
    return {lang: np.argmax(blocks[lang] @ blocks[PIVOT].T, axis=1) for lang in langs if lang != PIVOT}


def xsim_errors(nearest: dict[str, np.ndarray]) -> dict[str, float]:
    """xx -> eng error (%): the nearest English sentence is not the aligned one."""
    return {lang: 100.0 * float(np.mean(nn != np.arange(len(nn)))) for lang, nn in nearest.items()}


# ---- the clients (no import of this project) ------------------------------------------------------------------

def load_client(name: str, export_dir: Path, device: str, fp16: bool, batch: int):
    """A function ``lines -> float32 vectors`` of one client library on ``device``."""
    if name == "laser2":
        from laser_encoders.models import SentenceEncoder

        # cpu=False puts it on the GPU when torch sees one; one batch of the whole set
        encoder = SentenceEncoder(str(export_dir / "laser2.pt"), spm_model=str(export_dir / "laser2.spm"),
                                  spm_vocab=str(export_dir / "laser2.cvocab"), cpu=device == "cpu", fp16=fp16,
                                  max_sentences=batch)
        if encoder.use_cuda != (device == "cuda"):
            raise RuntimeError(f"laser_encoders runs on {'cuda' if encoder.use_cuda else 'cpu'}, not {device}")
        return lambda lines: np.asarray(encoder(lines), dtype=np.float32)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(export_dir), device=device, local_files_only=True)
    if fp16:
        model.half()
    return lambda lines: np.asarray(model.encode(lines, batch_size=batch, convert_to_numpy=True), dtype=np.float32)


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def tf32_flags() -> dict:
    import warnings

    import torch

    with warnings.catch_warnings():  # torch >= 2.9 calls allow_tf32 superseded; it still answers and applies
        warnings.simplefilter("ignore")
        return {"matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                "float32_matmul_precision": torch.get_float32_matmul_precision()}


@contextmanager
def tf32(allow):
    """TF32 in matrix products and cuDNN (its LSTMs too) on or off while it lasts; None: PyTorch's defaults as
    found (cuDNN TF32 on: ~3e-4 on an LSTM encoder, laser_repro.models.device.exact_fp32)."""
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        if allow is not None:
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allow
        try:
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


#: name -> (fp16 weights, TF32): "fp32" is IEEE float32, the one the threshold is for; "fp32_torch_defaults" is
#: what a user of the client gets without touching PyTorch's settings
VARIANTS = {"fp32": (False, False), "fp32_torch_defaults": (False, None), "fp16": (True, None)}


def run_client(name: str, prepared: Path, sentences: dict, device: str, variant: str) -> dict:
    """Load, embed (that call is the warm-up), then time one more call on the whole set; compare with the
    reference vectors and their retrieval."""
    fp16, allow_tf32 = VARIANTS[variant]
    langs, n = sentences["languages"], sentences["per_language"]
    lines = [line for lang in langs for line in sentences[name][lang]]
    ref = np.load(prepared / f"{name}_reference.npy")
    with tf32(allow_tf32):
        flags = tf32_flags()
        t0 = time.perf_counter()
        embed = load_client(name, prepared / CLIENTS[name], device, fp16, len(lines))
        load_s = time.perf_counter() - t0
        got = embed(lines)
        _sync(device)
        t0 = time.perf_counter()
        embed(lines)
        _sync(device)
        seconds = time.perf_counter() - t0
    theirs_nn, ours_nn = nearest_english(got, langs, n), nearest_english(ref, langs, n)
    theirs, ours = xsim_errors(theirs_nn), xsim_errors(ours_nn)
    differ = {lang: [ours[lang], theirs[lang]] for lang in ours if theirs[lang] != ours[lang]}
    changed = sum(int(np.sum(theirs_nn[lang] != ours_nn[lang])) for lang in ours)
    return {**compare(got, ref), "tf32": flags, "load_s": round(load_s, 3),
            "sentences_per_s": round(len(lines) / seconds, 1),
            "retrieval": {"pairs": len(ours), "same_error_in_every_pair": not differ,
                          "pairs_that_differ": differ,  # lang: [reference error %, this client's]
                          "neighbours_changed": changed,  # sentences whose nearest English sentence is another
                          "mean_error_reference": float(np.mean(list(ours.values()))),
                          "mean_error": float(np.mean(list(theirs.values()))),
                          "max_error_difference": max((abs(a - b) for a, b in differ.values()), default=0.0),
                          "errors": theirs}}


def environment(device: str) -> dict:
    import importlib.metadata as md

    import torch

    def version(dist: str):
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None

    env = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           **{d: version(d) for d in ("laser-encoders", "fairseq-fixed", "fairseq", "sentence-transformers",
                                      "transformers", "tokenizers", "sentencepiece", "sacremoses", "numpy")},
           "tf32_torch_defaults": tf32_flags()}
    if device == "cuda" and torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
    return env


def check(prepared: Path, out_json: Path, device: str) -> int:
    import torch

    prepared = Path(prepared)
    manifest = json.loads((prepared / MANIFEST).read_text(encoding="utf-8"))
    sentences = json.loads((prepared / "sentences.json").read_text(encoding="utf-8"))
    report = {"device": device, "fp32_threshold_max_abs_diff": FP32_THRESHOLD, "failures": [],
              "sentences": {"languages": sentences["languages"], "per_language": sentences["per_language"],
                            "flores_lines": sentences["flores_lines"]},
              "environment": environment(device)}
    no_gpu = device == "cuda" and not torch.cuda.is_available()
    if no_gpu:
        report["failures"].append("--device cuda: torch sees no GPU")
    for name in CLIENTS:
        entry = report[name] = {"cpu_client_here": manifest["cpu_clients"].get(name)}  # prepare's CPU figures
        for variant in () if no_gpu else VARIANTS:
            try:
                entry[variant] = run_client(name, prepared, sentences, device, variant)
            except Exception as err:  # recorded: one client or variant failing does not hide the others
                entry[variant] = {"error": f"{type(err).__name__}: {err}", "traceback": traceback.format_exc()[-2000:]}
            result = entry[variant]
            if variant == "fp32" and "error" in result:
                report["failures"].append(f"{name} fp32: {result['error']}")
            elif variant == "fp32" and not result["max_abs_diff"] <= FP32_THRESHOLD:
                report["failures"].append(f"{name} fp32: max |diff| {result['max_abs_diff']:.3g} > {FP32_THRESHOLD}")
    report["ok"] = not report["failures"]
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for name in CLIENTS:
        for variant in VARIANTS:
            r = report[name].get(variant, {"error": "not run"})
            if "error" in r:
                print(f"{name} {variant} ({device}): FAILED {r['error']}")
                continue
            ret = r["retrieval"]
            print(f"{name} {variant} ({device}): max |diff| {r['max_abs_diff']:.2e}, min cos {r['min_cosine']:.7f}, "
                  f"xx->eng error {ret['mean_error']:.2f}% (reference {ret['mean_error_reference']:.2f}%, "
                  f"{len(ret['pairs_that_differ'])}/{ret['pairs']} pairs differ, "
                  f"{ret['neighbours_changed']} neighbours changed), {r['sentences_per_s']:.0f} sent/s")
    print(f"client_exports: {'ok' if report['ok'] else 'FAILED: ' + '; '.join(report['failures'])} -> {out_json}")
    return 0 if report["ok"] else 1


# ---- prepare (this project, on the CPU) -----------------------------------------------------------------------

@contextmanager
def cwd(path: Path):
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def flores_lines(flores: Path, lang: str, start: int, stop: int | None) -> list[str]:
    from laser_repro.core import languages

    path = flores / f"{languages.get(lang).flores}.dev"
    return path.read_text(encoding="utf-8").splitlines()[start:stop]


def build_labse(work: Path, texts: dict[str, list[str]], *, updates: int, vocab_size: int) -> Path:
    """A small LaBSE dual encoder trained on ``texts`` (line-aligned, the family's input text), as
    tests/test_client_exports.py builds one: a tenth of the lines held out for its validation."""
    from laser_repro.models.labse import vocab
    from laser_repro.models.labse.export import export_encoder
    from laser_repro.models.labse.trainer import train
    from laser_repro.models.launch import Rank
    from laser_repro.models.training_loop import CHECKPOINT_LAST

    n_valid = max(1, len(texts[PIVOT]) // 10)
    (work / "tok").mkdir(parents=True)
    for lang, lines in texts.items():
        for split, part in (("valid", lines[:n_valid]), ("train", lines[n_valid:])):
            (work / "tok" / f"{split}.{lang}").write_text("".join(f"{line}\n" for line in part), encoding="utf-8")
    tok, _ = vocab.learn({lang: work / "tok" / f"train.{lang}" for lang in texts}, vocab_size)
    tok.save(str(work / "tokenizer.json"))
    settings = {"stage": "dual", "languages": list(texts), "pivot": PIVOT, "tokenizer": str(work / "tokenizer.json"),
                "encoder": {"layers": 2, "hidden": 64, "heads": 4, "intermediate": 128, "dropout": 0.0,
                            "max_len": 64},
                "loss": {"margin": 0.3, "scale": 10.0},
                "train": {"batch_size": 32, "lr": 1e-3, "max_update": updates, "validate_interval_updates": updates,
                          "log_interval": 0}}
    train(work, work / "save", settings, rank=Rank(), stop_requested=lambda: False)
    # the last checkpoint, not the best: on so few lines the best can be the untrained one, and trained weights
    # are what the check is about (this model's retrieval is near chance either way)
    export_encoder(work / "save" / CHECKPOINT_LAST, work / "encoder.pt")
    return work / "encoder.pt"


def laser_reference(encoder: Path, spm_model: Path, raw: dict[str, list[str]], work: Path) -> np.ndarray:
    """Our vectors of the raw lines: ``laser-repro embed --codes SPM --lang xx`` itself (LASER2's normalisation,
    SentencePiece, our encoder), one --input per language."""
    from laser_repro import cli

    argv = ["embed", "--encoder", str(encoder), "--codes", str(spm_model)]
    for lang, lines in raw.items():
        (work / f"raw.{lang}").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        argv += ["--input", str(work / f"raw.{lang}"), "--output", str(work / f"{lang}.npy"), "--lang", lang]
    if cli.main(argv) != 0:
        raise SystemExit("prepare: laser-repro embed failed")
    return np.concatenate([np.load(work / f"{lang}.npy") for lang in raw]).astype(np.float32)


def ignore_in_git(out: Path) -> None:
    """A folder directly in this repository: add it to .git/info/exclude (it is carried, not committed)."""
    exclude = REPO / ".git" / "info" / "exclude"
    if out.resolve().parent == REPO and exclude.is_file():
        line = f"/{out.name}/"
        if line not in exclude.read_text(encoding="utf-8").splitlines():
            with open(exclude, "a", encoding="utf-8") as f:
                f.write(line + "\n")


def prepare(a) -> int:
    from laser_repro.core.download import sha256_file
    from laser_repro.models import registry, subword
    from laser_repro.models.labse.export import LabseEncoder
    from laser_repro.models.labse.sentence_transformers_export import export_sentence_transformers
    from laser_repro.models.laser.laser2 import export_laser2

    out = Path(a.out_dir).resolve()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"prepare: {out} exists and is not empty (remove it first)")
    out.mkdir(parents=True, exist_ok=True)
    ignore_in_git(out)
    laser_encoder, run_dir = Path(a.laser_encoder).resolve(), Path(a.laser_run_dir).resolve()
    header = registry.read_encoder_file(laser_encoder)
    record = header.get(subword.RECORD_KEY) or {}
    spm_model = run_dir / record.get("file", "?")  # the record names it relative to the run directory
    pairs = header.get("meta", {}).get("lang_pairs", [])  # the languages it was trained on
    langs = a.langs or sorted({lang for pair in pairs for lang in pair.split("-")})
    if PIVOT not in langs:
        raise SystemExit(f"prepare: languages {langs} lack {PIVOT} (give --langs)")
    langs = [PIVOT, *[lang for lang in langs if lang != PIVOT]]
    flores = Path(a.flores)
    raw = {lang: flores_lines(flores, lang, 0, a.lines) for lang in langs}
    n = len(raw[PIVOT])
    if any(len(lines) != n for lines in raw.values()):
        raise SystemExit(f"prepare: FLORES files of unequal length under {flores}")
    labse_family = registry.get("labse")
    labse_text = {lang: labse_family.prepare(lines, lang) for lang, lines in raw.items()}  # Moses, lowercased
    manifest = {"languages": langs, "flores": str(flores), "flores_lines": [0, n],
                "laser": {"encoder": str(laser_encoder), "encoder_sha256": sha256_file(laser_encoder),
                          "spm_model": str(spm_model)}}

    with tempfile.TemporaryDirectory(prefix="gpu-client-exports-") as tmp:
        tmp = Path(tmp)
        with cwd(run_dir):  # the export finds the SentencePiece model by the record's relative path
            manifest["laser"]["export"] = export_laser2(laser_encoder, out / CLIENTS["laser2"])
        laser_ref = laser_reference(laser_encoder, spm_model, raw, tmp)

        if a.labse_encoder:
            labse_encoder = Path(a.labse_encoder).resolve()
            manifest["labse"] = {"encoder": str(labse_encoder), "built": False}
        else:  # trained here on the FLORES lines after the checked ones
            texts = {lang: labse_family.prepare(flores_lines(flores, lang, n, None), lang) for lang in langs}
            labse_encoder = build_labse(tmp / "labse", texts, updates=a.labse_updates, vocab_size=a.labse_vocab)
            manifest["labse"] = {"encoder": None, "built": True, "updates": a.labse_updates,
                                 "vocab_size": a.labse_vocab, "trained_on_flores_lines": [n, n + len(texts[PIVOT])]}
        manifest["labse"]["encoder_sha256"] = sha256_file(labse_encoder)
        summary = export_sentence_transformers(labse_encoder, out / CLIENTS["sentence_transformers"])
        manifest["labse"]["export"] = {k: summary[k] for k in ("dim", "max_seq_length", "num_updates",
                                                              "probe_max_abs_diff")}
        labse = LabseEncoder.load(labse_encoder)
        labse_ref = np.concatenate([labse.embed(labse_text[lang], lang) for lang in langs]).astype(np.float32)

    np.save(out / "laser2_reference.npy", laser_ref)
    np.save(out / "sentence_transformers_reference.npy", labse_ref)
    sentences = {"languages": langs, "per_language": n, "flores_lines": [0, n],
                 "laser2": raw,  # raw text: LASER2's client tokenizes it itself
                 "sentence_transformers": labse_text}  # what the workflow embeds with LaBSE (its `prepare`)
    (out / "sentences.json").write_text(json.dumps(sentences, ensure_ascii=False) + "\n", encoding="utf-8")
    manifest["reference_xsim_errors"] = {name: xsim_errors(nearest_english(ref, langs, n))
                                         for name, ref in (("laser2", laser_ref), ("sentence_transformers", labse_ref))}
    # the clients on this CPU, fp32: what the device's figures are read beside
    manifest["cpu_clients"] = {}
    for name in CLIENTS:
        r = run_client(name, out, sentences, "cpu", "fp32")
        manifest["cpu_clients"][name] = {k: r[k] for k in ("max_abs_diff", "min_cosine", "sentences_per_s")}
        manifest["cpu_clients"][name]["same_retrieval"] = r["retrieval"]["same_error_in_every_pair"]
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    for name, r in manifest["cpu_clients"].items():
        print(f"{name} on this CPU: max |diff| {r['max_abs_diff']:.2e}, min cos {r['min_cosine']:.7f}, "
              f"same retrieval: {r['same_retrieval']}")
    print(f"prepare: {len(langs)} languages x {n} sentences -> {out} ({size / 2 ** 20:.1f} MiB)")
    return 0


def main(argv=None) -> int:
    # offline: the clients read local files only (set before any Hugging Face library is imported)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("prepare", help="exports, sentences and reference vectors, here on the CPU")
    s.add_argument("out_dir")
    s.add_argument("--laser-encoder", default="/work/spmrun/results/small_spm/models/base/encoder.pt",
                   help="a LASER encoder trained on SentencePiece")
    s.add_argument("--laser-run-dir", default="/work/spmrun",
                   help="the directory the workflow ran in (the encoder names its spm model relative to it)")
    s.add_argument("--labse-encoder", help="a LaBSE encoder file (default: train a small one on FLORES)")
    s.add_argument("--labse-updates", type=int, default=100)
    s.add_argument("--labse-vocab", type=int, default=12000)
    s.add_argument("--flores", default=str(REPO.parent / "shared" / "data" / "flores200-dev"))
    s.add_argument("--lines", type=int, default=100, help="the first N dev lines of each language")
    s.add_argument("--langs", nargs="+", help="default: the LASER encoder's training languages")
    c = sub.add_parser("check", help="load the exports in the client libraries and compare (no import of ours)")
    c.add_argument("prepared_dir", type=Path)
    c.add_argument("out_json", type=Path)
    c.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = p.parse_args(argv)
    return prepare(a) if a.command == "prepare" else check(a.prepared_dir, a.out_json, a.device)


if __name__ == "__main__":
    sys.exit(main())
