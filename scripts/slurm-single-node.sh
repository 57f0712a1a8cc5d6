#!/usr/bin/env bash
# A single-node Slurm on this machine, loopback only, with extmem probe as its node
# health check and as a job step (docs/fleet.md, "Slurm"; issue #31 item 5).
#
# Usage: scripts/slurm-single-node.sh EXTMEM_BINARY OUT_DIR
#
# Needs root and Debian's slurmd, slurmctld, slurm-client and munge (bookworm:
# 22.05.8; `apt-get install slurmd slurmctld slurm-client munge`). No systemd and
# no cgroup delegation: munged, slurmctld and slurmd run as children of this script,
# from a generated key and slurm.conf in a private temporary directory, and are
# stopped (by their pids) when it exits. What it does, in order:
#   1. starts munged, slurmctld and slurmd; waits for the node to be idle;
#   2. runs `extmem probe --json` as a job step with srun, three times, and once in an
#      sbatch job; the documents go to OUT_DIR/runs/;
#   3. runs scripts/slurm-healthcheck.sh as slurmd's HealthCheckProgram, first with
#      rows this machine has (the node stays idle), then with a row it cannot have
#      (a CUDA row on a machine without CUDA): the node is drained with the probe's
#      one line as the reason; then resumes it;
#   4. merges the documents with `extmem report --expect` (plus OUT_DIR/extra/NODE.json
#      when present: another node's document) into OUT_DIR/report.md and report.html.
# Everything it prints is also in OUT_DIR/transcript.txt.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: scripts/slurm-single-node.sh EXTMEM_BINARY OUT_DIR" >&2
  exit 2
fi
extmem=$(realpath "$1")
out=$(realpath -m "$2")
here=$(cd "$(dirname "$0")" && pwd)
for tool in munged slurmctld slurmd srun sbatch scontrol sinfo; do
  command -v "$tool" >/dev/null || { echo "extmem: $tool is not installed (apt-get install slurmd slurmctld slurm-client munge)" >&2; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "extmem: run as root (slurmd launches the job steps)" >&2; exit 77; }

