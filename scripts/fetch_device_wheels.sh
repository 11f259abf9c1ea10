#!/usr/bin/env bash
# The wheels that the lent GPU machine (Python 3.12, torch + CUDA preinstalled, no fairseq) lacks for
# scripts/device_check.sh, into .whl/ (ignored by git; the device tool carries it: carry [".whl"]).
# Versions are this project's pins (workflow/envs/constraints.txt); cp312 manylinux x86-64 wheels from PyPI;
# antlr4-python3-runtime and unicategories have only sdists: their (pure-Python) wheels are built here
# (unicategories' wheel holds a Unicode table of this Python's version; on another it rebuilds the table at
# import, with a warning).
# Usage: bash scripts/fetch_device_wheels.sh [DIR]   (default .whl)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.whl}
mkdir -p "$DEST"
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
pin() {  # NAME -> NAME==VERSION from the constraints
    local line
    line=$(grep -i -m1 "^$1==" workflow/envs/constraints.txt) || { echo "fetch_device_wheels.sh: $1 is not pinned" >&2; exit 1; }
    echo "$line"
}
# fairseq and what it imports at start; jsonschema (config validation) and its needs. The image already holds
# pytest, sacrebleu, regex, lxml, tqdm, attrs and the rest (KINDS.md's package list): carrying them would put a
# second pytest ahead of the image's plugins.
BINARY=(fairseq-fixed bitarray rpds-py)
# laser-encoders (scripts/gpu_client_exports.py: LASER's own client) and what it imports that the image lacks:
# sacremoses, unicategories (built below) and its appdirs; the image has sentencepiece, click, joblib, regex, tqdm.
PURE=(hydra-core omegaconf jsonschema jsonschema-specifications referencing laser-encoders sacremoses appdirs)
PLATFORMS=()
for n in 28 27 24 17; do PLATFORMS+=(--platform "manylinux_2_${n}_x86_64"); done
PLATFORMS+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)
for name in "${BINARY[@]}" "${PURE[@]}"; do
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --abi cp312 --abi abi3 --abi none "${PLATFORMS[@]}" --platform any -d "$DEST" "$(pin "$name")"
done
for name in antlr4-python3-runtime unicategories; do
    python3 -m pip wheel -q --disable-pip-version-check --no-deps -w "$DEST" "$(pin "$name")"
done
ls -1 "$DEST"
du -sh "$DEST"
