#!/bin/bash
# Hostile clients: mutated, random, truncated, cut, oversized and
# wrong-version frames (dpfuzz) against the running daemon, on its client
# socket and on its app socket, as root and as the unprivileged test user.
# Afterwards the daemon runs, answers, holds no more descriptors than
# before, and nothing changed outside the fuzzer's own processes: a target
# probed by a session keeps its probes and its events, a target nobody
# probed keeps its code and has no agent.
#
#   test-fuzz.sh [FRAMES [SEED]]   (or DP_FUZZ_FRAMES, DP_FUZZ_SEED)
#
# FRAMES per protocol and user (default 5000); the seed is printed, and
# the same seed sends the same frames again.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

FRAMES=${1:-${DP_FUZZ_FRAMES:-5000}}
SEED=${2:-${DP_FUZZ_SEED:-$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')}}
PIE=$builddir/target-pie
RUN=$(dpd_run_dir)
tap_diag "seed $SEED, $FRAMES frames per protocol and user (again: DP_FUZZ_FRAMES=$FRAMES DP_FUZZ_SEED=$SEED make check TESTS=test-fuzz.sh)"

# The fuzzer and the golden messages where any user may read them.
pub=$DP_TMP/pub
mkdir -p "$pub" && chmod 0755 "$pub" && cp "$builddir/dpfuzz" "$pub/dpfuzz" &&
	cp "$top_srcdir/tests/proto/golden.txt" "$pub/golden.txt" && chmod a+rx "$pub"/* ||
	tap_bail "cannot copy the fuzzer to $pub"
FUZZ=$pub/dpfuzz
GOLDEN=$pub/golden.txt

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
pid_before=$DPD_PID

# A session's target, probed, recording; and a target nobody probes.
dp_lttng create watched-fuzz --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-event -s watched-fuzz -u 'dynprobe:*' >/dev/null &&
	dp_lttng start watched-fuzz >/dev/null || tap_bail "no session"
start_target probed "$PIE" "$DP_SHM/shm-probed" 2 1 2000 || tap_bail "the target does not start"
probed=$TARGET_PID
start_target idle "$PIE" "$DP_SHM/shm-idle" 2 1 2000 || tap_bail "the idle target does not start"
idle=$TARGET_PID
dpctl enable watched-fuzz channel0 watch function dp_work "$PIE" -p "$probed" &&
	out_has "^proc pid=$probed status=0"
tap_ok $? "a session's probe in process $probed: $(grep -m1 '^proc' "$DP_TMP/out")"
wait_events watched-fuzz "$DP_TMP/trace" dynprobe:watch_entry
tap_ok $? "its events are recorded"
before=$(count dynprobe:watch_entry)
dp_lttng start watched-fuzz >/dev/null
sleep 0.5
# fds PID: its descriptors, one "N TARGET" a line.
fds() {
	local f
	for f in /proc/"$1"/fd/*; do
		echo "${f##*/} $(readlink "$f")"
	done | sort
}
fds "$DPD_PID" >"$DP_TMP/fds-before"

# fuzz NAME USER-PREFIX... -- ARGS: runs dpfuzz, its summary in $DP_TMP/NAME.
fuzz() {
	local name=$1 proto=$2 sock=$3 seed=$4 t0 st
	shift 4
	t0=$(date +%s%N)
	"$@" "$FUZZ" "$GOLDEN" "$proto" "$sock" "$seed" "$FRAMES" >"$DP_TMP/$name" 2>&1
	st=$?
	echo "time_ms=$((($(date +%s%N) - t0) / 1000000))" >>"$DP_TMP/$name"
	tap_diag "$(tr '\n' ' ' <"$DP_TMP/$name")"
	return "$st"
}

fuzz root-client client "$RUN/dynprobe-client.sock" "$SEED"
tap_ok $? "root: $FRAMES frames on the client socket, every connection closed by the daemon in time"
kill -0 "$DPD_PID" 2>/dev/null
tap_ok $? "the daemon (pid $DPD_PID) still runs"
fuzz root-app app "$RUN/dynprobe-app.sock" "$((SEED + 1))"
tap_ok $? "root: $FRAMES frames on the app socket, every connection closed by the daemon in time"
kill -0 "$DPD_PID" 2>/dev/null
tap_ok $? "the daemon still runs"

if [ "$(id -u)" -ne 0 ]; then
	tap_diag "not root: the checks as another user were not run"
elif ! dp_test_user; then
	tap_bail "cannot create the test user $DP_TEST_USER"
else
	asuser=(setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups)
	fuzz user-app app "$RUN/dynprobe-app.sock" "$((SEED + 2))" "${asuser[@]}"
	tap_ok $? "$DP_TEST_USER: $FRAMES frames on root's app socket, every connection closed in time"
	fuzz user-client client "$RUN/dynprobe-client.sock" "$SEED" "${asuser[@]}"
	[ $? -eq 1 ] && grep -q "cannot connect.*Permission denied" "$DP_TMP/user-client"
	tap_ok $? "$DP_TEST_USER cannot even connect to root's client socket"
fi

