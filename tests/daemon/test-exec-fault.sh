#!/bin/bash
# lttng-dynprobed --attach-exec killed (SIGKILL, --test-fault spun) while a
# program it caught spins at its entry point (`jmp .` over its first two
# bytes), before anything is installed: the program spins on, its entry on
# record in the run directory; a restarted daemon puts the entry's bytes
# back as it starts, and the program runs to its end with the output its
# arguments call for.  The same with the program killed before the restart
# (the record dropped), and records that must not be acted on: one naming a
# live process under another start time (a reused pid: left untouched), and
# one malformed.  The run directory holds no record after each restart.
#
# Root only, in the initial pid namespace with a private mount namespace
# (the connector's limits: see test-attach-exec.sh).
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/daemon/attach-exec.sh"
APP=$builddir/follow-app
N=1000
# follow-app's fw_work(i) = 3(i + 1), summed for i < N.
SUM=$((3 * N * (N + 1) / 2))
RUN=$(dpd_run_dir)
trap dpd_cleanup EXIT
trap 'exit 130' INT TERM

# AT_ENTRY of a process (its auxv: pairs of 64-bit words; AT_ENTRY is 9).
at_entry() {
	od -An -v -tu8 -w16 /proc/"$1"/auxv | awk '$1 == 9 { print $2; exit }'
}

# The user PC of a process stopped by SIGSTOP (/proc/PID/syscall: "-1 SP
# PC" outside a system call).
stopped_pc() {
	local i
	for i in $(seq 600); do
		grep -q '^State:[[:space:]]*T' /proc/"$1"/status && break
		sleep 0.05
	done
	awk '$1 == "-1" { print strtonum($3) }' /proc/"$1"/syscall
}

records() {
	ls "$RUN" | grep -c '^lttng-dynprobed\.entry\.'
}

# spun_start NAME: programs started (without any preload) until the daemon
# kills itself at step spun with one of them held at its entry (one that
# runs past its entry first is probed as it runs instead, and ends); the
# held one's pid in SPIN_PID.
spun_start() {
	local i t pid before
	SPIN_PID=
	before=$(faults)
	for i in $(seq 10); do
		env -u LD_PRELOAD "$APP" work "$N" >"$DP_TMP/$1.out" 2>&1 &
		pid=$!
		DP_TARGETS="$DP_TARGETS $pid"
		for t in $(seq 100); do
			[ "$(faults)" -gt "$before" ] && break
			grep -q "process $pid started without the agent" "$DP_TMP/dynprobed.log" && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		if [ "$(faults)" -gt "$before" ]; then
			# One start at a time: the one held is the last.
			SPIN_PID=$pid
			kill_dynprobed
			return 0
		fi
		wait "$pid"
	done
	return 1
}

faults() {
	grep -c "test fault: SIGKILL at step spun" "$DP_TMP/dynprobed.log"
}

start_sessiond || tap_bail "no session daemon"
dp_lttng create s1 --output="$DP_TMP/trace-s1" >/dev/null
tap_ok $? "session s1 created"

# ---- the daemon killed while the program spins: restored at restart ----
start_dynprobed --attach-exec --test-fault spun ||
	tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
"$LTTNG" --no-sessiond enable-event -u -s s1 --path "$APP" --function fw_work w \
	>>"$DP_TMP/lttng.log" 2>&1 && dp_lttng start s1 >/dev/null
tap_ok $? "a path-wide --function fw_work in follow-app, session started"
spun_start spin
tap_ok $? "the daemon killed itself at step spun, follow-app $SPIN_PID held at its entry"
pid=$SPIN_PID
entry=$(at_entry "$pid")
[ -f "$RUN/lttng-dynprobed.entry.$pid" ] &&
	grep -q "^pid $pid .* entry $(printf '0x%x' "$entry") " "$RUN/lttng-dynprobed.entry.$pid"
