#!/usr/bin/env bash
# Two SLURM nodes x two tasks through a real srun (CPU, gloo), checked end to end (issue 36):
#
#   bash scripts/two_node_check.sh [--families laser,multienc] [--keep] [WORK_DIR]
#
# 1. a two-node SLURM cluster on this host (scripts/local_slurm.sh start RUN_DIR --nodes 2; root);
# 2. tests/toy/two_node.yaml on fresh toy data through the local profile: the data, and each model trained
#    by ONE process (the reference);
# 3. a copy of that run without the models, through `snakemake --profile tests/toy/profile-slurm-2node`:
#    each training rule is one SLURM job of 2 nodes x 2 tasks, whose launcher starts 4 workers with srun.
#    The first attempt's time limit (6 min) makes the workers checkpoint and exit 75 (300 s before it);
#    Snakemake retries the job (attempt 2: 30 min), which resumes from checkpoint_last.pt and finishes;
# 4. a summary: wall times, SLURM jobs per training rule and their nodes, the update each attempt stopped
#    at or resumed from, and the max |weight difference| between the 4-worker and the 1-process model.
# Exit status 0 only when every family was stopped once, resumed and finished with 4 workers on 2 nodes
# in 2 SLURM jobs, and its weights match the one-process model within LIMIT_DIFF (1e-3): 4 workers' sums
# of 4 gradients differ from 4 accumulated steps by float rounding, ~1e-5 after the 8 updates of an epoch
# (as 2 workers in tests/test_distributed.py), and Adam lets that grow: 1.05e-3 after 48 updates of the
# LASER toy, while the batches and logged losses were identical (a wrong batch or update_freq: > 1e-1).
# The cluster is stopped at exit (--keep: WORK_DIR is kept too).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
LIMIT_DIFF=${LIMIT_DIFF:-1e-3}
CONFIG=$REPO/tests/toy/two_node.yaml
PROFILE=$REPO/tests/toy/profile-slurm-2node
RUN=toy_2node
declare -A MODEL=([laser]=base [multienc]=toy_multienc) RULE=([laser]=laser_train [multienc]=multienc_train)

families=laser,multienc keep=0 work=""
while [ $# -gt 0 ]; do
    case "$1" in
        --families) families=$2; shift 2 ;;
        --families=*) families=${1#--families=}; shift ;;
        --keep) keep=1; shift ;;
        -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
        -*) echo "two_node_check.sh: unknown option '$1'" >&2; exit 2 ;;
        *) work=$1; shift ;;
    esac
done
IFS=, read -r -a FAMILIES <<<"$families"
for f in "${FAMILIES[@]}"; do
    [ -n "${MODEL[$f]:-}" ] || { echo "two_node_check.sh: --families: '$f' is not laser or multienc" >&2; exit 2; }
