#!/bin/bash
# Dynamic probes end to end through the CLI and a real lttng-dynprobed: the
# RFC's examples verbatim on a running program, values checked in the
# trace; disable/enable; destroy restores the code; lttng trace on ls -l and
# on a program with arguments, stdin and an exit code of its own; a pid that
# does not map PATH refused with nothing left behind.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
cli_setup

# The events of a trace directory, "name: { ctx }, { payload }".
events() {
	bt_text "$1" 2>/dev/null
}

# foo's runtime address in pid $1 (from the file's offset and the mapping).
runtime_addr() {
	local pid=$1 sym=$2 off base
	off=$(nm "$TARGET" | awk -v s="$sym" '$3 == s { print $1 }')
	base=$(awk -v p="$(readlink -f "$TARGET")" '$6 == p && $3 == "00000000" { print $1; exit }' \
		"/proc/$pid/maps" | cut -d- -f1)
	printf '%d' $((16#$base + 16#$off))
}

code_bytes() {	# pid addr count: the process' bytes, as hex
	dd if="/proc/$1/mem" bs=4096 iflag=skip_bytes,count_bytes skip="$2" count="$3" \
		2>/dev/null | od -An -tx1 | tr -d ' \n'
}

file_bytes() {	# symbol count: the file's bytes of it
	local vaddr
	vaddr=$(nm "$TARGET" | awk -v s="$1" '$3 == s { print $1 }')
	# The first loadable segment maps offset 0 at vaddr 0 (a PIE).
	dd if="$TARGET" bs=4096 iflag=skip_bytes,count_bytes skip=$((16#$vaddr)) count="$2" \
		2>/dev/null | od -An -tx1 | tr -d ' \n'
}

"$STOCK" -n create s1 --output="$DP_TMP/t1" >/dev/null || tap_bail "create s1"

# The first probe, for a path no process maps yet: lttng starts the daemon.
out=$("$LTTNG" enable-event -u --path "$TARGET" --function foo zdef 2>&1)
tap_ok $? "enable-event --function foo before any process: accepted"
pgrep -x lttng-dynprobed >/dev/null
tap_ok $? "lttng started lttng-dynprobed"
grep -q "^Dynamic UST event dynprobe:zdef_entry created in channel channel0" <<<"$out" &&
	grep -q "^Dynamic UST event dynprobe:zdef_return created in channel channel0" <<<"$out"
tap_ok $? "--function gives NAME_entry and NAME_return"
run_cli add-context -u -e zdef -t reg:edi
tap_ok "$status" "add-context -u -e zdef -t reg:edi"

# A running program with the agent preloaded: the path's probes go in.
LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$TARGET" --loop &
pid=$!
for i in $(seq 600); do
	"$LTTNG" -n list s1 2>/dev/null | grep -q "process $pid: [1-9][0-9]* site" && break
	sleep 0.1
done
"$LTTNG" -n list s1 >"$DP_TMP/list" 2>&1
grep -q "process $pid: [1-9][0-9]* site" "$DP_TMP/list"
tap_ok $? "list s1: zdef installed in the process started later"
grep -q "function foo in .*cli-target" "$DP_TMP/list"
tap_ok $? "list s1: the event's spec"

"$STOCK" -n start s1 >/dev/null
sleep 1
"$STOCK" -n stop s1 >/dev/null
events "$DP_TMP/t1" >"$DP_TMP/e1"
n_entry=$(grep -c '^dynprobe:zdef_entry:' "$DP_TMP/e1")
n_return=$(grep -c '^dynprobe:zdef_return:' "$DP_TMP/e1")
[ "$n_entry" -gt 3 ] && [ "$n_entry" -eq "$n_return" ]
tap_ok $? "entry and return events balanced ($n_entry, $n_return)"
bad=$(sed -nE 's/^dynprobe:zdef_return: .*edi = (0x[0-9a-fA-F]+), ret = ([0-9]+).*/\1 \2/p' "$DP_TMP/e1" |
	while read -r edi ret; do [ $((3 * (edi + 1))) -eq "$ret" ] || echo "$edi $ret"; done)
[ -z "$bad" ] && grep -q 'ret = ' "$DP_TMP/e1"
tap_ok $? "every return value is foo's: 3 * (edi + 1)"

# Disable: no more events; enable again: events again.
run_cli disable-event -u zdef -s s1
tap_ok "$status" "disable-event -u zdef"
"$LTTNG" -n list s1 | grep -q "zdef (disabled)"
tap_ok $? "list shows zdef disabled"
before=$(code_bytes "$pid" "$(runtime_addr "$pid" foo)" 14)
[ "$before" = "$(file_bytes foo 14)" ]
tap_ok $? "disabled: foo's bytes in the process are the file's"
run_cli enable-event -u -s s1 --path "$TARGET" --function foo zdef
grep -q "process $pid: [1-9][0-9]* site" <<<"$out" &&
	"$LTTNG" -n list s1 | grep -q "zdef (enabled)"
tap_ok $? "enable-event again: reinstalled in the process, enabled"
[ "$(code_bytes "$pid" "$(runtime_addr "$pid" foo)" 1)" = e9 ]
tap_ok $? "enabled: foo starts with a jmp"
run_cli disable-event -u zdef -s s1
tap_ok "$status" "disable-event -u zdef, a second time"

# The RFC's examples, verbatim but for the paths.  A second process runs
# without the agent: lttng-dynprobed injects it.
"$TARGET" --loop &
plain=$!
"$STOCK" -n create s2 --output="$DP_TMP/t2" >/dev/null
out=$("$LTTNG" enable-event aname -u --path "$TARGET" --probe foo+0x6 2>&1)
tap_ok $? "lttng enable-event aname -u --path PATH --probe foo+0x6"
grep -q "process $pid: 1 site by jump" <<<"$out" && grep -q "process $plain: 1 site by jump" <<<"$out"
tap_ok $? "foo+0x6: one site by jump in each running process, the agent injected in one"
[ -n "$(awk -v p="$(readlink -f "$LTTNG_DYNPROBE_AGENT")" '$6 == p' "/proc/$plain/maps")" ]
tap_ok $? "the agent is mapped in the process that did not have it"
bar=$(nm "$TARGET" | awk '$3 == "bar" { print $1 }' | sed 's/^0*//')
out=$("$LTTNG" enable-event addr -u --path "$TARGET" --probe "0x$bar" --pid "$pid" 2>&1)
tap_ok $? "lttng enable-event addr -u --path PATH --probe 0x$bar --pid PID"
run_cli add-context -u -e aname -t reg:eax -t regs
tap_ok "$status" "add-context -u -e aname -t reg:eax -t regs"
"$STOCK" -n start s2 >/dev/null
sleep 1
"$STOCK" -n stop s2 >/dev/null
events "$DP_TMP/t2" >"$DP_TMP/e2"
grep -q '^dynprobe:aname: .*eax = 0x' "$DP_TMP/e2" && grep -q '^dynprobe:addr: ' "$DP_TMP/e2"
tap_ok $? "events dynprobe:aname (with eax) and dynprobe:addr recorded"
# At foo+0x6, eax holds the argument, and rdi too.
bad=$(sed -nE 's/^dynprobe:aname: .*eax = (0x[0-9a-fA-F]+).* rdi = (0x[0-9a-fA-F]+).*/\1 \2/p' "$DP_TMP/e2" |
	while read -r eax rdi; do [ $((eax)) -eq $((rdi)) ] || echo "$eax $rdi"; done)
[ -z "$bad" ]
tap_ok $? "aname: eax equals rdi at foo+0x6"
"$LTTNG" -n list -u >"$DP_TMP/list" 2>&1
grep -q "aname (enabled), session s2" "$DP_TMP/list" && grep -q "zdef (disabled), session s1" "$DP_TMP/list"
tap_ok $? "list -u: the dynamic events of every session"

# destroy takes the probes out: the code is the file's again.
addr=$(runtime_addr "$pid" foo)
run_cli destroy s2
run_cli destroy s1
tap_ok "$status" "destroy s1 and s2"
[ "$(code_bytes "$pid" "$addr" 14)" = "$(file_bytes foo 14)" ]
tap_ok $? "after destroy, foo's bytes in the process are the file's"

# A filter on a dynamic field; a filter the session refuses takes the
# probes out again.
"$STOCK" -n create s4 --output="$DP_TMP/t4" >/dev/null
run_cli enable-event -u -s s4 --path "$TARGET" --probe bar+0x2 bad --filter '((('
grep -q '^Error: cannot enable dynprobe:bad' <<<"$err" && [ "$status" -eq 1 ]
tap_ok $? "a filter the session refuses: error, exit 1"
baddr=$(runtime_addr "$pid" bar)
[ "$(code_bytes "$pid" "$baddr" 9)" = "$(file_bytes bar 9)" ] &&
	! "$LTTNG" -n list s4 | grep -q "bad (enabled)"
tap_ok $? "... and leaves no patch and no enabled event"
run_cli enable-event -u -s s4 --path "$TARGET" --probe foo+0x6 big --filter 'eax > 5'
tap_ok "$status" "enable-event with --filter 'eax > 5'"
run_cli add-context -u -s s4 -e big -t reg:eax
"$STOCK" -n start s4 >/dev/null
sleep 1
"$STOCK" -n stop s4 >/dev/null
events "$DP_TMP/t4" >"$DP_TMP/e4"
small=$(sed -nE 's/^dynprobe:big: .*eax = (0x[0-9a-fA-F]+).*/\1/p' "$DP_TMP/e4" |
	while read -r eax; do [ $((eax)) -gt 5 ] || echo "$eax"; done)
[ -s "$DP_TMP/e4" ] && [ -z "$small" ]
tap_ok $? "the filter on the dynamic field eax holds ($(wc -l <"$DP_TMP/e4") events)"
run_cli enable-event -u -s s4 --userspace-probe="elf:$TARGET:bar+0x2" ubar
tap_ok "$status" "enable-event -u --userspace-probe=elf:PATH:bar+0x2 ubar"
"$STOCK" -n start s4 >/dev/null
sleep 0.5
"$STOCK" -n stop s4 >/dev/null
events "$DP_TMP/t4" | grep -q '^dynprobe:ubar: '
tap_ok $? "dynprobe:ubar recorded"
run_cli destroy s4
pcode=$(code_bytes "$plain" "$(runtime_addr "$plain" foo)" 14)
[ "$pcode" = "$(file_bytes foo 14)" ] && kill -0 "$plain"
tap_ok $? "the injected process: foo's bytes are the file's again, and it runs"
kill "$plain"
kill -0 "$pid"
tap_ok $? "the process ran through all of it"
kill "$pid"
wait "$pid" 2>/dev/null

# A pid that does not map PATH: refused, nothing left.
"$STOCK" -n create s >/dev/null
DP_DAEMON_RUNS=1
check_refused "pid that does not map PATH" "" \
	enable-event -u -s s --path "$TARGET" --pid $$ --probe foo ev
"$STOCK" -n destroy s >/dev/null

# lttng trace on ls -l.
out=$("$LTTNG" trace -c "ls -l $top_srcdir/README.md" --function main 2>"$DP_TMP/err")
status=$?
tap_ok "$status" "lttng trace -c \"ls -l FILE\" --function main: exit 0"
grep -q 'README.md$' <<<"$out"
tap_ok $? "ls's output passes through"
grep -q 'dynprobe:main_entry: ' <<<"$out" && grep -q 'dynprobe:main_return: .*ret = 0' <<<"$out"
tap_ok $? "main_entry and main_return (ret = 0) shown"
dir=$(sed -n 's/^Trace directory: //p' "$DP_TMP/err")
[ -d "$dir" ] && [ "$(events "$dir" | grep -c '^dynprobe:main_')" -eq 2 ]
tap_ok $? "the trace directory is kept and named: $dir"

# lttng trace on a program with arguments, stdin and an exit code.
out=$(printf '1\n2\n' | "$LTTNG" trace -c "$TARGET 7 x 'y z'" --function foo -t reg:edi \
	2>"$DP_TMP/err")
status=$?
tap_ok "$([ "$status" -eq 7 ]; echo $?)" "the command's exit code passes through (7)"
grep -q '^args: x y z$' <<<"$out" && grep -q '^foo(1) = 6, bar = 1$' <<<"$out" &&
	grep -q '^foo(2) = 9, bar = 1$' <<<"$out"
tap_ok $? "arguments and stdin reach the command, its stdout passes through"
grep -q '^cli-target: exiting with 7$' "$DP_TMP/err"
tap_ok $? "its stderr passes through"
[ "$(grep -c ' dynprobe:foo_entry: .*edi = 0x[12] ' <<<"$out")" -eq 2 ] &&
	grep -q ' dynprobe:foo_return: .*edi = 0x1, ret = 6' <<<"$out" &&
	grep -q ' dynprobe:foo_return: .*edi = 0x2, ret = 9' <<<"$out"
tap_ok $? "foo's entry and return events, with edi and the return value"
# Memory contexts by symbol and by address, with their error values.
out=$(printf '1\n2\n' | "$LTTNG" trace -c "$TARGET 0" --probe foo -t int:hits:hits \
	-t string:name:label -t int:bad:0x10 -t string:short:label:4 -t backtrace:4 2>/dev/null)
grep -q ' dynprobe:foo: .*{ hits = 1, _hits_error = 0, name = "cli-target", _name_error = 0, bad = 0, _bad_error = 14, short = "cli-", _short_error = 7, _backtrace_length = [1-4], ' <<<"$out" &&
	grep -q ' dynprobe:foo: .*{ hits = 2, _hits_error = 0, ' <<<"$out"
tap_ok $? "int and string contexts by symbol, EFAULT (14) and E2BIG (7) error values, backtrace"
out=$(echo 5 | "$LTTNG" trace --no-view -o "$DP_TMP/t7" --probe foo+06 -- "$TARGET" 0 2>/dev/null)
[ "$(events "$DP_TMP/t7" | grep -c '^dynprobe:foo_6: ')" -eq 1 ]
tap_ok $? "--probe foo+06 (octal): one foo_6 event"
out=$(echo 5 | "$LTTNG" trace --no-view -o "$DP_TMP/t3" --probe foo+0x6 -- "$TARGET" 0 2>/dev/null)
[ "$out" = "$(printf 'args:\nfoo(5) = 18, bar = 1')" ] &&
	[ "$(events "$DP_TMP/t3" | grep -c '^dynprobe:foo_6: ')" -eq 1 ]
tap_ok $? "--no-view, -o DIR, the command after --: one foo_6 event in DIR"

# A pattern of function names: one event pair for every function it matches.
out=$(printf '1\n2\n' | "$LTTNG" trace --no-view -o "$DP_TMP/t8" --function '[bf]??' -- "$TARGET" 0 \
	2>"$DP_TMP/err")
events "$DP_TMP/t8" >"$DP_TMP/e8"
[ "$(grep -c '^dynprobe:bf_entry: ' "$DP_TMP/e8")" -eq 4 ] &&
	[ "$(grep -c '^dynprobe:bf_return: ' "$DP_TMP/e8")" -eq 4 ] &&
	grep -q '^dynprobe:bf_return: .*ret = 6' "$DP_TMP/e8" &&
	grep -q '^dynprobe:bf_return: .*ret = 1' "$DP_TMP/e8"
tap_ok $? "--function '[bf]??': foo's and bar's entries and returns as bf_entry/bf_return (baz matches too, never called) ($(grep -c '^dynprobe:bf_' "$DP_TMP/e8") events)"

# A non-PIE executable: by symbol and by absolute address.
NOPIE=$top_builddir/tests/cli/cli-target-nopie
bar=$(nm "$NOPIE" | awk '$3 == "bar" { print $1 }' | sed 's/^0*//')
out=$(echo 4 | "$LTTNG" trace --no-view -o "$DP_TMP/t5" --function foo --probe "$((16#$bar))" \
	-- "$NOPIE" 0 2>/dev/null)
events "$DP_TMP/t5" >"$DP_TMP/e5"
grep -q '^dynprobe:foo_return: .*ret = 15' "$DP_TMP/e5" &&
	[ "$(grep -c "^dynprobe:addr_$bar: " "$DP_TMP/e5")" -eq 1 ]
tap_ok $? "non-PIE: foo's return (ret = 15), and bar at its absolute address in decimal"

# A shared library's function.
LIBZ=$(ldd "$top_builddir/tests/cli/zlib-user" | awk '/libz\.so/ { print $3 }')
out=$("$LTTNG" trace --no-view -o "$DP_TMP/t6" --path "$LIBZ" --function deflate \
	-- "$top_builddir/tests/cli/zlib-user" 3 2>/dev/null)
events "$DP_TMP/t6" >"$DP_TMP/e6"
[ "$out" = "compressed 3" ] && [ "$(grep -c '^dynprobe:deflate_entry: ' "$DP_TMP/e6")" -eq 3 ] &&
	[ "$(grep -c '^dynprobe:deflate_return: .*ret = 1 ' "$DP_TMP/e6")" -eq 3 ]
tap_ok $? "libz's deflate: 3 entries, 3 returns with Z_STREAM_END"

# A program the agent cannot go into: refused once started, before its
# main; no session, no trace directory left.
out=$(echo 1 | "$LTTNG" trace -c "$top_builddir/tests/cli/cli-target-static 0" --function foo 2>&1)
status=$?
[ "$status" -eq 1 ] && grep -q '^Error: .*statically linked' <<<"$out" &&
	! grep -q '^foo(1)' <<<"$out"
tap_ok $? "lttng trace of a static program: refused before its main ($status)"
! ls -d "$LTTNG_HOME"/lttng-traces/trace-cli-target-static-* 2>/dev/null
tap_ok $? "... and its trace directory removed"

[ -z "$("$STOCK" -n list 2>/dev/null | grep '^ *[0-9]) ')" ]
tap_ok $? "lttng trace leaves no session behind"
tap_done
