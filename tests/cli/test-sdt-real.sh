#!/bin/bash
# SDT probes of real distribution objects, not of our own test programs:
# libstdc++'s (provider libstdcxx: throw, catch, rethrow), CPython's
# (/usr/bin/python3.11, provider python, with semaphores) and PostgreSQL's
# (postgres, 71 sites, pointer and %rip arguments).  Debian's glibc has no
# SDT notes, so these stand for "probes a distribution ships".
#
# - lttng list --sdt against readelf -n on each: every provider:name and its
#   number of sites, each site's address, semaphore and argument spec, and
#   a placement (jump, int3: why, refused: why) for each, counted in the
#   summary;
# - libstdc++: sdt-throw throws and catches Boom objects; libstdcxx:throw,
#   catch and rethrow record the object's address and &typeid(Boom) as the
#   program prints them, one event per throw, catch and rethrow (--sdt
#   pattern by pid, --userspace-probe path-wide for a process started
#   later, lttng trace);
# - CPython: sdt-calls.py calls target() N times (under cProfile: 3.11
#   fires function__entry only on its tracing path, see sdt-calls.py);
#   python:function__entry records N events of target, with the def's
#   line, the file and function names read through its pointer arguments
#   (string contexts); its semaphore, read in /proc/PID/mem, is 1 while
#   enabled and 0 after, when CPython records nothing more and computes the
#   same; the sites hold the file's bytes whenever no event uses them
#   (--sdt by pid, --userspace-probe path-wide, lttng trace); python:line
#   records target's body line, gc__start the generation gc.collect(2) is
#   given (read at 112(%rsp)), gc__done the count it returns;
# - PostgreSQL: a private cluster, events by pid on the postmaster and its
#   children; the backend forked for a psql connection records
#   query__start with the query (a string context through its pointer), its
#   transaction__start/commit with the local transaction id pg_locks shows,
#   and the checkpointer checkpoint__done with NBuffers (a %rip argument)
#   = shared_buffers; semaphores raised and lowered in the PIE postmaster.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"

THROW=$top_builddir/tests/cli/sdt-throw
CALLS=$top_srcdir/tests/cli/sdt-calls.py
EMBED=$top_builddir/tests/cli/sdt-embed
PY=/usr/bin/python3.11
# As the loader names it (/lib/x86_64-linux-gnu/libstdc++.so.6: two
# symbolic links, /lib and the soname's), and the file itself.
LIBSTDCXX_LINK=$(ldd "$THROW" | awk '$1 ~ /^libstdc\+\+\.so/ { print $3 }')
LIBSTDCXX=$(readlink -f "$LIBSTDCXX_LINK")
POSTGRES=/usr/lib/postgresql/15/bin/postgres
[ -x "$THROW" ] || tap_bail "no $THROW (make check builds it)"
[ -f "$LIBSTDCXX" ] || tap_bail "sdt-throw links no libstdc++"
[ -x "$POSTGRES" ] || tap_bail "no $POSTGRES (tools/deps.sh installs postgresql-15)"
[ -x "$PY" ] || tap_bail "no $PY (tools/deps.sh installs python3.11)"
[ -x "$EMBED" ] || tap_bail "no $EMBED (make check builds it)"
LIBPY=$(readlink -f "$(ldd "$EMBED" | awk '$1 ~ /^libpython3/ { print $3 }')")
[ -f "$LIBPY" ] || tap_bail "sdt-embed links no libpython3.11"

# ---- listing: our view against readelf -n --------------------------------
# "PROVIDER NAME ADDRESS SEMAPHORE ARGS" per site, sorted: from our listing...
our_sites() {
	awk '/^  [^ ]+:[^ ]+$/ { split($1, pn, ":") }
	     /^    0x/ { addr = $1; sem = "0x0" }
	     /^      semaphore / { sem = $2 }
	     /^      arguments: / { a = substr($0, 18); if (a == "(none)") a = ""
			print pn[1], pn[2], addr, sem, a }' | sed 's/ $//' | sort
}
# ... and from readelf -n (no prelink shift in these objects: their
# .stapsdt.base is where the notes say).
readelf_sites() {
	readelf -n "$1" | awk '
		/^    Provider: / { p = $2 }
		/^    Name: / { n = $2 }
		/^    Location: / { sub(",", "", $2); loc = strtonum($2); sem = strtonum($6) }
		/^    Arguments:/ { a = $0; sub(/^    Arguments: ?/, "", a)
			printf "%s %s 0x%x 0x%x %s\n", p, n, loc, sem, a }' | sed 's/ $//' | sort
}
# "PROVIDER:NAME SITES" per probe, sorted.
readelf_probes() {
	readelf -n "$1" | awk '/^    Provider: / { p = $2 } /^    Name: / { print p ":" $2 }' |
		sort | uniq -c | awk '{ print $2, $1 }'
}
our_probes() {
	awk '/^  [^ ]+:[^ ]+$/ { pn = $1 } /^    0x/ { n[pn]++ }
	     END { for (p in n) print p, n[p] }' | sort
}

