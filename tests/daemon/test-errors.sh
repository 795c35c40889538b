#!/bin/bash
# Every refusal of lttng-dynprobed, each one line that says what was wrong
# and what would be right, and none leaving anything behind: no event, no
# patched byte.  Also: a target killed in the middle of an install (the
# daemon stays up and consistent), a request type the daemon does not know,
# and a user's daemon (private directory and sockets, another user's
# process refused).
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie

start_sessiond || tap_bail "no session daemon"
# The pause before writing is long enough for the test to see it begin
# and kill a target inside it, however loaded the machine.
start_dynprobed --test-pause-ms 5000 || tap_bail "lttng-dynprobed does not start"
dp_lttng create s --output="$DP_TMP/trace" >/dev/null
start_target t env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm" 2 5 2000
pid=$TARGET_PID
start_target z "$builddir/zlib-user"
zpid=$TARGET_PID

# refused NAME STATUS REGEX DPCTL-ARGS...: the request fails with STATUS and
# a message matching REGEX, and leaves no event and no patch.
refused() {
	local name=$1 status=$2 re=$3 st msg
	shift 3
	dpctl "$@"
	st=$?
	msg=$(head -n1 "$DP_TMP/out")
	[ "$st" -eq 1 ] && grep -qE "^status=$status message=.*$re" "$DP_TMP/out"
	tap_ok $? "$name: $msg"
	dpctl list
	! out_has '^dyn' && same_as_file "$pid" "$PIE" dp_work && same_as_file "$pid" "$PIE" dp_never
	tap_ok $? "$name: nothing left behind"
}

refused "no such pid" -3 "no process 4194000: give the pid of a running process" \
	enable s channel0 e probe dp_work "$PIE" -p 4194000
refused "not mapped" -2 "$PIE is not mapped in process $zpid: give the path of an object it has loaded" \
	enable s channel0 e probe dp_work "$PIE" -p "$zpid"
refused "symbol not found" -2 "no function 'dp_wrok' in $PIE \\(did you mean 'dp_work'" \
	enable s channel0 e probe dp_wrok "$PIE" -p "$pid"
refused "mid-instruction offset" -22 "dp_work\\+0x2 is inside an instruction of dp_work: the nearest instructions start at dp_work\\+0x1 and dp_work\\+0x4" \
	enable s channel0 e probe dp_work+2 "$PIE" -p "$pid"
refused "data symbol" -22 "symbol 'stop' of $PIE is not executable" \
	enable s channel0 e probe stop "$PIE" -p "$pid"
refused "data address" -2 "0x$(printf %x "$(sym_vaddr "$PIE" stop)") is not inside any function of $PIE: it is not executable" \
	enable s channel0 e probe "$(sym_vaddr "$PIE" stop)" "$PIE" -p "$pid"
refused "site refused" -95 "is refused: .*(int3|ud)" \
	enable s channel0 e probe dp_never "$PIE" -p "$pid"
refused "offset past the end" -34 "dp_work\\+0x1000 is past the end of dp_work \\(58 bytes" \
	enable s channel0 e probe dp_work+0x1000 "$PIE" -p "$pid"
refused "--function with an offset" -22 "--function dp_work\\+0x4 is not the start of a function \\(it is inside dp_work\\)" \
	enable s channel0 e function dp_work+4 "$PIE" -p "$pid"
refused "bad number" -22 "bad offset in 'dp_work\\+0xzz': '0xzz' is not a number: 'z' is not a hex digit" \
	enable s channel0 e probe dp_work+0xzz "$PIE" -p "$pid"
refused "relative path" -22 "the path 'target-pie' is not absolute" \
	enable s channel0 e probe dp_work target-pie -p "$pid"
refused "missing file" -2 "cannot open /nonexistent/x" \
	enable s channel0 e probe dp_work /nonexistent/x -p "$pid"
refused "bad event name" -22 "bad event name 'a:b:c': one ':' at most" \
	enable s channel0 a:b:c probe dp_work "$PIE" -p "$pid"
refused "bad context" -22 "context 'reg:foo'" \
	enable s channel0 e probe dp_work "$PIE" -p "$pid" -c reg:foo
refused "context symbol" -2 "context 'int:x:nosuch': symbol 'nosuch' not found" \
	enable s channel0 e probe dp_work "$PIE" -p "$pid" -c int:x:nosuch
