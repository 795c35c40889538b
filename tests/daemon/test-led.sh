#!/bin/bash
# Sites that only a redirect or a led window gives a jump (patch/plan.h,
# DP_PLAN_REDIRECT), installed by the daemon: the engine's corpus functions
# (led-target.c) probed with --function and --probe, hits counted against
# the program's own counters, every byte of its code compared to the file
# after removal; a daemon killed between the led branches and the window
# (and between the window and the branches when removing) leaves the
# program running and computing right, and a new daemon restores or adopts
# every byte; a daemon killed with leds in place hands them to the next.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

T=$builddir/led-target
ROUNDS=3000

# text_same PID [PATH]: every byte of the code of PATH (the target's by
# default: its executable segments) in PID is the file's.
text_same() {
	local v sz path=${2:-$T}
	while read -r v sz; do
		[ "$(site_bytes "$1" "$(runtime_addr "$1" "$path" "$v")" "$sz")" = \
			"$(file_bytes "$(realpath "$path")" "$v" "$sz")" ] || return 1
	done < <(readelf -lW "$path" | awk '$1 == "LOAD" && $0 ~ /R E|RWE/ { print strtonum($3), strtonum($5) }')
}

# connects PID: how many times PID's agent connected to a daemon so far.
connects() {
	grep -c "agent of process $1 connected" "$DP_TMP/dynprobed.log"
}

