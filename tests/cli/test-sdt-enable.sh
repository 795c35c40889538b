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

# Our lttng, free to start lttng-dynprobed: $out, $err, $status.
run_lt() {
	out=$("$LTTNG" "$@" 2>"$DP_TMP/err")
	status=$?
	err=$(cat "$DP_TMP/err")
}

# sdt-args driven through a fifo: start_args NAME BIN [ENV...] starts BIN,
# `cmd NAME C` (cli.sh) sends it command C and waits for its "ok".
start_args() {
	local name=$1 bin=$2
	shift 2
	fifo_start "$name" env "$@" "$bin"
}
# NAME's semaphores, fresh: "WORK DONE RUNS_WORK RUNS_DONE" of pid PID.
sems() {
	cmd "$1" s && grep "^sem $2 " "$DP_TMP/$1.out" | tail -1 | cut -d' ' -f3-
}
# What pid PID's rounds passed (in NAME's output), "EVENT { fields }" a line,
# sorted; with EVENT_RE, only those events.
passed() {
	grep -E "^$2 " "$DP_TMP/$1.out" | cut -d' ' -f2- | grep -E "^(${3:-.*})( |$)" | sort
}
# The events of trace directory DIR recorded for vpid PID, the same way
# (the `_argN_error` fields, 0 when a read succeeded, left out: errors()).
recorded() {
	bt_text "$1" 2>/dev/null | grep -E "\{ vpid = $2 \}" |
		sed -E 's/^([a-z_]+:[a-z_]+): \{[^}]*\}, \{[^}]*\}, \{ (.*) \}$/\1 { \2 }/;
			s/^([a-z_]+:[a-z_]+): \{[^}]*\}, \{[^}]*\}, \{ \}$/\1/;
			s/, _arg[0-9]+_error = 0//g; s/\{ _arg[0-9]+_error = 0, /{ /' |
		grep -E "^(${3:-.*})( |$)" | sort
}
# The `_argN_error` fields of DIR that are not 0.
errors() {
	bt_text "$1" 2>/dev/null | grep -oE '_arg[0-9]+_error = [1-9][0-9]*' | head -3
}
code_bytes() {	# pid addr count: the process's bytes, as hex
	dd if="/proc/$1/mem" bs=4096 iflag=skip_bytes,count_bytes skip="$2" count="$3" \
		2>/dev/null | od -An -tx1 | tr -d ' \n'
}
file_bytes() {	# file vaddr count: the bytes of .text at vaddr
	local off
	off=$(readelf -SW "$1" | sed -E 's/^ *\[ *[0-9]+\]//' | awk -v a="$2" '$1 == ".text" {
		print strtonum(a) - strtonum("0x" $3) + strtonum("0x" $4) }')
	dd if="$1" bs=4096 iflag=skip_bytes,count_bytes skip="$off" count="$3" 2>/dev/null |
		od -An -tx1 | tr -d ' \n'
}
# Every site of FILE's probes (readelf -n), as file addresses.
all_sites() {
	readelf -n "$1" | awk '/^    Location: / { sub(",", "", $2); print $2 }'
}
# FILE's load bias in pid: the start of its mapping at file offset 0.
bias_of() {
	awk -v f="$(readlink -f "$2")" '$6 == f && $3 == "00000000" { split($1, a, "-");
		print strtonum("0x" a[1]); exit }' "/proc/$1/maps"
}
# Whether every site of FILE in pid holds the file's bytes.
sites_as_file() {
	local pid=$1 file=$2 bias site bad=0
	bias=$(bias_of "$pid" "$file")
	[ -n "$bias" ] || return 1
	for site in $(all_sites "$file"); do
		[ "$(code_bytes "$pid" $((bias + site)) 1)" = "$(file_bytes "$file" "$site" 1)" ] ||
			bad=1
	done
	return $bad
}
# Whether some site of FILE in pid differs from the file (is patched).
some_site_patched() {
	! sites_as_file "$@"
}

