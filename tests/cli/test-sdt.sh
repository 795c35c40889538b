#!/bin/bash
# lttng list -u --path PATH --sdt [PROVIDER:NAME]: the statically defined
# probes (<sys/sdt.h>) of an object, no session and no daemon.  Held to
# readelf -n (providers, names, addresses, argument strings) for a PIE and a
# non-PIE build of sdt-target, the placement of each site to what --sites
# says of the same address, and glibc's objects to readelf -n too.  Bad
# input: unknown names (close ones suggested), objects without notes, and
# copies of sdt-target with corrupt notes or a prelink-style base shift.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
# Private namespaces: no daemon of another test in sight (check_refused).
dp_isolate "$0" "$@"

# "PROVIDER NAME ADDRESS SEMAPHORE ARGS" per site, sorted: from our listing...
our_sites() {
	awk '/^  [^ ]+:[^ ]+$/ { split($1, pn, ":") }
	     /^    0x/ { addr = $1; sem = "0x0" }
	     /^      semaphore / { sem = $2 }
	     /^      arguments: / { a = substr($0, 18); if (a == "(none)") a = ""
			print pn[1], pn[2], addr, sem, a }' | sed 's/ $//' | sort
}
# ... and from readelf -n, moved by SHIFT (a prelink's).
readelf_sites() {
	readelf -n "$1" | awk -v shift="${2:-0}" '
		/^    Provider: / { p = $2 }
		/^    Name: / { n = $2 }
		/^    Location: / { sub(",", "", $2); loc = strtonum($2) + strtonum(shift)
			sem = strtonum($6); if (sem) sem += strtonum(shift) }
		/^    Arguments:/ { a = $0; sub(/^    Arguments: ?/, "", a)
			printf "%s %s 0x%x 0x%x %s\n", p, n, loc, sem, a }' | sed 's/ $//' | sort
}

