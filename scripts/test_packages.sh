#!/usr/bin/env bash
# The Debian packages some tests use besides SLURM (scripts/local_slurm.sh install): Graphviz, for
# `laser-repro lineage render -o FILE.svg` (tests/test_lineage_graph.py), and headless Chromium, which opens
# the Snakemake report (tests/test_report.py). Without them those tests are skipped. Root (or sudo); idempotent.
set -euo pipefail
PACKAGES=(graphviz chromium-headless-shell)
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo -n "$@"
    else echo "test_packages.sh: '$*' needs root (or passwordless sudo)" >&2; exit 1; fi
}
if command -v dot >/dev/null && command -v chromium-headless-shell >/dev/null; then
    echo "test_packages.sh: graphviz and chromium-headless-shell already installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! as_root apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"; then
    as_root apt-get update -q
    as_root apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
fi
command -v dot >/dev/null && command -v chromium-headless-shell >/dev/null \
    || { echo "test_packages.sh: installed, but dot or chromium-headless-shell is still missing" >&2; exit 1; }
echo "test_packages.sh: installed ${PACKAGES[*]}"