for obj in "$LIBSTDCXX" "$PY" "$LIBPY" "$POSTGRES"; do
	b=$(basename "$obj")
	readelf_probes "$obj" >"$DP_TMP/rp"
	[ -s "$DP_TMP/rp" ] || tap_bail "$obj has no .note.stapsdt (readelf -n)"
	out=$("$LTTNG" list -u --path "$obj" --sdt 2>"$DP_TMP/err")
	tap_ok $? "$b: list --sdt reads its notes" || tap_diag_file "$DP_TMP/err"
	our_probes <<<"$out" >"$DP_TMP/op"
	diff "$DP_TMP/rp" "$DP_TMP/op" >"$DP_TMP/diff"
	tap_ok $? "$b: the providers and probes of readelf -n, each with its number of sites ($(wc -l <"$DP_TMP/rp") probes)" ||
		tap_diag_file "$DP_TMP/diff"
	readelf_sites "$obj" >"$DP_TMP/rs"
	our_sites <<<"$out" >"$DP_TMP/os"
	diff "$DP_TMP/rs" "$DP_TMP/os" >"$DP_TMP/diff"
	tap_ok $? "$b: each site's address, semaphore and argument spec as readelf -n shows them ($(wc -l <"$DP_TMP/rs") sites)" ||
		tap_diag_file "$DP_TMP/diff"
	nsites=$(wc -l <"$DP_TMP/rs")
	# (a jump whose window holds branch targets says how it leads them)
	jump=$(grep -cE '^    0x.*  jump(: led window: .*)?$' <<<"$out")
	led=$(grep -cE '^    0x.*  jump: led window: .*$' <<<"$out")
	int3=$(grep -cE '^    0x.*  int3: [a-z].*$' <<<"$out")
	refused=$(grep -cE '^    0x.*  refused: [a-z].*$' <<<"$out")
	[ $((jump + int3 + refused)) -eq "$nsites" ] &&
		grep -qE "^SDT probes: $(wc -l <"$DP_TMP/rp") in [0-9]+ providers?, $nsites sites in .*: $jump by jump, $int3 by int3, $refused refused$" <<<"$out"
	tap_ok $? "$b: every site placed (jump $jump, int3 $int3, refused $refused, with the reason), as the summary counts" ||
		tap_diag "$(tail -1 <<<"$out")"
	tap_diag "$b: $nsites sites: $jump by jump ($led with a led window), $int3 by int3, $refused refused"
	[ "$(grep -cE '^      arg[0-9]+: (u?int(8|16|32|64)|float|double) ' <<<"$out")" -eq \
	  "$(awk '{ for (i = 5; i <= NF; i++) n++ } END { print n + 0 }' "$DP_TMP/rs")" ]
	tap_ok $? "$b: every argument of every site parsed to a typed value"
done

cli_setup

