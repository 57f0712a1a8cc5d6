#!/usr/bin/env bash
# The boundary matrix of docs/serve.md on this machine's driver: one `extmem
# probe serve` as root in the initial namespaces, and the driving side
# (`extmem probe --peer`) in each cell: (a) the single tree, no server; (b) a
# separate process, same uid; (c) uid 65534 (setpriv); (d) another PID namespace with its own /proc;
# (e) another IPC namespace; (f) another mount namespace with a private /dev/shm;
# (g) another network namespace (the abstract endpoint refused, the path one
# used); (h) a user namespace as rootless containers make (unshare --user
# --map-root-user); (i) a bubblewrap container that shares only the socket's
# directory, as two containers of a pod share an emptyDir; (t) a tcp: endpoint on
# loopback, same uid and namespaces (bytes only: the rows that hand fds are
# UNSUPPORTED naming it). Every cell runs every
# row with --fd-transport=both, and writes its --json into OUT_DIR/CELL.json and
# its text into OUT_DIR/CELL.out; a cell the kernel refuses says so in
# OUT_DIR/CELL.skipped. Then scripts/boundary-table.py writes the Markdown.
#
#   bash scripts/boundary-matrix.sh OUT_DIR [EXTRA PROBE OPTIONS...]
#
# Needs root, util-linux (unshare, setpriv), bubblewrap, and a built extmem
# (EXTMEM=path; default build-probe/extmem, then build/extmem).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: boundary-matrix.sh OUT_DIR [probe options]}"
shift
extmem="${EXTMEM:-}"
[[ -n $extmem ]] || for c in build-probe/extmem build/extmem build-fuzz/extmem; do [[ -x $c ]] && { extmem=$c; break; }; done
[[ -x $extmem ]] || { echo "boundary-matrix: no extmem binary: build first or set EXTMEM" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "boundary-matrix: run as root (cells change uid and namespaces)" >&2; exit 2; }
extmem="$(realpath "$extmem")"
mkdir -p "$out"
out="$(realpath "$out")"
chmod 0777 "$out"  # uid 65534 writes its cell there
run="$(mktemp -d /tmp/extmem-matrix-XXXXXX)"
chmod 0755 "$run"
sock="$run/sock"
abstract="@extmem-matrix-$$"
servers=()
cleanup() {
  for pid in "${servers[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$run"
}
trap cleanup EXIT
rows=(--fd-transport=both "$@")

"$extmem" probe serve --endpoint="$sock" --sessions=0 --allow-uid=0,65534 --allow-group=65534 \
  --json="$out/serve.json" >"$out/serve.out" 2>&1 &
servers+=($!)
"$extmem" probe serve --endpoint="$abstract" --sessions=0 >"$out/serve-abstract.out" 2>&1 &
servers+=($!)
for _ in $(seq 600); do
  grep -q "== serving on" "$out/serve.out" && grep -q "== serving on" "$out/serve-abstract.out" && break
  sleep 0.1
done
grep -q "== serving on" "$out/serve.out" || { echo "boundary-matrix: the server did not start:" >&2; cat "$out/serve.out" >&2; exit 3; }

# cell NAME WRAPPER...: the driving side under WRAPPER (words before the extmem command), with the
# options in rows[] and the endpoint in $sock, its files OUT_DIR/NAME.{json,out,skipped}.
cell() {
  local name=$1
  shift
  rm -f "$out/$name.json" "$out/$name.out" "$out/$name.skipped"
  local code=0
  "$@" env "${driver_env[@]}" "$extmem" probe "${rows[@]}" --peer="$sock" --json="$out/$name.json" >"$out/$name.out" 2>&1 || code=$?
  if [[ ! -s $out/$name.json ]]; then
    { echo "exit $code"; tail -3 "$out/$name.out"; } >"$out/$name.skipped"
    echo "cell $name: no document (exit $code): $(tail -1 "$out/$name.out")"
  else
    echo "cell $name: exit $code: $(grep -E '^[0-9]+ OK,' "$out/$name.out" | tail -1)"
  fi
}

