#!/bin/bash
# Source-level probes end to end, each count held to dwarf-target's own
# counters: --function helper probes the out-of-line body and the three
# inlined copies (which copy fired: the event's ip, inside the caller nm
# names), --copies chooses them, a partially inlined function (only
# inlined copies and a .part), --probe FILE:LINE on the line of every copy;
# the same with the DWARF in a build-id tree and behind a debuglink; libc's
# inlined two_way_short_needle (libc6-dbg); refusals that leave nothing
# installed; the default FILE_LINE event name; save/load and --mi xml with
# the copies' kinds.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
# The private build-id tree below, for the daemon that lttng trace starts.
export LTTNG_DYNPROBE_DEBUG_DIRS=$DP_TMP/debug:/usr/lib/debug
cli_setup

T=$top_builddir/tests/cli/dwarf-target-nopie
SRC=$top_srcdir/tests/cli/dwarf-target.c
HELPER_LINE=$(grep -n "helper's line" "$SRC" | cut -d: -f1)
COMMENT_LINE=$(grep -n 'runs the calls' "$SRC" | cut -d: -f1)
N=12
name=dwarf_target_c_$HELPER_LINE

# same A B: two counts, both known (numbers) and equal: a missing file or
# event list is a failure, never an empty match.
same() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" = "$2" ]
}
# counter FILE NAME...: the program's own count (the sum of several),
# nothing when the file lacks one of them.
counter() {
	local f=$1
	shift
	awk -v keys="$*" 'BEGIN { n = split(keys, k, " ") }
		{ for (i = 1; i < NF; i++) v[$i] = $(i + 1) }
		END { for (j = 1; j <= n; j++) { if (!(k[j] in v)) exit; s += v[k[j]] } print s }' "$f" 2>/dev/null
}
nev() {
	grep -c "^dynprobe:$2: " "$1"
}
# Events named $2 of trace text $1 by the function (nm, .cold parts as
# their function) holding their ip: "caller_a 12" lines.
by_function() {
	local bin=$3
	grep "^dynprobe:$2: " "$1" | sed -nE 's/.*\{ ip = ([0-9]+) \}.*/\1/p' |
		awk -v nm="nm -S $bin" 'BEGIN {
			while ((nm | getline) > 0) if ($3 ~ /^[Tt]$/) {
				n++; s[n] = strtonum("0x" $1); z[n] = strtonum("0x" $2)
				f[n] = $4; sub(/\.cold$/, "", f[n]) } }
			{ for (i = 1; i <= n; i++) if ($1 >= s[i] && $1 < s[i] + z[i]) { c[f[i]]++; next }
			  c["?"]++ }
			END { for (k in c) print k, c[k] }' | sort
}
# trace NAME ARGS...: lttng trace of T (or $BIN) with args, into $DP_TMP/NAME.
trace() {
	local name=$1
	shift
	rm -rf "$DP_TMP/$name"
	"$LTTNG" trace --no-view -o "$DP_TMP/$name" -t ip "$@" -- "${BIN:-$T}" "$N" \
		"$DP_TMP/$name.counts" >"$DP_TMP/$name.out" 2>&1
	tstatus=$?
	export DP_DAEMON_RUNS=1
	bt_text "$DP_TMP/$name" >"$DP_TMP/$name.ev" 2>/dev/null
	[ "$tstatus" -eq 0 ] || tap_diag_file "$DP_TMP/$name.out"
}

# ---- separate debug info, first: the daemon reads DWARF once per build-id,
# and the stripped copy has the build-id of $T, whose own DWARF would serve.
id=$(readelf -n "$T" | awk '/Build ID/ { print $3 }')
mkdir -p "$DP_TMP/debug/.build-id/${id:0:2}" "$DP_TMP/dl/.debug"
objcopy --only-keep-debug "$T" "$DP_TMP/debug/.build-id/${id:0:2}/${id:2}.debug" &&
	objcopy --strip-debug "$T" "$DP_TMP/stripped" &&
	cp "$DP_TMP/debug/.build-id/${id:0:2}/${id:2}.debug" "$DP_TMP/dl/.debug/t.debug" &&
	objcopy --strip-debug --remove-section=.note.gnu.build-id \
		--add-gnu-debuglink="$DP_TMP/dl/.debug/t.debug" "$T" "$DP_TMP/dl/t" ||
	tap_bail "cannot split the debug info"