"$STOCK" -n create s1 --output="$DP_TMP/t1" >/dev/null || tap_bail "create s1"
"$STOCK" -n add-context -u -t vpid >/dev/null || tap_bail "add-context vpid"

# ---- a running process, by pid and by path -------------------------------
# Started before any lttng-dynprobed: its agent tries to connect again and
# again, the gaps doubling.  The first event comes once the gap is 6.4 s,
# longer than the daemon's wait for an agent used to be (3 s): the daemon
# must wait for the next attempt.
start_args a "$ARGS" LD_PRELOAD="$LTTNG_DYNPROBE_AGENT" LTTNG_DYNPROBE_DEBUG=1
cmd a s || tap_bail "sdt-args does not answer"
for i in $(seq 600); do grep -q "next attempt in 6400 ms" "$DP_TMP/a.err" && break; sleep 0.1; done
grep -q "next attempt in 6400 ms" "$DP_TMP/a.err" || tap_bail "the agent of sdt-args never waited 6.4 s"
sites_as_file "$a_pid" "$ARGS"
tap_ok $? "before any event, every site of sdt-args holds the file's bytes"

run_lt enable-event -u --path "$ARGS" --pid "$a_pid" --sdt 'sdt_args:*'
tap_ok "$status" "--sdt 'sdt_args:*' --pid: accepted (its agent, 6.4 s from its next attempt, waited for)" || tap_diag "$err"
n=$(grep -c '^Dynamic UST event sdt_args:[a-z]* created in channel channel0' <<<"$out")
[ "$n" -eq 8 ]
tap_ok $? "the pattern names 8 probes, one event each, named PROVIDER:NAME ($n)"
grep -q '^  process '"$a_pid"': 3 sites by jump' <<<"$out"
tap_ok $? "sdt_args:step, inlined into three callers: 3 sites, one event"
run_cli enable-event -u --userspace-probe="sdt:$ARGS:sdt_prov:work" --pid "$a_pid"
tap_ok "$status" "--userspace-probe=sdt:PATH:sdt_prov:work (stock syntax), default name" ||
	tap_diag "$err"
grep -q '^Dynamic UST event sdt_prov:work created' <<<"$out"
tap_ok $? "... the event is sdt_prov:work"
run_cli enable-event -u --path "$LIB" --sdt sdt_lib:call
tap_ok "$status" "a shared library's probe, path-wide" || tap_diag "$err"
run_cli enable-event -u --path "$ARGS" --sdt sdt_prov:done
tap_ok "$status" "sdt_prov:done, path-wide" || tap_diag "$err"
some_site_patched "$a_pid" "$ARGS"
tap_ok $? "enabled: the sites are patched"

[ "$(sems a "$a_pid")" = "1 1 0 0" ]
tap_ok $? "both semaphores raised in the process, no guarded run yet ($(sems a "$a_pid"))"

"$STOCK" -n start s1 >/dev/null
cmd a r && cmd a r
"$STOCK" -n stop s1 >/dev/null
read -r w d rw rd <<<"$(sems a "$a_pid")"
[ "$rw" = 2 ] && [ "$rd" = 2 ]
tap_ok $? "the program's *_ENABLED() guards let 2 rounds each through (work $rw, done $rd)"
passed a "$a_pid" >"$DP_TMP/passed"
recorded "$DP_TMP/t1" "$a_pid" >"$DP_TMP/recorded"
[ "$(grep -c . "$DP_TMP/passed")" -ge 26 ] && diff "$DP_TMP/passed" "$DP_TMP/recorded" >"$DP_TMP/diff"
tap_ok $? "every event recorded with the values the program passed ($(grep -c . "$DP_TMP/passed") events: ints of each size, negatives, a pointer, a double, a %rip global, constants, a library's, inlined copies, guarded)" ||
	tap_diag "$(head -20 "$DP_TMP/diff")"
