#!/bin/bash
# Two runtime classes with the same name and different layouts, in one
# session (per-user and per-process buffers): both decode, each event with
# its own fields, in order; neither class writes the other's events.

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

for buf in uid pid; do
	dp_lttng create "per$buf" --output="$DP_TMP/per$buf" &&
		dp_lttng enable-channel -u -s "per$buf" --buffers-$buf chan &&
		dp_lttng enable-event -u -s "per$buf" -c chan dptest:same &&
		dp_lttng start "per$buf" || tap_bail "cannot set up session per$buf"
done

"$EMIT" same >"$DP_TMP/emit.out" 2>&1
tap_ok $? "events-emit same runs" || tap_diag_file "$DP_TMP/emit.out"
tap_check "both classes are enabled once made" \
	[ "$(grep -cx 'enabled dptest:same 1' "$DP_TMP/emit.out")" -eq 2 ]

expected='dptest:same: { a = 1, tag = "first" }
dptest:same: { b = 2, _list_length = 2, list = [ [0] = 7, [1] = 8 ], c = -3 }
dptest:same: { a = 3, tag = "third" }'
for buf in uid pid; do
	dp_lttng stop "per$buf" && dp_lttng destroy "per$buf"
	got=$(bt_text "$DP_TMP/per$buf" | sed -E 's/ \{ cpu_id = [0-9]+ \},//')
	tap_check "per-$buf buffers: three events, each decoded with its own layout" \
		[ "$got" = "$expected" ] || tap_diag "got:" "$got"
	tap_check "per-$buf buffers: babeltrace2 reports no error" [ ! -s "$DP_TMP/bt-warnings" ] ||
		tap_diag_file "$DP_TMP/bt-warnings"
done

tap_done
