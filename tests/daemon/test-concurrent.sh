#!/bin/bash
# Requests served at once, and peers that cannot hold the daemon up.
#
#  - While an install into process A is held in its middle (--test-pause-ms
#    with --test-pause-pid A: the request is not answered until A exits),
#    PING, LIST, and a full ENABLE / trace / DISABLE in process B complete,
#    and B's code is the file's again after.
#  - Two clients enabling and disabling two events on one function of one
#    process, many times at once: every request succeeds, and after the last
#    disable the bytes are the file's; both events record when enabled again.
#    Two clients on one event: the end state agrees with the code.
#  - SIGTERM while an install is held in its middle: the request is
#    answered, then every site restored, before the daemon exits.
#  - Connections stalled in the middle of a frame on both sockets: PING
#    answers (within a bound meant only to catch a hang), an ENABLE and a
#    DISABLE work, and the daemon closes them itself.
#  - --max-user-connections: another user's connection beyond the bound is
#    refused with a message; root is served meanwhile.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie
LEN=64
RUN=$(dpd_run_dir)
ROUNDS=${DP_CONCURRENT_ROUNDS:-12}
# How long a PING may take before it counts as hung (not a speed goal: with
# the stalled peers below, a daemon that reads frames blocking would need
# 5 s per stalled connection).
HANG_S=20

start_sessiond || tap_bail "no session daemon"
dp_lttng create c --output="$DP_TMP/trace-c" >/dev/null &&
	dp_lttng enable-event -u -s c "dynprobe:c*" >/dev/null &&
	dp_lttng start c >/dev/null || tap_bail "cannot create session c"

start_target a "$PIE" "$DP_SHM/shm-a" 2 5 1000 || tap_bail "target a does not start"
a=$TARGET_PID
start_target b "$PIE" "$DP_SHM/shm-b" 2 5 1000 || tap_bail "target b does not start"
b=$TARGET_PID

# ---- a request held in the middle of process A -------------------------
start_dynprobed --test-pause-ms 600000 --test-pause-pid "$a" ||
	tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"
"$DPCTL" enable c channel0 ca function dp_work "$PIE" -p "$a" >"$DP_TMP/out-a" 2>&1 &
held=$!
for i in $(seq 600); do
	grep -q "test pause: .* into process $a\$" "$DP_TMP/dynprobed.log" && break
	sleep 0.1
done
grep -q "test pause: .* into process $a\$" "$DP_TMP/dynprobed.log"
tap_ok $? "the install into process $a reached its pause (the agent injected)"

still_held() {
	kill -0 "$held" 2>/dev/null && ! [ -s "$DP_TMP/out-a" ]
}

dpctl ping && out_has "pid=$DPD_PID " && still_held
tap_ok $? "PING answers while process $a's request is held"
dpctl enable c channel0 cb probe dp_work "$PIE" -p "$b" &&
	out_has "^proc pid=$b status=0 .* refused=0 " && still_held
tap_ok $? "ENABLE in process $b (its agent injected) completes meanwhile: $(grep -m1 '^proc' "$DP_TMP/out")"
! same_as_file "$b" "$PIE" dp_work
tap_ok $? "process $b's dp_work is patched"
seen c dynprobe:cb && still_held
tap_ok $? "its events are recorded: $(count dynprobe:cb)"
dpctl list c && out_has "event=cb .*enabled=1 .*procs=$b:" && still_held
tap_ok $? "LIST answers meanwhile, process $b installed"
dpctl disable c channel0 cb && out_has "^proc pid=$b status=0" && still_held
tap_ok $? "DISABLE in process $b completes meanwhile: $(grep -m1 '^proc' "$DP_TMP/out")"
same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "process $b's dp_work holds the file's $LEN bytes again"
kill -KILL "$a"
wait "$a" 2>/dev/null
wait "$held"
st=$?
[ "$st" -eq 1 ] && grep -q "exited" "$DP_TMP/out-a"
tap_ok $? "process $a killed: its held request ends, refused: $(head -n1 "$DP_TMP/out-a")"
dpctl ping && out_has "pid=$DPD_PID "
tap_ok $? "the daemon serves on"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"

