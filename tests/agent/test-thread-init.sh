#!/bin/bash
# dpa_events_thread_init: once a thread went through it, the thread's first
# event allocates nothing (the hit path may run in a signal handler, or
# inside malloc).  Checked where it matters, in a program that loads the
# event code and liblttng-ust with dlopen() as an injected agent is loaded,
# with malloc counted around the first dpa_class_record of two new threads:
# one initialized, and one not (which must allocate: the count works).

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

module=$agent_tests/.libs/libdp-events-mod.so
[ -f "$module" ] || tap_bail "$module not built"

dp_lttng create first --output="$DP_TMP/trace" &&
	dp_lttng enable-event -u dptest:first &&
	dp_lttng start || tap_bail "cannot set up the session"
"$agent_tests/first-event" "$module" >"$DP_TMP/out" 2>&1
tap_ok $? "first-event runs" || tap_diag_file "$DP_TMP/out"
dp_lttng stop && dp_lttng destroy

with=$(awk '$1 == "initialized" { print $2 }' "$DP_TMP/out")
without=$(awk '$1 == "uninitialized" { print $2 }' "$DP_TMP/out")
tap_check "the class loaded with dlopen() is enabled" grep -qx 'enabled 1' "$DP_TMP/out"
tap_check "a thread's first event without dpa_events_thread_init allocates ($without mallocs)" \
	[ "${without:-0}" -gt 0 ]
tap_check "after dpa_events_thread_init, it allocates nothing (${with:-?} mallocs)" \
	[ "${with:-1}" -eq 0 ]
got=$(bt_text "$DP_TMP/trace" | sed -nE 's/^dptest:first: .*\{ initialized = ([01]) \}$/\1/p' | sort |
	tr '\n' ' ')
tap_check "both first events were recorded" [ "$got" = "0 1 " ] || tap_diag "got: $got"

tap_done
