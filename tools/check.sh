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
make -k -j"$jobs" check >"$log/check.log" 2>&1
status=$?

# Every TAP result of the test scripts under $1 counts.
passed=0 failed=0
count() {
	local trs p f
	while IFS= read -r trs; do
		p=$(grep -c '^:test-result: \(PASS\|XFAIL\)' "$trs")
		f=$(grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\|SKIP\)' "$trs")
		passed=$((passed + p))
		failed=$((failed + f))
		printf '   %-40s %5d passed, %d failed\n' "${2:-}${trs%.trs}" "$p" "$f"
		if [ "$f" -gt 0 ]; then
			echo "-- ${trs%.trs}.log:"
			# lttng-dynprobed held up (its health reports) first: the
			# likely cause of a failure under load
			grep -E '^# .*(is held up|went on after|for a worker|HELLO is answered after)' "${trs%.trs}.log" | head -n 10
			grep -E '^(not ok|Bail out|#)' "${trs%.trs}.log" | head -n 40
		fi
	done < <(find "$1" -name '*.trs' | sort)
}
count tests
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
	# make check failed without a failing test result: a build or driver error.
	tail -n 40 "$log/check.log"
	failed=1
fi

# The daemon's tests again, with the daemon built with AddressSanitizer and
# UndefinedBehaviorSanitizer: any report is a failure.  Only the daemon: the
# agent goes into programs that are not built with them.
echo "== tests/daemon with a sanitized lttng-dynprobed"
san="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined"
# The tests run it as an unprivileged user too: it must be reachable, and
# its reports writable, by anyone.
chmod 0755 "$log" && mkdir -m 1777 "$log/san"
if make -C src/bin/lttng-dynprobed clean >"$log/san.log" 2>&1 &&
	make -C src/bin/lttng-dynprobed CFLAGS="$san" LDFLAGS="-fsanitize=address,undefined" \
		>>"$log/san.log" 2>&1 &&
	cp src/bin/lttng-dynprobed/lttng-dynprobed "$log/san/" &&
	make -C src/bin/lttng-dynprobed clean >>"$log/san.log" 2>&1 &&
	make -C src/bin/lttng-dynprobed >>"$log/san.log" 2>&1; then
	DP_TEST_DAEMON=$log/san/lttng-dynprobed \
		ASAN_OPTIONS=log_path=$log/san/report:detect_leaks=1 \
		UBSAN_OPTIONS=print_stacktrace=1:log_path=$log/san/report \
		make -C tests/daemon -j"$jobs" check >>"$log/san.log" 2>&1
	count tests/daemon "sanitized: "
	for report in "$log"/san/report.*; do
		[ -e "$report" ] || continue
		# LeakSanitizer stops every thread with ptrace at exit; a thread
		# killed meanwhile (a test's cleanup SIGKILL under load) makes it
		# give up with only these lines.  That is the checker not running,
		# not a finding: it is shown, not counted.  Anything else counts.
		if ! grep -qvE 'Unable to get registers from thread|LeakSanitizer has encountered a fatal error|HINT: For debugging, try setting|HINT: LeakSanitizer does not work under ptrace|^$' "$report"; then
			echo "-- LeakSanitizer could not run in $(basename "$report") (not counted):"
			head -n 5 "$report"
			continue
		fi
		echo "-- sanitizer report $(basename "$report"):"
		head -n 30 "$report"
		failed=$((failed + 1))
	done
else
	tail -n 40 "$log/san.log"
	echo "check.sh: cannot build the sanitized daemon"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