done
[ -x "$PY" ] || { echo "two_node_check.sh: no Python at $PY (run scripts/setup.sh, or set PYTHON)" >&2; exit 2; }
work=${work:-$(mktemp -d /tmp/two-node-check.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
CLUSTER=$work/cluster

say() { echo "[two_node_check $(date +%H:%M:%S)] $*"; }
cleanup() {
    local rc=$?
    bash "$REPO/scripts/local_slurm.sh" stop "$CLUSTER" >/dev/null || echo "two_node_check.sh: stopping the cluster failed" >&2
    if [ "$keep" = 0 ] && [ "$rc" = 0 ]; then rm -rf "$work"; else echo "two_node_check.sh: files kept in $work" >&2; fi
    exit "$rc"
}
trap cleanup EXIT

targets() {  # targets DIR: the trained models of the chosen families
    local f
    for f in "${FAMILIES[@]}"; do echo "results/$RUN/models/${MODEL[$f]}/checkpoint_final.pt"; done
}

t0=$(date +%s)
say "starting a 2-node SLURM cluster in $CLUSTER"
bash "$REPO/scripts/local_slurm.sh" start "$CLUSTER" --nodes 2 >"$work/cluster-start.log" 2>&1 ||
    { cat "$work/cluster-start.log" >&2; exit 1; }
tail -n 3 "$work/cluster-start.log" | head -n 1
t_cluster=$(($(date +%s) - t0))

# the venv's commands (laser-repro) in the jobs too: sbatch passes the environment on
export PATH=$CLUSTER/bin:$(dirname "$PY"):$PATH SLURM_CONF=$CLUSTER/slurm.conf PYTHONUNBUFFERED=1
data=$("$PY" "$REPO/tests/toy/make_toy_data.py" "$work/data")

say "data and one-process reference models (local profile)"
t1=$(date +%s)
mapfile -t TARGETS < <(targets)
"$PY" -m snakemake -s "$REPO/workflow/Snakefile" --profile "$REPO/profiles/local" --configfile "$CONFIG" \
    --config data_root="$data" --directory "$work/local" --cores 2 "${TARGETS[@]}" >"$work/local.log" 2>&1 ||
    { tail -n 40 "$work/local.log" >&2; exit 1; }
t_local=$(($(date +%s) - t1))

# the same run without the models: only the training rules are left to run, on the cluster
cp -a "$work/local" "$work/slurm"
for f in "${FAMILIES[@]}"; do
    rm -rf "$work/slurm/results/$RUN/models/${MODEL[$f]}"
done

say "training through snakemake --profile tests/toy/profile-slurm-2node (2 nodes x 2 tasks each)"
t2=$(date +%s)
# Snakemake with the plugin's status checks at most 3 s apart (its back-off, 5, 15, 25, ... s, would add
# up to ~35 s per job here; as tests/test_slurm.py): only the waiting between squeue calls changes
"$PY" -c '
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor as R
p = R.next_seconds_between_status_checks
R.next_seconds_between_status_checks = property(lambda self: min(p.fget(self), 3), p.fset)
from snakemake.cli import main
main()' -s "$REPO/workflow/Snakefile" --profile "$PROFILE" --configfile "$CONFIG" --config data_root="$data" \
    --directory "$work/slurm" --slurm-logdir "$work/slurm_logs" "${TARGETS[@]}" >"$work/slurm.log" 2>&1 ||
    { tail -n 60 "$work/slurm.log" >&2; exit 1; }
t_slurm=$(($(date +%s) - t2))

say "comparing"
"$PY" - "$work" "$RUN" "$LIMIT_DIFF" "$t_cluster" "$t_local" "$t_slurm" "${FAMILIES[@]}" <<'EOF'
import json, re, sys
from pathlib import Path

from laser_repro.models.checkpoint_safety import load_checkpoint

work, run, limit = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
t_cluster, t_local, t_slurm = map(int, sys.argv[4:7])
families = sys.argv[7:]
model = {"laser": "base", "multienc": "toy_multienc"}
rule = {"laser": "laser_train", "multienc": "multienc_train"}
log = (work / "slurm.log").read_text()
ctld = (work / "cluster" / "log" / "slurmctld.log").read_text()
# (SLURM job id, rule) of every sbatch the plugin made
subs = re.findall(r"SLURM jobid (\d+) \(log: \S+/slurm_logs/rule_([a-z0-9_]+)/", log)
# the main scheduler logs "Allocate JobId=N NodeList=...", the backfill scheduler "Started JobId=N in P on ..."
nodes = dict(re.findall(r"Allocate JobId=(\d+) NodeList=(\S+)", ctld) +
             re.findall(r"Started JobId=(\d+) in \S+ on (\S+)", ctld))
exits = dict(re.findall(r"_job_complete: JobId=(\d+) WEXITSTATUS (\d+)", ctld))
others = sorted({r for _, r in subs} - {rule[f] for f in families})
print(f"cluster start {t_cluster} s; data + 1-process reference (local profile) {t_local} s; "
      f"SLURM training run {t_slurm} s")
if others:
    print(f"FAIL: other rules were submitted too: {others}")
ok = not others
for fam in families:
    name = model[fam]
    jobs = [j for j, r in subs if r == rule[fam]]
    save = work / "slurm" / "results" / run / "models" / name / "checkpoints"
    status = json.loads((save / "train_status.json").read_text())
    attempts = sorted((save / "attempts").glob("*.log"))
    first = attempts[0].read_text() if attempts else ""
    second = attempts[1].read_text() if len(attempts) > 1 else ""  # the retry after the time limit
    stopped = re.findall(r"training stopped at update (\d+) on request", first)
    resumed = re.findall(r"@ (\d+) updates\)|resumed from \S+ at update (\d+)", second)
    resumed = [a or b for a, b in resumed]
    one = load_checkpoint(work / "local" / "results" / run / "models" / name / "checkpoint_final.pt")["model"]
    four = load_checkpoint(work / "slurm" / "results" / run / "models" / name / "checkpoint_final.pt")["model"]
    ref = json.loads((work / "local" / "results" / run / "models" / name / "checkpoints" /
                      "train_status.json").read_text())
    assert one.keys() == four.keys(), f"{name}: other parameters"
    diff = max(float((one[k].float() - four[k].float()).abs().max()) for k in one)
    where = ", ".join(f"{j} on {nodes.get(j, '?')} exit {exits.get(j, '?')}" for j in jobs)
    print(f"{fam} ({name}): SLURM jobs {where}")
    print(f"  attempts {len(attempts)}: first stopped at update {stopped[0] if stopped else '-'} "
          f"(time limit), the next resumed at update {resumed[0] if resumed else '-'}; ended at "
          f"{status['num_updates']}; world size {status['world_size']} (update_freq {status.get('update_freq', '-')}) "
          f"vs reference {ref['world_size']} (update_freq {ref.get('update_freq', '-')}), {ref['num_updates']} updates")
    for path in attempts[1:]:  # why an attempt after the first did not end the job
        for line in path.read_text().splitlines():
            if "output(s) absent" in line or "publishing that model without training" in line:
                print(f"  {path.name}: {line[:170]}")
    print(f"  max |weight diff| 4 workers on 2 nodes vs 1 process: {diff:.2e} (limit {limit:.0e})")
    checks = {"2 SLURM jobs (time limit, retry)": len(jobs) == 2,
              "both on 2 nodes": all("," in nodes.get(j, "") or "[" in nodes.get(j, "") for j in jobs),
              "first stopped by its time limit": bool(jobs) and exits.get(jobs[0]) != "0" and bool(stopped),
              "resumed there": bool(stopped) and resumed[:1] == stopped[:1],
              "4 workers": status["world_size"] == 4 and status["status"] == "completed",
              "same updates": status["num_updates"] == ref["num_updates"],
              "same weights": diff <= limit}
    failed = [k for k, v in checks.items() if not v]
    print(f"  {'OK' if not failed else 'FAIL: ' + '; '.join(failed)}")
    ok = ok and not failed
sys.exit(0 if ok else 1)
EOF
say "done in $(($(date +%s) - t0)) s"
