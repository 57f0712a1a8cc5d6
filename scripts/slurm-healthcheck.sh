#!/usr/bin/env bash
# extmem probe as Slurm's HealthCheckProgram, in the NHC style (docs/fleet.md, "Slurm").
#
# slurmd runs this with no arguments. It runs `extmem probe --npd` on the rows the
# node must have (EXTMEM_REQUIRE, comma-separated rows; default T1-opaque-fd), so the
# probe prints its one NPD line: "OK: N required rows OK", or the first required row
# that is not OK with its status, failure code and failing step, or "unknown: why".
# That line is printed, and when the run is not OK the node is drained with it as the
# reason (what LBNL NHC does: slurmd itself does not act on the exit status).
#
# Exit: the probe's --npd exit, 0 OK, 1 a required row not OK, 2 unknown (no verdict).
#
# Settings, from the environment (slurmd passes its own; a wrapper may export them):
#   EXTMEM          the extmem binary (default: extmem on PATH)
#   EXTMEM_REQUIRE  rows that must be OK (default T1-opaque-fd)
#   EXTMEM_ARGS     more probe options, e.g. "--timeout=30s --json=/var/lib/extmem/last.json"
#   EXTMEM_NODE     the node's Slurm name (default: SLURMD_NODENAME, else hostname -s)
#   EXTMEM_NO_DRAIN set to 1 to only print and exit (a dry run)
set -uo pipefail

extmem=${EXTMEM:-extmem}
require=${EXTMEM_REQUIRE:-T1-opaque-fd}
node=${EXTMEM_NODE:-${SLURMD_NODENAME:-$(hostname -s)}}

# --only keeps the run to the required rows (a health check runs often and must be quick);
# it takes rows, so a required run ROW@pidfd selects ROW.
# shellcheck disable=SC2001  # a pattern up to the next comma: sed says it plainly
only=$(sed 's/@[^,]*//g' <<<"$require")
# shellcheck disable=SC2086  # EXTMEM_ARGS is a list of options
line=$("$extmem" probe --npd --only="$only" --require="$require" ${EXTMEM_ARGS-})
status=$?
echo "$line"
if [[ $status -ne 0 && ${EXTMEM_NO_DRAIN-} != 1 ]]; then
  scontrol update NodeName="$node" State=DRAIN Reason="extmem: $line" ||
    echo "extmem: scripts/slurm-healthcheck.sh: scontrol could not drain $node" >&2
fi
exit $status
