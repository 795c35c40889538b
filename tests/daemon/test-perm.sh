#!/bin/bash
# No user probes a process they could not trace.  A user's daemon (run as
# the unprivileged test user) refuses, with the rule that says no: another
# user's process, a set-user-ID program, a set-group-ID program, a process
# that made itself not dumpable, and (where the kernel has yama) a
# process that is not a descendant under ptrace_scope 1; its user's own
# plain process is probed.  Then a process in a container (its own pid and
# mount namespaces, unshare -pmf --mount-proc) probed by root's daemon by
# its host pid: --path names the file as the process sees it (through
# /proc/PID/root), which may not exist on the host or be another file
# there; a host path of the same file works too.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap 'st=$?; restore_yama; (exit $st); dpd_cleanup' EXIT

[ "$(id -u)" -eq 0 ] || tap_bail "test-perm.sh needs root (another user, containers)"
dp_test_user || tap_bail "cannot create the test user $DP_TEST_USER"
USER_ID=$(id -u "$DP_TEST_USER")
GROUP_ID=$(id -g "$DP_TEST_USER")
PIE=$builddir/target-pie
LEN=64
YAMA=/proc/sys/kernel/yama/ptrace_scope
yama_was=

restore_yama() {
	[ -n "$yama_was" ] && echo "$yama_was" >"$YAMA"
	yama_was=
}

# The programs where the test user may run them: the target, the agent,
# and set-user-ID and set-group-ID copies of sleep(1).
pub=$DP_TMP/pub
mkdir -p "$pub" && chmod 0755 "$pub" && cp "$PIE" "$pub/target-pie" &&
	cp "$(realpath "$AGENT")" "$pub/liblttng-ust-dynprobe.so" &&
	cp "$(command -v sleep)" "$pub/suid-sleep" && cp "$(command -v sleep)" "$pub/sgid-sleep" &&
	chown root:root "$pub/suid-sleep" "$pub/sgid-sleep" && chmod a+rx "$pub"/* &&
	chmod 4755 "$pub/suid-sleep" && chmod 2755 "$pub/sgid-sleep" ||
	tap_bail "cannot copy the programs to $pub"
uhome=$DP_TMP/uhome
mkdir -p "$uhome" && chown "$DP_TEST_USER" "$uhome" || tap_bail "no home for the test user"
asuser() {
	setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
		env HOME="$uhome" LTTNG_HOME="$uhome" "$@"
}
# The same in a background subshell, which it replaces: $! is the process.
bgasuser() {
	exec setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
		env HOME="$uhome" LTTNG_HOME="$uhome" "$@"
}

# ---- a user's daemon ----
asuser "$DPD" --daemonize -vv --log "$uhome/dynprobed.log" --agent "$pub/liblttng-ust-dynprobe.so" \
	--poll-ms 0 >"$DP_TMP/user-start" 2>&1 || tap_bail "no daemon of the test user: $(cat "$DP_TMP/user-start")"
upid=$(cat "$uhome/.lttng/lttng-dynprobed.pid")
DP_TARGETS="$DP_TARGETS $upid"

# uenable NAME PID: the test user probes dp_work's entry in PID (its
# reply in $DP_TMP/out).
uenable() {
	asuser "$DPCTL" enable s channel0 "$1" probe dp_work "$pub/target-pie" -p "$2" >"$DP_TMP/out" 2>&1
}

# urefused CASE PID MESSAGE: the test user's request is refused with
# exactly MESSAGE, and the process is left as it was.
urefused() {
	local name=$1 pid=$2 msg=$3
	uenable "$name" "$pid"
	[ $? -eq 1 ] && grep -qxF "status=-1 message=$msg" "$DP_TMP/out"
	tap_ok $? "$name: refused: $(head -n1 "$DP_TMP/out")"
	! grep -q liblttng-ust-dynprobe "/proc/$pid/maps"
	tap_ok $? "$name: process $pid was left alone (no agent in it)"
}

start_target root-target "$pub/target-pie" "$DP_SHM/shm-root" 2 5 1000 ||
	tap_bail "the root target does not start"
urefused other-user "$TARGET_PID" \
	"process $TARGET_PID belongs to root (uid 0), not to you ($DP_TEST_USER (uid $USER_ID)): only its owner or root may probe it"

bgasuser "$pub/suid-sleep" 600 &
sp=$!
DP_TARGETS="$DP_TARGETS $sp"
for i in $(seq 600); do
	grep -q "^Uid:[[:space:]]*$USER_ID[[:space:]]*0" /proc/"$sp"/status && break
	sleep 0.05
done
urefused setuid "$sp" \
	"process $sp runs as uids $USER_ID/0/0 (real/effective/saved), not as uid $USER_ID alone: it runs a set-user-ID program, which only root may probe"

bgasuser "$pub/sgid-sleep" 600 &
gp=$!
DP_TARGETS="$DP_TARGETS $gp"
for i in $(seq 600); do
	grep -q "^Gid:[[:space:]]*$GROUP_ID[[:space:]]*0" /proc/"$gp"/status && break
	sleep 0.05
done
urefused setgid "$gp" \
	"process $gp runs as gids $GROUP_ID/0/0 (real/effective/saved), not as gid $GROUP_ID alone: it runs a set-group-ID program, which only root may probe"

start_target nodump bgasuser env DP_TARGET_NODUMP=1 "$pub/target-pie" "$DP_SHM/u-nodump" 2 5 1000 ||
	tap_bail "the non-dumpable target does not start"
nd=$(sed -n 's/^ready \([0-9]*\) .*/\1/p' "$DP_TMP/nodump.out")
urefused nodump "$nd" \
	"process $nd is not dumpable (prctl(PR_SET_DUMPABLE, 0), or it changed credentials): only root may probe it"