# Little-endian integers in a file: le_read FILE OFF BYTES, le_write FILE
# OFF BYTES VALUE.
le_read() {
	od -An -t u"$3" -j "$2" -N "$3" --endian=little "$1" | tr -d ' '
}
le_write() {
	local i v=$4 bytes=""
	for ((i = 0; i < $3; i++)); do
		bytes+=$(printf '\\x%02x' $(((v >> (8 * i)) & 255)))
	done
	printf "$bytes" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
# The file offset and size of FILE's .note.stapsdt.
note_section() {
	readelf -SW "$1" | awk '$2 == ".note.stapsdt" { print strtonum("0x" $5), strtonum("0x" $6) }'
}

for build in sdt-target sdt-target-nopie; do
	obj=$top_builddir/tests/cli/$build
	out=$("$LTTNG" list -u --path "$obj" --sdt 2>&1)
	tap_ok $? "$build: list --sdt runs without a session daemon"
	our_sites <<<"$out" >"$DP_TMP/ours"
	readelf_sites "$obj" >"$DP_TMP/readelf"
	[ -s "$DP_TMP/readelf" ] && diff "$DP_TMP/readelf" "$DP_TMP/ours" >"$DP_TMP/diff"
	tap_ok $? "$build: every site of readelf -n, its provider, name, address, semaphore and arguments"
	grep -q '^      semaphore 0x' <<<"$out"
	tap_ok $? "$build: sdt_sem:work's semaphore shown"
	[ -s "$DP_TMP/diff" ] && tap_diag_file "$DP_TMP/diff"
	n=$(wc -l <"$DP_TMP/readelf")
	grep -q "^SDT probes: 10 in 3 providers, $n sites in .*$build: " <<<"$out"
	tap_ok $? "$build: the summary counts 10 probes in 3 providers and $n sites"
	[ "$(grep -c '^    0x.*  nop  ' <<<"$out")" -eq "$n" ]
	tap_ok $? "$build: every site is the nop <sys/sdt.h> writes"
	[ "$(grep -c '^    0x.*  nop  .*  jump$' <<<"$out")" -eq "$n" ]
	tap_ok $? "$build: every site takes a jump (a nop followed by ordinary code)"
	grep -q '^      arg3: int64 \[rip: sdt_counter\]$' <<<"$out" &&
		grep -q '^      arg0: int32 \$1$' <<<"$out" &&
		grep -q '^      arg1: int32 \$-2$' <<<"$out" &&
		grep -q '^      arg2: double \[rsp' <<<"$out" &&
		grep -A6 '^  sdt_target:four$' <<<"$out" | grep -Eq '^      arg1: uint64 (r[a-z0-9]+|\[.*\])$'
	tap_ok $? "$build: constants, negative ones, a double, a pointer and a global via %rip"
	ok=0
	for t in int8 int16 int32 int64 uint8 uint64; do
		grep -q "^      arg[0-9]: $t " <<<"$out" || ok=1
	done
	tap_ok "$ok" "$build: integers of each size, signed and unsigned"
	[ "$(grep -A1 '^  sdt_target:step$' <<<"$out" | grep -c '^    0x')" -ge 1 ] &&
		[ "$(awk '/^  sdt_target:step$/ { on = 1; next } /^  / && !/^    / { on = 0 }
			on && /^    0x/' <<<"$out" | wc -l)" -eq 2 ]
	tap_ok $? "$build: the probe inlined into two callers has its two sites"

	# The placement of each site in main is what --sites says of that address.
	sites=$("$LTTNG" list -u --path "$obj" --sites main 2>&1)
	ok=0 seen=0
	while read -r addr method; do
		row=$(awk -v a="$addr" '$2 == a' <<<"$sites" | sed -E 's/.*  (jump|int3: .*|refused: .*)$/\1/')
		[ -z "$row" ] && continue
		seen=$((seen + 1))
		[ "$row" = "$method" ] || { ok=1; tap_diag "$addr: $method vs $row"; }
	done < <(sed -nE 's/^    (0x[0-9a-f]+) .*  (jump|int3: .*|refused: .*)$/\1 \2/p' <<<"$out")
	[ "$seen" -eq 8 ] || { ok=1; tap_diag "$seen sites of main found in --sites, not 8"; }
	tap_ok "$ok" "$build: main's 8 sites placed as list --sites places the same instructions"
done

obj=$top_builddir/tests/cli/sdt-target
out=$("$LTTNG" list -u --path "$obj" --sdt 'sdt_target:s*' 2>&1)
[ "$(grep -E '^  [^ ]+:[^ ]+$' <<<"$out" | tr '\n' ' ')" = \
  "  sdt_target:six   sdt_target:start   sdt_target:step " ]
tap_ok $? "a pattern: 'sdt_target:s*' lists six, start and step"
out=$("$LTTNG" list -u --path "$obj" --sdt global 2>&1)
grep -q '^  sdt_other:global$' <<<"$out" && grep -q '^SDT probes: 1 in 1 provider, 1 site ' <<<"$out"
tap_ok $? "a name alone: any provider's"

check_refused "an unknown name: close names suggested" \
	"no SDT probe matches 'sdt_target:stepp' \(did you mean 'sdt_target:step'" \
	list -u --path "$obj" --sdt sdt_target:stepp
check_refused "an unknown provider: close names suggested" \
	"no SDT probe matches 'sdt_targt:start' \(did you mean 'sdt_target:start'" \
	list -u --path "$obj" --sdt sdt_targt:start
check_refused "a pattern matching nothing: how to list them all" \
	"no SDT probe matches 'zzz:\*' \(none has a close name" list -u --path "$obj" --sdt 'zzz:*'
check_refused "a pattern with an empty side" "':start': expected PROVIDER:NAME" \
	list -u --path "$obj" --sdt :start
check_refused "an object without notes" "zlib-user has no SDT probe \(no .note.stapsdt note\)" \
	list -u --path "$top_builddir/tests/cli/zlib-user" --sdt
check_refused "--sdt without --path" "--sdt needs --path PATH" list -u --sdt
check_refused "--sdt with --sites" "--sdt, --sites and --functions go one at a time" \
	list -u --path "$obj" --sdt --sites main

# Corrupt copies: each refused with the note's offset and the reason.
read -r off size < <(note_section "$obj")
[ -n "$off" ] || tap_bail "no .note.stapsdt in $obj"
descsz=$(le_read "$obj" $((off + 4)) 4)
cp "$obj" "$DP_TMP/past" && le_write "$DP_TMP/past" $((off + 4)) 4 $((0x7fffffff))
check_refused "a note whose desc runs past its section" \
	"past: stapsdt note|past: note at offset 0x0: name \(8 bytes\) and desc \(2147483647 bytes\) run past the section's end \($size bytes\)" \
	list -u --path "$DP_TMP/past" --sdt
cp "$obj" "$DP_TMP/short" && le_write "$DP_TMP/short" $((off + 4)) 4 16
check_refused "a desc shorter than its 24 bytes of addresses" \
	"short: stapsdt note at offset 0x0: its desc has 16 bytes, fewer than the 24" \
	list -u --path "$DP_TMP/short" --sdt
cp "$obj" "$DP_TMP/unterminated"
head -c $((descsz - 24)) /dev/zero | tr '\0' A |
	dd of="$DP_TMP/unterminated" bs=1 seek=$((off + 20 + 24)) conv=notrunc status=none
check_refused "strings not NUL-terminated within the desc" \
	"unterminated: stapsdt note at offset 0x0: its provider string does not end within its desc" \
	list -u --path "$DP_TMP/unterminated" --sdt
cp "$obj" "$DP_TMP/trunc" && le_write "$DP_TMP/trunc" $((off + size - 4)) 4 0 &&
	le_write "$DP_TMP/trunc" $((off + size - 8)) 4 0
"$LTTNG" list -u --path "$DP_TMP/trunc" --sdt >"$DP_TMP/out" 2>&1
tap_ok $? "a changed last argument string is still read (within its desc)"

# Prelinked: every note records a base 0x1000 below .stapsdt.base, so the
# sites and the semaphore moved up by 0x1000.
cp "$obj" "$DP_TMP/prelinked"
pos=0
while [ $pos -lt "$size" ]; do
	namesz=$(le_read "$obj" $((off + pos)) 4)
	dsz=$(le_read "$obj" $((off + pos + 4)) 4)
	boff=$((off + pos + 12 + ((namesz + 3) & ~3) + 8))
	le_write "$DP_TMP/prelinked" $boff 8 $(($(le_read "$obj" $boff 8) - 0x1000))
	pos=$((pos + 12 + ((namesz + 3) & ~3) + ((dsz + 3) & ~3)))
done
"$LTTNG" list -u --path "$DP_TMP/prelinked" --sdt | our_sites >"$DP_TMP/ours"
readelf_sites "$obj" 0x1000 >"$DP_TMP/readelf"
diff "$DP_TMP/readelf" "$DP_TMP/ours" >"$DP_TMP/diff"
tap_ok $? "a base shift (prelink): every site and semaphore moved by .stapsdt.base - base"
[ -s "$DP_TMP/diff" ] && tap_diag_file "$DP_TMP/diff"

# glibc's own probes (libc:memory_*, libc:setjmp, rtld:*) when its build has
# them; either way our listing agrees with readelf -n.
for lib in /lib/x86_64-linux-gnu/libc.so.6 /lib64/ld-linux-x86-64.so.2; do
	readelf_sites "$lib" >"$DP_TMP/readelf"
	if [ -s "$DP_TMP/readelf" ]; then
		"$LTTNG" list -u --path "$lib" --sdt | our_sites >"$DP_TMP/ours"
		diff "$DP_TMP/readelf" "$DP_TMP/ours" >"$DP_TMP/diff"
		tap_ok $? "$lib: $(wc -l <"$DP_TMP/readelf") sites, as readelf -n lists them"
		[ -s "$DP_TMP/diff" ] && tap_diag_file "$DP_TMP/diff"
		case $lib in
		*libc.so.6)
			"$LTTNG" list -u --path "$lib" --sdt 'libc:memory_*' | grep -q '^  libc:memory_' &&
				"$LTTNG" list -u --path "$lib" --sdt 'libc:setjmp' | grep -q '^  libc:setjmp$'
			tap_ok $? "$lib: libc:memory_* and libc:setjmp by pattern" ;;
		*)
			"$LTTNG" list -u --path "$lib" --sdt 'rtld:*' | grep -q '^  rtld:'
			tap_ok $? "$lib: rtld:* by pattern" ;;
		esac
	else
		tap_diag "$lib: this glibc was built without SDT probes (readelf -n shows none)"
		check_refused "$lib: no SDT probe, as readelf -n says" "has no SDT probe" \
			list -u --path "$lib" --sdt
	fi
done
tap_done
