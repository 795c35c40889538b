#!/bin/bash
# SDT probes enabled end to end (lttng enable-event -u --sdt, the stock
# --userspace-probe=sdt:PATH:PROVIDER:NAME, lttng trace --sdt) with a real
# session daemon and lttng-dynprobed, read back with babeltrace2.  The
# oracle is sdt-args itself: it prints what each round passes to its
# probes, the semaphores as it reads them and how many of its *_ENABLED()
# guarded runs happened.  Covered: every argument kind and size, negative
# values, a pointer, a double, a global through %rip, a probe inlined into
# three callers, a shared library's probe, a `dtrace -G` provider's
# semaphores raised and lowered (by pid, path-wide for a process started
# later, inherited by a fork), PIE and non-PIE, the bytes of a disabled
# probe back as the file has them; and bad input refused with nothing left.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
cli_setup

ARGS=$top_builddir/tests/cli/sdt-args
NOPIE=$top_builddir/tests/cli/sdt-args-nopie
LIB=$top_builddir/tests/cli/libsdt-lib.so

# sdt-args driven through a fifo: start_args NAME [ENV...] starts one,
# `cmd NAME C` sends command C and waits for its "ok" (10 s at most).
start_args() {
	local name=$1 bin=$2
	shift 2
	mkfifo "$DP_TMP/$name.in"
	env "$@" "$bin" <"$DP_TMP/$name.in" >"$DP_TMP/$name.out" 2>"$DP_TMP/$name.err" &
	eval "${name}_pid=$!"
	exec {fd}>"$DP_TMP/$name.in"
	eval "${name}_fd=$fd"
}
cmd() {
	local fdv="${1}_fd" before i
	before=$(grep -c '^ok$' "$DP_TMP/$1.out")
	echo "$2" >&"${!fdv}"
	for i in $(seq 100); do
		[ "$(grep -c '^ok$' "$DP_TMP/$1.out")" -gt "$before" ] && return 0
		sleep 0.1
	done
	return 1
}
# The last "sem ..." line of NAME: "WORK DONE RUNS_WORK RUNS_DONE".
sems() {
	cmd "$1" s && grep '^sem ' "$DP_TMP/$1.out" | tail -1 | cut -d' ' -f2-
}
# What NAME's rounds passed, one "EVENT { fields }" a line, sorted (lines
# from ROUND on, 1-based count of "ok"-separated rounds ignored: all).
passed() {
	grep -E '^[a-z_]+:[a-z_]+( \{.*\})?$' "$DP_TMP/$1.out" | sort
}
# The events of a trace for one vpid, as "EVENT { fields }", sorted.
recorded() {
	bt_text "$1" 2>/dev/null | grep -E "vpid = $2[,} ]" |
		sed -E 's/^([a-z_]+:[a-z_]+): \{[^}]*\}, (\{ \}|\{ (.*) \})$/\1 \2/; s/ \{ \}$//' | sort
}
code_bytes() {	# pid addr count: the process's bytes, as hex
	dd if="/proc/$1/mem" bs=4096 iflag=skip_bytes,count_bytes skip="$2" count="$3" \
		2>/dev/null | od -An -tx1 | tr -d ' \n'
}
# The first site of PROVIDER NAME in FILE (readelf -n: file address).
site_of() {
	readelf -n "$1" | awk -v p="$2" -v n="$3" '/^    Provider: / { pr = $2 }
		/^    Name: / { nm = $2 }
		/^    Location: / && pr == p && nm == n { sub(",", "", $2); print $2; exit }'
}
# FILE's load bias in pid (its first mapping's start minus its offset 0 vaddr).
bias_of() {
	local first
	first=$(readelf -lW "$2" | awk '$1 == "LOAD" { print $3; exit }')
	awk -v f="$(readlink -f "$2")" '$6 == f { split($1, a, "-"); print a[1]; exit }' \
		"/proc/$1/maps" | { read -r start; printf '%d' $((16#$start - first)); }
}
