#!/bin/bash
# The daemon's cache of objects (an executable or a library: its analysis,
# its DWARF, its descriptor) is bounded.  An object stays open while an
# event uses it; of those no event uses, the DPD_OBJECTS_IDLE_MAX most
# recently used stay open for the next event, the others are closed.
# Path-wide events on 20 copies of a program, one after the other, each
# dropped with its session: the daemon keeps 8 of the copies open, not 20,
# while an event on a running process, kept all along, records and is
# removed exactly; copies without a build-id, whose DWARF is each their
# own, leave no descriptor open once closed (their DWARF is closed too); a
# copy that was closed is opened again for a new event; four clients at
# once churn through the copies.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie
LEN=64
N=20
IDLE_MAX=$(sed -n 's/^#define DPD_OBJECTS_IDLE_MAX \([0-9]*\).*/\1/p' \
	"$top_srcdir/src/bin/lttng-dynprobed/daemon.h")
[ -n "$IDLE_MAX" ] || tap_bail "no DPD_OBJECTS_IDLE_MAX in daemon.h"

# The copies the daemon has open (its descriptors on them), in order.
open_copies() {
	ls -l /proc/"$DPD_PID"/fd 2>/dev/null | sed -n "s#.* -> $DP_TMP/copy-\([0-9]*\)\$#\1#p" |
		sort -n | tr '\n' ' '
}

count() {
	wc -w <<<"$1"
}

copies_open_at_most() {
	[ "$(count "$(open_copies)")" -le "$1" ]
}

# records_then_removed EVENT PID PATH TEXT: EVENT (on dp_work of PATH in
# process PID, session s) records, then, disabled, leaves the file's bytes.
records_then_removed() {
	wait_events s "$DP_TMP/trace" "dynprobe:$1_entry" "dynprobe:$1_return"
	tap_ok $? "$4 ($(grep -c "^dynprobe:$1_entry:" "$DP_TMP/events") entries)"
	dp_lttng start s >/dev/null
	dpctl disable s channel0 "$1" && out_has "^proc pid=$2 status=0" &&
		same_as_file "$2" "$3" dp_work "$LEN"
	tap_ok $? "$1 disabled: dp_work holds the file's $LEN bytes again in process $2"
}

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
dp_lttng create s --output="$DP_TMP/trace" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start >/dev/null ||
	tap_bail "no session"
dp_lttng create g --output="$DP_TMP/trace-g" >/dev/null || tap_bail "no session g"

start_target t env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm" 2 5 1000 || tap_bail "no target"
pid=$TARGET_PID
dpctl enable s channel0 kept function dp_work "$PIE" -p "$pid" && out_has "^proc pid=$pid status=0"
tap_ok $? "event kept: --function dp_work in process $pid"

for i in $(seq "$N"); do
	cp "$PIE" "$DP_TMP/copy-$i" || tap_bail "cannot copy $PIE"
done
bad= most=0
for i in $(seq "$N"); do
	dpctl enable g channel0 "e$i" function dp_work "$DP_TMP/copy-$i" &&
		grep -q "status=0" "$DP_TMP/out" && dpctl destroyed g || bad="$bad $i"
	n=$(count "$(open_copies)")
	[ "$n" -gt "$most" ] && most=$n
done
[ -z "$bad" ]
tap_ok $? "a path-wide event on each of $N copies of the program, its session dropped each time${bad:+ (failed:$bad)}"
# The closing follows each request's end, maybe after its reply (or the
# next request's, when another began before the object fell idle).
eventually copies_open_at_most "$IDLE_MAX"
open=$(open_copies)
[ "$(count "$open")" -eq "$IDLE_MAX" ] &&
	[ "$open" = "$(seq $((N - IDLE_MAX + 1)) "$N" | tr '\n' ' ')" ]
tap_ok $? "the daemon keeps the $IDLE_MAX copies used last open, not $N (open: $open; at most $most at once)"
logged "object $DP_TMP/copy-1 closed: no event uses it"
tap_ok $? "its log says which it closed: $(grep -m1 "object .* closed" "$DP_TMP/dynprobed.log" | cut -d: -f4- | cut -c1-140)"
ls -l /proc/"$DPD_PID"/fd | grep -q -- "-> $PIE\$"
tap_ok $? "the program of the event kept stays open"

records_then_removed kept "$pid" "$PIE" "the event kept records all along"

# Copies without a build-id: each has its own DWARF (cached by file), read
# for --function's inlined copies from the file itself (a descriptor of its
# own).  A closed copy leaves neither descriptor open: its DWARF is closed
# with it.
for i in $(seq 12); do
	objcopy --remove-section=.note.gnu.build-id "$PIE" "$DP_TMP/copy-nb$i" ||
		tap_bail "objcopy cannot strip the build-id"
