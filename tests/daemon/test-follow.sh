#!/bin/bash
# A preloaded agent follows its process: with LTTNG_DYNPROBE_FOLLOW_EXEC,
# into every image it executes (even after the program cleared or rebuilt
# its environment), so that each one connects, has its path-wide probes
# installed before main (GO) and records every call; and into a library it
# dlopens, probed before dlopen returns, whose unwind tables it compiles
# then (a backtrace through it).  Counts come from the programs'
# own counters; the runs without following (or without the wait) show that
# the checks can fail.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

LTTNG=$abs_top_builddir/src/bin/lttng/lttng
export LTTNG_DYNPROBE_STOCK_LTTNG=${STOCK:-/usr/bin/lttng}
export LTTNG_DYNPROBE_AGENT=$AGENT
export LTTNG_DYNPROBE_DAEMON=$DPD
# The runs that must be held (GO before main, MAPPED before dlopen returns)
# wait for the daemon as long as it takes, 120 s at most: by default the
# agent waits 3 s, then runs on unprobed, and a loaded machine can take
# longer than that to serve a HELLO or a MAPPED.  The followed images keep
# it (LTTNG_DYNPROBE_*); the runs that test other waits give their own.
export LTTNG_DYNPROBE_REGISTER_TIMEOUT=120000
APP=$builddir/follow-app
LIB=$builddir/libfollow-lib.so
N=200000
NT=2000
K=8

# session NAME LOCATION PATH: a session whose channel holds every event of
# the runs (2 a call), with vpid, the path-wide --function LOCATION of PATH
# enabled in it, started.
session() {
	dp_lttng create "$1" --output="$DP_TMP/trace-$1" >/dev/null &&
		dp_lttng enable-channel -u -s "$1" big --subbuf-size=8M --num-subbuf=8 >/dev/null &&
		dp_lttng add-context -u -s "$1" -c big -t vpid >/dev/null &&
		"$LTTNG" --no-sessiond enable-event -u -s "$1" -c big --path "$3" \
			--function "$2" w >>"$DP_TMP/lttng.log" 2>&1 &&
		dp_lttng start "$1" >/dev/null
}

# ends NAME: stops session NAME and reads its trace into $DP_TMP/NAME.ev
# ("ENTRY|RETURN VPID" lines).
ends() {
	dp_lttng stop "$1" >/dev/null
	bt_text "$DP_TMP/trace-$1" |
		sed -nE 's/^dynprobe:w_(entry|return): \{ cpu_id = [0-9]+ \}, \{ vpid = ([0-9]+) \}.*/\1 \2/p' \
			>"$DP_TMP/$1.ev"
}

# calls NAME KIND PID: the KIND (entry, return) events of PID in NAME.ev.
calls() {
	grep -c "^$2 $3\$" "$DP_TMP/$1.ev"
}

# run NAME ENV... -- ARGS...: the app with the agent preloaded; its output in
# $DP_TMP/NAME.out, its status in $st.
run() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	"${RUN_TIMED[@]}" env LD_PRELOAD="$AGENT" "${envs[@]}" "$APP" "$@" \
		>"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err"
	st=$?
}
RUN_TIMED=()

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"

# ---- an image executed after the environment was cleared ----
session s1 fw_work "$APP"
tap_ok $? "session s1: --path follow-app --function fw_work, vpid, started"
run clear LTTNG_DYNPROBE_FOLLOW_EXEC=1 -- exec-clear "$N"
read -r _ pid _ n _ sum <"$DP_TMP/clear.out"
tap_ok $st "exec-clear: the program cleared its environment and executed itself: pid $pid made $n calls"
ends s1
entries=$(calls s1 entry "$pid")
returns=$(calls s1 return "$pid")
[ "$n" = "$N" ] && [ "$entries" = "$n" ] && [ "$returns" = "$n" ]
tap_ok $? "every call of the executed image recorded: $entries entries, $returns returns for $n calls"
grep -q "process $pid started with the agent: dynprobe:w_entry: installed" "$DP_TMP/dynprobed.log"
tap_ok $? "its agent connected and the daemon installed the probe at its HELLO, before main"
dp_lttng destroy s1 >/dev/null

# ---- the same without following: the executed image has no agent ----
session s2 fw_work "$APP"
run noclear -- exec-clear "$N"
read -r _ pid _ n _ _ <"$DP_TMP/noclear.out"
ends s2
entries=$(calls s2 entry "$pid")
[ "$st" = 0 ] && [ "$n" = "$N" ] && [ "$entries" = 0 ]
tap_ok $? "without LTTNG_DYNPROBE_FOLLOW_EXEC: the image executed with a cleared environment runs unprobed ($entries entries)"
dp_lttng destroy s2 >/dev/null

