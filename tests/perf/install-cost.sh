#!/bin/bash
# What installing probes costs a running process, through lttng-dynprobed
# in a private session daemon: attaching and injecting the agent, then
# installing 1, 100 and 1,000 entry probes, each its own event (one ENABLE
# request each, as `lttng enable-event --probe` sends them), and 1,000 more
# in one ENABLE_MANY request (one stop of the target for all of them).  For each step:
# the wall time the client waited, how many times the target's threads were
# all stopped, for how long in all, and the longest single stop (the
# daemon's log says so for every batch it writes).  The goal is 1,000 probes
# with the target stopped less than 20 ms in all.  Not pass/fail: prints a
# table; exits non-zero only if the benchmark could not run or the target
# computed a wrong result.
#
#   tests/perf/install-cost.sh [THREADS]       from the build tree, after
#                                              make (tests/daemon's dpctl too)
#   DP_KEEP=1 ...                              keeps the daemon's log

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

abs_top_builddir=$(cd "$top_builddir" && pwd)
builddir=$abs_top_builddir/tests/daemon
TARGET=$abs_top_builddir/tests/perf/many-fns
for f in "$TARGET" "$builddir/dpctl"; do
	[ -x "$f" ] || { echo "install-cost.sh: build $f first" >&2; exit 1; }
done
THREADS=${1:-4}

dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

start_sessiond || { echo "install-cost.sh: no session daemon" >&2; exit 1; }
start_dynprobed || { cat "$DP_TMP/dynprobed.start" >&2; exit 1; }
# The events are defined but not recorded: the cost measured is the
# installation's, not that of tracing 2,000 functions called in a loop.
dp_lttng create cost --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-channel -u -s cost chan >/dev/null ||
	{ cat "$DP_TMP/lttng.log" >&2; exit 1; }
start_target many-fns "$TARGET" "$THREADS" ||
	{ echo "install-cost.sh: the target does not start" >&2; exit 1; }
tpid=$TARGET_PID
tpids=$tpid
session=cost

# fns FIRST COUNT: dp_fn_FIRST ... dp_fn_(FIRST + COUNT - 1)
fns() {
	seq -f 'dp_fn_%g' "$1" $(($1 + $2 - 1))
}

# step LABEL COUNT DPCTL-ARGS...: runs one dpctl command that enables COUNT
# probes (or functions), prints a row of the table.
step() {
	local label=$1 n=$2 from t0 wall
	shift 2
	from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
	t0=$(date +%s%N)
	dpctl "$@" ||
		{ echo "install-cost.sh: $label: $(tail -n 3 "$DP_TMP/out")" >&2; exit 1; }
	wall=$(($(date +%s%N) - t0))
	# The daemon's lines for this step: "... N stops, T ms in all, threads
	# held M ms" for the injection and for each batch it wrote.
	tail -n +"$from" "$DP_TMP/dynprobed.log" | gawk -v label="$label" -v n="$n" -v wall="$wall" '
		match($0, /([0-9]+) stops, ([0-9.]+) ms in all, threads held ([0-9.]+) ms/, m) {
			stops += m[1]; total += m[2]; batches++
			if (m[3] + 0 > longest)
				longest = m[3] + 0
		}
		END {
			printf "| %-28s | %6d | %9.1f | %7d | %5d | %12.3f | %12.3f | %7.2f |\n",
				label, n, wall / 1e6, batches, stops, total, longest, total / 20
		}'
}

# A new process and session for the steps that follow.
next_target() {
	session=$1
	dp_lttng create "$session" --output="$DP_TMP/trace-$session" >/dev/null &&
		dp_lttng enable-channel -u -s "$session" chan >/dev/null ||
		{ cat "$DP_TMP/lttng.log" >&2; exit 1; }
	start_target "many-fns-$session" "$TARGET" "$THREADS" ||
		{ echo "install-cost.sh: a target does not start" >&2; exit 1; }
	tpid=$TARGET_PID
	tpids="$tpids $tpid"
}

echo "target: $TARGET, $THREADS threads calling 2,000 functions, pid $tpid"
echo
echo "| step                         | probes | wall (ms) | batches | stops | stopped (ms) | longest (ms) | / 20 ms |"
echo "|------------------------------|-------:|----------:|--------:|------:|-------------:|-------------:|--------:|"
step "attach + inject + 1" 1 enable-each "$session" chan "$tpid" "$TARGET" $(fns 1000 1)
step "1 probe" 1 enable-each "$session" chan "$tpid" "$TARGET" $(fns 1001 1)
step "100 probes" 100 enable-each "$session" chan "$tpid" "$TARGET" $(fns 1002 100)
step "1,000 probes" 1000 enable-each "$session" chan "$tpid" "$TARGET" $(fns 2000 1000)
# The same functions again in a second process (and session: the events'
# pids differ), all of them in one request.
next_target cost2
step "2nd process: inject + 1" 1 enable-each "$session" chan "$tpid" "$TARGET" $(fns 1000 1)
step "1,000 probes, one request" 1000 enable-many "$session" chan "$tpid" "$TARGET" $(fns 2000 1000)
# What a user types: one --function pattern matching 1,000 functions, their
# entries and returns in one event.
next_target cost3
step "inject + 1" 1 enable-each "$session" chan "$tpid" "$TARGET" $(fns 2999 1)
step "--function 'dp_fn_1???'" 1000 enable "$session" chan fns function 'dp_fn_1???' "$TARGET" -p "$tpid"
echo
grep -m1 'agent injected' "$DP_TMP/dynprobed.log" | sed 's/^.*agent injected/agent injected:/'

# A target that exited stays a zombie of ours: kill -0 would not tell.
sleep 0.2
for p in $tpids; do
	grep -q '^State:[[:space:]]*[RS]' /proc/"$p"/status 2>/dev/null ||
		{ echo "install-cost.sh: target $p died" >&2; exit 1; }
done
echo "the targets run on, every result right"
for s in cost cost2 cost3; do
	dp_lttng destroy "$s" >/dev/null
done
exit 0