# Our lttng, free to start lttng-dynprobed: $out, $err, $status.
run_lt() {
	out=$("$LTTNG" "$@" 2>"$DP_TMP/err")
	status=$?
	err=$(cat "$DP_TMP/err")
}
# ---- programs driven through a fifo --------------------------------------
# start_prog NAME CMD... starts one, the agent preloaded; `cmd NAME C`
# (cli.sh) sends it command C and waits for its "ok".
start_prog() {
	local name=$1
	shift
	fifo_start "$name" env LD_PRELOAD="$LTTNG_DYNPROBE_AGENT" "$@"
}
# The events of trace DIR for vpid PID, "EVENT { fields }" a line, in
# order, without the _NAME_error fields (0 when a read worked: errors()).
recorded() {
	bt_text "$1" 2>/dev/null | grep -E "\{ vpid = $2 \}" |
		sed -E 's/^([a-z_]+:[a-z_]+): \{[^}]*\}, \{[^}]*\}, \{ (.*) \}$/\1 { \2 }/;
			s/, _[a-z0-9]+_error = 0//g'
}
errors() {
	bt_text "$1" 2>/dev/null | grep -oE '_[a-z0-9]+_error = [1-9][0-9]*' | head -3
}
# FILE's load bias in pid PID: where its mapping at file offset 0 starts,
# less the address its first PT_LOAD (offset 0) asks for.
bias_of() {
	local start vaddr
	start=$(awk -v f="$(readlink -f "$2")" '$6 == f && $3 == "00000000" {
		split($1, a, "-"); print strtonum("0x" a[1]); exit }' "/proc/$1/maps")
	vaddr=$(readelf -lW "$2" | awk '$1 == "LOAD" && strtonum($2) == 0 {
		print strtonum($3); exit }')
	[ -n "$start" ] && [ -n "$vaddr" ] && echo $((start - vaddr))
}
mem_bytes() {	# pid addr count: the process's bytes, as hex
	dd if="/proc/$1/mem" bs=4096 iflag=skip_bytes,count_bytes skip="$2" count="$3" \
		2>/dev/null | od -An -tx1 | tr -d ' \n'
}
file_bytes() {	# file vaddr count: the file's bytes that load at vaddr
	local off
	off=$(readelf -lW "$1" | awk -v a="$2" '$1 == "LOAD" && strtonum($3) <= strtonum(a) &&
		strtonum(a) < strtonum($3) + strtonum($5) {
		print strtonum(a) - strtonum($3) + strtonum($2); exit }')
	[ -n "$off" ] || return 1
	dd if="$1" bs=4096 iflag=skip_bytes,count_bytes skip="$off" count="$3" 2>/dev/null |
		od -An -tx1 | tr -d ' \n'
}
# Whether every site of FILE in pid holds the file's bytes (the 5 a jump
# would overwrite).
sites_as_file() {
	local pid=$1 file=$2 bias site bad=0
	bias=$(bias_of "$pid" "$file")
	[ -n "$bias" ] || return 1
	for site in $(readelf -n "$file" | awk '/^    Location: / { sub(",", "", $2); print $2 }'); do
		[ "$(mem_bytes "$pid" $((bias + site)) 5)" = "$(file_bytes "$file" "$site" 5)" ] ||
			bad=1
	done
	return $bad
}
# The semaphore of PROVIDER:NAME in FILE (readelf -n), as a number.
sem_addr() {
	readelf -n "$1" | awk -v p="$2" -v n="$3" '
		/^    Provider: / { cp = $2 } /^    Name: / { cn = $2 }
		/^    Location: / && cp == p && cn == n { print strtonum($6); exit }'
}
# The 2-byte counter at FILE's semaphore of PROVIDER:NAME in pid PID.
sem_value() {
	local bias
	bias=$(bias_of "$1" "$2")
	[ -n "$bias" ] || return 1
	dd if="/proc/$1/mem" bs=2 iflag=skip_bytes count=1 skip=$((bias + $(sem_addr "$2" "$3" "$4"))) \
		2>/dev/null | od -An -tu2 --endian=little | tr -d ' '
}

# ---- libstdc++: throw, catch, rethrow ------------------------------------
"$STOCK" -n create s1 --output="$DP_TMP/t1" >/dev/null || tap_bail "create s1"
"$STOCK" -n add-context -u -t vpid >/dev/null || tap_bail "add-context vpid"
start_prog a "$THROW"
cmd a t || tap_bail "sdt-throw does not answer"
sites_as_file "$a_pid" "$LIBSTDCXX"
tap_ok $? "libstdc++: before any event, its sites in sdt-throw hold the file's bytes"
run_lt enable-event -u --path "$LIBSTDCXX" --pid "$a_pid" --sdt 'libstdcxx:*'
tap_ok "$status" "--sdt 'libstdcxx:*' --pid: accepted" || tap_diag "$err"
[ "$(grep -c '^Dynamic UST event libstdcxx:\(throw\|catch\|rethrow\) created' <<<"$out")" -eq 3 ]
tap_ok $? "... three events: libstdcxx:throw, catch and rethrow" || tap_diag "$out"
wait_sites s1 "$a_pid" libstdcxx:throw
! sites_as_file "$a_pid" "$LIBSTDCXX"
tap_ok $? "enabled: the sites are patched"
"$STOCK" -n start s1 >/dev/null
N=7
cmd a "t $N" && cmd a r
"$STOCK" -n stop s1 >/dev/null
ti=$(awk '$1 == "typeinfo" { print $2 }' "$DP_TMP/a.out")
grep '^libstdcxx:' "$DP_TMP/a.out" >"$DP_TMP/a.passed"
recorded "$DP_TMP/t1" "$a_pid" >"$DP_TMP/a.recorded"
[ "$(grep -c "^libstdcxx:throw { arg0 = [0-9]*, arg1 = $ti }$" "$DP_TMP/a.recorded")" -eq $((N + 1)) ]
tap_ok $? "libstdcxx:throw: $((N + 1)) events, arg1 = &typeid(Boom) as the program prints it ($ti)" ||
	tap_diag "$(head -5 "$DP_TMP/a.recorded")"
[ "$(grep -c "^libstdcxx:catch { arg0 = [0-9]*, arg1 = $ti }$" "$DP_TMP/a.recorded")" -eq $((N + 2)) ] &&
	[ "$(grep -c "^libstdcxx:rethrow { arg0 = [0-9]*, arg1 = $ti }$" "$DP_TMP/a.recorded")" -eq 1 ]
tap_ok $? "libstdcxx:catch: $((N + 2)) events (one per handler), libstdcxx:rethrow: 1"
[ "$(head -$((2 * N)) "$DP_TMP/a.passed" | grep '^libstdcxx:throw' | sort -u | wc -l)" -eq "$N" ] &&
	diff "$DP_TMP/a.passed" "$DP_TMP/a.recorded" >"$DP_TMP/diff"
tap_ok $? "every event, in order, holds the object's address (arg0) and its type_info (arg1) as the program printed them ($(wc -l <"$DP_TMP/a.passed") events, $N distinct objects in a round)" ||
	tap_diag_file "$DP_TMP/diff"
[ -z "$(errors "$DP_TMP/t1")" ]
tap_ok $? "no argument read failed (catch's arg1 is read from the stack: -80(%rbx))"

# The stock syntax, path-wide, in a second session: a process started
# later; the library named by the loader's path, through its links.
"$STOCK" -n create s2 --output="$DP_TMP/t2" >/dev/null || tap_bail "create s2"
"$STOCK" -n add-context -u -s s2 -t vpid >/dev/null
run_cli enable-event -u -s s2 --userspace-probe="sdt:$LIBSTDCXX_LINK:libstdcxx:catch"
tap_ok "$status" "--userspace-probe=sdt:$LIBSTDCXX_LINK:libstdcxx:catch, path-wide" || tap_diag "$err"
start_prog b "$THROW"
cmd b t || tap_bail "the second sdt-throw does not answer"
wait_sites s2 "$b_pid" libstdcxx:catch
tap_ok $? "a process started later gets the path-wide event's sites"
"$STOCK" -n start s2 >/dev/null
cmd b "t 3"
"$STOCK" -n stop s2 >/dev/null
grep '^libstdcxx:catch' "$DP_TMP/b.out" >"$DP_TMP/b.passed"
recorded "$DP_TMP/t2" "$b_pid" >"$DP_TMP/b.recorded"
[ "$(wc -l <"$DP_TMP/b.passed")" -eq 3 ] && diff "$DP_TMP/b.passed" "$DP_TMP/b.recorded" >"$DP_TMP/diff"
tap_ok $? "its 3 catches recorded with the values it printed" || tap_diag_file "$DP_TMP/diff"
"$LTTNG" -n destroy s2 >/dev/null
"$LTTNG" -n destroy s1 >/dev/null
sites_as_file "$a_pid" "$LIBSTDCXX" && sites_as_file "$b_pid" "$LIBSTDCXX"
tap_ok $? "destroyed: every site holds the file's bytes again, in both processes"
cmd a "t 2" && cmd b "t 2"
tap_ok $? "... and both still throw and catch"
cmd a q; cmd b q
wait "$a_pid" "$b_pid" 2>/dev/null

printf 't 4\nr\nq\n' | "$LTTNG" trace --no-view -o "$DP_TMP/t3" --path "$LIBSTDCXX" \
	--sdt 'libstdcxx:*' -t vpid -- "$THROW" >"$DP_TMP/c.out" 2>"$DP_TMP/c.err"
tap_ok $? "lttng trace --path LIBSTDCXX --sdt 'libstdcxx:*' -- sdt-throw" ||
	tap_diag_file "$DP_TMP/c.err"
c_pid=$(awk '$1 == "pid" { print $2 }' "$DP_TMP/c.out")
grep '^libstdcxx:' "$DP_TMP/c.out" >"$DP_TMP/c.passed"
recorded "$DP_TMP/t3" "$c_pid" >"$DP_TMP/c.recorded"
[ "$(wc -l <"$DP_TMP/c.passed")" -eq 12 ] && diff "$DP_TMP/c.passed" "$DP_TMP/c.recorded" >"$DP_TMP/diff"
tap_ok $? "... its 12 events hold what the program printed, in order" || tap_diag_file "$DP_TMP/diff"

# ---- CPython: python:function__entry and its semaphore --------------------
ENTRY=python:function__entry
"$STOCK" -n create s4 --output="$DP_TMP/t4" >/dev/null || tap_bail "create s4"
"$STOCK" -n add-context -u -s s4 -t vpid >/dev/null
start_prog p "$PY" "$CALLS"
cmd p "c 0" || tap_bail "sdt-calls.py does not answer"
def=$(awk '$1 == "def" { print $2 }' "$DP_TMP/p.out")
file=$(awk '$1 == "file" { print $2 }' "$DP_TMP/p.out")
[ "$(sem_value "$p_pid" "$PY" python function__entry)" = 0 ]
tap_ok $? "$ENTRY's semaphore is 0 in a fresh interpreter ($(sem_value "$p_pid" "$PY" python function__entry))"
sites_as_file "$p_pid" "$PY"
tap_ok $? "every python site holds the file's bytes"
run_cli enable-event -u -s s4 --path "$PY" --pid "$p_pid" --sdt "$ENTRY"
tap_ok "$status" "--sdt $ENTRY --pid" || tap_diag "$err"
run_cli add-context -u -s s4 -e "$ENTRY" -t string:file:rbp -t string:func:r12
tap_ok "$status" "add-context: strings through its pointer arguments (arg0 %rbp: the file, arg1 %r12: the function)" ||
	tap_diag "$err"
wait_sites s4 "$p_pid" "$ENTRY"
[ "$(sem_value "$p_pid" "$PY" python function__entry)" = 1 ]
tap_ok $? "enabled: its semaphore is 1 ($(sem_value "$p_pid" "$PY" python function__entry))"
"$STOCK" -n start s4 >/dev/null
N=25
cmd p "c $N"
total1=$(awk '$1 == "total" { t = $2 } END { print t }' "$DP_TMP/p.out")
"$STOCK" -n stop s4 >/dev/null
recorded "$DP_TMP/t4" "$p_pid" | grep "^$ENTRY " >"$DP_TMP/p.recorded"
n=$(grep -c "func = \"target\"" "$DP_TMP/p.recorded")
[ "$n" -eq "$N" ]
tap_ok $? "$N calls of target(): $N $ENTRY events of target ($n)" ||
	tap_diag "$(head -3 "$DP_TMP/p.recorded")"
[ "$(grep "func = \"target\"" "$DP_TMP/p.recorded" | grep -c "arg2 = $def, file = \"$file\", func = \"target\"")" -eq "$N" ]
tap_ok $? "each with the def's line ($def) and the file ($file) as its code object says" ||
	tap_diag "$(grep "func = \"target\"" "$DP_TMP/p.recorded" | head -2)"
