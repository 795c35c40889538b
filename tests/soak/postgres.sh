# The PostgreSQL part of soak.sh (sourced): a private cluster (initdb in the
# temporary directory, run as the postgres user: PostgreSQL refuses root)
# on 127.0.0.1 and a private socket directory, under pgbench.  The
# postmaster forks a backend per connection: path-wide probes on postgres
# follow the fork (the children inherit the patches and the agent), libc's
# are put by pid on the backends of pgbench's connections.

PG_PORT=15432
PG_CLIENTS=4
# The soak's transactions per second (pgbench --rate): the events of
# minutes must fit on the disk.
PG_RATE=${SOAK_PG_RATE:-100}
# Seconds the soak's pgbench runs beyond SOAK: the probes' set-up before
# the churn, and the checks after it that need its backends alive (their
# code bytes, their agents' counters), which are given PG_CHECKS of them.
PG_MARGIN=${SOAK_PG_MARGIN:-90}
PG_CHECKS=${SOAK_PG_CHECKS:-40}
# Seconds the full-speed pgbench runs beyond WINDOW while its backends are
# being probed.
PG_SETUP=${SOAK_PG_SETUP:-15}
# Transactions per client of the throughput baseline without probes.
PG_BASE_TX=${SOAK_PG_BASE_TX:-250}

as_pg() {
	setpriv --reuid=postgres --regid=postgres --init-groups \
		env HOME="$DP_TMP/postgres/home" LTTNG_HOME="$DP_TMP/postgres/home" "$@"
}

# pgbench_run ARGS...: pgbench on the cluster.  Runs after -i are -n (no
# vacuum, which would empty pgbench_history): the history then holds every
# transaction of the run, checked against the balances at the end.
pgbench_run() {
	as_pg timeout 900 "$PGBIN/pgbench" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$@" postgres
}

psql_value() {
	as_pg timeout 60 "$PGBIN/psql" -X -A -t -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "$1" postgres
}

# pgbench_ok OUT: pgbench's summary: no failed transaction, some done.
pgbench_ok() {
	grep -Eq '^number of failed transactions: 0 ' "$1" &&
		[ "$(pgbench_tx "$1")" -gt 0 ]
}

pgbench_tx() {
	sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' "$1"
}

pgbench_tps() {
	sed -nE 's/^tps = ([0-9.]+) \(without initial connection time\)/\1/p' "$1"
}

# The average tps of pgbench's progress lines in (FROM, TO] seconds.
progress_tps() {
	awk -v a="$2" -v b="$3" '/^progress: / { t = $2 + 0; if (t > a && t <= b) { s += $4; n++ } }
		END { if (n) printf "%.1f", s / n; else print 0 }' "$1"
}

start_postgres() {
	local d=$DP_TMP/postgres i
	mkdir -p "$d/data" "$d/sock" "$d/home"
	chown -R postgres: "$d"
	as_pg "$PGBIN/initdb" -D "$d/data" -A trust -U postgres --no-sync >"$d/initdb.log" 2>&1 ||
		{ tap_diag_file "$d/initdb.log"; return 1; }
	# Not through as_pg: the background job must exec into the postmaster
	# (its pid is ours to watch and to stop).
	setpriv --reuid=postgres --regid=postgres --init-groups \
		env HOME="$d/home" LTTNG_HOME="$d/home" "$POSTGRES" -D "$d/data" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
		-c unix_socket_directories="$d/sock" -c autovacuum=off -c fsync=off \
		-c max_connections=20 >"$d/postgres.log" 2>&1 &
	SERVER_PID=$!
	STARTED="$STARTED $SERVER_PID"
	for i in $(seq 3000); do
		as_pg "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	tap_diag_file "$d/postgres.log"
	return 1
}