# ---- SIGTERM while a request is in flight --------------------------------
# The daemon waits for the request (paused 3 s in its middle), answers it,
# then restores every site.
start_dynprobed --test-pause-ms 3000 || tap_bail "lttng-dynprobed does not start again"
"$DPCTL" enable c channel0 ct function dp_work "$PIE" -p "$b" >"$DP_TMP/out-t" 2>&1 &
flight=$!
for i in $(seq 600); do
	grep -q "test pause: .* into process $b\$" "$DP_TMP/dynprobed.log" && break
	sleep 0.1
done
kill -TERM "$DPD_PID"
wait "$flight"
st=$?
for i in $(seq 300); do
	kill -0 "$DPD_PID" 2>/dev/null || break
	sleep 0.1
done
! kill -0 "$DPD_PID" 2>/dev/null && DPD_PID=
tap_ok $? "SIGTERM during an install: the daemon exits once done"
[ "$st" -eq 0 ] && grep -q "^proc pid=$b status=0" "$DP_TMP/out-t"
tap_ok $? "the request in flight was answered: $(grep -m1 '^proc' "$DP_TMP/out-t")"
same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "and what it installed was restored: dp_work's $LEN bytes are the file's"

# ---- two clients on one process, many times at once --------------------
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
# cycle EVENT KIND LOCATION OUT: ROUNDS enable/disable pairs in process B.
cycle() {
	local i fails=0
	for i in $(seq "$ROUNDS"); do
		"$DPCTL" enable c channel0 "$1" "$2" "$3" "$PIE" -p "$b" >"$4.last" 2>&1 ||
			{ fails=$((fails + 1)); cat "$4.last" >>"$4"; }
		"$DPCTL" disable c channel0 "$1" >"$4.last" 2>&1 ||
			{ fails=$((fails + 1)); cat "$4.last" >>"$4"; }
	done
	echo "failed=$fails" >>"$4"
	[ "$fails" -eq 0 ]
}
cycle c1 function dp_work "$DP_TMP/cycle-1" &
c1=$!
cycle c2 probe dp_work "$DP_TMP/cycle-2" &
c2=$!
wait "$c1"
s1=$?
wait "$c2"
s2=$?
[ "$s1" -eq 0 ] && [ "$s2" -eq 0 ]
tap_ok $? "two clients, $ROUNDS enable/disable pairs each on process $b at once: every request succeeded ($(tail -n1 "$DP_TMP/cycle-1"), $(tail -n1 "$DP_TMP/cycle-2"))"
[ "$s1" -eq 0 ] && [ "$s2" -eq 0 ] || tap_diag_file "$DP_TMP/cycle-1" "$DP_TMP/cycle-2"
same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "after the last disable, dp_work's $LEN bytes are the file's"
dpctl list c && out_has "event=c1 .*enabled=0 .*procs=$" && out_has "event=c2 .*enabled=0 .*procs=$"
tap_ok $? "LIST: both events disabled, installed nowhere"
dpctl enable c channel0 c1 function dp_work "$PIE" -p "$b" &&
	dpctl enable c channel0 c2 probe dp_work "$PIE" -p "$b" &&
	seen c dynprobe:c1_entry dynprobe:c1_return dynprobe:c2
tap_ok $? "enabled again, both record: $(count dynprobe:c1_entry) entries, $(count dynprobe:c1_return) returns, $(count dynprobe:c2) probes"
dpctl disable c channel0 c1 && dpctl disable c channel0 c2 &&
	same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "both disabled: the file's bytes again"

# One event, two clients: whatever the order, the event is installed where
# and only where it is enabled.
cycle c3 function dp_work "$DP_TMP/cycle-3" &
c1=$!
cycle c3 function dp_work "$DP_TMP/cycle-4" &
c2=$!
wait "$c1"
wait "$c2"
dpctl list c
if out_has "event=c3 .*enabled=1 "; then
	out_has "event=c3 .*enabled=1 .*procs=$b:" && ! same_as_file "$b" "$PIE" dp_work