[ -z "$(errors "$DP_TMP/t4")" ]
tap_ok $? "no string read failed"
[ "$total1" = $((N * (N - 1))) ]
tap_ok $? "the interpreter computed what it computes untraced ($total1)"

run_cli disable-event -u -s s4 "$ENTRY"
tap_ok "$status" "disable-event $ENTRY" || tap_diag "$err"
[ "$(sem_value "$p_pid" "$PY" python function__entry)" = 0 ]
tap_ok $? "its semaphore back to 0"
sites_as_file "$p_pid" "$PY"
tap_ok $? "every python site holds the file's bytes again"
"$STOCK" -n start s4 >/dev/null
cmd p "c $N"
"$STOCK" -n stop s4 >/dev/null
total2=$(awk '$1 == "total" { t = $2 } END { print t }' "$DP_TMP/p.out")
[ "$(recorded "$DP_TMP/t4" "$p_pid" | grep -c "^$ENTRY ")" -eq "$(wc -l <"$DP_TMP/p.recorded")" ]
tap_ok $? "disabled: CPython records nothing more"
[ "$total2" = $((2 * N * (N - 1))) ]
tap_ok $? "... and computes the same ($total2)"
"$LTTNG" -n destroy s4 >/dev/null

# python:line: 3.11 passes the file (%r14), the function (%rax) and the
# line (%ebp).  Its site's nop is followed by a jmp whose last byte a word
# of python's data happens to name ("ABC", 0x434241): a number, not a
# label, so it gets a jump like the others.
body=$(awk '$1 == "body" { print $2 }' "$DP_TMP/p.out")
"$STOCK" -n create s6 --output="$DP_TMP/t6l" >/dev/null || tap_bail "create s6"
"$STOCK" -n add-context -u -s s6 -t vpid >/dev/null
run_lt enable-event -u -s s6 --path "$PY" --pid "$p_pid" --sdt python:line
tap_ok "$status" "--sdt python:line --pid" || tap_diag "$err"
run_lt add-context -u -s s6 -e python:line -t string:func:rax
# And the collector's: gc__start's generation is read at 112(%rsp) (the
# stack of the probed code, not the trampoline's), gc__done's count is an
# int64 in %r12.
run_lt enable-event -u -s s6 --path "$PY" --pid "$p_pid" --sdt 'python:gc__*'
tap_ok "$status" "--sdt 'python:gc__*' --pid: gc__start and gc__done" || tap_diag "$err"
wait_sites s6 "$p_pid" python:line
placed=$("$LTTNG" list -u --path "$PY" --sdt python:line | tail -1 |
	sed -nE 's/.*: ([0-9]+) by jump, ([0-9]+) by int3, 0 refused$/\1 site by jump, \2 by int3/p')
