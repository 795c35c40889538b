#!/bin/bash
# Probing busy processes by pid: programs where no thread ever sleeps in a
# blocking system call (one computing thread, four, one inside malloc/free
# nearly all the time, python3 in a loop of json work) get the agent
# injected from a thread stopped outside the C library, their events are
# recorded, and each program prints and exits as it would have.  Each runs
# until the test tells it to end (SIGUSR1, once its events are seen; 120 s
# at most), not for a fixed time: a run of fixed length could end before a
# slow injection did.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

BUSY=$abs_top_builddir/tests/procctl/busy-target
make -s -C "$abs_top_builddir/tests/procctl" busy-target >/dev/null 2>&1 ||
	tap_bail "cannot build $BUSY"

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
dp_lttng create s --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start >/dev/null ||
	tap_bail "no session"

# probe_busy NAME FUNCTION PATH DONE-LINE COMMAND...: probes FUNCTION of
# PATH in the running COMMAND, waits for its events, then tells it to end
# (SIGUSR1) and waits for its end.
probe_busy() {
	local name=$1 fn=$2 path=$3 done=$4 pid st xst gone=
	shift 4
	start_target "$name" "$@" || tap_bail "$name does not start"
	pid=$TARGET_PID
	dpctl enable s channel0 "$name" function "$fn" "$path" -p "$pid" &&
		grep -q liblttng-ust-dynprobe "/proc/$pid/maps"
	st=$?
	# A target gone already says how it ended (it runs until told).
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"
		xst=$?
		gone=" (the target exited: status $xst, \"$(tail -n1 "$DP_TMP/$name.out")\")"
	fi
	tap_ok $st "$name (pid $pid): the agent is injected, $fn probed: $(head -n1 "$DP_TMP/out")$gone"
	grep -m1 "process $pid: agent injected" "$DP_TMP/dynprobed.log" | sed 's/^/# /'
	wait_events s "$DP_TMP/trace" "dynprobe:${name}_entry"
	tap_ok $? "$name: events recorded ($(grep -c "^dynprobe:${name}_entry:" "$DP_TMP/events"))"
	dp_lttng start s >/dev/null
	if [ -z "$gone" ]; then
		kill -USR1 "$pid"
		wait "$pid"
		xst=$?
	fi
	[ -z "$gone" ] && [ $xst -eq 0 ] && [ "$(tail -n1 "$DP_TMP/$name.out")" = "$done" ]
	tap_ok $? "$name: exits as it would have when told to end (status $xst, \"$(tail -n1 "$DP_TMP/$name.out")\"${gone:+, but it ended before})"
}

probe_busy spin compute_once "$BUSY" "done errors=0" "$BUSY" spin 120
probe_busy threads compute_once "$BUSY" "done errors=0" "$BUSY" threads 120 4
probe_busy mallocs allocate_once "$BUSY" "done errors=0" "$BUSY" malloc 120

if ! command -v python3 >/dev/null; then
	tap_ok 1 "python3 is installed (tools/deps.sh)"
else
	script='import json, signal, time
ended = []
signal.signal(signal.SIGUSR1, lambda *a: ended.append(1))
print("ready", flush=True)
doc = {"a": [1, 2.5, "x" * 40, None, True], "b": {"c": list(range(3000))}}
end = time.monotonic() + 120
n = 0
while time.monotonic() < end and not ended:
    s = json.dumps(doc)
    assert json.loads(s) == doc
    n += 1
print("done", "ok" if n > 0 else "no work")'
	# str.join ends each json.dumps: PyUnicode_Join, in libpython or the
	# interpreter itself.
	libpy=$(python3 -c 'import sysconfig, os; print(os.path.join(sysconfig.get_config_var("LIBDIR"), sysconfig.get_config_var("INSTSONAME")))')
	[ -e "$libpy" ] || libpy=$(readlink -f "$(command -v python3)")
	probe_busy python PyUnicode_Join "$libpy" "done ok" python3 -c "$script"
fi

stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"
tap_done
