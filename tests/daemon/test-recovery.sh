#!/bin/bash
# lttng-dynprobed killed with SIGKILL in the middle of an install: the
# target keeps running and computing right with the probes already in
# place, and a new daemon learns what is installed from the reconnecting
# agent (and its events from its state file): it lists them, forgets the
# patch noted but never written, removes them exactly, and installs again.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie

start_sessiond || tap_bail "no session daemon"
dp_lttng create s --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start >/dev/null
start_dynprobed --test-pause-ms 3000 || tap_bail "lttng-dynprobed does not start"
start_target t env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm" 8 10 500
pid=$TARGET_PID

dpctl enable s channel0 a function dp_work "$PIE" -p "$pid" -c reg:rdi
tap_ok $? "event a installed: $(grep '^proc' "$DP_TMP/out")"

"$DPCTL" enable s channel0 b probe dp_work+20 "$PIE" -p "$pid" >"$DP_TMP/b-enable" 2>&1 &
client=$!
# Event a paused once; event b's pause is the second.  60 s: a hang bound
# (S23-6: not logged within 5 s, on a machine that stalled for seconds).
for i in $(seq 1200); do
	[ "$(grep -c "test pause: .* process $pid" "$DP_TMP/dynprobed.log")" -ge 2 ] && break
	sleep 0.05
done
old=$DPD_PID
kill_dynprobed
wait "$client"
[ $? -eq 2 ]
tap_ok $? "the daemon killed in the middle of installing event b (its client saw: $(head -n1 "$DP_TMP/b-enable"))"

calls1=$("$DPCTL" calls "$DP_SHM/shm")
sleep 0.5
calls2=$("$DPCTL" calls "$DP_SHM/shm")
kill -0 "$pid" && [ "$calls2" -gt "$calls1" ]
tap_ok $? "the target keeps running ($calls1 -> $calls2 calls)"
! same_as_file "$pid" "$PIE" dp_work
tap_ok $? "event a's patch is still in place"

start_dynprobed
tap_ok $? "a new daemon starts (pid $DPD_PID; the old one was $old)"
for i in $(seq 300); do
	dpctl list s
	grep -q "event=a .*procs=$pid:2:1" "$DP_TMP/out" && break
	sleep 0.1
done
grep -q "^dyn session=s channel=channel0 event=a kind=function location=dp_work path=$PIE enabled=1 .*procs=$pid:2:1" "$DP_TMP/out"
tap_ok $? "it learns from the agent what is installed: $(grep '^dyn' "$DP_TMP/out" | tr '\n' ' ')"
! grep -q "event=b " "$DP_TMP/out"
tap_ok $? "the install that never completed is not listed as an event"
# Patches are noted to the agent before they are written: it reports event
# b's too, and the new daemon forgets it, its site holding the file's bytes.
grep -q "recovered 4 patches" "$DP_TMP/dynprobed.log"
tap_ok $? "the agent reported the three patches of event a and the one noted for b"
b_site=$(printf '0x%x' "$(runtime_addr "$pid" "$PIE" $(($(sym_vaddr "$PIE" dp_work) + 20)))")
grep -q "process $pid: the patch at $b_site its agent reports is not in its code: forgotten" \
	"$DP_TMP/dynprobed.log"
tap_ok $? "b's, never written, is forgotten: $(grep -m1 'is not in its code' "$DP_TMP/dynprobed.log" | sed 's/^.*: the patch/the patch/')"

dpctl disable s channel0 a && same_as_file "$pid" "$PIE" dp_work
tap_ok $? "DISABLE of the recovered event restores dp_work exactly"
dpctl list s
grep -q "event=a .*enabled=0 .*procs=$" "$DP_TMP/out"
tap_ok $? "and nothing of it is installed any more"
dpctl enable s channel0 a function dp_work "$PIE" -p "$pid" -c reg:rdi &&
	out_has "^proc pid=$pid status=0 jump=2 int3=1"
tap_ok $? "ENABLE installs it again: $(grep '^proc' "$DP_TMP/out")"
dpctl enable s channel0 b probe dp_work+20 "$PIE" -p "$pid" && out_has "^proc pid=$pid status=0 jump=1"
tap_ok $? "and event b installs now: $(grep '^proc' "$DP_TMP/out")"
sleep 0.3
stop_dynprobed
same_as_file "$pid" "$PIE" dp_work && same_as_file "$pid" "$PIE" dp_work_mid
tap_ok $? "SIGTERM restores every site"
kill -TERM "$pid"
wait "$pid"
tap_ok $? "every result the target computed was right: $(tail -n1 "$DP_TMP/t.out")"
dp_lttng stop >/dev/null
bt_text "$DP_TMP/trace" >"$DP_TMP/events"
grep -q '^dynprobe:b:' "$DP_TMP/events" && grep -q '^dynprobe:a_entry:' "$DP_TMP/events"
tap_ok $? "events of a and b were recorded ($(grep -c '^dynprobe:a_entry:' "$DP_TMP/events"), ($(grep -c '^dynprobe:b:' "$DP_TMP/events")))"
tap_done
