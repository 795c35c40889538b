#!/bin/bash
# How SDT probe sites of the machine's own programs would be placed: every
# ELF file under DIRS (default: /usr/bin /usr/sbin /usr/lib /usr/libexec
# /usr/local) with a .note.stapsdt section, through `lttng list --sdt`
# (each site planned on its own, as an event on it would be).  Prints each
# object's summary line, then the totals.  Not a pass/fail test.
#
#   tests/perf/sdt-coverage.sh [DIR...]       from the build tree

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
LTTNG=$top_builddir/src/bin/lttng/lttng
[ -x "$LTTNG" ] || { echo "sdt-coverage.sh: build src/bin/lttng first" >&2; exit 1; }
[ $# -gt 0 ] || set -- /usr/bin /usr/sbin /usr/lib /usr/libexec /usr/local

find "$@" -xdev -type f -size +1k 2>/dev/null | sort | while read -r f; do
	[ "$(head -c4 "$f" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ] || continue
	readelf -SW "$f" 2>/dev/null | grep -q '\.note\.stapsdt' || continue
	"$LTTNG" --no-sessiond list -u --path "$f" --sdt 2>&1 | tail -1
done | tee /dev/stderr | awk '
	/^SDT probes: / {
		match($0, /([0-9]+) sites? in/, s)
		match($0, /([0-9]+) by jump, ([0-9]+) by int3, ([0-9]+) refused/, p)
		objs++; sites += s[1]; jump += p[1]; int3 += p[2]; refused += p[3]
	}
	END {
		printf "sdt-coverage: %d objects, %d sites: %d by jump (%.1f%%), %d by int3, %d refused\n",
			objs, sites, jump, sites ? 100 * jump / sites : 0, int3, refused
	}'
