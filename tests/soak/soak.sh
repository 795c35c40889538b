#!/bin/bash
# A soak: real servers from Debian under a real load generator (loopback
# only), while probes are enabled and disabled on them again and again.
#
#   soak.sh [SECONDS [SERVER...]]     SERVER: nginx, postgres (default both)
#
# For each server, in private namespaces (tests/utils/sessiond.sh: its own
# network namespace, so the traffic never leaves 127.0.0.1), with a private
# lttng-sessiond and the build tree's lttng-dynprobed and agent:
#
#  1. the server alone, its maps and fds noted ("pre");
#  2. throughput without probes, then with every probe of the run enabled
#     (the same load, the same run): the ratio is printed;
#  3. the soak: SECONDS of load while a loop disables and enables the
#     events one by one (and all of session B at once every few cycles):
#     two sessions (A and B, per-process buffers), --function patterns over
#     hundreds of the server's functions (nginx: path-wide, master and
#     workers; postgres: by pid, as its processes are not root's, on the
#     postmaster, whose forked backends inherit patches no event claims
#     and the daemon restores, and on pgbench's backends) and of libc's
#     (by pid), an offset probe (--probe
#     FUNCTION+OFFSET), return probes, contexts (reg:, regs, TYPE:NAME:ADDR,
#     backtrace), probes of both sessions on the same sites (shared patches
#     rebuilt at every change).  Every cycle, every process of the server is
#     checked for a page writable and executable at once;
#  4. everything disabled; then the checks:
#     - the load generator saw no error, every request answered 2xx with
#       the whole body (wrk's own script counts them), every pgbench
#       transaction succeeded, and pgbench's own sums hold after the run;
#     - the same processes run (no crash, no respawned worker), the server
#       logged no crash;
#     - every executable mapping of a file in every process is the file's,
#       byte for byte (soak-mem: whole text segments, not only the sites);
#     - nothing leaked: from the first full enable/disable ("warm", once
#       the agent is loaded) to the end, no executable memory and no file
#       descriptor more; from "pre" to the end, only what loading the agent
#       brings (see allowed_maps below);
#     - per process, the events in the traces plus the events the tracer
#       discarded are what the agent counted as recorded (events a
#       session's buffer took or counted as discarded: probe.h), and
#       recorded plus the hits skipped inside a hit (recursions: libc
#       functions the hit path itself calls) no more than its hits (read
#       from the agents themselves, through tests/proto's stand-in daemon,
#       once lttng-dynprobed has stopped).  No event the agent counted may
#       be missing; the agent's counters are plain increments, exact for
#       one thread only (probe.h), so its counts may fall short of the
#       traces' by 1/1000 (and 10);
#  5. the figures: duration, requests or transactions, errors, enable and
#     disable cycles, throughput with and without probes.
#
# Every loop is bounded in count and time; every process started here is
# stopped by pid; the temporary directory is removed at exit (traps).  The
# short run of make check is test-soak-short.sh.
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"

SOAK=${1:-60}
shift
SERVERS=${*:-nginx postgres}
# Seconds of load for each throughput figure.
WINDOW=${SOAK_WINDOW:-5}
# Disable all of session B every this many cycles.
B_EVERY=7
SOAK_MEM=$top_builddir/tests/soak/soak-mem
FAKE=$top_builddir/tests/proto/fake-daemon
LIBC=$(realpath /lib/x86_64-linux-gnu/libc.so.6)
NGINX=/usr/sbin/nginx
PGBIN=/usr/lib/postgresql/15/bin
POSTGRES=$PGBIN/postgres
STARTED=
DPD_PID=

case $SOAK in
'' | *[!0-9]*) tap_bail "usage: soak.sh [SECONDS [nginx|postgres]...]" ;;
esac
for f in "$SOAK_MEM" "$FAKE"; do
	[ -x "$f" ] || tap_bail "no $f (make -C tests/soak check builds it)"
done

