#!/bin/bash
# A daemon killed (SIGKILL) with patches planned together for two events
# (combine.c: dp_c_redirect_ret's and dp_c_led_ret's windows meet) and
# restarted: the new daemon adopts every site of both events, though a
# patch planned together is not one of its event's own plan; they record
# every call the program counts; after their removal every byte of the
# program's code is the file's.  The same after one of the two was
# disabled before the kill (the other's patches stay as planned with it),
# and after the other's session was destroyed while no daemon ran: the
# patches planned with it are restored, and the event left gets its sites
# back on its own.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

T=$builddir/led-target
ROUNDS=3000

# text_same PID: every byte of the target's executable segments in PID is
# the file's.
text_same() {
	local v sz
	while read -r v sz; do
		[ "$(site_bytes "$1" "$(runtime_addr "$1" "$T" "$v")" "$sz")" = \
			"$(file_bytes "$(realpath "$T")" "$v" "$sz")" ] || return 1
	done < <(readelf -lW "$T" | awk '$1 == "LOAD" && $0 ~ /R E|RWE/ { print strtonum($3), strtonum($5) }')
}

# connects PID: how many times PID's agent connected to a daemon so far.
connects() {
	grep -c "agent of process $1 connected" "$DP_TMP/dynprobed.log"
}

# restart PID: SIGKILL the daemon, start another, wait until PID's agent
# said HELLO to it and its pending work is done (its GO logged).
restart() {
	local c i
	kill_dynprobed
	c=$(connects "$1")
	start_dynprobed || tap_bail "lttng-dynprobed does not start again"
	for i in $(seq 400); do
		[ "$(connects "$1")" -gt "$c" ] && return 0
		sleep 0.1
	done
	return 1
}

# listed SESSION PID EVENT JUMPS: the daemon lists EVENT of SESSION with
# JUMPS jump sites (and no int3) in PID (10 s: its pending work after HELLO
# may still run).
listed() {
	local i s=$1
	shift
	for i in $(seq 300); do
		dpctl list "$s" && grep -qE "event=$2 .*procs=$1:$3:0( |$)" "$DP_TMP/out" && return 0
		sleep 0.1
	done
	return 1
}

# pair NAME SRR SLR: a target NAME started (its pid in pid), rr enabled in
# it in session SRR, then lr in session SLR: their windows meet, the two
# are planned together (3 jump sites in all).
pair() {
	start_target "$1" env LD_PRELOAD="$AGENT" "$T" count "$DP_TMP/go-$1" "$ROUNDS" ||
		tap_bail "the target does not start"
	pid=$TARGET_PID
	dpctl enable "$2" channel0 rr function dp_c_redirect_ret "$T" -p "$pid" &&
		dpctl enable "$3" channel0 lr function dp_c_led_ret "$T" -p "$pid" &&
		out_has "^proc pid=$pid status=0 jump=3 int3=0"
}

# lr_alone NAME SESSION: target NAME makes its rounds; SESSION recorded
# each call of dp_c_led_ret (lr) and none of rr; lr disabled, the code is
# the file's again; the target ends with every result right.
lr_alone() {
	counted "$1"
	tap_ok $? "the target made its rounds: $(grep '^counts' "$DP_TMP/$1.out")"
	seen "$2" "dynprobe:lr_return>$((lr - 1))"
	[ "$(count dynprobe:lr_entry)" -eq "$lr" ] && [ "$(count dynprobe:lr_return)" -eq "$lr" ] &&
		[ "$(count dynprobe:rr_entry)" -eq 0 ] && [ "$(count dynprobe:rr_return)" -eq 0 ]
	tap_ok $? "dp_c_led_ret: $(count dynprobe:lr_entry) entries, $(count dynprobe:lr_return) returns for $lr calls; rr: $(count dynprobe:rr_entry) records"
	dpctl disable "$2" channel0 lr && text_same "$pid"
	tap_ok $? "lr disabled: every byte of the target's code is the file's"
	kill -TERM "$pid"
	wait "$pid"
	tap_ok $? "every result the target computed was right: $(tail -n1 "$DP_TMP/$1.out")"
}

# counted NAME: the target's counts once it made its rounds, in the shell
# variables rr lr (calls of each function).
counted() {
	local i
	touch "$DP_TMP/go-$1"
	for i in $(seq 300); do
		grep -q '^counts' "$DP_TMP/$1.out" && break
		sleep 0.1
	done
	read -r rr lr < <(sed -nE 's/^counts rr=([0-9]+) rr_neg=[0-9]+ lr=([0-9]+) .*/\1 \2/p' "$DP_TMP/$1.out")
	[ -n "$lr" ] && [ "$rr" -gt 0 ] && [ "$lr" -gt 0 ]
}

start_sessiond || tap_bail "no session daemon"
dp_lttng create s --output="$DP_TMP/trace-s" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start s >/dev/null ||
	tap_bail "cannot create the session"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"

start_target one env LD_PRELOAD="$AGENT" "$T" count "$DP_TMP/go-one" "$ROUNDS" ||
	tap_bail "the target does not start"
