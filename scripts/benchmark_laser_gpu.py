"""Training speed of LASER's paper architecture on one GPU: our fairseq plugin beside fairseq's own
reference trainer (``fairseq/examples/laser/laser_src``, shipped in the fairseq wheel), on the same
binarized data, fp32 and bf16.

    python scripts/benchmark_laser_gpu.py --out laser_gpu.json [--updates 150] [--max-tokens 8000 16000 32000]
        [--reference-at 8000] [--precisions fp16 bf16]

Data: synthetic (binarized twice: ours reads fairseq's mmap format, the reference its older "lazy" one), 4 source languages -> 2 target languages (as the paper: English and Spanish targets),
a 50,000-symbol joint dictionary (the paper's BPE vocabulary size), sentence lengths 5-50 tokens drawn
uniformly; the speed of an LSTM encoder-decoder depends on the lengths and the vocabulary, not on the
words. Architecture: the paper's (5-layer BiLSTM 512 encoder, embeddings 320, one 2048 LSTM decoder
layer, 32-d language embedding). ``--max-tokens`` per GPU: the paper's 128k tokens per update over 16
GPUs is 8k per GPU (``update_freq`` 1); the overlay for today's GPUs (config/overlays/paper_today_gpus.yaml) is
16k per GPU on 8 GPUs. Our trainer runs at every ``--max-tokens`` and precision, fairseq's reference at those of
``--reference-at`` and ``--reference-precisions``; the data are made once.

Figures: target tokens per second (fairseq's ``wps``, median of the logged intervals after the first),
peak GPU memory (``torch.cuda.max_memory_allocated`` of the training process); ``speedup_<precision>``:
ours / reference at the same size; ``vs_paper_layout``: ours at each size and precision / ours at 8k fp16
(the paper config's layout). Needs a CUDA GPU, torch
and fairseq (fairseq-fixed 0.12.3.1), the package from ``src/`` (``PYTHONPATH=src``); ``--cpu`` runs the
same plumbing on the CPU (tiny sizes: a check of the script, not a benchmark).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC_LANGS = ("deu", "fra", "rus", "cmn")
TGT_LANGS = ("eng", "spa")
CPU = False  # --cpu
LOG_INTERVAL = 10  # updates per logged wps; the first interval (start-up) is left out of the median
PAPER_MODEL = {"encoder_layers": 5, "encoder_hidden_size": 512, "encoder_embed_dim": 320,
               "decoder_hidden_size": 2048, "decoder_embed_dim": 320, "decoder_lang_embed_dim": 32,
               "dropout": 0.1}

# the training process (both trainers alike): prints its peak GPU memory after fairseq returns
RUNNER = """
import sys, json, torch
from fairseq_cli.train import cli_main
from laser_repro.models.laser.fairseq_bridge import bf16_on_gpu  # fairseq 0.12 takes --bf16 for a TPU run
sys.argv = ["fairseq-train", *json.loads(sys.argv[1])]
# fairseq's trainer resets the peak-memory counter after every step (for its gb_free log): keep the
# largest value it had before each reset, so PEAK_GPU_BYTES is the run's peak, not the last step's
peak = [0]
_reset = torch.cuda.reset_peak_memory_stats
def reset_peak_memory_stats(*args, **kwargs):
    peak[0] = max(peak[0], torch.cuda.max_memory_allocated())
    return _reset(*args, **kwargs)
torch.cuda.reset_peak_memory_stats = reset_peak_memory_stats
if __import__("os").environ.get("BENCH_LENGTHS_FROM_GPU") == "1":
    # the trainer as before the collater's host copy of the lengths: the encoder reads them back from the GPU
    from laser_repro.models.laser.fairseq_plugin import laser_task
    collate = laser_task.MultiPairDataset.collater
    def collater(self, samples, pad_to_length=None):
        batch = collate(self, samples, pad_to_length)
        batch.get("net_input", {}).pop("src_lengths_host", None)
        return batch
    laser_task.MultiPairDataset.collater = collater
try:
    with bf16_on_gpu():
        cli_main()
