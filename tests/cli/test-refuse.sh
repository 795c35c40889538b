#!/bin/bash
# Every bad input is refused with a message that says what was wrong, exit
# code 1, and nothing left behind: no new session, no event enabled in the
# session, no daemon started (so no patch anywhere).
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"
"$STOCK" -n create s --output="$DP_TMP/trace-s" >/dev/null || tap_bail "cannot create session s"

ee=(enable-event -u -s s)
check_refused "unknown symbol" "no function 'nosuch' in .*cli-target" \
	"${ee[@]}" --path "$TARGET" --probe nosuch ev
check_refused "unknown symbol: close names suggested" "did you mean 'foo'" \
	"${ee[@]}" --path "$TARGET" --probe fooo ev
check_refused "bad hex number" "'0x1g' is not a number: 'g' is not a hex digit" \
	"${ee[@]}" --path "$TARGET" --probe foo+0x1g ev
check_refused "bad octal number" "'09' is not a number: a leading 0 makes it octal" \
	"${ee[@]}" --path "$TARGET" --probe foo+09 ev
check_refused "decimal number with a letter" "'6a' is not a number: 'a' is not a decimal digit" \
	"${ee[@]}" --path "$TARGET" --probe foo+6a ev
check_refused "a pattern for --probe" "'fo\\*' is a pattern: it names functions for --function" \
	"${ee[@]}" --path "$TARGET" --probe 'fo*' ev
check_refused "a pattern that matches nothing" "no function of .*cli-target matches 'zz\\*'" \
	"${ee[@]}" --path "$TARGET" --function 'zz*' ev
check_refused "a pattern with an offset" "a pattern names whole functions and takes no offset" \
	"${ee[@]}" --path "$TARGET" --function 'fo*+4' ev
check_refused "number too large" "does not fit in 64 bits" \
	"${ee[@]}" --path "$TARGET" --probe 0x10000000000000000 ev
check_refused "mid-instruction offset, with the neighbours" \
	"foo\+0x5 is inside an instruction of foo: the nearest instructions start at foo\+0x4 and foo\+0x6" \
	"${ee[@]}" --path "$TARGET" --probe foo+5 ev
check_refused "offset past the function" "foo\+0x40 is past the end of foo \(14 bytes" \
	"${ee[@]}" --path "$TARGET" --probe foo+0x40 ev
check_refused "address outside every function" "0x1 is not inside any function of" \
	"${ee[@]}" --path "$TARGET" --probe 0x1 ev
check_refused "--function not at a function's start" "--function foo\+0x6 is not the start of a function" \
	"${ee[@]}" --path "$TARGET" --function foo+0x6 ev
check_refused "missing --path" "--path is missing" \
	"${ee[@]}" --probe foo ev
check_refused "--path of a file that does not exist" "/nonexistent: No such file or directory" \
	"${ee[@]}" --path /nonexistent --probe foo ev
check_refused "--path of a file that is not ELF" "not an ELF file|ELF" \
	"${ee[@]}" --path "$top_srcdir/tests/cli/cli.sh" --probe foo ev
check_refused "pid not found" "no process 999999 \(--pid\)" \
	"${ee[@]}" --path "$TARGET" --pid 999999 --probe foo ev
check_refused "bad pid list" "bad --pid '12,x'" \
	"${ee[@]}" --path "$TARGET" --pid 12,x --probe foo ev
check_refused "--probe without -u" "--probe needs a domain: -u \(--userspace\)" \
	enable-event -s s --probe foo ev
check_refused "--path without -u" "--path needs a domain" \
	enable-event -s s --path "$TARGET" --probe foo ev
check_refused "--path with -k" "--path and --pid are for dynamic userspace probes" \
	enable-event -k -s s --path "$TARGET" --probe foo ev
check_refused "missing event name" "the event name is missing" \
	"${ee[@]}" --path "$TARGET" --probe foo
