#!/bin/bash
# How long a client waits for lttng-dynprobed's PING while the daemon works
# for another client: alone (the baseline), then while another client's
# ENABLE injects the agent into fresh processes one after the other (each
# injection waits for the agent's start and its registration with the
# session daemon).  Prints the median and the longest PING of each phase
# and their ratios to the baseline.  Not pass/fail: exits non-zero only if
# the benchmark could not run.  With DP_SLOW_SESSIOND=1 the session daemon
# is stopped (SIGSTOP) while the agents start, as a slow or busy one would
# be: each agent's registration then waits lttng-ust's timeout (3 s).  The
# daemon runs with --poll-ms 0, so that only the injections are measured.
#
#   tests/perf/serve-latency.sh [INJECTIONS]    from the build tree, after
#                                               make (tests/daemon's dpctl too)
#   DP_TEST_DAEMON=PATH ...                     another build of the daemon
#                                               (an older one, to compare)

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

abs_top_builddir=$(cd "$top_builddir" && pwd)
builddir=$abs_top_builddir/tests/daemon
PIE=$builddir/target-pie
for f in "$PIE" "$builddir/dpctl"; do
	[ -x "$f" ] || { echo "serve-latency.sh: build $f first" >&2; exit 1; }
done
INJECTIONS=${1:-6}

dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

start_sessiond || { echo "serve-latency.sh: no session daemon" >&2; exit 1; }
start_dynprobed --poll-ms 0 || { cat "$DP_TMP/dynprobed.start" >&2; exit 1; }
dp_lttng create lat --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-event -u -s lat 'dynprobe:*' >/dev/null &&
	dp_lttng start lat >/dev/null || { echo "serve-latency.sh: no session" >&2; exit 1; }

# pings FILE: PINGs one after the other until $DP_TMP/stop exists, each
# one's milliseconds to FILE.
pings() {
	local t0 t1
	while ! [ -e "$DP_TMP/stop" ]; do
		t0=$(date +%s%N)
		"$DPCTL" ping >/dev/null 2>&1 || echo "ping failed" >&2
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>"$1"
		sleep 0.02
	done
}

# stats FILE: "median max" in ms.
stats() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		printf "%.1f %.1f %d\n", v[int((NR + 1) / 2)] / 1000, v[NR] / 1000, NR }'
}

# Baseline: as many seconds as the injections will take, roughly.
pings "$DP_TMP/alone" &
pinger=$!
sleep 3
touch "$DP_TMP/stop"
wait "$pinger"
rm -f "$DP_TMP/stop"

for i in $(seq "$INJECTIONS"); do
	start_target "t$i" "$PIE" "$DP_SHM/shm-$i" 2 5 1000 || { echo "no target" >&2; exit 1; }
	targets="$targets $TARGET_PID"
done
pings "$DP_TMP/busy" &
pinger=$!
[ "${DP_SLOW_SESSIOND:-0}" = 1 ] && kill -STOP "$DP_SESSIOND_PID"
t0=$(date +%s%N)
i=0
for pid in $targets; do
	i=$((i + 1))
	TARGET_PID=$pid
	"$DPCTL" enable lat channel0 "e$i" probe dp_work "$PIE" -p "$TARGET_PID" >"$DP_TMP/en-$i" 2>&1 ||
		{ echo "serve-latency.sh: ENABLE $i failed: $(head -n1 "$DP_TMP/en-$i")" >&2; }
done
t1=$(date +%s%N)
[ "${DP_SLOW_SESSIOND:-0}" = 1 ] && kill -CONT "$DP_SESSIOND_PID"
touch "$DP_TMP/stop"
wait "$pinger"

read -r am ax an < <(stats "$DP_TMP/alone")
read -r bm bx bn < <(stats "$DP_TMP/busy")
echo "daemon: ${DP_TEST_DAEMON:-the build tree}, session daemon $([ "${DP_SLOW_SESSIOND:-0}" = 1 ] && echo stopped || echo running) during the injections"
printf "%-34s %10s %10s %6s\n" "PING" "median ms" "max ms" "pings"
printf "%-34s %10s %10s %6s\n" "alone" "$am" "$ax" "$an"
printf "%-34s %10s %10s %6s\n" "during $INJECTIONS injections ($(((t1 - t0) / 1000000)) ms)" \
	"$bm" "$bx" "$bn"
awk -v am="$am" -v ax="$ax" -v bm="$bm" -v bx="$bx" 'BEGIN {
	printf "ratio during/alone: median %.1f, max %.1f\n", bm / am, bx / ax }'
grep -h "agent injected" "$DP_TMP/dynprobed.log" | sed -E 's/.*agent injected \(([0-9.]+) ms.*/\1/' |
	awk '{ s += $1; if ($1 > m) m = $1 } END { if (NR) printf "injections: %d, mean %.0f ms, longest %.0f ms\n", NR, s / NR, m }'
