#!/bin/bash
# Installs at the scale of a whole program: --function over the 10,000
# functions of wide-fns (70,000 entry and return sites) in one request, in
# one stop of the target; every call the program makes is recorded (the
# program counts its own calls); the removal in one stop puts back the
# file's bytes exactly.  The same with an agent that speaks the protocol
# before the batches (minor 2: one message per probe and patch), and a
# request that fails midway (the agent's probe table full, or its code
# memory) leaves the target as it was, with a message saying why.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

WIDE=$builddir/wide-fns
ROUNDS=2

. "$top_srcdir/tests/daemon/wide.sh"

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"
for s in wide old full; do
	dp_lttng create "$s" --output="$DP_TMP/trace-$s" >/dev/null &&
		dp_lttng enable-channel -u -s "$s" --subbuf-size=1M --num-subbuf=16 big \
			>/dev/null &&
		dp_lttng enable-event -u -s "$s" -c big "dynprobe:$s*" >/dev/null &&
		dp_lttng start "$s" >/dev/null || tap_bail "cannot create session $s"
done

# ---- the whole program in one request ----
start_target wide "$WIDE" rounds "$ROUNDS" || tap_bail "wide-fns does not start"
pid=$TARGET_PID
from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
dpctl enable wide big wide function 'dp_w_*' "$WIDE" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=[0-9]+ int3=[0-9]+ refused=0 "
tap_ok $? "--function 'dp_w_*' in one request: $(grep '^proc' "$DP_TMP/out" | cut -c1-200)"
sites=$(sed -nE 's/^proc .* jump=([0-9]+) int3=([0-9]+) .*/\1 + \2/p' "$DP_TMP/out")
[ $((sites)) -eq 70000 ]
tap_ok $? "every entry and every return site of the 10,000 functions: $sites"
batch=$(tail -n +"$from" "$DP_TMP/dynprobed.log" | grep "process $pid: a batch of")
[ "$(echo "$batch" | grep -c .)" -eq 1 ] && echo "$batch" | grep -q "a batch of 70000 sites in 1 stops"
tap_ok $? "written in one stop of the target: ${batch#*info: }"
tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "process $pid: 70000 trampolines, .* of code memory" &&
	out_has "^proc pid=$pid .*message=70000 trampolines, [0-9.]+ [KM]iB \(in all in the process"
tap_ok $? "the memory its trampolines take is said: $(sed -nE 's/^proc .*message=//p' "$DP_TMP/out")"
ping_until wide wide
tap_ok $? "the events record (after $(grep -c '^pinged' "$DP_TMP/wide.out") pings)"
read -r calls pings < <(run_rounds wide)
[ -n "$calls" ] && [ "$calls" -eq $((ROUNDS * 10000)) ]
tap_ok $? "the program called each function $ROUNDS times, every result right: ${calls:-none} calls"
read -r entries returns discarded < <(recorded wide wide)
[ "$entries" -eq $((calls + pings)) ] && [ "$returns" -eq $((calls + pings)) ] &&
	[ "$discarded" -eq 0 ]
tap_ok $? "every call recorded at its entry and its return: $entries entries, $returns returns for $calls + $pings calls ($discarded discarded)"
from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
dpctl disable wide big wide && out_has "^proc pid=$pid status=0 "
tap_ok $? "DISABLE in one request: $(grep '^proc' "$DP_TMP/out")"
batch=$(tail -n +"$from" "$DP_TMP/dynprobed.log" | grep "process $pid: a batch of")
echo "$batch" | grep -q "a batch of 70000 sites in 1 stops"
tap_ok $? "restored in one stop: ${batch#*info: }"
text_same "$pid"
tap_ok $? "the program's code is the file's again, byte for byte"
kill -0 "$pid"
tap_ok $? "the program runs on"

# ---- an agent before the batches (protocol 1.2) ----
start_target old env LTTNG_DYNPROBE_PROTO_MINOR=2 "$WIDE" rounds 1 ||
	tap_bail "wide-fns does not start"
pid=$TARGET_PID
from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
dpctl enable old big old function 'dp_w_10*' "$WIDE" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=[0-9]+ int3=[0-9]+ refused=0 "
tap_ok $? "an agent of protocol 1.2: 1,000 functions installed: $(grep '^proc' "$DP_TMP/out" | cut -c1-120)"
tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "agent of process $pid connected .*protocol 1.2)"
tap_ok $? "the daemon spoke 1.2 to it"
ping_until old old
tap_ok $? "its events record"
read -r calls pings < <(run_rounds old)
read -r entries returns discarded < <(recorded old old)
[ -n "$calls" ] && [ "$entries" -eq $((calls / 10 + pings)) ] &&
	[ "$returns" -eq $((calls / 10 + pings)) ] && [ "$discarded" -eq 0 ]
tap_ok $? "every call of the 1,000 recorded: $entries entries, $returns returns for ${calls:-?} / 10 + $pings calls"
dpctl disable old big old && text_same "$pid"
tap_ok $? "DISABLE puts the file's bytes back"

# ---- a request that fails midway ----
start_target full env LTTNG_DYNPROBE_MAX_PROBES=5000 "$WIDE" spin 2 ||
	tap_bail "wide-fns does not start"
pid=$TARGET_PID
from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
! dpctl enable full big full function 'dp_w_*' "$WIDE" -p "$pid" &&
	grep -Eq "^status=-28 message=.*5000 probes already defined" "$DP_TMP/out"
tap_ok $? "the agent's probe table full midway fails the request: $(head -n1 "$DP_TMP/out")"
! tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "process $pid: a batch of"
tap_ok $? "nothing was written: the target was never stopped for it"
text_same "$pid"
tap_ok $? "the program's code is the file's"
dpctl enable full big full function 'dp_w_1000*' "$WIDE" -p "$pid" &&
	out_has "^proc pid=$pid status=0 jump=70 int3=0 refused=0 "
tap_ok $? "a narrower pattern installs there afterwards: $(grep '^proc' "$DP_TMP/out" | cut -c1-120)"
seen full "dynprobe:full_entry" "dynprobe:full_return"
tap_ok $? "and records"
dpctl disable full big full && text_same "$pid"
tap_ok $? "its removal puts the file's bytes back"

# ---- code memory that runs out midway ----
# The trampolines take some 280 blocks of 256 KiB: the 50th cannot be
# mapped (LTTNG_DYNPROBE_TEST_CODE_FAIL, as a failed mmap).
start_target pool env LTTNG_DYNPROBE_TEST_CODE_FAIL=50 "$WIDE" spin 2 ||
	tap_bail "wide-fns does not start"
pid=$TARGET_PID
from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
! dpctl enable full big pool function 'dp_w_*' "$WIDE" -p "$pid" &&
	grep -Eq "^status=-12 message=process $pid: no code memory of [0-9]+ bytes within 2 GiB" \
		"$DP_TMP/out"
tap_ok $? "code memory running out midway fails the request: $(head -n1 "$DP_TMP/out")"
! tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "process $pid: a batch of" &&
	text_same "$pid"
tap_ok $? "nothing was written, the program's code is the file's"
! grep -q "wrong result" "$DP_TMP/wide.out" "$DP_TMP/old.out" "$DP_TMP/full.out" \
	"$DP_TMP/pool.out" && kill -0 "$pid"
tap_ok $? "every program computed right throughout, and runs on"

for s in wide old full; do
	dp_lttng destroy "$s" >/dev/null
done
tap_done
