#!/bin/bash
# An agent that never answers but keeps talking (dpstall: a MAPPED every
# 2 s, each well inside the daemon's 5 s read timeout) cannot hold its
# process, the daemon or its exit forever: the daemon's call (LIST_WRITES
# while its HELLO is served, or GO after it) ends by its one deadline, the
# log says so, others are served meanwhile, and SIGTERM during such a call
# still ends the daemon.  A daemon stopped during such a call (its machine
# stopped) is not charged the time it could not run.
#
# Then another user floods root's app socket with large HELLOs (dpstall
# flood: NFLOOD connections of 17 MB each, kept open): the frames a
# user's connections and jobs hold stay within 64 MiB, so the daemon's peak
# resident memory (VmHWM) stays under a generous bound, while root is
# served.
#
# The bounds below only catch a hang (a call that every MAPPED renews
# never ends): they are no speed goal.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap 'kill_stallers; dpd_cleanup' EXIT

PIE=$builddir/target-pie
LEN=64
RUN=$(dpd_run_dir)
INTERVAL_MS=2000
HANG_S=60
STALLERS=

kill_stallers() {
	local s
	for s in $STALLERS; do
		kill -KILL "$s" 2>/dev/null
		wait "$s" 2>/dev/null
	done
	STALLERS=
}

# logged_since MARK REGEX [S]: REGEX in the daemon's log after its first
# MARK lines (the log is appended to by each daemon the test starts).
logged_since() {
	local i
	for i in $(seq $((${3:-30} * 10 + 1))); do
		tail -n +"$(($1 + 1))" "$DP_TMP/dynprobed.log" | grep -qE -- "$2" && return 0
		sleep 0.1
	done
	return 1
}

# slow_enable STEP: a daemon started with --test-fault STEP:sleep, an
# ENABLE of dp_work in process $b sent in the background (its pid in
# SLOW), and the daemon's word that it sleeps at STEP; MARK the log's
# length before.
slow_enable() {
	MARK=$(wc -l <"$DP_TMP/dynprobed.log")
	start_dynprobed --test-fault "$1:sleep" || tap_bail "lttng-dynprobed does not start again"
	dpctl enable s channel0 slow probe dp_work "$PIE" -p "$b" >/dev/null &
	SLOW=$!
	logged_since "$MARK" "test fault: sleeping 3 s at step $1" 60
}

# stall NAME: a dpstall connected to the daemon; its pid in SPID.
stall() {
	"$builddir/dpstall" "$RUN/dynprobe-app.sock" "$INTERVAL_MS" >"$DP_TMP/$1.out" 2>&1 &
	SPID=$!
	STALLERS="$STALLERS $SPID"
}

start_sessiond || tap_bail "no session daemon"
dp_lttng create s --output="$DP_TMP/trace-s" >/dev/null &&
	dp_lttng enable-event -u -s s "dynprobe:*" >/dev/null &&
	dp_lttng start s >/dev/null || tap_bail "cannot create session s"
start_target b "$PIE" "$DP_SHM/shm-b" 2 5 1000 || tap_bail "the target does not start"
b=$TARGET_PID
start_dynprobed || tap_bail "lttng-dynprobed does not start: $(cat "$DP_TMP/dynprobed.start")"

# The PING goes as soon as the call is made: the call has 5 s.  On a
# machine too busy to serve the PING within them, the try is run again with
# a new staller; a daemon that serves nothing while the call waits fails
# every try.
for try in 1 2 3; do
	stall one
	one=$SPID
	said one "^request "
	st=$?
	dpctl ping && out_has "pid=$DPD_PID " && ! grep -q "^closed" "$DP_TMP/one.out"
	pinged=$?
	[ "$st" -ne 0 ] || [ "$pinged" -eq 0 ] || ! grep -q "^closed" "$DP_TMP/one.out" && break
	tap_diag "try $try: the call ended before the PING was answered ($(tr "\n" " " <"$DP_TMP/out"))"
