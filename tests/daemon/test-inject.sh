#!/bin/bash
# The agent the daemon injects into processes that did not have it: it
# connects to the daemon that loaded it, whoever owns the process (root
# probing another user's process), and lttng-ust in that process keeps its
# default time to register event classes with the session daemon: a class
# registered while the session daemon is slow to answer is still recorded.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

# The agent and the target where any user may read them: the build tree
# may be private.
pub=$DP_TMP/pub
mkdir -p "$pub" && chmod 0755 "$pub" &&
	cp "$(realpath "$AGENT")" "$pub/liblttng-ust-dynprobe.so" &&
	cp "$builddir/target-pie" "$pub/target-pie" && chmod a+rx "$pub"/* ||
	tap_bail "cannot copy the agent and the target to $pub"
AGENT=$pub/liblttng-ust-dynprobe.so
EXE=$pub/target-pie
RUN=$(dpd_run_dir)

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
dp_lttng create s --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start >/dev/null ||
	tap_bail "no session"

# ---- lttng-ust's registration timeout is left alone ----
# The target has no LTTNG_UST_REGISTER_TIMEOUT of its own: lttng-ust then
# waits up to 3 s for each reply of the session daemon.
start_target plain env -u LTTNG_UST_REGISTER_TIMEOUT "$EXE" "$DP_SHM/plain" 2 1 5000 ||
	tap_bail "the target does not start"
pid=$TARGET_PID
dpctl enable s channel0 first function dp_work "$EXE" -p "$pid" &&
	grep -q liblttng-ust-dynprobe "/proc/$pid/maps"
tap_ok $? "the agent is injected into process $pid: $(head -n1 "$DP_TMP/out")"
# dp_work's `ret` takes only an int3; the process blocks no SIGTRAP, and the
# thread that loaded the agent (every signal blocked) has ended by then.
out_has "^proc pid=$pid status=0 jump=[1-9][0-9]* int3=1( |$)" && ! out_has "refused=[1-9]"
tap_ok $? "installed right after the injection, its int3 return site is taken ($(grep '^proc' "$DP_TMP/out"))"
wait_events s "$DP_TMP/trace" dynprobe:first_entry dynprobe:first_return
tap_ok $? "its events are recorded"
dp_lttng start s >/dev/null

# A class registered while the session daemon does not answer for half a
# second (stopped): the registration waits for it, and the events come.
kill -STOP "$DP_SESSIOND_PID"
(
	sleep 0.5
	kill -CONT "$DP_SESSIOND_PID"
) &
cont=$!
dpctl enable s channel0 slow probe dp_work+20 "$EXE" -p "$pid"
st=$?
wait "$cont"
tap_ok $st "a probe enabled while the session daemon is stopped for 0.5 s: $(head -n1 "$DP_TMP/out")"
wait_events s "$DP_TMP/trace" dynprobe:slow
tap_ok $? "its class was registered once the session daemon answered: events recorded ($(grep -c '^dynprobe:slow:' "$DP_TMP/events"))"
dp_lttng start s >/dev/null

# ---- root probing another user's process ----
if [ "$(id -u)" -ne 0 ]; then
	tap_diag "not root: the checks of another user's process were not run"
elif ! dp_test_user; then
	tap_bail "cannot create the test user $DP_TEST_USER"
else
	# An array, not a function: start_target's pid must be the program's.
	asuser=(setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups)
	[ "$(stat -c %a "$RUN/dynprobe-app.sock")" = 666 ] &&
		[ "$(stat -c %a "$RUN/dynprobe-client.sock")" = 600 ]
	tap_ok $? "root's app socket is 0666 (every user's agent may connect), its client socket 0600"

	start_target other "${asuser[@]}" env -u LTTNG_UST_REGISTER_TIMEOUT "$EXE" "$DP_SHM/other" 2 1 5000 ||
		tap_bail "the target does not start as $DP_TEST_USER"
	opid=$TARGET_PID
	[ "$(stat -c %U "/proc/$opid")" = "$DP_TEST_USER" ]
	tap_ok $? "process $opid belongs to $DP_TEST_USER"
	dpctl enable s channel0 oth function dp_work "$EXE" -p "$opid" &&
		out_has "^proc pid=$opid status=0 jump=[1-9]"
	tap_ok $? "root installs probes in it, the agent injected: $(grep '^proc' "$DP_TMP/out")"
	grep -q "agent of process $opid connected (uid $(id -u "$DP_TEST_USER")," "$DP_TMP/dynprobed.log"
	tap_ok $? "its agent connected to root's daemon: $(grep -m1 "agent of process $opid connected" "$DP_TMP/dynprobed.log" | sed 's/^.*agent of/agent of/')"
	wait_events s "$DP_TMP/trace" dynprobe:oth_entry dynprobe:oth_return
	tap_ok $? "its events are recorded in root's session ($(grep -c '^dynprobe:oth_entry:' "$DP_TMP/events") entries)"
	dp_lttng start s >/dev/null
	dpctl disable s channel0 oth && same_as_file "$opid" "$EXE" dp_work
	tap_ok $? "DISABLE restores its code"

	# With the agent preloaded, it talks to its own user's daemon.
	start_target preloaded "${asuser[@]}" env LD_PRELOAD="$AGENT" "$EXE" "$DP_SHM/pre" 1 1 5000 ||
		tap_bail "the preloaded target does not start as $DP_TEST_USER"
	ppid=$TARGET_PID
	dpctl enable s channel0 pre function dp_work "$EXE" -p "$ppid"
	st=$?
	[ $st -eq 1 ] && out_has "was loaded when it started, and talks to the lttng-dynprobed of its own user \\(uid $(id -u "$DP_TEST_USER")\\): run the command as that user"
	tap_ok $? "a process of another user with the agent preloaded is refused, saying why: $(grep -m1 'message=' "$DP_TMP/out")"
	same_as_file "$ppid" "$EXE" dp_work
	tap_ok $? "and left untouched"
fi

stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"
same_as_file "$pid" "$EXE" dp_work
tap_ok $? "every site is restored"
for p in $DP_TARGETS; do
	kill -TERM "$p" 2>/dev/null
done
tap_done
