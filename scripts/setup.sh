#!/usr/bin/env bash
# Create .venv and install every pinned dependency. Usage: bash scripts/setup.sh [--gpu] [python]
# Default (CI): the CPU environment, workflow/envs/constraints.txt. --gpu: the GPU environment,
# workflow/envs/constraints-gpu.txt: the same pins with torch's CUDA build (the index's default Linux
# wheel of the same version) and faiss-gpu-cu12 instead of faiss-cpu.
# Three stages because fairseq-fixed must be built --no-build-isolation against the already-installed
# torch/cython/numpy; the constraints pin torch for every stage.
set -euo pipefail
cd "$(dirname "$0")/.."
VARIANT=cpu
if [ "${1:-}" = --gpu ]; then VARIANT=gpu; shift; fi
CONSTRAINTS=workflow/envs/constraints.txt
[ "$VARIANT" = cpu ] || CONSTRAINTS=workflow/envs/constraints-gpu.txt
PY=${1:-python3.11}
command -v "$PY" >/dev/null || PY=python3
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 required, got %s" % sys.version' 
[ -x .venv/bin/python ] || "$PY" -m venv .venv
# pip would add faiss-gpu-cu12 beside faiss-cpu (one `faiss` module, two builds) and keep a CPU torch
OTHER=faiss-gpu-cu12
[ "$VARIANT" = cpu ] || OTHER=faiss-cpu
if .venv/bin/python -c 'import importlib.metadata as m, sys; m.version(sys.argv[1])' "$OTHER" 2>/dev/null; then
    echo "setup.sh: .venv holds $OTHER, the other environment's build; remove .venv first (rm -r .venv)" >&2
    exit 1
fi
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q -c "$CONSTRAINTS")
"${PIP[@]}" -r workflow/envs/requirements-build.txt
"${PIP[@]}" --no-build-isolation -r workflow/envs/requirements-fairseq.txt
"${PIP[@]}" -r workflow/envs/requirements.txt -r "workflow/envs/requirements-$VARIANT.txt"
# fairseq-fixed declares torchaudio, whose newest wheel (2.11) is built for another torch and fails to load;
# nothing here uses it (fairseq imports it only in its speech tasks), but transformers imports any installed one
.venv/bin/python -m pip uninstall --disable-pip-version-check -q -y torchaudio
"${PIP[@]}" --no-deps --no-build-isolation -e .
.venv/bin/python -c 'import torch, fairseq, transformers.models.bert, tokenizers, numba, snakemake, sacremoses, jieba, fugashi, ipadic, faiss, sacrebleu, matplotlib, dvc, laser_repro; fugashi.GenericTagger(ipadic.MECAB_ARGS + " -Owakati").parse("日本語"); print("laser-repro environment ready: torch", torch.__version__, "fairseq", fairseq.__version__)'
if [ "$VARIANT" = gpu ]; then  # a CPU wheel found first (a local wheel directory, a pip config) ends here
    .venv/bin/python -c 'import torch, faiss; assert torch.version.cuda, "torch %s is a CPU build: pip found a CPU wheel first (see pip config list)" % torch.__version__; assert hasattr(faiss, "StandardGpuResources"), "faiss has no GPU support"; print("GPU build: CUDA", torch.version.cuda, "- run .venv/bin/laser-repro doctor on a GPU node")'
fi