[ -z "$(errors "$DP_TMP/t1")" ]
tap_ok $? "no argument read failed (every _argN_error is 0)"

# ---- a process started later (path-wide events) and a forked child --------
start_args b "$ARGS" LD_PRELOAD="$LTTNG_DYNPROBE_AGENT"
cmd b s
wait_sites s1 "$b_pid" sdt_prov:done
[ "$(sems b "$b_pid")" = "0 1 0 0" ]
tap_ok $? "a process started later: the path-wide sdt_prov:done's semaphore raised, the pid-only work's not ($(sems b "$b_pid"))"

# Each wait below is for the thing itself; its bound (60 s) only keeps a
# broken run from hanging.  The child prints its pid itself, often after
# its parent's "ok"; its agent's HELLO is adopted when the list shows it.
cmd a f
child=
for i in $(seq 600); do
	child=$(grep '^child ' "$DP_TMP/a.out" | tail -1 | cut -d' ' -f2)
	[ -n "$child" ] && break
	sleep 0.1
done
[ -n "$child" ] || tap_bail "the forked child of sdt-args never said its pid"
for i in $(seq 600); do
	"$LTTNG" -n list s1 2>/dev/null | grep -q "process $child: [1-9]" && break
	sleep 0.1
done
kill -USR1 "$child"
for i in $(seq 600); do grep -q "^sem $child " "$DP_TMP/a.out" && break; sleep 0.1; done
[ "$(grep "^sem $child " "$DP_TMP/a.out" | tail -1 | cut -d' ' -f3-4)" = "1 1" ]
tap_ok $? "a forked child inherits its parent's raised semaphores"

# ---- disable: lowered, bytes back ----------------------------------------
run_cli disable-event -u sdt_prov:work -s s1
tap_ok "$status" "disable-event sdt_prov:work"
[ "$(sems a "$a_pid" | cut -d' ' -f1-2)" = "0 1" ]
tap_ok $? "its semaphore back to 0, the other's still raised"
cmd a r
read -r w d rw rd <<<"$(sems a "$a_pid")"
[ "$rw" = 2 ] && [ "$rd" = 3 ]
tap_ok $? "the guard of the disabled probe lets nothing through any more (work $rw, done $rd)"

"$LTTNG" -n destroy s1 >/dev/null
tap_ok $? "destroy s1"
[ "$(sems a "$a_pid" | cut -d' ' -f1-2)" = "0 0" ] && [ "$(sems b "$b_pid" | cut -d' ' -f1-2)" = "0 0" ]
tap_ok $? "every semaphore back to 0 in both processes"
kill -USR2 "$child"
for i in $(seq 600); do [ "$(grep -c "^sem $child " "$DP_TMP/a.out")" -ge 2 ] && break; sleep 0.1; done
[ "$(grep "^sem $child " "$DP_TMP/a.out" | tail -1 | cut -d' ' -f3-4)" = "0 0" ]
tap_ok $? "the forked child's, too (adopted at its agent's HELLO, lowered at destroy)" ||
	tap_diag "$(grep -E "^(sem|child) " "$DP_TMP/a.out")"
sites_as_file "$a_pid" "$ARGS" && sites_as_file "$a_pid" "$LIB" && sites_as_file "$b_pid" "$ARGS"
tap_ok $? "every site holds the file's bytes again (executable and library, both processes)" ||
	tap_diag "$(sites_as_file "$a_pid" "$ARGS" && echo a-ok) $(sites_as_file "$a_pid" "$LIB" && echo lib-ok) $(sites_as_file "$b_pid" "$ARGS" && echo b-ok)"
cmd a q; cmd b q
wait "$a_pid" "$b_pid" 2>/dev/null

# ---- lttng trace --sdt, a non-PIE --------------------------------------
printf 'r\nr\nq\n' | "$LTTNG" trace --no-view -o "$DP_TMP/t2" --sdt 'sdt_args:i*' \
	--sdt sdt_prov:work -t vpid -- "$NOPIE" >"$DP_TMP/c.out" 2>"$DP_TMP/c.err"