done
# copy-nb1 is replaced (a new file under its name) after an event used it:
# the first event keeps the old file, the next opens the new one; both go.
dpctl enable g channel0 old function dp_work "$DP_TMP/copy-nb1" && grep -q "status=0" "$DP_TMP/out" &&
	objcopy --remove-section=.note.gnu.build-id "$PIE" "$DP_TMP/new-nb1" &&
	mv "$DP_TMP/new-nb1" "$DP_TMP/copy-nb1"
tap_ok $? "an event on copy-nb1, then the file replaced under it"
bad=
for i in $(seq 12); do
	dpctl enable g channel0 "nb$i" function dp_work "$DP_TMP/copy-nb$i" &&
		grep -q "status=0" "$DP_TMP/out" && dpctl destroyed g || bad="$bad $i"
done
fds_nb() {
	ls -l /proc/"$DPD_PID"/fd 2>/dev/null | sed -n "s#.* -> $DP_TMP/copy-nb\([0-9]*\)\$#\1#p" |
		sort -n | tr '\n' ' '
}
nb_open_at_most() {
	[ "$(fds_nb | xargs -n1 | sort -u | wc -l)" -le "$1" ]
}
eventually nb_open_at_most "$IDLE_MAX"
nb=$(fds_nb)
[ -z "$bad" ] && [ "$(xargs -n1 <<<"$nb" | sort -un | xargs)" = "$(seq 5 12 | xargs)" ] &&
	[ "$(count "$nb")" -eq $((2 * IDLE_MAX)) ]
tap_ok $? "12 copies without a build-id, each event dropped: the 8 used last keep their file and their DWARF open (2 descriptors each), the 4 others neither (descriptors on: $nb${bad:+; failed:$bad})"
deleted=$(ls -l /proc/"$DPD_PID"/fd | grep -c -- "-> $DP_TMP/copy-nb1 (deleted)")
[ "$deleted" -eq 0 ]
tap_ok $? "the replaced copy-nb1 is closed too, its DWARF with it ($deleted descriptors left on it)"

# copy-1, closed, opened again: an event on a process running it.
start_target c1 env LD_PRELOAD="$AGENT" "$DP_TMP/copy-1" "$DP_SHM/shm-c1" 2 5 1000 ||
	tap_bail "copy-1 does not start"
c1=$TARGET_PID
dpctl enable s channel0 again function dp_work "$DP_TMP/copy-1" -p "$c1" &&
	out_has "^proc pid=$c1 status=0"
tap_ok $? "copy-1, closed, is opened again for an event on process $c1 running it"
records_then_removed again "$c1" "$DP_TMP/copy-1" "that event records"
# Four clients at once, each enabling and dropping path-wide events on the
# copies in its own order: objects fall idle and are closed while other
# requests resolve against them (run under the sanitized daemon too).
churn() {
	local k=$1 i j
	for j in $(seq 30); do
		i=$(((j * (k + 3) + k) % N + 1))
		"$DPCTL" enable "p$k" channel0 "e$j" function dp_work "$DP_TMP/copy-$i" \
			>"$DP_TMP/churn-$k.out" 2>&1 && grep -q "status=0" "$DP_TMP/churn-$k.out" &&
			"$DPCTL" destroyed "p$k" >/dev/null 2>&1 || { echo "failed: copy-$i"; return 1; }
	done
}
for k in 1 2 3 4; do
	dp_lttng create "p$k" --output="$DP_TMP/trace-p$k" >/dev/null || tap_bail "no session p$k"
done
pids=
for k in 1 2 3 4; do
	churn "$k" >"$DP_TMP/churn-$k.log" 2>&1 &
	pids="$pids $!"
done
st=0
for p in $pids; do
	wait "$p" || st=1
done
[ "$st" -eq 0 ] && dpctl ping && out_has "pid=$DPD_PID "
tap_ok $? "4 clients at once, 30 path-wide events each over the copies, enabled and dropped: all served, the daemon answers$(cat "$DP_TMP"/churn-*.log | head -n 3 | tr '\n' ' ')"
eventually copies_open_at_most $((IDLE_MAX + 1))
open=$(open_copies)
# Event again, disabled, still exists: copy-1 stays open for it.
[ "$(count "$open")" -le $((IDLE_MAX + 1)) ] && grep -qw 1 <<<"$open"
tap_ok $? "then copy-1 (event again uses it) and at most $IDLE_MAX others are open ($open)"

kill -TERM "$pid" "$c1"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"
tap_done