# The backends of TCP connections (pgbench's), by their process titles.
pg_backends() {
	local pid
	for pid in $(pg_children); do
		# A process may end meanwhile: its cmdline is then gone.
		{ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -q '127\.0\.0\.1(' &&
			echo "$pid"
	done
}

# Waits (300 s: a hang bound) until no backend of a pgbench run is left,
# not even one exiting (its cmdline already empty, or a zombie): what runs
# then is the postmaster's own.
pg_backends_gone() {
	local i pid left
	for i in $(seq 3000); do
		left=
		for pid in $(pg_children); do
			case $({ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null) in
			'' | *'127.0.0.1('*) left=$pid ;;
			esac
		done
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	return 1
}

pg_children() {
	cat /proc/"$SERVER_PID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . | sort -n
}

soak_postgres() {
	local d=$DP_TMP/postgres s_ e_ args_ e backends bl i off t0 t1 tps0 tps1 load n sums pids_before pgl nfuncs

	[ -x "$POSTGRES" ] || tap_bail "$POSTGRES is missing (postgresql-15, tools/deps.sh)"
	start_postgres
	tap_ok $? "postgres: a private cluster ($SERVER_PID) answers on 127.0.0.1:$PG_PORT" ||
		return 1
	pgbench_run -i -s 2 >"$d/pgbench-init" 2>&1
	tap_ok $? "postgres: pgbench -i" || tap_diag_file "$d/pgbench-init"
	pg_backends_gone
	pids_before=$(server_pids | sort -n | tr '\n' ' ')
	snapshot pre

	# A count of transactions, not a duration: on a loaded machine the
	# clients' connections alone can outlast a short window (0 processed).
	pgbench_run -c "$PG_CLIENTS" -j 2 -t "$PG_BASE_TX" -n >"$d/pgbench-base" 2>&1
	pgbench_ok "$d/pgbench-base"
	tap_ok $? "postgres: pgbench without probes, no failed transaction ($(pgbench_tx "$d/pgbench-base") transactions)" ||
		tap_diag_file "$d/pgbench-base"
	tps0=$(pgbench_tps "$d/pgbench-base")

	# Probes on postgres in the postmaster and its children now (by pid:
	# path-wide probes are for the processes of the user, root here), and
	# so in every backend forked later (patches and agent inherited).  Not
	# in a backend of the run above that is still exiting: it would be
	# gone by the time it is named (S23-3: "no process 3075 (--pid)").
	pg_backends_gone
	pgl=$(server_pids | sort -n | tr '\n' ',' | sed 's/,$//')
	off=$(first_site "$POSTGRES" LWLockAcquire)
	[ -n "$off" ] || tap_bail "no jump site in LWLockAcquire"
	EVENTS="A a_exec --path $POSTGRES --pid $pgl --function Exec*
B b_lock --path $POSTGRES --pid $pgl --function LWLock*"
	CONTEXTS="A a_exec -t int:mypid:MyProcPid -t reg:rdi
B b_lock -t backtrace"
	setup_sessions

	# Throughput with probes: the backends of a full-speed run get probes
	# by pid (those of the postmaster are not theirs: a forked child's
	# inherited patches that no event claims are restored); the tps is
	# the average of pgbench's progress after they are in.
	t0=$(date +%s)
	pgbench_run -c "$PG_CLIENTS" -j 2 -T "$((WINDOW + PG_SETUP))" -P 1 -n \
		>"$d/pgbench-probed" 2>&1 &
	load=$!
	STARTED="$STARTED $load"
	# Its clients connect as fast as the machine lets them: wait for them
	# while it runs (5 min at most, a hang bound).
	for i in $(seq 3000); do
		backends=$(pg_backends | tr '\n' ' ')
		[ "$(wc -w <<<"$backends")" -ge "$PG_CLIENTS" ] && break
		kill -0 "$load" 2>/dev/null || break
		sleep 0.1
	done
	bl=$(tr ' ' ',' <<<"$backends" | sed 's/,$//')
	n=0
	if [ -z "$bl" ]; then
		# No backend seen: pgbench ended first (then not an error, as
		# below), or its clients never connected (an error).
		kill -0 "$load" 2>/dev/null && n=1
		tap_diag "postgres: no backend of the full-speed pgbench seen while it ran ($(kill -0 "$load" 2>/dev/null && echo 'it still runs' || echo 'it ended'))"
	fi
	[ -n "$bl" ] && for e in "A t_exec --path $POSTGRES --pid $bl --function Exec*" \
		"A t_heap --path $POSTGRES --pid $bl --function heap_*" \
		"B t_lock --path $POSTGRES --pid $bl --function LWLock*" \
		"A t_io --path $LIBC --pid $bl --function *write*"; do
		read -r s_ e_ args_ <<<"$e"
		# shellcheck disable=SC2086
		ours enable-event -u -s "soak$s_" -c chan $args_ "$e_" && continue
		# Refused because pgbench ended (its time is bounded, the
		# machine's load is not): no probed figure, not an error.
		if ! kill -0 "$load" 2>/dev/null && grep -q 'no process' <<<"$out"; then
			tap_diag "postgres: pgbench ended before $e_ was in: $out"
			break
		fi
		n=$((n + 1))
		tap_diag "$out"
	done
	tap_ok "$n" "postgres: 4 events on the $PG_CLIENTS backends of a full-speed pgbench ($backends)"
	t1=$(($(date +%s) - t0))
	wait "$load"
	pgbench_ok "$d/pgbench-probed"
	tap_ok $? "postgres: pgbench at full speed, probed from its ${t1}th second, no failed transaction ($(pgbench_tx "$d/pgbench-probed") transactions)" ||
		tap_diag_file "$d/pgbench-probed"
	tps1=$(progress_tps "$d/pgbench-probed" "$t1" 100000)
	# Their processes are gone: the events go too.
	for e in A:t_exec A:t_heap B:t_lock A:t_io; do
		ours disable-event -u -s "soak${e%%:*}" -c chan "${e#*:}"
	done

	# How many functions the events cover, counted before pgbench runs: the
	# time until its end is the soak's.
	nfuncs="$(for p in 'Exec*' 'heap_*' 'LWLock*'; do
		"$LTTNG" -n list -u --path "$POSTGRES" --functions "$p" | tail -n +2; done | wc -l) postgres functions and $(for p in '*write*' 'recv*' '*time*' 'str*' 'epoll_*'; do
		"$LTTNG" -n list -u --path "$LIBC" --functions "$p" | tail -n +2; done | sort -u | wc -l) libc functions"
	# The soak's pgbench, paced; its backends (new: forked probed) get
	# libc probes by pid, once the last run's are gone.
	for i in $(seq 3000); do
		[ -z "$(pg_backends)" ] && break
		sleep 0.1
	done
	t0=$(date +%s)
	pgbench_run -c "$PG_CLIENTS" -j 2 -T "$((SOAK + PG_MARGIN))" -R "$PG_RATE" -P 5 -n \
		>"$d/pgbench-soak" 2>&1 &
	load=$!
	STARTED="$STARTED $load"
	for i in $(seq 3000); do
		backends=$(pg_backends | tr '\n' ' ')
		[ "$(wc -w <<<"$backends")" -ge "$PG_CLIENTS" ] && break
		kill -0 "$load" 2>/dev/null || break
		sleep 0.1
	done
	n=$(wc -w <<<"$backends")
	[ "$n" -ge "$PG_CLIENTS" ]
	tap_ok $? "postgres: the $PG_CLIENTS backends of pgbench's connections run ($backends)" || return 1
	bl=$(tr ' ' ',' <<<"$backends" | sed 's/,$//')
	local more="A a_heap --path $POSTGRES --pid $bl --function heap_*
A a_off --path $POSTGRES --pid $bl --probe LWLockAcquire$off
A a_io --path $LIBC --pid $bl --function *write*
A a_recv --path $LIBC --pid $bl --function recv*
B b_exec --path $POSTGRES --pid ${backends%% *} --function Exec*
B b_time --path $LIBC --pid $bl --function *time*
B b_str --path $LIBC --pid $bl --function str*
B b_epoll --path $LIBC --pid $bl --function epoll_*"
	EVENTS="$EVENTS
$more"
	for n in $(awk '{ print $2 }' <<<"$more"); do
		enable_event "$n"
		tap_ok $? "postgres: enable-event $(event_line "$n")" || tap_diag "$out"
	done
	for n in "A a_heap -t regs" "A a_off -t reg:rdi -t backtrace" \
		"B b_exec -t backtrace -t reg:rsi" "B b_time -t regs" \
		"B b_epoll -t regs -t hex64:env:environ"; do
		read -r s e ctx <<<"$n"
		# shellcheck disable=SC2086
		ours add-context -u -s "soak$s" -c chan -e "$e" $ctx
		tap_ok $? "postgres: add-context -s soak$s -e $e $ctx" || tap_diag "$out"
	done
	tap_diag "postgres: $(grep -c . <<<"$EVENTS") events over $nfuncs"

	disable_all
	tap_ok $? "postgres: every event disabled" || tap_diag "$out"
	snapshot warm
	enable_all
	tap_ok $? "postgres: every event enabled again" || tap_diag "$out"
	# SOAK seconds of churn, cut short if pgbench's end comes near.
	t1=$(date +%s)
	i=$((t1 + SOAK))
	[ "$i" -le $((t0 + SOAK + PG_MARGIN - PG_CHECKS)) ] || i=$((t0 + SOAK + PG_MARGIN - PG_CHECKS))
	churn "$i" "$load"
	t1=$(($(date +%s) - t1))
	tap_ok "$CHURN_FAIL" "postgres: $CYCLES enable/disable cycles while pgbench ran, none failed"
	disable_all
	tap_ok $? "postgres: every event disabled at the end" || tap_diag "$out"
	wx_scan
	tap_ok "$WX_BAD" "postgres: no page writable and executable at once in any process, $WX_SAMPLES samples"
	# Not a check (the machine's load decides): without its backends, the
	# checks below see the postmaster's processes only.
	kill -0 "$load" 2>/dev/null ||
		tap_diag "postgres: pgbench ended before the checks: they see the postmaster's processes only (SOAK_PG_MARGIN=$PG_MARGIN s)"
	snapshot end
	check_text
	check_leaks
	check_counts

	wait "$load"
	tap_ok $? "postgres: pgbench of the soak exits 0" || tail -n 20 "$d/pgbench-soak" | sed 's/^/# /'
	pgbench_ok "$d/pgbench-soak"
	tap_ok $? "postgres: pgbench of the soak, no failed transaction ($(pgbench_tx "$d/pgbench-soak") transactions)" ||
		tap_diag_file "$d/pgbench-soak"
	# TPC-B's sums: every update of pgbench's transactions, all of them.
	sums=$(psql_value "SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' ||
		(SELECT sum(bbalance) FROM pgbench_branches) || ' ' ||
		(SELECT sum(tbalance) FROM pgbench_tellers) || ' ' ||
		(SELECT coalesce(sum(delta), 0) FROM pgbench_history) || ' ' ||
		(SELECT count(*) FROM pgbench_history)")
	read -r a b c h cnt <<<"$sums"
	[ -n "$a" ] && [ "$a" = "$b" ] && [ "$b" = "$c" ] && [ "$c" = "$h" ] &&
		[ "$cnt" -eq $(($(pgbench_tx "$d/pgbench-base") + $(pgbench_tx "$d/pgbench-probed") + $(pgbench_tx "$d/pgbench-soak"))) ]
	tap_ok $? "postgres: accounts, branches, tellers and history agree, one history row per transaction ($sums)"
	[ "$(tr ' ' '\n' <<<"$pids_before" | grep . | sort)" = \
		"$(comm -12 <(tr ' ' '\n' <<<"$pids_before" | grep . | sort) <(server_pids | sort))" ]
	tap_ok $? "postgres: the same postmaster and auxiliary processes run ($pids_before)"
	! grep -Eq 'terminated by signal|PANIC|was terminated|server process .* exited with exit code [1-9]' "$d/postgres.log"
	tap_ok $? "postgres: no crash in its log" ||
		grep -E 'signal|PANIC|terminated|exit code' "$d/postgres.log" | head | sed 's/^/# /'
	tap_diag "postgres figures: churn $t1 s, $(($(pgbench_tx "$d/pgbench-base") + $(pgbench_tx "$d/pgbench-probed") + $(pgbench_tx "$d/pgbench-soak"))) transactions ($(pgbench_tx "$d/pgbench-soak") in the soak's run, paced at $PG_RATE tps), $(grep -Eo '^number of failed transactions: [0-9]+' "$d"/pgbench-* | awk '{ s += $NF } END { print s + 0 }') failed, $CYCLES enable/disable cycles, hits $HITS, recorded $RECORDED, recursions $RECURSIONS, traced $TRACED, discarded $DISCARDED"
	tap_diag "postgres throughput: $tps0 tps without probes, $tps1 tps with 4 events (Exec*, heap_*, LWLock*, libc's *write*) on its backends: ratio $(ratio "$tps1" "$tps0") (pgbench -c $PG_CLIENTS -j 2: $PG_BASE_TX transactions per client without, and the progress after the probes of a second run with)"
	as_pg "$PGBIN/pg_ctl" -D "$d/data" -m fast -w -t 60 stop >>"$d/pgctl.log" 2>&1
	dp_stop_pid "$SERVER_PID"
}