[ "$placed" = "1 site by jump, 0 by int3" ] && "$LTTNG" -n list s6 | grep -q "process $p_pid: $placed"
tap_ok $? "its site placed by a jump, as list --sdt says ($placed)" || tap_diag "$("$LTTNG" -n list s6)"
[ "$(sem_value "$p_pid" "$PY" python line)" = 1 ] &&
	[ "$(sem_value "$p_pid" "$PY" python function__entry)" = 0 ]
tap_ok $? "its semaphore is 1, function__entry's still 0"
"$STOCK" -n start s6 >/dev/null
cmd p "c 11" && cmd p "g 5"
"$STOCK" -n stop s6 >/dev/null
found=$(awk '$1 == "gc" { f = $3 } END { print f }' "$DP_TMP/p.out")
[ -n "$found" ] && [ "$(recorded "$DP_TMP/t6l" "$p_pid" | grep '^python:gc__' | tr '\n' ' ')" = \
	"python:gc__start { arg0 = 2 } python:gc__done { arg0 = $found } " ]
tap_ok $? "gc.collect(2): gc__start { arg0 = 2 }, then gc__done with what gc.collect returned ($found)" ||
	tap_diag "$(recorded "$DP_TMP/t6l" "$p_pid" | grep '^python:gc__')"
total3=$(awk '$1 == "total" { t = $2 } END { print t }' "$DP_TMP/p.out")
n=$(recorded "$DP_TMP/t6l" "$p_pid" | grep -c "^python:line { .*arg2 = $body, func = \"target\" }$")
[ "$n" -eq 11 ] && [ "$(recorded "$DP_TMP/t6l" "$p_pid" | grep -c 'func = "target"')" -eq 11 ]
tap_ok $? "11 calls of target(): 11 python:line events of target, each with its body's line ($body)" ||
	tap_diag "$(recorded "$DP_TMP/t6l" "$p_pid" | tail -4)"
[ "$total3" = $((2 * N * (N - 1) + 110)) ] && [ -z "$(errors "$DP_TMP/t6l")" ]
tap_ok $? "the interpreter computed what it computes untraced ($total3), no read failed"
"$LTTNG" -n destroy s6 >/dev/null
[ "$(sem_value "$p_pid" "$PY" python line)" = 0 ] && sites_as_file "$p_pid" "$PY"
tap_ok $? "destroyed: its semaphore 0, its site the file's bytes"

# Path-wide, the stock syntax: a process started later, beside one running.
"$STOCK" -n create s5 --output="$DP_TMP/t5" >/dev/null || tap_bail "create s5"
"$STOCK" -n add-context -u -s s5 -t vpid >/dev/null
run_cli enable-event -u -s s5 --userspace-probe="sdt:$PY:python:function__entry"
tap_ok "$status" "--userspace-probe=sdt:$PY:$ENTRY, path-wide" || tap_diag "$err"
start_prog q "$PY" "$CALLS"
cmd q "c 0" || tap_bail "the second sdt-calls.py does not answer"
wait_sites s5 "$q_pid" "$ENTRY" && wait_sites s5 "$p_pid" "$ENTRY"
tap_ok $? "both interpreters get its sites (one started later)"
[ "$(sem_value "$p_pid" "$PY" python function__entry)" = 1 ] &&
	[ "$(sem_value "$q_pid" "$PY" python function__entry)" = 1 ]
