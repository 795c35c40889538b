# What the CLI tests share (sourced after tap.sh and sessiond.sh).
#
#   LTTNG     our lttng (the build's), STOCK the stock one, TARGET the test
#             program (cli-target), FOO_OFF foo's address in it (hex, as nm)
#   run_cli ARGS...     our lttng with --no-sessiond: $out, $err, $status
#   run_stock ARGS...   the same with the stock lttng: $sout, $serr, $sstatus
#   state               what must not change when a command fails: the
#                       sessions and the events of session s (stock listing)
#   no_daemon           passes if no lttng-dynprobed runs (in our namespace),
#                       or if DP_DAEMON_RUNS is set (a test that started one)
#   check_refused DESC REGEX ARGS...   our lttng fails with exit code 1, one
#                       stderr line matching REGEX, and `state` unchanged
#   wait_sites SESSION PID [EVENT]   waits (up to 10 s) until `lttng list
#                       SESSION` shows sites in PID (of EVENT, as given to
#                       enable-event); fails if it never does
#   fifo_start NAME CMD...   runs CMD in the background, reading the lines
#                       the test sends through a fifo: its pid in ${NAME}_pid,
#                       its output in $DP_TMP/NAME.out and NAME.err
#   cmd NAME C          sends the line C to NAME's program and waits for one
#                       more "ok" line in its output (60 s at most: a process
#                       started under a path-wide event waits for its probes
#                       first, which took 10 s once on a loaded machine)

: "${top_builddir:=../..}"
LTTNG=$top_builddir/src/bin/lttng/lttng
: "${STOCK:=/usr/bin/lttng}"
TARGET=$top_builddir/tests/cli/cli-target
export LTTNG_DYNPROBE_STOCK_LTTNG=$STOCK

run_cli() {
	out=$("$LTTNG" --no-sessiond "$@" 2>"$DP_TMP/err")
	status=$?
	err=$(cat "$DP_TMP/err")
}

run_stock() {
	sout=$("$STOCK" --no-sessiond "$@" 2>"$DP_TMP/err")
	sstatus=$?
	serr=$(cat "$DP_TMP/err")
}

state() {
	"$STOCK" --no-sessiond list 2>&1 | sed 's/ \[.*\]$//'
	"$STOCK" --no-sessiond list s 2>&1
}

no_daemon() {
	[ -n "${DP_DAEMON_RUNS:-}" ] || ! pgrep -x lttng-dynprobed >/dev/null
}

check_refused() {
	local desc=$1 regex=$2 before after ok=0
	shift 2
	before=$(state)
	run_cli "$@"
	after=$(state)
	[ "$status" -eq 1 ] || ok=1
	grep -Eq -- "^Error: .*$regex" <<<"$err" || ok=1
	[ "$before" = "$after" ] || ok=1
	no_daemon || ok=1
	tap_ok "$ok" "$desc"
	if [ "$ok" -ne 0 ]; then
		tap_diag "lttng $* -> $status" "stdout: $out" "stderr: $err"
		[ "$before" = "$after" ] || tap_diag "state changed:" "$before" "---" "$after"
	fi
}

# wait_sites SESSION PID [EVENT]: PID has sites of SESSION's events, within
# 60 s (a bound: an agent's start on a loaded machine can take 10 s).
wait_sites() {
	local i
	for i in $(seq 600); do
		"$LTTNG" -n list "$1" 2>/dev/null |
			awk -v e="${3:-}" '/^  [^ ]/ { cur = $1 } e == "" || cur == e' |
			grep -q "process $2: [1-9][0-9]* site" && return 0
		sleep 0.1
	done
	return 1
}

# cli_setup: a private session daemon, and the build tree's lttng-dynprobed
# and agent for our lttng to start and inject.
cli_setup() {
	start_sessiond || tap_bail "no session daemon"
	export LTTNG_DYNPROBE_AGENT=$top_builddir/src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so.0
	export LTTNG_DYNPROBE_DAEMON=$top_builddir/src/bin/lttng-dynprobed/lttng-dynprobed
	[ -x "$LTTNG_DYNPROBE_DAEMON" ] || tap_bail "no lttng-dynprobed in the build tree"
}

fifo_start() {
	local name=$1 fd
	shift
	mkfifo "$DP_TMP/$name.in"
	# There before the program opens it (after the fifo's other end): cmd
	# counts its lines at once.
	: >"$DP_TMP/$name.out"
	"$@" <"$DP_TMP/$name.in" >"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err" &
	eval "${name}_pid=$!"
	exec {fd}>"$DP_TMP/$name.in"
	eval "${name}_fd=$fd"
}

cmd() {
	local fdv="${1}_fd" before i
	before=$(grep -c '^ok$' "$DP_TMP/$1.out")
	echo "$2" >&"${!fdv}"
	for i in $(seq 600); do
		[ "$(grep -c '^ok$' "$DP_TMP/$1.out")" -gt "$before" ] && return 0
		sleep 0.1
	done
	return 1
}