refused "a thread's id" -22 "is a thread of process $pid: give the process id $pid" \
	enable s channel0 e probe dp_work "$PIE" -p "$(ls /proc/"$pid"/task | sort -n | tail -n1)"

# A site only an int3 can take, in a process whose threads block SIGTRAP:
# the kernel would kill it at the first hit.
start_target tb env LD_PRELOAD="$AGENT" DP_TARGET_BLOCK_SIGTRAP=1 "$PIE" "$DP_SHM/shm-tb" 2 5 2000
tbpid=$TARGET_PID
dpctl enable s channel0 e probe dp_work+0x38 "$PIE" -p "$tbpid"
st=$?
[ $st -eq 1 ] && out_has "^status=-95 message=the site 0x[0-9a-f]+ of $PIE: only an int3 fits, and thread [0-9]+ \\(target-pie\\) of process $tbpid blocks SIGTRAP: an int3 it hit would kill the process"
tap_ok $? "an int3 site in a process whose threads block SIGTRAP: $(head -n1 "$DP_TMP/out")"
dpctl list
! out_has '^dyn' && same_as_file "$tbpid" "$PIE" dp_work && kill -0 "$tbpid"
tap_ok $? "nothing left behind, the process runs on"
dpctl enable s channel0 e probe dp_work+0x38 "$PIE" -p "$pid" && out_has "^proc pid=$pid status=0 jump=0 int3=1"
tap_ok $? "the same site in a process that does not block it: by int3 ($(grep '^proc' "$DP_TMP/out"))"
dpctl disable s channel0 e
dpctl destroyed s
# A function's return only an int3 can take: left out, the entry installed.
dpctl enable s channel0 f function dp_work "$PIE" -p "$tbpid" &&
	out_has "^proc pid=$tbpid status=0 jump=[1-9][0-9]* int3=0 refused=1" &&
	out_has "method=refused reason=trap-unsafe"
tap_ok $? "--function there: the entry and the returns a jump takes, the int3 one refused ($(grep '^proc' "$DP_TMP/out"))"
dpctl destroyed s
kill -TERM "$tbpid"
wait "$tbpid"
tap_ok $? "that process computed right throughout"

# In glibc and lttng-ust no int3 is ever placed.
LIBC=$(realpath /lib/x86_64-linux-gnu/libc.so.6)
dpctl sites "$LIBC" memchr && ! out_has "method=int3" && out_has "method=refused reason=trap-unsafe"
tap_ok $? "SITES of libc's memchr: int3-only sites are refused as trap-unsafe ($(grep -c 'reason=trap-unsafe' "$DP_TMP/out") of $(grep -c '^insn' "$DP_TMP/out"))"

dpctl disable s channel0 nosuch
[ $? -eq 1 ] && out_has "^status=-2 message=no dynamic event 'nosuch' in channel channel0 of session s"
tap_ok $? "DISABLE of an unknown event: $(head -n1 "$DP_TMP/out")"
dpctl add-context s channel0 "" reg:rax
[ $? -eq 1 ] && out_has "^status=-2 message=no dynamic event in channel channel0 of session s"
tap_ok $? "ADD_CONTEXT with no event to add to: $(head -n1 "$DP_TMP/out")"
dpctl sites "$PIE" dp_work && out_has "^function name=dp_work start=0x[0-9a-f]+ size=58$" &&
	[ "$(grep -c '^insn ' "$DP_TMP/out")" -eq 21 ] &&
	out_has "^insn off=0 len=1 bytes=53 mnemonic=push method=jump reason=-$" &&
	out_has "^insn off=57 len=1 bytes=c3 mnemonic=ret method=int3 reason=[a-z-]+$"
tap_ok $? "SITES lists dp_work's 21 instructions and how each would be probed"
dpctl sites "$PIE" dp_never && out_has "^insn off=0 len=2 bytes=0f0b mnemonic=ud2 method=refused reason=trap$"
tap_ok $? "SITES shows dp_never's ud2 refused: $(grep '^insn' "$DP_TMP/out")"
dpctl raw-type 0x0042 && out_has "reply=UNSUPPORTED unsupported=0x0042 seq=77"
tap_ok $? "a request of an unknown type gets UNSUPPORTED, and the daemon goes on"

