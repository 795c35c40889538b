#!/bin/bash
# One long session scripted as a user of LTTng scripts it, through our
# lttng, a real lttng-sessiond and lttng-dynprobed, on tests/cli's
# cli-target (foo(x) = 3 * (x + 1), hand-written bytes):
#
#   session A: a --pid probe on foo in a running program, with dynamic
#              contexts (reg:rdi, backtrace);
#   session B: a path-wide --function foo and a --probe foo+0x4 inside its
#              entry window, in the same process as A's probe (they combine);
#   a program started with the agent preloaded right after the path-wide
#   enable-event: every call it makes is recorded (it prints its own count);
#   a shell that forks and executes `env -i cli-target` (the environment
#   cleared) with the agent following it (LTTNG_DYNPROBE_FOLLOW_EXEC):
#   the executed program records every call, the same events as above;
#   --mi xml list -u (xmllint) shows both sessions' dynamic events;
#   disable-event -u -a in A: A stops recording, B records on;
#   save both, destroy both, load both, start: the same program with the
#   same input records the same events with the same payloads as before;
#   at the end foo's bytes are the file's and nothing of ours runs.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
# tests/daemon's helpers for the code bytes (same_as_file) and the daemon's
# pid file (dpd_run_dir, stop_dynprobed).
abs_top_builddir=$top_builddir
. "$top_srcdir/tests/daemon/common.sh"
command -v xmllint >/dev/null || tap_bail "xmllint is missing (libxml2-utils, tools/deps.sh)"
[ -x "$TARGET" ] || tap_bail "no $TARGET (make -C tests/cli cli-target)"
cli_setup
DP_DAEMON_RUNS=1
NS='urn:lttng-dynprobe:mi:1'
FOO_LEN=14

# lttng ARGS...: our lttng (it may start lttng-dynprobed); output in $out,
# status returned, both shown in TAP on failure by the caller.
ours() {
	out=$("$LTTNG" "$@" 2>&1)
}

# events SESSION: stops SESSION (its buffers flushed), its trace as text in
# $DP_TMP/ev-SESSION, and starts it again unless told "stopped".
events() {
	"$STOCK" -n stop "$1" >/dev/null
	bt_text "$DP_TMP/t-$1" >"$DP_TMP/ev-$1" 2>/dev/null
	[ "${2:-}" = stopped ] || "$STOCK" -n start "$1" >/dev/null
}

# run_app NAME N...: cli-target, the agent preloaded, fed the numbers N on
# stdin at once (its calls begin as main does); its pid in $app, its own
# count of foo calls (lines "foo(n) = ...") in $calls.
run_app() {
	local name=$1
	shift
	printf '%s\n' "$@" >"$DP_TMP/$name.in"
	LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$TARGET" 0 <"$DP_TMP/$name.in" >"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err" &
	app=$!
	wait "$app"
	app_status=$?
	calls=$(grep -c '^foo(' "$DP_TMP/$name.out")
}

# b_of PID: session B's events of process PID, without the vpid (which
# and the cpu differ between runs): "name: payload and dynamic contexts".
b_of() {
	grep -E "^dynprobe:f[bp](_entry|_return)?: .*vpid = $1[ ,}]" "$DP_TMP/ev-B" |
		sed -E 's/vpid = [0-9]+//; s/cpu_id = [0-9]+//'
}

# a_steps: the rdi values of session A's events, and whether each is the
# one before plus one (the loop calls foo(0), foo(1), ...: every call
# recorded); prints "N BAD" (events, breaks in the sequence).
a_steps() {
	grep -E '^dynprobe:pa: ' "$DP_TMP/ev-A" |
		sed -nE 's/.*rdi = (0x[0-9a-fA-F]+|[0-9]+).*/\1/p' |
		awk '{ v = strtonum($1); if (NR > 1 && v != p + 1) bad++; p = v } END { printf "%d %d\n", NR, bad }'
}

# a_record: session A records the running program for 3 s (about 30 calls
# of foo), then its trace is read once: a stop in between would leave a gap
# of calls no session recorded, which a_steps would count as missed.
a_record() {
	sleep 3
	events A
	read -r n_a bad_a <<<"$(a_steps)"
}

# ---- a running program, two sessions ----------------------------------
LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$TARGET" --loop &
loop=$!
for s in A B; do
	"$STOCK" -n create "$s" --output="$DP_TMP/t-$s" >/dev/null || tap_bail "create $s"
done

