#!/bin/bash
# lttng-dynprobed killed (SIGKILL) at each step of an install, of a removal,
# of a shared patch's rebuild and of a combine (--test-fault STEP[:N]: the
# daemon kills itself the Nth time it reaches STEP).  After each: the target
# runs on and computes right, a new daemon learns from the reconnecting agent
# what may be in the code, and every patch is either forgotten (its site
# holds the file's bytes) or adopted (removed by disabling the events): after
# that, dp_work's bytes are the file's.  Each case has a target of its own.
# Then the daemon stopped at a step (STEP:stop) while the target is killed,
# stopped (SIGSTOP) or sent SIGTERM; the trace output's disk full; the
# session daemon killed.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie
LEN=64

start_sessiond || tap_bail "no session daemon"
for s in one two; do
	dp_lttng create "$s" --output="$DP_TMP/trace-$s" >/dev/null &&
		dp_lttng enable-event -u -s "$s" "dynprobe:$s*" >/dev/null &&
		dp_lttng start "$s" >/dev/null || tap_bail "cannot create session $s"
done

calls() {
	"$DPCTL" calls "$DP_SHM/shm-$1"
}

# enable SESSION EVENT KIND LOCATION: in the case's target.
enable() {
	dpctl enable "$1" channel0 "$2" "$3" "$4" "$PIE" -p "$pid"
}

# restart: a new daemon, once the case's agent has connected to it.
restart() {
	local from i
	from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
	start_dynprobed || return 1
	# 30 s: a hang bound (S23-6: a HELLO waited 10.5 s for a worker while
	# the machine stalled).
	for i in $(seq 600); do
		tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "agent of process $pid connected" &&
			return 0
		sleep 0.05
	done
	return 1
}

# fault CASE SPEC SETUP... -- ACTION...: a target with the agent preloaded
# (or injected, CASE ending in "-inj"), a daemon run with --test-fault SPEC;
# the SETUP requests must succeed, the ACTION request is the one the daemon
# dies in.  Then the checks, with the events the case enabled disabled by
# the new daemon (EVENTS: "SESSION:EVENT ...").
fault() {
	local name=$1 spec=$2 c1 c2 step=${2%%:*} out sess ev ok
	shift 2
	local setup=() action=()
	# DP_FAULT_CASES: a shell pattern of the cases to run (all by default).
	# shellcheck disable=SC2053
	[[ $name == ${DP_FAULT_CASES:-*} ]] || return 0
	while [ "$1" != -- ]; do setup+=("$1"); shift; done
	shift
	action=("$@")

	if [ "${name%-inj}" != "$name" ]; then
		start_target "$name" "$PIE" "$DP_SHM/shm-$name" 4 5 1000
	else
		start_target "$name" env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm-$name" 4 5 1000
	fi || tap_bail "$name: the target does not start"
	pid=$TARGET_PID
	start_dynprobed --test-fault "$spec" || tap_bail "$name: lttng-dynprobed does not start"
	ok=0
	for req in "${setup[@]}"; do
		# shellcheck disable=SC2086
		enable $req || { ok=1; break; }
	done
	tap_ok $ok "$name: set up (${#setup[@]} requests$(grep -h '^proc' "$DP_TMP/out" 2>/dev/null | head -n1 | sed 's/^/, last: /'))"
	if [ "${action[0]}" = enable ]; then
		enable "${action[@]:1}"
	else
		dpctl disable "${action[1]}" channel0 "${action[2]}"
	fi
	out=$(head -n1 "$DP_TMP/out")
	died "$step"
	tap_ok $? "$name: the daemon killed itself at step '$spec' (its client saw: $out)"

	c1=$(calls "$name")
	sleep 0.3
	c2=$(calls "$name")
	kill -0 "$pid" && [ "$c2" -gt "$c1" ]
	tap_ok $? "$name: the target runs on ($c1 -> $c2 calls)"

	restart
	tap_ok $? "$name: a new daemon starts and the agent connects to it"
	# Every event the case enabled out: whatever the new daemon adopted
	# goes, and what it forgot was never in the code.
	for sess in one two; do
		dpctl list "$sess"
		for ev in $(sed -nE 's/^dyn .*event=([^ ]+) .*enabled=1 .*/\1/p' "$DP_TMP/out"); do
			dpctl disable "$sess" channel0 "$ev"
		done
	done
	same_as_file "$pid" "$PIE" dp_work "$LEN"
	tap_ok $? "$name: with its events disabled, dp_work's $LEN bytes are the file's"
	enable one again function dp_work && out_has "^proc pid=$pid status=0 jump=2 int3=1" &&
		dpctl disable one channel0 again && same_as_file "$pid" "$PIE" dp_work "$LEN"
	tap_ok $? "$name: dp_work can be probed and restored again"
	stop_dynprobed && same_as_file "$pid" "$PIE" dp_work "$LEN"
	tap_ok $? "$name: SIGTERM: the daemon exits, dp_work is the file's"
	kill -TERM "$pid"
	wait "$pid"
	tap_ok $? "$name: every result the target computed was right: $(tail -n1 "$DP_TMP/$name.out")"
}