tap_ok $? "the semaphore is 1 in each"
"$STOCK" -n start s5 >/dev/null
cmd q "c 9"
"$STOCK" -n stop s5 >/dev/null
[ "$(recorded "$DP_TMP/t5" "$q_pid" | grep "^$ENTRY " | grep -c "arg2 = $def }")" -eq 9 ]
tap_ok $? "the later one's 9 calls of target recorded with the def's line" ||
	tap_diag "$(recorded "$DP_TMP/t5" "$q_pid" | tail -3)"
"$LTTNG" -n destroy s5 >/dev/null
[ "$(sem_value "$p_pid" "$PY" python function__entry)" = 0 ] &&
	[ "$(sem_value "$q_pid" "$PY" python function__entry)" = 0 ] &&
	sites_as_file "$p_pid" "$PY" && sites_as_file "$q_pid" "$PY"
tap_ok $? "destroyed: semaphores 0 and the file's bytes in both"
cmd p q; cmd q q
wait "$p_pid" "$q_pid" 2>/dev/null

# CPython in a shared library: sdt-embed links libpython3.11.so.1.0, whose
# semaphores lie in its own data, at the note's address plus its bias.
"$STOCK" -n create s9 --output="$DP_TMP/t9" >/dev/null || tap_bail "create s9"
"$STOCK" -n add-context -u -s s9 -t vpid >/dev/null
start_prog e "$EMBED" "$CALLS"
cmd e "c 0" || tap_bail "sdt-embed does not answer"
[ "$(sem_value "$e_pid" "$LIBPY" python function__entry)" = 0 ] && sites_as_file "$e_pid" "$LIBPY"
tap_ok $? "libpython3.11: a fresh process's semaphore is 0, its sites the file's bytes"
run_lt enable-event -u -s s9 --path "$LIBPY" --pid "$e_pid" --sdt "$ENTRY"
tap_ok "$status" "--path LIBPY --sdt $ENTRY --pid" || tap_diag "$err"
run_lt add-context -u -s s9 -e "$ENTRY" -t string:func:r12
wait_sites s9 "$e_pid" "$ENTRY"
[ "$(sem_value "$e_pid" "$LIBPY" python function__entry)" = 1 ] &&
	[ "$(sem_value "$e_pid" "$LIBPY" python function__return)" = 0 ]