# Session A: a per-pid probe at foo's entry, with dynamic contexts.
ours enable-event -u -s A --path "$TARGET" --pid "$loop" --probe foo pa
tap_ok $? "A: enable-event --pid $loop --probe foo pa" || tap_diag "$out"
DPD_PID=$(cat "$(dpd_run_dir)/lttng-dynprobed.pid" 2>/dev/null)
[ -n "$DPD_PID" ] && kill -0 "$DPD_PID"
tap_ok $? "lttng started lttng-dynprobed (pid $DPD_PID)"
ours add-context -u -s A -e pa -t reg:rdi -t backtrace
tap_ok $? "A: add-context -e pa -t reg:rdi -t backtrace" || tap_diag "$out"
wait_sites A "$loop" pa
tap_ok $? "A: pa installed in $loop"
"$STOCK" -n start A >/dev/null || tap_bail "start A"

# Session B: path-wide --function foo, then --probe foo+0x4 inside its entry
# window (item 6: the patch is rebuilt with both), then vpid to tell the
# processes apart, started; right after, a new program (item 1).
ours enable-event -u -s B --path "$TARGET" --function foo fb
tap_ok $? "B: enable-event --path --function foo fb (path-wide)" || tap_diag "$out"
ours enable-event -u -s B --path "$TARGET" --probe foo+0x4 fp
tap_ok $? "B: --probe foo+0x4 fp inside fb's entry window is accepted" || tap_diag "$out"
ours add-context -u -s B -e fb -t reg:edi -t vpid
tap_ok $? "B: add-context -e fb -t reg:edi -t vpid" || tap_diag "$out"
"$STOCK" -n start B >/dev/null || tap_bail "start B"
wait_sites B "$loop" fb && wait_sites B "$loop" fp
tap_ok $? "B: fb and fp installed in the running $loop too (next to A's pa)"

nums=$(seq 1 300)
run_app run1 $nums
tap_ok "$app_status" "a program started right after: ran to its end ($calls calls)"
events B
b_of "$app" >"$DP_TMP/b1"
n_entry=$(grep -c '^dynprobe:fb_entry:' "$DP_TMP/b1")
n_return=$(grep -c '^dynprobe:fb_return:' "$DP_TMP/b1")
n_probe=$(grep -c '^dynprobe:fp:' "$DP_TMP/b1")
[ "$calls" -eq 300 ] && [ "$n_entry" -eq "$calls" ] && [ "$n_return" -eq "$calls" ] &&
	[ "$n_probe" -eq "$calls" ]
tap_ok $? "item 1: every call from main on recorded: $calls calls, $n_entry fb_entry, $n_return fb_return, $n_probe fp"
args=$(sed -nE 's/^dynprobe:fb_entry: .*edi = (0x[0-9a-fA-F]+|[0-9]+).*/\1/p' "$DP_TMP/b1" |
	while read -r v; do echo $((v)); done)
[ "$args" = "$nums" ]
tap_ok $? "fb_entry's edi: the program's input, in order" || tap_diag "$(head -3 "$DP_TMP/b1")"
rets=$(sed -nE 's/^dynprobe:fb_return: .*ret = ([0-9]+).*/\1/p' "$DP_TMP/b1")
printed=$(sed -nE 's/^foo\(-?[0-9]+\) = ([0-9]+),.*/\1/p' "$DP_TMP/run1.out")
[ -n "$rets" ] && [ "$rets" = "$printed" ]
tap_ok $? "fb_return's ret: the values the program printed" ||
	tap_diag "$(grep -m2 '^dynprobe:fb_return' "$DP_TMP/b1")" "$(head -2 "$DP_TMP/run1.out")"

# ---- item 2: a program that forks and executes another, env cleared ------
# bash forks, its child executes env, which executes cli-target with an
# empty environment: the agent follows both execs.
LD_PRELOAD=$LTTNG_DYNPROBE_AGENT LTTNG_DYNPROBE_FOLLOW_EXEC=1 bash -c \
	'env -i "$0" 0 <"$1" >"$2" 2>&1 & echo $! >"$3"; wait $!' \
	"$TARGET" "$DP_TMP/run1.in" "$DP_TMP/run3.out" "$DP_TMP/run3.pid"
tap_ok $? "item 2: bash forked and executed env -i cli-target: it ran to its end"
child=$(cat "$DP_TMP/run3.pid")
calls=$(grep -c '^foo(' "$DP_TMP/run3.out")
events B
b_of "$child" >"$DP_TMP/b3"
cmp -s "$DP_TMP/b1" "$DP_TMP/b3" && [ "$calls" -eq 300 ]
tap_ok $? "item 2: the executed program ($child, its environment cleared) recorded every call, the same $(wc -l <"$DP_TMP/b3") events as the preloaded run" ||
	tap_diag "$(diff "$DP_TMP/b1" "$DP_TMP/b3" | head -6)"

