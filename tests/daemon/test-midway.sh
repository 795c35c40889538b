#!/bin/bash
# A target that forks or executes a new program in the middle of an
# install and of a removal (the daemon stopped at the step with
# --test-fault STEP:stop while the target acts: target.c forks on SIGUSR1,
# executes itself on SIGUSR2), and an agent whose code memory runs out in
# the middle of an install (LTTNG_DYNPROBE_TEST_CODE_FAIL), or whose
# process may map no more (RLIMIT_AS).  After each:
# the target (and its child) runs on and computes right, dp_work's bytes
# are the file's once the events are out, and a later install works.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie
NOPIE=$builddir/target-nopie
LEN=64

start_sessiond || tap_bail "no session daemon"
dp_lttng create one --output="$DP_TMP/trace-one" >/dev/null &&
	dp_lttng enable-event -u -s one "dynprobe:one*" >/dev/null &&
	dp_lttng start one >/dev/null || tap_bail "cannot create session one"

calls() {
	"$DPCTL" calls "$1"
}

# runs_on NAME SHM: the calls counted in SHM go up.
runs_on() {
	local c1 c2
	c1=$(calls "$2")
	sleep 0.3
	c2=$(calls "$2")
	[ "$c2" -gt "$c1" ] && echo "$c1 -> $c2 calls"
}

# enable EVENT: dp_work's entry and returns in the case's target.
enable() {
	dpctl enable one channel0 "$1" function dp_work "$prog" -p "$pid"
}


# lines NAME REGEX N: the target's output has N lines matching REGEX (10 s).
lines() {
	local i
	for i in $(seq 200); do
		[ "$(grep -cE -- "$2" "$DP_TMP/$1.out")" -ge "$3" ] && return 0
		sleep 0.05
	done
	return 1
}

# midway NAME PROG SPEC SETUP -- enable|disable: a target (PROG, the agent
# preloaded), the daemon run with --test-fault SPEC:stop, SETUP (an event
# name, or -) enabled, then the request sent in the background; returns
# once the daemon stopped at the step.  resume: the daemon continued, the
# request's status in st and its reply in $DP_TMP/act.
midway() {
	local name=$1 spec=$3 setup=$4 action=$6
	prog=$2
	start_target "$name" env LD_PRELOAD="$AGENT" "$prog" "$DP_SHM/shm-$name" 4 5 1000 ||
		tap_bail "$name: the target does not start"
	pid=$TARGET_PID
	# Else the installs that HELLO brings (pin-only, of the events
	# reaching the process) could be the one the fault stops, not ours.
	start_after_hello "$name" "$pid" --test-fault "$spec:stop"
	if [ "$setup" != - ]; then
		enable "$setup" || tap_bail "$name: cannot set up: $(head -n1 "$DP_TMP/out")"
	fi
	if [ "$action" = enable ]; then
		"$DPCTL" enable one channel0 onef function dp_work "$prog" -p "$pid" >"$DP_TMP/act" 2>&1 &
	else
		"$DPCTL" disable one channel0 onef >"$DP_TMP/act" 2>&1 &
	fi
	act=$!
	stopped_at "${spec%%:*}"
	tap_ok $? "$name: the daemon stopped itself at step '$spec' ($action)"
}

# hello_done MARK PID: after the log's first MARK lines, PID's agent said
# HELLO and its pending work is done (60 s: its retries double up to 30 s).
hello_done() {
	local i
	for i in $(seq 600); do
		tail -n +"$(($1 + 1))" "$DP_TMP/dynprobed.log" |
			grep -q "process $2: its pending installs done, GO sent" && return 0
		sleep 0.1
	done
	return 1
}

# start_after_hello NAME PID [DAEMON_ARGS...]: a new daemon, once PID's
# agent (its program started first) has said HELLO and its GO is sent.
start_after_hello() {
	local name=$1 pid=$2 mark
	shift 2
	mark=$(wc -l <"$DP_TMP/dynprobed.log" 2>/dev/null || echo 0)
	start_dynprobed "$@" || tap_bail "$name: lttng-dynprobed does not start"
	hello_done "$mark" "$pid" || tap_bail "$name: the agent of $pid did not say HELLO"
}

# daemon_about PID: the daemon's log lines about PID, as diagnostics.
daemon_about() {
	grep -E "(process|pid) $1[ :]|in $1:|to $1:" "$DP_TMP/dynprobed.log" | head -n 40 |
		cut -c1-220 | sed 's/^/# /'
}

