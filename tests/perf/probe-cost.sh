#!/bin/bash
# Runs probe-cost (the cost of a probe hit against a static tracepoint)
# inside a private session daemon: one snapshot session, one overwrite-mode
# channel holding the static tracepoint and every probe's event but the one
# meant to stay disabled.  Not a pass/fail test: prints probe-cost's table.
#
#   tests/perf/probe-cost.sh [ITERATIONS [ROUNDS]]   from the build tree
#       (on a loaded machine: fewer iterations, more rounds, e.g. 20000 150)
#   PROBE_COST_ONLY=reg:rdi PROBE_COST_PERF="perf record -e cpu-clock" \
#       tests/perf/probe-cost.sh 5000000        one case, under a profiler

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

COST=$(cd "$top_builddir/tests/perf" && pwd)/probe-cost
[ -x "$COST" ] || { echo "probe-cost.sh: build tests/perf/probe-cost first" >&2; exit 1; }

dp_isolate "$0" "$@"
start_sessiond || { echo "probe-cost.sh: no session daemon" >&2; exit 1; }

dp_lttng create cost --snapshot --output="$DP_TMP/trace" &&
	dp_lttng enable-channel -u --overwrite --subbuf-size=1M --num-subbuf=4 chan &&
	dp_lttng enable-event -u -c chan dpcost:tick &&
	dp_lttng enable-event -u -c chan 'dynprobe:*' --exclude=dynprobe:cost_disabled &&
	dp_lttng start || { cat "$DP_TMP/lttng.log" >&2; exit 1; }

${PROBE_COST_PERF:-} "$COST" "$@"
status=$?
dp_lttng stop cost >/dev/null && dp_lttng destroy cost >/dev/null
exit $status
