#!/bin/bash
# DWARF at the scale of a whole program: --function over the 10,000
# functions of wide-fns built with -g (one CU), each entry recording its
# parameter x through DWARF (var:x) and each return its typed return value
# (a long: signed, as DWARF types it), in one request.  Every value recorded
# is the one the program computed (it calls dp_w_N with x = (i + r) & 63 in
# order, and checks each result against its own formula, which the test
# computes again); and the pattern over all of them records the very values
# that a pattern over ten of them records, in the same calls.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

WIDE=$builddir/wide-fns-g
ROUNDS=2

readelf -S "$WIDE" | grep -q '\.debug_info' || tap_bail "$WIDE has no DWARF"
start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"
dp_lttng create g --output="$DP_TMP/trace-g" >/dev/null &&
	dp_lttng enable-channel -u -s g --subbuf-size=1M --num-subbuf=16 big >/dev/null &&
	dp_lttng enable-event -u -s g -c big 'dynprobe:*' >/dev/null &&
	dp_lttng start g >/dev/null || tap_bail "cannot create session g"

start_target wide "$WIDE" rounds "$ROUNDS" || tap_bail "wide-fns-g does not start"
pid=$TARGET_PID

dpctl enable g big all function 'dp_w_*' "$WIDE" -p "$pid" -c var:x &&
	out_has "^proc pid=$pid status=0 jump=[0-9]+ int3=[0-9]+ refused=0 "
tap_ok $? "--function 'dp_w_*' -c var:x in one request: $(grep '^proc' "$DP_TMP/out" | cut -c1-120)"
sites=$(sed -nE 's/^proc .* jump=([0-9]+) int3=([0-9]+) .*/\1 + \2/p' "$DP_TMP/out")
[ $((sites)) -eq 70000 ]
tap_ok $? "every entry and return site of the 10,000 functions: $sites"
dpctl enable g big few function 'dp_w_1000?' "$WIDE" -p "$pid" -c var:x &&
	out_has "^proc pid=$pid status=0 "
tap_ok $? "--function 'dp_w_1000?' -c var:x on the same sites: $(grep '^proc' "$DP_TMP/out" | cut -c1-120)"

# Each SIGUSR2 calls dp_w_10000(1) once: until both events record.
for i in $(seq 120); do
	kill -USR2 "$pid"
	sleep 0.25
	seen g "dynprobe:all_entry" "dynprobe:all_return" "dynprobe:few_entry" \
		"dynprobe:few_return" && break
done
pings=$(grep -c '^pinged' "$DP_TMP/wide.out")
kill -USR1 "$pid"
for i in $(seq 600); do
	grep -q '^done' "$DP_TMP/wide.out" && break
	sleep 0.1
done
read -r calls _ < <(sed -nE 's/^done calls=([0-9]+) pings=([0-9]+)$/\1 \2/p' "$DP_TMP/wide.out")
[ -n "$calls" ] && [ "$calls" -eq $((ROUNDS * 10000)) ]
tap_ok $? "the program made its calls, every result right: ${calls:-none} calls after $pings pings"
dp_lttng stop g >/dev/null
bt_text "$DP_TMP/trace-g" >"$DP_TMP/events"
[ "$(bt_discarded "$DP_TMP/trace-g")" -eq 0 ]
tap_ok $? "no event discarded"

# check EVENT COUNT: EVENT's records, entry and return in turn, are the
# pings' calls (dp_w_10000(1), as many as were recorded: those before the
# session daemon enabled the event are not), then the rounds' calls of
# dp_w_10000 ... dp_w_(10000 + COUNT - 1) in the program's order, each x
# and ret the program's.  Prints "pairs bad"; the rounds' calls as
# "ROUND FUNCTION X RET" lines in $DP_TMP/EVENT.vals.
check() {
	grep -E "^dynprobe:$1_(entry|return): " "$DP_TMP/events" |
		sed -nE 's/^dynprobe:[a-z]+_(entry|return): .* (x|ret) = (-?[0-9]+).*/\1 \3/p' |
		gawk -v count="$2" -v rounds="$ROUNDS" -v vals="$DP_TMP/$1.vals" '
		function expect(x, n) {
			if (and(x, 1)) return x * n + 1
			if (and(x, 2)) return xor(x, n)
			if (and(x, 4)) return x - n
			if (and(x, 8)) return lshift(x, 3) + n
			if (and(x, 16)) return int(x / 3) + n
			return x + n * 7
		}
		$1 == "entry" && !open { x = $2; open = 1; next }
		$1 == "return" && open { open = 0; np++; px[np] = x; pr[np] = $2; next }
		{ bad++ }
		END {
			skip = np - rounds * count
			if (skip < 0)
				bad++
			for (k = 1; k <= skip; k++)
				if (px[k] != 1 || pr[k] != expect(1, 10000))
					bad++
			for (k = skip + 1; k <= np; k++) {
				c = k - skip - 1; i = c % count; r = int(c / count)
				n = 10000 + i; want = and(i + r, 63)
				if (px[k] != want || pr[k] != expect(want, n)) {
					if (bad < 3)
						printf "call %d: dp_w_%d(%d) = %d recorded, dp_w_%d(%d) = %d made\n",
							c, n, px[k], pr[k], n, want, expect(want, n) > "/dev/stderr"
					bad++
				}
				print r, i, px[k], pr[k] > vals
				pairs++
			}
			print pairs + 0, bad + 0
		}' 2>>"$DP_TMP/check.err"
}
read -r pairs bad < <(check all 10000)
[ "$pairs" -eq $((ROUNDS * 10000)) ] && [ "$bad" -eq 0 ]
tap_ok $? "'dp_w_*': each of the $((ROUNDS * 10000)) calls recorded with the program's x and its typed ret: $pairs pairs, $bad wrong $(head -n 2 "$DP_TMP/check.err" | tr '\n' ' ')"
grep -q '^dynprobe:all_return: .*ret = -[0-9]' "$DP_TMP/events"
tap_ok $? "negative results recorded as such (signed, typed by the DWARF)"
read -r pairs bad < <(check few 10)
[ "$pairs" -eq $((ROUNDS * 10)) ] && [ "$bad" -eq 0 ]
tap_ok $? "'dp_w_1000?': each of its $((ROUNDS * 10)) calls recorded with the program's x and ret: $pairs pairs, $bad wrong"
awk '$2 < 10' "$DP_TMP/all.vals" >"$DP_TMP/all10.vals"
[ -s "$DP_TMP/few.vals" ] && cmp -s "$DP_TMP/few.vals" "$DP_TMP/all10.vals"
tap_ok $? "and those are the values 'dp_w_*' recorded for the same calls ($(wc -l <"$DP_TMP/few.vals") compared)"

dpctl disable g big all && dpctl disable g big few && kill -0 "$pid"
tap_ok $? "both removed, the program runs on"
dp_lttng destroy g >/dev/null
tap_done