# Every cell but a, each named PREFIX + its letter.
cells_b_to_i() {
  local p=$1
  cell "${p}b" env
  cell "${p}c" setpriv --reuid=65534 --regid=65534 --clear-groups
  # Its own /proc, as a container's: CUDA's cuInit fails (CUDA_ERROR_OPERATING_SYSTEM) in a PID namespace
  # that still sees the parent's /proc (measured on an H100, docs/results/boundaries-nvidia-h100.md).
  cell "${p}d" unshare --pid --fork --mount-proc
  cell "${p}e" unshare --ipc
  cell "${p}f" unshare --mount sh -c 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"' private-dev-shm
  cell "${p}g" unshare --net
  cell "${p}h" unshare --user --map-root-user
  # Only the socket's directory, the binary and the system's files are shared; every namespace is new.
  cell "${p}i" bwrap --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
    --symlink usr/sbin /sbin --ro-bind /etc /etc --tmpfs /tmp --ro-bind "$(dirname "$extmem")" "$(dirname "$extmem")" \
    --bind "$run" "$run" --bind "$out" "$out" --dev /dev "${gpu_nodes[@]}" --proc /proc --unshare-all --die-with-parent
}

# The GPU's device nodes go into the container, as a container runtime's GPU support puts them there.
gpu_nodes=()
for node in /dev/nvidia* /dev/dri; do [[ -e $node ]] && gpu_nodes+=(--dev-bind "$node" "$node"); done

driver_env=(EXTMEM_MATRIX=1)
code=0
"$extmem" probe "${rows[@]}" --json="$out/a.json" >"$out/a.out" 2>&1 || code=$?
echo "cell a: exit $code: $(grep -E '^[0-9]+ OK,' "$out/a.out" | tail -1)"
cells_b_to_i ""
# (t) TCP on loopback: the server's banner names the port the kernel chose.
"$extmem" probe serve --endpoint=tcp:127.0.0.1:0 --sessions=0 >"$out/serve-tcp.out" 2>&1 &
servers+=($!)
for _ in $(seq 600); do grep -q "== serving on" "$out/serve-tcp.out" && break; sleep 0.1; done
unix_sock=$sock
sock=$(sed -n 's/^== serving on \(tcp:[0-9.]*:[0-9]*\):.*/\1/p' "$out/serve-tcp.out")
cell t env
sock=$unix_sock
# The abstract endpoint lives in the server's network namespace only.
{ unshare --net "$extmem" probe --only=T3-memfd-cross-process --peer="$abstract" || echo "exit $?"; } >"$out/g-abstract.out" 2>&1

# UCX one shared-memory transport at a time (UCX_TLS on both sides, --expect-transport naming it):
# which boundary takes which path away. cma is no RMA lane of UCX 1.13 (alone it is unreachable,
# beside tcp UCX's lanes are tcp's), so it is not one of them.
for t in posix sysv; do
  sock="$run/sock-$t"
  env UCX_TLS="$t" "$extmem" probe serve --endpoint="$sock" --sessions=0 --allow-uid=0,65534 --allow-group=65534 \
    >"$out/serve-ucx-$t.out" 2>&1 &
  servers+=($!)
  for _ in $(seq 600); do grep -q "== serving on" "$out/serve-ucx-$t.out" && break; sleep 0.1; done
  rows=(--only-t5 --expect-transport="$t" "$@")
  driver_env=(UCX_TLS="$t")
  code=0
  env UCX_TLS="$t" "$extmem" probe "${rows[@]}" --json="$out/ucx-$t-a.json" >"$out/ucx-$t-a.out" 2>&1 || code=$?
  echo "cell ucx-$t-a: exit $code: $(grep -E '^[0-9]+ OK,' "$out/ucx-$t-a.out" | tail -1)"
  cells_b_to_i "ucx-$t-"
done
echo "documents in $out"