start_target own bgasuser "$pub/target-pie" "$DP_SHM/u-own" 2 5 1000 ||
	tap_bail "the test user's target does not start"
own=$(sed -n 's/^ready \([0-9]*\) .*/\1/p' "$DP_TMP/own.out")
if [ -e "$YAMA" ] && yama_was=$(cat "$YAMA") && echo 1 >"$YAMA" 2>/dev/null; then
	urefused yama1 "$own" \
		"cannot load the agent into process $own: cannot trace pid $own: yama ptrace_scope is 1 (a process may only trace its descendants, unless the target allows it with prctl(PR_SET_PTRACER)) and pid $own is not a descendant of this process; run as root (CAP_SYS_PTRACE), have the program call PR_SET_PTRACER, or set kernel.yama.ptrace_scope to 0"
	restore_yama
else
	yama_was=
	tap_diag "this kernel has no yama (or it cannot be set): ptrace_scope's refusals are checked by tests/procctl/test-refuse only"
fi
uenable mine "$own" && grep -q "^proc pid=$own status=0 " "$DP_TMP/out" &&
	! same_as_file "$own" "$pub/target-pie" dp_work
tap_ok $? "the test user's own process is probed: $(grep -m1 '^proc' "$DP_TMP/out")"
asuser "$DPCTL" disable s channel0 mine >"$DP_TMP/out" 2>&1 && same_as_file "$own" "$pub/target-pie" dp_work "$LEN"
tap_ok $? "and restored to its file's bytes"
kill -TERM "$upid"

# ---- a container, probed by root's daemon by its host pid ----
# In its mount namespace a tmpfs hides the host's $DP_TMP/ctr, where the
# host has another program under the same name.
start_sessiond || tap_bail "no session daemon"
start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"
# The session exists from the start: the daemon removes the events of a
# session the session daemon does not have (its poll), and a loaded machine
# can make the checks below outlast a poll period.
dp_lttng create one --output="$DP_TMP/trace-one" >/dev/null || tap_bail "cannot create session one"
ctr=$DP_TMP/ctr
mkdir -p "$ctr" && cp "$builddir/target-nopie" "$ctr/target" || tap_bail "cannot make $ctr"
start_target ctr unshare -pmf --mount-proc --propagation private sh -c \
	"mount -t tmpfs dp-ctr '$ctr' && cp '$PIE' '$ctr/target' && ln '$ctr/target' '$ctr/alias' && '$ctr/target' '$DP_SHM/shm-ctr' 4 5 1000 & wait" ||
	tap_bail "the container's target does not start: $(cat "$DP_TMP/ctr.out")"
cp=
for i in $(seq 600); do
	for f in /proc/[0-9]*/status; do
		grep -q '^Name:[[:space:]]*target$' "$f" 2>/dev/null &&
			grep -qE '^NSpid:[[:space:]]*[0-9]+[[:space:]]+[0-9]+$' "$f" 2>/dev/null &&
			cp=$(awk '$1 == "NSpid:" { print $2 }' "$f") && break
	done
	[ -n "$cp" ] && break
	sleep 0.05