# ---- children forked and executed, each with an environment of its own ----
session s3 fw_work "$APP"
run spawn LTTNG_DYNPROBE_FOLLOW_EXEC=1 -- spawn "$K" "$N"
tap_ok $st "spawn: $K children by fork+execve, fork+execle, fork+execvpe and posix_spawn, each with its own environment"
ends s3
ok=0 children=0 bad=
while read -r _ pid _ n _ _; do
	children=$((children + 1))
	e=$(calls s3 entry "$pid")
	r=$(calls s3 return "$pid")
	if [ "$n" = "$N" ] && [ "$e" = "$n" ] && [ "$r" = "$n" ]; then
		ok=$((ok + 1))
	else
		bad="$bad $pid:$e/$r/$n"
	fi
done < <(grep '^pid ' "$DP_TMP/spawn.out")
[ "$children" = "$K" ] && [ "$ok" = "$K" ] &&
	[ "$(grep -c '^child ' "$DP_TMP/spawn.out")" = "$K" ]
tap_ok $? "every child has every call recorded under its own pid ($ok of $K children${bad:+; entries/returns/calls:$bad})"
[ "$(calls s3 entry "$(cut -d' ' -f2 <<<"$(grep -m1 '^child ' "$DP_TMP/spawn.out")")")" -gt 0 ] &&
	[ "$(awk '{ print $1 }' "$DP_TMP/s3.ev" | sort | uniq -c | wc -l)" = 2 ]
tap_ok $? "the children's events are entries and returns of the path-wide event"
dp_lttng destroy s3 >/dev/null

# ---- a library dlopen'ed and called right after dlopen returns ----
session s4 fl_work "$LIB"
tap_ok $? "session s4: --path libfollow-lib.so --function fl_work (not mapped by anything yet)"
run dl -- dlopen "$LIB" "$N"
read -r _ pid _ n _ _ <"$DP_TMP/dl.out"
tap_ok $st "dlopen: pid $pid loaded the library and called fl_work $n times at once"
ends s4
entries=$(calls s4 entry "$pid")
returns=$(calls s4 return "$pid")
[ "$n" = "$N" ] && [ "$entries" = "$n" ] && [ "$returns" = "$n" ]
tap_ok $? "every call recorded: $entries entries, $returns returns for $n calls"
grep -q "process $pid mapped the object (dlopen): dynprobe:w_entry: installed" "$DP_TMP/dynprobed.log"
tap_ok $? "the daemon installed the probe when the agent said MAPPED"

# The same with the wait turned off: nothing holds the caller.
dp_lttng start s4 >/dev/null
run dlnowait LTTNG_DYNPROBE_REGISTER_TIMEOUT=0 -- dlopen "$LIB" "$N"
read -r _ pid2 _ n2 _ _ <"$DP_TMP/dlnowait.out"
ends s4
entries=$(calls s4 entry "$pid2")
[ "$st" = 0 ] && [ "$n2" = "$N" ] && [ "$entries" -le "$n2" ] &&
	! grep -q "process $pid2 mapped the object" "$DP_TMP/dynprobed.log"
tap_ok $? "LTTNG_DYNPROBE_REGISTER_TIMEOUT=0: no MAPPED, the program runs on ($entries of $n2 calls recorded)"

# A daemon slower to answer than the agent's default wait, and than a
# frame's time (stopped 10 s while the program starts): the program is held
# as long as it takes (its own wait, 120 s).
dp_lttng start s4 >/dev/null
kill -STOP "$DPD_PID"
(
	sleep 10
	kill -CONT "$DPD_PID"
) &
cont=$!
run dlslow -- dlopen "$LIB" "$N"
wait "$cont"
read -r _ pid3 _ n3 _ _ <"$DP_TMP/dlslow.out"
ends s4
entries=$(calls s4 entry "$pid3")
[ "$st" = 0 ] && [ "$n3" = "$N" ] && [ "$entries" = "$n3" ] &&
	grep -q "process $pid3 mapped the object (dlopen): dynprobe:w_entry: installed" "$DP_TMP/dynprobed.log"
tap_ok $? "a daemon stopped 10 s as the program starts: held until it answers, every call recorded ($entries of $n3)"

dp_lttng destroy s4 >/dev/null

