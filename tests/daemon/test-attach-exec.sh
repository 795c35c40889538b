#!/bin/bash
# lttng-dynprobed --attach-exec (root): a program of PATH started without
# any preload is found through the kernel's process-events connector as it
# executes, held at its entry point while the path-wide probes go in, and
# runs probed from main.  M starts of a program that calls the probed
# function N times, with a CPU hog beside them: every start is found and
# probed; every start the daemon held at its entry has every call recorded
# (the property it guarantees), and some were held (else that check would
# prove nothing); how many of the M were found, held, and had their first
# call recorded is reported, not asserted (it depends on how fast the
# daemon reads the notice: a program that runs past its entry first is
# probed as it runs, or, when it ends first, not at all).  An unprivileged daemon refuses the option.
#
# The connector speaks of the initial pid and network namespaces only: this
# test runs there, with a private mount namespace alone (the private
# /var/run/lttng and /dev/shm of tests/utils/sessiond.sh's dp_isolate).
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/daemon/attach-exec.sh"
APP=$builddir/follow-app
N=500000
M=${ATTACH_EXEC_STARTS:-10}
HOG=

cleanup() {
	local st=$?
	[ -n "$HOG" ] && kill "$HOG" 2>/dev/null
	(exit "$st")
	dpd_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- an unprivileged daemon has no connector ----
dp_test_user || tap_bail "cannot create the test user $DP_TEST_USER"
mkdir -p "$DP_TMP/home" && chmod 777 "$DP_TMP/home"
setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
	env LTTNG_HOME="$DP_TMP/home" "$DPD" --attach-exec >"$DP_TMP/user.out" 2>&1
st=$?
[ "$st" = 1 ] && grep -q "needs root" "$DP_TMP/user.out"
tap_ok $? "as $DP_TEST_USER: --attach-exec is refused: $(head -c 160 "$DP_TMP/user.out")"
setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
	env LTTNG_HOME="$DP_TMP/home" LTTNG_DYNPROBE_ATTACH_EXEC=1 "$DPD" >"$DP_TMP/user2.out" 2>&1
st=$?
[ "$st" = 1 ] && grep -q "needs root" "$DP_TMP/user2.out"
tap_ok $? "as $DP_TEST_USER: LTTNG_DYNPROBE_ATTACH_EXEC=1 likewise"

# ---- root: programs started without the agent ----
start_sessiond || tap_bail "no session daemon"
start_dynprobed --attach-exec || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
tap_ok 0 "lttng-dynprobed --attach-exec starts as root"
dp_lttng create s1 --output="$DP_TMP/trace-s1" >/dev/null &&
	dp_lttng enable-channel -u -s s1 big --subbuf-size=16M --num-subbuf=8 >/dev/null &&
	dp_lttng add-context -u -s s1 -c big -t vpid >/dev/null &&
	"$LTTNG" --no-sessiond enable-event -u -s s1 -c big --path "$APP" \
		--function fw_work w >>"$DP_TMP/lttng.log" 2>&1 &&
	dp_lttng start s1 >/dev/null
tap_ok $? "session s1: path-wide --function fw_work in follow-app, vpid, started"

# A CPU hog beside the starts (the machine's two cores busy).
# (ATTACH_EXEC_HOG=0: none, to compare.)
if [ "${ATTACH_EXEC_HOG:-1}" != 0 ]; then
	(while :; do :; done) &
	HOG=$!
fi
pids=
bad_run=0
for i in $(seq "$M"); do
	env -u LD_PRELOAD "$APP" work "$N" >"$DP_TMP/run$i.out" 2>&1 &
	pid=$!
	wait "$pid" || bad_run=$((bad_run + 1))
	pids="$pids $pid"
	# One start at a time: the daemon is done with this one (or never
	# saw it) before the next.
	for t in $(seq 100); do
		grep -q "process $pid started without the agent" "$DP_TMP/dynprobed.log" && break
		sleep 0.05
	done
done
tap_ok $bad_run "$M starts of follow-app work $N without any preload, each to its end"

# The same program in another mount namespace (a container, another test's
# private /var/run/lttng) is not this daemon's: left alone.
unshare --mount --propagation private env -u LD_PRELOAD "$APP" work "$N" >"$DP_TMP/ns.out" 2>&1 &
nspid=$!
wait "$nspid"
st=$?
sleep 0.5
[ "$st" = 0 ] && grep -q "^agent $nspid no\$" "$DP_TMP/ns.out" &&
	! grep -q "process $nspid " "$DP_TMP/dynprobed.log"
tap_ok $? "a start in another mount namespace is left alone: no agent, nothing in the log" ||
	tap_diag_file "$DP_TMP/ns.out"
dp_lttng stop s1 >/dev/null
bt_text "$DP_TMP/trace-s1" |
	sed -nE 's/^dynprobe:w_(entry|return): .*vpid = ([0-9]+).*/\1 \2/p' >"$DP_TMP/s1.ev"

found=0 held=0 held_full=0 first=0 probed=0 report=
for pid in $pids; do
	e=$(grep -c "^entry $pid\$" "$DP_TMP/s1.ev")
	r=$(grep -c "^return $pid\$" "$DP_TMP/s1.ev")
	grep -q "process $pid executed a probed program without the agent" "$DP_TMP/dynprobed.log" &&
		found=$((found + 1))
	grep -q "process $pid started without the agent: dynprobe:w_entry: installed" \
		"$DP_TMP/dynprobed.log" && [ "$e" -gt 0 ] && probed=$((probed + 1))
	if grep -q "process $pid executed a probed program without the agent: held" \
		"$DP_TMP/dynprobed.log"; then
		held=$((held + 1))
		[ "$e" = "$N" ] && [ "$r" = "$N" ] && held_full=$((held_full + 1))
	fi
	[ "$e" = "$N" ] && first=$((first + 1))
	report="$report $e"
done
[ "$held" -gt 0 ]
tap_ok $? "starts were found as they executed and held at their entry point ($found found, $held held, of $M)"
[ "$held_full" = "$held" ]
tap_ok $? "every start held at its entry point has every call recorded ($held_full of $held held)"
tap_diag "first call recorded in $first of $M starts (CPU hog: ${ATTACH_EXEC_HOG:-1}): $found found, $held held at the entry, $probed probed; entries per start:$report of $N"
echo "attach-exec: first call recorded in $first of $M starts: $found found, $held held at the entry, $probed probed" >&2
dp_lttng destroy s1 >/dev/null
stop_dynprobed
tap_ok $? "the daemon exits"
tap_done
