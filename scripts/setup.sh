#!/usr/bin/env bash
# Create .venv and install every pinned dependency.
# Usage: bash scripts/setup.sh [--gpu --cuda 12.6|12.8|13.0|auto] [--dry-run] [python]
# Default (CI): the CPU environment, workflow/envs/constraints.txt. --gpu --cuda X: the GPU environment,
# workflow/envs/constraints-gpu-cuXY.txt: the same pins with torch's CUDA X build and faiss-gpu-cu12
# instead of faiss-cpu. Which X (docs/cluster.md, "The GPU environment"): 12.6 for V100s (and any GPU up
# to Hopper) on drivers >= 525; 12.8 for Turing to Blackwell on drivers >= 525; 13.0 for Turing to
# Blackwell on drivers >= 580. `--cuda auto` asks nvidia-smi and the driver of this machine (a GPU node).
# 12.x come from PyTorch's wheel index (download.pytorch.org), 13.0 is PyPI's default Linux wheel.
# --dry-run prints the commands instead of running them.
# Stages because fairseq-fixed must be built --no-build-isolation against the already-installed
# torch/cython/numpy; the constraints pin torch for every stage.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "setup.sh: $*" >&2; exit 2; }
VARIANT=cpu CUDA= DRY=
while [ $# -gt 0 ]; do
    case "$1" in
        --gpu) VARIANT=gpu ;;
        --cuda) [ $# -ge 2 ] || die "--cuda needs a value: 12.6, 12.8, 13.0 or auto"; CUDA=$2; shift ;;
        --cuda=*) CUDA=${1#--cuda=} ;;
        --dry-run) DRY=1 ;;
        -*) die "unknown option $1 (usage: bash scripts/setup.sh [--gpu --cuda 12.6|12.8|13.0|auto] [--dry-run] [python])" ;;
        *) break ;;
    esac
    shift
done
if [ "$VARIANT" = cpu ] && [ -n "$CUDA" ]; then die "--cuda $CUDA needs --gpu"; fi
if [ "$VARIANT" = gpu ] && [ -z "$CUDA" ]; then
    die "--gpu needs --cuda 12.6|12.8|13.0|auto: 12.6 for V100s, 13.0 needs an NVIDIA driver >= 580 (docs/cluster.md, 'The GPU environment')"
fi
if [ "$CUDA" = auto ]; then
    # the package's own chooser, standard library only: it runs before the environment exists
    CUDA=$(PYTHONPATH=src python3 -m laser_repro.core.cuda_builds --choose) || die "--cuda auto: no build chosen (see above)"
fi
CONSTRAINTS=workflow/envs/constraints.txt
INDEX=()
case "$VARIANT/$CUDA" in
    cpu/) ;;
    gpu/12.6|gpu/12.8) TAG=cu${CUDA/./}; CONSTRAINTS=workflow/envs/constraints-gpu-$TAG.txt
                       INDEX=(--extra-index-url "https://download.pytorch.org/whl/$TAG") ;;
    gpu/13.0) CONSTRAINTS=workflow/envs/constraints-gpu-cu130.txt ;;
    *) die "--cuda $CUDA: expected 12.6, 12.8, 13.0 or auto" ;;
esac
PY=${1:-python3.11}
command -v "$PY" >/dev/null || PY=python3
run() {  # a command, or with --dry-run the command as a user would type it
    if [ -n "$DRY" ]; then printf '%q ' "$@"; echo; else "$@"; fi
}
"$PY" -c 'import sys; assert sys.version_info[:2] == (3, 11), "Python 3.11 required, got %s" % sys.version'
[ -x .venv/bin/python ] || run "$PY" -m venv .venv
# pip would add faiss-gpu-cu12 beside faiss-cpu (one `faiss` module, two builds) and keep a CPU torch
OTHER=faiss-gpu-cu12
[ "$VARIANT" = cpu ] || OTHER=faiss-cpu
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import importlib.metadata as m, sys; m.version(sys.argv[1])' "$OTHER" 2>/dev/null; then
    echo "setup.sh: .venv holds $OTHER, the other environment's build; remove .venv first (rm -r .venv)" >&2
    exit 1
fi
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q -c "$CONSTRAINTS" "${INDEX[@]}")
run "${PIP[@]}" -r workflow/envs/requirements-build.txt
# CUDA_HOME unset: with it (a login node's `module load cuda/12.x`) fairseq's setup.py compiles CUDA
# extensions against that toolkit, which need not match torch's; LASER needs none of them.
run env -u CUDA_HOME -u CUDA_PATH "${PIP[@]}" --no-build-isolation -r workflow/envs/requirements-fairseq.txt
run "${PIP[@]}" -r workflow/envs/requirements.txt -r "workflow/envs/requirements-$VARIANT.txt"
run "${PIP[@]}" --no-deps -r workflow/envs/requirements-nodeps.txt
# fairseq-fixed declares torchaudio, whose newest wheel (2.11) is built for another torch and fails to load;
# nothing here uses it (fairseq imports it only in its speech tasks), but transformers imports any installed one
run .venv/bin/python -m pip uninstall --disable-pip-version-check -q -y torchaudio
run "${PIP[@]}" --no-deps --no-build-isolation -e .
# the package's bytecode, as pip writes it for every installed package but not for an editable one: every job
# of a run starts a `laser-repro` process, which otherwise compiles the package's source again (0.3-0.5 s each
# where PYTHONDONTWRITEBYTECODE is set; a changed file is compiled anew, its .pyc ignored)
run .venv/bin/python -m compileall -q src/laser_repro
[ -z "$DRY" ] || exit 0
.venv/bin/python -c 'import torch, fairseq, transformers.models.bert, tokenizers, sentencepiece, sentence_transformers, mteb, laser_encoders, numba, snakemake, sacremoses, jieba, fugashi, ipadic, faiss, sacrebleu, matplotlib, dvc, laser_repro; fugashi.GenericTagger(ipadic.MECAB_ARGS + " -Owakati").parse("日本語"); print("laser-repro environment ready: torch", torch.__version__, "fairseq", fairseq.__version__)'
if [ "$VARIANT" = gpu ]; then  # a CPU wheel found first (a local wheel directory, a pip config) ends here
    .venv/bin/python -c 'import sys, torch, faiss; assert torch.version.cuda, "torch %s is a CPU build: pip found a CPU wheel first (see pip config list)" % torch.__version__; assert torch.version.cuda.startswith(sys.argv[1] + ".") or torch.version.cuda == sys.argv[1], "torch %s is built for CUDA %s, not %s" % (torch.__version__, torch.version.cuda, sys.argv[1]); assert hasattr(faiss, "StandardGpuResources"), "faiss has no GPU support"; print("GPU build: CUDA", torch.version.cuda, "- run .venv/bin/laser-repro doctor on a GPU node")' "$CUDA"
fi
