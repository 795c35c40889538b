#!/bin/bash
# `lttng enable-event --filter` on the fields of a runtime class selects
# exactly the expected events: one session per filter (integers, a negative
# signed one, a string, a double, a hex one, and fields that come after a
# sequence in the layout), all recording one run of 100 events with
# n = 0..99, vals = [n, n+1], neg = -n, parity = "even"/"odd", half = n / 2,
# hexv = 16 n.

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

# name @ filter @ the n values expected, in order
filters=(
	'all@@'"$(seq -s ' ' 0 99)"
	'range@n >= 10 && n < 20@'"$(seq -s ' ' 10 19)"
	'negative@neg < -95@96 97 98 99'
	'string@parity == "odd" && n < 10@1 3 5 7 9'
	'double@half == 2.5@5'
	'hex@hexv == 0x30@3'
	'or@half > 48.0 || n == 0@0 97 98 99'
	'glob@parity == "ev*" && neg >= -4@0 2 4'
	'none@n > 1000@'
)

for f in "${filters[@]}"; do
	IFS='@' read -r name filter expected <<<"$f"
	dp_lttng create "$name" --output="$DP_TMP/$name" || tap_bail "cannot create $name"
	if [ -n "$filter" ]; then
		dp_lttng enable-event -u -s "$name" dptest:filter --filter "$filter"
	else
		dp_lttng enable-event -u -s "$name" dptest:filter
	fi || tap_bail "cannot enable the event in $name"
	dp_lttng start "$name" || tap_bail "cannot start $name"
done

"$EMIT" filter 100 >"$DP_TMP/emit.out" 2>&1
tap_ok $? "events-emit filter 100 runs" || tap_diag_file "$DP_TMP/emit.out"

for f in "${filters[@]}"; do
	IFS='@' read -r name filter expected <<<"$f"
	dp_lttng stop "$name"
	dp_lttng destroy "$name"
	got=$(bt_text "$DP_TMP/$name" | sed -nE 's/.*\{ n = ([0-9]+), .*/\1/p' | tr '\n' ' ')
	got=${got% }
	what=$expected
	[ "$(wc -w <<<"$expected")" -gt 10 ] && what="$(wc -w <<<"$expected") events, 0..99"
	tap_check "filter ${filter:-(none)}: n = ${what:-(no event)}" [ "$got" = "$expected" ] ||
		tap_diag "got n = $got"
done

# The recorded fields are whole, not only the filtered one.
line=$(bt_text "$DP_TMP/negative" | head -n 1)
want='n = 96, _vals_length = 2, vals = [ [0] = 96, [1] = 97 ], neg = -96, parity = "even", half = 48, hexv = 0x600'
tap_check "a selected event carries all its fields" [ "${line##*\}, \{ }" = "$want }" ] ||
	tap_diag "got: $line"

tap_done
