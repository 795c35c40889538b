#!/usr/bin/env bash
# Installs what is missing, builds from scratch and runs every test.
# The last line is "N passed, N failed"; the exit code is non-zero on any
# failure (of the build or of a test).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

jobs=$(nproc 2>/dev/null || echo 2)
log=$(mktemp -d "${TMPDIR:-/tmp}/dynprobe-check.XXXXXX")
trap 'rm -rf "$log"' EXIT

step() {
	local name=$1; shift
	echo "== $name"
	if ! "$@" >"$log/$name.log" 2>&1; then
		tail -n 60 "$log/$name.log"
		echo "check.sh: $name failed"
		echo "0 passed, 1 failed"
		exit 1
	fi
}

step deps tools/deps.sh
step autoreconf autoreconf -fi
step configure ./configure --quiet
step make make -j"$jobs"

echo "== make check"
make -j"$jobs" check >"$log/check.log" 2>&1
status=$?

# Every TAP result of every test script counts.
passed=0 failed=0
while IFS= read -r trs; do
	p=$(grep -c '^:test-result: \(PASS\|XFAIL\)' "$trs")
	f=$(grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\|SKIP\)' "$trs")
	passed=$((passed + p))
	failed=$((failed + f))
	printf '   %-40s %5d passed, %d failed\n' "${trs%.trs}" "$p" "$f"
	if [ "$f" -gt 0 ]; then
		echo "-- ${trs%.trs}.log:"
		grep -E '^(not ok|Bail out|#)' "${trs%.trs}.log" | head -n 40
	fi
done < <(find tests -name '*.trs' | sort)
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
	# make check failed without a failing test result: a build or driver error.
	tail -n 40 "$log/check.log"
	failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
