#!/bin/bash
# What the agent brings into every traced process: the libraries it needs
# (lttng-ust, libunwind, libc; never libelf or libdw, which the daemon's
# analysis uses, nor their compression libraries) and the symbols it
# exports (the trampolines' entry point; the tests' hooks in a private
# version node; and the glibc functions it wraps to follow execs and
# dlopen, each at glibc's own version, follow.h).
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
wrapped='dlopen@GLIBC_2.2.5 dlopen@@GLIBC_2.34 execl@@GLIBC_2.2.5 execle@@GLIBC_2.2.5
execlp@@GLIBC_2.2.5 execv@@GLIBC_2.2.5 execve@@GLIBC_2.2.5 execveat@@GLIBC_2.34
execvp@@GLIBC_2.2.5 execvpe@@GLIBC_2.11 fexecve@@GLIBC_2.2.5 posix_spawn@@GLIBC_2.15
posix_spawnp@@GLIBC_2.15'
other=$(nm -D --defined-only "$lib" |
	awk '$2 != "A" && $3 !~ /@@LTTNG_UST_DYNPROBE_(0|PRIVATE)$/ && $3 !~ /@@?GLIBC_/ { print $3 }' |
	tr '\n' ' ')
glibc=$(nm -D --defined-only "$lib" | awk '$2 != "A" && $3 ~ /@@?GLIBC_/ { print $3 }' | sort | tr '\n' ' ')
[ "$public" = "dp_probe_hit@@LTTNG_UST_DYNPROBE_0 " ] && [ -z "$other" ]
tap_ok $? "its public node holds dp_probe_hit alone ($public), everything else is private (${other:-nothing outside both nodes})"
[ "$glibc" = "$(tr ' ' '\n' <<<"$wrapped" | grep . | sort | tr '\n' ' ')" ]
tap_ok $? "at glibc's versions: the exec family, posix_spawn and dlopen it wraps, nothing else ($glibc)"
tap_done