done
[ "$st" -eq 0 ] && said one "^mapped 1"
st=$?
tap_diag "$(tr "\n" " " <"$DP_TMP/one.out")"
(exit $st)
tap_ok $? "the stalling agent (pid $one) got $(awk '/^request/ { print $2; exit }' "$DP_TMP/one.out") and, not answering, sends MAPPED every $INTERVAL_MS ms"

(exit $pinged)
tap_ok $? "PING answers while the call to it waits"
dpctl enable s channel0 ok probe dp_work "$PIE" -p "$b" && out_has "^proc pid=$b status=0" &&
	dpctl disable s channel0 ok && same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "ENABLE and DISABLE in process $b work meanwhile"

said one "^closed" "$HANG_S"
tap_ok $? "the daemon closed the connection within $HANG_S s, after $(grep -c '^mapped' "$DP_TMP/one.out") MAPPED"
logged "the agent of process $one did not answer [A-Z_]+ within 5000 ms: connection closed"
tap_ok $? "the log says why: $(grep -m1 "process $one did not answer" "$DP_TMP/dynprobed.log" | cut -c1-160)"
dpctl ping && out_has "pid=$DPD_PID "
tap_ok $? "the daemon serves on"

# SIGTERM while a second one stalls a call: the daemon waits for the call
# in flight, which ends by its deadline, then exits.
stall two
two=$SPID
said two "^mapped 1"
tap_ok $? "a second stalling agent (pid $two) stalls a call"
t0=$(date +%s%N)
kill -TERM "$DPD_PID"
for i in $(seq $((HANG_S * 10))); do
	kill -0 "$DPD_PID" 2>/dev/null || break
	sleep 0.1
done
! kill -0 "$DPD_PID" 2>/dev/null
tap_ok $? "SIGTERM during that call: the daemon exits (after $((($(date +%s%N) - t0) / 1000000)) ms; it sent $(grep -c '^mapped' "$DP_TMP/two.out") MAPPED)"
kill -0 "$DPD_PID" 2>/dev/null || DPD_PID=
kill_stallers

# ---- the machine stops during a call --------------------------------------
# The daemon is stopped (SIGSTOP) for STOP_MS while its call to a stalling
# agent waits, as when its machine stops: the time it could not run is not
# charged to the agent (deadline.h).  The call still ends by its 5 s
# deadline, counted in the daemon's running time, not at once on waking.
STOP_MS=7000
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
stall three
three=$SPID
said three "^request "
st=$?
t_stop=$(date +%s%N)
kill -STOP "$DPD_PID"
sleep $((STOP_MS / 1000))
kill -CONT "$DPD_PID"
stopped=$((($(date +%s%N) - t_stop) / 1000000))
[ "$st" -eq 0 ] && said three "^closed" "$HANG_S"
at() { awk -v w="$1" '$1 == w { for (i = 2; i <= NF; i++) if ($i ~ /^at=/) { print substr($i, 4); exit } }' "$DP_TMP/three.out"; }
ran=$(($(at closed) - $(at request) - stopped))
[ "$st" -eq 0 ] && [ "$ran" -ge 2500 ] && [ "$ran" -le $((HANG_S * 1000)) ]
tap_ok $? "the daemon stopped $stopped ms during its call to a stalling agent (pid $three): the call ended after $ran ms of running time (its deadline: 5000 ms), not on waking"
dpctl ping && out_has "pid=$DPD_PID "
tap_ok $? "the daemon serves on"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"
kill_stallers

# ---- an agent's connection kept across exec --------------------------------
# dpforge says HELLO (a true claim, restored by the daemon), then on SIGUSR1
# executes the target, its connection open across exec: the daemon must
# not take the old program's connection for the new one's agent.
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
"$builddir/dpforge" "$RUN/dynprobe-app.sock" exec "$PIE" "$DP_SHM/shm-x" 2 5 1000 \
	>"$DP_TMP/x.out" 2>&1 &
