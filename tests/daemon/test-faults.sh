#!/bin/bash
# lttng-dynprobed killed (SIGKILL) at each step of an install, of a removal,
# of a shared patch's rebuild and of a combine (--test-fault STEP[:N]: the
# daemon kills itself the Nth time it reaches STEP).  After each: the target
# runs on and computes right, a new daemon learns from the reconnecting agent
# what may be in the code, and every patch is either forgotten (its site
# holds the file's bytes) or adopted (removed by disabling the events): after
# that, dp_work's bytes are the file's.  Each case has a target of its own.
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
	od -An -tu8 -j8 -N64 "$DP_TMP/shm-$1" | awk '{ for (i = 1; i <= NF; i++) s += $i } END { print s + 0 }'
}

# enable SESSION EVENT KIND LOCATION: in the case's target.
enable() {
	dpctl enable "$1" channel0 "$2" "$3" "$4" "$PIE" -p "$pid"
}

# died STEP: the daemon killed itself at STEP; waits until it is dead.
died() {
	local i
	for i in $(seq 200); do
		grep -q '^State:[[:space:]]*[RSDT]' /proc/"$DPD_PID"/status 2>/dev/null || break
		sleep 0.05
	done
	! grep -q '^State:[[:space:]]*[RSDT]' /proc/"$DPD_PID"/status 2>/dev/null &&
		grep -q "test fault: SIGKILL at step $1\$" "$DP_TMP/dynprobed.log" &&
		DPD_PID=
}

# restart: a new daemon, once the case's agent has connected to it.
restart() {
	local from i
	from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
	start_dynprobed || return 1
	for i in $(seq 200); do
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
		start_target "$name" "$PIE" "$DP_TMP/shm-$name" 4 5 1000
	else
		start_target "$name" env LD_PRELOAD="$AGENT" "$PIE" "$DP_TMP/shm-$name" 4 5 1000
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
tap_done