# ---- lttng trace --follow-exec: the command's children, probed by pid ----
# trace_children NAME OPTS...: `lttng trace` of "follow-app spawn K NT"
# (few calls: trace's channel has the default size, and must lose none); sets
# $ok to the number of children with every call recorded, $zero to those
# with none, $children to those that ran.
trace_children() {
	local name=$1 pid n e r
	shift
	"$LTTNG" trace --no-view -o "$DP_TMP/$name" "$@" -t vpid --function fw_work -- \
		"$APP" spawn "$K" "$NT" >"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err"
	st=$?
	bt_text "$DP_TMP/$name" |
		sed -nE 's/^dynprobe:fw_work_(entry|return): .*vpid = ([0-9]+).*/\1 \2/p' \
			>"$DP_TMP/$name.ev"
	ok=0 zero=0 children=0
	while read -r _ pid _ n _ _; do
		children=$((children + 1))
		e=$(calls "$name" entry "$pid")
		r=$(calls "$name" return "$pid")
		[ "$n" = "$NT" ] && [ "$e" = "$n" ] && [ "$r" = "$n" ] && ok=$((ok + 1))
		[ "$e" = 0 ] && zero=$((zero + 1))
	done < <(grep '^pid ' "$DP_TMP/$name.out")
}
trace_children trfollow --follow-exec
[ "$st" = 0 ] && [ "$children" = "$K" ] && [ "$ok" = "$K" ]
tap_ok $? "lttng trace --follow-exec: each of the command's $K children has every call recorded ($ok of $children)"
trace_children trplain
[ "$st" = 0 ] && [ "$children" = "$K" ] && [ "$zero" = "$K" ]
tap_ok $? "lttng trace without --follow-exec: children executed with an environment of their own are not probed ($zero of $children without events)"

# ---- a stack through a library dlopen'ed after the probe was defined ----
# fw_back is probed with a backtrace (the CFI walker) before main; the
# program then dlopens the library, whose fl_call (no frame pointer) calls
# fw_back: the agent compiles the library's unwind tables when dlopen
# returns, so the walk goes through fl_call's frame to main.
read -r main_lo main_size < <(nm -S "$APP" | awk '$4 == "main" { print $1, $2 }')
back=$(nm "$APP" | awk '$3 == "fw_back" { print $1 }')
dp_lttng create s6 --output="$DP_TMP/trace-s6" >/dev/null &&
	"$LTTNG" --no-sessiond enable-event -u -s s6 --path "$APP" --function fw_back b \
		>>"$DP_TMP/lttng.log" 2>&1 &&
	"$LTTNG" --no-sessiond add-context -u -s s6 -e b -t backtrace >>"$DP_TMP/lttng.log" 2>&1 &&
	dp_lttng start s6 >/dev/null
tap_ok $? "session s6: --path follow-app --function fw_back, with backtrace (CFI)"
# 1,000 calls a millisecond apart: the session daemon enables a new event
# class asynchronously, and the first calls may come before it did.
run dlcall -- dlcall "$LIB" 1000
read -r _ pid _ n _ _ <"$DP_TMP/dlcall.out"
tap_ok $st "dlcall: pid $pid called fl_call $n times, which called fw_back"
dp_lttng stop s6 >/dev/null
bt_text "$DP_TMP/trace-s6" | grep '^dynprobe:b_entry: ' >"$DP_TMP/s6.ev"
# Each event: fw_back, then fl_call in the library, then main reached.
good=0
while read -r ev; do
	f0=$(sed -nE 's/.*\[0\] = (0x[0-9A-Fa-f]+).*/\1/p' <<<"$ev")
	[ -n "$f0" ] || continue
	bias=$((f0 - 0x$back))
	for f in $(grep -oE '\[[0-9]+\] = 0x[0-9A-Fa-f]+' <<<"$ev" | awk '{ print $3 }'); do
		a=$((f - bias))
		if [ "$a" -ge $((0x$main_lo)) ] && [ "$a" -lt $((0x$main_lo + 0x$main_size)) ]; then
			good=$((good + 1))
			break
		fi
	done
done <"$DP_TMP/s6.ev"
recorded=$(wc -l <"$DP_TMP/s6.ev")
[ "$n" = 1000 ] && [ "$recorded" -ge 1 ] && [ "$good" = "$recorded" ]
tap_ok $? "each stack recorded goes through the library to main ($good of $recorded; lengths $(grep -oE '_backtrace_length = [0-9]+' "$DP_TMP/s6.ev" | awk '{ print $3 }' | sort | uniq -c | tr -s ' \n' ' '))"
dp_lttng destroy s6 >/dev/null

# ---- a dlopen with no daemon holds nothing ----
stop_dynprobed
tap_ok $? "the daemon exits"
# A wait of 60 s: a held dlopen would take it all; a machine under load
# takes well under half of it to run the program, counted in running time
# (running-time.c: a machine that stands still for a while does not count).
RUN_TIMED=("$builddir/running-time" "$DP_TMP/dlnodaemon.time")
run dlnodaemon LTTNG_DYNPROBE_REGISTER_TIMEOUT=60000 -- dlopen "$LIB" 1000
RUN_TIMED=()
read -r _ _ _ n _ _ <"$DP_TMP/dlnodaemon.out"
ran=$(sed -n 's/^ran_ms=\([0-9]*\) .*/\1/p' "$DP_TMP/dlnodaemon.time")
[ "$st" = 0 ] && [ "$n" = 1000 ] && [ -n "$ran" ] && [ "$ran" -lt 30000 ]
tap_ok $? "no daemon: the program's dlopen is not held ($(cat "$DP_TMP/dlnodaemon.time"))"
tap_done