tap_ok $? "lttng trace --sdt 'sdt_args:i*' --sdt sdt_prov:work on the non-PIE build" ||
	tap_diag "$(cat "$DP_TMP/c.err")"
c_pid=$(grep -m1 -oE '^[0-9]+ sdt_args' "$DP_TMP/c.out" | cut -d' ' -f1)
cp "$DP_TMP/c.out" "$DP_TMP/c.out2"
grep -E "^$c_pid " "$DP_TMP/c.out" | cut -d' ' -f2- | grep -E '^(sdt_args:ints|sdt_prov:work) ' |
	sort >"$DP_TMP/passed2"
recorded "$DP_TMP/t2" "$c_pid" 'sdt_args:ints|sdt_prov:work' >"$DP_TMP/recorded2"
[ "$(grep -c '^sdt_prov:work' "$DP_TMP/passed2")" -eq 2 ] &&
	diff "$DP_TMP/passed2" "$DP_TMP/recorded2" >"$DP_TMP/diff2"
tap_ok $? "its events hold what the program passed; the guard let both rounds through" ||
	tap_diag "$(cat "$DP_TMP/passed2")" "---" "$(cat "$DP_TMP/recorded2")"

# ---- --mi xml, save and load -----------------------------------------------
"$STOCK" -n create s4 --output="$DP_TMP/t4" >/dev/null
"$STOCK" -n add-context -u -s s4 -t vpid >/dev/null
start_args d "$ARGS" LD_PRELOAD="$LTTNG_DYNPROBE_AGENT"
cmd d s
doc=$("$LTTNG" -n --mi xml enable-event -u -s s4 --path "$ARGS" --pid "$d_pid" \
	--sdt sdt_args:ints 2>"$DP_TMP/err")
tap_ok $? "enable-event --mi xml --sdt exits 0" || tap_diag "$(cat "$DP_TMP/err")"
grep -q '<dp:kind>sdt</dp:kind>' <<<"$doc" && grep -q '<dp:location>sdt_args:ints</dp:location>' <<<"$doc" &&
	xmllint --noout - <<<"$doc"
tap_ok $? "... a well-formed document with kind sdt and the probe's name" || tap_diag "$doc"
run_cli save s4 -o "$DP_TMP/saved"
tap_ok "$status" "save s4" || tap_diag "$err"
grep -q 'kind=sdt' "$DP_TMP/saved/s4.lttng"* 2>/dev/null ||
	grep -rq 'kind=sdt' "$DP_TMP/saved"
tap_ok $? "the saved session holds the SDT event (kind=sdt)"
"$LTTNG" -n destroy s4 >/dev/null
sites_as_file "$d_pid" "$ARGS"
tap_ok $? "destroyed: the process holds its file's bytes"
run_cli load -i "$DP_TMP/saved/s4.lttng" s4
grep -q "Dynamic UST event sdt_args:ints loaded in session s4" <<<"$out"
tap_ok $? "load brings the SDT event back" || tap_diag "$out" "$err"
wait_sites s4 "$d_pid" sdt_args:ints
"$STOCK" -n start s4 >/dev/null
cmd d r
"$STOCK" -n stop s4 >/dev/null
passed d "$d_pid" 'sdt_args:ints' >"$DP_TMP/passed4"
recorded "$DP_TMP/t4" "$d_pid" 'sdt_args:ints' >"$DP_TMP/recorded4"
[ -s "$DP_TMP/passed4" ] && diff "$DP_TMP/passed4" "$DP_TMP/recorded4" >/dev/null
tap_ok $? "after load, sdt_args:ints records what the program passed" ||
	tap_diag "$(cat "$DP_TMP/passed4")" "---" "$(cat "$DP_TMP/recorded4")"