# ---- the target exits in the middle of an install ----
# Killed while the daemon pauses before writing (never before: the test
# waits for the pause, 60 s at most).  Its parent collects it at once, or
# (the second time) only later: the daemon then meets a zombie.  Both exited
# during the operation, and the daemon says so alike.
# kill_during_install NAME KEEP: KEEP=1 has the victim's parent stopped,
# so that it stays a zombie until the reply.
kill_during_install() {
	local name=$1 keep=$2 victim parent client st i paused=
	if [ "$keep" = 1 ]; then
		# A parent that stops itself once it started the victim.
		start_target "$name" bash -c 'env LD_PRELOAD="$1" "$2" "$3" 2 5 2000 &
			echo $! >"$4"; kill -STOP $$; wait' - "$AGENT" "$PIE" "$DP_SHM/shm-$name" \
			"$DP_TMP/$name.pid" || tap_bail "$name does not start"
		parent=$TARGET_PID
		victim=$(cat "$DP_TMP/$name.pid")
	else
		start_target "$name" env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm-$name" 2 5 2000 ||
			tap_bail "$name does not start"
		victim=$TARGET_PID
	fi
	"$DPCTL" enable s channel0 v function dp_work "$PIE" -p "$victim" >"$DP_TMP/$name-enable" 2>&1 &
	client=$!
	for i in $(seq 1200); do
		grep -q "test pause: .* process $victim\$" "$DP_TMP/dynprobed.log" && paused=1 && break
		kill -0 "$client" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$victim"
	wait "$client"
	st=$?
	[ -n "$paused" ] && [ $st -eq 1 ] &&
		grep -qE "^status=-3 message=process $victim exited during the operation" \
			"$DP_TMP/$name-enable"
	tap_ok $? "a target killed during an install${parent:+, kept a zombie by its parent}: $(head -n1 "$DP_TMP/$name-enable")$([ -n "$paused" ] || echo " (the daemon never paused before writing)")"
	if [ -n "$parent" ]; then
		kill -CONT "$parent"
		wait "$parent"
	fi
}
kill_during_install victim 0
kill_during_install zombie 1
dpctl ping
tap_ok $? "the daemon is still up"
dpctl list
! out_has '^dyn'
tap_ok $? "and consistent: no event was kept"
dpctl enable s channel0 after function dp_work "$PIE" -p "$pid" && ! same_as_file "$pid" "$PIE" dp_work
tap_ok $? "and still installs probes in other processes"
dpctl disable s channel0 after

# ---- a user's daemon ----
if dp_test_user; then
	uhome=$DP_TMP/uhome
	mkdir -p "$uhome" && chown "$DP_TEST_USER" "$uhome"
	asuser() {
		setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
			env HOME="$uhome" LTTNG_HOME="$uhome" "$@"
	}
	asuser "$DPD" --daemonize --agent "$AGENT" --poll-ms 0 >"$DP_TMP/user-start" 2>&1
	tap_ok $? "a user's daemon starts: $(cat "$DP_TMP/user-start")"
	upid=$(cat "$uhome/.lttng/lttng-dynprobed.pid" 2>/dev/null)
	DP_TARGETS="$DP_TARGETS $upid"
	[ "$(stat -c %a "$uhome/.lttng")" = 700 ] &&
		[ "$(stat -c %a "$uhome/.lttng/dynprobe-client.sock")" = 600 ] &&
		[ "$(stat -c %a "$uhome/.lttng/dynprobe-app.sock")" = 600 ]
	tap_ok $? "in its own 0700 directory, with 0600 sockets"
	asuser "$DPCTL" enable s channel0 e probe dp_work "$PIE" -p "$pid" >"$DP_TMP/out" 2>&1
	[ $? -eq 1 ] && out_has "^status=-1 message=process $pid belongs to root \\(uid 0\\), not to you \\($DP_TEST_USER \\(uid [0-9]+\\)\\): only its owner or root may probe it"
	tap_ok $? "a process of another user is refused: $(head -n1 "$DP_TMP/out")"
	same_as_file "$pid" "$PIE" dp_work
	tap_ok $? "and left untouched"
	# Gone before the cleanup's SIGKILL: a sanitized daemon checks for
	# leaks as it exits, and a SIGKILL then cuts the check short.
	kill -TERM "$upid"
	for i in $(seq 200); do
		kill -0 "$upid" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$upid" 2>/dev/null
	tap_ok $? "the user's daemon exits on SIGTERM"
else
	tap_diag "no test user: the user daemon's checks were not run"
fi
tap_done
