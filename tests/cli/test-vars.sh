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
# events in $DP_TMP/NAME.ev (none when it refused the options and wrote no
# trace), the program's output in $DP_TMP/NAME.out.
trace() {
	local name=$1 bin=$2
	shift 2
	rm -rf "${DP_TMP:?}/$name"
	"$LTTNG" trace --no-view -o "$DP_TMP/$name" "${TRACE_OPTS[@]}" -- "$bin" "$@" \
		>"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err"
	export DP_DAEMON_RUNS=1
	: >"$DP_TMP/$name.ev"
	[ -d "$DP_TMP/$name" ] && bt_text "$DP_TMP/$name" >"$DP_TMP/$name.ev"
	return 0
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

builds=(var-target var-target-dwarf4)
if [ -x "$top_builddir/tests/cli/var-target-clang" ]; then
	builds+=(var-target-clang)
else
	tap_diag "clang is not installed: the gcc builds alone are tested"
fi
for build in "${builds[@]}"; do
	BIN=$top_builddir/tests/cli/$build
	b=${build#var-target}
	b=${b:--dwarf5}
	b=${b#-}

	TRACE_OPTS=(--function handle -t var:req-\>len -t var:n -t var:req-\>name \
		-t var:req-\>tag -t var:c -t var:flag -t var:scale -t var:dd -t var:small \
		-t var:sh -t var:req-\>ratio -t var:req-\>next-\>id -t var:config.opts[2] \
		-t var:counter_global -t var:config.port -t var:req-\>id:uint16 -t var:tls_counter)
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
	same "h$b" handle_entry tls_counter "$(printed "h$b" tls)" "$b: a thread-local variable"
	same "h$b" handle_return ret "$(printed "h$b" ret)" "$b: ret typed by the return type (long)"
	grep -m1 "^dynprobe:handle_return: " "$DP_TMP/h$b.ev" | grep -qv "req_len"
	tap_ok $? "$b: the return event carries ret, not the entry's variables"

	TRACE_OPTS=(--function handle -t args)
	trace "a$b" "$BIN" 4 alice
	same "a$b" handle_entry n "$(printed "a$b" n)" "$b: args: n"
	same "a$b" handle_entry dd "$(printed "a$b" dd)" "$b: args: dd"
	same "a$b" handle_entry sh "$(printed "a$b" sh)" "$b: args: sh"
	grep -m1 "^dynprobe:handle_entry: " "$DP_TMP/a$b.ev" |
		grep -Eq "req = 0x[0-9A-Fa-f]+, n = [0-9]+, c = 7, flag = 1, scale = [0-9.]+, _scale_error = 0, dd = [0-9.]+, _dd_error = 0, small = 200, sh = -3"
	ok=$?
	tap_ok $ok "$b: args: every parameter in order, typed (a pointer in hex)"
	[ $ok -eq 0 ] || tap_diag "$(grep -m1 "^dynprobe:handle_entry: " "$DP_TMP/a$b.ev")"

	# A location list: v in rdi at the entry, in a callee-saved register
	# after the call; r only after it.
	TRACE_OPTS=(--probe loclist -t var:v)
	trace "l$b" "$BIN" 5
	same "l$b" loclist v "$(printed "l$b" v)" "$b: a location list's entry at the function's entry"
	TRACE_OPTS=(--probe "$(site "$BIN" loclist_site loclist)" -t var:v -t var:r)
	trace "m$b" "$BIN" 5
	ev=$(sed -nE 's/^(dynprobe:loclist[^:]*):.*/\1/p' "$DP_TMP/m$b.ev" | head -1)
	same "m$b" "${ev#dynprobe:}" v "$(printed "m$b" v)" "$b: the same variable after a call"
	same "m$b" "${ev#dynprobe:}" r "$(printed "m$b" r)" "$b: a local set by the call"

	# A lexical block whose x hides the function's x.
	TRACE_OPTS=(--probe "$(site "$BIN" block_site blocks)" -t var:x)
	trace "b$b" "$BIN" 6
	ev=$(sed -nE 's/^dynprobe:([^:]*):.*/\1/p' "$DP_TMP/b$b.ev" | head -1)
	same "b$b" "$ev" x "$(printed "b$b" inner)" "$b: a block's variable hides the outer one"

	# On the stack: a volatile local and an array element (frame base:
	# the CFA from .eh_frame).
	TRACE_OPTS=(--probe "$(site "$BIN" stack_site stacked)" -t var:onstack -t var:arr[2])
	trace "s$b" "$BIN" 7
	ev=$(sed -nE 's/^dynprobe:([^:]*):.*/\1/p' "$DP_TMP/s$b.ev" | head -1)
	same "s$b" "$ev" onstack "$(printed "s$b" onstack)" "$b: a local on the stack"
	same "s$b" "$ev" arr_2 "$(printed "s$b" arr2)" "$b: an array element on the stack"

	# A struct split into two registers (DW_OP_piece).
	TRACE_OPTS=(--probe "$(site "$BIN" piece_site pieces)" -t var:p.a -t var:p.b)
	trace "p$b" "$BIN" 8
	ev=$(sed -nE 's/^dynprobe:([^:]*):.*/\1/p' "$DP_TMP/p$b.ev" | head -1)
	same "p$b" "$ev" p_a "$(printed "p$b" a)" "$b: a member held in a piece"
	same "p$b" "$ev" p_b "$(printed "p$b" b)" "$b: the other piece"

	# Bit-fields through a pointer: signed ones negative.
	TRACE_OPTS=(--function bitfields -t var:f-\>ready -t var:f-\>level -t var:f-\>code \
		-t var:f-\>delta -t var:f-\>tail)
	trace "f$b" "$BIN" 11
	for m in ready level code delta tail; do
		same "f$b" bitfields_entry "f_$m" "$(printed "f$b" $m)" "$b: bit-field $m"
	done

	# An inlined function's parameters at each copy's entry (f a constant
	# there): every pair the program passed, and only those.
	TRACE_OPTS=(--function scale_by -t var:v -t var:f)
	trace "i$b" "$BIN" 9
	want=$(sed -nE 's/^inline v=(-?[0-9]+) f=([0-9]+)$/\1 \2/p' "$DP_TMP/i$b.out" | sort)
	got=$(sed -nE 's/^dynprobe:scale_by_entry: .*[{,] v = (-?[0-9]+), f = ([0-9]+).*/\1 \2/p' \
		"$DP_TMP/i$b.ev" | sort)
	[ -n "$want" ] && [ "$got" = "$want" ]
	tap_ok $? "$b: an inlined copy's parameters, at each copy: $(echo $got) (the program: $(echo $want))"
done

# libc's malloc, its DWARF from libc6-dbg (a build-id tree): the parameter
# is named bytes there.
MU=$top_builddir/tests/cli/malloc-user
LIBC=$(ldd "$MU" | awk '$1 ~ /^libc\.so/ { print $3 }')
TRACE_OPTS=(--path "$LIBC" --function malloc -t var:bytes)
trace mal "$MU" 12345 777 31
want=$(sed -nE 's/^malloc ([0-9]+)$/\1/p' "$DP_TMP/mal.out" | sort -n | tr '\n' ' ')
got=$(sed -nE 's/^dynprobe:malloc_entry: .*[{,] bytes = ([0-9]+).*/\1/p' "$DP_TMP/mal.ev" | sort -n |
	grep -xE '12345|777|31' | tr '\n' ' ')
[ -n "$want" ] && [ "$got" = "$want" ]
tap_ok $? "libc malloc's bytes records exactly the sizes the program allocated ($got; the program: $want)"
[ "$got" = "$want" ] || tap_diag "$(cat "$DP_TMP/mal.err")" "$(head -3 "$DP_TMP/mal.ev")"
n=$(grep -c "^dynprobe:malloc_return: " "$DP_TMP/mal.ev")
[ "$n" -gt 0 ] && [ "$(grep "^dynprobe:malloc_return: " "$DP_TMP/mal.ev" |
	grep -cE "[{,] ret = 0x[0-9A-Fa-f]+ ")" -eq "$n" ]
tap_ok $? "malloc's $n returns record ret as a pointer (hex), its DWARF return type"

# refused NAME REGEX DESC: the trace was refused with one Error line, and
# the program never ran.
refused() {
	local n
	n=$(grep -c . "$DP_TMP/$1.err")
	grep -Eq "^Error: .*$2" "$DP_TMP/$1.err" && [ "$n" -eq 1 ] && ! [ -s "$DP_TMP/$1.out" ]
	tap_ok $? "$3: $(cat "$DP_TMP/$1.err")"
}
BIN=$top_builddir/tests/cli/var-target
TRACE_OPTS=(--function handle -t var:nosuch)
trace e1 "$BIN" 3
refused e1 "no variable 'nosuch' .*in scope there: req, n, c, flag, scale, dd, small, sh" \
	"an unknown name lists the names in scope"
TRACE_OPTS=(--probe "$(site "$BIN" dropped_site dropped)" -t var:gone)
trace e2 "$BIN" 3
refused e2 "'gone' is optimized out" "a variable with no location is refused as optimized out"
TRACE_OPTS=(--probe loclist -t var:r)
trace e3 "$BIN" 3
refused e3 "'r' is optimized out at 0x[0-9a-f]+: it has a location only at 0x" \
	"a variable not yet live names where it is"
TRACE_OPTS=(--function handle -t "var:*req")
trace e4 "$BIN" 3
refused e4 "'\*req' is a struct: ask for a member .*: id, len, name, tag, ratio, next" \
	"a struct without a member lists the members"
TRACE_OPTS=(--function handle -t var:req-\>nope)
trace e5 "$BIN" 3
refused e5 "'req' has no member 'nope' \(its members: id, len, name, tag, ratio, next\)" \
	"an unknown member lists the members"
TRACE_OPTS=(--path "$LIBC" --function malloc -t var:tcache)
trace e7 "$MU" 5
refused e7 "thread-local variable of a shared library" "a shared library's thread-local variable is refused"
# Without its build-id too: the daemon keeps DWARF by build-id, and this
# one has var-target's.
objcopy --strip-debug --remove-section=.note.gnu.build-id "$BIN" "$DP_TMP/stripped"
TRACE_OPTS=(--function handle -t var:n)
trace e8 "$DP_TMP/stripped" 3
refused e8 "context .var:n.: no DWARF for .*stripped.*looked in" "a program without debug information says where its DWARF was looked for"
TRACE_OPTS=(--function foo -t var:x)
trace e6 "$TARGET" 3
refused e6 "no DWARF" "an object without DWARF for the code is refused"

# lttng list --vars: what can be read at a site, its type and where it
# lives (the types as var-target declares them).
V=$top_builddir/tests/cli/var-target
"$LTTNG" list -u --path "$V" --vars handle >"$DP_TMP/lv.out" 2>&1
grep -Eq "^  req +struct req \* +parameter +rdi$" "$DP_TMP/lv.out" &&
	grep -Eq "^  scale +float +parameter +xmm0$" "$DP_TMP/lv.out" &&
	grep -Eq "^  config +struct cfg +CU static +0x[0-9a-f]+ addr$" "$DP_TMP/lv.out" &&
	grep -Eq "^  tls_counter +long int +global +fs_base-0x[0-9a-f]+ addr$" "$DP_TMP/lv.out"
ok=$?
tap_ok $ok "list --vars handle: parameters in their registers, a CU static and a thread-local global"
[ $ok -eq 0 ] || tap_diag "$(cat "$DP_TMP/lv.out")"
"$LTTNG" list -u --path "$V" --vars loclist >"$DP_TMP/lv2.out" 2>&1
grep -Eq "^  r +long int +local +unavailable: 'r' is optimized out at 0x[0-9a-f]+: it has a location only at 0x" "$DP_TMP/lv2.out"
tap_ok $? "list --vars loclist: a local not yet live says where it is"
"$LTTNG" list -u --path "$V" --vars "$(site "$V" piece_site pieces)" >"$DP_TMP/lv3.out" 2>&1
grep -Eq "^  p +struct pair +local +[a-z0-9]+, piece 0-4; [a-z0-9]+, piece 4-8$" "$DP_TMP/lv3.out"
tap_ok $? "list --vars in pieces: a struct split between two registers"
"$LTTNG" list -u --path "$DP_TMP/stripped" --vars handle >"$DP_TMP/lv4.out" 2>&1
[ $? -eq 1 ] && grep -q "^Error: no DWARF for" "$DP_TMP/lv4.out"
tap_ok $? "list --vars without DWARF: $(head -c 120 "$DP_TMP/lv4.out")"

# add-context on an enabled event checks the variable at every site before
# anything changes: refused with the names in scope, the event as it was.
S=$top_builddir/tests/cli/var-target
"$LTTNG" create v >/dev/null 2>&1 &&
	"$LTTNG" enable-event -u --path "$S" --function handle h >/dev/null 2>"$DP_TMP/en.err"
tap_ok $? "a path-wide --function event to add contexts to"
before=$("$LTTNG" list v 2>&1)
"$LTTNG" add-context -u -e h -t var:nosuch >/dev/null 2>"$DP_TMP/ac.err"
st=$?
after=$("$LTTNG" list v 2>&1)
[ $st -ne 0 ] && [ "$(grep -c . "$DP_TMP/ac.err")" -eq 1 ] &&
	grep -q "^Error: .*no variable 'nosuch' .*in scope there: req, n, c" "$DP_TMP/ac.err" &&
	[ "$before" = "$after" ]
tap_ok $? "add-context -t var:nosuch refused, the event unchanged: $(cat "$DP_TMP/ac.err")"
"$LTTNG" add-context -u -e h -t var:req-\>len -t args >/dev/null 2>"$DP_TMP/ac2.err"
tap_ok $? "add-context -t var:req->len -t args accepted $(cat "$DP_TMP/ac2.err")"
"$LTTNG" list v 2>&1 | grep -q "var:req->len"
tap_ok $? "the event lists its var: context"
"$LTTNG" destroy v >/dev/null 2>&1
tap_done