resume() {
	kill -CONT "$DPD_PID"
	wait "$act"
	st=$?
}

# later NAME: a later install and removal work; SIGTERM: the daemon exits,
# dp_work is the file's, and the target computed right all along.
later() {
	local name=$1
	enable "later" && out_has "^proc pid=$pid status=0 jump=2 int3=1" &&
		! same_as_file "$pid" "$prog" dp_work "$LEN" &&
		dpctl disable one channel0 later && same_as_file "$pid" "$prog" dp_work "$LEN"
	tap_ok $? "$name: a later install works, and its removal restores dp_work"
	stop_dynprobed && same_as_file "$pid" "$prog" dp_work "$LEN"
	tap_ok $? "$name: SIGTERM: the daemon exits, dp_work is the file's"
	kill -TERM "$pid"
	wait "$pid"
	tap_ok $? "$name: every result the target computed was right: $(tail -n1 "$DP_TMP/$name.out")"
}

# child_done NAME: the child computed right (SIGTERM: it says so, exits 0).
child_done() {
	local i
	kill -TERM "$child"
	for i in $(seq 600); do
		grep -q '^child calls=' "$DP_TMP/$1.out" && break
		sleep 0.05
	done
	grep -q '^child calls=[1-9][0-9]* errors=0$' "$DP_TMP/$1.out"
}

# ---- a fork once the install's trampolines are written and noted ----
# The child inherits the trampolines and the agent's notes, not the jumps:
# its agent's report is checked against its code, and the event (by pid:
# its descendants too) is installed there afresh.
midway fork-staged "$PIE" staged - -- enable
kill -USR1 "$pid"
lines fork-staged '^child [0-9]+$' 1
child=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$DP_TMP/fork-staged.out")
resume
[ "$st" -eq 0 ] && grep -q "^proc pid=$pid status=0 jump=2 int3=1" "$DP_TMP/act" &&
	! same_as_file "$pid" "$prog" dp_work "$LEN"
tap_ok $? "fork-staged: the install in the parent went on: $(grep -m1 '^proc' "$DP_TMP/act")"
logged "process $child: the patch at 0x[0-9a-f]+ its agent reports is not in its code: forgotten" &&
	logged "process $child started with the agent: [^ ]*onef[^ ]*: installed"
tap_ok $? "fork-staged: the child's report of the noted patches was checked against its code, then the event installed in it"
r=$(runs_on fork-staged "$DP_SHM/shm-fork-staged.child")
tap_ok $? "fork-staged: the child runs on ($r)"
dpctl disable one channel0 onef && same_as_file "$pid" "$prog" dp_work "$LEN" &&
	same_as_file "$child" "$prog" dp_work "$LEN"
tap_ok $? "fork-staged: DISABLE restores dp_work in the parent and in the child"
child_done fork-staged
tap_ok $? "fork-staged: the child computed right: $(grep '^child calls' "$DP_TMP/fork-staged.out")"
later fork-staged

# ---- a fork once a removal restored the code, before the agent is told ----
# The child's agent still reports the patches: not in its code, forgotten.
midway fork-restored "$PIE" restored onef -- disable
kill -USR1 "$pid"
lines fork-restored '^child [0-9]+$' 1
child=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$DP_TMP/fork-restored.out")
resume
[ "$st" -eq 0 ] && same_as_file "$pid" "$prog" dp_work "$LEN"
tap_ok $? "fork-restored: the removal went on: $(head -n1 "$DP_TMP/act")"
logged "process $child: the patch at 0x[0-9a-f]+ its agent reports is not in its code: forgotten" &&
	same_as_file "$child" "$prog" dp_work "$LEN"
tap_ok $? "fork-restored: the child's report was checked against its code and forgotten; its dp_work is the file's"
r=$(runs_on fork-restored "$DP_SHM/shm-fork-restored.child")
tap_ok $? "fork-restored: the child runs on ($r)"
child_done fork-restored
tap_ok $? "fork-restored: the child computed right: $(grep '^child calls' "$DP_TMP/fork-restored.out")"
later fork-restored

