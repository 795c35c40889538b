#!/bin/bash
# C++ (and Rust) functions by the names their authors wrote, end to end:
# list --functions and --sites with demangled names, refusals with close
# names, lttng trace with namespaces, overloads, templates, operators,
# constructors and destructors, virtual methods, a lambda, Rust names, each
# count held to the program's own counters; libstdc++'s own functions; and an
# exception thrown through probed frames, which behaves exactly as without
# probes while the trace shows the frames it left (entry without return).
# cpp-target is built with g++, and with clang++ when it is installed.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
cli_setup

targets=("$top_builddir/tests/cli/cpp-target")
if [ -x "$top_builddir/tests/cli/cpp-target-clang" ]; then
	targets+=("$top_builddir/tests/cli/cpp-target-clang")
else
	tap_diag "clang++ is not installed: the g++ build alone is tested"
fi
ROUNDS=7

# The count of the program's counter $2 in its output $1 ("add_int=7 ...").
counter() {
	sed -nE "s/.*(^| )$2=([0-9]+).*/\\2/p" <<<"$1"
}

# The number of events named $2 in the event list $1.
nev() {
	grep -c "^dynprobe:$2: " "$1"
}

for T in "${targets[@]}"; do
	c=${T##*/}

	# ---- listing and refusals, no daemon -----------------------------
	run_cli list -u --path "$T" --functions 'shop::*'
	ok=$status
	for name in 'shop::Cart::add(int)' 'shop::Cart::add(double)' 'shop::Cart::operator+=(int)' \
		'shop::Cart::Cart(int)' 'shop::Cart::~Cart()' 'shop::Square::area() const' \
		'shop::Rect::area() const' 'shop::biggest<int>(int, int)' \
		'shop::biggest<double>(double, double)' 'shop::check(int)' 'shop::guard(int)'; do
		grep -qF "  $name" <<<"$out" || { ok=1; tap_diag "$c: '$name' not listed"; }
	done
	grep -q '_ZN' <<<"$out" && ok=1
	tap_ok "$ok" "$c: list --functions 'shop::*' shows demangled names, no mangled one"
	[ "$ok" -eq 0 ] || tap_diag "$out" "$err"

	run_cli -v list -u --path "$T" --functions 'shop::Cart::add'
	[ "$status" -eq 0 ] && grep -q 'shop::Cart::add(int)  \[_ZN4shop4Cart3addEi\]' <<<"$out" &&
		grep -q 'shop::Cart::add(double)  \[_ZN4shop4Cart3addEd\]' <<<"$out" &&
		grep -q '^Functions: 2 in ' <<<"$out"
	tap_ok $? "$c: -v list --functions 'shop::Cart::add': both overloads, with their symbols"

	# g++ names a lambda {lambda(ARGS)#N}, clang++ $_N.
	run_cli list -u --path "$T" --functions 'main::*::operator()'
	grep -Eq '  main::(\{lambda\(int\)#1\}|\$_0)::operator\(\)\(int\) const$' <<<"$out" &&
		grep -q '^Functions: 1 in ' <<<"$out"
	tap_ok $? "$c: the lambda, by its demangled name"

	run_cli list -u --path "$T" --functions 'mycrate::*'
	grep -q '  mycrate::legacy$' <<<"$out" && grep -q '  mycrate::vzero$' <<<"$out"
	tap_ok $? "$c: Rust names, legacy and v0 manglings"

	run_cli list -u --path "$T" --sites 'shop::Cart::add(int)'
	[ "$status" -eq 0 ] && grep -q '^Sites of shop::Cart::add(int) in ' <<<"$out"
	tap_ok $? "$c: --sites 'shop::Cart::add(int)'"
	run_cli list -u --path "$T" --sites _ZN4shop4Cart3addEd
	[ "$status" -eq 0 ] && grep -q '^Sites of shop::Cart::add(double) in ' <<<"$out"
	tap_ok $? "$c: --sites by the mangled name shows the demangled one"
	run_cli list -u --path "$T" --sites 'shop::Cart::operator+='
	[ "$status" -eq 0 ] && grep -q '^Sites of shop::Cart::operator+=(int) in ' <<<"$out"
	tap_ok $? "$c: --sites of an operator"

	check_refused "$c: --sites of an overloaded name" \
		"'shop::Cart::add' names 2 functions of .*: shop::Cart::add\(int\), shop::Cart::add\(double\)" \
		list -u --path "$T" --sites 'shop::Cart::add'
	check_refused "$c: a typo gets close demangled names" \
		"no function 'shop::Cart::ad\(int\)' in .*did you mean 'shop::Cart::add\(int\)'" \
		list -u --path "$T" --sites 'shop::Cart::ad(int)'
	check_refused "$c: a pattern matching nothing" "no function of .* matches 'nothing::\*'" \
		list -u --path "$T" --functions 'nothing::*'

	# ---- counts through a real trace ----------------------------------
	dir=$DP_TMP/$c-names
	out=$("$LTTNG" trace --no-view -o "$dir" --function 'shop::Cart::add' \
		--function 'shop::Cart::operator+=' --function 'shop::Cart::Cart' \
		--function 'shop::Cart::~Cart' --function 'shop::biggest<int>' \
		--function '*::area' --function 'main::*::operator()' --function 'mycrate::legacy' \
		--function 'mycrate::vzero' -- "$T" "$ROUNDS" 2>"$DP_TMP/err")
	status=$?
	bt_text "$dir" >"$DP_TMP/e-$c"
	ok=$status
	export DP_DAEMON_RUNS=1	# lttng trace started lttng-dynprobed
	for pair in "shop_Cart_add add_int add_double" "shop_Cart_operator_plus_eq plus_eq" \
		"shop_Cart_Cart ctor" "shop_Cart_dtor_Cart dtor" "shop_biggest_int biggest_int" \
		"area area" "mainoperator lambda" "mycrate_legacy legacy" "mycrate_vzero vzero"; do
		set -- $pair
		ev=$1
		shift
		want=0
		for k in "$@"; do
			want=$((want + $(counter "$out" "$k")))
		done
		got_e=$(nev "$DP_TMP/e-$c" "${ev}_entry")
		got_r=$(nev "$DP_TMP/e-$c" "${ev}_return")
		if [ "$want" -eq 0 ] || [ "$got_e" -ne "$want" ] || [ "$got_r" -ne "$want" ]; then
			ok=1
			tap_diag "$c: $ev: $got_e entries, $got_r returns, the program counted $want"
		fi
	done
	tap_ok "$ok" "$c: overloads, operator, constructor, destructor, template, virtual methods, lambda, Rust names: each count the program's own"
	[ "$ok" -eq 0 ] || tap_diag "$(cat "$DP_TMP/err")"

	# Two overloads picked by their parameter lists: two distinct events.
	dir=$DP_TMP/$c-overloads
	out=$("$LTTNG" trace --no-view -o "$dir" --function 'shop::Cart::add(int)' \
		--function 'shop::Cart::add(double)' -- "$T" "$ROUNDS" 2>/dev/null)
	bt_text "$dir" >"$DP_TMP/o-$c"
	[ "$(nev "$DP_TMP/o-$c" shop_Cart_add_int_entry)" -eq "$(counter "$out" add_int)" ] &&
		[ "$(nev "$DP_TMP/o-$c" shop_Cart_add_double_entry)" -eq "$(counter "$out" add_double)" ] &&
		[ "$(counter "$out" add_int)" -eq "$ROUNDS" ]
	tap_ok $? "$c: 'shop::Cart::add(int)' and 'shop::Cart::add(double)': events shop_Cart_add_int and shop_Cart_add_double, one per call"

	# ---- an exception through probed frames ----------------------------
	plain=$("$T" "$ROUNDS" 2>&1)
	dir=$DP_TMP/$c-eh
	probed=$("$LTTNG" trace --no-view -o "$dir" --function 'shop::check' --function 'shop::pass' \
		--function 'shop::guard' -- "$T" "$ROUNDS" 2>"$DP_TMP/err")
	status=$?
	[ "$status" -eq 0 ] && [ "$plain" = "$probed" ] && grep -q '^caught: ' <<<"$probed"
	tap_ok $? "$c: exceptions through probed check, pass and guard: the same output as without probes"
	[ "$plain" = "$probed" ] || tap_diag "without: $plain" "with: $probed" "$(cat "$DP_TMP/err")"

	bt_text "$dir" >"$DP_TMP/x-$c"
	checks=$(counter "$plain" checks)
	thrown=$(counter "$plain" thrown)
	[ "$thrown" -gt 0 ] &&
		[ "$(nev "$DP_TMP/x-$c" shop_check_entry)" -eq "$checks" ] &&
		[ "$(nev "$DP_TMP/x-$c" shop_check_return)" -eq $((checks - thrown)) ] &&
		[ "$(nev "$DP_TMP/x-$c" shop_pass_entry)" -eq "$checks" ] &&
		[ "$(nev "$DP_TMP/x-$c" shop_pass_return)" -eq $((checks - thrown)) ] &&
		[ "$(nev "$DP_TMP/x-$c" shop_guard_entry)" -eq "$checks" ] &&
		[ "$(nev "$DP_TMP/x-$c" shop_guard_return)" -eq "$checks" ]
	tap_ok $? "$c: the frames the exception left have an entry without a return ($thrown of $checks calls)"

	# In order: every guard call either returns through pass and check, or
	# (the thrown ones, guard returning -1) skips their returns.
	seq=$(sed -nE 's/^dynprobe:shop_(check|pass|guard)_(entry|return): .*/\1_\2/p' "$DP_TMP/x-$c" |
		tr '\n' ' ')
	normal="guard_entry pass_entry check_entry check_return pass_return guard_return "
	left="guard_entry pass_entry check_entry guard_return "
	rest=$seq
	nleft=0
	while [ -n "$rest" ]; do
		if [ "${rest#"$normal"}" != "$rest" ]; then
			rest=${rest#"$normal"}
		elif [ "${rest#"$left"}" != "$rest" ]; then
			rest=${rest#"$left"}
			nleft=$((nleft + 1))
		else
			break
		fi
	done
	[ -z "$rest" ] && [ "$nleft" -eq "$thrown" ]
	tap_ok $? "$c: the trace reads as the calls ran: $nleft calls left check and pass by the exception"
	[ -z "$rest" ] || tap_diag "unexpected order at: ${rest:0:200}"
done

# ---- enable-event on a running process, through lttng-dynprobed -----------
T=${targets[0]}
"$STOCK" -n create s2 --output="$DP_TMP/s2" >/dev/null || tap_bail "create s2"
out=$("$LTTNG" enable-event -u "--userspace-probe=elf:$T:shop::Cart::add(int)" cadd 2>&1)
status=$?
tap_ok $status "enable-event --userspace-probe=elf:PATH:shop::Cart::add(int): the first two colons separate"
[ $status -eq 0 ] || tap_diag "$out"
out=$("$LTTNG" enable-event -u --path "$T" --function 'shop::Cart::add' cart 2>&1)
status=$?
tap_ok $status "enable-event --function 'shop::Cart::add' cart"
[ $status -eq 0 ] || tap_diag "$out"
"$STOCK" -n start s2 >/dev/null
mkfifo "$DP_TMP/go"
LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$T" "$ROUNDS" wait <"$DP_TMP/go" >"$DP_TMP/s2.out" &
pid=$!
exec 7>"$DP_TMP/go"
for i in $(seq 600); do
	[ "$("$LTTNG" -n list s2 2>/dev/null | grep -c "process $pid: [1-9][0-9]* site")" -eq 2 ] &&
		break
	sleep 0.1
done
"$LTTNG" -n list s2 >"$DP_TMP/list2" 2>&1
echo go >&7
exec 7>&-
wait "$pid"
"$STOCK" -n stop s2 >/dev/null
bt_text "$DP_TMP/s2" >"$DP_TMP/e-s2"
out=$(cat "$DP_TMP/s2.out")
grep -q "function shop::Cart::add in " "$DP_TMP/list2" &&
	grep -q "probe shop::Cart::add(int) in " "$DP_TMP/list2"
tap_ok $? "list s2: the specs as typed"
[ "$(nev "$DP_TMP/e-s2" cadd)" -eq "$(counter "$out" add_int)" ] &&
	[ "$(nev "$DP_TMP/e-s2" cart_entry)" -eq $(($(counter "$out" add_int) + $(counter "$out" add_double))) ] &&
	[ "$(nev "$DP_TMP/e-s2" cart_return)" -eq "$(nev "$DP_TMP/e-s2" cart_entry)" ] &&
	[ "$(counter "$out" add_int)" -eq "$ROUNDS" ]
status=$?
tap_ok $status "a running process: cadd once per add(int), cart_entry/cart_return once per add of either overload"
[ $status -eq 0 ] || tap_diag "$(cat "$DP_TMP/list2")" "$out" "$(grep -c . "$DP_TMP/e-s2") events"
"$STOCK" -n destroy s2 >/dev/null

# ---- libstdc++ itself ----------------------------------------------------
LIBSTDCXX=$(ldd "${targets[0]}" | awk '/libstdc\+\+\.so/ { print $3 }')
run_cli list -u --path "$LIBSTDCXX" --functions 'std::__cxx11::basic_string*'
n=$(grep -c '^  0x[0-9a-f]* *[0-9]*  std::__cxx11::basic_string<' <<<"$out")
[ "$status" -eq 0 ] && [ "$n" -gt 20 ] &&
	grep -q 'std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::reserve(unsigned long)' <<<"$out"
tap_ok $? "libstdc++: list --functions 'std::__cxx11::basic_string*' ($n functions)"
run_cli list -u --path "$LIBSTDCXX" --sites \
	'std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::reserve(unsigned long)'
[ "$status" -eq 0 ] && grep -q '^Sites of std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::reserve(unsigned long) in ' <<<"$out"
tap_ok $? "libstdc++: --sites of basic_string<char>::reserve by its demangled name"

tap_done
