#!/bin/bash
# A trigger on a runtime event class fires, with captures of its fields:
# `lttng add-trigger --condition event-rule-matches ... --capture FIELD
# --action notify`, observed by notify-wait (a liblttng-ctl notification
# channel client; the lttng CLI cannot wait for notifications).  A recording
# session on the same event at the same time still records every event: one
# call site feeds both the notifier and the recorder.

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

dp_lttng add-trigger --name=dptrig --condition=event-rule-matches --type=user:tracepoint \
	--name=dptest:trig --filter='value >= 5' --capture=value --capture=name --capture=neg \
	--action=notify
tap_ok $? "lttng add-trigger with captures of runtime fields"
dp_lttng add-trigger --name=dpall --condition=event-rule-matches --type=user:tracepoint \
	--name='dptest:tr*' --capture=neg --action=notify
tap_ok $? "lttng add-trigger on a name pattern"

dp_lttng create rec --output="$DP_TMP/trace" &&
	dp_lttng enable-event -u dptest:trig &&
	dp_lttng start || tap_bail "cannot set up the recording session"

# Both clients subscribed before the program fires.
"$NOTIFY_WAIT" dptrig 5 30 "$DP_TMP/ready1" >"$DP_TMP/notif1" 2>&1 &
w1=$!
"$NOTIFY_WAIT" dpall 10 30 "$DP_TMP/ready2" >"$DP_TMP/notif2" 2>&1 &
w2=$!
for i in $(seq 600); do
	[ -e "$DP_TMP/ready1" ] && [ -e "$DP_TMP/ready2" ] && break
	sleep 0.05
done
tap_check "the notification clients subscribed" [ -e "$DP_TMP/ready1" -a -e "$DP_TMP/ready2" ]

"$EMIT" trigger 10 >"$DP_TMP/emit.out" 2>&1
tap_ok $? "events-emit trigger 10 runs" || tap_diag_file "$DP_TMP/emit.out"

wait "$w1"
tap_ok $? "the filtered trigger fired exactly 5 times" || tap_diag_file "$DP_TMP/notif1"
expected=$(for v in 5 6 7 8 9; do echo "notification dptrig: u:$v str:v$v s:-$v"; done)
got=$(grep '^notification' "$DP_TMP/notif1")
tap_check "its captures are value, name and neg of events 5..9, in order" \
	[ "$got" = "$expected" ] || tap_diag "got:" "$got"

wait "$w2"
tap_ok $? "the unfiltered trigger fired exactly 10 times" || tap_diag_file "$DP_TMP/notif2"
# Captures travel as msgpack, which encodes a non-negative signed value as
# an unsigned one: neg = 0 arrives as u:0.
expected=$(echo "notification dpall: u:0"
	for v in 1 2 3 4 5 6 7 8 9; do echo "notification dpall: s:-$v"; done)
got=$(grep '^notification' "$DP_TMP/notif2")
tap_check "its capture is the signed field neg, 0..-9" [ "$got" = "$expected" ] ||
	tap_diag "got:" "$got"

dp_lttng stop rec && dp_lttng destroy rec
got=$(bt_text "$DP_TMP/trace" | sed -nE 's/.*\{ value = ([0-9]+), .*/\1/p' | tr '\n' ' ')
tap_check "the session recorded all 10 events alongside" [ "$got" = "$(seq -s ' ' 0 9) " ] ||
	tap_diag "got values: $got"

tap_done
