#!/bin/bash
# A short program started right after a path-wide enable-event: how many of
# its calls are recorded, and how long the agent holds it before main while
# the daemon installs the probes (the start-up wait, LTTNG_DYNPROBE_REGISTER_
# TIMEOUT), against the same program started without the preload in the
# same run.  The program (tests/daemon's startwait-app) calls the probed
# function N times (default 1,000,000, some 100-300 ms) and exits; each call
# gives two events (entry and return), in a channel large enough to lose
# none.  The delay is from the launch (the shell's clock) to main's first
# instruction (the program's clock), the median of the runs.  The last rows
# start it through `env -i`, which executes it with an empty environment:
# with LTTNG_DYNPROBE_FOLLOW_EXEC the agent follows the exec (two agent
# starts: env's and the program's).  Not pass/fail:
# prints a table; exits non-zero only if the benchmark could not run.
#
#   tests/perf/start-probed.sh [RUNS [N]]   from the build tree, after make
#                                           and make -C tests/daemon startwait-app

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

abs_top_builddir=$(cd "$top_builddir" && pwd)
builddir=$abs_top_builddir/tests/daemon
APP=$builddir/startwait-app
LTTNG=$abs_top_builddir/src/bin/lttng/lttng
for f in "$APP" "$LTTNG"; do
	[ -x "$f" ] || { echo "start-probed.sh: build $f first" >&2; exit 1; }
done
RUNS=${1:-5}
N=${2:-1000000}

dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT
export LTTNG_DYNPROBE_STOCK_LTTNG=${STOCK:-/usr/bin/lttng}
export LTTNG_DYNPROBE_AGENT=$AGENT
export LTTNG_DYNPROBE_DAEMON=$DPD

LAUNCH=()
start_sessiond || { echo "start-probed.sh: no session daemon" >&2; exit 1; }
start_dynprobed || { cat "$DP_TMP/dynprobed.start" >&2; exit 1; }

# one_run PROBED ENV...: one run of the program, in a fresh session (with
# the path-wide probe when PROBED is 1); prints "DELAY_MS RECORDED CALLS".
one_run() {
	local probed=$1 t0 events discarded
	shift
	dp_lttng create sp --output="$DP_TMP/trace" >/dev/null &&
		dp_lttng enable-channel -u -s sp big --subbuf-size=8M --num-subbuf=8 >/dev/null ||
		return 1
	if [ "$probed" = 1 ]; then
		"$LTTNG" --no-sessiond enable-event -u -s sp -c big --path "$APP" \
			--function sw_work w >>"$DP_TMP/lttng.log" 2>&1 || return 1
	fi
	dp_lttng start sp >/dev/null || return 1
	t0=$(date +%s%N)
	env "$@" "${LAUNCH[@]}" "$APP" "$N" >"$DP_TMP/run.out" 2>&1 || return 1
	dp_lttng stop sp >/dev/null
	read -r events discarded <<<"$(bt_count "$DP_TMP/trace")"
	dp_lttng destroy sp >/dev/null
	rm -rf "$DP_TMP/trace"
	awk -v t0="$t0" -v ev="${events:-0}" '{ printf "%.1f %d %d\n", ($2 - t0) / 1e6, ev, $4 }' \
		"$DP_TMP/run.out"
}

# row LABEL PROBED ENV...: RUNS runs; prints the table's line.
row() {
	local label=$1 probed=$2 i
	shift 2
	for i in $(seq "$RUNS"); do
		one_run "$probed" "$@" || { echo "start-probed.sh: a run of '$label' failed" >&2; exit 1; }
	done >"$DP_TMP/rows"
	sort -n -k1,1 "$DP_TMP/rows" | awk -v label="$label" -v base="$BASE" -v probed="$probed" '
		{ d[NR] = $1; r = $2 / (2 * $3); s += r; if (NR == 1 || r < lo) lo = r }
		END {
			med = d[int((NR + 1) / 2)]
			if (probed == 1)
				rec = sprintf("%5.1f%% (min %5.1f%%)", 100 * s / NR, 100 * lo)
			else
				rec = "-"
			printf "%-34s %-22s %8.1f %8.1f\n", label, rec, med,
				base == "" ? 0 : med - base
		}'
}

echo "start-probed: $RUNS runs of $N calls each, sw_work's entry and return probed"
printf '%-34s %-22s %8s %8s\n' "program started" "recorded/calls (mean)" "main ms" "added"
line=$(row "without the agent" 0)
BASE=$(awk '{ print $(NF - 1) }' <<<"$line")
echo "$line"
row "preloaded, no probe for it" 0 LD_PRELOAD="$AGENT"
waited=$(row "preloaded, path-wide probe" 1 LD_PRELOAD="$AGENT")
echo "$waited"
nowait=$(row "preloaded, probe, TIMEOUT=0" 1 LD_PRELOAD="$AGENT" LTTNG_DYNPROBE_REGISTER_TIMEOUT=0)
echo "$nowait"
# The preload's own start (lttng-ust's registration with the session daemon
# included) is in every preloaded row; the wait for the probes is the
# difference between the last two.
# The program executed by another (env -i: its environment cleared).
LAUNCH=(env -i)
row "env -i, without the agent" 0
row "env -i, preloaded, not following" 1 LD_PRELOAD="$AGENT"
row "env -i, preloaded, FOLLOW_EXEC=1" 1 LD_PRELOAD="$AGENT" LTTNG_DYNPROBE_FOLLOW_EXEC=1
LAUNCH=()
awk -v a="$(awk '{ print $(NF - 1) }' <<<"$waited")" -v b="$(awk '{ print $(NF - 1) }' <<<"$nowait")" \
	'BEGIN { printf "the wait for the probes itself: %.1f ms (median with the wait - median without)\n", a - b }'