soak_cleanup() {
	local status=$? pid
	for pid in $STARTED; do
		dp_stop_pid "$pid"
	done
	[ -n "$DPD_PID" ] && kill -KILL "$DPD_PID" 2>/dev/null
	if [ "$status" -ne 0 ] && [ -f "$DP_TMP/dynprobed.log" ]; then
		tap_diag "daemon log (tail):"
		tail -n 30 "$DP_TMP/dynprobed.log" | sed 's/^/# /'
	fi
	(exit "$status")
	dp_cleanup
}
trap soak_cleanup EXIT

# ---- the daemon ------------------------------------------------------------

start_daemon() {
	"$LTTNG_DYNPROBE_DAEMON" --daemonize -v --log "$DP_TMP/dynprobed.log" \
		--agent "$LTTNG_DYNPROBE_AGENT" >"$DP_TMP/dynprobed.start" 2>&1 || return 1
	DPD_PID=$(cat /var/run/lttng/lttng-dynprobed.pid)
	[ -n "$DPD_PID" ]
}

# SIGTERM (every site restored), and a bounded wait until it is gone.
stop_daemon() {
	local i
	[ -n "$DPD_PID" ] || return 0
	kill -TERM "$DPD_PID"
	for i in $(seq 400); do
		kill -0 "$DPD_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$DPD_PID" 2>/dev/null && return 1
	DPD_PID=
}

# ours ARGS...: our lttng; output in $out; logged; status returned.
ours() {
	local st
	out=$(timeout 120 "$LTTNG" --no-sessiond "$@" 2>&1)
	st=$?
	printf '$ lttng %s\n%s\n' "$*" "$out" >>"$DP_TMP/lttng.log"
	return "$st"
}

# ---- the process sets --------------------------------------------------------

# The processes of the server now: nginx's master and workers, or the
# postmaster and its children.
server_pids() {
	echo "$SERVER_PID"
	cat /proc/"$SERVER_PID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep .
}

# snapshot NAME: maps and fds of every process of the server, in
# $DP_TMP/SERVER/NAME/PID.{maps,fds}.
snapshot() {
	local dir=$DP_TMP/$SERVER/$1 pid fd
	mkdir -p "$dir"
	for pid in $(server_pids); do
		cat /proc/"$pid"/maps >"$dir/$pid.maps" 2>/dev/null
		# Sockets and pipes are named by inode; a new connection is a new
		# inode, not a new descriptor: keep the kind.
		# The server's own files (its data, pages and logs, all under
		# $DP_TMP/SERVER) come and go with its work: not ours.
		for fd in /proc/"$pid"/fd/*; do
			echo "${fd##*/} $(readlink "$fd")"
		done 2>/dev/null | sed -E 's/ (socket|pipe|anon_inode):\[?[0-9a-z_]*\]?$/ \1/' |
			grep -v " $DP_TMP/$SERVER/" | sort >"$dir/$pid.fds"
	done
}

# Bytes of anonymous executable memory in a maps file (the agent's code
# pool: trampolines).
exec_anon_bytes() {
	awk '$2 ~ /x/ && NF == 5 { split($1, a, "-"); n += strtonum("0x" a[2]) - strtonum("0x" a[1]) }
		END { print n + 0 }' "$1"
}

# The files the agent brings into a process: itself and the libraries it
# needs (ldd), and lttng-ust's own libraries it may open later.
agent_files() {
	realpath "$LTTNG_DYNPROBE_AGENT"
	ldd "$LTTNG_DYNPROBE_AGENT" | awk '$3 ~ /^\// { print $3 }' | xargs -r realpath
	ls /usr/lib/x86_64-linux-gnu/liblttng-ust*.so.* 2>/dev/null | xargs -r realpath
}

