#!/bin/bash
# lttng enable-event --follow-exec on a process that runs already (--pid,
# the agent injected): the children it starts afterwards by fork+execve,
# fork+execle, fork+execvpe, posix_spawn, and a child that clears its
# environment before it executes again, all start with the agent and have
# every call recorded under their own pid; without the flag, none has the
# agent; after the event is disabled, or its session destroyed, new
# children start without it, unless another event asking for it remains;
# save and load keep the flag (and a loaded session follows again).  Counts come from the children's own counters,
# and whether the agent is there from their own maps.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

LTTNG=$abs_top_builddir/src/bin/lttng/lttng
export LTTNG_DYNPROBE_STOCK_LTTNG=${STOCK:-/usr/bin/lttng}
export LTTNG_DYNPROBE_AGENT=$AGENT
export LTTNG_DYNPROBE_DAEMON=$DPD
APP=$builddir/follow-app
N=20000
K=4

# session NAME PID [OPTS...]: a session whose channel holds every event of
# the runs, with vpid, --pid PID --function fw_work of follow-app enabled
# with OPTS, started.
session() {
	local name=$1 pid=$2
	shift 2
	dp_lttng create "$name" --output="$DP_TMP/trace-$name" >/dev/null &&
		dp_lttng enable-channel -u -s "$name" big --subbuf-size=8M --num-subbuf=8 >/dev/null &&
		dp_lttng add-context -u -s "$name" -c big -t vpid >/dev/null &&
		dp_lttng enable-event -u -s "$name" -c big --pid "$pid" --path "$APP" \
			--function fw_work w "$@" >/dev/null &&
		dp_lttng start "$name" >/dev/null
}

# server NAME: follow-app serve K N in the background, its stdin a pipe
# held open on descriptor 7 (NAME a), 8 (NAME b); its pid in $spid.
server() {
	local i
	mkfifo "$DP_TMP/$1.in"
	"$APP" serve "$K" "$N" <"$DP_TMP/$1.in" >"$DP_TMP/$1.out" 2>"$DP_TMP/$1.err" &
	spid=$!
	DP_TARGETS="$DP_TARGETS $spid"
	if [ "$1" = a ]; then exec 7>"$DP_TMP/$1.in"; else exec 8>"$DP_TMP/$1.in"; fi
	for i in $(seq 600); do
		grep -q '^ready' "$DP_TMP/$1.out" && return 0
		sleep 0.05
	done
	return 1
}

# round NAME R: the server starts its children (round R) and waits for
# them; $DP_TMP/NAME.rR holds their lines.  The wait ends when the server
# says the round is over, or when it died.
round() {
	local name=$1 r=$2 fd
	[ "$name" = a ] && fd=7 || fd=8
	echo go >&"$fd"
	while ! grep -q "^round $r " "$DP_TMP/$name.out"; do
		kill -0 "$(pid_of "$name")" 2>/dev/null || return 1
		sleep 0.1
	done
	# The lines of this round: after the previous round's end.
	awk -v r="$r" '/^round / { n++; if (n == r) exit; next } n == r - 1' \
		"$DP_TMP/$name.out" >"$DP_TMP/$name.r$r"
	grep -q "^round $r children $((K + 1)) failed 0\$" "$DP_TMP/$name.out"
}

pid_of() {
	sed -nE 's/^ready pid ([0-9]+)$/\1/p' "$DP_TMP/$1.out"
}

# ends SESSION: stops it and reads its trace into $DP_TMP/SESSION.ev
# ("entry|return VPID" lines).
ends() {
	dp_lttng stop "$1" >/dev/null
	bt_text "$DP_TMP/trace-$1" |
		sed -nE 's/^dynprobe:w_(entry|return): \{ cpu_id = [0-9]+ \}, \{ vpid = ([0-9]+) \}.*/\1 \2/p' \
			>"$DP_TMP/$1.ev"
}

calls() {
	grep -c "^$2 $3\$" "$DP_TMP/$1.ev"
}

# check SESSION FILE: for the children whose lines FILE holds, sets
# $children (that ran: a "pid" line), $agents (with the agent), $full
# (every call recorded, entries and returns), $none (no event), $bad.
check() {
	local pid n e r
	children=0 agents=0 full=0 none=0 bad=
	while read -r _ pid _ n _ _; do
		children=$((children + 1))
		grep -q "^agent $pid yes\$" "$2" && agents=$((agents + 1))
		e=$(calls "$1" entry "$pid")
		r=$(calls "$1" return "$pid")
		if [ "$n" = "$N" ] && [ "$e" = "$n" ] && [ "$r" = "$n" ]; then
			full=$((full + 1))
		else
			bad="$bad $pid:$e/$r/$n"
		fi
		[ "$e" = 0 ] && [ "$r" = 0 ] && none=$((none + 1))
	done < <(grep '^pid ' "$2")
}

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
KIDS=$((K + 1))

