#!/usr/bin/env bash
# GPU smoke test of the training families (scripts/gpu_smoke.py): writes the JSON of figures to $1.
# Needs torch, numpy, tqdm, transformers and tokenizers (and fairseq for the LASER part, skipped without it);
# on a machine without CUDA it runs on the CPU with tiny models and says so in the JSON's "notes".
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 OUT.json [--only PREFIX...]" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "${PYTHON:-python3}" "$here/gpu_smoke.py" "$@"