BIN=$DP_TMP/stripped trace split --function helper
tap_check "stripped, DWARF in a build-id tree: every copy ($(nev "$DP_TMP/split.ev" helper_entry))" \
	same "$(nev "$DP_TMP/split.ev" helper_entry)" "$(counter "$DP_TMP/split.counts" helper)"

BIN=$DP_TMP/dl/t trace link --probe "dwarf-target.c:$HELPER_LINE"
tap_check "stripped, no build-id, DWARF behind a debuglink: the line ($(nev "$DP_TMP/link.ev" "$name"))" \
	same "$(nev "$DP_TMP/link.ev" "$name")" "$(counter "$DP_TMP/link.counts" helper)"

# ---- every copy of helper ---------------------------------------------
trace all --function helper
c=$DP_TMP/all.counts
tap_ok $tstatus "trace --function helper"
tap_check "an entry per call of helper, out of line or inlined ($(nev "$DP_TMP/all.ev" helper_entry) of $(counter "$c" helper))" \
	same "$(nev "$DP_TMP/all.ev" helper_entry)" "$(counter "$c" helper)"
tap_check "a return per call ($(nev "$DP_TMP/all.ev" helper_return))" \
	same "$(nev "$DP_TMP/all.ev" helper_return)" "$(counter "$c" helper)"
want="caller_a $(counter "$c" a)
caller_b $(counter "$c" b)
caller_c $(counter "$c" c)
helper $(counter "$c" ptr)"
got=$(by_function "$DP_TMP/all.ev" helper_entry "$T")
tap_check "each entry's ip says which copy fired: $(tr '\n' ' ' <<<"$got")" [ "$got" = "$want" ]
got=$(by_function "$DP_TMP/all.ev" helper_return "$T")
tap_check "so does each return's: $(tr '\n' ' ' <<<"$got")" [ "$got" = "$want" ]

trace outline --function helper --copies=out-of-line
tap_check "--copies=out-of-line: the calls through the pointer only" \
	same "$(nev "$DP_TMP/outline.ev" helper_entry)" "$(counter "$DP_TMP/outline.counts" ptr)"
trace inlined --function helper --copies=inlined
c=$DP_TMP/inlined.counts
tap_check "--copies=inlined: the calls of the three callers only" \
	same "$(nev "$DP_TMP/inlined.ev" helper_entry)" "$(counter "$c" a b c)"

# ---- a partially inlined function: copies and check.part.N --------------
trace part --function check
c=$DP_TMP/part.counts
tap_ok $tstatus "trace --function check (no out-of-line body: inlined copies and a .part)"
tap_check "an entry per call of check ($(nev "$DP_TMP/part.ev" check_entry) of $(counter "$c" check))" \
	same "$(nev "$DP_TMP/part.ev" check_entry)" "$(counter "$c" check)"
tap_check "a return per call ($(nev "$DP_TMP/part.ev" check_return))" \
	same "$(nev "$DP_TMP/part.ev" check_return)" "$(counter "$c" check)"

# ---- a source line -----------------------------------------------------
trace line --probe "dwarf-target.c:$HELPER_LINE"
c=$DP_TMP/line.counts
tap_ok $tstatus "trace --probe dwarf-target.c:$HELPER_LINE"
tap_check "the event is named FILE_LINE, once per run of the line ($(nev "$DP_TMP/line.ev" "$name"))" \
	same "$(nev "$DP_TMP/line.ev" "$name")" "$(counter "$c" helper)"
got=$(by_function "$DP_TMP/line.ev" "$name" "$T")
tap_check "the line fires in each copy: $(tr '\n' ' ' <<<"$got")" [ "$got" = "$want" ]