# ---- an exec once the install's trampolines are written ----
# Not a PIE: the new program has dp_work at the same address, with the
# same bytes, but not the trampolines; a jump written there would crash it.
midway exec-staged "$NOPIE" staged - -- enable
kill -USR2 "$pid"
lines exec-staged '^ready' 2
tap_ok $? "exec-staged: the target executed itself again"
resume
msg="process $pid executed another program during the operation: the patches went with the old one, nothing was written"
[ "$st" -ne 0 ] && grep -qF "$msg" "$DP_TMP/act"
ok=$?
# Twice (sanitized daemon, loaded machine) this install succeeded in the
# new program: what the daemon did in that process, then.
[ "$ok" -eq 0 ] || daemon_about "$pid"
(exit "$ok")
tap_ok $? "exec-staged: the install fails: $(grep -m1 '^proc' "$DP_TMP/act")"
r=$(runs_on exec-staged "$DP_SHM/shm-exec-staged") && same_as_file "$pid" "$prog" dp_work "$LEN"
tap_ok $? "exec-staged: the new program runs on ($r), its dp_work is the file's"
later exec-staged

# ---- an exec before a removal writes ----
# A PIE: the new program is elsewhere; the removal has nothing to restore.
midway exec-remove "$PIE" remove onef -- disable
kill -USR2 "$pid"
lines exec-remove '^ready' 2
tap_ok $? "exec-remove: the target executed itself again"
resume
[ "$st" -eq 0 ] && logged "$msg" && ! grep -q "cannot restore" "$DP_TMP/dynprobed.log"
tap_ok $? "exec-remove: the removal succeeds, nothing is written: $(head -n1 "$DP_TMP/act")"
r=$(runs_on exec-remove "$DP_SHM/shm-exec-remove") && same_as_file "$pid" "$prog" dp_work "$LEN"
tap_ok $? "exec-remove: the new program runs on ($r), its dp_work is the file's"
later exec-remove

# ---- the agent's code memory runs out in the middle of an install ----
# dp_work needs three trampolines (its entry, two returns), carved from one
# block of code memory: its ALLOC_CODE fails as a failed mmap would, after
# the probes are defined.  (test-scale.sh runs out at the 50th block of a
# whole program's install.)
prog=$PIE
start_target pool env LD_PRELOAD="$AGENT" LTTNG_DYNPROBE_TEST_CODE_FAIL=1 "$prog" \
	"$DP_SHM/shm-pool" 4 5 1000 || tap_bail "pool: the target does not start"
pid=$TARGET_PID
# The one failure is the first ALLOC_CODE's: the agent says HELLO before
# the ENABLE, else the ENABLE waits for it and the HELLO's own install of
# the enabled event takes the failure.
start_after_hello pool "$pid"
! enable onef &&
	grep -qE "^proc pid=$pid status=-12 .*message=process $pid: no code memory of [0-9]+ bytes within 2 GiB of 0x[0-9a-f]+: Cannot allocate memory" \
		"$DP_TMP/out"
st=$?
[ "$st" -eq 0 ] || daemon_about "$pid"
(exit "$st")
tap_ok $? "pool: the install fails, saying why: $(grep -m1 '^proc' "$DP_TMP/out")"
r=$(runs_on pool "$DP_SHM/shm-pool") && same_as_file "$pid" "$prog" dp_work "$LEN"
tap_ok $? "pool: the target runs on ($r), unpatched: its dp_work is the file's"
dpctl list one
! grep -q "event=onef " "$DP_TMP/out"
tap_ok $? "pool: the failed event is not kept"
later pool

# ---- the same with the kernel refusing the memory: RLIMIT_AS ----
# The target's address space limited to what it maps now and 128 KiB: a
# chunk of code memory (256 KiB) cannot be mapped any more.
start_target rlimit env LD_PRELOAD="$AGENT" "$prog" "$DP_SHM/shm-rlimit" 4 5 1000 ||
	tap_bail "rlimit: the target does not start"
pid=$TARGET_PID
# Connected before its address space is limited.
start_after_hello rlimit "$pid"
vm=$(awk '$1 == "VmSize:" { print $2 }' /proc/"$pid"/status)
prlimit --pid "$pid" --as=$(((vm + 128) * 1024)): || tap_bail "rlimit: prlimit failed"
! enable onef &&
	grep -qE "^proc pid=$pid status=-12 .*message=process $pid: no code memory of [0-9]+ bytes within 2 GiB of 0x[0-9a-f]+: Cannot allocate memory" \
		"$DP_TMP/out"
tap_ok $? "rlimit: the install fails, saying why: $(grep -m1 '^proc' "$DP_TMP/out")"
r=$(runs_on rlimit "$DP_SHM/shm-rlimit") && same_as_file "$pid" "$prog" dp_work "$LEN"
tap_ok $? "rlimit: the target runs on ($r), unpatched: its dp_work is the file's"
prlimit --pid "$pid" --as=unlimited: || tap_bail "rlimit: prlimit failed"
later rlimit
tap_done
