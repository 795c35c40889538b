#!/bin/bash
# fork(): the child of a process using runtime event classes registers as
# its own application and records with its own vpid, in per-user and in
# per-process buffers (two sessions at once); the parent goes on recording
# after the fork.  Also with liblttng-ust-fork.so preloaded.

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

for buf in uid pid; do
	dp_lttng create "per$buf" --output="$DP_TMP/per$buf" &&
		dp_lttng enable-channel -u -s "per$buf" --buffers-$buf chan &&
		dp_lttng enable-event -u -s "per$buf" -c chan dptest:fork &&
		dp_lttng add-context -u -s "per$buf" -c chan -t vpid &&
		dp_lttng start "per$buf" || tap_bail "cannot set up session per$buf"
done

# Twice: as is, and with liblttng-ust-fork.so preloaded, which wraps fork()
# with the same lttng-ust calls (the agent must then stay out of its way:
# done twice, they would deadlock, with every signal blocked: hence
# timeout's SIGKILL).
expected_events() {
	printf '%s\n' "parent $1 $1" "child $2 $2" "child $2 $2" "child $2 $2" \
		"parent-after $1 $1"
}
timeout -s KILL 60 "$EMIT" fork >"$DP_TMP/emit.out" 2>&1
tap_ok $? "events-emit fork runs" || tap_diag_file "$DP_TMP/emit.out"
read -r _ parent _ child < <(grep '^parent ' "$DP_TMP/emit.out")
tap_check "the child is another process (parent $parent, child $child)" \
	[ -n "$parent" -a -n "$child" -a "$parent" != "$child" ]
tap_check "the class is enabled in the child right after fork()" \
	grep -qx "child $child enabled 1" "$DP_TMP/emit.out"
expected=$(expected_events "$parent" "$child")

timeout -s KILL 60 env LD_PRELOAD=liblttng-ust-fork.so.1 "$EMIT" fork >"$DP_TMP/emit2.out" 2>&1
tap_ok $? "events-emit fork runs with liblttng-ust-fork.so preloaded" ||
	tap_diag_file "$DP_TMP/emit2.out"
read -r _ parent2 _ child2 < <(grep '^parent ' "$DP_TMP/emit2.out")
expected="$expected
$(expected_events "$parent2" "$child2")"

for buf in uid pid; do
	dp_lttng stop "per$buf" && dp_lttng destroy "per$buf"
	# "who vpid pid" per event, in time order.
	bt_text "$DP_TMP/per$buf" |
		sed -nE 's/.*\{ vpid = ([0-9]+) \}, \{ pid = (-?[0-9]+), who = "([a-z-]+)" \}$/\3 \1 \2/p' \
		>"$DP_TMP/per$buf.events"
	tap_check "per-$buf buffers: each child's 3 events carry its vpid, each parent's 2 the parent's" \
		[ "$(cat "$DP_TMP/per$buf.events")" = "$expected" ] ||
		tap_diag "got (who vpid pid):" "$(cat "$DP_TMP/per$buf.events")"
done

tap_done
