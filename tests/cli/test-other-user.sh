#!/bin/bash
# Another user's process through the CLI.  As root: lttng enable-event
# --pid on a process of the test user, which did not have the agent; the
# daemon injects it, the agent connects to root's daemon, and the events
# land in root's session.  As any other user: a process of root is
# refused, saying whose it is.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
if [ "$(id -u)" -ne 0 ]; then
	start_sessiond || tap_bail "no session daemon"
	export LTTNG_DYNPROBE_DAEMON=$top_builddir/src/bin/lttng-dynprobed/lttng-dynprobed
	"$STOCK" -n create s --output="$DP_TMP/trace" >/dev/null || tap_bail "create s"
	out=$("$LTTNG" enable-event -u -s s --path "$TARGET" --pid 1 --probe foo other 2>&1)
	[ $? -eq 1 ] && grep -q "process 1 belongs to root (uid 0), not to you" <<<"$out"
	tap_ok $? "a process of root is refused: $out"
	tap_done
	exit
fi
dp_test_user || tap_bail "cannot create the test user $DP_TEST_USER"
start_sessiond || tap_bail "no session daemon"

# The program and the agent where the test user can read them: the build
# tree may be private.
pub=$DP_TMP/pub
mkdir -p "$pub" && chmod 0755 "$pub" &&
	cp "$TARGET" "$pub/cli-target" &&
	cp "$(realpath "$top_builddir/src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so.0")" \
		"$pub/liblttng-ust-dynprobe.so.0" && chmod a+rx "$pub"/* ||
	tap_bail "cannot copy the program and the agent to $pub"
export LTTNG_DYNPROBE_AGENT=$pub/liblttng-ust-dynprobe.so.0
export LTTNG_DYNPROBE_DAEMON=$top_builddir/src/bin/lttng-dynprobed/lttng-dynprobed

setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
	"$pub/cli-target" --loop >/dev/null 2>&1 &
pid=$!
for i in $(seq 500); do
	[ "$(stat -c %U "/proc/$pid")" = "$DP_TEST_USER" ] && break
	sleep 0.02
done
[ "$(stat -c %U "/proc/$pid")" = "$DP_TEST_USER" ]
tap_ok $? "process $pid runs as $DP_TEST_USER"

"$STOCK" -n create s --output="$DP_TMP/trace" >/dev/null || tap_bail "create s"
out=$("$LTTNG" enable-event -u -s s --path "$pub/cli-target" --pid "$pid" --function foo other 2>&1)
tap_ok $? "root: enable-event --pid $pid (a process of $DP_TEST_USER): $(tr '\n' ' ' <<<"$out")"
grep -q "process $pid: [1-9][0-9]* sites by jump" <<<"$out"
tap_ok $? "installed there, the agent injected"
"$STOCK" -n start s >/dev/null
for i in $(seq 100); do
	"$STOCK" -n stop s >/dev/null
	bt_text "$DP_TMP/trace" >"$DP_TMP/events"
	grep -q '^dynprobe:other_return: ' "$DP_TMP/events" && break
	"$STOCK" -n start s >/dev/null
	sleep 0.2
done
grep -q '^dynprobe:other_entry: ' "$DP_TMP/events" &&
	grep -q '^dynprobe:other_return: .*ret = ' "$DP_TMP/events"
tap_ok $? "its events are in root's session ($(grep -c '^dynprobe:other_entry: ' "$DP_TMP/events") entries)"
"$STOCK" -n destroy s >/dev/null
kill -0 "$pid"
tap_ok $? "the process runs on"
kill -TERM "$pid"
tap_done