tap_ok $? "its semaphore in the library is 1 (function__return's still 0)"
"$STOCK" -n start s9 >/dev/null
cmd e "c 8"
"$STOCK" -n stop s9 >/dev/null
[ "$(recorded "$DP_TMP/t9" "$e_pid" | grep -c "^$ENTRY { .*arg2 = $def, func = \"target\" }$")" -eq 8 ]
tap_ok $? "its 8 calls of target recorded with the def's line" ||
	tap_diag "$(recorded "$DP_TMP/t9" "$e_pid" | tail -3)"
"$LTTNG" -n destroy s9 >/dev/null
[ "$(sem_value "$e_pid" "$LIBPY" python function__entry)" = 0 ] && sites_as_file "$e_pid" "$LIBPY"
tap_ok $? "destroyed: the library's semaphore 0, its sites the file's bytes"
cmd e q
wait "$e_pid" 2>/dev/null

printf 'c 6\nq\n' | "$LTTNG" trace --no-view -o "$DP_TMP/t6" --path "$PY" --sdt "$ENTRY" \
	-t vpid -t string:func:r12 -- "$PY" "$CALLS" >"$DP_TMP/r.out" 2>"$DP_TMP/r.err"
tap_ok $? "lttng trace --path $PY --sdt $ENTRY -- sdt-calls.py" || tap_diag_file "$DP_TMP/r.err"
r_pid=$(awk '$1 == "pid" { print $2 }' "$DP_TMP/r.out")
[ "$(recorded "$DP_TMP/t6" "$r_pid" | grep -c "^$ENTRY { .*arg2 = $def, func = \"target\"")" -eq 6 ]
tap_ok $? "... its 6 calls of target recorded with the def's line" ||
	tap_diag "$(recorded "$DP_TMP/t6" "$r_pid" | tail -3)"

# ---- PostgreSQL: by pid on the postmaster, inherited by its backends ------
# A private cluster in DP_TMP, run as the postgres user (it refuses root),
# on 127.0.0.1 of this test's own network namespace.  The events are put on
# the postmaster and its children by pid: a backend forked for a connection
# inherits the patches, the agent and the raised semaphores.
PGBIN=$(dirname "$POSTGRES")
PG_PORT=15432
as_pg() {
	setpriv --reuid=postgres --regid=postgres --init-groups \
		env HOME="$DP_TMP/pg/home" LTTNG_HOME="$DP_TMP/pg/home" "$@"
}
psql_value() {
	as_pg timeout 60 "$PGBIN/psql" -X -A -t -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "$1" postgres
}
mkdir -p "$DP_TMP/pg/data" "$DP_TMP/pg/home"
chown -R postgres: "$DP_TMP/pg"
as_pg "$PGBIN/initdb" -D "$DP_TMP/pg/data" -A trust -U postgres --no-sync >"$DP_TMP/pg/initdb.log" 2>&1 ||
	{ tap_diag_file "$DP_TMP/pg/initdb.log"; tap_bail "initdb failed"; }
setpriv --reuid=postgres --regid=postgres --init-groups env HOME="$DP_TMP/pg/home" \
	"$POSTGRES" -D "$DP_TMP/pg/data" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
	-c unix_socket_directories="$DP_TMP/pg" -c autovacuum=off -c fsync=off \
	>"$DP_TMP/pg/postgres.log" 2>&1 &
pg_pid=$!
for i in $(seq 300); do
	as_pg "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
	kill -0 "$pg_pid" 2>/dev/null || break
	sleep 0.1
done
as_pg "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" ||
	{ tap_diag_file "$DP_TMP/pg/postgres.log"; tap_bail "postgres does not answer"; }
# The postmaster and its children that run: the startup process ends about
# when the server first answers.
pg_pids() {
	local p
	for p in $pg_pid $(cat /proc/"$pg_pid"/task/*/children 2>/dev/null); do
		[ "$(awk '$1 == "State:" { print $2 }' /proc/"$p"/status 2>/dev/null)" != Z ] &&
			grep -qF "$POSTGRES" /proc/"$p"/maps 2>/dev/null && echo "$p"
	done | tr '\n' ',' | sed 's/,$//'
}
pgl=$(pg_pids)
sites_as_file "$pg_pid" "$POSTGRES"
tap_ok $? "postgres: the postmaster's sites hold the file's bytes ($pgl)"

"$STOCK" -n create s7 --output="$DP_TMP/t7" >/dev/null || tap_bail "create s7"
"$STOCK" -n add-context -u -s s7 -t vpid >/dev/null
for i in 1 2 3; do
	run_lt enable-event -u -s s7 --path "$POSTGRES" --pid "$pgl" --sdt 'postgresql:transaction__*'
	# A child that ended since the list: the list again.
	grep -q '^Error: no process [0-9]* (--pid)' <<<"$err" || break
	sleep 1
	pgl=$(pg_pids)
done
tap_ok "$status" "--sdt 'postgresql:transaction__*' --pid (the postmaster and its children)" ||
	tap_diag "$err"
run_lt enable-event -u -s s7 --path "$POSTGRES" --pid "$pgl" --sdt postgresql:query__start
tap_ok "$status" "--sdt postgresql:query__start --pid" || tap_diag "$err"
run_lt enable-event -u -s s7 --pid "$pgl" --userspace-probe="sdt:$POSTGRES:postgresql:checkpoint__done"
tap_ok "$status" "--userspace-probe=sdt:POSTGRES:postgresql:checkpoint__done --pid (its arguments through %rip: CheckpointStats, NBuffers)" ||
	tap_diag "$err"
run_lt add-context -u -s s7 -e postgresql:query__start -t string:query:rbx
tap_ok "$status" "add-context: query__start's query string through its pointer (8@%rbx)" ||
	tap_diag "$err"
wait_sites s7 "$pg_pid" postgresql:query__start
[ "$(sem_value "$pg_pid" "$POSTGRES" postgresql query__start)" = 1 ] &&
	[ "$(sem_value "$pg_pid" "$POSTGRES" postgresql transaction__commit)" = 1 ] &&
	[ "$(sem_value "$pg_pid" "$POSTGRES" postgresql checkpoint__done)" = 1 ]
tap_ok $? "the postmaster's semaphores of the three probes are 1 (a PIE: the note's address plus the load bias)"
"$STOCK" -n start s7 >/dev/null
SQL="SELECT 'dp-sdt-real', split_part(virtualtransaction, '/', 2) FROM pg_locks WHERE locktype = 'virtualxid' AND pid = pg_backend_pid()"
row=$(psql_value "$SQL")
nbuf=$(psql_value "SELECT setting FROM pg_settings WHERE name = 'shared_buffers'")
psql_value CHECKPOINT >/dev/null
"$STOCK" -n stop s7 >/dev/null
lxid=${row##*|}
# (babeltrace2 writes a quote in a string as \')
bt_text "$DP_TMP/t7" 2>/dev/null | sed "s/\\\\'/'/g" >"$DP_TMP/pg.events"
vpid=$(grep -F "query = \"$SQL\"" "$DP_TMP/pg.events" | sed -nE 's/.*\{ vpid = ([0-9]+) \}.*/\1/p' | head -1)
[ -n "$vpid" ] && [ "$vpid" != "$pg_pid" ] && [ "$row" = "dp-sdt-real|$lxid" ]
tap_ok $? "postgresql:query__start recorded the query as psql sent it, in the backend forked for it ($vpid)" ||
	tap_diag "$row" "$(grep -c . "$DP_TMP/pg.events") events" "$(grep query__start "$DP_TMP/pg.events" | head -3)"
recorded "$DP_TMP/t7" "$vpid" >"$DP_TMP/pg.backend"
[ "$(grep -c "^postgresql:transaction__start { arg0 = $lxid }$" "$DP_TMP/pg.backend")" -eq 1 ] &&
	[ "$(grep -c "^postgresql:transaction__commit { arg0 = $lxid }$" "$DP_TMP/pg.backend")" -eq 1 ] &&
	[ "$(grep -c '^postgresql:transaction__abort' "$DP_TMP/pg.backend")" -eq 0 ]
tap_ok $? "its transaction's start and commit carry its local transaction id as pg_locks shows it ($lxid)" ||
	tap_diag "$(grep transaction "$DP_TMP/pg.backend" | head -6)"
grep -Eq "^postgresql:checkpoint__done: .*\{ arg0 = [0-9]+, arg1 = $nbuf, arg2 = [0-9]+, arg3 = [0-9]+, arg4 = [0-9]+ \}$" \
	<(sed -E 's/, _arg[0-9]+_error = 0//g' "$DP_TMP/pg.events")
tap_ok $? "postgresql:checkpoint__done (the checkpointer's): arg1 = NBuffers, read through %rip, = shared_buffers ($nbuf pages)" ||
	tap_diag "$(grep checkpoint__done "$DP_TMP/pg.events")"
[ -z "$(errors "$DP_TMP/t7")" ]
tap_ok $? "no argument or string read failed"
"$LTTNG" -n destroy s7 >/dev/null
[ "$(sem_value "$pg_pid" "$POSTGRES" postgresql query__start)" = 0 ] &&
	[ "$(sem_value "$pg_pid" "$POSTGRES" postgresql checkpoint__done)" = 0 ] &&
	sites_as_file "$pg_pid" "$POSTGRES"
tap_ok $? "destroyed: the postmaster's semaphores are 0 and its sites the file's bytes"
[ "$(psql_value 'SELECT 6 * 7')" = 42 ]
tap_ok $? "postgres still answers"

# Every probe of postgres at once (71 sites: 3 by int3, argument specs of
# every kind, the sites of one probe disagreeing on types) under pgbench.
as_pg "$PGBIN/pgbench" -h 127.0.0.1 -p "$PG_PORT" -U postgres -i -s 1 postgres 	>"$DP_TMP/pg/init.log" 2>&1 || { tap_diag_file "$DP_TMP/pg/init.log"; tap_bail "pgbench -i failed"; }
"$STOCK" -n create s8 --output="$DP_TMP/t8" >/dev/null || tap_bail "create s8"
"$STOCK" -n add-context -u -s s8 -t vpid >/dev/null
pgl=$(pg_pids)
for i in 1 2 3; do
	run_lt enable-event -u -s s8 --path "$POSTGRES" --pid "$pgl" --sdt 'postgresql:*'
	grep -q '^Error: no process [0-9]* (--pid)' <<<"$err" || break
	sleep 1
	pgl=$(pg_pids)
done
nprobes=$(readelf_probes "$POSTGRES" | wc -l)
[ "$status" -eq 0 ] && [ "$(grep -c '^Dynamic UST event postgresql:[a-z_]* created' <<<"$out")" -eq "$nprobes" ]
tap_ok $? "--sdt 'postgresql:*' --pid: $nprobes events, one per probe" || tap_diag "$err"
# (pgbench's own queries of the catalog run past 256 bytes, the default)
run_lt add-context -u -s s8 -e postgresql:query__start -t string:query:rbx:4096
wait_sites s8 "$pg_pid" postgresql:lwlock__acquire
"$STOCK" -n start s8 >/dev/null
as_pg "$PGBIN/pgbench" -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -c 2 -t 50 postgres \
	>"$DP_TMP/pg/bench.log" 2>&1
tap_ok $? "pgbench -c 2 -t 50 with every probe enabled" || tap_diag_file "$DP_TMP/pg/bench.log"
"$STOCK" -n stop s8 >/dev/null
grep -q '^number of transactions actually processed: 100/100$' "$DP_TMP/pg/bench.log" &&
	grep -q '^number of failed transactions: 0 ' "$DP_TMP/pg/bench.log"
tap_ok $? "... its 100 transactions done, none failed"
bt_text "$DP_TMP/t8" 2>/dev/null >"$DP_TMP/pg.all"
[ "$(grep -c '^postgresql:query__start: .* query = "BEGIN;"' "$DP_TMP/pg.all")" -eq 100 ] &&
	[ "$(grep -c '^postgresql:query__start: .* query = "END;"' "$DP_TMP/pg.all")" -eq 100 ]
tap_ok $? "query__start: pgbench's 100 BEGIN; and 100 END;, as sent" ||
	tap_diag "$(grep -c '^postgresql:query__start: .* query = "BEGIN;"' "$DP_TMP/pg.all") BEGIN"
# query__plan__done's site is a nop that branches land right after
# (placed with a led window, or an int3): it fires once per plan, as
# query__plan__start does.
np=$(grep -c '^postgresql:query__plan__start: ' "$DP_TMP/pg.all")
[ "$np" -gt 0 ] && [ "$(grep -c '^postgresql:query__plan__done: ' "$DP_TMP/pg.all")" -eq "$np" ]
tap_ok $? "query__plan__done recorded as often as query__plan__start ($np)"
tap_diag "postgres, every probe under pgbench: $(awk -F: '{ print $2 }' "$DP_TMP/pg.all" | sort | uniq -c | sort -rn | head -8 | awk '{ printf "%s %s, ", $2, $1 }')..."
[ -z "$(errors "$DP_TMP/t8")" ]
tap_ok $? "no argument read failed" || tap_diag "$(errors "$DP_TMP/t8")"
"$LTTNG" -n destroy s8 >/dev/null
sites_as_file "$pg_pid" "$POSTGRES" &&
	[ "$(sem_value "$pg_pid" "$POSTGRES" postgresql lwlock__acquire)" = 0 ]
tap_ok $? "destroyed: the postmaster's sites and semaphores as before"
as_pg "$PGBIN/pg_ctl" -D "$DP_TMP/pg/data" -m fast -w -t 60 stop >"$DP_TMP/pg/pgctl.log" 2>&1
dp_stop_pid "$pg_pid"
! grep -Eq 'terminated by signal|PANIC|was terminated' "$DP_TMP/pg/postgres.log"
tap_ok $? "no crash in postgres's log"
tap_done
