#!/usr/bin/env bash
# Create .venv and install every pinned dependency (CPU-only torch). Usage: bash scripts/setup.sh [python]
# Three stages because fairseq-fixed must be built --no-build-isolation against the already-installed
# torch/cython/numpy; workflow/envs/constraints.txt pins torch for every stage so nothing pulls a CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 required, got %s" % sys.version' 
[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q -c workflow/envs/constraints.txt)
"${PIP[@]}" -r workflow/envs/requirements-build.txt
"${PIP[@]}" --no-build-isolation -r workflow/envs/requirements-fairseq.txt
"${PIP[@]}" -r workflow/envs/requirements.txt
# fairseq-fixed declares torchaudio, whose newest wheel (2.11) is built for another torch and fails to load;
# nothing here uses it (fairseq imports it only in its speech tasks), but transformers imports any installed one
.venv/bin/python -m pip uninstall --disable-pip-version-check -q -y torchaudio
"${PIP[@]}" --no-deps --no-build-isolation -e .
.venv/bin/python -c 'import torch, fairseq, transformers.models.bert, tokenizers, numba, snakemake, sacremoses, jieba, fugashi, ipadic, faiss, sacrebleu, matplotlib, dvc, laser_repro; fugashi.GenericTagger(ipadic.MECAB_ARGS + " -Owakati").parse("日本語"); print("laser-repro environment ready: torch", torch.__version__, "fairseq", fairseq.__version__)'