# The running program calls foo ten times a second: B sees it soon.
for i in $(seq 150); do
	n_loop=$(b_of "$loop" | grep -c '^dynprobe:fb_entry:')
	n_loopp=$(b_of "$loop" | grep -c '^dynprobe:fp:')
	[ "$n_loop" -gt 0 ] && [ "$n_loopp" -gt 0 ] && break
	sleep 0.2
	events B
done
[ "$n_loop" -gt 0 ] && [ "$n_loopp" -gt 0 ]
tap_ok $? "B recorded the running $loop too ($n_loop fb_entry, $n_loopp fp)"
# More than a few calls of the running program (ten a second).
a_record
[ "$n_a" -gt 3 ] && [ "$bad_a" -eq 0 ]
tap_ok $? "A: $n_a pa events in $loop, rdi = each call's argument, none missed ($bad_a breaks)"
grep -m1 '^dynprobe:pa: ' "$DP_TMP/ev-A" | grep -q 'backtrace = '
tap_ok $? "A: pa carries its backtrace" || tap_diag "$(grep -m1 '^dynprobe:pa: ' "$DP_TMP/ev-A")"
cp "$DP_TMP/ev-A" "$DP_TMP/a1"

# ---- item 5: --mi xml list -u --------------------------------------------
doc=$("$LTTNG" -n --mi xml list -u 2>"$DP_TMP/err")
tap_ok $? "list -u --mi xml exits 0" || tap_diag_file "$DP_TMP/err"
xmllint --noout - <<<"$doc" 2>"$DP_TMP/xmlerr"
tap_ok $? "list -u --mi xml: well-formed" || tap_diag_file "$DP_TMP/xmlerr"
names=$(xmllint --xpath "//*[namespace-uri()='$NS' and local-name()='event']/*[local-name()='name']/text()" \
	- <<<"$doc" 2>/dev/null | sort | tr '\n' ' ')
[ "$names" = "fb fp pa " ]
tap_ok $? "list -u --mi xml: both sessions' dynamic events fb, fp, pa (got: $names)" || tap_diag "$doc"

# ---- item 7: disable-event -u -a in A, B records on ----------------------
ours disable-event -u -s A -a
tap_ok $? "A: disable-event -u -a exits 0" || tap_diag "$out"
grep -q "Non-default channel" <<<"$out"
tap_ok $((!$?)) "no 'Non-default channel' error"
events A
n_a0=$(grep -c '^dynprobe:pa: ' "$DP_TMP/ev-A")
events B
n_b0=$(b_of "$loop" | grep -c '^dynprobe:fb_entry:')
sleep 1
events A
events B
n_a1=$(grep -c '^dynprobe:pa: ' "$DP_TMP/ev-A")
n_b1=$(b_of "$loop" | grep -c '^dynprobe:fb_entry:')
[ "$n_a1" -eq "$n_a0" ] && [ "$n_b1" -gt "$n_b0" ]
tap_ok $? "A records nothing more ($n_a0 -> $n_a1), B records on in $loop ($n_b0 -> $n_b1)"
! "$LTTNG" -n list A 2>&1 | grep -q "process $loop: [1-9][0-9]* site" &&
	"$LTTNG" -n list B 2>&1 | grep -q "process $loop: [1-9][0-9]* site"
tap_ok $? "A's probe is out of $loop, B's are in"
ours enable-event -u -s A --path "$TARGET" --pid "$loop" --probe foo pa
tap_ok $? "A: enable-event pa again" || tap_diag "$out"
"$LTTNG" -n list A >"$DP_TMP/listA" 2>&1
grep -q "contexts: .*reg:rdi" "$DP_TMP/listA" && grep -q "contexts: .*backtrace" "$DP_TMP/listA"
tap_ok $? "A: pa keeps its contexts" || tap_diag_file "$DP_TMP/listA"
wait_sites A "$loop" pa
tap_ok $? "A: pa installed in $loop again"

# ---- item 4: save, destroy, load, start, the same run again --------------
# Stopped first, as a user would: a session saved while it records is
# loaded recording (lttng load restores that), and start would refuse.
events A stopped
events B stopped
ours save -o "$DP_TMP/saved" A && ours save -o "$DP_TMP/saved" B
tap_ok $? "save A and B" || tap_diag "$out"
for s in A B; do
	ours destroy "$s" || tap_diag "$out"
