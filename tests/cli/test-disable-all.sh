#!/bin/bash
# `lttng disable-event -u -a` with dynamic events in the default channel
# behaves as it does without them: every event rule of channel0 disabled,
# the stock line and exit code, the probes removed; with -c CHANNEL as
# well.  The session daemon requires -c from a session whose channel was
# created under an explicit name, so enable-event must not name channel0
# when the user did not.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
cli_setup

# The reference: a session with a stock event only.
"$STOCK" -n create ref --output="$DP_TMP/ref" >/dev/null || tap_bail "create ref"
"$STOCK" -n enable-event -u -s ref 'app:*' >/dev/null || tap_bail "enable-event ref"
run_stock disable-event -u -s ref -a
ref_out=$sout ref_status=$sstatus

"$STOCK" -n create s --output="$DP_TMP/t" >/dev/null || tap_bail "create s"
# Without -n: lttng starts lttng-dynprobed.
out=$("$LTTNG" enable-event -u -s s --path "$TARGET" --function foo zdef 2>&1)
tap_ok $? "enable-event --function foo in the default channel" || tap_diag "$out"
# After it (the dynamic event created channel0), a stock event without -c:
# the session daemon must not take channel0 for a channel of the user's.
run_stock enable-event -u -s s 'app:*'
tap_ok "$sstatus" "stock enable-event -u without -c after it" || tap_diag "$serr"
LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$TARGET" --loop &
pid=$!
wait_sites s "$pid"
tap_ok $? "foo probed in process $pid"

run_cli disable-event -u -s s -a
tap_ok "$status" "disable-event -u -a exits 0 (got $status)"
[ "$status" -eq "$ref_status" ] || tap_diag "stderr: $err"
grep -qxF -- "$ref_out" <<<"$out"
tap_ok $? "its last line is the stock one's: $ref_out"
grep -q "Non-default channel" <<<"$err"
tap_ok $((!$?)) "no 'Non-default channel' error"
"$STOCK" -n list s >"$DP_TMP/list" 2>&1
grep -q 'dynprobe:zdef_entry (type: tracepoint) \[disabled\]' "$DP_TMP/list" &&
	grep -q 'dynprobe:zdef_return (type: tracepoint) \[disabled\]' "$DP_TMP/list" &&
	grep -q 'app:\* (type: tracepoint) \[disabled\]' "$DP_TMP/list"
tap_ok $? "every event rule of channel0 disabled, the stock one too"
"$LTTNG" -n list s 2>&1 | grep -q "process $pid: [1-9][0-9]* site"
tap_ok $((!$?)) "the probes are out of process $pid"
foo_file=$(nm "$TARGET" | awk '$3 == "foo" { print $1 }')
base=$(awk -v p="$(readlink -f "$TARGET")" '$6 == p && $3 == "00000000" { print $1; exit }' \
	"/proc/$pid/maps" | cut -d- -f1)
mem=$(dd if="/proc/$pid/mem" bs=1 skip=$((16#$base + 16#$foo_file)) count=8 2>/dev/null | od -An -tx1)
file=$(dd if="$TARGET" bs=1 skip=$((16#$foo_file)) count=8 2>/dev/null | od -An -tx1)
[ "$mem" = "$file" ]
tap_ok $? "foo's bytes are the file's again"

# Enabled again, then -a with -c channel0: the same.
run_cli enable-event -u -s s --path "$TARGET" --function foo zdef
[ "$status" -eq 0 ] || tap_diag "$err"
tap_ok "$status" "enable-event again"
run_cli disable-event -u -s s -c channel0 -a
tap_ok "$status" "disable-event -u -c channel0 -a exits 0"
# A channel of the user's own: the stock rule (-c needed) holds as before.
"$STOCK" -n enable-channel -u -s s mine >/dev/null || tap_bail "enable-channel mine"
run_cli enable-event -u -s s -c mine --path "$TARGET" --probe foo mine1
tap_ok "$status" "enable-event -c mine"
run_cli disable-event -u -s s -c mine -a
tap_ok "$status" "disable-event -u -c mine -a exits 0"
"$STOCK" -n list s 2>&1 | grep -q 'dynprobe:mine1 (type: tracepoint) \[disabled\]'
tap_ok $? "mine1 disabled in channel mine"
kill "$pid"
wait "$pid" 2>/dev/null
DP_DAEMON_RUNS=1
tap_done
