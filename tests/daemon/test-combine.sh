#!/bin/bash
# Probes whose windows meet without being the same combine: the points of
# every event concerned are planned as one batch and replace the installed
# patches in one stop.  --function dp_work then --probe dp_work+1 (inside
# its entry window), the same in the other order, three events at
# overlapping places across two sessions taken out in every order; every
# event records, and after the last removal dp_work's bytes are the file's.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie
LEN=64


start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"
start_target t env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm" 4 5 1000 ||
	tap_bail "the target does not start"
pid=$TARGET_PID
for s in one two; do
	dp_lttng create "$s" --output="$DP_TMP/trace-$s" >/dev/null &&
		dp_lttng enable-event -u -s "$s" "dynprobe:$s*" >/dev/null &&
		dp_lttng start "$s" >/dev/null || tap_bail "cannot create session $s"
done

# enable SESSION NAME KIND LOCATION
enable() {
	dpctl enable "$1" channel0 "$2" "$3" "$4" "$PIE" -p "$pid" &&
		out_has "^proc pid=$pid status=0 "
}

# ---- --function, then a --probe inside its entry window ----
enable one onef function dp_work
tap_ok $? "--function dp_work: $(grep '^proc' "$DP_TMP/out")"
enable one onep probe dp_work+1
tap_ok $? "--probe dp_work+1 inside its entry window is accepted: $(grep -E '^(proc|status)' "$DP_TMP/out" | head -n1)"
seen one dynprobe:onef_entry dynprobe:onef_return dynprobe:onep
tap_ok $? "both record: $(count dynprobe:onef_entry) entries, $(count dynprobe:onep) probe hits"
dpctl disable one channel0 onep && ! same_as_file "$pid" "$PIE" dp_work
tap_ok $? "the probe out: dp_work is still patched for the function"
dpctl disable one channel0 onef && same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "the function out: dp_work's $LEN bytes are the file's"

# ---- a --probe, then a --function covering it ----
enable one onep probe dp_work+1
tap_ok $? "--probe dp_work+1 alone"
enable one onef function dp_work
tap_ok $? "--function dp_work covering it is accepted: $(grep -E '^(proc|status)' "$DP_TMP/out" | head -n1)"
seen one dynprobe:onef_entry dynprobe:onep
tap_ok $? "both record: $(count dynprobe:onef_entry) entries, $(count dynprobe:onep) probe hits"
dpctl disable one channel0 onef && ! same_as_file "$pid" "$PIE" dp_work
tap_ok $? "the function out: the probe's patch stays"
seen one
before=$(count dynprobe:onep)
seen one "dynprobe:onep>$before"
tap_ok $? "the probe records on alone ($before, then $(count dynprobe:onep))"
dpctl disable one channel0 onep && same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "the probe out: dp_work's bytes are the file's"

# ---- three events across two sessions, removed in every order ----
for order in "a b c" "a c b" "b a c" "b c a" "c a b" "c b a"; do
	enable one one_a function dp_work &&
		enable two two_b probe dp_work+1 &&
		enable two two_c probe dp_work+4
	tap_ok $? "[$order] --function in one, two --probes in its entry window in two"
	seen one dynprobe:one_a_entry && seen two dynprobe:two_b dynprobe:two_c
	tap_ok $? "[$order] all three record"
	ok=0
	for ev in $order; do
		case $ev in
		a) dpctl disable one channel0 one_a || ok=1 ;;
		*) dpctl disable two channel0 "two_$ev" || ok=1 ;;
		esac
	done
	[ $ok = 0 ] && same_as_file "$pid" "$PIE" dp_work "$LEN"
	tap_ok $? "[$order] removed in that order, dp_work's bytes are the file's"
done

kill -TERM "$pid"
wait "$pid"
tap_ok $? "the target computed right throughout: $(tail -n1 "$DP_TMP/t.out")"
tap_done
