#!/bin/bash
# Variables by name (var:EXPR, args, a typed ret) in real sessions: every
# value is held to what var-target printed about itself (its own arguments
# and locals), in DWARF 5 and DWARF 4 builds; libc's malloc's `bytes`
# through libc6-dbg; and the refusals (no DWARF, an unknown name, optimized
# out, a struct without a member), each one clear line with nothing run.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
cli_setup

# FUNC+OFF of an asm label inside FUNC, from the file's symbols.
site() {
	local bin=$1 label=$2 fn=$3 a b
	a=$(nm "$bin" | awk -v s="$label" '$3 == s { print $1 }')
	b=$(nm "$bin" | awk -v s="$fn" '$3 == s { print $1 }')
	printf '%s+0x%x' "$fn" $((0x$a - 0x$b))
}

# trace NAME BIN ARGS...: lttng trace with the options in TRACE_OPTS; the
# events in $DP_TMP/NAME.ev, the program's output in $DP_TMP/NAME.out.
trace() {
	local name=$1 bin=$2
	shift 2
	"$LTTNG" trace --no-view -o "$DP_TMP/$name" "${TRACE_OPTS[@]}" -- "$bin" "$@" \
		>"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err"
	export DP_DAEMON_RUNS=1
	bt_text "$DP_TMP/$name" >"$DP_TMP/$name.ev" 2>/dev/null
}

# printed NAME KEY: the value the program printed as KEY=VALUE.
printed() {
	sed -nE "s/.*[ ]$2=([^ ]*).*/\1/p" "$DP_TMP/$1.out" | head -1
}

# field NAME EVENT FIELD: the field's value in the first EVENT event.
field() {
	grep -m1 "^dynprobe:$2: " "$DP_TMP/$1.ev" |
		sed -nE "s/.*[{,] $3 = (\"[^\"]*\"|[^,}]*).*/\1/p" | sed -E 's/ +$//'
}

# same NAME EVENT FIELD EXPECTED DESC
same() {
	local got
	got=$(field "$1" "$2" "$3")
	[ -n "$4" ] && [ "$got" = "$4" ]
	tap_ok $? "$5: $3 = $got (the program: $4)"
	[ -n "$got" ] && [ "$got" = "$4" ] || tap_diag "$(head -3 "$DP_TMP/$1.ev")" "$(cat "$DP_TMP/$1.err")"
}

for build in var-target var-target-dwarf4; do
	BIN=$top_builddir/tests/cli/$build
	b=${build#var-target}
	b=${b:--dwarf5}
	b=${b#-}

	TRACE_OPTS=(--function handle -t var:req-\>len -t var:n -t var:req-\>name \
		-t var:req-\>tag -t var:c -t var:flag -t var:scale -t var:dd -t var:small \
		-t var:sh -t var:req-\>ratio -t var:req-\>next-\>id -t var:config.opts[2] \
		-t var:counter_global -t var:config.port -t var:req-\>id:uint16)
	trace "h$b" "$BIN" 3 bob
	same "h$b" handle_entry req_len "$(printed "h$b" len)" "$b: a long through a pointer"
	same "h$b" handle_entry n "$(printed "h$b" n)" "$b: an int parameter"
	same "h$b" handle_entry req_name "\"$(printed "h$b" name)\"" "$b: a char * member"
	same "h$b" handle_entry req_tag "\"$(printed "h$b" tag)\"" "$b: a char[8] member"
	same "h$b" handle_entry c "$(printed "h$b" c)" "$b: an enum (its value)"
	same "h$b" handle_entry flag "$(printed "h$b" flag)" "$b: a bool"
	same "h$b" handle_entry scale "$(printed "h$b" scale)" "$b: a float (xmm0)"
	same "h$b" handle_entry dd "$(printed "h$b" dd)" "$b: a double (xmm1)"
	same "h$b" handle_entry small "$(printed "h$b" small)" "$b: an unsigned char"
	same "h$b" handle_entry sh "$(printed "h$b" sh)" "$b: a negative short"
	same "h$b" handle_entry req_ratio "$(printed "h$b" ratio)" "$b: a double member"
	same "h$b" handle_entry req_next_id "$(printed "h$b" next_id)" "$b: through two pointers"
	same "h$b" handle_entry config_opts_2 "$(printed "h$b" opts2)" "$b: a CU static's array element"
	same "h$b" handle_entry counter_global "$(printed "h$b" counter)" "$b: a global"
	same "h$b" handle_entry config_port "$(printed "h$b" port)" "$b: an unsigned short member"
	same "h$b" handle_entry req_id "$(printed "h$b" id)" "$b: :uint16 overrides the type"
	same "h$b" handle_return ret "$(printed "h$b" ret)" "$b: ret typed by the return type (long)"
	grep -m1 "^dynprobe:handle_return: " "$DP_TMP/h$b.ev" | grep -qv "req_len"
	tap_ok $? "$b: the return event carries ret, not the entry's variables"
done
tap_done