tap_ok $? "its entry point $(printf '0x%x' "$entry") is on record in $RUN: $(cat "$RUN/lttng-dynprobed.entry.$pid" 2>/dev/null)"
sleep 1
bytes=$(site_bytes "$pid" "$entry" 2)
kill -STOP "$pid"
pc=$(stopped_pc "$pid")
kill -CONT "$pid"
kill -0 "$pid" && [ "$bytes" = ebfe ] && [ "$pc" = "$entry" ] && [ ! -s "$DP_TMP/spin.out" ]
tap_ok $? "with no daemon, follow-app spins at its entry: bytes $bytes, PC $(printf '0x%x' "${pc:-0}"), no output"
start_dynprobed --attach-exec || tap_bail "no lttng-dynprobed again: $(cat "$DP_TMP/dynprobed.start")"
grep -q "process $pid: its entry point $(printf '0x%x' "$entry") restored" "$DP_TMP/dynprobed.log"
tap_ok $? "the restarted daemon restores the entry point as it starts"
[ "$(records)" = 0 ]
tap_ok $? "no record left in $RUN"
# Bounded: a program left spinning never ends.
for i in $(seq 300); do
	grep -q '^State:[[:space:]]*[RSDT]' /proc/"$pid"/status 2>/dev/null || break
	sleep 0.1
done
kill -KILL "$pid" 2>/dev/null
wait "$pid"
st=$?
[ "$st" = 0 ] && grep -q "^pid $pid work $N sum $SUM\$" "$DP_TMP/spin.out" &&
	grep -q "^agent $pid no\$" "$DP_TMP/spin.out"
tap_ok $? "follow-app runs to its end: status $st, sum $SUM of its $N calls, no agent" ||
	tap_diag_file "$DP_TMP/spin.out"
dp_lttng destroy s1 >/dev/null
stop_dynprobed
tap_ok $? "the daemon exits"

# ---- the program killed before the restart: its record dropped ----
start_dynprobed --attach-exec --test-fault spun ||
	tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
# (A daemon that exits takes its events with it: a session of its own.)
dp_lttng create s2 --output="$DP_TMP/trace-s2" >/dev/null &&
	"$LTTNG" --no-sessiond enable-event -u -s s2 --path "$APP" --function fw_work w2 \
	>>"$DP_TMP/lttng.log" 2>&1 && dp_lttng start s2 >/dev/null
tap_ok $? "session s2: the same path-wide --function, started"
spun_start gone
tap_ok $? "the daemon killed itself at step spun again, follow-app $SPIN_PID held at its entry"
pid=$SPIN_PID
entry=$(at_entry "$pid")
kill -KILL "$pid"
wait "$pid"
[ -f "$RUN/lttng-dynprobed.entry.$pid" ]
tap_ok $? "follow-app $pid killed while it spins; its record is there"

# A live process named by a record of another start time (its pid reused),
# and a malformed record.
sleep 600 &
other=$!
DP_TARGETS="$DP_TARGETS $other"
oentry=$(at_entry "$other")
obytes=$(site_bytes "$other" "$oentry" 2)
printf 'pid %d start 1 image %032x entry 0x%x orig 9090\n' "$other" 0 "$oentry" \
	>"$RUN/lttng-dynprobed.entry.$other"
echo "pid 1 and some words" >"$RUN/lttng-dynprobed.entry.1"
start_dynprobed --attach-exec || tap_bail "no lttng-dynprobed again: $(cat "$DP_TMP/dynprobed.start")"
grep -q "process $pid: the record of its entry point $(printf '0x%x' "$entry") dropped: the process is gone" \
	"$DP_TMP/dynprobed.log" && ! grep -q "process $pid: its entry point .* restored" "$DP_TMP/dynprobed.log"
tap_ok $? "the restarted daemon drops the killed program's record, restores nothing"
grep -q "process $other: the record of its entry point .* dropped: the process is gone (its pid is another's now)" \
	"$DP_TMP/dynprobed.log" && kill -0 "$other" &&
	[ "$(site_bytes "$other" "$oentry" 2)" = "$obytes" ]
tap_ok $? "a record naming a live process of another start time is dropped, its entry untouched ($obytes)"
grep -q "lttng-dynprobed.entry.1: not a record of an entry point, dropped" "$DP_TMP/dynprobed.log"
tap_ok $? "a malformed record is dropped"
[ "$(records)" = 0 ]
tap_ok $? "no record left in $RUN"
kill "$other"
wait "$other" 2>/dev/null
dp_lttng destroy s2 >/dev/null
stop_dynprobed
tap_ok $? "the daemon exits"
tap_done
