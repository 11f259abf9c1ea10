#!/usr/bin/env bash
# Every GPU check of this project in one command, for a lent GPU machine (the device tool) or a GPU node:
#   bash scripts/fetch_device_wheels.sh            # here, once: the wheels that machine lacks, into .whl/
#   bash scripts/device_check.sh [OUT_DIR]         # there (device tool: carry [".whl"]); OUT_DIR default $OUT or out/
#   DEVICE_CHECK_STEPS="environment client_exports" bash scripts/device_check.sh   # only these steps (default: all)
# Steps, each with its own time limit (about 9 minutes in all on one H200, near the device tool's 10-minute
# limit for one command: DEVICE_CHECK_STEPS runs fewer), each recorded whatever happens:
# the environment (nvidia-smi, laser-repro doctor), `pytest -m gpu` on the GPU test file, client_exports (our
# exported LASER2 and sentence-transformers encoders in laser_encoders and sentence-transformers on the GPU against
# our CPU vectors: scripts/gpu_client_exports.py; prepared here first with
# `.venv/bin/python scripts/gpu_client_exports.py prepare .device_exports`, then carry [".whl", ".device_exports"];
# skipped when .device_exports/ is absent), scripts/gpu_smoke.py in
# fp32, bf16 and fp16 (the paper config's precision), and the LASER benchmark: our trainer at 8k (the paper's
# layout), 16k (config/overlays/paper_today_gpus.yaml) and 32k tokens per GPU in fp16 and bf16, fairseq's
# reference trainer beside it at 8k and 32k in bf16. Writes OUT_DIR/device_check.json (one entry per step: exit
# status, seconds, its JSON or log tail) and each step's own files; exit 1 if a step failed. The figures go into
# docs/results.md (its GPU sections; docs/cluster.md sizes the requests from them). (tests/test_mining.py's GPU test needs faiss-gpu, whose CUDA libraries are too large to carry
# to the lent machine: it runs on a cluster's GPU node only.)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:-${OUT:-out}}
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
if compgen -G ".whl/*.whl" >/dev/null; then   # carried wheels, outside the image's site-packages
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "device_check.sh: installing .whl/ failed" >&2; exit 1; }
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
STEPS=()
SELECTED=" ${DEVICE_CHECK_STEPS:-environment pytest_gpu client_exports gpu_smoke laser_bench} "
step() {  # NAME LIMIT_S COMMAND...: run, keep the log, record status and time
    local name=$1 limit=$2; shift 2
    local t0=$SECONDS rc
    [[ $SELECTED == *" $name "* ]] || { echo "== $name: not in DEVICE_CHECK_STEPS, not run"; return; }
    echo "== $name (limit ${limit}s): $*" | tee "$OUT_DIR/$name.log"
    timeout --kill-after=10 "$limit" "$@" >> "$OUT_DIR/$name.log" 2>&1
    rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$OUT_DIR/$name.log"
    STEPS+=("$name:$rc:$((SECONDS - t0))")
}
step environment 60 bash -c "nvidia-smi; $PY -m laser_repro.cli doctor --json '$OUT_DIR/doctor.json'"
step pytest_gpu 130 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py
if [[ -d .device_exports ]]; then
    step client_exports 90 "$PY" scripts/gpu_client_exports.py check .device_exports "$OUT_DIR/client_exports.json" \
        --device cuda
elif [[ $SELECTED == *" client_exports "* ]]; then
    echo "== client_exports: skipped, no .device_exports/ (gpu_client_exports.py prepare, then carry it)" \
        | tee "$OUT_DIR/client_exports.log"
    STEPS+=("client_exports:skipped:0")
fi
step gpu_smoke 220 "$PY" scripts/gpu_smoke.py "$OUT_DIR/gpu_smoke.json" --precisions fp32 bf16 fp16 --batch-4096 bf16
step laser_bench 200 "$PY" scripts/benchmark_laser_gpu.py --out "$OUT_DIR/laser_bench.json" \
    --max-tokens 8000 16000 32000 --precisions fp16 bf16 --reference-at 8000 32000 --reference-precisions bf16 \
    --lengths-sync-at 8000 bf16 --updates 40 --sentences 10000 --timeout 30
"$PY" - "$OUT_DIR" "${STEPS[@]}" <<'PYEOF'
import json, sys
from pathlib import Path
out, steps = Path(sys.argv[1]), sys.argv[2:]
report = {"steps": {}}
for item in steps:
    name, rc, seconds = item.rsplit(":", 2)
    if rc == "skipped":  # a step whose inputs were not carried: recorded, not failed
        entry = {"exit": 0, "skipped": True, "seconds": 0, "timed_out": False}
    else:
        entry = {"exit": int(rc), "seconds": int(seconds), "timed_out": int(rc) in (124, 137)}
    for suffix in (".json",):
        f = out / f"{name}{suffix}"
        if f.exists():
            try:
                entry["result"] = json.loads(f.read_text())
            except ValueError as err:
                entry["result_error"] = str(err)
    log = out / f"{name}.log"
    entry["log_tail"] = log.read_text(errors="replace")[-3000:] if log.exists() else None
    report["steps"][name] = entry
doctor = out / "doctor.json"
if doctor.exists():
    report["doctor"] = json.loads(doctor.read_text())
(out / "device_check.json").write_text(json.dumps(report, indent=1) + "\n")
failed = [n for n, e in report["steps"].items() if e["exit"] != 0]
print(f"device_check: {len(report['steps'])} steps, failed: {', '.join(failed) or 'none'} -> {out / 'device_check.json'}")
sys.exit(1 if failed else 0)
PYEOF