"$LTTNG" -n destroy s4 >/dev/null
sites_as_file "$d_pid" "$ARGS"
tap_ok $? "destroyed again: the file's bytes"
cmd d q

# ---- bad input: one clear line, nothing left behind ----------------------
"$STOCK" -n create s --output="$DP_TMP/t3" >/dev/null
export DP_DAEMON_RUNS=1
check_refused "an unknown name: refused, close names listed" "no SDT probe matches 'sdt_args:intz'.*sdt_args:ints" \
	enable-event -u --path "$ARGS" --sdt sdt_args:intz
check_refused "an unknown provider: refused" "no SDT probe matches 'nosuch:ints'" \
	enable-event -u --path "$ARGS" --sdt nosuch:ints
check_refused "an object without notes: refused" "has no SDT probe" \
	enable-event -u --path "$TARGET" --sdt a:b
check_refused "an event name for a pattern of several probes: refused" "names 8 SDT probes" \
	enable-event -u --path "$ARGS" --sdt 'sdt_args:*' myname
check_refused "a bad sdt: form: refused" "expected sdt:PATH:PROVIDER:NAME" \
	enable-event -u --userspace-probe="sdt:$ARGS:ints"
# A copy whose step sites name a register that does not exist.
cp "$ARGS" "$DP_TMP/bad-spec"
LC_ALL=C perl -pi -e 's/-4\@%edi\0/-4\@%edj\0/g' "$DP_TMP/bad-spec"
check_refused "a malformed argument spec: refused with the spec shown" "argument spec '-4@%edj'.*unknown register" \
	enable-event -u --path "$DP_TMP/bad-spec" --sdt sdt_args:step

# Copies whose sdt_prov:done semaphore lies in a read-only page (its own
# site, in .text) or nowhere (a gigabyte past its load address): refused in the process.
sem_copy() {	# out where: rewrites the semaphore of sdt_prov:done
	python3 - "$ARGS" "$1" "$2" <<'PY'
import struct, sys
src, dst, where = sys.argv[1], sys.argv[2], sys.argv[3]
b = bytearray(open(src, 'rb').read())
i = 0
while True:
    i = b.find(b'stapsdt\0', i + 1)
    if i < 0:
        break
    desc = i + 8
    pc, base, sem = struct.unpack_from('<QQQ', b, desc)
    strs = b[desc + 24:desc + 24 + 64].split(b'\0')
    if strs[0] == b'sdt_prov' and strs[1] == b'done':
        struct.pack_into('<Q', b, desc + 16, pc if where == "text" else 0x3fff0000)
open(dst, 'wb').write(b)
PY
	chmod +x "$1"
}
for where in text nowhere; do
	sem_copy "$DP_TMP/sem-$where" $where
	start_args "c$where" "$DP_TMP/sem-$where" LD_PRELOAD="$LTTNG_DYNPROBE_AGENT"
	cmd "c$where" s
done
pid_text=$ctext_pid pid_nowhere=$cnowhere_pid
check_refused "a semaphore in a read-only page: refused" "semaphore of sdt_prov:done .* read-only page" \
	enable-event -u --path "$DP_TMP/sem-text" --pid "$pid_text" --sdt sdt_prov:done
check_refused "a semaphore not mapped: refused" "semaphore of sdt_prov:done .* not mapped" \
	enable-event -u --path "$DP_TMP/sem-nowhere" --pid "$pid_nowhere" --sdt sdt_prov:done
[ "$(grep -c '^Error: ' <<<"$err")" -eq 1 ]
tap_ok $? "... said once" || tap_diag "$err"
sites_as_file "$pid_text" "$DP_TMP/sem-text" && sites_as_file "$pid_nowhere" "$DP_TMP/sem-nowhere"
tap_ok $? "... and those processes hold their files' bytes"
cmd ctext q; cmd cnowhere q
"$STOCK" -n destroy s >/dev/null
tap_done
