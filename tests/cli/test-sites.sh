#!/bin/bash
# lttng list -u --path PATH --sites FUNCTION, which needs no session and no
# daemon: every instruction of the function, its offset, bytes and mnemonic
# (held to objdump), and how a probe there would be installed (held to the
# analysis library through sites-oracle).
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/cli/cli.sh"
DP_TMP=$(mktemp -d) || tap_bail "mktemp"
trap 'rm -rf "$DP_TMP"' EXIT
ORACLE=$top_builddir/tests/cli/sites-oracle

# Rows of the table: "+0xOFF ADDRESS BYTES... MNEMONIC PROBE...".
sites_rows() {
	sed -n 's/^  \(+0x[0-9a-f]*\)  .*$/&/p'
}

for fn in foo bar baz main; do
	out=$("$LTTNG" list -u --path "$TARGET" --sites "$fn" 2>&1)
	tap_ok $? "list --sites $fn runs without a session daemon"
	addr=$(nm "$TARGET" | awk -v f="$fn" '$3 == f { print $1 }' | sed 's/^0*//')
	grep -q "^Sites of $fn in .*cli-target: 0x$addr, " <<<"$out"
	tap_ok $? "$fn: header names the function and its address 0x$addr"

	# Offsets and bytes, as objdump decodes the function.
	objdump -d --no-show-raw-insn "$TARGET" --disassemble="$fn" |
		awk -v base=$((16#$addr)) '/^ *[0-9a-f]+:\t/ {
			sub(":", "", $1); printf "+0x%x\n", strtonum("0x" $1) - base }' \
		>"$DP_TMP/objdump"
	sites_rows <<<"$out" | awk '{ print $1 }' >"$DP_TMP/offsets"
	diff "$DP_TMP/objdump" "$DP_TMP/offsets" >"$DP_TMP/diff"
	tap_ok $? "$fn: one row per instruction, at objdump's offsets"
	[ -s "$DP_TMP/diff" ] && tap_diag_file "$DP_TMP/diff"

	# How each would be probed, as the library plans it.
	"$ORACLE" "$TARGET" "$fn" >"$DP_TMP/oracle"
	sites_rows <<<"$out" |
		sed -E 's/^  (\+0x[0-9a-f]+) .*  (jump|jump: .*|redirect: .*|int3: .*|refused: .*)$/\1 \2/' >"$DP_TMP/methods"
	diff "$DP_TMP/oracle" "$DP_TMP/methods" >"$DP_TMP/diff"
	tap_ok $? "$fn: each site's method and reason as the planner gives them"
	[ -s "$DP_TMP/diff" ] && tap_diag_file "$DP_TMP/diff"

	n=$(wc -l <"$DP_TMP/oracle")
	j=$(grep -cE ' jump(:|$)' "$DP_TMP/oracle")
	i=$(grep -c ' int3' "$DP_TMP/oracle")
	r=$(grep -c ' refused' "$DP_TMP/oracle")
	grep -q "^Sites: $j by jump, $i by int3, $r refused$" <<<"$out" &&
		grep -q ", $n instructions$" <<<"$out"
	tap_ok $? "$fn: summary $j jump, $i int3, $r refused of $n"
done

out=$("$LTTNG" list -u --path "$TARGET" --sites foo)
grep -Eq '^  \+0x6 +0x[0-9a-f]+ +83 c0 01 +add +jump$' <<<"$out"
tap_ok $? "foo+0x6: bytes 83 c0 01, add, by jump"
grep -Eq '^  \+0x0 +0x[0-9a-f]+ +55 +push +jump$' <<<"$out"
tap_ok $? "foo+0x0: bytes 55, push, by jump"
out=$("$LTTNG" list -u --path "$TARGET" --sites bar)
grep -Eq '^  \+0x8 +0x[0-9a-f]+ +c3 +ret +jump: 1 branch inside the jump to its own instructions, led to their copies$' <<<"$out"
tap_ok $? "bar+0x8: a final ret that the je at +0x4 reaches: a jump over both, the je's copy led to the ret's"
out=$("$LTTNG" list -u --path "$TARGET" --sites baz)
grep -Eq '^  \+0x5 +0x[0-9a-f]+ +c3 +ret +int3: fewer than 5 bytes' <<<"$out"
tap_ok $? "baz+0x5: a final ret too short for a jump (a call returns there): int3, with the reason"

# A pattern: every function it matches, one table each, and the totals.
out=$("$LTTNG" list -u --path "$TARGET" --sites '[bf]?[or]' 2>&1)
foo_sum=$("$LTTNG" list -u --path "$TARGET" --sites foo | sed -n 's/^Sites: //p')
bar_sum=$("$LTTNG" list -u --path "$TARGET" --sites bar | sed -n 's/^Sites: //p')
total=$(printf '%s\n%s\n' "$foo_sum" "$bar_sum" |
	awk '{ j += $1; i += $4; r += $7 } END { printf "%d by jump, %d by int3, %d refused", j, i, r }')
[ "$(grep -c '^Sites of ' <<<"$out")" -eq 2 ] && grep -q '^Sites of foo in ' <<<"$out" &&
	grep -q '^Sites of bar in ' <<<"$out" && grep -q "^Sites: $total, in 2 functions$" <<<"$out"
tap_ok $? "--sites '[bf]?[or]': foo's and bar's tables, $total in 2 functions"

# An address inside the function names it too.
addr=$(nm "$TARGET" | awk '$3 == "foo" { print $1 }')
out2=$("$LTTNG" list -u --path "$TARGET" --sites "0x$(printf %x $((16#$addr + 6)))")
[ "$out2" = "$("$LTTNG" list -u --path "$TARGET" --sites foo)" ]
tap_ok $? "--sites ADDRESS inside foo lists foo"

# main of a stripped executable, found from its entry point.
out=$("$LTTNG" list -u --path /usr/bin/ls --sites main 2>&1)
grep -q "^Sites of main in /usr/bin/ls: " <<<"$out" && [ "$(sites_rows <<<"$out" | wc -l)" -gt 50 ]
tap_ok $? "main of the stripped /usr/bin/ls"
tap_done
