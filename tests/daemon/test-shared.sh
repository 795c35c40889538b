#!/bin/bash
# Dynamic events at the same place of one process share its patch: two
# sessions with --function dp_work each, a --probe and a --function in one
# session, two probes of one ENABLE_MANY request.  Every event records;
# taking one out rebuilds the patch for the others, and the last one out
# restores the file's bytes.  A window that only overlaps another's
# combines with it (test-combine.sh tells more).  SIGTERM restores shared sites,
# and a daemon killed with SIGKILL learns them again from the agent.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

PIE=$builddir/target-pie
# dp_work and the bytes after it, where its return sites' hops may go.
LEN=64


# more SESSION EVENT...: whether SESSION records more of every EVENT than
# its trace holds now.
more() {
	local s=$1 ev args=()
	shift
	seen "$s" || return 1
	for ev in "$@"; do
		args+=("$ev>$(count "$ev")")
	done
	seen "$s" "${args[@]}"
}

# both_returns EVENT: whether EVENT, a return event, has odd and even values
# in the trace read last: dp_work returns through one of its two return
# sites (one of them an int3) by the parity of its value.
both_returns() {
	local vals
	vals=$(grep "^$1:" "$DP_TMP/events" | sed -nE 's/.*ret = ([0-9]+).*/\1/p')
	echo "$vals" | grep -q '[13579]$' && echo "$vals" | grep -q '[02468]$'
}

# proc_counts: "JUMP:INT3" of the last dpctl report's proc line.
proc_counts() {
	sed -nE 's/^proc pid=[0-9]+ status=0 jump=([0-9]+) int3=([0-9]+) .*/\1:\2/p' "$DP_TMP/out"
}

start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"
start_target t env LD_PRELOAD="$AGENT" "$PIE" "$DP_SHM/shm" 4 5 1000 ||
	tap_bail "the target does not start"
pid=$TARGET_PID

# Each session records its own events only.
for s in one two pf; do
	dp_lttng create "$s" --output="$DP_TMP/trace-$s" >/dev/null &&
		dp_lttng enable-event -u -s "$s" "dynprobe:$s*" >/dev/null &&
		dp_lttng start "$s" >/dev/null || tap_bail "cannot create session $s"
done

# ---- two sessions, --function dp_work each ----
dpctl enable one channel0 one function dp_work "$PIE" -p "$pid" -c reg:rdi &&
	out_has "^proc pid=$pid status=0 .* refused=0 "
tap_ok $? "session one: --function dp_work: $(grep '^proc' "$DP_TMP/out")"
counts=$(proc_counts)
sites=$(grep '^site' "$DP_TMP/out" | sed 's/ event=[^ ]*//')
dpctl enable two channel0 two function dp_work "$PIE" -p "$pid" &&
	out_has "^proc pid=$pid status=0 .* refused=0 "
tap_ok $? "session two: the same function in the same process: $(grep '^proc' "$DP_TMP/out")"
[ "$(grep '^site' "$DP_TMP/out" | sed 's/ event=[^ ]*//')" = "$sites" ]
tap_ok $? "its sites are the same, placed the same way"
dpctl list
grep -q "event=one .*enabled=1 .*procs=$pid:$counts$" "$DP_TMP/out" &&
	grep -q "event=two .*enabled=1 .*procs=$pid:$counts$" "$DP_TMP/out"
tap_ok $? "LIST shows both events installed in the process ($counts)"
for s in one two; do
	seen "$s" "dynprobe:${s}_entry" "dynprobe:${s}_return>20"
	tap_ok $? "session $s records dp_work's entry and returns: $(count "dynprobe:${s}_entry") entries, $(count "dynprobe:${s}_return") returns"
	both_returns "dynprobe:${s}_return"
	tap_ok $? "session $s records both return sites (int3 and jump)"
done
seen one && grep "^dynprobe:one_entry:" "$DP_TMP/events" | tail -n1 | grep -q "rdi = " &&
	seen two && ! grep "^dynprobe:two_entry:" "$DP_TMP/events" | grep -q "rdi = "
tap_ok $? "each event keeps its own fields (one_entry has rdi, two_entry not)"

# ---- one event out: the other records on ----
dpctl disable one channel0 one && [ "$(proc_counts)" = "$counts" ]
tap_ok $? "DISABLE of session one's event: $(grep '^proc' "$DP_TMP/out")"
! same_as_file "$pid" "$PIE" dp_work
tap_ok $? "dp_work is still patched, for session two"
dpctl list
grep -q "event=one .*enabled=0 .*procs=$" "$DP_TMP/out" &&
	grep -q "event=two .*enabled=1 .*procs=$pid:$counts$" "$DP_TMP/out"
tap_ok $? "LIST shows session two's event alone installed"
seen one
gone=$(count dynprobe:one_entry)
more two dynprobe:two_entry dynprobe:two_return
tap_ok $? "session two records on: $(count dynprobe:two_entry) entries, $(count dynprobe:two_return) returns"
seen one
[ "$(count dynprobe:one_entry)" -eq "$gone" ]
tap_ok $? "session one records no more ($gone entries)"

