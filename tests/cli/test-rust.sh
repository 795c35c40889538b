#!/bin/bash
# A Rust program probed by the names its author wrote, built by Debian's
# rustc with each mangling it has (legacy, the default of rustc 1.63, and
# v0): list --functions shows the same names for both, and lttng trace
# records a method, a generic function (every instance, by its name without
# arguments) and a trait method called through a trait object, each count
# the program's own.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
cli_setup
ROUNDS=6

# The program's counter $2 in its output $1 ("adds=6 maxes=6 ...").
counter() {
	sed -nE "s/.*(^| )$2=([0-9]+).*/\\2/p" <<<"$1"
}

for mangling in legacy v0; do
	T=$top_builddir/tests/cli/rust-target-$mangling
	[ -x "$T" ] || tap_bail "$T was not built (rustc: tools/deps.sh)"

	run_cli list -u --path "$T" --functions 'rust_target::*'
	grep -q '  rust_target::shop::Cart::add$' <<<"$out" &&
		grep -Eq '  rust_target::shop::biggest(::<u64>)?$' <<<"$out" &&
		grep -q '  rust_target::main$' <<<"$out" && ! grep -q '_[ZR]' <<<"$out"
	tap_ok $? "$mangling: list --functions 'rust_target::*': the names as written" ||
		tap_diag "$out"
	run_cli list -u --path "$T" --functions '*Shape>::area'
	grep -q '  <rust_target::shop::Square as rust_target::shop::Shape>::area$' <<<"$out"
	tap_ok $? "$mangling: a trait method, <Square as Shape>::area" || tap_diag "$out"

	dir=$DP_TMP/rust-$mangling
	out=$("$LTTNG" trace --no-view -o "$dir" --function 'rust_target::shop::Cart::add' \
		--function 'rust_target::shop::biggest' --function '*Shape>::area' \
		-- "$T" "$ROUNDS" 2>"$DP_TMP/err")
	status=$?
	export DP_DAEMON_RUNS=1	# lttng trace started lttng-dynprobed
	bt_text "$dir" >"$DP_TMP/e-$mangling"
	ok=$status
	for pair in "rust_target_shop_Cart_add adds" "rust_target_shop_biggest maxes" \
		"Shapearea areas"; do
		set -- $pair
		want=$(counter "$out" "$2")
		got_e=$(grep -c "^dynprobe:$1_entry: " "$DP_TMP/e-$mangling")
		got_r=$(grep -c "^dynprobe:$1_return: " "$DP_TMP/e-$mangling")
		if [ -z "$want" ] || [ "$want" -eq 0 ] || [ "$got_e" -ne "$want" ] ||
			[ "$got_r" -ne "$want" ]; then
			ok=1
			tap_diag "$mangling: $1: $got_e entries, $got_r returns, the program counted ${want:-?}"
		fi
	done
	tap_ok "$ok" "$mangling: a method, a generic function, a trait method through dyn: each count the program's own ($out)"
	[ "$ok" -eq 0 ] || { tap_diag "$(cat "$DP_TMP/err")"; tap_diag "$(sort -u -t: -k2,2 "$DP_TMP/e-$mangling" | cut -c1-80 | head)"; }
done
tap_done
