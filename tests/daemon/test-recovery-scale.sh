#!/bin/bash
# Recovery at the scale of a whole program: lttng-dynprobed killed with
# SIGKILL while the 10,000 functions of wide-fns are probed (70,000 patches),
# a new daemon started.  The agent's HELLO reports every patch; the daemon
# checks each against the code and the file, matches each to its event
# (from its state file), and answers: the event is listed with all its
# sites, the calls made meanwhile and after are all recorded, and its
# removal in one request puts the file's bytes back.  (Matching walked
# every record for each patch: at this scale a HELLO took longer than the
# agent waits for its answer, and the process was never recovered.)
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

WIDE=$builddir/wide-fns
ROUNDS=1

. "$top_srcdir/tests/daemon/wide.sh"

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"
dp_lttng create wide --output="$DP_TMP/trace-wide" >/dev/null &&
	dp_lttng enable-channel -u -s wide --subbuf-size=1M --num-subbuf=16 big >/dev/null &&
	dp_lttng enable-event -u -s wide -c big 'dynprobe:wide*' >/dev/null &&
	dp_lttng start wide >/dev/null || tap_bail "cannot create session wide"

start_target wide "$WIDE" rounds "$ROUNDS" || tap_bail "wide-fns does not start"
pid=$TARGET_PID
dpctl enable wide big wide function 'dp_w_*' "$WIDE" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=[0-9]+ int3=[0-9]+ refused=0 "
tap_ok $? "--function 'dp_w_*' in one request: $(grep '^proc' "$DP_TMP/out" | cut -c1-120)"
sites=$(sed -nE 's/^proc .* jump=([0-9]+) int3=([0-9]+) .*/\1 + \2/p' "$DP_TMP/out")
[ $((sites)) -eq 70000 ]
tap_ok $? "every entry and return site of the 10,000 functions: $sites"
jumps=$(sed -nE 's/^proc .* jump=([0-9]+) int3=([0-9]+) .*/\1:\2/p' "$DP_TMP/out")
ping_until wide wide
tap_ok $? "the events record (after $(grep -c '^pinged' "$DP_TMP/wide.out") pings)"

old=$DPD_PID
kill_dynprobed
kill -0 "$pid" && ! text_same "$pid"
tap_ok $? "the daemon killed with SIGKILL (pid $old): the program runs on, its patches in place"
from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
start_dynprobed
tap_ok $? "a new daemon starts (pid $DPD_PID)"
# Two minutes at most (of the machine's time, not the test's verdict:
# the checks below say what was recovered by then).
deadline=$((SECONDS + 120))
while [ "$SECONDS" -lt "$deadline" ]; do
	dpctl list wide
	grep -q "event=wide .*procs=$pid:$jumps\$" "$DP_TMP/out" &&
		tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "agent of process $pid connected" &&
		break
	sleep 0.2
done
grep -q "^dyn session=wide channel=big event=wide kind=function location=dp_w_\* .*enabled=1 .*procs=$pid:$jumps\$" "$DP_TMP/out"
tap_ok $? "it learns every patch from the agent, each claimed by the event: $(grep '^dyn' "$DP_TMP/out" | sed 's/^.*procs=/procs=/')"
tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "process $pid: recovered 70000 patches and 70000 probes from its agent"
tap_ok $? "$(tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -m1 "process $pid: recovered" | sed 's/^.*info: //')"
! tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "process $pid: its agent reports a patch .* that cannot be"
tap_ok $? "none of them refused"

read -r calls pings < <(run_rounds wide)
[ -n "$calls" ] && [ "$calls" -eq $((ROUNDS * 10000)) ]
tap_ok $? "the program called each function, every result right: ${calls:-none} calls"
read -r entries returns discarded < <(recorded wide wide)
[ "$entries" -eq $((calls + pings)) ] && [ "$returns" -eq $((calls + pings)) ] &&
	[ "$discarded" -eq 0 ]
tap_ok $? "every call recorded at its entry and its return: $entries entries, $returns returns for $calls + $pings calls ($discarded discarded)"
dpctl disable wide big wide && out_has "^proc pid=$pid status=0 jump=${jumps%:*} int3=${jumps#*:} "
tap_ok $? "DISABLE of the recovered event in one request: $(grep '^proc' "$DP_TMP/out" | cut -c1-120)"
text_same "$pid"
tap_ok $? "the program's code is the file's again, byte for byte"
kill -0 "$pid" && ! grep -q "wrong result" "$DP_TMP/wide.out"
tap_ok $? "the program runs on, every result right"
dp_lttng destroy wide >/dev/null
tap_done