finally:
    print("PEAK_GPU_BYTES", max(peak[0], torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else 0,
          flush=True)
"""


def write_data(root: Path, vocab: int, sentences: int, seed: int, reference: bool = True) -> Path:
    """BPE-like text with symbols w0..w{vocab-1}, a fairseq dict.txt, then our binarization (and the
    reference's, when it runs: 8 fairseq-preprocess processes, most of the data time)."""
    from laser_repro.models.laser import fairseq_bridge

    rng = random.Random(seed)
    text = root / "text"
    text.mkdir(parents=True)
    with open(root / "dict.txt", "w") as f:
        for i in range(vocab):
            f.write(f"w{i} {vocab - i}\n")
    for src in SRC_LANGS:
        for tgt in TGT_LANGS:
            prefix = text / f"{src}-{tgt}"
            with open(f"{prefix}.{src}", "w") as fs, open(f"{prefix}.{tgt}", "w") as ft:
                for _ in range(sentences):
                    n = rng.randint(5, 50)
                    fs.write(" ".join(f"w{rng.randrange(vocab)}" for _ in range(n)) + "\n")
                    ft.write(" ".join(f"w{rng.randrange(vocab)}" for _ in range(max(3, n + rng.randint(-3, 3)))) + "\n")
            fairseq_bridge.binarize_pair(src, tgt, prefix, root / "dict.txt", root / "bin", workers=4)
            if not reference:
                continue
            # the reference task reads fairseq's older IndexedDataset format only (--dataset-impl lazy)
            # in this process: 8 fairseq-preprocess processes spent most of 2 minutes importing fairseq (H200)
            from fairseq import options
            from fairseq_cli import preprocess

            preprocess.main(options.get_preprocessing_parser().parse_args(
                ["--source-lang", src, "--target-lang", tgt, "--trainpref", str(prefix),
                 "--destdir", str(root / "bin_lazy"), "--srcdict", str(root / "dict.txt"),
                 "--tgtdict", str(root / "dict.txt"), "--dataset-impl", "lazy", "--workers", "4"]))
    for d in ("bin", "bin_lazy") if reference else ("bin",):
        (root / d / "dict.txt").write_text((root / "dict.txt").read_text())
    return root / "bin"


def ours_argv(data: Path, save: Path, updates: int, max_tokens: int, precision: str) -> list[str]:
    from laser_repro.models.laser import fairseq_bridge

    pairs = [f"{s}-{t}" for s in SRC_LANGS for t in TGT_LANGS]
    train = {"lr": 0.001, "max_tokens": max_tokens, "update_freq": 1, "max_epoch": 1000, "seed": 1,
             "log_interval": LOG_INTERVAL, "max_update": updates}
    argv = fairseq_bridge.fairseq_train_argv(str(data), str(save), pairs, list(TGT_LANGS), PAPER_MODEL, train,
                                             cpu=CPU, validate=False)
    return argv + _precision_flags(precision) + ["--no-save"] + (["--cpu"] if CPU else [])


def reference_argv(data: Path, save: Path, updates: int, max_tokens: int, precision: str) -> list[str]:
    """fairseq's examples/laser command line (its README's), same dimensions, same data."""
    import fairseq

    user_dir = Path(fairseq.__file__).parent / "examples" / "laser" / "laser_src"
    data = data.parent / "bin_lazy"
    config = {"src_vocab": str(data / "dict.txt"), "tgt_vocab": str(data / "dict.txt"),
              "train": [{"type": "translation", "id": TGT_LANGS.index(t), "src": str(data / f"train.{s}-{t}.{s}"),
                         "tgt": str(data / f"train.{s}-{t}.{t}")} for s in SRC_LANGS for t in TGT_LANGS],
              "valid": [{"type": "translation", "id": 0, "src": "/unused", "tgt": "/unused"}]}
    cfg_path = save.parent / f"{save.name}.json"
    cfg_path.write_text(json.dumps(config))
    return [str(cfg_path), "--user-dir", str(user_dir), "--log-interval", str(LOG_INTERVAL), "--log-format", "json",
            "--task", "laser", "--arch", "laser_lstm", "--save-dir", str(save), "--optimizer", "adam",
            "--lr", "0.001", "--lr-scheduler", "fixed", "--clip-norm", "5", "--update-freq", "1",
            "--dropout", "0.1", "--encoder-dropout-out", "0.1", "--max-tokens", str(max_tokens),
            "--max-update", str(updates), "--encoder-bidirectional", "--encoder-layers", "5",
            "--encoder-hidden-size", "512", "--decoder-layers", "1", "--decoder-hidden-size", "2048",
            "--encoder-embed-dim", "320", "--decoder-embed-dim", "320", "--decoder-lang-embed-dim", "32",
            "--disable-validation", "--no-save", "--seed", "1", "--num-workers", "0",
            *_precision_flags(precision), *(["--cpu"] if CPU else [])]


def _precision_flags(precision: str) -> list[str]:
    return {"fp32": [], "bf16": ["--bf16"], "fp16": ["--fp16"]}[precision]


def run(argv: list[str], log_path: Path, timeout: int, lengths_from_gpu: bool = False) -> dict:
    t0 = time.time()
    env = dict(os.environ, PYTHONUNBUFFERED="1", BENCH_LENGTHS_FROM_GPU="1" if lengths_from_gpu else "0")
    try:
        proc = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(argv)], capture_output=True, text=True,
                              timeout=timeout, env=env)
        returncode, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as err:  # what it logged before the limit still gives figures
        returncode = "timeout"
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                      for x in (err.stdout, err.stderr))
    wall = time.time() - t0
    log_path.write_text(out)
    wps, peak = [], None
    for line in out.splitlines():
        if line.startswith("PEAK_GPU_BYTES"):
            peak = int(line.split()[1])
        brace = line.find("{")
        if "train_inner" in line and brace >= 0:
            try:
                wps.append(float(json.loads(line[brace:])["wps"]))
            except (ValueError, KeyError):
                pass
    result = {"returncode": returncode, "wall_s": round(wall, 1), "wps_intervals": wps,
              "target_tokens_per_s": statistics.median(wps[1:]) if len(wps) > 1 else (wps[0] if wps else None),
              "peak_gpu_gib": round(peak / 2**30, 2) if peak else None}
    if returncode:
        result["error_tail"] = out[-2000:]
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--updates", type=int, default=150)
    p.add_argument("--max-tokens", type=int, nargs="+", default=[8000], help="tokens per GPU, one run each")
    p.add_argument("--reference-at", type=int, nargs="*", default=None,
                   help="the --max-tokens at which fairseq's reference trainer runs too (default: all)")
    p.add_argument("--reference-precisions", nargs="*", default=None, choices=("fp32", "bf16", "fp16"),
                   help="the precisions in which the reference runs (default: all of --precisions)")
    p.add_argument("--lengths-sync-at", nargs=2, metavar=("MAX_TOKENS", "PRECISION"),
                   help="one more run of ours there, reading the source lengths back from the GPU (a host sync per "
                        "step, as before the collater's host copy): key ours-lengths-sync_<precision>_<max tokens>")
    p.add_argument("--sentences", type=int, default=20000, help="per language pair")
    p.add_argument("--vocab", type=int, default=50000)
    p.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=("fp32", "bf16", "fp16"))
    p.add_argument("--timeout", type=int, default=300, help="per training run, seconds")
    p.add_argument("--cpu", action="store_true", help="check the script on the CPU (tiny model; no figures)")
    a = p.parse_args()
    import torch

    global CPU
    CPU = a.cpu
    if CPU:
        PAPER_MODEL.update(encoder_layers=1, encoder_hidden_size=16, encoder_embed_dim=16, decoder_hidden_size=32,
                           decoder_embed_dim=16, decoder_lang_embed_dim=4)
    elif not torch.cuda.is_available():
        print("benchmark_laser_gpu: no CUDA GPU visible", file=sys.stderr)
        return 2
    reference_at = set(a.max_tokens if a.reference_at is None else a.reference_at)
    reference_precisions = set(a.precisions if a.reference_precisions is None else a.reference_precisions)
    figures = {"gpu": "cpu" if CPU else torch.cuda.get_device_name(0), "torch": torch.__version__,
               "cuda": torch.version.cuda, "updates": a.updates, "log_interval": LOG_INTERVAL,
               "max_tokens": a.max_tokens, "model": PAPER_MODEL, "runs": {}}
    out = Path(a.out)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.time()
        any_reference = bool(reference_at & set(a.max_tokens)) and bool(reference_precisions & set(a.precisions))
        data = write_data(tmp / "data", a.vocab, a.sentences, seed=1, reference=any_reference)
        figures["data_s"] = round(time.time() - t0, 1)
        for max_tokens in a.max_tokens:
            for precision in a.precisions:
                trainers = (("ours", ours_argv), ("reference", reference_argv))
                with_reference = max_tokens in reference_at and precision in reference_precisions
                for name, make in trainers if with_reference else trainers[:1]:
                    key = f"{name}_{precision}_{max_tokens}"
                    save = tmp / key
                    save.mkdir()
                    r = run(make(data, save, a.updates, max_tokens, precision), tmp / f"{key}.log", a.timeout)
                    figures["runs"][key] = r
                    print(key, {k: v for k, v in r.items() if k != "wps_intervals"}, flush=True)
                    out.write_text(json.dumps(figures, indent=1))  # what ran so far, if the job is cut
                if a.lengths_sync_at and a.lengths_sync_at == [str(max_tokens), precision]:
                    key = f"ours-lengths-sync_{precision}_{max_tokens}"
                    save = tmp / key
                    save.mkdir()
                    r = run(ours_argv(data, save, a.updates, max_tokens, precision), tmp / f"{key}.log", a.timeout,
                            lengths_from_gpu=True)
                    figures["runs"][key] = r
                    print(key, {k: v for k, v in r.items() if k != "wps_intervals"}, flush=True)
                    out.write_text(json.dumps(figures, indent=1))
                runs = figures["runs"]
                ours, ref = (runs.get(f"{n}_{precision}_{max_tokens}", {}).get("target_tokens_per_s")
                             for n in ("ours", "reference"))
                if ours and ref:
                    figures[f"speedup_{precision}_{max_tokens}"] = round(ours / ref, 2)
        base = figures["runs"].get("ours_fp16_8000", {}).get("target_tokens_per_s")
        if base:
            figures["vs_paper_layout"] = {key: round(r["target_tokens_per_s"] / base, 2)
                                          for key, r in figures["runs"].items()
                                          if key.startswith("ours") and r.get("target_tokens_per_s")}
    out.write_text(json.dumps(figures, indent=1))
    print(json.dumps({k: v for k, v in figures.items() if k != "runs"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
