#!/bin/bash
# 8 threads record 1,000,000 events each into one runtime class.  Every event
# is accounted for: with small buffers, recorded + discarded (babeltrace2's
# discarded-events warnings, summed) = 8,000,000; with per-process buffers
# large enough to hold the whole run, all 8,000,000 are recorded and none
# is discarded.

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

threads=8
per_thread=1000000
total=$((threads * per_thread))

# run NAME CHANNEL_OPTIONS...: one session, one channel, one run.
run() {
	local name=$1 out
	shift
	dp_lttng create "$name" --output="$DP_TMP/$name" &&
		dp_lttng enable-channel -u "$@" chan &&
		dp_lttng enable-event -u -c chan dptest:threads &&
		dp_lttng start "$name" || tap_bail "cannot set up session $name"
	out=$("$EMIT" threads "$threads" "$per_thread" 2>&1)
	tap_ok $? "$name: $threads threads x $per_thread events recorded ($(tail -n 1 <<<"$out"))" ||
		tap_diag "$out"
	dp_lttng stop "$name" && dp_lttng destroy "$name"
}

# Small buffers: the tracer discards, and says how many.
run small --subbuf-size=4096 --num-subbuf=2
read -r recorded messages < <(bt_count "$DP_TMP/small")
discarded=$(bt_discarded "$DP_TMP/small")
tap_diag "small buffers: $recorded recorded, $discarded discarded in $messages messages"
tap_check "small buffers: some events are discarded" [ "$discarded" -gt 0 ]
tap_check "small buffers: recorded + discarded = $total" \
	[ $((recorded + discarded)) -eq "$total" ]

# Per-process buffers of 2 x 8 x 16 MiB (per CPU) hold the whole run.
run large --buffers-pid --subbuf-size=16M --num-subbuf=8
read -r recorded messages < <(bt_count "$DP_TMP/large")
tap_diag "large buffers: $recorded recorded, $messages discarded-events messages"
tap_check "large buffers: all $total events recorded" [ "$recorded" -eq "$total" ]
tap_check "large buffers: no discarded-events message" [ "$messages" -eq 0 ]

tap_done
