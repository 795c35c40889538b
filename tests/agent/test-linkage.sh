#!/bin/bash
# What the agent brings into every traced process: the libraries it needs
# (lttng-ust, libunwind, libc; never libelf or libdw, which the daemon's
# analysis uses, nor their compression libraries) and the symbols it
# exports (the trampolines' entry point; the tests' hooks in a private
# version node).
. "${top_srcdir:-../..}/tests/utils/tap.sh"

lib=$top_builddir/src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so
[ -f "$lib" ] || tap_bail "no agent at $lib (build first)"

needed=$(readelf -dW "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
tap_check "the agent needs liblttng-ust.so.1 ($needed)" grep -q 'liblttng-ust\.so\.1 ' <<<"$needed"
! grep -qE 'libelf|libdw|libz\.|libbz2' <<<"$needed"
tap_ok $? "and neither libelf nor libdw nor a compression library"
loaded=$(ldd "$lib" | awk '{ print $1 }' | tr '\n' ' ')
! grep -qE 'libelf|libdw|libz\.|libbz2' <<<"$loaded"
tap_ok $? "not even indirectly: $loaded"
public=$(nm -D --defined-only "$lib" | awk '$2 != "A" && $3 ~ /@@LTTNG_UST_DYNPROBE_0$/ { print $3 }' | tr '\n' ' ')
other=$(nm -D --defined-only "$lib" | awk '$2 != "A" && $3 !~ /@@LTTNG_UST_DYNPROBE_(0|PRIVATE)$/ { print $3 }' | tr '\n' ' ')
[ "$public" = "dp_probe_hit@@LTTNG_UST_DYNPROBE_0 " ] && [ -z "$other" ]
tap_ok $? "its public node holds dp_probe_hit alone ($public), everything else is private (${other:-nothing outside both nodes})"
tap_done