# Frames cut and left hanging, the connections held open: the daemon drops
# each one itself, once its frame timeout (5 s) passes, and serves others
# meanwhile: a frame is read as its bytes come, never waited for, so a
# stalled connection holds no one up.  The PING's bound only catches a hang
# (a daemon that waited for each stalled frame would need 5 s for each).
# Whether PING, ENABLE and DISABLE were served while the connections were
# still open is what the case shows; a machine that stalls for seconds can
# let their 5 s pass first, which shows nothing either way: then the case
# is run again, up to 3 times.  A daemon that waited for stalled frames
# would be served only after they are dropped, every time.
for proto in client app; do
	served=1 tries=0
	while [ "$served" -ne 0 ] && [ "$tries" -lt 3 ]; do
		tries=$((tries + 1))
		"$FUZZ" "$GOLDEN" $proto "$RUN/dynprobe-$proto.sock" "$SEED" 0 30000 8 >"$DP_TMP/hold-$proto" 2>&1 &
		holder=$!
		wait_line "$DP_TMP/hold-$proto" '^dpfuzz: holding' 10
		t0=$(date +%s%N)
		timeout 120 "$DPCTL" ping >"$DP_TMP/out" 2>&1 && out_has "pid=$DPD_PID "
		tap_ok $? "$proto socket: while 8 connections stall mid-frame, the daemon answers PING (in $((($(date +%s%N) - t0) / 1000000)) ms)"
		dpctl enable watched-fuzz channel0 stalled probe dp_work "$PIE" -p "$probed" &&
			out_has "^proc pid=$probed status=0" && dpctl disable watched-fuzz channel0 stalled &&
			out_has "^proc pid=$probed status=0"
		tap_ok $? "$proto socket: ENABLE and DISABLE in process $probed work meanwhile"
		# The holder prints its last line once the daemon closed them all.
		grep -q '^dpfuzz: holding 8 ' "$DP_TMP/hold-$proto" && ! grep -q 'still-open=' "$DP_TMP/hold-$proto"
		served=$?
		[ "$served" -ne 0 ] && tap_diag "$proto socket, try $tries: the stalled connections were closed before the requests were served ($((($(date +%s%N) - t0) / 1000000)) ms): again"
		wait "$holder"
		tap_ok $? "$proto socket: the daemon closed every stalled connection itself: $(tail -n1 "$DP_TMP/hold-$proto")"
	done
	tap_ok "$served" "$proto socket: ... while the stalled connections were still open (try $tries)"
done

kill -0 "$DPD_PID" 2>/dev/null && [ "$DPD_PID" = "$pid_before" ] &&
	[ "$(cat "$RUN/lttng-dynprobed.pid")" = "$pid_before" ]
tap_ok $? "after the fuzzing the same daemon (pid $DPD_PID) runs"
dpctl ping && out_has "pid=$DPD_PID "
tap_ok $? "it answers PING"
# The descriptors the daemon holds now that it did not before: none, but
# the object files the golden requests name (ENABLE, SITES), which the
# daemon opens and caches for good (resolve.c), and those of the programs
# beside them that a mutated name hits (/usr/bin/ls becomes /usr/bin/ln):
# ELF files of the system's program folder.  A connection the daemon has
# seen closed may still be in its hands for a moment: wait up to 10 s.
allowed=" $(realpath /bin/true) $(realpath /bin/false) $(realpath /usr/bin/ls) "
bindir=$(dirname "$(realpath /usr/bin/ls)")
cached() {
	case "$allowed" in *" $1 "*) return 0 ;; esac
	[ "$(dirname "$1")" = "$bindir" ] && [ -f "$1" ] &&
		[ "$(head -c4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]
}
for i in $(seq 300); do
	fds "$DPD_PID" >"$DP_TMP/fds-after"
	extra=$(comm -13 "$DP_TMP/fds-before" "$DP_TMP/fds-after" | while read -r n target; do
		cached "$target" || echo "$n->$target"
	done)
	[ -z "$extra" ] && break
	sleep 0.1
done
[ -z "$extra" ]
tap_ok $? "no descriptor leaked: $(wc -l <"$DP_TMP/fds-before") open before, $(wc -l <"$DP_TMP/fds-after") after (new: $(comm -13 "$DP_TMP/fds-before" "$DP_TMP/fds-after" | tr '\n' ' ')${extra:+; leaked: $extra})"

# Nothing outside the fuzzer's processes changed.
dpctl list watched-fuzz && out_has "watch" && out_has "$probed"
tap_ok $? "the session's event is still listed, with process $probed"
wait_events watched-fuzz "$DP_TMP/trace" "dynprobe:watch_entry>$before"
tap_ok $? "its events are still recorded ($before before, $(count dynprobe:watch_entry) now)"
dp_lttng start watched-fuzz >/dev/null
! grep -q liblttng-ust-dynprobe /proc/"$idle"/maps && same_as_file "$idle" "$PIE" dp_work
tap_ok $? "the target nobody probed (process $idle) has no agent and its own code"
kill -0 "$DP_SESSIOND_PID" 2>/dev/null && dp_lttng list -u >/dev/null
tap_ok $? "the session daemon runs and answers"

# Real requests still work: another probe, then both removed.
dpctl enable watched-fuzz channel0 again function dp_work "$PIE" -p "$idle" &&
	out_has "^proc pid=$idle status=0" && ! same_as_file "$idle" "$PIE" dp_work
tap_ok $? "a new ENABLE installs a probe: $(grep -m1 '^proc' "$DP_TMP/out")"
dpctl disable watched-fuzz channel0 again && dpctl disable watched-fuzz channel0 watch &&
	same_as_file "$idle" "$PIE" dp_work && same_as_file "$probed" "$PIE" dp_work
tap_ok $? "DISABLE restores both targets' code to the file's"
kill -TERM "$probed" "$idle"
wait "$probed" "$idle"
tap_ok $? "both targets computed right all along and exit cleanly"
DP_TARGETS=

stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"
tap_done