mkdir -p "$out/runs"
exec > >(tee "$out/transcript.txt") 2>&1
tmp=$(mktemp -d /tmp/extmem-slurm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

say() { printf '\n$ %s\n' "$*"; }
run() { say "$*"; "$@"; }

node=$(hostname -s)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ctld_port=$(free_port)
d_port=$(free_port)
mkdir -p "$tmp"/{munge,ctld,d,log}
chmod 700 "$tmp"/munge

# munge: a fresh key, its socket in the private directory.
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/socket" \
  --pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" --log-file="$tmp/log/munged.log" \
  >>"$tmp/log/munged.out" 2>&1 &
pids+=($!)

# The health check slurmd runs: the committed wrapper, with this run's binary and rows.
cat >"$tmp/healthcheck" <<EOF
#!/usr/bin/env bash
export SLURM_CONF=$tmp/slurm.conf EXTMEM=$extmem EXTMEM_NODE=$node EXTMEM_REQUIRE=\$(cat $tmp/require)
exec $here/slurm-healthcheck.sh >>$tmp/log/healthcheck.log 2>&1
EOF
chmod 755 "$tmp/healthcheck"
echo "T1-opaque-fd,T3-memfd-cross-process" >"$tmp/require"

cpus=$(nproc)
cat >"$tmp/slurm.conf" <<EOF
ClusterName=extmem
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/socket
CredType=cred/munge
StateSaveLocation=$tmp/ctld
SlurmdSpoolDir=$tmp/d
SlurmctldPidFile=$tmp/ctld/slurmctld.pid
SlurmdPidFile=$tmp/d/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
HealthCheckProgram=$tmp/healthcheck
HealthCheckInterval=10
HealthCheckNodeState=ANY
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=extmem Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$tmp/slurm.conf

slurmctld -D -i >>"$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D >>"$tmp/log/slurmd.out" 2>&1 &
pids+=($!)

# Wait for the node: idle once slurmd registered and its first health check passed.
for _ in $(seq 1 120); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
  [[ $state == idle ]] && break
  sleep 0.5
done
run sinfo -N -l
[[ $state == idle ]] || { echo "extmem: the node did not become idle (state '$state'); logs:"; tail -n 20 "$tmp"/log/*.log; exit 1; }
run cat "$tmp/log/healthcheck.log"

# 2. The probe as a job step, three times (a node's repeated runs), then as a batch job.
# The second step stands in for a node that stalls once: --timeout=1ms makes its routes
# outlive their limit, so its rows FAIL (a harness code) and the report shows them flaky.
# shellcheck disable=SC2054  # the commas are inside the option values
probe_args=(--only=T1-opaque-fd,T1-dma-buf,T3-memfd-cross-process,T3-memfd-sealed --require=T1-opaque-fd,T3-memfd-cross-process)
for i in 1 2 3; do
  extra_arg=""
  [[ $i == 2 ]] && extra_arg=--timeout=1ms
  say "srun -N1 -n1 $extmem probe ${probe_args[*]} $extra_arg --json=$out/runs/srun-$i.json"
  srun -N1 -n1 bash -c "echo \"step on \$SLURMD_NODENAME, job \$SLURM_JOB_ID\"; \
    '$extmem' probe ${probe_args[*]} $extra_arg --json='$out/runs/srun-$i.json' | tail -n 5; echo \"probe exit \${PIPESTATUS[0]}\"" || true
done
say "sbatch --wait -N1 -n1 --wrap '$extmem probe ${probe_args[*]} --json=$out/runs/sbatch.json'"
sbatch --wait -N1 -n1 -o "$tmp/sbatch.out" --wrap "'$extmem' probe ${probe_args[*]} --json='$out/runs/sbatch.json'"
run tail -n 4 "$tmp/sbatch.out"

# 3. The health check failing: a required row this machine cannot have drains the node.
echo "T1-opaque-fd,T1-opaque-fd-cuda" >"$tmp/require"
say "echo T1-opaque-fd,T1-opaque-fd-cuda > (the health check's required rows); wait for slurmd's next check"
for _ in $(seq 1 90); do
  reason=$(sinfo -h -n "$node" -o %E 2>/dev/null || true)
  [[ $reason == extmem:* ]] && break
  sleep 0.5
done
run sinfo -R -o "%60E %10T %N"
run tail -n 3 "$tmp/log/healthcheck.log"
say "grep -h 'health_check failed\|update_node' slurmd.log slurmctld.log"
grep -h 'health_check failed\|update_node' "$tmp/log/slurmd.log" "$tmp/log/slurmctld.log" | tail -n 3 || true
[[ $reason == extmem:* ]] || { echo "extmem: the failing health check did not drain the node"; exit 1; }
echo "T1-opaque-fd,T3-memfd-cross-process" >"$tmp/require"
run scontrol update NodeName="$node" State=RESUME
run sinfo -N -l

# 4. One report over every document, the node's repeated runs as one column, against a
# baseline that also expects T1-dma-buf OK (a dma-buf export), which lavapipe does not have.
cat >"$out/baseline.txt" <<EOF
# extmem probe --expect / extmem report --expect baseline
T1-opaque-fd            OK
T3-memfd-cross-process  OK
T3-memfd-sealed         OK
T1-dma-buf              OK
EOF
run cat "$out/baseline.txt"
# OUT_DIR/extra/NODE.json: another node's document, labelled NODE.
extra=()
if [[ -d $out/extra ]]; then
  for f in "$out"/extra/*.json; do extra+=("$(basename "$f" .json)=$f"); done
fi
run "$extmem" report "$out"/runs/srun-*.json "$out/runs/sbatch.json" "${extra[@]}" --expect="$out/baseline.txt" \
  --markdown="$out/report.md" --html="$out/report.html"
run cat "$out/report.md"