x=$!
DP_TARGETS="$DP_TARGETS $x"
said x "^go"
tap_ok $? "a process (pid $x) said HELLO and got GO"
kill -USR1 "$x"
said x "^ready"
tap_ok $? "it executed the target, the connection kept open: $(readlink /proc/"$x"/exe)"
dpctl enable s channel0 xe probe dp_work "$PIE" -p "$x" && out_has "^proc pid=$x status=0" &&
	! same_as_file "$x" "$PIE" dp_work
tap_ok $? "ENABLE in it injects an agent into the new program and installs: $(grep -m1 '^proc' "$DP_TMP/out")"
seen s dynprobe:xe
tap_ok $? "its events are recorded: $(count dynprobe:xe)"
dpctl disable s channel0 xe && same_as_file "$x" "$PIE" dp_work "$LEN"
tap_ok $? "DISABLE: dp_work holds the file's $LEN bytes again"
kill -TERM "$x"
wait "$x"
tap_ok $? "the target computed right throughout: $(tail -n1 "$DP_TMP/x.out")"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"

# ---- a flood of large HELLOs from another user ---------------------------
NFLOOD=64
# A daemon that holds the frames of queued HELLOs uncounted holds NFLOOD of
# them (1.1 GB); one that counts them, three at a time.  The bound leaves
# room for a sanitized build's quarantine.
BOUND_KB=$((768 * 1024))
if [ "$(id -u)" -ne 0 ]; then
	tap_diag "not root: the flood from another user was not run"
elif ! dp_test_user; then
	tap_bail "cannot create the test user $DP_TEST_USER"
else
	pub=$DP_TMP/pub
	mkdir -p "$pub" && chmod 0755 "$pub" && cp "$builddir/dpstall" "$pub/dpstall" &&
		chmod a+rx "$pub/dpstall" || tap_bail "cannot copy dpstall to $pub"
	start_dynprobed || tap_bail "lttng-dynprobed does not start again"
	kb() { awk -v k="$1:" '$1 == k { print $2 }' /proc/"$DPD_PID"/status; }
	before=$(kb VmHWM)
	setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
		"$pub/dpstall" "$RUN/dynprobe-app.sock" flood "$NFLOOD" >"$DP_TMP/flood.out" 2>&1 &
	flooder=$!
	said flood "^frame"
	tap_ok $? "$DP_TEST_USER floods root's app socket: $NFLOOD HELLOs of $(awk '/^frame/ { print $2 }' "$DP_TMP/flood.out") bytes"
	dpctl ping && out_has "pid=$DPD_PID " &&
		dpctl enable s channel0 fl probe dp_work "$PIE" -p "$b" &&
		out_has "^proc pid=$b status=0" && dpctl disable s channel0 fl &&
		same_as_file "$b" "$PIE" dp_work "$LEN"
	tap_ok $? "root is served meanwhile (PING, ENABLE and DISABLE in process $b; the flood: $(tail -n1 "$DP_TMP/flood.out"))"
	wait "$flooder"
	tap_ok $? "the flood ends: $(tail -n1 "$DP_TMP/flood.out")"
	hwm=$(kb VmHWM)
	[ -n "$hwm" ] && [ "$hwm" -le "$BOUND_KB" ]
	tap_ok $? "the daemon's peak resident memory stays bounded: VmHWM $hwm kB (before the flood $before kB, bound $BOUND_KB kB), VmRSS now $(kb VmRSS) kB"
	dpctl ping && out_has "pid=$DPD_PID "
	tap_ok $? "the daemon serves on"
	stop_dynprobed
	tap_ok $? "SIGTERM: the daemon exits"
fi

