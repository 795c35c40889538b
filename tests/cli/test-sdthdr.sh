#!/bin/bash
# <lttng/dynprobe/sdt.h> against <sys/sdt.h>: sdthdr-target built with each
# (and ours also as C++ and as a non-PIE).  readelf -n reads our notes as
# it reads <sys/sdt.h>'s: the same providers, names, semaphores and
# argument sizes and signs, constants alike; each site is the 6 bytes
# 90 0f 1f 44 00 00 at the note's address; .stapsdt.base is one allocated
# byte at the note's base.  lttng list --sdt shows every site of ours as
# `nop; nop5` placed by jump, those of <sys/sdt.h> as `nop`; the programs
# print the same output.  Then, through lttng-dynprobed (lttng trace
# --probe at the notes' addresses of the sites in the loop, side by side, and
# of the inlined ones, non-PIE builds of both): every hit
# recorded, the event's ip the note's address, the arguments the notes name
# the program's own values, the output unchanged.  And enabled as SDT probes
# (lttng trace --sdt 'hdr:*'): every hit of every probe recorded with the
# values the program says it passed.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"

B=$top_builddir/tests/cli
SYS=$B/sdthdr-target-sys

# "PROVIDER NAME SEMAPHORE SIZES" per note, sorted: an argument's operand
# kept only when a constant ($N), else its [-]SIZE.
note_shapes() {
	readelf -n "$1" | awk '
		/^    Provider: / { p = $2 }
		/^    Name: / { n = $2 }
		/^    Location: / { sem = $6 }
		/^    Arguments:/ { out = p " " n " " sem
			for (i = 2; i <= NF; i++) {
				split($i, a, "@")
				out = out " " (a[2] ~ /^\$/ ? $i : a[1])
			}
			print out }' | sort
}

# Each note: its location, its base, the address of .stapsdt.base.
note_places() {
	readelf -n "$1" | awk '/^    Location: / { sub(",", "", $2); sub(",", "", $4); print $2, $4 }'
}

# The file bytes at virtual address ADDR (hex) of FILE, N of them, in hex.
bytes_at() {
	local off
	off=$(readelf -lW "$1" | awk -v a="$(($2))" '$1 == "LOAD" && $2 ~ /^0x/ {
		o = strtonum($2); v = strtonum($3); fs = strtonum($5)
		if (a >= v && a < v + fs) { print a - v + o; exit } }')
	[ -n "$off" ] && od -An -tx1 -j "$off" -N "$3" "$1" | tr -d '\n' | sed 's/^ //'
}

note_shapes "$SYS" >"$DP_TMP/sys"
n=$(wc -l <"$DP_TMP/sys")
[ "$n" -ge 10 ]
tap_ok $? "<sys/sdt.h> build: $n notes"
"$SYS" 7 >"$DP_TMP/sys.out"
tap_ok $? "<sys/sdt.h> build runs"

for build in sdthdr-target sdthdr-target-nopie sdthdr-target-cxx; do
	obj=$B/$build
	note_shapes "$obj" >"$DP_TMP/ours"
	diff "$DP_TMP/sys" "$DP_TMP/ours" >"$DP_TMP/diff"
	tap_ok $? "$build: readelf -n gives the notes of <sys/sdt.h>: providers, names, semaphores, argument sizes and constants"
	[ -s "$DP_TMP/diff" ] && tap_diag_file "$DP_TMP/diff"

	ok=0 sites=0
	base=$(readelf -SW "$obj" | awk '$2 == ".stapsdt.base" { print "0x" $4, strtonum("0x" $6), $8 }')
	read -r base_addr base_size base_flags <<<"$base"
	[ "$base_size" = 1 ] && [[ $base_flags == *A* ]] || ok=1
	while read -r loc nbase; do
		sites=$((sites + 1))
		[ "$(bytes_at "$obj" "$loc" 6)" = "90 0f 1f 44 00 00" ] || { ok=1; tap_diag "$loc: $(bytes_at "$obj" "$loc" 6)"; }
		[ $((nbase)) -eq $((base_addr)) ] || ok=1
	done < <(note_places "$obj")
	[ "$sites" -eq "$n" ] || ok=1
	tap_ok "$ok" "$build: $sites sites, each the bytes 90 0f 1f 44 00 00; .stapsdt.base one allocated byte at the notes' base"

	out=$("$LTTNG" list -u --path "$obj" --sdt 2>&1)
	tap_ok $? "$build: lttng list --sdt"
	[ "$(grep -c '^    0x.*  nop; nop5  jump$' <<<"$out")" -eq "$n" ]
	tap_ok $? "$build: every site listed as nop; nop5, placed by jump"
	grep -q "^SDT probes: .* $n sites in .*$build: $n by jump, 0 by int3, 0 refused$" <<<"$out"
	tap_ok $? "$build: the summary counts $n sites, all by jump"
	[ $? -eq 0 ] || tap_diag "$out"

	"$obj" 7 >"$DP_TMP/ours.out"
	cmp -s "$DP_TMP/sys.out" "$DP_TMP/ours.out"
	tap_ok $? "$build: the same output as the <sys/sdt.h> build"
done

out=$("$LTTNG" list -u --path "$SYS" --sdt 2>&1)
[ "$(grep -c '^    0x.*  nop        jump$' <<<"$out")" -eq "$n" ]
tap_ok $? "<sys/sdt.h> build: every site listed as a nop placed by jump"

# ---- probed through the daemon ----------------------------------------------
cli_setup
ROUNDS=20

