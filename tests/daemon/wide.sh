# The helpers of the tests that probe tests/daemon's wide-fns program (a
# whole program's worth of functions): sourced after common.sh, with WIDE
# the program and pid its process.

# text_same PID: whether the code of wide-fns in PID (its r-x mapping) is
# the file's, byte for byte.
text_same() {
	local line start end off
	line=$(awk -v p="$(realpath "$WIDE")" '$6 == p && $2 ~ /x/ { print $1, $3; exit }' \
		/proc/"$1"/maps)
	[ -n "$line" ] || return 1
	start=$((0x${line%%-*}))
	end=${line%% *}
	end=$((0x${end#*-}))
	off=$((0x${line#* }))
	cmp -s <(dd if=/proc/"$1"/mem bs=64K iflag=skip_bytes,count_bytes skip="$start" \
			count=$((end - start)) 2>/dev/null) \
		<(dd if="$WIDE" bs=64K iflag=skip_bytes,count_bytes skip="$off" \
			count=$((end - start)) 2>/dev/null)
}

# ping_until SESSION NAME OUT: SIGUSR2 to the target (one call of
# dp_w_10000) until SESSION's trace holds NAME_entry and NAME_return: the
# session daemon enabled the classes the agent registered (asynchronously).
# The target's pings are in OUT.
ping_until() {
	local i
	for i in $(seq 120); do
		kill -USR2 "$pid"
		sleep 0.25
		seen "$1" "dynprobe:$2_entry" "dynprobe:$2_return" && return 0
	done
	return 1
}

# run_rounds OUT: SIGUSR1, then "C P" from the target's "done" line.
run_rounds() {
	local i
	kill -USR1 "$pid"
	for i in $(seq 600); do
		grep -q '^done' "$DP_TMP/$1.out" && break
		sleep 0.1
	done
	sed -nE 's/^done calls=([0-9]+) pings=([0-9]+)$/\1 \2/p' "$DP_TMP/$1.out"
}

# recorded SESSION NAME: "ENTRIES RETURNS DISCARDED" in SESSION's trace.
recorded() {
	dp_lttng stop "$1" >/dev/null
	bt_text "$DP_TMP/trace-$1" >"$DP_TMP/events"
	echo "$(count "dynprobe:$2_entry") $(count "dynprobe:$2_return")" \
		"$(bt_discarded "$DP_TMP/trace-$1")"
}