# ---- the state lock held up: the log says so, and where ------------------
# --test-fault install:sleep: the worker that begins an install sleeps 3 s
# there, holding the state lock.  The health thread says so while it lasts
# (with the kernel's word on where that thread waits), the worker once it
# goes on; the loop, which never waits for the lock, is not held up.
slow_enable install
mark=$MARK slow=$SLOW
tap_ok $? "an install holds the state lock 3 s (test fault)"
dpctl ping && out_has "pid=$DPD_PID "
tap_ok $? "PING answers meanwhile"
logged_since "$mark" "the state lock is held up: [0-9]+ ms in [A-Za-z_ ]+ \(thread [0-9]+, state S, waiting in the kernel at [a-z_]*sleep" 60
tap_ok $? "the health thread says who holds the state lock and where it waits: $(grep -m1 "state lock is held up" "$DP_TMP/dynprobed.log" | cut -d: -f4- | cut -c1-200)"
wait "$slow"
tap_ok $? "the ENABLE is served after the sleep"
logged_since "$mark" "the state lock went on after [0-9]+ ms taken by [A-Za-z_ ]+"
tap_ok $? "the log says how long: $(grep -m1 "state lock went on after" "$DP_TMP/dynprobed.log" | cut -d: -f4-)"
! logged_since "$mark" "the loop is held up" 0
tap_ok $? "the loop was never held up"
dpctl disable s channel0 slow && same_as_file "$b" "$PIE" dp_work "$LEN"
tap_ok $? "DISABLE: dp_work holds the file's $LEN bytes again"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"

# --test-fault accept:sleep: the loop sleeps 3 s once it accepted a client
# (as if the kernel held it up): the health thread says where the loop is
# and where the other threads wait; the PING is answered afterwards.
mark=$(wc -l <"$DP_TMP/dynprobed.log")
start_dynprobed --test-fault accept:sleep || tap_bail "lttng-dynprobed does not start again"
t0=$(date +%s%N)
dpctl ping && out_has "pid=$DPD_PID "
st=$?
t1=$(date +%s%N)
[ "$st" -eq 0 ] && [ $(((t1 - t0) / 1000000)) -ge 2900 ]
tap_ok $? "a PING that reaches a held-up loop is answered once it goes on ($(((t1 - t0) / 1000000)) ms)"
logged_since "$mark" "the loop is held up: [0-9]+ ms in accepting connections \(thread [0-9]+, state S, waiting in the kernel at [a-z_]*sleep"
tap_ok $? "the health thread says where the loop is: $(grep "the loop is held up" "$DP_TMP/dynprobed.log" | tail -n1 | cut -d: -f4- | cut -c1-160)"
logged_since "$mark" "its other threads \(thread, state, kernel wait\): [0-9]+ [A-Z] "
tap_ok $? "and where the other threads wait: $(grep "its other threads" "$DP_TMP/dynprobed.log" | tail -n1 | cut -d: -f4- | cut -c1-160)"
logged_since "$mark" "the loop went on after [0-9]+ ms in accepting connections"
tap_ok $? "and how long it was held up"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"

# --test-fault stopping:sleep: the worker about to stop the threads of the
# process it writes into sleeps 3 s there, as a stop that a loaded machine
# makes slow: it does so without the state lock, so a request on another
# process goes through meanwhile.
start_target c "$PIE" "$DP_SHM/shm-c" 2 5 1000 || tap_bail "the second target does not start"
c=$TARGET_PID
slow_enable stopping
mark=$MARK slow=$SLOW
tap_ok $? "the write into process $b sleeps 3 s before its threads are stopped (test fault)"
t0=$(date +%s%N)
dpctl enable s channel0 other probe dp_work "$PIE" -p "$c" && out_has "^proc pid=$c status=0"
st=$?
t1=$(date +%s%N)
kill -0 "$slow" 2>/dev/null && [ "$st" -eq 0 ]
tap_ok $? "meanwhile an ENABLE in process $c is served ($(((t1 - t0) / 1000000)) ms), the first one still waiting"
wait "$slow"
tap_ok $? "then the first ENABLE is served"
! logged_since "$mark" "the state lock is held up" 0
tap_ok $? "the state lock was never held up"
dpctl disable s channel0 slow && dpctl disable s channel0 other &&
	same_as_file "$b" "$PIE" dp_work "$LEN" && same_as_file "$c" "$PIE" dp_work "$LEN"