# ---- an install ----
fault inst-agent-inj agent -- enable one onef function dp_work
fault inst-staged staged -- enable one onef function dp_work
fault inst-held held -- enable one onef function dp_work
fault inst-written written -- enable one onef function dp_work
fault inst-detached detached -- enable one onef function dp_work
fault inst-written-inj written -- enable one onef function dp_work

# ---- a removal ----
fault rm-held held:2 "one onef function dp_work" -- disable one onef
fault rm-written written:2 "one onef function dp_work" -- disable one onef
fault rm-restored restored "one onef function dp_work" -- disable one onef

# ---- a shared patch rebuilt for the event that stays ----
fault shared-rebuilt rebuilt "one onef function dp_work" "two twof function dp_work" -- \
	disable one onef
fault shared-written written:3 "one onef function dp_work" "two twof function dp_work" -- \
	disable one onef

# ---- a combine: a probe inside the function's entry window, and back ----
fault comb-in combined "one onef function dp_work" -- enable one onep probe dp_work+1
fault comb-in-written written:2 "one onef function dp_work" -- enable one onep probe dp_work+1
fault comb-out combined:2 "one onef function dp_work" "one onep probe dp_work+1" -- \
	disable one onep
fault comb-out-written written:3 "one onef function dp_work" "one onep probe dp_work+1" -- \
	disable one onep
# ---- the target at a step: the daemon stops itself there (STEP:stop) ----

# target_at CASE SPEC SETUP... -- ACTION: a target with the agent preloaded,
# the daemon run with --test-fault SPEC:stop, the ACTION request sent in the
# background; once the daemon stopped at the step, the caller acts on the
# target, then calls resume (the daemon continued, the ACTION's status in
# $st and its reply in $DP_TMP/act).
target_at() {
	local name=$1 spec=$2 req
	shift 2
	local setup=()
	while [ "$1" != -- ]; do setup+=("$1"); shift; done
	shift
	start_target "$name" env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm-$name" 4 5 1000 ||
		tap_bail "$name: the target does not start"
	pid=$TARGET_PID
	start_dynprobed --test-fault "$spec:stop" || tap_bail "$name: lttng-dynprobed does not start"
	for req in "${setup[@]}"; do
		# shellcheck disable=SC2086
		enable $req || tap_bail "$name: cannot set up: $(head -n1 "$DP_TMP/out")"
	done
	if [ "$1" = enable ]; then
		"$DPCTL" enable "$2" channel0 "$3" "$4" "$5" "$PIE" -p "$pid" >"$DP_TMP/act" 2>&1 &
	else
		"$DPCTL" disable "$2" channel0 "$3" >"$DP_TMP/act" 2>&1 &
	fi
	act=$!
	stopped_at "${spec%%:*}"
	tap_ok $? "$name: the daemon stopped itself at step '$spec'"
}

resume() {
	kill -CONT "$DPD_PID"
	wait "$act"
	st=$?
}

# killed_then_resume: the target SIGKILLed, and dead (every thread gone or
# a zombie: a held thread dies only once it runs, which a loaded machine
# may delay past the daemon's next write), then the daemon resumed.
killed_then_resume() {
	kill -KILL "$pid"
	eventually target_dead
	resume
}