# "LOCATION ARGUMENTS" of each site of probe NAME in FILE.
sites_of() {
	readelf -n "$1" | awk -v n="$2" '/^    Name: / { name = $2 }
		/^    Location: / { sub(",", "", $2); loc = $2 }
		/^    Arguments:/ && name == n { a = $0; sub(/^    Arguments: ?/, "", a); print loc, a }'
}

for build in sdthdr-target-nopie sdthdr-target-sys-nopie; do
	obj=$B/$build
	form=nop
	[ "$build" = sdthdr-target-nopie ] && form="nop; nop5"
	read -r g_loc g_args < <(sites_of "$obj" global)
	# hdr:global's arguments, the counter then its address: a context for
	# each, from where the note says they are (a register, or the global).
	ctx=() fields=()
	for k in 0 1; do
		a=$(awk -v k=$((k + 1)) '{ print $k }' <<<"$g_args")
		if [[ $a =~ ^-?8@%(r[a-z0-9]+)$ ]]; then
			ctx+=(-t "reg:${BASH_REMATCH[1]}") fields+=("${BASH_REMATCH[1]}")
		elif [[ $a =~ ^-8@([a-z_]+)\(%rip\)$ ]]; then
			ctx+=(-t "int64:a$k:${BASH_REMATCH[1]}") fields+=("a$k")
		fi
	done
	if [ ${#fields[@]} -ne 2 ]; then
		tap_ok 1 "$build: hdr:global's arguments are registers or the global ($g_args)"
		continue
	fi
	locs=$(for p in loop ints more unsigned five six global colour step; do
		sites_of "$obj" $p | awk '{ printf "0x%x\n", strtonum($1) }'; done)
	g_loc=$(printf '0x%x' "$g_loc")
	probes=()
	for l in $locs; do probes+=(--probe "$l"); done
	"$obj" $ROUNDS >"$DP_TMP/plain.out"
	"$LTTNG" trace --no-view -o "$DP_TMP/$build" -t ip "${ctx[@]}" \
		--path "$obj" "${probes[@]}" -- "$obj" $ROUNDS >"$DP_TMP/traced.out" 2>"$DP_TMP/traced.err"
	tap_ok $? "$build: lttng trace with $(wc -w <<<"$locs") $form sites probed"
	grep -q "^sdthdr-target: $ROUNDS rounds" "$DP_TMP/traced.out" &&
		cmp -s <(grep '^sdthdr-target' "$DP_TMP/traced.out") "$DP_TMP/plain.out"
	tap_ok $? "$build: the program's output as without probes"
	bt_text "$DP_TMP/$build" >"$DP_TMP/events"
	ok=0
	for l in $locs; do
		n_ev=$(grep -c "^dynprobe:addr_${l#0x}: .*{ ip = $((l)) }" "$DP_TMP/events")
		n_all=$(grep -c "^dynprobe:addr_${l#0x}: " "$DP_TMP/events")
		if [ "$n_ev" -ne $ROUNDS ] || [ "$n_all" -ne $ROUNDS ]; then
			ok=1
			tap_diag "$l: $n_all events, $n_ev with ip $l"
		fi
	done
	tap_ok "$ok" "$build: $ROUNDS events per site, each with ip = the note's address"
	addr=$(nm "$obj" | awk '$3 == "hdr_counter" { print $1 }')
	grep "^dynprobe:addr_${g_loc#0x}: " "$DP_TMP/events" | while read -r line; do
		for f in "${fields[@]}"; do
			[[ $line =~ [{,]\ $f\ =\ (-?[0-9A-Fa-fx]+) ]] && printf '%s ' "${BASH_REMATCH[1]}"
		done
		echo
	done >"$DP_TMP/vals"
	ok=0 want=42
	while read -r v0 v1; do
		[ $((v0)) -eq $want ] && [ $((v1)) -eq $((16#$addr)) ] || ok=1
		want=$((want + 1))
	done <"$DP_TMP/vals"
	[ $want -eq $((42 + ROUNDS)) ] || ok=1
	tap_ok "$ok" "$build: hdr:global's arguments: the counter 42..$((41 + ROUNDS)) and its address 0x$addr"
	[ "$ok" -eq 0 ] || tap_diag_file "$DP_TMP/vals"
done

# ---- enabled as SDT probes: lttng trace --sdt 'hdr:*' -------------------------
# The oracle: what the program says it passes to each probe (its second
# argument makes it say so), one line per hit, against the events.
for build in sdthdr-target sdthdr-target-nopie sdthdr-target-cxx sdthdr-target-sys; do
	obj=$B/$build
	"$LTTNG" trace --no-view -o "$DP_TMP/sdt-$build" --sdt 'hdr:*' -- "$obj" $ROUNDS v \
		>"$DP_TMP/v.out" 2>"$DP_TMP/v.err"
	tap_ok $? "$build: lttng trace --sdt 'hdr:*'" || tap_diag_file "$DP_TMP/v.err"
	grep '^hdr:' "$DP_TMP/v.out" | sort >"$DP_TMP/passed"
	bt_text "$DP_TMP/sdt-$build" |
		sed -E 's/^([a-z_]+:[a-z_]+): \{[^}]*\}, \{ (.*) \}$/\1 { \2 }/;
			s/^([a-z_]+:[a-z_]+): \{[^}]*\}, \{ \}$/\1/;
			s/, _arg[0-9]+_error = 0//g' | sort >"$DP_TMP/recorded"
	n=$(wc -l <"$DP_TMP/passed")
	[ "$n" -eq $((ROUNDS * 10 + 1)) ] && diff "$DP_TMP/passed" "$DP_TMP/recorded" >"$DP_TMP/diff"
	tap_ok $? "$build: $n hits, each recorded with the arguments the program passed"
	[ -s "$DP_TMP/diff" ] && tap_diag_file "$DP_TMP/diff"
done

tap_done