done
nspid=$(sed -n 's/^ready \([0-9]*\) .*/\1/p' "$DP_TMP/ctr.out")
[ -n "$cp" ] && [ "$cp" != "$nspid" ] && [ "$(readlink /proc/"$cp"/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]
tap_ok $? "a target in a container: host pid $cp, pid $nspid in its namespace, another mount namespace"
inside=/proc/$cp/root$ctr/target
# cbytes: dp_work's LEN bytes in the container's target; fbytes: its file's.
vaddr=$(sym_vaddr "$inside" dp_work)
first=$(readelf -lW "$inside" | awk '$1 == "LOAD" { print $3; exit }')
start=$(awk -v p="$ctr/target" '$6 == p && $3 == "00000000" { split($1, a, "-"); print a[1]; exit }' \
	/proc/"$cp"/maps)
cbytes() {
	site_bytes "$cp" $((0x$start - (first & ~0xfff) + vaddr)) "$LEN"
}
fbytes=$(file_bytes "$inside" "$vaddr" "$LEN")
[ -n "$start" ] && [ "$(cbytes)" = "$fbytes" ] && ! cmp -s "$inside" "$ctr/target"
tap_ok $? "its program is not the host's file of the same name"

dpctl enable one channel0 inner function dp_work "$ctr/target" -p "$cp" &&
	out_has "^proc pid=$cp status=0 jump=2 " && [ "$(cbytes)" != "$fbytes" ]
tap_ok $? "--path as the container sees it: probed through /proc/$cp/root: $(grep -m1 '^proc' "$DP_TMP/out") $(grep -m1 'method=refused' "$DP_TMP/out")"
grep -q liblttng-ust-dynprobe /proc/"$cp"/maps && c1=$("$DPCTL" calls "$DP_SHM/shm-ctr") && sleep 0.3 &&
	[ "$("$DPCTL" calls "$DP_SHM/shm-ctr")" -gt "$c1" ]
tap_ok $? "the agent was injected into it, and it runs on"
dpctl disable one channel0 inner && [ "$(cbytes)" = "$fbytes" ]
tap_ok $? "DISABLE restores its file's bytes"
dpctl enable one channel0 outer function dp_work "$inside" -p "$cp" &&
	out_has "^proc pid=$cp status=0 jump=2 int3=1" && [ "$(cbytes)" != "$fbytes" ] &&
	dpctl disable one channel0 outer && [ "$(cbytes)" = "$fbytes" ]
tap_ok $? "the host's path of the same file ($inside) works too, and is restored"
# Through the CLI, which checks the location in the file the process
# sees: a name of it that exists only in the container.
out=$(LTTNG_DYNPROBE_STOCK_LTTNG=$(command -v lttng) "$abs_top_builddir/src/bin/lttng/lttng" \
	enable-event -u -s one --path "$ctr/alias" --pid "$cp" --function dp_work cli 2>&1)
[ $? -eq 0 ] && grep -q "process $cp: [1-9][0-9]* sites by jump" <<<"$out" &&
	[ "$(cbytes)" != "$fbytes" ] && dpctl disable one channel0 cli && [ "$(cbytes)" = "$fbytes" ] &&
	[ ! -e "$ctr/alias" ]
tap_ok $? "lttng enable-event --path $ctr/alias (no such file on the host) --pid $cp: $(tr '\n' ' ' <<<"$out")"
dpctl enable one channel0 none function dp_work "$ctr/nothing" -p "$cp"
[ $? -eq 1 ] && out_has "^status=-2 message=$ctr/nothing exists neither as lttng-dynprobed sees it nor in process $cp's root and mount namespace \\(/proc/$cp/root$ctr/nothing\\)"
tap_ok $? "a path found in neither: $(head -n1 "$DP_TMP/out")"
kill -TERM "$cp"
wait "$TARGET_PID"
grep -q "^calls=[1-9][0-9]* errors=0$" "$DP_TMP/ctr.out"
tap_ok $? "the container's target computed right all along: $(tail -n1 "$DP_TMP/ctr.out")"
DP_TARGETS=
dpctl ping && stop_dynprobed
tap_ok $? "root's daemon answers and exits on SIGTERM"
tap_done
