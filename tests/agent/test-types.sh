#!/bin/bash
# Every field type of a runtime event class, recorded through a real
# session daemon and read back by babeltrace2: the event name, the CTF
# declaration of each field (size, signedness, base), and each value as
# babeltrace2 prints it (negative numbers, hex, strings, sequences with
# their length fields, doubles, values wider than their field), and the
# event's IP context (the probe site the record call names); and an event
# of a class without fields.

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

trace=$DP_TMP/trace
dp_lttng create types --output="$trace" &&
	dp_lttng enable-event -u dptest:types,dptest:nofields &&
	dp_lttng add-context -u -t ip &&
	dp_lttng start || tap_bail "cannot set up the session"

"$EMIT" types >"$DP_TMP/emit.out" 2>&1
tap_ok $? "events-emit types runs" || tap_diag_file "$DP_TMP/emit.out"
grep -qx 'enabled dptest:types 1' "$DP_TMP/emit.out"
tap_ok $? "the class is enabled as soon as dpa_class_get returns in an active session"
dp_lttng stop && dp_lttng destroy types

bt_text "$trace" >"$DP_TMP/all"
grep -v '^dptest:nofields: ' "$DP_TMP/all" >"$DP_TMP/events"
tap_check "two events recorded" [ "$(wc -l <"$DP_TMP/events")" -eq 2 ]
tap_check "both named dptest:types" [ "$(grep -c '^dptest:types: ' "$DP_TMP/events")" -eq 2 ]
tap_check "an event without fields is recorded, with an empty payload" \
	[ "$(grep -c "^dptest:nofields: { cpu_id = [0-9]* }, { ip = $((0x401020)) }, { }$" "$DP_TMP/all")" -eq 1 ] ||
	tap_diag_file "$DP_TMP/all"
[ -s "$DP_TMP/bt-warnings" ] && tap_diag_file "$DP_TMP/bt-warnings"

# The payload (the last { } scope) and the ip context of event $1.
payload() {
	sed -n "${1}p" "$DP_TMP/events" | sed -E 's/^.*\}, \{ (.*) \}$/\1/'
}
ip_of() {
	sed -n "${1}p" "$DP_TMP/events" | sed -nE 's/.*\{ ip = ([0-9]+) \}.*/\1/p'
}

expect1='i8 = -128, u8 = 255, i16 = -32768, u16 = 65535, i32 = -2147483648, u32 = 4294967295, i64 = -9223372036854775808, u64 = 18446744073709551615, x8 = 0xAB, x16 = 0xBEEF, x32 = 0xDEADBEEF, x64 = 0x123456789ABCDEF, s = "hello, world", empty = "", _seq_length = 3, seq = [ [0] = 0, [1] = 1, [2] = 18446744073709551615 ], _xseq_length = 2, xseq = [ [0] = 0x10, [1] = 0xFF ], _noseq_length = 0, noseq = [ ], d = -2.5'
# Values wider than their fields: only the low bytes are recorded.
expect2='i8 = 127, u8 = 52, i16 = -32767, u16 = 2, i32 = -1, u32 = 7, i64 = 42, u64 = 0, x8 = 0xFF, x16 = 0x1, x32 = 0x0, x64 = 0xFEDCBA9876543210, s = "second", empty = "x", _seq_length = 1, seq = [ [0] = 18446744073709551615 ], _xseq_length = 1, xseq = [ [0] = 0x10 ], _noseq_length = 0, noseq = [ ], d = 0.125'
got=$(payload 1)
tap_check "extreme values of every type decode exactly" [ "$got" = "$expect1" ] ||
	tap_diag "got:      $got" "expected: $expect1"
got=$(payload 2)
tap_check "values wider than their field keep their low bytes" [ "$got" = "$expect2" ] ||
	tap_diag "got:      $got" "expected: $expect2"
tap_check "the ip context is the address given to dpa_class_record" \
	[ "$(ip_of 1)" = $((0x401000)) -a "$(ip_of 2)" = $((0x401010)) ]

# The declarations lttng-sessiond wrote, field by field.
babeltrace2 --output-format=ctf-metadata "$trace"/ust/uid/*/64-bit >"$DP_TMP/metadata" 2>&1
sed -n '/name = "dptest:types";/,/^};/p' "$DP_TMP/metadata" |
	sed -nE 's/^[[:space:]]+(.*;)$/\1/p' | grep -v -e '^name =' -e '^id =' \
	-e '^stream_id =' -e '^loglevel =' -e '^};$' >"$DP_TMP/decl"
int() { echo "integer { size = $1; align = 8; signed = $2; encoding = none; base = $3; }"; }
cat >"$DP_TMP/decl.expected" <<EOF
$(int 8 1 10) _i8;
$(int 8 0 10) _u8;
$(int 16 1 10) _i16;
$(int 16 0 10) _u16;
$(int 32 1 10) _i32;
$(int 32 0 10) _u32;
$(int 64 1 10) _i64;
$(int 64 0 10) _u64;
$(int 8 0 16) _x8;
$(int 16 0 16) _x16;
$(int 32 0 16) _x32;
$(int 64 0 16) _x64;
string _s;
string _empty;
$(int 32 0 10) __seq_length;
$(int 64 0 10) _seq[ __seq_length ];
$(int 32 0 10) __xseq_length;
$(int 64 0 16) _xseq[ __xseq_length ];
$(int 32 0 10) __noseq_length;
$(int 64 0 10) _noseq[ __noseq_length ];
floating_point { exp_dig = 11; mant_dig = 53; align = 8; } _d;
EOF
diff -u "$DP_TMP/decl.expected" "$DP_TMP/decl" >"$DP_TMP/decl.diff"
tap_ok $? "the metadata declares each field with its size, signedness and base" ||
	tap_diag_file "$DP_TMP/decl.diff"

tap_done
