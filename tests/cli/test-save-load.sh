#!/bin/bash
# lttng save and lttng load round-trip the dynamic events: a path-wide
# --function with a dynamic context and a --pid --probe are saved with the
# session (a comment in SESSION.lttng: the file stays valid against the
# stock session.xsd and the stock lttng load takes it), the session is
# destroyed (probes out), loaded again (probes in, with the context), started,
# and a program started then records the events with the right payload.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
command -v xmllint >/dev/null || tap_bail "xmllint is missing (libxml2-utils, tools/deps.sh)"
cli_setup
XSD=/usr/share/xml/lttng/session.xsd
[ -f "$XSD" ] || tap_bail "no $XSD (liblttng-ctl0)"

LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$TARGET" --loop &
loop=$!
"$STOCK" -n create s --output="$DP_TMP/t" >/dev/null || tap_bail "create s"
out=$("$LTTNG" enable-event -u -s s --path "$TARGET" --function foo zdef 2>&1)
tap_ok $? "enable-event --function foo zdef (path-wide)" || tap_diag "$out"
# vpid: a standard context (the stock save keeps it), to tell processes apart.
run_cli add-context -u -s s -e zdef -t reg:edi -t vpid
tap_ok "$status" "add-context -e zdef -t reg:edi -t vpid" || tap_diag "$err"
run_cli enable-event -u -s s --path "$TARGET" --pid "$loop" --probe bar zp
tap_ok "$status" "enable-event --pid $loop --probe bar zp" || tap_diag "$err"
wait_sites s "$loop" zp
tap_ok $? "zp installed in $loop"

run_cli save s -o "$DP_TMP/saved"
tap_ok "$status" "save s -o DIR" || tap_diag "$out" "$err"
file=$DP_TMP/saved/s.lttng
grep -q '^event .*name=zdef .*kind=function location=foo .*ctx=reg:edi' "$file" &&
	grep -q "^event .*name=zp .*location=bar .*pids=$loop" "$file"
tap_ok $? "s.lttng holds both specs, zdef's context and zp's pid" || tap_diag_file "$file"
xmllint --noout --schema "$XSD" "$file" 2>"$DP_TMP/xmlerr"
tap_ok $? "s.lttng is valid against the stock session.xsd" || tap_diag_file "$DP_TMP/xmlerr"
run_stock load -i "$file" s --override-name stockcopy
tap_ok "$sstatus" "the stock lttng load takes it" || tap_diag "$serr"
"$STOCK" -n destroy stockcopy >/dev/null 2>&1

run_cli destroy s
tap_ok "$status" "destroy s"
"$LTTNG" -n list -u 2>&1 | grep -q "Dynamic probe events"
tap_ok $((!$?)) "no dynamic event left after destroy"

run_cli load -i "$file" s
tap_ok "$status" "load -i FILE s" || tap_diag "$out" "$err"
grep -q "Dynamic UST event dynprobe:zdef_entry loaded in session s" <<<"$out" &&
	grep -q "Dynamic UST event dynprobe:zp loaded in session s" <<<"$out"
tap_ok $? "load says which dynamic events came back" || tap_diag "$out"
"$LTTNG" -n list s >"$DP_TMP/list" 2>&1
grep -q "function foo in .*cli-target" "$DP_TMP/list" && grep -q "contexts: reg:edi" "$DP_TMP/list" &&
	grep -q "probe bar in .*cli-target, pid $loop" "$DP_TMP/list"
tap_ok $? "list s: both specs, zdef's context, zp's pid" || tap_diag_file "$DP_TMP/list"
wait_sites s "$loop" zp
tap_ok $? "zp installed in $loop again"

"$STOCK" -n start s >/dev/null || tap_bail "start s"
# A program started now: its numbers are sent once zdef's probes are in.
mkfifo "$DP_TMP/in"
LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$TARGET" 0 <"$DP_TMP/in" >"$DP_TMP/out" 2>&1 &
pid=$!
exec 3>"$DP_TMP/in"
wait_sites s "$pid" zdef
tap_ok $? "zdef installed in the new process $pid"
printf '5\n7\n' >&3
exec 3>&-
wait "$pid"
tap_ok $? "the program ran to its end" || tap_diag_file "$DP_TMP/out"
sleep 0.5
"$STOCK" -n stop s >/dev/null
bt_text "$DP_TMP/t" >"$DP_TMP/events" 2>/dev/null
entry=$(grep -E "^dynprobe:zdef_entry: .*vpid = $pid[ ,}]" "$DP_TMP/events" |
	sed -nE 's/.*edi = (0x[0-9a-fA-F]+|[0-9]+).*/\1/p' | while read -r v; do echo $((v)); done | tr '\n' ' ')
[ "$entry" = "5 7 " ]
tap_ok $? "zdef_entry in $pid with edi = 5, 7 (got: $entry)" || head -5 "$DP_TMP/events" | tap_diag_file /dev/stdin
ret=$(grep -E "^dynprobe:zdef_return: .*vpid = $pid[ ,}]" "$DP_TMP/events" |
	sed -nE 's/.*ret = ([0-9]+).*/\1/p' | tr '\n' ' ')
[ "$ret" = "18 24 " ]
tap_ok $? "zdef_return with ret = 18, 24 (got: $ret)"
grep -q '^dynprobe:zp: ' "$DP_TMP/events"
tap_ok $? "zp recorded events in $loop"

# A session file edited into nonsense: a clear error.
sed -i 's/^event \(.*\) location=[^ ]*/event \1 location=%zz/' "$file"
"$STOCK" -n destroy s >/dev/null 2>&1
run_cli load -i "$file" s --override-name s2
[ "$status" -eq 1 ] && grep -q "^Error: .*s.lttng:[0-9]*: a dynamic probe line" <<<"$err"
tap_ok $? "a damaged probe line: $err"
kill "$loop"
wait "$loop" 2>/dev/null
DP_DAEMON_RUNS=1
tap_done
