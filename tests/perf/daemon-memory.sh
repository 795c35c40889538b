#!/bin/bash
# What lttng-dynprobed keeps as events come and go: a path-wide --function
# event on each of COUNT shared libraries of the machine in turn (its first
# exported function), the event dropped with its session each time (as
# `lttng trace` does when its command ends).  Prints the daemon's resident
# memory (anonymous and file-backed), descriptors and mappings before the
# first event (the baseline, in the same run) and after every STEP objects.
# The daemon keeps the objects events use and the 8 idle ones used last
# (daemon.h, DPD_OBJECTS_IDLE_MAX): the rows stay near the baseline.  Not
# pass/fail.
#
#   tests/perf/daemon-memory.sh [COUNT [STEP]]   from the build tree, after
#                                                make (tests/daemon's dpctl)
#   LIBDIR=DIR ...                               where the libraries are
#                                                (/usr/lib/x86_64-linux-gnu)
#   DP_TEST_DAEMON=PATH ...                      another build's daemon

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

abs_top_builddir=$(cd "$top_builddir" && pwd)
builddir=$abs_top_builddir/tests/daemon
[ -x "$builddir/dpctl" ] || { echo "daemon-memory.sh: build $builddir/dpctl first" >&2; exit 1; }
COUNT=${1:-200}
STEP=${2:-25}
LIBDIR=${LIBDIR:-/usr/lib/x86_64-linux-gnu}

dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

start_sessiond || { echo "daemon-memory.sh: no session daemon" >&2; exit 1; }
start_dynprobed || { cat "$DP_TMP/dynprobed.start" >&2; exit 1; }
dp_lttng create m --output="$DP_TMP/trace" >/dev/null ||
	{ cat "$DP_TMP/lttng.log" >&2; exit 1; }

row() {
	awk -v n="$1" -v fds="$(ls /proc/"$DPD_PID"/fd | wc -l)" \
		-v maps="$(wc -l <"/proc/$DPD_PID/maps")" '
		/^RssAnon:/ { anon = $2 } /^RssFile:/ { file = $2 }
		END { printf "| %7d | %10.1f | %10.1f | %5d | %5d |\n", n, anon / 1024, file / 1024, fds, maps }' \
		"/proc/$DPD_PID/status"
}

echo "| objects | anon (MiB) | file (MiB) |   fds |  maps |"
echo "|---------|------------|------------|-------|-------|"
row 0
n=0 failed=0
for lib in "$LIBDIR"/lib*.so.*; do
	[ "$n" -ge "$COUNT" ] && break
	[ -L "$lib" ] || [ ! -f "$lib" ] && continue
	fn=$(nm -D --defined-only "$lib" 2>/dev/null | awk '$2 == "T" { print $3; exit }')
	[ -n "$fn" ] || continue
	if dpctl enable m channel0 "e$n" function "$fn" "$lib" && grep -q "status=0" "$DP_TMP/out"; then
		:
	else
		failed=$((failed + 1))
	fi
	dpctl destroyed m
	n=$((n + 1))
	[ $((n % STEP)) -eq 0 ] && row "$n"
done
[ $((n % STEP)) -eq 0 ] || row "$n"
echo "($n libraries of $LIBDIR, $failed refused; daemon pid $DPD_PID)"
