#!/bin/bash
# The cost of recording one event of a runtime class (dpa_class_record)
# against a static LTTng-UST tracepoint recording one integer, both into the
# same overwrite-mode channel of a snapshot session (no consumer reads it,
# so no event is discarded and the writers never wait).  The numbers go to
# the log; the check is loose (1.3x, a machine's noise included) and only
# catches a record path gone astray: the project's budget is a whole probe
# hit (trampoline included) within 1.2x of the static tracepoint.

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

events=${DP_BENCH_EVENTS:-50000}	# per round, 31 rounds of each

dp_lttng create bench --snapshot --output="$DP_TMP/trace" &&
	dp_lttng enable-channel -u --overwrite --subbuf-size=1M --num-subbuf=4 chan &&
	dp_lttng enable-event -u -c chan dptest:bench &&
	dp_lttng enable-event -u -c chan dptest_static:tick &&
	dp_lttng start || tap_bail "cannot set up the session"

"$EMIT" bench "$events" >"$DP_TMP/bench.out" 2>&1
tap_ok $? "events-emit bench $events runs" || tap_diag_file "$DP_TMP/bench.out"
static=$(awk '$1 == "static_ns" { print $2 }' "$DP_TMP/bench.out")
class=$(awk '$1 == "class_ns" { print $2 }' "$DP_TMP/bench.out")
ratio=$(awk '$1 == "ratio" { print $2 }' "$DP_TMP/bench.out")
tap_diag "static tracepoint: $static ns/event, runtime class: $class ns/event, ratio $ratio"
tap_check "the runtime class records within 1.3x of the static tracepoint" \
	awk -v r="$ratio" 'BEGIN { exit !(r > 0 && r <= 1.3) }'

# Both were really recorded: the snapshot holds events of both.
dp_lttng snapshot record -s bench && dp_lttng stop bench && dp_lttng destroy bench
bt_text "$DP_TMP/trace" >"$DP_TMP/events"
tap_check "the snapshot holds events of the runtime class" grep -q '^dptest:bench: ' "$DP_TMP/events"
tap_check "the snapshot holds events of the static tracepoint" \
	grep -q '^dptest_static:tick: ' "$DP_TMP/events"

tap_done
