#!/usr/bin/env bash
# The first thing to run: on a fresh Debian 12 machine, as root, installs what
# is missing, builds, and runs `lttng trace -c "ls -l" --function main` with a
# session daemon and an lttng-dynprobed of its own (a private LTTNG_HOME; as
# root, its own mount namespace with a tmpfs over /var/run/lttng, so that a
# system session daemon is neither seen nor disturbed), shows the events,
# and stops everything it started.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

if [ -z "${DP_ISOLATED:-}" ]; then
	echo "== dependencies (tools/deps.sh)"
	tools/deps.sh || exit 1
	echo "== build"
	if [ ! -f Makefile ]; then
		{ autoreconf -fi && ./configure --quiet; } >/dev/null || exit 1
	fi
	make -j"$(nproc 2>/dev/null || echo 2)" >/dev/null || {
		echo "demo.sh: the build failed: run make to see why" >&2
		exit 1
	}
fi

# From here on, in private namespaces (tests/utils/sessiond.sh): the script
# runs again there, past the part above.
. "$top/tests/utils/tap.sh"
. "$top/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"

LTTNG=$top/src/bin/lttng/lttng
export LTTNG_DYNPROBE_AGENT=$top/src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so.0
export LTTNG_DYNPROBE_DAEMON=$top/src/bin/lttng-dynprobed/lttng-dynprobed

# The daemon lttng started, stopped by the pid it wrote.
stop_dynprobed() {
	local dir pid
	if [ "$(id -u)" -eq 0 ]; then dir=/var/run/lttng; else dir=$LTTNG_HOME/.lttng; fi
	pid=$(cat "$dir/lttng-dynprobed.pid" 2>/dev/null) || return 0
	[ -n "$pid" ] && dp_stop_pid "$pid"
}
trap 'stop_dynprobed; dp_cleanup' EXIT

echo "== a private session daemon (LTTNG_HOME=$LTTNG_HOME)"
start_sessiond || exit 1

echo "== where a probe could go in main of /usr/bin/ls (stripped: found from the entry point)"
echo "\$ lttng list -u --path /usr/bin/ls --sites main"
"$LTTNG" list -u --path /usr/bin/ls --sites main | sed -n '1,8p'
echo "   ..."
"$LTTNG" list -u --path /usr/bin/ls --sites main | tail -n 1

echo
echo "== lttng trace: ls -l with probes on main's entry and returns"
echo "\$ lttng trace -c \"ls -l\" --function main"
"$LTTNG" trace -c "ls -l" --function main 2> >(tee "$DP_TMP/trace.err" >&2)
status=$?
echo "(exit status $status: ls's own)"

# The trace directory lives in the private LTTNG_HOME, which goes away with
# everything else: keep a copy.
dir=$(sed -n 's/^Trace directory: //p' "$DP_TMP/trace.err")
if [ -n "$dir" ] && [ -d "$dir" ]; then
	keep=$(mktemp -d "${TMPDIR:-/tmp}/lttng-dynprobe-demo.XXXXXX")
	cp -r "$dir" "$keep/" && chmod -R a+rX "$keep"
	echo "== the trace is kept in $keep/$(basename "$dir"): babeltrace2 $keep"
fi
exit "$status"
