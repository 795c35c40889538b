#!/bin/bash
# Where DWARF comes from and what lttng list makes of it, without a session:
# --inlines (each copy of helper() is in the caller nm says), --lines (the
# line of helper() has one address in each copy and in the out-of-line
# body), for DWARF 5, DWARF 4 with compressed sections, and clang when it is
# installed; the lookup order (own sections, a build-id tree, a debuglink, a
# debuginfod client's cache), refusals (no DWARF naming every place looked,
# a line without code, an ambiguous file name, a bad debuglink CRC); libc's
# DWARF from libc6-dbg.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/cli/cli.sh"
DP_TMP=$(mktemp -d) || tap_bail "mktemp"
trap 'rm -rf "$DP_TMP"' EXIT
SRC=$top_srcdir/tests/cli/dwarf-target.c
HELPER_LINE=$(grep -n "helper's line" "$SRC" | cut -d: -f1)
COMMENT_LINE=$(grep -n 'runs the calls' "$SRC" | cut -d: -f1)

# The function of nm's symbols (T/t, with their sizes) holding an address.
fn_at() {
	nm -S "$1" | awk -v a=$((16#${2#0x})) '$3 ~ /^[Tt]$/ {
		s = strtonum("0x" $1); z = strtonum("0x" $2)
		if (a >= s && a < s + z) { print $4; exit } }'
}

# A refusal: status 1, nothing on stdout, one line on stderr matching regex.
# (No session or daemon is involved: listings run on the file.)
refused() {
	local desc=$1 regex=$2 ok=0
	shift 2
	run_cli "$@"
	[ "$status" -eq 1 ] && [ -z "$out" ] && [ "$(wc -l <<<"$err")" -eq 1 ] &&
		grep -Eq -- "^Error: .*$regex" <<<"$err" || ok=1
	tap_ok "$ok" "$desc"
	[ "$ok" -eq 0 ] || tap_diag "lttng $* -> $status" "stdout: $out" "stderr: $err"
}

check_target() {
	local t=$1 what=$2 out addrs a fns
	out=$("$LTTNG" list -u --path "$t" --inlines helper 2>&1)
	tap_ok $? "$what: list --inlines helper"
	for c in caller_a caller_b caller_c; do
		n=$(grep -c "^  copy [0-9]*: inlined into $c at dwarf-target.c:" <<<"$out")
		tap_check "$what: one copy inlined into $c ($n)" [ "$n" = 1 ]
		a=$(grep -A2 "inlined into $c at" <<<"$out" | awk '$1 == "entry" { print $2 }')
		tap_check "$what: the copy in $c is entered inside $c (nm: $(fn_at "$t" "$a"))" \
			[ "$(fn_at "$t" "$a")" = "$c" ]
	done
	# The copies have DW_AT_ranges; gcc puts the second in the caller's
	# .cold part.
	r=$(grep -A1 "inlined into caller_a at" <<<"$out" | grep '^    ranges')
	a=$(awk '{ print $3 }' <<<"$r")
	if [ "$what" = clang ]; then
		grep -q '(DW_AT_ranges)' <<<"$r"
		tap_ok $? "$what: the copy in caller_a has DW_AT_ranges ($r)"
	else
		tap_check "$what: the copy in caller_a has a range in caller_a.cold (${a%-*}: $(fn_at "$t" "${a%-*}"))" \
			[ "$(fn_at "$t" "${a%-*}")" = caller_a.cold ]
	fi
	grep -q '^  out of line: ' <<<"$out"
	tap_ok $? "$what: helper's out-of-line body is listed"

	out=$("$LTTNG" list -u --path "$t" --lines "dwarf-target.c:$HELPER_LINE" 2>&1)
	tap_ok $? "$what: list --lines dwarf-target.c:$HELPER_LINE"
	addrs=$(awk -v l="$HELPER_LINE" '$1 == l { for (i = 2; i <= NF && $i ~ /^0x/; i++) print $i }' <<<"$out")
	fns=$(for a in $addrs; do fn_at "$t" "$a"; done | sort | tr '\n' ' ')
	tap_check "$what: helper's line has one address in each copy and the body ($fns)" \
		[ "$fns" = "caller_a caller_b caller_c helper " ]
}

check_target "$top_builddir/tests/cli/dwarf-target" "DWARF 5"
check_target "$top_builddir/tests/cli/dwarf-target-dwarf4" "DWARF 4, compressed"
if [ -x "$top_builddir/tests/cli/dwarf-target-clang" ]; then
	check_target "$top_builddir/tests/cli/dwarf-target-clang" "clang"
else
	tap_diag "clang is not installed: its DWARF was not tried"
fi
T=$top_builddir/tests/cli/dwarf-target

# Refusals: each one line, on stderr.
refused "a line without code" "has no code" \
	list -u --path "$T" --lines "dwarf-target.c:$COMMENT_LINE"
mkdir -p "$DP_TMP/one" "$DP_TMP/two"
printf 'int one(int x)\n{\n\treturn x + 1;\n}\n' >"$DP_TMP/one/same.c"
printf 'int two(int x)\n{\n\treturn x + 2;\n}\n' >"$DP_TMP/two/same.c"
printf 'int one(int);\nint two(int);\nint main(int c, char **v)\n{\n\treturn one(c) + two(c);\n}\n' \
	>"$DP_TMP/main.c"
gcc -O1 -g -o "$DP_TMP/same" "$DP_TMP/main.c" "$DP_TMP/one/same.c" "$DP_TMP/two/same.c" ||
	tap_bail "cannot build the two-same.c program"
refused "an ambiguous file name" "ambiguous.*one/same.c.*two/same.c" \
	list -u --path "$DP_TMP/same" --lines same.c:3
out=$("$LTTNG" list -u --path "$DP_TMP/same" --lines two/same.c:3 2>&1)
a=$(awk '$1 == 3 { print $2 }' <<<"$out")
tap_check "a longer path suffix names one file (line 3 in $(fn_at "$DP_TMP/same" "$a"))" \
	[ "$(fn_at "$DP_TMP/same" "$a")" = two ]

# C++: a member's DW_AT_name is unqualified; its copies are found by its
# linkage name, and a C function of the same short name has none of them.
cat >"$DP_TMP/cx.cc" <<'EOC'
volatile long sink;
__attribute__((noinline)) void mark(long x) { sink += x; }
namespace shop {
struct Cart {
	long n = 0;
	inline __attribute__((always_inline)) void add(long x) { n += x; mark(x); }
};
}
extern "C" __attribute__((noinline)) long add(long x) { mark(x); return x; }
__attribute__((noinline)) long user(shop::Cart &c, long x) { c.add(x); c.add(x + 1); return c.n; }
int main() { shop::Cart c; return (int)user(c, 2) + (int)add(3); }
EOC
g++ -O2 -g -o "$DP_TMP/cx" "$DP_TMP/cx.cc" || tap_bail "cannot build the C++ program"
out=$("$LTTNG" list -u --path "$DP_TMP/cx" --inlines _ZN4shop4Cart3addEl 2>&1)
tap_check "C++: shop::Cart::add's two copies by its linkage name ($(grep -c '^  copy' <<<"$out"))" \
	[ "$(grep -c '^  copy [0-9]*: inlined into user at cx.cc:' <<<"$out")" = 2 ]
out=$("$LTTNG" list -u --path "$DP_TMP/cx" --inlines add 2>&1)
grep -q '^Copies of add in .*: 1 out-of-line body, 0 inlined' <<<"$out"
tap_ok $? "C++: the C function add is not taken for the member's copies" || tap_diag "$out"
for n in 'shop::Cart::add' 'shop::Cart::add(long)'; do
	out=$("$LTTNG" list -u --path "$DP_TMP/cx" --inlines "$n" 2>&1)
	tap_check "C++: '$n' as written means the member's two copies ($(grep -c '^  copy' <<<"$out"))" \
		[ "$(grep -c '^  copy [0-9]*: inlined into user at cx.cc:' <<<"$out")" = 2 ]
done
refused "C++: another parameter list means no copy" "no function 'shop::Cart::add\\(int\\)'" \
	list -u --path "$DP_TMP/cx" --inlines 'shop::Cart::add(int)'

# Separate debug info.
cd "$DP_TMP" || tap_bail "cd"
id=$(readelf -n "$T" | awk '/Build ID/ { print $3 }')
objcopy --only-keep-debug "$T" t.debug && objcopy --strip-debug "$T" stripped ||
	tap_bail "objcopy"
refused "no DWARF: every place is named" \
	"no DWARF for $DP_TMP/stripped \\(build-id $id\\): looked in its own sections, /usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug, .*debuginfod.*-dbgsym" \
	list -u --path "$DP_TMP/stripped" --inlines helper
mkdir -p "bid/.build-id/${id:0:2}" && cp t.debug "bid/.build-id/${id:0:2}/${id:2}.debug"
out=$(LTTNG_DYNPROBE_DEBUG_DIRS=/nonexistent:$DP_TMP/bid "$LTTNG" list -u --path "$DP_TMP/stripped" \
	--lines "dwarf-target.c:$HELPER_LINE" 2>&1)
grep -q "(DWARF: $DP_TMP/bid/.build-id/${id:0:2}/${id:2}.debug, build-id)" <<<"$out"
tap_ok $? "stripped: the DWARF is found in a build-id tree of LTTNG_DYNPROBE_DEBUG_DIRS"
tap_check "stripped: the same four addresses" [ "$(awk -v l="$HELPER_LINE" '$1 == l { print NF }' <<<"$out")" -ge 5 ]

mkdir -p dl/.debug && objcopy --strip-debug --add-gnu-debuglink=t.debug "$T" dl/t &&
	cp t.debug dl/.debug/ || tap_bail "debuglink"
out=$("$LTTNG" list -u --path "$DP_TMP/dl/t" --inlines helper 2>&1)
grep -c '^  copy' <<<"$out" | grep -qx 3
tap_ok $? "debuglink: the DWARF in .debug/ gives helper's three copies"
out=$(LTTNG_DYNPROBE_DEBUG_DIRS=$DP_TMP/bid "$LTTNG" list -u --path "$DP_TMP/dl/t" --lines \
	"dwarf-target.c:$HELPER_LINE" 2>&1)
grep -q "DWARF: $DP_TMP/bid/.*, build-id)" <<<"$out"
tap_ok $? "a build-id tree is tried before the debuglink"
printf 'x' >>dl/.debug/t.debug
refused "a debuglink whose CRC differs is not taken" "dl/.debug/t.debug \\(its CRC does not match" \
	list -u --path "$DP_TMP/dl/t" --inlines helper

mkdir -p "cache/$id" && cp t.debug "cache/$id/debuginfo"
out=$(DEBUGINFOD_URLS=http://127.0.0.1:9 DEBUGINFOD_CACHE_PATH=$DP_TMP/cache "$LTTNG" list -u \
	--path "$DP_TMP/stripped" --lines "dwarf-target.c:$HELPER_LINE" 2>&1)
grep -q "DWARF: $DP_TMP/cache/$id/debuginfo, debuginfod)" <<<"$out"
tap_ok $? "DEBUGINFOD_URLS set: the client's cache is asked last, and answers"
DEBUGINFOD_URLS=http://127.0.0.1:9 DEBUGINFOD_CACHE_PATH=$DP_TMP/empty \
	refused "DEBUGINFOD_URLS set, no server: said" "debuginfod at http://127.0.0.1:9" \
	list -u --path "$DP_TMP/stripped" --inlines helper

# libc's DWARF from libc6-dbg: tcache_put, a static helper of malloc.c,
# exists only as inlined copies.
LIBC=$(ldd "$T" | awk '/libc.so.6/ { print $3 }')
libc_id=$(readelf -n "$LIBC" | awk '/Build ID/ { print $3 }')
out=$("$LTTNG" list -u --path "$LIBC" --inlines tcache_put 2>&1)
tap_ok $? "libc: list --inlines tcache_put"
grep -q "^Copies of tcache_put in .*: 0 out-of-line bodies" <<<"$out"
tap_ok $? "libc: tcache_put has no out-of-line body"
dpkg -L libc6-dbg | grep -q "${libc_id:2}.debug"
tap_ok $? "libc6-dbg ships libc's DWARF under its build-id"
n=$(grep -c '^  copy [0-9]*: inlined into ' <<<"$out")
tap_check "libc: tcache_put's copies are listed, each with its caller ($n)" [ "$n" -ge 1 ]
# _IO_free_backup_area's DWARF carries the asm label __GI__IO_free_backup_area
# as its linkage name: no C++ mangling, the C name still finds its copies.
readelf --debug-dump=info "$(grep -o '/[^ ]*\.debug' <<<"$out" | head -1)" 2>/dev/null |
	grep -q '__GI__IO_free_backup_area' || tap_diag "no __GI__IO_free_backup_area in libc's DWARF"
out=$("$LTTNG" list -u --path "$LIBC" --inlines _IO_free_backup_area 2>&1)
n=$(grep -c '^  copy [0-9]*: inlined into ' <<<"$out")
tap_check "libc: a function with an asm label keeps its copies by its C name ($n)" [ "$n" -ge 1 ]
tap_done
