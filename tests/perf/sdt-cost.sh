#!/bin/bash
# Runs sdt-cost (SDT probes disabled and enabled against static tracepoints)
# inside a private session daemon: one snapshot session, one overwrite-mode
# channel holding dpsdt:on and the dynprobe events; dpsdt:off is left
# disabled.  Not a pass/fail test: prints sdt-cost's table.
#
#   tests/perf/sdt-cost.sh [ITERATIONS [ROUNDS]]   from the build tree
#       (on a loaded machine: fewer calls, more rounds, e.g. 100000 150)

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

COST=$(cd "$top_builddir/tests/perf" && pwd)/sdt-cost
[ -x "$COST" ] || { echo "sdt-cost.sh: build tests/perf/sdt-cost first" >&2; exit 1; }

dp_isolate "$0" "$@"
start_sessiond || { echo "sdt-cost.sh: no session daemon" >&2; exit 1; }

dp_lttng create cost --snapshot --output="$DP_TMP/trace" &&
	dp_lttng enable-channel -u --overwrite --subbuf-size=1M --num-subbuf=4 chan &&
	dp_lttng enable-event -u -c chan dpsdt:on &&
	dp_lttng enable-event -u -c chan 'dynprobe:*' &&
	dp_lttng start || { cat "$DP_TMP/lttng.log" >&2; exit 1; }

"$COST" "$@"
status=$?
dp_lttng stop cost >/dev/null && dp_lttng destroy cost >/dev/null
exit $status