# ---- a running process, probed by pid, following its children ----
server a
tap_ok $? "a running process (pid $spid) waits for its orders, no agent preloaded"
A=$spid
session f1 "$A" --follow-exec
tap_ok $? "session f1: --pid $A --function fw_work --follow-exec, started"
out=$("$LTTNG" --no-sessiond list f1 2>&1)
grep -q "pid $A, following executed programs" <<<"$out"
tap_ok $? "lttng list says the event follows executed programs" || tap_diag "$out"
doc=$("$LTTNG" --no-sessiond --mi xml list f1 2>/dev/null)
[ "$(xmllint --xpath "string(//*[local-name()='follow_exec'])" - <<<"$doc" 2>/dev/null)" = true ]
tap_ok $? "--mi xml list: dp:follow_exec is true" || tap_diag "$doc"

round a 1
tap_ok $? "round 1: $KIDS children (fork+execve, fork+execle, fork+execvpe, posix_spawn, one that clears its environment and executes again) exit 0"
ends f1
check f1 "$DP_TMP/a.r1"
[ "$children" = "$KIDS" ] && [ "$agents" = "$KIDS" ]
tap_ok $? "every child started with the agent ($agents of $children)"
[ "$full" = "$KIDS" ]
tap_ok $? "every call of every child recorded under its own pid ($full of $children${bad:+; entries/returns/calls:$bad})"

# ---- save and load keep the flag ----
dp_lttng save f1 -o "$DP_TMP/saved" >/dev/null
tap_ok $? "save f1 -o DIR"
grep -q "^event .* follow-exec=1" "$DP_TMP/saved/f1.lttng"
tap_ok $? "the saved event says follow-exec=1" || tap_diag_file "$DP_TMP/saved/f1.lttng"

dp_lttng destroy f1 >/dev/null
session f0 "$A"
tap_ok $? "session f1 destroyed; session f0: the same event without --follow-exec"
round a 2
tap_ok $? "round 2: the children exit 0"
ends f0
check f0 "$DP_TMP/a.r2"
[ "$children" = "$KIDS" ] && [ "$agents" = 0 ] && [ "$none" = "$KIDS" ]
tap_ok $? "the destroyed session's event no longer follows: no child has the agent ($agents), none recorded ($none of $children without events)"
dp_lttng destroy f0 >/dev/null

dp_lttng load -i "$DP_TMP/saved/f1.lttng" f1 >/dev/null && dp_lttng start f1 >/dev/null
tap_ok $? "load f1 and start it"
out=$("$LTTNG" --no-sessiond list f1 2>&1)
grep -q "pid $A, following executed programs" <<<"$out"
tap_ok $? "the loaded event follows executed programs" || tap_diag "$out"
round a 3
tap_ok $? "round 3: the children exit 0"
ends f1
check f1 "$DP_TMP/a.r3"
[ "$children" = "$KIDS" ] && [ "$agents" = "$KIDS" ] && [ "$full" = "$KIDS" ]
tap_ok $? "after load, every child has the agent ($agents) and every call recorded ($full of $children${bad:+;$bad})"

# ---- disabled: new children are not followed ----
dp_lttng start f1 >/dev/null
dp_lttng disable-event -u -s f1 -c big w >/dev/null
tap_ok $? "disable-event w"
round a 4
tap_ok $? "round 4: the children exit 0"
ends f1
check f1 "$DP_TMP/a.r4"
[ "$children" = "$KIDS" ] && [ "$agents" = 0 ] && [ "$none" = "$KIDS" ]
tap_ok $? "after disable-event, no new child has the agent ($agents of $children) nor events ($none without)"
dp_lttng destroy f1 >/dev/null

# ---- two events asking for it: follow mode stays while one remains ----
session f3 "$A" --follow-exec && session f4 "$A" --follow-exec
tap_ok $? "sessions f3 and f4: the same --pid $A event with --follow-exec in each"
dp_lttng destroy f3 >/dev/null
round a 5
tap_ok $? "round 5, f3 destroyed: the children exit 0"
ends f4
check f4 "$DP_TMP/a.r5"
[ "$children" = "$KIDS" ] && [ "$agents" = "$KIDS" ] && [ "$full" = "$KIDS" ]
tap_ok $? "f4's event still follows: every child has the agent ($agents) and every call recorded in f4 ($full of $children${bad:+;$bad})"
dp_lttng destroy f4 >/dev/null
round a 6
tap_ok $? "round 6, f4 destroyed too: the children exit 0"
check f4 "$DP_TMP/a.r6"
[ "$children" = "$KIDS" ] && [ "$agents" = 0 ]
tap_ok $? "with no event asking for it, no new child has the agent ($agents of $children)"

# ---- without --follow-exec: children run without the agent ----
server b
B=$spid
session f2 "$B"
tap_ok $? "another running process (pid $B), its event enabled without --follow-exec"
round b 1
tap_ok $? "its round: the children exit 0"
ends f2
check f2 "$DP_TMP/b.r1"
[ "$children" = "$KIDS" ] && [ "$agents" = 0 ] && [ "$none" = "$KIDS" ]
tap_ok $? "without --follow-exec no child has the agent ($agents of $children) nor events ($none without)"
dp_lttng destroy f2 >/dev/null

# The servers end with their input.
exec 7>&- 8>&-
wait "$A" "$B"
tap_ok $? "both running processes exit 0 once their input ends"
tap_done