done
"$LTTNG" -n list -u 2>&1 | grep -q "Dynamic probe events"
tap_ok $((!$?)) "destroy A and B: no dynamic event left"
same_as_file "$loop" "$TARGET" foo "$FOO_LEN"
tap_ok $? "destroyed: foo's $FOO_LEN bytes in $loop are the file's"
# The traces of the first life are kept aside: the loaded sessions write
# into the same directories.
mv "$DP_TMP/t-A" "$DP_TMP/t-A.1" && mv "$DP_TMP/t-B" "$DP_TMP/t-B.1"
ours load -i "$DP_TMP/saved/A.lttng" A
tap_ok $? "load A" || tap_diag "$out"
ours load -i "$DP_TMP/saved/B.lttng" B
tap_ok $? "load B" || tap_diag "$out"
"$LTTNG" -n list A >"$DP_TMP/listA" 2>&1
"$LTTNG" -n list B >"$DP_TMP/listB" 2>&1
grep -q "probe foo in .*cli-target, pid $loop" "$DP_TMP/listA" &&
	grep -q "contexts: .*reg:rdi" "$DP_TMP/listA" && grep -q "contexts: .*backtrace" "$DP_TMP/listA" &&
	grep -q "function foo in .*cli-target" "$DP_TMP/listB" &&
	grep -q "probe foo+0x4 in .*cli-target" "$DP_TMP/listB" && grep -q "contexts: .*reg:edi" "$DP_TMP/listB"
tap_ok $? "loaded: A's pid probe with its contexts, B's path-wide function and probe" ||
	{ tap_diag_file "$DP_TMP/listA"; tap_diag_file "$DP_TMP/listB"; }
for s in A B; do
	"$STOCK" -n start "$s" >/dev/null || tap_bail "start $s"
done
wait_sites A "$loop" pa && wait_sites B "$loop" fb && wait_sites B "$loop" fp
tap_ok $? "started: pa, fb and fp installed in $loop again"
run_app run2 $nums
tap_ok "$app_status" "the same program, the same input: ran to its end ($calls calls)"
events B
b_of "$app" >"$DP_TMP/b2"
cmp -s "$DP_TMP/b1" "$DP_TMP/b2" && [ -s "$DP_TMP/b2" ]
tap_ok $? "item 4: B's events and payloads after the round trip are the first run's ($(wc -l <"$DP_TMP/b2") events)" ||
	tap_diag "$(diff "$DP_TMP/b1" "$DP_TMP/b2" | head -6)"
a_record
fields() {
	grep -m1 '^dynprobe:pa: ' "$1" | sed -E 's/= [^,}]*/=/g; s/\[[^]]*\]//g'
}
[ "$n_a" -gt 3 ] && [ "$bad_a" -eq 0 ] && [ "$(fields "$DP_TMP/ev-A")" = "$(fields "$DP_TMP/a1")" ]
tap_ok $? "A after the round trip: $n_a pa events, rdi each call's ($bad_a breaks), the same fields as before" ||
	tap_diag "$(fields "$DP_TMP/a1")" "$(fields "$DP_TMP/ev-A")"

# ---- the end: nothing left behind ----------------------------------------
for s in A B; do
	ours destroy "$s" || tap_diag "$out"
done
"$STOCK" -n list 2>&1 | grep -q "Currently no available recording session"
tap_ok $? "destroy A and B: no session left" || tap_diag "$("$STOCK" -n list 2>&1)"
for i in $(seq 300); do
	same_as_file "$loop" "$TARGET" foo "$FOO_LEN" && break
	sleep 0.1
done
# After the load and start, the destroy removes events whose patches were
# planned together in another order than before the round trip: the bytes
# must come back all the same.
same_as_file "$loop" "$TARGET" foo "$FOO_LEN"
tap_ok $? "foo's $FOO_LEN bytes in the running $loop are the file's" ||
	tap_diag "in $loop: $(site_bytes "$loop" "$(runtime_addr "$loop" "$TARGET" "$(sym_vaddr "$TARGET" foo)")" "$FOO_LEN")"
# cli-target --loop exits 2 as soon as foo or bar computes wrong.
kill -0 "$loop" 2>/dev/null
tap_ok $? "the running $loop computed right throughout (still runs)"
kill "$loop"
wait "$loop" 2>/dev/null
stop_dynprobed
tap_ok $? "lttng-dynprobed stops (SIGTERM to its pid)"
stop_sessiond
left=
for name in lttng-sessiond lttng-consumerd lttng-dynprobed cli-target; do
	left="$left$(pgrep -x "$name" | tr '\n' ' ')"
done
[ -z "$left" ]
tap_ok $? "nothing of ours runs (got: ${left:-none})"
tap_done