# target_dead: no thread of the target runs or waits any more.
target_dead() {
	! grep -q '^State:[[:space:]]*[RSDTt]' /proc/"$pid"/task/*/status 2>/dev/null
}

# released: the killed target's zombie is no longer traced, so that its
# parent (this script) may collect it; then collected.  30 s only bound a
# daemon that never lets go (a loaded machine took more than 5 s once).
released() {
	local i
	for i in $(seq 600); do
		# Collected already (bash reaps on SIGCHLD), or no longer traced.
		[ -e /proc/"$pid" ] || break
		grep -q '^TracerPid:[[:space:]]*0$' /proc/"$pid"/status 2>/dev/null && break
		sleep 0.05
	done
	{ [ ! -e /proc/"$pid" ] ||
		grep -q '^TracerPid:[[:space:]]*0$' /proc/"$pid"/status 2>/dev/null; } &&
		wait "$pid" 2>/dev/null
	[ $? -eq 137 ]
}

# served: the daemon still serves requests, and exits on SIGTERM.
served() {
	dpctl ping && stop_dynprobed
}

# ---- an agent that reports a patch restored while it was away ----
# The daemon killed after restoring dp_work, before telling the agent: its
# record still holds the patches.  A new daemon asked to install the event
# again before that agent is back (the daemon stopped at the install's
# start) takes its report when it connects in the middle of the install:
# what it reports must be checked against the code before the install
# relies on it.
start_target stale env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm-stale" 4 5 1000 ||
	tap_bail "stale: the target does not start"
pid=$TARGET_PID
start_dynprobed --test-fault restored || tap_bail "stale: lttng-dynprobed does not start"
enable one onef function dp_work || tap_bail "stale: cannot enable: $(head -n1 "$DP_TMP/out")"
dpctl disable one channel0 onef
died restored && same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "stale: the daemon killed once dp_work is restored, before telling the agent"
# With no daemon, the agent tries again 0.1, 0.3, 0.7, 1.5, 3.1 s after
# the loss: past 1.5 s, its next try comes while the new daemon's install
# waits for it (stopped 1 s at its start, then up to 3 s).
sleep 1.6
start_dynprobed --test-fault install:stop || tap_bail "stale: lttng-dynprobed does not start again"
"$DPCTL" enable one channel0 onef function dp_work "$PIE" -p "$pid" >"$DP_TMP/act" 2>&1 &
act=$!
stopped_at install
sleep 1
kill -CONT "$DPD_PID"
wait "$act"
tap_ok $? "stale: ENABLE while the agent is away: $(head -n1 "$DP_TMP/act")"
! same_as_file "$pid" "$PIE" dp_work
tap_ok $? "stale: the patches the agent reported but the code did not hold are written: dp_work is patched"
dpctl disable one channel0 onef && same_as_file "$pid" "$PIE" dp_work "$LEN" && served
tap_ok $? "stale: DISABLE restores it; the daemon exits on SIGTERM"
kill -TERM "$pid"
wait "$pid"
tap_ok $? "stale: every result the target computed was right: $(tail -n1 "$DP_TMP/stale.out")"

target_at exit-held held -- enable one onef function dp_work
killed_then_resume
released
tap_ok $? "exit-held: the daemon let go of the dead target: its parent collects it (killed)"
[ "$st" -ne 0 ] && grep -q "exited" "$DP_TMP/act"
tap_ok $? "exit-held: the target killed while every thread is held for an install: the client is told ($(head -n1 "$DP_TMP/act"))"
dpctl list one
! grep -q "event=onef " "$DP_TMP/out" && served
tap_ok $? "exit-held: no event is kept, and the daemon serves on and exits on SIGTERM"

target_at exit-staged staged -- enable one onef function dp_work
killed_then_resume
released
tap_ok $? "exit-staged: its parent collects the dead target (killed)"
[ "$st" -ne 0 ] && grep -q "exited" "$DP_TMP/act"
tap_ok $? "exit-staged: the target killed once its trampolines are written: the client is told ($(head -n1 "$DP_TMP/act"))"
served
tap_ok $? "exit-staged: the daemon serves on and exits on SIGTERM"

target_at stop-held held:2 "one onef function dp_work" -- disable one onef
kill -STOP "$pid"
resume
[ "$st" -eq 0 ]
tap_ok $? "stop-held: SIGSTOP while every thread is held for a removal: the removal goes on ($(head -n1 "$DP_TMP/act"))"
for i in $(seq 600); do
	[ "$(grep -c '^State:[[:space:]]*T' /proc/"$pid"/task/*/status 2>/dev/null)" = \
		"$(ls /proc/"$pid"/task | wc -l)" ] && break
	sleep 0.05
done
c1=$(calls stop-held)
sleep 0.3
c2=$(calls stop-held)
[ "$c1" = "$c2" ] && grep -q '^State:[[:space:]]*T' /proc/"$pid"/status
tap_ok $? "stop-held: after it the target is stopped, as SIGSTOP asked ($c1 -> $c2 calls)"
kill -CONT "$pid"
sleep 0.3
c3=$(calls stop-held)
[ "$c3" -gt "$c2" ] && same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "stop-held: SIGCONT: it runs on ($c2 -> $c3 calls), dp_work's bytes are the file's"
served
kill -TERM "$pid"
wait "$pid"
tap_ok $? "stop-held: every result the target computed was right: $(tail -n1 "$DP_TMP/stop-held.out")"

