#!/bin/bash
# Install/remove cycles of entry + return + offset probes in an 8-thread
# target that calls the probed function in tight bursts and checks every
# result: the results stay right throughout, and in each window in which
# every probe was in place, every call made was recorded by each probe.
# 200 cycles in the PIE target, 50 in the non-PIE one (DP_CYCLES overrides
# both).
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT


start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"

for kind in pie nopie; do
	CYCLES=${DP_CYCLES:-$([ $kind = pie ] && echo 200 || echo 50)}
	exe=$builddir/target-$kind
	off=$(( 0x$(nm "$exe" | awk '$3 == "dp_work_mid" { print $1 }') - \
		0x$(nm "$exe" | awk '$3 == "dp_work" { print $1 }') ))
	start_target "t-$kind" env LD_PRELOAD="$AGENT" "$exe" "$DP_SHM/shm-$kind" 8 10 500
	tap_ok $? "$kind target with 8 threads started" || continue
	tpid=$TARGET_PID

	# 128 MiB per CPU: the target writes about 30 MiB in all, so the
	# buffer holds it even if lttng-consumerd does not run for a while.
	# A CPU of this machine that stood still for 50-65 s made it discard
	# all the same (the probes ran on, the consumer did not): the check of
	# the windows leaves out those the tracer discarded events in.
	dp_lttng create "c$kind" --output="$DP_TMP/trace-$kind" >/dev/null &&
		dp_lttng enable-channel -u -s "c$kind" big --subbuf-size=8M --num-subbuf=16 \
			>/dev/null &&
		dp_lttng enable-event -u -s "c$kind" -c big 'dynprobe:cyc_*' >/dev/null &&
		dp_lttng start "c$kind" >/dev/null
	tap_ok $? "$kind: session with the dynamic events enabled"

	start=$(date +%s.%N)
	dpctl cycles "$CYCLES" "c$kind" big "$tpid" "$exe" dp_work "$off" "$DP_SHM/shm-$kind" \
		"$DP_TMP/windows-$kind"
	tap_ok $? "$kind: $CYCLES install/remove cycles of entry, return and +$off probes: $(tail -n2 "$DP_TMP/out" | tr "\n" " ")"
	tap_diag "$kind: $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f s", e - s }')"

	kill -0 "$tpid" 2>/dev/null
	tap_ok $? "$kind: the target runs on"
	dpctl list "c$kind"
	[ "$(grep -c '^dyn .* enabled=0 .*procs=$' "$DP_TMP/out")" -eq 2 ]
	tap_ok $? "$kind: both events are listed, disabled, installed nowhere"
	for sym in dp_work dp_work_mid; do
		addr=$(nm "$exe" | awk -v s=$sym '$3 == s { print $1 }')
		bias=0
		[ "$kind" = pie ] && bias=$(( 0x$(awk -v p="$exe" '$6 == p && $3 == "00000000" {
			split($1, a, "-"); print a[1]; exit }' /proc/"$tpid"/maps) ))
		[ "$(site_bytes "$tpid" $((0x$addr + bias)) 16)" = \
			"$(file_bytes "$exe" 0x$addr 16)" ]
		tap_ok $? "$kind: $sym's bytes in the process are the file's again"
	done

	dp_lttng stop "c$kind" >/dev/null
	kill -TERM "$tpid"
	wait "$tpid"
	tap_ok $? "$kind: every result the threads computed was right: $(tail -n1 "$DP_TMP/t-$kind.out")"

	read -r events discarded <<<"$(bt_count "$DP_TMP/trace-$kind")"
	[ "$events" -gt 0 ]
	tap_ok $? "$kind: $events events recorded ($discarded discarded-events messages)"
	# Windows the tracer discarded events in are left out (check-windows.awk);
	# at least three quarters must be checked for the check to say much.
	check=$(bt_timed "$DP_TMP/trace-$kind" |
		gawk -v windows="$DP_TMP/windows-$kind" -v warnings="$DP_TMP/bt-warnings" \
			-f "$top_srcdir/tests/daemon/check-windows.awk")
	read -r expected missing windows excused <<<"$(echo "$check" | tr -c '0-9\n' ' ')"
	[ "${expected:-0}" -gt 0 ] && [ "${missing:-1}" -eq 0 ] &&
		[ $((4 * ${excused:-0})) -le "${windows:-0}" ]
	tap_ok $? "$kind: each window's calls were all recorded by every probe ($check)"
	dp_lttng destroy "c$kind" >/dev/null
done

reused=$(grep -c 'trampoline at .* reused' "$DP_TMP/dynprobed.log")
[ "$reused" -ge 500 ]
tap_ok $? "trampolines are kept and reused from one cycle to the next ($reused reuses)"
grep 'threads held' "$DP_TMP/dynprobed.log" | awk '{ ms = $(NF - 1); if (ms > max) max = ms }
	END { printf "# longest stop of the target: %.3f ms over %d stops\n", max, NR }'
tap_done
