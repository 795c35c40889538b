# A private lttng-sessiond for TAP shell tests (sourced, bash, after tap.sh).
#
#   . "$top_srcdir/tests/utils/tap.sh"
#   . "$top_srcdir/tests/utils/sessiond.sh"
#   dp_isolate "$0" "$@"      # first thing: may re-run the script (see below)
#   start_sessiond             # a session daemon that only this test sees
#   dp_lttng create s --output="$DP_TMP/trace"; ...; dp_lttng destroy s
#   bt_text "$DP_TMP/trace"    # the events, one per line, as text
#
# Functions:
#   dp_isolate SCRIPT ARGS...  private namespaces (root), DP_TMP, LTTNG_HOME,
#                              the exit trap
#   start_sessiond [OPTS...]   lttng-sessiond in the background, once ready;
#   stop_sessiond              and stopped, with its consumer daemons
#   dp_spawn CMD...            another daemon (relayd...), stopped at exit
#   dp_stop_pid PID            SIGTERM, then SIGKILL, to PID and descendants
#   dp_lttng ARGS...           the CLI ($LTTNG), never spawning a daemon;
#                              output logged, shown in TAP on failure
#   bt_text TRACE...           events as text, one a line, no timestamps
#   bt_count TRACE...          "EVENTS DISCARDED_EVENTS_MESSAGES", fast
#   bt_discarded TRACE...      events the tracer reported as discarded
#                              (each read noted: tap_done fails the test if
#                              the last read of a trace failed)
#   dp_test_user               the unprivileged user `dptest` (root makes it)
#   dp_run_as_test_user SCRIPT ARGS...   re-runs SCRIPT as that user
#
# Everything a test starts is stopped at exit (trap): sessions destroyed,
# every daemon of ours stopped by pid (the consumer daemons too: every
# descendant of the session daemon), the temp dir removed.
#
# Isolation.  As root, lttng-sessiond always uses /var/run/lttng (LTTNG_HOME
# does not move it, and a second one refuses to start), so dp_isolate re-runs
# the script in its own mount, pid and network namespaces (unshare(1)) with
# fresh tmpfs on /var/run/lttng and /dev/shm (where lttng-ust's wait shm
# lives): tests can run in parallel, and next to a system session daemon.
# The pid namespace also ends, when the script exits, whatever it left.  As
# another user, a private LTTNG_HOME is enough: that user's session daemon
# and applications meet under $LTTNG_HOME/.lttng.
#
# Variables: DP_TMP (the test's temp dir, removed at exit; set by
# dp_isolate), DP_SHM (the same on tmpfs, for the test programs' shared
# counters), LTTNG_HOME and HOME (in DP_TMP), LTTNG (the lttng CLI to run,
# default `lttng`), DP_SESSIOND_PID.  Set DP_KEEP=1 to keep both.
#
# Running as an unprivileged user: dp_test_user makes (as root) the system
# user `dptest` if missing, and dp_run_as_test_user re-runs the script as
# that user.  That user must be able to read and run the build tree: every
# directory from / down to it needs o+rx (a tree under /root does not work).

: "${LTTNG:=lttng}"
DP_TEST_USER=dptest
DP_SESSIOND_PID=
DP_TMP=
DP_SHM=

# dp_isolate SCRIPT ARGS...: call first, with "$0" "$@".
dp_isolate() {
	local script=$1
	shift
	if [ "$(id -u)" -eq 0 ] && [ -z "${DP_ISOLATED:-}" ]; then
		command -v unshare >/dev/null || tap_bail "unshare(1) is missing (util-linux)"
		DP_ISOLATED=1 exec unshare --mount --propagation private --pid --fork \
			--mount-proc --net bash "$script" "$@"
	fi
	if [ "$(id -u)" -eq 0 ]; then
		# Only in the namespaces made above (the script is their pid 1):
		# never over the host's /var/run/lttng.
		[ "$$" -eq 1 ] || tap_bail "DP_ISOLATED is set, but this is not a private namespace"
		mkdir -p /var/run/lttng &&
			mount -t tmpfs -o mode=0755 dp-lttng-run /var/run/lttng &&
			mount -t tmpfs -o mode=1777 dp-shm /dev/shm ||
			tap_bail "cannot mount private tmpfs on /var/run/lttng and /dev/shm"
		# Loopback only: relayd and the agent port listen there.
		ip link set lo up 2>/dev/null
	fi
	DP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/dp-test.XXXXXX") || tap_bail "mktemp failed"
	chmod 0755 "$DP_TMP"
	# The test programs' shared counters: on tmpfs, never written back to a
	# disk (a thread that writes to a file-backed page while the disk is
	# busy may sleep, uninterruptibly, for seconds in the kernel's writeback
	# throttling, and a thread that cannot stop makes an install refuse).
	DP_SHM=$(mktemp -d /dev/shm/dp-test.XXXXXX) || tap_bail "mktemp in /dev/shm failed"
	chmod 1777 "$DP_SHM"
	export LTTNG_HOME=$DP_TMP/home
	mkdir -p "$LTTNG_HOME"
	# Nothing of the caller's home: an unprivileged user may not even read it.
	export HOME=$LTTNG_HOME
	# Applications would wait up to 3 s for an absent session daemon.
	export LTTNG_UST_REGISTER_TIMEOUT=${LTTNG_UST_REGISTER_TIMEOUT:-5000}
	trap dp_cleanup EXIT
	trap 'exit 130' INT TERM
}

