#!/bin/bash
# backtrace through code that has no unwind tables: cli-target's foo is
# hand-written assembly without CFI directives.  The default walker (CFI
# tables) takes the return address from [rsp] at a function's entry, and
# the frame-pointer rule where no table covers a pc, then its tables again:
# the stack reaches main and past it, into the C library's start frames.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
cli_setup

# main's bounds in the file, from its symbol.
read -r main_lo main_size < <(nm -S "$TARGET" | awk '$4 == "main" { print $1, $2 }')
[ -n "$main_lo" ] || tap_bail "no main symbol in $TARGET"

for walker in "" ":cfi" ":fp"; do
	dir=$DP_TMP/t$walker
	"$LTTNG" trace --no-view -o "$dir" --function foo -t "backtrace$walker" -- "$TARGET" \
		<<<$'4\n5' >"$DP_TMP/out" 2>"$DP_TMP/err"
	export DP_DAEMON_RUNS=1	# lttng trace started lttng-dynprobed
	ev=$(bt_text "$dir" | grep -m1 '^dynprobe:foo_entry: ')
	len=$(sed -nE 's/.*_backtrace_length = ([0-9]+).*/\1/p' <<<"$ev")
	frame1=$(sed -nE 's/.*\[1\] = (0x[0-9A-Fa-f]+).*/\1/p' <<<"$ev")
	# The run's load bias: foo's address in the trace against the file's.
	foo_run=$(sed -nE 's/.*\[0\] = (0x[0-9A-Fa-f]+).*/\1/p' <<<"$ev")
	foo_file=$(nm "$TARGET" | awk '$3 == "foo" { print $1 }')
	ok=1
	if [ -n "$frame1" ] && [ -n "$foo_run" ]; then
		bias=$((foo_run - 0x$foo_file))
		f1=$((frame1 - bias))
		[ "$f1" -gt $((0x$main_lo)) ] && [ "$f1" -lt $((0x$main_lo + 0x$main_size)) ] && ok=0
	fi
	tap_ok "$ok" "backtrace$walker at foo's entry (no CFI there): the caller is main ($ev)"
	if [ "$walker" != ":fp" ]; then
		[ -n "$len" ] && [ "$len" -ge 4 ]
		tap_ok $? "backtrace$walker goes on past main through the tables ($len frames)"
	fi
done
tap_done
