#!/bin/bash
# What installing probes costs a running process, through lttng-dynprobed
# in a private session daemon: attaching and injecting the agent, then
# installing 1, 100 and 1,000 entry probes, each its own event (one ENABLE
# request each, as `lttng enable-event --probe` sends them), and 1,000 more
# in one ENABLE_MANY request (one stop of the target for all of them).  For each step:
# the wall time the client waited, how many times the target's threads were
# all stopped, for how long in all, and the longest single stop (the
# daemon's log says so for every batch it writes).  The goal is 1,000 probes
# with the target stopped less than 20 ms in all.
#
# Then whole programs, each in one request: --function '*' in a running
# python3.11 (every function its symbols name, entries and returns), and
# --function 'dp_w_*' in tests/daemon/wide-fns (10,000 functions, 70,000
# sites), installed then removed; the trampolines' memory as the daemon
# reports it; wide-fns again with its DWARF (wide-fns-g: each function's
# return type read at its entry, typed returns recorded).  python3.11, and
# 1,000 of wide-fns' functions, are measured twice in the same run: with the agent speaking the protocol's batches
# (1.3), and announcing 1.2 (LTTNG_DYNPROBE_PROTO_MINOR=2), which the daemon
# serves one message per probe and patch, as before the batches (every
# message waits for the target's agent thread to run: on a loaded machine,
# milliseconds each).  The goal is the whole program
# with the target stopped less than 20 ms in all, and under 2 s of wall
# time.  Last, recovery: the daemon killed with wide-fns' 70,000 patches
# in place and started again, how long until the agent's HELLO, which
# reports them all, is served.  Not pass/fail: prints tables; exits
# non-zero only if the benchmark could not run or a target computed a
# wrong result.
#
#   tests/perf/install-cost.sh [THREADS]       from the build tree, after
#                                              make (tests/daemon's dpctl,
#                                              wide-fns and wide-fns-g too)
#   PYTHON=/usr/bin/python3.11 ...             the python to probe (skipped
#                                              when absent)
#   DP_KEEP=1 ...                              keeps the daemon's log
#   ONLY=TEXT ...                              only the whole-program and
#                                              recovery rows whose label
#                                              holds TEXT (e.g. "wide-fns
#                                              'dp_w_*' (1.3)"), to compare
#                                              two builds row by row
#   DP_TEST_DAEMON=PATH ...                    another build's daemon

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

abs_top_builddir=$(cd "$top_builddir" && pwd)
builddir=$abs_top_builddir/tests/daemon
TARGET=$abs_top_builddir/tests/perf/many-fns
WIDE=$builddir/wide-fns
WIDEG=$builddir/wide-fns-g
PYTHON=${PYTHON:-/usr/bin/python3.11}
for f in "$TARGET" "$builddir/dpctl" "$WIDE" "$WIDEG"; do
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
tpids=
if [ -z "$ONLY" ]; then
	start_target many-fns "$TARGET" "$THREADS" ||
		{ echo "install-cost.sh: the target does not start" >&2; exit 1; }
	tpid=$TARGET_PID
	tpids=$tpid
fi
session=cost

# fns FIRST COUNT: dp_fn_FIRST ... dp_fn_(FIRST + COUNT - 1)
fns() {
	seq -f 'dp_fn_%g' "$1" $(($1 + $2 - 1))
}