# The pids of every descendant of pid $1, deepest first.
dp_descendants() {
	local child
	for child in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		dp_descendants "$child"
		echo "$child"
	done
}

# start_sessiond [OPTIONS...]: starts lttng-sessiond in the background and
# waits until it is ready (it signals readiness with SIGUSR1).
start_sessiond() {
	local ready=0 i opts=(--sig-parent --quiet)

	[ -n "$DP_TMP" ] || tap_bail "start_sessiond before dp_isolate"
	[ "$(id -u)" -eq 0 ] && opts+=(--no-kernel)
	trap 'ready=1' USR1
	lttng-sessiond "${opts[@]}" "$@" >"$DP_TMP/sessiond.log" 2>&1 &
	DP_SESSIOND_PID=$!
	for i in $(seq 600); do
		[ "$ready" -eq 1 ] && break
		kill -0 "$DP_SESSIOND_PID" 2>/dev/null || break
		sleep 0.05
	done
	trap - USR1
	if [ "$ready" -ne 1 ]; then
		tap_diag "lttng-sessiond did not start:"
		tap_diag_file "$DP_TMP/sessiond.log"
		return 1
	fi
	return 0
}

# dp_stop_pid PID: SIGTERM to PID (a child of this script); SIGKILL to it
# and to its descendants still alive after 5 s.  By pid, never by name.
dp_stop_pid() {
	local pid=$1 pids i alive p

	pids="$(dp_descendants "$pid") $pid"
	kill -TERM "$pid" 2>/dev/null
	for i in $(seq 100); do
		alive=
		for p in $pids; do
			kill -0 "$p" 2>/dev/null && alive="$alive $p"
		done
		[ -z "$alive" ] && break
		sleep 0.05
	done
	[ -n "$alive" ] && kill -KILL $alive 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# stop_sessiond: stops the session daemon and its consumer daemons.
stop_sessiond() {
	[ -n "$DP_SESSIOND_PID" ] || return 0
	dp_stop_pid "$DP_SESSIOND_PID"
	DP_SESSIOND_PID=
}

# dp_spawn CMD...: starts another daemon of the test (lttng-relayd, ...) in
# the background, its output in $DP_TMP/spawn-PID.log; stopped by pid at
# exit.  Its pid is in $DP_SPAWNED_PID.
DP_SPAWNED=
dp_spawn() {
	"$@" >"$DP_TMP/spawn.log.tmp" 2>&1 &
	DP_SPAWNED_PID=$!
	mv "$DP_TMP/spawn.log.tmp" "$DP_TMP/spawn-$DP_SPAWNED_PID.log"
	DP_SPAWNED="$DP_SPAWNED $DP_SPAWNED_PID"
}

dp_cleanup() {
	local status=$? pid
	for pid in $DP_SPAWNED; do
		dp_stop_pid "$pid"
	done
	if [ -n "$DP_SESSIOND_PID" ]; then
		"$LTTNG" --no-sessiond destroy --all >/dev/null 2>&1
		stop_sessiond
	fi
	if [ -n "$DP_TMP" ] && [ -z "${DP_KEEP:-}" ]; then
		rm -rf "$DP_TMP" "$DP_SHM"
	elif [ -n "$DP_TMP" ]; then
		echo "# kept $DP_TMP and $DP_SHM"
	fi
	exit "$status"
}

# dp_lttng ARGS...: the lttng CLI, never spawning a daemon of its own; its
# output goes to $DP_TMP/lttng.log, and to the TAP log on failure.
dp_lttng() {
	local out status
	out=$("$LTTNG" --no-sessiond "$@" 2>&1)
	status=$?
	printf '$ lttng %s\n%s\n' "$*" "$out" >>"$DP_TMP/lttng.log"
	if [ "$status" -ne 0 ]; then
		tap_diag "lttng $* failed ($status):"
		tap_diag "$out"
	fi
	return "$status"
}

# Every read of a trace is noted in $DP_TMP/bt-reads: babeltrace2's exit
# status, its arguments, its first error.  A trace babeltrace2 cannot read to
# its end (metadata without the class of an event, a cut stream) ends the
# read early, which looks like lost events; so tap_done fails the test when
# the last read of any trace failed.  Only the last read of each counts:
# loops that wait for events may read a trace before it is whole.
bt_note() {
	local status=$1 err=$2
	shift 2
	printf '%s\t%s\t%s\n' "$status" "$*" \
		"$(grep -m1 -E '^[0-9-]+ [0-9:.]+ +[0-9]+ +[0-9]+ [EF] ' "$err" | cut -c1-400)" >>"$DP_TMP/bt-reads"
}

# bt_reads_check: a failed TAP check for each trace whose last read failed
# (tap_done runs it).
bt_reads_check() {
	local args st err
	[ -s "$DP_TMP/bt-reads" ] || return 0
	while IFS=$'\t' read -r args st err; do
		tap_ok 1 "babeltrace2 reads $args to its end (exit $st)"
		tap_diag "$err"
	done < <(gawk -F '\t' '{ st[$2] = $1; err[$2] = $3 }
		END { for (t in st) if (st[t] != 0) print t "\t" st[t] "\t" err[t] }' "$DP_TMP/bt-reads")
}

# bt_text TRACE...: the events as babeltrace2 prints them, without the
# timestamp and delta columns, nor the hostname: "name: { ctx }, { payload }".
# Warnings (the tracer's discarded events, with their time range) go to
# $DP_TMP/bt-warnings.
bt_text() {
	bt_print 's/^\[[0-9.]+\] [^ ]+ //' "$@"
}

# bt_timed TRACE...: as bt_text, each line led by its time in seconds, the
# clock of the warnings' time ranges: "[1795860406.040377478] name: ...".
bt_timed() {
	bt_print 's/^(\[[0-9.]+\]) [^ ]+ /\1 /' "$@"
}

# bt_print SED_EXPR TRACE...: babeltrace2's text, each line through sed -E.
bt_print() {
	local expr=$1
	shift
	babeltrace2 "$@" --no-delta --clock-seconds 2>"$DP_TMP/bt-warnings" | sed -E "$expr"
	bt_note "${PIPESTATUS[0]}" "$DP_TMP/bt-warnings" "$@"
}

# bt_count TRACE...: "EVENTS DISCARDED_MESSAGES": the number of event
# records, and of discarded-events messages (each stands for one or more
# events the tracer could not record), as sink.utils.counter counts them.
# Fast: nothing is formatted.  The counter says "1 Discarded event message"
# for one (singular), "N ... messages" for N.
bt_count() {
	local err=$DP_TMP/bt-count.$BASHPID
	babeltrace2 "$@" --component=sink.utils.counter --params=step=+0 2>"$err" |
		awk '/ Event messages?$/ { e = $1 } / Discarded event messages?$/ { d = $1 }
			END { printf "%.0f %.0f\n", e, d }'
	bt_note "${PIPESTATUS[0]}" "$err" "$@"
	rm -f "$err"
}

# bt_discarded TRACE...: the number of events the tracer discarded: the sum
# of babeltrace2's "Tracer discarded N event(s)" warnings, modulo 2^64.
# lttng-ust writes a stream's cumulative discarded count into each packet
# when the packet is closed, and packets closed concurrently can carry a
# count lower than the packet before: babeltrace2 2.0 then reports the
# difference as a huge, wrapped-around N.  The differences of one stream
# telescope, so their sum modulo 2^64 (bash's own arithmetic) is exact.
# Formats every event: about 3 s per million here.
bt_discarded() {
	local n sum=0 err=$DP_TMP/bt-discarded.$BASHPID
	babeltrace2 "$@" 2>"$err" >/dev/null
	bt_note $? "$err" "$@"
	for n in $(sed -nE 's/.*Tracer discarded ([0-9]+) events?( |$).*/\1/p' "$err"); do
		sum=$((sum + n))
	done
	rm -f "$err"
	echo "$sum"
}

# dp_test_user: makes the unprivileged test user if missing (needs root).
dp_test_user() {
	id -u "$DP_TEST_USER" >/dev/null 2>&1 && return 0
	useradd --system --user-group --no-create-home --home-dir /nonexistent \
		--shell /usr/sbin/nologin "$DP_TEST_USER"
}

# dp_run_as_test_user SCRIPT ARGS...: as root, re-runs SCRIPT as the test
# user (environment kept, no login); as anybody else, returns.
dp_run_as_test_user() {
	local script=$1
	shift
	[ "$(id -u)" -eq 0 ] || return 0
	dp_test_user || tap_bail "cannot create the test user $DP_TEST_USER"
	exec setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
		bash "$script" "$@"
}