dpctl disable two channel0 two && [ "$(proc_counts)" = "$counts" ]
tap_ok $? "DISABLE of session two's event: $(grep '^proc' "$DP_TMP/out")"
same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "the last event out restores dp_work's $LEN bytes exactly"

# ---- a --probe and a --function of one session ----
dpctl enable pf channel0 pfp probe dp_work "$PIE" -p "$pid" &&
	dpctl enable pf channel0 pff function dp_work "$PIE" -p "$pid" &&
	out_has "^proc pid=$pid status=0 .* refused=0 "
tap_ok $? "--probe dp_work and --function dp_work in one session: $(grep '^proc' "$DP_TMP/out")"
seen pf dynprobe:pfp dynprobe:pff_entry dynprobe:pff_return
tap_ok $? "both record: $(count dynprobe:pfp) probe, $(count dynprobe:pff_entry) entry events"
dpctl enable pf channel0 pfo probe dp_work+1 "$PIE" -p "$pid" &&
	out_has "^proc pid=$pid status=0 .* refused=0 "
tap_ok $? "a probe whose window overlaps the shared one combines with it: $(grep '^proc' "$DP_TMP/out")"
seen pf dynprobe:pfo dynprobe:pfp dynprobe:pff_entry
tap_ok $? "the three record: $(count dynprobe:pfo), $(count dynprobe:pfp), $(count dynprobe:pff_entry)"
dpctl list pf
out_has "event=pfo .*procs=$pid:"
tap_ok $? "LIST shows it installed"

from=$(($(wc -l <"$DP_TMP/dynprobed.log") + 1))
dpctl enable-many pf channel0 "$pid" "$PIE" pfm1=dp_work+20 pfm2=dp_work+20 &&
	out_has "enabled=2 failed=0"
tap_ok $? "ENABLE_MANY of two probes at one place: $(tail -n1 "$DP_TMP/out")"
tail -n +"$from" "$DP_TMP/dynprobed.log" | grep -q "process $pid: a batch of 1 sites in 1 stops"
tap_ok $? "they share one patch, written in one stop"
seen pf dynprobe:pfm1 dynprobe:pfm2
tap_ok $? "both record: $(count dynprobe:pfm1) and $(count dynprobe:pfm2) events"
for ev in pfp pff pfo pfm1 pfm2; do
	dpctl disable pf channel0 "$ev" || break
done
same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "once all five are out, dp_work's bytes are the file's"

# ---- SIGTERM restores shared sites ----
dpctl enable one channel0 one function dp_work "$PIE" -p "$pid" -c reg:rdi &&
	dpctl enable two channel0 two function dp_work "$PIE" -p "$pid" &&
	[ "$(proc_counts)" = "$counts" ]
tap_ok $? "both sessions' events shared again: $(grep '^proc' "$DP_TMP/out")"
stop_dynprobed && same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "SIGTERM: the daemon exits, dp_work's bytes are the file's"

# ---- SIGKILL: a new daemon learns the shared sites from the agent ----
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
dpctl enable one channel0 one function dp_work "$PIE" -p "$pid" -c reg:rdi &&
	dpctl enable two channel0 two function dp_work "$PIE" -p "$pid"
tap_ok $? "a new daemon shares them again: $(grep '^proc' "$DP_TMP/out")"
kill_dynprobed
start_dynprobed
tap_ok $? "the daemon killed with SIGKILL, a new one started" ||
	tap_diag_file "$DP_TMP/dynprobed.start"
for i in $(seq 300); do
	dpctl list
	grep -q "event=one .*procs=$pid:$counts$" "$DP_TMP/out" &&
		grep -q "event=two .*procs=$pid:$counts$" "$DP_TMP/out" && break
	sleep 0.1
done
grep -q "event=one .*procs=$pid:$counts$" "$DP_TMP/out" &&
	grep -q "event=two .*procs=$pid:$counts$" "$DP_TMP/out"
tap_ok $? "it learns from the agent that both events share the patches: $(grep '^dyn' "$DP_TMP/out" | sed 's/ names=.* procs=/ procs=/' | tr '\n' ' ')"
more one dynprobe:one_entry dynprobe:one_return && more two dynprobe:two_entry dynprobe:two_return
tap_ok $? "both sessions record on"
dpctl disable one channel0 one && ! same_as_file "$pid" "$PIE" dp_work
tap_ok $? "DISABLE of one recovered event rebuilds the patches for the other"
more two dynprobe:two_entry dynprobe:two_return && both_returns dynprobe:two_return
tap_ok $? "session two records on, at both return sites"
dpctl disable two channel0 two && same_as_file "$pid" "$PIE" dp_work "$LEN"
tap_ok $? "DISABLE of the other restores dp_work's bytes exactly"

kill -TERM "$pid"
wait "$pid"
tap_ok $? "the target computed right throughout: $(tail -n1 "$DP_TMP/t.out")"
tap_done
