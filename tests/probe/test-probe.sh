#!/bin/bash
# Probes end to end: probe-test installs probes in itself with the patch
# engine and the agent, a private lttng-sessiond records the events, and
# babeltrace2 reads them back; probe-test then checks every field of every
# event (contexts of each kind, error values, backtraces through known frames
# with both walkers, int3 sites, probes on memcpy and strlen).

: "${top_srcdir:=../..}"
: "${top_builddir:=../..}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

PROBE_TEST=$(cd "$top_builddir/tests/probe" && pwd)/probe-test
[ -x "$PROBE_TEST" ] || tap_bail "probe-test not built"

dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

trace=$DP_TMP/trace
# memcpy and strlen are called all the time (lttng-ust itself does): only
# the test's own calls are recorded.  "disabled" is enabled by nothing.
dp_lttng create probes --output="$trace" &&
	dp_lttng enable-event -u 'dynprobe:*' \
		--exclude=dynprobe:memcpy,dynprobe:strlen,dynprobe:disabled &&
	dp_lttng enable-event -u dynprobe:memcpy --filter 'rdx == 4660' &&
	dp_lttng enable-event -u dynprobe:strlen --filter 's == "strlen-probe-marker"' &&
	dp_lttng add-context -u -t ip &&
	dp_lttng start || tap_bail "cannot set up the session"

timeout 120 "$PROBE_TEST" run "$DP_TMP/expect" >"$DP_TMP/run.out" 2>&1
status=$?
tap_ok $status "probe-test run exits normally ($status)" || tap_diag_file "$DP_TMP/run.out"
dp_lttng stop && dp_lttng destroy probes

bt_text "$trace" >"$DP_TMP/events"
[ -s "$DP_TMP/bt-warnings" ] && tap_diag_file "$DP_TMP/bt-warnings"
tap_check "no event discarded" [ "$(bt_discarded "$trace")" -eq 0 ]

# The checks of probe-test, renumbered into this script's plan.
"$PROBE_TEST" check "$DP_TMP/expect" "$DP_TMP/events" >"$DP_TMP/check.out" 2>&1
while IFS= read -r line; do
	case $line in
	"ok "*) tap_ok 0 "${line#ok * - }" ;;
	"not ok "*) tap_ok 1 "${line#not ok * - }" ;;
	"#"*) echo "$line" ;;
	esac
done <"$DP_TMP/check.out"
tap_done
