#!/bin/bash
# A program started with the agent preloaded right after a path-wide
# enable-event runs probed from main on: the agent holds it in its
# constructor until the daemon has installed the path-wide probes that apply
# to it (GO), for at most LTTNG_DYNPROBE_REGISTER_TIMEOUT ms.  A short
# program that calls the probed function 1,000,000 times has every call
# recorded.  The wait is bounded (a stopped daemon), can be turned off (0),
# is not made without a daemon, and an injected agent never waits.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

LTTNG=$abs_top_builddir/src/bin/lttng/lttng
export LTTNG_DYNPROBE_STOCK_LTTNG=${STOCK:-/usr/bin/lttng}
export LTTNG_DYNPROBE_AGENT=$AGENT
export LTTNG_DYNPROBE_DAEMON=$DPD
APP=$builddir/startwait-app
N=1000000

# run_app NAME ENV...: runs the app (N calls) with the agent preloaded and
# ENV; its output in $DP_TMP/NAME.out, its status in $st, the calls it made
# in $calls, and in $delay_ms how long after the launch its main began.
run_app() {
	local name=$1 t0
	shift
	t0=$(date +%s%N)
	env LD_PRELOAD="$AGENT" "$@" "$APP" "$N" >"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err"
	st=$?
	calls=$(awk '{ print $4 }' "$DP_TMP/$name.out")
	delay_ms=$(awk -v t0="$t0" '{ printf "%d", ($2 - t0) / 1e6 }' "$DP_TMP/$name.out")
}

# session NAME: a session whose channel holds a run's events without loss
# (2 events a call), the path-wide --function sw_work enabled in it.
session() {
	dp_lttng create "$1" --output="$DP_TMP/trace-$1" >/dev/null &&
		dp_lttng enable-channel -u -s "$1" big --subbuf-size=8M --num-subbuf=8 >/dev/null &&
		"$LTTNG" --no-sessiond enable-event -u -s "$1" -c big --path "$APP" \
			--function sw_work w >>"$DP_TMP/lttng.log" 2>&1 &&
		dp_lttng start "$1" >/dev/null
}

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"

# ---- every call of a short program started right after enable-event ----
session s1
tap_ok $? "session s1: --path startwait-app --function sw_work enabled, started"
# Held as long as the daemon takes (120 s at most): the default 3 s may
# pass on a loaded machine before the daemon serves the HELLO.
run_app full LTTNG_DYNPROBE_REGISTER_TIMEOUT=120000
tap_ok $st "the program ran $calls calls, its main $delay_ms ms after its launch"
dp_lttng stop s1 >/dev/null
read -r events discarded <<<"$(bt_count "$DP_TMP/trace-s1")"
[ "$calls" = "$N" ] && [ "$events" = $((2 * N)) ]
tap_ok $? "every call recorded: $events events for $calls calls (entry and return)"
[ "$discarded" = 0 ] && [ "$(bt_discarded "$DP_TMP/trace-s1")" = 0 ]
tap_ok $? "nothing discarded ($discarded discarded-event messages)"
grep -q "process [0-9]* started with the agent: dynprobe:w_entry: installed" "$DP_TMP/dynprobed.log"
tap_ok $? "the daemon installed the path-wide event when the agent said HELLO"
# No event follows exec, and the agent reported no patch: its follow mode
# is known (off) without asking it (FOLLOW, a round trip at every start).
grep -q "agent of process [0-9]* connected" "$DP_TMP/dynprobed.log" &&
	! grep -q "following executed images" "$DP_TMP/dynprobed.log"
tap_ok $? "no FOLLOW sent at GO: no event follows exec"
dp_lttng destroy s1 >/dev/null

# ---- LTTNG_DYNPROBE_REGISTER_TIMEOUT=0: no wait, still correct ----
session s2
run_app nowait LTTNG_DYNPROBE_REGISTER_TIMEOUT=0
[ "$st" = 0 ] && [ "$calls" = "$N" ]
tap_ok $? "LTTNG_DYNPROBE_REGISTER_TIMEOUT=0: the program ran all its $calls calls, main $delay_ms ms after its launch"
dp_lttng stop s2 >/dev/null
read -r events discarded <<<"$(bt_count "$DP_TMP/trace-s2")"
[ "$events" -le $((2 * N)) ] &&
	[ "$(awk '{ print $6 }' "$DP_TMP/full.out")" = "$(awk '{ print $6 }' "$DP_TMP/nowait.out")" ]
tap_ok $? "its results are those of the probed run; $events events recorded (without the wait some may be missed)"
dp_lttng destroy s2 >/dev/null

