# Shared by the daemon's shell tests (sourced, bash, after dp_isolate):
# starting and stopping lttng-dynprobed, the test client, the targets.
#
#   start_dynprobed [OPTS...]  the daemon, daemonized, logging to
#                              $DP_TMP/dynprobed.log; its pid in DPD_PID
#   stop_dynprobed             SIGTERM, and wait for it to be gone
#   dpctl ARGS...              the test client; its output in $DP_TMP/out
#                              (and the log), its status returned
#   start_target NAME CMD...   a target in the background, once it printed
#                              "ready"; its pid in TARGET_PID
#   out_has REGEX              whether the last dpctl output matches
#   site_bytes PID ADDR LEN    hex of LEN bytes of PID's memory at ADDR
#   logged REGEX [SECONDS]     the daemon's log has a line matching REGEX
#                              within SECONDS (30)
#   said NAME REGEX [SECONDS]  the same of $DP_TMP/NAME.out (a target's)

# DP_TEST_DAEMON: another build of the daemon to test (tools/check.sh runs
# these tests again with one built with sanitizers).
DPD=${DP_TEST_DAEMON:-$abs_top_builddir/src/bin/lttng-dynprobed/lttng-dynprobed}
# Its sanitizer reports (log_path=PATH: PATH.PID) are named after the test
# too (PATH.TEST.PID), to tell whose daemon a report is from.
if [ -n "${DP_TEST_DAEMON:-}" ] && [ -z "${DP_SAN_NAMED:-}" ]; then
	export DP_SAN_NAMED=1
	ASAN_OPTIONS=$(sed -E "s#(^|:)log_path=([^:]*)#\1log_path=\2.${0##*/}#" <<<"${ASAN_OPTIONS:-}")
	UBSAN_OPTIONS=$(sed -E "s#(^|:)log_path=([^:]*)#\1log_path=\2.${0##*/}#" <<<"${UBSAN_OPTIONS:-}")
	export ASAN_OPTIONS UBSAN_OPTIONS
fi
AGENT=$abs_top_builddir/src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so
DPCTL=$builddir/dpctl
DPD_PID=
DP_TARGETS=

dpd_run_dir() {
	if [ "$(id -u)" -eq 0 ]; then echo /var/run/lttng; else echo "$LTTNG_HOME/.lttng"; fi
}

start_dynprobed() {
	"$DPD" --daemonize -vv --log "$DP_TMP/dynprobed.log" --agent "$AGENT" "$@" \
		>"$DP_TMP/dynprobed.start" 2>&1 || return 1
	DPD_PID=$(cat "$(dpd_run_dir)/lttng-dynprobed.pid")
	[ -n "$DPD_PID" ]
}

# stop_dynprobed: SIGTERM, and the daemon gone within 60 s (a bound that
# only catches a hang: a sanitized daemon's leak check at exit takes more
# than 10 s on a loaded machine).
stop_dynprobed() {
	local i
	[ -n "$DPD_PID" ] || return 0
	kill -TERM "$DPD_PID" 2>/dev/null
	for i in $(seq 1200); do
		kill -0 "$DPD_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$DPD_PID" 2>/dev/null && return 1
	DPD_PID=
	return 0
}

# until_dead: waits until the daemon is dead (a zombie counts: its pid file
# lock is released); a 30 s hang bound (a sanitized daemon's teardown on a
# loaded machine was seen to take more than 10).  0 once it is.
until_dead() {
	local i
	for i in $(seq 600); do
		grep -q '^State:[[:space:]]*[RSDT]' /proc/"$DPD_PID"/status 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}

