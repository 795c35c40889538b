#!/bin/bash
# An agent that never answers but keeps talking (dpstall: a MAPPED every
# 2 s, each well inside the daemon's 5 s read timeout) cannot hold its
# process, the daemon or its exit forever: the daemon's call (GO, after
# HELLO) ends by its one deadline, the log says so, others are served
# meanwhile, and SIGTERM during such a call still ends the daemon.
#
# The bounds below only catch a hang (a call that every MAPPED renews
# never ends): they are no speed goal.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap 'kill_stallers; dpd_cleanup' EXIT

PIE=$builddir/target-pie
LEN=64
RUN=$(dpd_run_dir)
INTERVAL_MS=2000
HANG_S=60
STALLERS=

kill_stallers() {
	local s
	for s in $STALLERS; do
		kill -KILL "$s" 2>/dev/null
		wait "$s" 2>/dev/null
	done
	STALLERS=
}

# stall NAME: a dpstall connected to the daemon; its pid in SPID.
stall() {
	"$builddir/dpstall" "$RUN/dynprobe-app.sock" "$INTERVAL_MS" >"$DP_TMP/$1.out" 2>&1 &
	SPID=$!
	STALLERS="$STALLERS $SPID"
}

start_sessiond || tap_bail "no session daemon"
dp_lttng create s --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-event -u -s s "dynprobe:*" >/dev/null &&
	dp_lttng start s >/dev/null || tap_bail "cannot create session s"
start_target b "$PIE" "$DP_TMP/shm-b" 2 5 1000 || tap_bail "the target does not start"
b=$TARGET_PID
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"

stall one
one=$SPID
said one "^request GO" && said one "^mapped 1"
tap_ok $? "the stalling agent (pid $one) got GO and, not answering, sends MAPPED every $INTERVAL_MS ms"

dpctl ping && out_has "pid=$DPD_PID " && ! grep -q "^closed" "$DP_TMP/one.out"
tap_ok $? "PING answers while the call to it waits"
dpctl enable s channel0 ok probe dp_work "$PIE" -p "$b" && out_has "^proc pid=$b status=0" &&
	dpctl disable s channel0 ok && same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "ENABLE and DISABLE in process $b work meanwhile"

said one "^closed" "$HANG_S"
tap_ok $? "the daemon closed the connection within $HANG_S s, after $(grep -c '^mapped' "$DP_TMP/one.out") MAPPED"
logged "the agent of process $one did not answer GO within 5000 ms: connection closed"
tap_ok $? "the log says why: $(grep -m1 "process $one did not answer" "$DP_TMP/dynprobed.log" | cut -c1-160)"
dpctl ping && out_has "pid=$DPD_PID "
tap_ok $? "the daemon serves on"

# SIGTERM while a second one stalls its GO: the daemon waits for the call
# in flight, which ends by its deadline, then exits.
stall two
two=$SPID
said two "^mapped 1"
tap_ok $? "a second stalling agent (pid $two) waits in its GO"
t0=$(date +%s%N)
kill -TERM "$DPD_PID"
for i in $(seq $((HANG_S * 10))); do
	kill -0 "$DPD_PID" 2>/dev/null || break
	sleep 0.1
done
! kill -0 "$DPD_PID" 2>/dev/null
tap_ok $? "SIGTERM during that call: the daemon exits (after $((($(date +%s%N) - t0) / 1000000)) ms; it sent $(grep -c '^mapped' "$DP_TMP/two.out") MAPPED)"
kill -0 "$DPD_PID" 2>/dev/null || DPD_PID=
kill_stallers

kill -TERM "$b"
wait "$b"
tap_ok $? "target $b computed right throughout: $(tail -n1 "$DP_TMP/b.out")"
tap_done