# step LABEL COUNT DPCTL-ARGS...: runs one dpctl command that enables COUNT
# probes (or functions; "-": the sites its report counts), prints a row of
# the table.
step() {
	local label=$1 n=$2 from t0 wall
	shift 2
	from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
	t0=$(date +%s%N)
	dpctl "$@" ||
		{ echo "install-cost.sh: $label: $(tail -n 3 "$DP_TMP/out")" >&2; exit 1; }
	wall=$(($(date +%s%N) - t0))
	[ "$n" = - ] && n=$(awk '/^proc / { for (i = 1; i <= NF; i++)
		if ($i ~ /^(jump|int3)=/) { split($i, kv, "="); s += kv[2] } } END { print s + 0 }' \
		"$DP_TMP/out")
	# The daemon's lines for this step: "... N stops, T ms in all, threads
	# held M ms" for the injection and for each batch it wrote.
	tail -n +"$from" "$DP_TMP/dynprobed.log" | gawk -v label="$label" -v n="$n" -v wall="$wall" '
		match($0, /([0-9]+) stops, ([0-9.]+) ms in all, threads held ([0-9.]+) ms/, m) {
			stops += m[1]; total += m[2]; batches++
			if (m[3] + 0 > longest)
				longest = m[3] + 0
		}
		match($0, /: ([0-9]+) trampolines?, ([0-9.]+ [KM]?i?B) \(/, m) {
			mem = m[2]
		}
		END {
			printf "| %-28s | %6d | %9.1f | %7d | %5d | %12.3f | %12.3f | %7.2f | %10s |\n",
				label, n, wall / 1e6, batches, stops, total, longest, total / 20,
				mem == "" ? "-" : mem
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

if [ -z "$ONLY" ]; then
echo "target: $TARGET, $THREADS threads calling 2,000 functions, pid $tpid"
echo
echo "| step                         | probes | wall (ms) | batches | stops | stopped (ms) | longest (ms) | / 20 ms | trampolines |"
echo "|------------------------------|-------:|----------:|--------:|------:|-------------:|-------------:|--------:|------------:|"
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
fi

# ---- whole programs, each in one request ----
# whole LABEL SESSION TARGET-NAME PATTERN PATH [ENV...] -- CMD...: a new
# target (its agent injected first, with a 1-function event), the pattern
# installed, then removed, in one request each.
whole() {
	local label=$1 s=$2 name=$3 pattern=$4 path=$5 envs=()
	[ -n "$ONLY" ] && [[ $label != *"$ONLY"* ]] && return 0
	shift 5
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	session=$s
	dp_lttng create "$s" --output="$DP_TMP/trace-$s" >/dev/null &&
		dp_lttng enable-channel -u -s "$s" chan >/dev/null ||
		{ cat "$DP_TMP/lttng.log" >&2; exit 1; }
	start_target "$name" env "${envs[@]}" "$@" ||
		{ echo "install-cost.sh: $name does not start" >&2; exit 1; }
	tpid=$TARGET_PID
	tpids="$tpids $tpid"
	# The agent in first, with one function: the rows are the pattern's.
	dpctl enable "$s" chan first function "$(first_fn "$path")" "$path" -p "$tpid" ||
		{ echo "install-cost.sh: $label: $(tail -n 3 "$DP_TMP/out")" >&2; exit 1; }
	step "$label" - enable "$s" chan all function "$pattern" "$path" -p "$tpid"
	step "$label: removal" - disable "$s" chan all
	sessions="$sessions $s"
	# Checked, then stopped: the rows after it measure a machine without
	# it.
	grep -q '^State:[[:space:]]*[RS]' /proc/"$tpid"/status 2>/dev/null ||
		{ echo "install-cost.sh: target $tpid ($name) died" >&2; exit 1; }
	kill -TERM "$tpid"
	wait "$tpid" 2>/dev/null
	tpids=${tpids% "$tpid"}
}

# first_fn PATH: a global function of PATH that its symbols name.
first_fn() {
	{ nm --defined-only "$1"; nm -D --defined-only "$1"; } 2>/dev/null |
		awk '$2 == "T" && $3 !~ /^_/ && $3 !~ /@/ { print $3; exit }'
}

PYCODE='
import threading, time
def work():
    n = 0
    while True:
        n += sum(range(200)) + len(str(n))
        time.sleep(0.0005)
for _ in range(2):
    threading.Thread(target=work, daemon=True).start()
print("ready", flush=True)
while True:
    time.sleep(1)
'
sessions=
echo
echo "Whole programs, one request each (1.3: the batches; 1.2: one message a probe and a patch):"
echo
echo "| step                         |  sites | wall (ms) | batches | stops | stopped (ms) | longest (ms) | / 20 ms | trampolines |"
echo "|------------------------------|-------:|----------:|--------:|------:|-------------:|-------------:|--------:|------------:|"
if [ -x "$PYTHON" ]; then
	whole "python3.11 '*' (1.3)" py3 py3 '*' "$PYTHON" -- "$PYTHON" -c "$PYCODE"
	whole "python3.11 '*' (1.2)" py2 py2 '*' "$PYTHON" LTTNG_DYNPROBE_PROTO_MINOR=2 -- \
		"$PYTHON" -c "$PYCODE"
fi
whole "wide-fns 'dp_w_*' (1.3)" wide3 wide3 'dp_w_*' "$WIDE" -- "$WIDE" spin 2
# The same program with its DWARF: each function's return type read at its
# entry (the events record typed returns), from the index of its one CU.
whole "wide-fns -g 'dp_w_*' (1.3)" wideg wideg 'dp_w_*' "$WIDEG" -- "$WIDEG" spin 2
# One message a probe and a patch is too slow for 70,000 sites: 1,000
# functions (7,000 sites) of them, and the same with the batches.
whole "wide-fns 'dp_w_10*' (1.3)" wide13 wide13 'dp_w_10*' "$WIDE" -- "$WIDE" spin 2
whole "wide-fns 'dp_w_10*' (1.2)" wide12 wide12 'dp_w_10*' "$WIDE" \
	LTTNG_DYNPROBE_PROTO_MINOR=2 -- "$WIDE" spin 2

# ---- recovery: the daemon killed, a new one started ----
# log_ms LINE: the time of a daemon's log line, in ms of the day.
log_ms() {
	sed -nE 's/^[^ ]+ ([0-9]+):([0-9]+):([0-9]+)\.([0-9]+) .*/\1 \2 \3 \4/p' <<<"$1" |
		awk '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }'
}

# recovery LABEL SESSION PATTERN PATH -- CMD...: a new target, the pattern
# installed, the daemon killed with SIGKILL and started again: how long
# until its agent's HELLO (which reports every patch) is answered, and how
# long the daemon took to serve that HELLO (its log's times: from the
# agent's connection to the answer).
recovery() {
	local label=$1 s=$2 pattern=$3 path=$4 t0 wall from conn done n
	[ -n "$ONLY" ] && [[ $label != *"$ONLY"* ]] && return 0
	shift 5
	dp_lttng create "$s" --output="$DP_TMP/trace-$s" >/dev/null &&
		dp_lttng enable-channel -u -s "$s" chan >/dev/null ||
		{ cat "$DP_TMP/lttng.log" >&2; exit 1; }
	start_target "$s" "$@" || { echo "install-cost.sh: $s does not start" >&2; exit 1; }
	tpid=$TARGET_PID
	tpids="$tpids $tpid"
	dpctl enable "$s" chan all function "$pattern" "$path" -p "$tpid" ||
		{ echo "install-cost.sh: $label: $(tail -n 3 "$DP_TMP/out")" >&2; exit 1; }
	kill_dynprobed
	from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
	t0=$(date +%s%N)
	start_dynprobed || { cat "$DP_TMP/dynprobed.start" >&2; exit 1; }
	for _ in $(seq 1200); do
		tail -n +"$from" "$DP_TMP/dynprobed.log" |
			grep -q "agent of process $tpid connected (uid" && break
		sleep 0.05
	done
	wall=$((($(date +%s%N) - t0) / 1000000))
	conn=$(tail -n +"$from" "$DP_TMP/dynprobed.log" | grep "agent of pid $tpid connected" | tail -n 1)
	done=$(tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -m1 "agent of process $tpid connected (uid")
	n=$(tail -n +"$from" "$DP_TMP/dynprobed.log" |
		sed -nE "s/.*process $tpid: recovered ([0-9]+) patches.*/\1/p" | tail -n 1)
	if [ -z "$done" ]; then
		printf "| %-28s | %7s | %22s | %17s |\n" "$label" "${n:--}" "none in 60 s" "-"
	else
		printf "| %-28s | %7s | %22d | %17d |\n" "$label" "${n:--}" "$wall" \
			$(($(log_ms "$done") - $(log_ms "$conn")))
	fi
	dpctl disable "$s" chan all ||
		{ echo "install-cost.sh: $label: removal: $(tail -n 3 "$DP_TMP/out")" >&2; exit 1; }
	sessions="$sessions $s"
}

echo
echo "Recovery: the daemon killed with SIGKILL, a new one started, the target's agent reporting every patch:"
echo
echo "| step                         | patches | restart to answer (ms) | HELLO served (ms) |"
echo "|------------------------------|--------:|-----------------------:|------------------:|"
recovery "wide-fns 'dp_w_*'" rec 'dp_w_*' "$WIDE" -- "$WIDE" spin 2

# A target that exited stays a zombie of ours: kill -0 would not tell.
sleep 0.2
for p in $tpids; do
	grep -q '^State:[[:space:]]*[RS]' /proc/"$p"/status 2>/dev/null ||
		{ echo "install-cost.sh: target $p died" >&2; exit 1; }
done
echo "the targets run on, every result right"
for s in cost cost2 cost3 $sessions; do
	dp_lttng destroy "$s" >/dev/null
done
exit 0