else
	out_has "event=c3 .*enabled=0 .*procs=$" && same_as_file "$b" "$PIE" dp_work "$LEN"
fi
tap_ok $? "one event enabled and disabled by two clients at once: the end state and the code agree ($(grep 'event=c3' "$DP_TMP/out" | grep -o 'enabled=[01].*procs=[^ ]*'))"
dpctl disable c channel0 c3 && same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "disabled: the file's bytes"

# ---- stalled connections ---------------------------------------------
pub=$DP_TMP/pub
mkdir -p "$pub" && chmod 0755 "$pub" && cp "$builddir/dpfuzz" "$pub/dpfuzz" &&
	cp "$top_srcdir/tests/proto/golden.txt" "$pub/golden.txt" && chmod a+rx "$pub"/* ||
	tap_bail "cannot copy the fuzzer to $pub"
FUZZ=$pub/dpfuzz
GOLDEN=$pub/golden.txt
NSTALL=8
holders=
for proto in client app; do
	"$FUZZ" "$GOLDEN" $proto "$RUN/dynprobe-$proto.sock" 7 0 30000 "$NSTALL" \
		>"$DP_TMP/hold-$proto" 2>&1 &
	holders="$holders $!"
done
sleep 0.5
timeout "$HANG_S" "$DPCTL" ping >"$DP_TMP/out" 2>&1 && out_has "pid=$DPD_PID "
tap_ok $? "$NSTALL connections stalled mid-frame on each socket: PING answers"
dpctl enable c channel0 cs probe dp_work "$PIE" -p "$b" && out_has "^proc pid=$b status=0" &&
	dpctl disable c channel0 cs && same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "ENABLE and DISABLE in process $b work meanwhile"
ok=0
for h in $holders; do
	wait "$h" || ok=1
done
[ "$ok" -eq 0 ]
tap_ok $? "the daemon closed every stalled connection itself: $(cat "$DP_TMP/hold-client") / $(cat "$DP_TMP/hold-app")"
grep -q "half a frame, not the rest within 5000 ms: connection closed" "$DP_TMP/dynprobed.log"
tap_ok $? "the log says why each was closed"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"

# ---- connections bounded per user -----------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	tap_diag "not root: the bound on another user's connections was not checked"
elif ! dp_test_user; then
	tap_bail "cannot create the test user $DP_TEST_USER"
else
	MAXC=4
	start_dynprobed --max-user-connections "$MAXC" ||
		tap_bail "lttng-dynprobed does not start with --max-user-connections"
	uid=$(id -u "$DP_TEST_USER")
	setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
		"$FUZZ" "$GOLDEN" app "$RUN/dynprobe-app.sock" 9 0 30000 $((MAXC + 2)) \
		>"$DP_TMP/hold-user" 2>&1 &
	holder=$!
	for i in $(seq 300); do
		grep -q "refused: uid $uid has $MAXC connections" "$DP_TMP/dynprobed.log" && break
		sleep 0.1
	done
	grep -q "refused: uid $uid has $MAXC connections to lttng-dynprobed open, the most one user may have (--max-user-connections)" \
		"$DP_TMP/dynprobed.log"
	tap_ok $? "$DP_TEST_USER's connections beyond $MAXC are refused, the log says why"
	timeout "$HANG_S" "$DPCTL" ping >"$DP_TMP/out" 2>&1 && out_has "pid=$DPD_PID " &&
		dpctl enable c channel0 cu probe dp_work "$PIE" -p "$b" &&
		out_has "^proc pid=$b status=0" && dpctl disable c channel0 cu
	tap_ok $? "root is served meanwhile (PING, ENABLE, DISABLE in process $b)"
	wait "$holder"
	tap_diag "$DP_TEST_USER's connections: $(cat "$DP_TMP/hold-user")"
	same_as_file "$b" "$PIE" dp_work "$LEN"
	tap_ok $? "process $b holds the file's bytes"
	stop_dynprobed
	tap_ok $? "SIGTERM: the daemon exits"
fi

kill -TERM "$b"
wait "$b"
tap_ok $? "target $b computed right throughout: $(tail -n1 "$DP_TMP/b.out")"
tap_done