# eventually CMD...: CMD true within 30 s (tried every 50 ms): a hang bound
# that ends as soon as it holds.
eventually() {
	local i
	for i in $(seq 600); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# kill_dynprobed: SIGKILL, and wait until the daemon is dead, so that a new
# one may start.
kill_dynprobed() {
	[ -n "$DPD_PID" ] || return 0
	kill -KILL "$DPD_PID" 2>/dev/null
	until_dead
	DPD_PID=
}

# died STEP: the daemon (run with --test-fault STEP) killed itself at STEP:
# waits until it is dead, then forgets it.
died() {
	until_dead && grep -q "test fault: SIGKILL at step $1\$" "$DP_TMP/dynprobed.log" &&
		DPD_PID=
}

# stopped_at STEP: the daemon (run with --test-fault STEP:stop) stopped
# itself at STEP (a 30 s hang bound).
stopped_at() {
	local i
	for i in $(seq 600); do
		grep -q '^State:[[:space:]]*T' /proc/"$DPD_PID"/status 2>/dev/null &&
			grep -q "test fault: SIGSTOP at step $1\$" "$DP_TMP/dynprobed.log" && return 0
		sleep 0.05
	done
	return 1
}

# wait_line FILE REGEX SECONDS: FILE has a line matching REGEX (grep -E)
# within SECONDS.  A bound for when it never comes, not a timing: a loaded
# machine may take long.
wait_line() {
	local i
	for i in $(seq $(($3 * 10))); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

logged() {
	wait_line "$DP_TMP/dynprobed.log" "$1" "${2:-30}"
}

said() {
	wait_line "$DP_TMP/$1.out" "$2" "${3:-30}"
}

dpctl() {
	local status
	"$DPCTL" "$@" >"$DP_TMP/out" 2>&1
	status=$?
	{ echo "\$ dpctl $*"; cat "$DP_TMP/out"; } >>"$DP_TMP/dpctl.log"
	return "$status"
}

out_has() {
	grep -qE -- "$1" "$DP_TMP/out"
}

start_target() {
	local name=$1 i
	shift
	"$@" >"$DP_TMP/$name.out" 2>&1 &
	TARGET_PID=$!
	DP_TARGETS="$DP_TARGETS $TARGET_PID"
	for i in $(seq 600); do
		grep -q '^ready' "$DP_TMP/$name.out" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

site_bytes() {
	dd if=/proc/"$1"/mem bs=1 skip=$(($2)) count="$3" 2>/dev/null | od -An -tx1 | tr -d ' \n'
}

# The bytes of the file at a virtual address (as nm prints it) of PATH.
file_bytes() {
	local path=$1 vaddr=$2 len=$3 off
	off=$(readelf -lW "$path" | awk -v a=$(($2)) '$1 == "LOAD" {
		o = strtonum($2); v = strtonum($3); s = strtonum($5)
		if (a >= v && a < v + s) { printf "%d\n", a - v + o; exit } }')
	dd if="$path" bs=1 skip="$off" count="$len" 2>/dev/null | od -An -tx1 | tr -d ' \n'
}

dpd_cleanup() {
	local status=$? pid
	[ -n "$DPD_PID" ] && kill -KILL "$DPD_PID" 2>/dev/null
	for pid in $DP_TARGETS; do
		kill -KILL "$pid" 2>/dev/null
	done
	if [ "$status" -ne 0 ] || [ -n "${DP_SHOW_LOG:-}" ]; then
		# What held the daemon up (health.c), wherever it is in the log.
		[ -f "$DP_TMP/dynprobed.log" ] &&
			grep -E "is held up|went on after|for a worker|HELLO is answered after" "$DP_TMP/dynprobed.log" | head -n 20 |
			cut -c1-400 | sed 's/^/# /'
		tap_diag "daemon log (tail):"
		[ -f "$DP_TMP/dynprobed.log" ] && tail -n 40 "$DP_TMP/dynprobed.log" | sed 's/^/# /'
	fi
	(exit "$status")
	dp_cleanup
}

# sym_vaddr PATH SYMBOL: the symbol's address in the file (nm, then nm -D).
sym_vaddr() {
	local a
	a=$(nm "$1" 2>/dev/null | awk -v s="$2" '$3 == s { print $1; exit }')
	[ -n "$a" ] || a=$(nm -D --defined-only "$1" | awk -v s="$2" '$3 == s { print $1; exit }')
	echo $((0x$a))
}

# runtime_addr PID PATH VADDR: where VADDR of PATH is in PID.
runtime_addr() {
	local real start first
	real=$(realpath "$2")
	start=$(awk -v p="$real" '$6 == p && $3 == "00000000" { split($1, a, "-"); print a[1]; exit }' \
		/proc/"$1"/maps)
	first=$(readelf -lW "$real" | awk '$1 == "LOAD" { print $3; exit }')
	echo $((0x$start - (first & ~0xfff) + $3))
}

# same_as_file PID PATH SYMBOL [LEN]: the symbol's first LEN bytes (16) in
# PID are the file's.
same_as_file() {
	local v len=${4:-16}
	v=$(sym_vaddr "$2" "$3")
	[ "$(site_bytes "$1" "$(runtime_addr "$1" "$2" "$v")" "$len")" = \
		"$(file_bytes "$(realpath "$2")" "$v" "$len")" ]
}

# wait_events SESSION TRACE EVENT[>N]...: whether every EVENT (a full name)
# is in SESSION's trace, more than N times when given, within 30 s.  The
# session is stopped (which flushes its buffers), its trace read into
# $DP_TMP/events, and started again until then: the session daemon enables
# a class registered in a running process asynchronously, and how soon
# depends on the machine's load.  The session is left stopped.
wait_events() {
	local session=$1 trace=$2 ev min missing i
	shift 2
	for i in $(seq 60); do
		dp_lttng stop "$session" >/dev/null || return 1
		bt_text "$trace" >"$DP_TMP/events"
		missing=
		for ev in "$@"; do
			min=0
			[ "${ev%>*}" != "$ev" ] && min=${ev##*>}
			[ "$(grep -c "^${ev%>*}:" "$DP_TMP/events")" -gt "$min" ] || missing=$ev
		done
		[ -z "$missing" ] && return 0
		[ "$i" -eq 60 ] && break
		dp_lttng start "$session" >/dev/null || return 1
		sleep 0.5
	done
	return 1
}

# seen SESSION [EVENT[>N]...]: wait_events in SESSION's trace, the session
# started again after; without EVENT, its trace as it is now.
seen() {
	local s=$1 st
	shift
	wait_events "$s" "$DP_TMP/trace-$s" "$@"
	st=$?
	dp_lttng start "$s" >/dev/null
	return "$st"
}

# count EVENT: its records in the trace read last (seen, wait_events).
count() {
	grep -c "^$1:" "$DP_TMP/events"
}