# The nice values of the daemon's threads, lowest first.
nices() {
	awk '{ print $19 }' /proc/"$DPD_PID"/task/*/stat 2>/dev/null | sort -n | tr '\n' ' '
}

target_at term-held held:2 "one onef function dp_work" -- disable one onef
held_nices=$(nices)
kill -TERM "$pid"
resume
wait "$pid"
tap_ok $? "term-held: SIGTERM while every thread is held for a removal: the target's handler ran once it was let go, and it exits with every result right: $(tail -n1 "$DP_TMP/term-held.out")"
after_nices=$(nices)
# Root may raise the holding thread's priority; another user may not.
if [ "$(id -u)" -eq 0 ]; then
	[ "$(grep -o -- '-10 ' <<<"$held_nices" | wc -l)" -eq 1 ] && [[ $after_nices != *-10* ]]
else
	[[ "$held_nices $after_nices" != *-10* ]]
fi
tap_ok $? "term-held: the thread that holds the target runs at nice -10 while it does (uid $(id -u); nice values held: $held_nices, after: $after_nices)"
served
tap_ok $? "term-held: the daemon serves on and exits on SIGTERM ($(head -n1 "$DP_TMP/act"))"

# ---- the trace output's disk full ----
mkdir -p "$DP_TMP/full" && mount -t tmpfs -o size=256k dp-full "$DP_TMP/full" ||
	tap_bail "cannot mount a small tmpfs"
dp_lttng create full --output="$DP_TMP/full/trace" >/dev/null &&
	dp_lttng enable-event -u -s full 'dynprobe:full*' >/dev/null &&
	dp_lttng start full >/dev/null || tap_bail "cannot create session full"
start_target full env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm-full" 4 5 200 ||
	tap_bail "full: the target does not start"
pid=$TARGET_PID
start_dynprobed || tap_bail "full: lttng-dynprobed does not start"
enable full fullf function dp_work
tap_ok $? "full: a function probed into a session whose output has 256 KiB: $(grep '^proc' "$DP_TMP/out")"
for i in $(seq 120); do
	avail=$(df -k --output=avail "$DP_TMP/full" | tail -n1 | tr -d ' ')
	[ "$avail" -le 16 ] && break
	dp_lttng stop full >/dev/null
	dp_lttng start full >/dev/null
	sleep 0.25
done
[ "$avail" -le 16 ]
tap_ok $? "full: the trace filled the disk ($avail KiB left)"
c1=$(calls full)
sleep 0.3
c2=$(calls full)
[ "$c2" -gt "$c1" ]
tap_ok $? "full: the target runs on, probed ($c1 -> $c2 calls)"
dpctl disable full channel0 fullf && same_as_file "$pid" "$PIE" dp_work "$LEN" && served
tap_ok $? "full: DISABLE restores dp_work's bytes, the daemon serves on and exits on SIGTERM"
kill -TERM "$pid"
wait "$pid"
tap_ok $? "full: every result the target computed was right: $(tail -n1 "$DP_TMP/full.out")"
dp_lttng destroy full >/dev/null
umount "$DP_TMP/full"

# ---- the session daemon killed ----
start_target sk env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm-sk" 4 5 1000 ||
	tap_bail "sk: the target does not start"
pid=$TARGET_PID
start_dynprobed || tap_bail "sk: lttng-dynprobed does not start"
enable one onef function dp_work
tap_ok $? "sessiond-killed: a function probed: $(grep '^proc' "$DP_TMP/out")"
kill -KILL "$DP_SESSIOND_PID"
wait "$DP_SESSIOND_PID" 2>/dev/null
c1=$(calls sk)
sleep 0.5
c2=$(calls sk)
kill -0 "$pid" && [ "$c2" -gt "$c1" ] && dpctl ping
tap_ok $? "sessiond-killed: lttng-sessiond killed with SIGKILL: the target runs on ($c1 -> $c2 calls), the daemon answers"
dpctl disable one channel0 onef && same_as_file "$pid" "$PIE" dp_work "$LEN" && served
tap_ok $? "sessiond-killed: DISABLE restores dp_work's bytes, the daemon exits on SIGTERM"
kill -TERM "$pid"
wait "$pid"
tap_ok $? "sessiond-killed: every result the target computed was right: $(tail -n1 "$DP_TMP/sk.out")"
tap_done
