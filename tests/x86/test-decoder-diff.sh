#!/bin/sh
# The decoder against Zydis over whole system binaries and seeded random
# bytes (decoder-diff): one TAP line per target.  A target that cannot be
# found fails: a comparison that silently did not run proves nothing.

: "${top_builddir:=../..}"
libdir=/usr/lib/x86_64-linux-gnu
diff="$top_builddir/tests/x86/decoder-diff"
seed=424242
random_count=1000000
count=0
failed=0

# tap_result STATUS DESCRIPTION: STATUS 0 passes.
tap_result()
{
	count=$((count + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $count - $2"
	else
		echo "not ok $count - $2"
		failed=$((failed + 1))
	fi
}

# check_run NAME ARGS...: runs decoder-diff, reports its last line, and on
# failure the start of its output (the first mismatches).
check_run()
{
	name=$1
	shift
	out=$("$diff" --max-print 10 "$@" 2>&1)
	rc=$?
	tap_result "$rc" "decoder-diff $name"
	if [ "$rc" -ne 0 ]; then
		printf '%s\n' "$out" | sed '$d' | head -n 12 | sed 's/^/# /'
		echo "# exit status $rc"
	fi
	printf '%s\n' "$out" | tail -n 1 | sed 's/^/# /'

}

check_file()
{
	if [ -z "$2" ]; then
		tap_result 1 "decoder-diff $1"
		echo "# $1: not found in PATH"
		return
	fi
	if [ ! -f "$2" ]; then
		tap_result 1 "decoder-diff $1"
		echo "# $2: no such file"
		return
	fi
	check_run "$1" "$2"
}

if [ ! -x "$diff" ]; then
	echo "# $diff: not built"
fi

for lib in libc.so.6 ld-linux-x86-64.so.2 libm.so.6 libstdc++.so.6 libcrypto.so.3; do
	check_file "$lib" "$libdir/$lib"
done
check_file lttng-sessiond "$(command -v lttng-sessiond)"
check_run "random $random_count seed $seed" --random "$random_count" --seed "$seed"

echo "1..$count"
[ "$failed" -eq 0 ]