# allowed_maps PRE END: the mappings of END that PRE does not have, except
# what loading the agent brings once and keeps for the life of the process:
#  - the agent and the libraries it links (file mappings of agent_files);
#  - lttng-ust's ring buffers and wait/shm areas (shared memory files and
#    memfds, deleted or not), which live as long as the sessions;
#  - anonymous memory that is not both writable and executable: the
#    threads of the agent and of lttng-ust (stacks and guard pages), their
#    heaps, the per-thread scratch, and the code pool of trampolines, which
#    is never unmapped (a thread may still run in it: DESIGN.md);
#  - [heap] and [stack], whose bounds move.
# Prints what is left: nothing, when all is allowed.
allowed_maps() {
	awk -v files="$(agent_files | sort -u | tr '\n' ' ')" '
		BEGIN { n = split(files, f, " "); for (i = 1; i <= n; i++) ok[f[i]] = 1 }
		NR == FNR { pre[$0] = 1; next }
		$0 in pre { next }
		{ path = $6; for (i = 7; i <= NF; i++) path = path " " $i }
		path == "" && !($2 ~ /w/ && $2 ~ /x/) { next }
		path == "[heap]" || path == "[stack]" { next }
		path ~ /^\/dev\/shm\// || path ~ /^\/memfd:/ || path ~ /^\/(lttng-ust|ust-shm)/ { next }
		path in ok { next }
		{ print }' "$1" "$2"
}

# wx_scan: every process of the server, no mapping writable and executable.
WX_SAMPLES=0
WX_BAD=0
wx_scan() {
	local pid
	for pid in $(server_pids); do
		WX_SAMPLES=$((WX_SAMPLES + 1))
		if ! "$SOAK_MEM" wx "$pid" >>"$DP_TMP/$SERVER/wx" 2>/dev/null; then
			# A process that ended meanwhile has no maps: not a finding.
			[ -d /proc/"$pid" ] && WX_BAD=$((WX_BAD + 1))
		fi
	done
}

# ---- the probes ------------------------------------------------------------

# The events of the run: "SESSION NAME ARGS..." one per line, in $EVENTS;
# the contexts "SESSION NAME CTX..." in $CONTEXTS.  Set by each server.
EVENTS=
CONTEXTS=

# first_site PATH FUNCTION: the offset of the first instruction after a
# function's entry that takes a jump (lttng list --sites), as +0xN.
first_site() {
	"$LTTNG" --no-sessiond list -u --path "$1" --sites "$2" 2>/dev/null |
		awk '$1 ~ /^\+0x/ && $1 != "+0x0" && $NF == "jump" { print $1; exit }'
}

event_line() {
	grep -E "^[AB] $1 " <<<"$EVENTS"
}

# enable_event NAME / disable_event NAME: one event of the run.
enable_event() {
	local s n args
	read -r s n args <<<"$(event_line "$1")"
	# shellcheck disable=SC2086
	ours enable-event -u -s "soak$s" -c chan $args "$n"
}

disable_event() {
	local s n
	read -r s n _ <<<"$(event_line "$1")"
	ours disable-event -u -s "soak$s" -c chan "$n"
}

event_names() {
	awk -v s="${1:-}" 's == "" || $1 == s { print $2 }' <<<"$EVENTS"
}

# setup_sessions: sessions A and B, per-process buffers (a process's events
# and discards are its own), every event enabled once, then the contexts.
setup_sessions() {
	local s n ctx ok=0
	for s in A B; do
		ours create "soak$s" --output="$DP_TMP/$SERVER/trace-$s" || ok=1
		ours enable-channel -u -s "soak$s" --buffers-pid --subbuf-size=1M --num-subbuf=8 \
			chan || ok=1
	done
	tap_ok "$ok" "$SERVER: sessions soakA and soakB, per-process buffers" ||
		tap_diag "$out"
	for n in $(event_names); do
		enable_event "$n"
		tap_ok $? "$SERVER: enable-event $(event_line "$n")" || tap_diag "$out"
	done
	while read -r s n ctx; do
		[ -n "$s" ] || continue
		# shellcheck disable=SC2086
		ours add-context -u -s "soak$s" -c chan -e "$n" $ctx
		tap_ok $? "$SERVER: add-context -s soak$s -e $n $ctx" || tap_diag "$out"
	done <<<"$CONTEXTS"
	ok=0
	for s in A B; do
		ours start "soak$s" || ok=1
	done
	tap_ok "$ok" "$SERVER: sessions started" || tap_diag "$out"
}