tap_ok $? "DISABLE both: dp_work holds the file's $LEN bytes again in both"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"
kill -TERM "$c"
wait "$c"
tap_ok $? "target $c computed right throughout: $(tail -n1 "$DP_TMP/c.out")"

# A context added while a process's start installs the event (an install
# that pins the event but does not hold it): ADD_CONTEXT's removal passes
# that process by (nothing installed yet), its install finds the event
# installed already; the start's install sees the new field layout and
# puts the probes in again, so the process records the new field too.
# (stopping:sleep: the start's write waits 3 s, the state lock let go.)
mark=$(wc -l <"$DP_TMP/dynprobed.log")
start_dynprobed --test-fault stopping:sleep || tap_bail "lttng-dynprobed does not start again"
LATE=$DP_TMP/late-pie
cp "$PIE" "$LATE" || tap_bail "cannot copy $PIE"
dpctl enable s channel0 late probe dp_work "$LATE"
tap_ok $? "an event by path, no process maps it yet: $(grep -m1 . "$DP_TMP/out")"
# Not start_target: the program waits for its install (GO) to be ready.
env LD_PRELOAD="$AGENT" "$LATE" "$DP_SHM/shm-d" 2 5 1000 >"$DP_TMP/d.out" 2>&1 &
d=$!
DP_TARGETS="$DP_TARGETS $d"
logged_since "$mark" "test fault: sleeping 3 s at step stopping" 60
tap_ok $? "process $d starts with the agent: its install waits before its write"
dpctl add-context s channel0 late reg:rbx
tap_ok $? "ADD_CONTEXT reg:rbx meanwhile: $(head -n1 "$DP_TMP/out")"
logged "process $d: dynprobe:late got contexts while it was installed there: installed again"
tap_ok $? "the start's install saw the new layout and installed again"
seen s
before=$(grep "^dynprobe:late:" "$DP_TMP/events" | grep -c "rbx = ")
seen s "dynprobe:late>$(count dynprobe:late)"
after=$(grep "^dynprobe:late:" "$DP_TMP/events" | grep -c "rbx = ")
[ "$after" -gt "$before" ]
tap_ok $? "process $d records the new field: $before, then $after events with rbx ($(grep "^dynprobe:late:" "$DP_TMP/events" | tail -n1))"
dpctl disable s channel0 late && same_as_file "$d" "$LATE" dp_work "$LEN"
tap_ok $? "DISABLE: dp_work holds the file's $LEN bytes again"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"
kill -TERM "$d"
wait "$d"
tap_ok $? "target $d computed right throughout: $(tail -n1 "$DP_TMP/d.out")"

# ---- a client gone before its request is read ----------------------------
# The daemon stopped (as by a machine that stalls longer than the client's
# call), an ENABLE sent, its client killed: the daemon, continued, finds a
# whole request whose client has closed.  It must not be done: its client
# was told it failed.
start_dynprobed || tap_bail "lttng-dynprobed does not start again"
kill -STOP "$DPD_PID"
"$DPCTL" enable s channel0 gone probe dp_work "$PIE" -p "$b" >"$DP_TMP/gone.out" 2>&1 &
gone=$!
sleep 0.5
kill -KILL "$gone"
wait "$gone" 2>/dev/null
kill -CONT "$DPD_PID"
logged "client pid $gone closed its connection before its request was read: not served"
st=$?
dpctl list s
! grep -q "event=gone " "$DP_TMP/out" && same_as_file "$b" "$PIE" dp_work "$LEN" && (exit $st)
tap_ok $? "a request whose client closed before it was read is not served: no event, dp_work untouched ($(grep -m1 "client pid $gone closed" "$DP_TMP/dynprobed.log" | cut -c1-140))"
stop_dynprobed
tap_ok $? "SIGTERM: the daemon exits"

kill -TERM "$b"
wait "$b"
tap_ok $? "target $b computed right throughout: $(tail -n1 "$DP_TMP/b.out")"
tap_done