# ---- bounded: a daemon that does not answer holds the program that long ----
session s3
kill -STOP "$DPD_PID"
run_app stopped LTTNG_DYNPROBE_REGISTER_TIMEOUT=1000 LTTNG_DYNPROBE_DEBUG=1
kill -CONT "$DPD_PID"
# The agent says why it let main go (its debug line), not a time bound: a
# loaded machine starts the program late.
[ "$st" = 0 ] && [ "$calls" = "$N" ] && [ "$delay_ms" -ge 900 ] &&
	grep -q "no GO from the daemon within 1000 ms: running anyway" "$DP_TMP/stopped.err"
tap_ok $? "a stopped daemon: LTTNG_DYNPROBE_REGISTER_TIMEOUT=1000 holds main $delay_ms ms, then the program runs ($(grep -c 'no GO from the daemon within 1000 ms' "$DP_TMP/stopped.err") \"no GO within 1000 ms\")"
kill -STOP "$DPD_PID"
run_app stopped0 LTTNG_DYNPROBE_REGISTER_TIMEOUT=0 LTTNG_DYNPROBE_DEBUG=1
kill -CONT "$DPD_PID"
# The agent says it read 0 and did not wait (its debug lines), not a time
# bound: a machine that stops for seconds would fail one.
[ "$st" = 0 ] && [ "$calls" = "$N" ] &&
	grep -q "main does not wait for the daemon's GO (LTTNG_DYNPROBE_REGISTER_TIMEOUT: 0 ms)" "$DP_TMP/stopped0.err" &&
	! grep -q "no GO from the daemon\|main goes on after" "$DP_TMP/stopped0.err"
tap_ok $? "a stopped daemon: LTTNG_DYNPROBE_REGISTER_TIMEOUT=0 does not hold it (main after $delay_ms ms; the agent: \"$(grep -m1 -o "main does not wait.*" "$DP_TMP/stopped0.err")\")"
dp_lttng destroy s3 >/dev/null

# ---- an injected agent does not wait in its constructor ----
session s4
start_target inj env LTTNG_DYNPROBE_DEBUG=1 "$builddir/target-pie" "$DP_SHM/shm-inj" 1 1 5000 ||
	tap_bail "no target"
tpid=$TARGET_PID
"$LTTNG" --no-sessiond enable-event -u -s s4 -c big --path "$builddir/target-pie" \
	--pid "$tpid" --function dp_work inj >>"$DP_TMP/lttng.log" 2>&1
tap_ok $? "enable-event --pid $tpid: the agent injected into a running process"
ms=$(sed -nE "s/.*process $tpid: agent injected \(([0-9]+)\.[0-9]+ ms.*/\1/p" \
	"$DP_TMP/dynprobed.log" | head -n1)
# The agent says it did not wait (its debug line), not a time bound.
[ -n "$ms" ] && wait_line "$DP_TMP/inj.out" "loaded by a thread other than the main one: no wait for the daemon" 30 &&
	! grep -q "no GO from the daemon" "$DP_TMP/inj.out"
tap_ok $? "its load (dlopen and constructor) took $ms ms: no wait for GO (the agent says so)"
kill -TERM "$tpid" 2>/dev/null
dp_lttng destroy s4 >/dev/null

# ---- without a daemon: the program runs at once ----
stop_dynprobed
tap_ok $? "the daemon exits"
run_app nodaemon LTTNG_DYNPROBE_DEBUG=1
# The default wait (3 s) ends at the failed connection, not by its time:
# the agent says why main went on.
[ "$st" = 0 ] && [ "$calls" = "$N" ] &&
	grep -q "main waits for the daemon's GO 3000 ms at most (the default)" "$DP_TMP/nodaemon.err" &&
	grep -Eq "main goes on after [0-9]+ ms: no daemon to connect to" "$DP_TMP/nodaemon.err" &&
	! grep -q "no GO from the daemon" "$DP_TMP/nodaemon.err"
tap_ok $? "no daemon: the program runs normally, main $delay_ms ms after its launch (the agent: \"$(grep -m1 -o "main goes on.*" "$DP_TMP/nodaemon.err")\")"
run_app badwait LTTNG_DYNPROBE_REGISTER_TIMEOUT=3s LTTNG_DYNPROBE_DEBUG=1
[ "$st" = 0 ] && [ "$calls" = "$N" ] &&
	grep -q "LTTNG_DYNPROBE_REGISTER_TIMEOUT=3s is not a wait in milliseconds (0 to 3600000, or -1 for no limit): 3000 ms instead" "$DP_TMP/badwait.err"
tap_ok $? "LTTNG_DYNPROBE_REGISTER_TIMEOUT=3s: the agent's debug lines say it is not a number of milliseconds and what it waits instead"
tap_done