# disable_all: every event of both sessions, patches removed everywhere.
disable_all() {
	local s ok=0
	for s in A B; do
		ours disable-event -u -s "soak$s" -c chan -a || ok=1
	done
	return "$ok"
}

enable_all() {
	local n ok=0
	for n in $(event_names); do
		enable_event "$n" || ok=1
	done
	return "$ok"
}

# churn UNTIL_EPOCH LOADPID: disables and enables the events one by one,
# and all of session B every B_EVERY cycles, until the load ends or the
# time comes; a cycle is one disable and one enable.  Bounded: at most
# 100000 cycles, and it stops after 5 failed operations.  Sets CYCLES and
# CHURN_FAIL (the operations that failed).
churn() {
	local until=$1 load=$2 names n i=0
	names=($(event_names))
	CYCLES=0
	CHURN_FAIL=0
	while [ "$i" -lt 100000 ] && [ "$(date +%s)" -lt "$until" ] && kill -0 "$load" 2>/dev/null; do
		n=${names[$((i % ${#names[@]}))]}
		i=$((i + 1))
		if [ $((i % B_EVERY)) -eq 0 ]; then
			ours disable-event -u -s soakB -c chan -a || CHURN_FAIL=$((CHURN_FAIL + 1))
			wx_scan
			for n in $(event_names B); do
				enable_event "$n" || CHURN_FAIL=$((CHURN_FAIL + 1))
			done
		else
			disable_event "$n" || CHURN_FAIL=$((CHURN_FAIL + 1))
			wx_scan
			enable_event "$n" || CHURN_FAIL=$((CHURN_FAIL + 1))
		fi
		[ "$CHURN_FAIL" -eq 0 ] || tap_diag "cycle $i: $out"
		[ "$CHURN_FAIL" -lt 5 ] || break
		CYCLES=$((CYCLES + 1))
		wx_scan
	done
}

# ---- the checks after the soak ---------------------------------------------

# check_text: every executable file mapping of every process is the file's.
check_text() {
	local pid bad=0 n=0
	for pid in $(server_pids); do
		if "$SOAK_MEM" text "$pid" >"$DP_TMP/$SERVER/text-$pid" 2>&1; then
			n=$((n + 1))
		elif [ -d /proc/"$pid" ]; then
			n=$((n + 1))
			bad=$((bad + 1))
		else
			# A process of the server that ended meanwhile (postgres
			# forks short-lived ones): nothing left to compare.
			rm -f "$DP_TMP/$SERVER/text-$pid"
		fi
	done
	tap_ok "$bad" "$SERVER: after the last disable, the code of every file mapped executable in its $n processes is the file's, byte for byte" ||
		cat "$DP_TMP/$SERVER"/text-* | grep -v ' same$' | head -20 | sed 's/^/# /'
	tap_diag "$(cat "$DP_TMP/$SERVER"/text-* | awk '$NF == "same" { n++; b += $3 }
		END { printf "%d mappings, %d bytes compared", n, b }')"
}

# check_leaks: pre -> end and warm -> end, per process alive throughout.
check_leaks() {
	local pid pre warm end bad=0 grew=0 fdbad=0 left n=0
	for pid in $(server_pids); do
		pre=$DP_TMP/$SERVER/pre/$pid
		warm=$DP_TMP/$SERVER/warm/$pid
		end=$DP_TMP/$SERVER/end/$pid
		[ -f "$warm.maps" ] && [ -f "$end.maps" ] || continue
		n=$((n + 1))
		[ -f "$pre.maps" ] && left=$(allowed_maps "$pre.maps" "$end.maps") || left=
		if [ -n "$left" ]; then
			bad=$((bad + 1))
			tap_diag "process $pid: mappings the agent does not explain:" "$left"
		fi
		if [ "$(exec_anon_bytes "$end.maps")" -gt "$(exec_anon_bytes "$warm.maps")" ]; then
			grew=$((grew + 1))
			tap_diag "process $pid: executable memory $(exec_anon_bytes "$warm.maps") -> $(exec_anon_bytes "$end.maps") bytes"
		fi
		if ! cmp -s "$warm.fds" "$end.fds"; then
			fdbad=$((fdbad + 1))
			tap_diag "process $pid: fds after the first cycle vs at the end:" \
				"$(diff "$warm.fds" "$end.fds" | grep '^[<>]')"
		fi
		# Before the agent: descriptors added may only be its socket to
		# the daemon, the code pool's /proc/PID/mem (every trampoline
		# byte is written through it, never through a writable mapping:
		# patch/codemem.h), lttng-ust's sockets, pipes and shared memory
		# (ring buffers, wait and counter areas, deleted or not), and
		# libunwind's validation pipe.
		[ -f "$pre.fds" ] && left=$(comm -13 "$pre.fds" "$end.fds" | grep -Ev \
			" (socket|pipe|anon_inode|/dev/shm/.*|/memfd:.*|/proc/$pid/mem)\$") || left=
		if [ -n "$left" ]; then
			fdbad=$((fdbad + 1))
			tap_diag "process $pid: fds the agent does not explain:" "$left"
		fi
	done
	[ "$n" -gt 0 ]
	tap_ok $? "$SERVER: $n processes ran from the first enable/disable cycle to the end"
	tap_ok "$bad" "$SERVER: no mapping left but the agent's own (before the first probe vs after the last disable)"
	tap_ok "$grew" "$SERVER: no trampoline memory leaked by $CYCLES enable/disable cycles (executable anonymous memory after the first cycle vs at the end)"
	tap_ok "$fdbad" "$SERVER: no file descriptor leaked (after the first cycle vs at the end, and only the agent's since before the first probe)"
}

# check_counts: the agents' counters against the traces, per process.  The
# daemon stops (all is disabled already), tests/proto's stand-in daemon
# listens on the app socket, and each agent, reconnecting, says in its
# HELLO what it counted.  Then the daemon starts again.
check_counts() {
	local pids npids pid i got=0 bad=0 recorded hits traced disc total_rec=0 total_hits=0
	local total_ev=0 total_disc=0 total_rec_skip=0 recursions slack s dir fake fifo=$DP_TMP/$SERVER/fake.in
	pids=$(for pid in $(server_pids); do
		grep -q liblttng-ust-dynprobe /proc/"$pid"/maps 2>/dev/null && echo "$pid"
	done | sort -n)
	npids=$(wc -w <<<"$pids")
	for s in A B; do
		ours stop "soak$s"
	done
	stop_daemon
	tap_ok $? "$SERVER: lttng-dynprobed stops on SIGTERM after the soak"
	mkfifo "$fifo"
	"$FAKE" /var/run/lttng/dynprobe-app.sock <"$fifo" >"$DP_TMP/$SERVER/fake.out" 2>&1 &
	fake=$!
	STARTED="$STARTED $fake"
	exec 7>"$fifo"
	# Agents of every user connect to root's app socket (0666, as the
	# daemon makes it); the stand-in makes it its user's only.
	for i in $(seq 100); do
		[ -S /var/run/lttng/dynprobe-app.sock ] && break
		sleep 0.05
	done
	chmod 0666 /var/run/lttng/dynprobe-app.sock
	for i in $(seq "$npids"); do
		echo "accept 20000" >&7
	done
	echo quit >&7
	exec 7>&-
	for i in $(seq 600); do
		kill -0 "$fake" 2>/dev/null || break
		sleep 0.1
	done
	dp_stop_pid "$fake"
	for pid in $pids; do
		awk -v p="$pid" '/^hello / { cur = ($2 == "pid=" p) } cur' \
			"$DP_TMP/$SERVER/fake.out" >"$DP_TMP/$SERVER/counts-$pid"
		grep -q '^end$' "$DP_TMP/$SERVER/counts-$pid" || continue
		got=$((got + 1))
		read -r hits recorded recursions <<<"$(awk '/^probe / {
			for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			h += v["hits"]; r += v["recorded"]; c += v["recursions"] }
			END { print h + 0, r + 0, c + 0 }' \
			"$DP_TMP/$SERVER/counts-$pid")"
		traced=0
		disc=0
		for s in A B; do
			for dir in "$DP_TMP/$SERVER/trace-$s"/ust/pid/*-"$pid"-*; do
				[ -d "$dir" ] || continue
				read -r ev _ <<<"$(bt_count "$dir")"
				traced=$((traced + ev))
				disc=$((disc + $(bt_discarded "$dir")))
			done
		done
		total_rec=$((total_rec + recorded))
		total_hits=$((total_hits + hits))
		total_ev=$((total_ev + traced))
		total_disc=$((total_disc + disc))
		total_rec_skip=$((total_rec_skip + recursions))
		tap_diag "process $pid: $traced events + $disc discarded; the agent counted $hits hits, $recorded recorded, $recursions inside a hit (not recorded)"
		# Every event the agent counted as recorded is in a trace or in
		# its discarded count: fewer is lost trace data.  The agent's
		# counters are plain increments, exact for one thread only
		# (probe.h): a hit of another thread of the process (the
		# agent's, lttng-ust's) on the same probe at the same instant
		# loses one, so they may fall short by 1/1000 (and 10).
		slack=$((recorded / 1000 + 10))
		if [ $((traced + disc)) -lt "$recorded" ] ||
			[ $((traced + disc)) -gt $((recorded + slack)) ] ||
			[ $((recorded + recursions)) -gt $((hits + slack)) ]; then
			bad=$((bad + 1))
		fi
	done
	[ "$got" -eq "$npids" ] && [ "$npids" -gt 0 ]
	tap_ok $? "$SERVER: the agents of all $npids probed processes report their counters ($got did)" ||
		tail -n 5 "$DP_TMP/$SERVER/fake.out" | sed 's/^/# /'
	[ "$bad" -eq 0 ] && [ "$total_ev" -gt 0 ]
	tap_ok $? "$SERVER: per process, events in the traces + discarded = recorded by the agent (none missing; the agent's count short by at most 1/1000) <= hits - recursions ($total_ev + $total_disc ~ $total_rec <= $total_hits - $total_rec_skip)"
	HITS=$total_hits
	RECORDED=$total_rec
	TRACED=$total_ev
	DISCARDED=$total_disc
	RECURSIONS=$total_rec_skip
	# The agents go on trying to reconnect, slower and slower, until the
	# daemon is back.
	rm -f /var/run/lttng/dynprobe-app.sock
	start_daemon
	tap_ok $? "$SERVER: lttng-dynprobed starts again" || cat "$DP_TMP/dynprobed.start"
	for s in A B; do
		ours destroy "soak$s"
	done
}

# ratio A B: A/B with 3 decimals.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'
}

. "$top_srcdir/tests/soak/nginx.sh"
. "$top_srcdir/tests/soak/postgres.sh"

# ---- main ------------------------------------------------------------------

cli_setup
start_daemon || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"
tap_diag "soak of $SOAK s per server ($SERVERS), on $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for SERVER in $SERVERS; do
	mkdir -p "$DP_TMP/$SERVER"
	case $SERVER in
	nginx) soak_nginx ;;
	postgres) soak_postgres ;;
	*) tap_bail "unknown server $SERVER (nginx, postgres)" ;;
	esac
done
stop_daemon
tap_ok $? "lttng-dynprobed stops on SIGTERM at the end"
tap_done