check_refused "two event names" "one event name" \
	"${ee[@]}" --path "$TARGET" --probe foo ev1 ev2
check_refused "event name list" "one event name, not a list" \
	"${ee[@]}" --path "$TARGET" --probe foo ev1,ev2
check_refused "event name not an identifier" "must be a C identifier" \
	"${ee[@]}" --path "$TARGET" --probe foo 1ev
check_refused "wildcard event name" "no wildcard" \
	"${ee[@]}" --path "$TARGET" --probe foo 'ev*'
check_refused "--probe and --function together" "give one of --probe, --function" \
	"${ee[@]}" --path "$TARGET" --probe foo --function foo ev
check_refused "--all with a probe" "--all does not apply to a dynamic probe" \
	"${ee[@]}" -a --path "$TARGET" --probe foo ev
check_refused "sdt userspace probe on an object without SDT notes" "has no SDT probe \\(no \\.note\\.stapsdt note\\)" \
	"${ee[@]}" --userspace-probe=sdt:"$TARGET":p:n ev
check_refused "--userspace-probe with a bad symbol" "no function 'nosuch'" \
	"${ee[@]}" --userspace-probe=elf:"$TARGET":nosuch ev
check_refused "session that does not exist" "no session 'nosuch'" \
	enable-event -u -s nosuch --path "$TARGET" --probe foo ev

# Contexts: a dynamic type with bad syntax is ours to refuse; an unknown
# type is the stock add-context's, with its own message and exit code.
ac=(add-context -u -s s)
check_refused "reg without a register" "expected reg:NAME" "${ac[@]}" -t reg
check_refused "memory context without an address" "the address is missing" \
	"${ac[@]}" -t int:hits
check_refused "memory context with a bad field name" "field name must be a C identifier" \
	"${ac[@]}" -t int:1x:0x10
check_refused "backtrace depth out of bounds" "depth must be 1 to 128" \
	"${ac[@]}" -t backtrace:500
check_refused "string with a bad maximum" "bad maximum length" \
	"${ac[@]}" -t string:name:buf:0x
check_refused "-e with only standard types" "-e \(--event\) selects a dynamic event" \
	"${ac[@]}" -e ev -t vpid
check_refused "dynamic type without -u" "are for dynamic userspace probes: use -u" \
	add-context -k -s s -t regs
check_refused "dynamic context and no dynamic event" "has no dynamic event" \
	"${ac[@]}" -t regs
before=$(state)
run_cli "${ac[@]}" -t nosuchtype
run_stock "${ac[@]}" -t nosuchtype
[ "$status" = "$sstatus" ] && [ "$err" = "$serr" ] && [ "$out" = "$sout" ] &&
	[ "$status" -ne 0 ] && [ "$before" = "$(state)" ]
tap_ok $? "unknown context type: the stock lttng's message and exit code ($sstatus)"

# list --sites.
check_refused "--sites without --path" "--sites FUNCTION needs --path" list -u --sites foo
check_refused "--path without --sites" "--path lists nothing alone" list -u --path "$TARGET"
check_refused "--sites of an unknown function" "no function 'nosuch'" \
	list -u --path "$TARGET" --sites nosuch

# lttng trace: refused before anything is created.
check_refused "trace without a probe" "nothing to probe" trace -c "$TARGET 0"
check_refused "trace of a command that does not exist" "no-such-command: command not found" \
	trace -c "no-such-command x" --function main
check_refused "trace with an unknown function" "no function 'nosuch'" \
	trace -c "$TARGET 0" --function nosuch
check_refused "trace with a mid-instruction offset" "inside an instruction of foo" \
	trace -c "$TARGET 0" --probe foo+2
check_refused "trace with a bad context" "expected reg:NAME" \
	trace -c "$TARGET 0" --function foo -t reg
check_refused "trace with the command given twice" "give the command once" \
	trace -c "$TARGET 0" --function foo -- "$TARGET" 0
tap_done