# ---- libc's inlined helper -----------------------------------------------
LIBC=$(ldd "$T" | awk '/libc.so.6/ { print $3 }')
trace libc --path "$LIBC" --function two_way_short_needle
c=$DP_TMP/libc.counts
tap_ok $tstatus "trace --path libc --function two_way_short_needle (inlined into strcasestr)"
tap_check "one entry per strcasestr call ($(nev "$DP_TMP/libc.ev" two_way_short_needle_entry) of $(counter "$c" strcasestr))" \
	same "$(nev "$DP_TMP/libc.ev" two_way_short_needle_entry)" "$(counter "$c" strcasestr)"
tap_check "one return per call: the jumps that leave its loop ($(nev "$DP_TMP/libc.ev" two_way_short_needle_return))" \
	same "$(nev "$DP_TMP/libc.ev" two_way_short_needle_return)" "$(counter "$c" strcasestr)"

# ---- refusals: one line, nothing installed ---------------------------------
"$STOCK" -n create s --output="$DP_TMP/s" >/dev/null || tap_bail "create s"
check_refused "a line without code" "line $COMMENT_LINE of .*dwarf-target.c has no code.*nearest line" \
	enable-event -u --path "$T" --probe "dwarf-target.c:$COMMENT_LINE" ev
check_refused "an unknown source file" "no source file 'nope.c'" \
	enable-event -u --path "$T" --probe nope.c:3 ev
LTTNG_DYNPROBE_DEBUG_DIRS=/nonexistent check_refused "--copies=inlined without DWARF" \
	"no DWARF for .*-dbgsym" \
	enable-event -u --path "$DP_TMP/stripped" --function helper --copies=inlined ev
check_refused "a bad --copies" "--copies=some: expected all" \
	enable-event -u --path "$T" --function helper --copies=some ev
check_refused "--copies without --function" "--copies chooses the copies of a --function" \
	enable-event -u --path "$T" --probe main --copies=all ev

# ---- the default name, save/load, --mi ----------------------------------------
run_cli enable-event -u -s s --path "$T" --probe "dwarf-target.c:$HELPER_LINE"
tap_ok $status "enable-event --probe FILE:LINE without a name" || tap_diag "$out" "$err"
grep -q "dynprobe:$name" <<<"$out"
tap_ok $? "its event is dynprobe:$name" || tap_diag "$out"
# One address that starts two lines (readelf's decoded line table: the
# statement rows of dwarf-target.c), one of them probed: the reply says so.
shared=$(readelf --debug-dump=decodedline "$T" | awk '$1 == "dwarf-target.c" && $NF == "x" {
		if (seen[$3] != "" && seen[$3] != $2) print $3, seen[$3], $2; else seen[$3] = $2 }' |
	while read -r addr l1 l2; do
		"$LTTNG" list -u --path "$T" --lines "dwarf-target.c:$l1" |
			grep -qw "0x${addr#0x}" && { echo "$addr $l1 $l2"; break; }
	done)
if [ -n "$shared" ]; then
	set -- $shared
	run_cli enable-event -u -s s --path "$T" --probe "dwarf-target.c:$2" shared
	grep -q "$1 is also line $3 of dwarf-target.c" <<<"$out"
	tap_ok $? "a probed address that also starts line $3 is said ($1, line $2)" || tap_diag "$out" "$err"
else
	tap_ok 1 "readelf shows no address starting two lines of dwarf-target.c"
fi
run_cli enable-event -u -s s --path "$T" --function helper --copies=inlined hin
tap_ok $status "enable-event --function helper --copies=inlined" || tap_diag "$out" "$err"
run_cli --mi xml list s
grep -q '<dp:kind>function-inlined</dp:kind>' <<<"$out"
tap_ok $? "--mi xml list names the kind function-inlined"
run_cli save s -o "$DP_TMP/saved"
grep -Eq 'kind=function(-|%2[dD])inlined' "$DP_TMP/saved/s.lttng"
tap_ok $? "save keeps the kind" || tap_diag "$out" "$err"
run_cli destroy s
run_cli load -i "$DP_TMP/saved/s.lttng" s
tap_ok $status "load" || tap_diag "$out" "$err"
run_cli list s
grep -q "function-inlined helper in $T" <<<"$out" && grep -q "probe dwarf-target.c:$HELPER_LINE in $T" <<<"$out"
tap_ok $? "both events came back with their kinds" || tap_diag "$out"
run_cli destroy s
tap_done