pid=$TARGET_PID
dpctl enable s channel0 rr function dp_c_redirect_ret "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=4 int3=0"
tap_ok $? "--function dp_c_redirect_ret: $(grep '^proc' "$DP_TMP/out")"
dpctl enable s channel0 lr function dp_c_led_ret "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=3 int3=0"
tap_ok $? "--function dp_c_led_ret: $(grep '^proc' "$DP_TMP/out")"
grep -qE "process $pid: [0-9]+ patches replaced by [0-9]+ planned together for 2 events" \
	"$DP_TMP/dynprobed.log"
tap_ok $? "their windows meet: planned together ($(grep -m1 -oE 'process [0-9]+: [0-9]+ patches replaced by .*' "$DP_TMP/dynprobed.log"))"
removed=$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")
restart "$pid"
tap_ok $? "the daemon killed and started again: the agent says HELLO to the new one"
listed s "$pid" rr 4 && listed s "$pid" lr 3
tap_ok $? "the new daemon adopts every site of both: $(grep '^dyn' "$DP_TMP/out" | sed 's/.*\(event=[a-z]*\).*\(procs=[^ ]*\).*/\1 \2/' | tr '\n' ' ')"
[ "$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")" -eq "$removed" ]
tap_ok $? "and restores none of their patches as no event's"
counted one
tap_ok $? "the target made its rounds: $(grep '^counts' "$DP_TMP/one.out")"
seen s "dynprobe:rr_entry>$((rr - 1))" "dynprobe:lr_return>$((lr - 1))"
[ "$(count dynprobe:rr_entry)" -eq "$rr" ] && [ "$(count dynprobe:rr_return)" -eq "$rr" ]
tap_ok $? "dp_c_redirect_ret: $(count dynprobe:rr_entry) entries, $(count dynprobe:rr_return) returns for $rr calls"
[ "$(count dynprobe:lr_entry)" -eq "$lr" ] && [ "$(count dynprobe:lr_return)" -eq "$lr" ]
tap_ok $? "dp_c_led_ret: $(count dynprobe:lr_entry) entries, $(count dynprobe:lr_return) returns for $lr calls"
dpctl disable s channel0 rr && ! text_same "$pid"
tap_ok $? "rr disabled: dp_c_led_ret stays patched"
listed s "$pid" lr 3
tap_ok $? "with its 3 sites: $(grep '^dyn' "$DP_TMP/out" | grep -o 'procs=[^ ]*' | tr '\n' ' ')"
dpctl disable s channel0 lr && text_same "$pid"
tap_ok $? "lr disabled: every byte of the target's code is the file's"
kill -TERM "$pid"
wait "$pid"
tap_ok $? "every result the target computed was right: $(tail -n1 "$DP_TMP/one.out")"
# ---- one of the two disabled before the kill ----
dp_lttng destroy s >/dev/null &&
	dp_lttng create t --output="$DP_TMP/trace-t" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start t >/dev/null ||
	tap_bail "cannot create the second session"
pair two t t
tap_ok $? "both installed again, planned together: $(grep '^proc' "$DP_TMP/out")"
dpctl disable t channel0 rr && listed t "$pid" lr 3
tap_ok $? "rr disabled: lr keeps its 3 sites"
removed=$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")
restart "$pid"
tap_ok $? "the daemon killed and started again"
listed t "$pid" lr 3
tap_ok $? "the new daemon adopts every site of lr: $(grep '^dyn' "$DP_TMP/out" | grep -o 'procs=[^ ]*' | tr '\n' ' ')"
[ "$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")" -eq "$removed" ]
tap_ok $? "and restores none of its patches as no event's"
lr_alone two t
# ---- the other's session destroyed while no daemon runs ----
# The target is stopped across the restart, so that its agent says HELLO
# only after the new daemon dropped the destroyed session's event: the
# patches it reports were planned with an event that no longer exists.
dp_lttng destroy t >/dev/null &&
	dp_lttng create u --output="$DP_TMP/trace-u" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start u >/dev/null &&
	dp_lttng create v --output="$DP_TMP/trace-v" >/dev/null &&
	dp_lttng enable-event -u -s v 'dynprobe:*' >/dev/null && dp_lttng start v >/dev/null ||
	tap_bail "cannot create the third sessions"
pair three u v
tap_ok $? "rr in session u, lr in session v, planned together: $(grep '^proc' "$DP_TMP/out")"
removed=$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")
c=$(connects "$pid")
kill -STOP "$pid"
kill_dynprobed
dp_lttng destroy u >/dev/null
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
logged "session u no longer exists"
tap_ok $? "the new daemon drops rr: its session went while no daemon ran"
kill -CONT "$pid"
for i in $(seq 400); do
	[ "$(connects "$pid")" -gt "$c" ] && break
	sleep 0.1
done
listed v "$pid" lr 3
tap_ok $? "lr has its 3 sites in the process again: $(grep '^dyn' "$DP_TMP/out" | grep -o 'procs=[^ ]*' | tr '\n' ' ')"
[ "$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")" -gt "$removed" ]
tap_ok $? "the patches planned with rr are restored ($(($(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log") - removed)))"
lr_alone three v
tap_done