# agent_back PID N: PID's agent connected more than N times (40 s): the
# restarted daemon knows it again.
agent_back() {
	local i
	for i in $(seq 400); do
		[ "$(connects "$1")" -gt "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# settled PID: the pending work of PID's reconnection done (its GO sent).
settled() {
	local i
	for i in $(seq 200); do
		text_same "$1" && return 0
		sleep 0.1
	done
	return 1
}

start_sessiond || tap_bail "no session daemon"
dp_lttng create s --output="$DP_TMP/trace-s" >/dev/null &&
	dp_lttng enable-event -u 'dynprobe:*' >/dev/null && dp_lttng start s >/dev/null ||
	tap_bail "cannot create the session"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"

# ---- hits counted: a redirect through a hop, a led window, a .cold redirect ----
start_target count env LD_PRELOAD="$AGENT" "$T" count "$DP_TMP/go" "$ROUNDS" ||
	tap_bail "the target does not start"
pid=$TARGET_PID
cold=$(( $(sym_vaddr "$T" dp_c_redirect_next) - 1 ))
dpctl enable s channel0 rr function dp_c_redirect_ret "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=4 int3=0"
tap_ok $? "--function dp_c_redirect_ret: every site a jump: $(grep '^proc' "$DP_TMP/out")"
dpctl enable s channel0 lr function dp_c_led_ret "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=3 int3=0"
tap_ok $? "--function dp_c_led_ret: every site a jump: $(grep '^proc' "$DP_TMP/out")"
dpctl enable s channel0 rc probe "$cold" "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=1 int3=0"
tap_ok $? "--probe at the .cold part's ret: a jump: $(grep '^proc' "$DP_TMP/out")"
dpctl enable s channel0 ir function dp_c_inner_ret "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=3 int3=0"
tap_ok $? "--function dp_c_inner_ret (its first ret only a window holding the je reaches): every site a jump: $(grep '^proc' "$DP_TMP/out")"
rr_ret=$(objdump -d --no-show-raw-insn "$T" |
	awk '/<dp_c_redirect_ret>:/ { f = 1; next } f && /^$/ { exit } f && /\tret/ { n++; if (n == 2) { sub(":", "", $1); print $1; exit } }')
[ -n "$rr_ret" ] && [ "$(site_bytes "$pid" $((0x$rr_ret)) 1)" = c3 ] &&
	[ "$(site_bytes "$pid" $((cold - 3)) 4)" = "$(file_bytes "$T" $((cold - 3)) 4)" ] &&
	! text_same "$pid"
tap_ok $? "the redirected sites keep their bytes (ret at 0x$rr_ret, the .cold part), the code around them does not"

touch "$DP_TMP/go"
for i in $(seq 200); do
	grep -q '^counts' "$DP_TMP/count.out" && break
	sleep 0.1
done
read -r rr rr_neg lr lr_odd lr_sum rc rc_neg ir ir_even ir_sum < <(awk '/^counts / {
	for (i = 2; i <= NF; i++) { sub(/^[a-z_]+=/, "", $i); printf "%s ", $i } print "" }' "$DP_TMP/count.out")
[ -n "$ir_sum" ] && [ "$rc_neg" -gt 0 ] && [ "$lr_odd" -gt 0 ] && [ "$ir_even" -gt 0 ]
tap_ok $? "the target made its rounds: $(grep '^counts' "$DP_TMP/count.out")"
seen s "dynprobe:rr_entry>$((rr - 1))" "dynprobe:rr_return>$((rr - 1))" \
	"dynprobe:lr_entry>$((lr - 1))" "dynprobe:lr_return>$((lr - 1))" "dynprobe:rc>$((rc_neg - 1))" \
	"dynprobe:ir_entry>$((ir - 1))" "dynprobe:ir_return>$((ir - 1))"
[ "$(count dynprobe:rr_entry)" -eq "$rr" ] && [ "$(count dynprobe:rr_return)" -eq "$rr" ]
tap_ok $? "dp_c_redirect_ret: $(count dynprobe:rr_entry) entries, $(count dynprobe:rr_return) returns for $rr calls"
[ "$(count dynprobe:lr_entry)" -eq "$lr" ] && [ "$(count dynprobe:lr_return)" -eq "$lr" ]
tap_ok $? "dp_c_led_ret: $(count dynprobe:lr_entry) entries, $(count dynprobe:lr_return) returns for $lr calls"
[ "$(count dynprobe:rc)" -eq "$rc_neg" ]
tap_ok $? "the .cold ret: $(count dynprobe:rc) hits for $rc_neg calls that take it"
# The return events carry the values the program saw: their sum is its.
sum=$(sed -nE 's/^dynprobe:lr_return: .*ret = (-?[0-9]+).*/\1/p' "$DP_TMP/events" |
	awk '{ s += $1 } END { print s + 0 }')
[ "$sum" -eq "$lr_sum" ]
tap_ok $? "dp_c_led_ret's return events record what it returned (sum $sum, the program's $lr_sum)"

[ "$(count dynprobe:ir_entry)" -eq "$ir" ] && [ "$(count dynprobe:ir_return)" -eq "$ir" ]
tap_ok $? "dp_c_inner_ret: $(count dynprobe:ir_entry) entries, $(count dynprobe:ir_return) returns for $ir calls ($ir_even through the je inside the window)"
sum=$(sed -nE 's/^dynprobe:ir_return: .*ret = (-?[0-9]+).*/\1/p' "$DP_TMP/events" |
	awk '{ s += $1 } END { print s + 0 }')
[ "$sum" -eq "$ir_sum" ]
tap_ok $? "dp_c_inner_ret's return events record what it returned (sum $sum, the program's $ir_sum)"

dpctl disable s channel0 rr && dpctl disable s channel0 lr && dpctl disable s channel0 rc &&
	dpctl disable s channel0 ir && text_same "$pid"
tap_ok $? "all four out: every byte of the target's code is the file's"
kill -TERM "$pid"
wait "$pid"
tap_ok $? "every result it computed was right: $(tail -n1 "$DP_TMP/count.out")"

# ---- a daemon killed between the led branches and the window ----
# The session records only when asked below: the threads spin.
dp_lttng stop s >/dev/null
stop_dynprobed
start_dynprobed --test-fault led || tap_bail "lttng-dynprobed does not start"
start_target spin env LD_PRELOAD="$AGENT" "$T" spin 2 || tap_bail "the target does not start"
pid=$TARGET_PID
dpctl enable s channel0 lr function dp_c_led_ret "$T" -p "$pid"
died led
tap_ok $? "the daemon died between writing the branches and the window"
DPD_PID=
sleep 0.3
kill -0 "$pid" && ! text_same "$pid"
tap_ok $? "the target runs on, its branches led to a trampoline whose window is not written"
c=$(connects "$pid")
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
agent_back "$pid" "$c" && settled "$pid"
tap_ok $? "a new daemon restores every byte of the half-written patch"
grep -q "recovered 1 leds" "$DP_TMP/dynprobed.log"
tap_ok $? "it learnt of the led from the agent: $(grep -m1 'recovered .* leds' "$DP_TMP/dynprobed.log")"

# ---- a daemon killed with leds in place: the next one adopts them ----
# A led window and a redirect, each planned alone (patches that meet are
# planned together: test-combine-adopt covers their adoption).
dpctl enable s channel0 lr function dp_c_led_ret "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=3 int3=0"
tap_ok $? "the led window's function installed again: $(grep '^proc' "$DP_TMP/out")"
dpctl enable s channel0 rc probe "$cold" "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=1 int3=0"
tap_ok $? "and the .cold redirect: $(grep '^proc' "$DP_TMP/out")"
kill_dynprobed
c=$(connects "$pid")
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
agent_back "$pid" "$c"
for i in $(seq 300); do
	dpctl list s
	grep -q "event=lr .*procs=$pid:" "$DP_TMP/out" && grep -q "event=rc .*procs=$pid:" "$DP_TMP/out" && break
	sleep 0.1
done
grep -q "event=lr .*procs=$pid:3:0" "$DP_TMP/out" && grep -q "event=rc .*procs=$pid:1:0" "$DP_TMP/out" &&
	! text_same "$pid"
tap_ok $? "a new daemon adopts them, in place: $(grep '^dyn' "$DP_TMP/out" | sed 's/.*\(event=[a-z]*\).*\(procs=.*\)/\1 \2/' | tr '\n' ' ')"
n0=$(bt_count "$DP_TMP/trace-s" | cut -d' ' -f1)
dp_lttng start s >/dev/null && sleep 1 && dp_lttng stop s >/dev/null
n1=$(bt_count "$DP_TMP/trace-s" | cut -d' ' -f1)
[ "$n1" -gt "$n0" ]
tap_ok $? "they record on ($n0, then $n1 events in the trace)"

# ---- removal killed between the window and the branches ----
stop_dynprobed
tap_ok $? "SIGTERM takes everything out"
text_same "$pid"
tap_ok $? "and every byte of the code is the file's"
c=$(connects "$pid")
start_dynprobed --test-fault unled || tap_bail "lttng-dynprobed does not start"
agent_back "$pid" "$c"
dpctl enable s channel0 lr function dp_c_led_ret "$T" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=3 int3=0"
tap_ok $? "installed by a daemon that will die removing it"
dpctl disable s channel0 lr
died unled
tap_ok $? "the daemon died between restoring the window and the branches"
DPD_PID=
sleep 0.3
kill -0 "$pid"
tap_ok $? "the target runs on"
c=$(connects "$pid")
d=$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
agent_back "$pid" "$c"
for i in $(seq 300); do
	[ "$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")" -gt "$d" ] && break
	sleep 0.1
done
[ "$(grep -c "no event claims is removed" "$DP_TMP/dynprobed.log")" -gt "$d" ]
tap_ok $? "a new daemon restores the half-removed patch (its event's disable never completed)"
for i in $(seq 300); do
	dpctl list s
	grep -q "event=lr .*procs=$pid:3:0" "$DP_TMP/out" && break
	sleep 0.1
done
dpctl disable s channel0 lr && text_same "$pid"
tap_ok $? "the event, still enabled, installed again, then disabled: every byte is the file's"
kill -TERM "$pid"
wait "$pid"
tap_ok $? "every result the spinning threads computed was right: $(tail -n1 "$DP_TMP/spin.out")"

# ---- every function of libsqlite3, the sqlite3 shell's output unchanged ----
LIB=$(ldd "$(command -v sqlite3)" | awk '/libsqlite3/ { print $3 }')
cat >"$DP_TMP/work.sql" <<'SQL'
create table t(a integer primary key, b text, c real);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
insert into t select i, printf('row %d %s', i, hex(i * 7919)), i * 1.5 / 7 from n;
create index tb on t(b);
select count(*), sum(a), round(avg(c), 6), min(b), max(b) from t;
select a % 17 as k, count(*), group_concat(a, ',') filter (where a < 200) from t group by k order by k;
select b from t where b like 'row 1%7 %' order by c desc limit 20;
select upper(substr(b, 1, 9)), length(b), instr(b, 'A') from t where a in (3, 33, 333, 3333);
create table u as select a, c from t where a % 3 = 0;
select count(*), sum(t.c - u.c) from t join u using (a);
select json_group_array(a) from (select a from t order by c limit 10);
.print done
SQL
ref=$(sqlite3 :memory: <"$DP_TMP/work.sql" 2>&1)
mkfifo "$DP_TMP/sql.in"
env LD_PRELOAD="$AGENT" sqlite3 :memory: <"$DP_TMP/sql.in" >"$DP_TMP/sql.out" 2>&1 &
pid=$!
DP_TARGETS="$DP_TARGETS $pid"
exec 7>"$DP_TMP/sql.in"
dp_lttng start s >/dev/null
dpctl enable s channel0 sq function '*' "$LIB" -p "$pid" &&
	out_has "^proc pid=$pid status=0 "
tap_ok $? "--function '*' in $LIB: $(grep '^proc' "$DP_TMP/out" | cut -d' ' -f1-6)"
! text_same "$pid" "$LIB"
tap_ok $? "its code is patched"
cat "$DP_TMP/work.sql" >&7
for i in $(seq 600); do
	grep -q '^done' "$DP_TMP/sql.out" && break
	sleep 0.1
done
dp_lttng stop s >/dev/null
[ "$(bt_count "$DP_TMP/trace-s" | cut -d' ' -f1)" -gt "$n1" ]
tap_ok $? "its functions recorded ($(bt_count "$DP_TMP/trace-s" | cut -d' ' -f1) events in the trace, $n1 before)"
dpctl disable s channel0 sq && text_same "$pid" "$LIB"
tap_ok $? "disabled: every byte of $LIB's code is the file's"
exec 7>&-
wait "$pid"
[ "$(cat "$DP_TMP/sql.out")" = "$ref" ]
tap_ok $? "the sqlite3 shell's output is the same as without probes ($(wc -l <"$DP_TMP/sql.out") lines)"
stop_dynprobed
tap_done
