#!/bin/bash
# What an agent's HELLO reports is checked before root's daemon acts on it.
# Root's app socket is open to every user, and the daemon restores the
# patches no event claims by writing their original bytes at their sites:
# a made-up report (dpforge, run as the unprivileged test user) must never
# make it write anything but the process's own file bytes, in the process's
# own file code, in a process that still runs as the user who connected.
# Each case checks the daemon's exact refusal and that the claimed site
# still holds what it held before; a true report is still restored to the
# file's bytes.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
dp_isolate "$0" "$@"
. "$top_srcdir/tests/daemon/common.sh"
trap dpd_cleanup EXIT

[ "$(id -u)" -eq 0 ] || tap_bail "test-claims.sh needs root (root's daemon, another user)"
dp_test_user || tap_bail "cannot create the test user $DP_TEST_USER"
USER_ID=$(id -u "$DP_TEST_USER")
RUN=$(dpd_run_dir)
SOCK=$RUN/dynprobe-app.sock

# The forger where the test user may run it, and a set-user-ID copy of
# sleep(1) to execute.
pub=$DP_TMP/pub
mkdir -p "$pub" && chmod 0755 "$pub" && cp "$builddir/dpforge" "$pub/dpforge" &&
	cp "$(command -v sleep)" "$pub/suid-sleep" && chown root:root "$pub/suid-sleep" &&
	chmod 4755 "$pub/suid-sleep" && chmod a+rx "$pub/dpforge" ||
	tap_bail "cannot copy the programs to $pub"
FORGE=$pub/dpforge
asuser=(setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups)

start_dynprobed || tap_bail "no lttng-dynprobed: $(cat "$DP_TMP/dynprobed.start")"

# forge NAME MODE [PROG...]: dpforge as the test user; its pid in fpid,
# its claimed site, the bytes there and its trampoline in site, len,
# before, tramp.
forge() {
	local name=$1 i
	shift
	"${asuser[@]}" "$FORGE" "$SOCK" "$@" >"$DP_TMP/$name.out" 2>&1 &
	fpid=$!
	DP_TARGETS="$DP_TARGETS $fpid"
	for i in $(seq 600); do
		grep -q '^claim' "$DP_TMP/$name.out" && break
		sleep 0.05
	done
	read -r _ site len before tramp < <(grep '^claim' "$DP_TMP/$name.out")
	[ -n "$before" ]
}

# untouched: the claimed site holds what it held before the HELLO, and
# nothing was restored in the process.
untouched() {
	[ "$(site_bytes "$fpid" "$site" "$len")" = "$before" ] &&
		! grep -q "process $fpid: the patch at $site .*is removed" "$DP_TMP/dynprobed.log"
}

# refused NAME MODE REASON: a made-up patch the daemon ignores, saying why
# (REASON's SITE and TRAMP: the claim's).
refused() {
	local name=$1 mode=$2 reason=$3
	forge "$name" "$mode" || tap_bail "$name: dpforge did not start: $(cat "$DP_TMP/$name.out")"
	said "$name" '^go$'
	tap_ok $? "$name: the daemon answered the HELLO and said GO (its recovery done)"
	reason=${reason//SITE/$site}
	reason=${reason//TRAMP/$tramp}
	grep -qF "process $fpid: its agent reports a patch at $site that cannot be: $reason; ignored, nothing is written there" \
		"$DP_TMP/dynprobed.log"
	tap_ok $? "$name: refused: $(grep -o "process $fpid: its agent reports.*" "$DP_TMP/dynprobed.log" | head -n1)"
	untouched
	tap_ok $? "$name: the site $site still holds $before"
	kill -TERM "$fpid"
	wait "$fpid" 2>/dev/null
}

refused anon anon "its site SITE lies in an executable mapping (anonymous), not in the code of a file"
refused noexec noexec "its site SITE lies in a non-executable mapping ($FORGE), not in the code of a file"
refused bytes bytes "the original bytes it gives for its site SITE are not those of $FORGE there"
refused wrong wrong "the code at SITE is neither a jump (its trampoline: TRAMP) nor its original bytes"

# A true report: the jump is there, its original bytes are the file's.
# No event claims it: the daemon restores it, and tells the agent.
forge real real || tap_bail "real: dpforge did not start: $(cat "$DP_TMP/real.out")"
said real "^removed $site\$" && said real '^go$'
tap_ok $? "real: the daemon restored the true patch and told the agent (NOTE_REMOVED $site), then GO"
grep -q "process $fpid: the patch at $site (dynprobe:forged) no event claims is removed" \
	"$DP_TMP/dynprobed.log" &&
	[ "$(site_bytes "$fpid" "$site" "$len")" = \
		"$(file_bytes "$FORGE" "$(sym_vaddr "$FORGE" forge_site)" "$len")" ] &&
	[ "$(site_bytes "$fpid" "$site" "$len")" != "$before" ]
tap_ok $? "real: the site now holds the file's bytes ($(site_bytes "$fpid" "$site" "$len"), the jump was $before)"
kill -TERM "$fpid"
wait "$fpid" 2>/dev/null

# The same true report from a process that made itself not dumpable (as
# a server's worker is once it changed user): served all the same, and
# restored to its file's bytes, nothing else.
forge nodump nodump || tap_bail "nodump: dpforge did not start: $(cat "$DP_TMP/nodump.out")"
said nodump "^removed $site\$" && said nodump '^go$' &&
	[ "$(site_bytes "$fpid" "$site" "$len")" = \
		"$(file_bytes "$FORGE" "$(sym_vaddr "$FORGE" forge_site)" "$len")" ]
tap_ok $? "nodump: a process that is not dumpable is served; its true patch is restored to the file's bytes ($(site_bytes "$fpid" "$site" "$len"))"
kill -TERM "$fpid"
wait "$fpid" 2>/dev/null

# A process that connects, sends its report, then executes a set-user-ID
# program keeping the connection: by the time the daemon reads the HELLO
# (it is stopped meanwhile), the process runs as root.
kill -STOP "$DPD_PID"
forge setuid setuid "$pub/suid-sleep" 60 || tap_bail "setuid: dpforge did not start: $(cat "$DP_TMP/setuid.out")"
for i in $(seq 600); do
	grep -q "^Uid:[[:space:]]*$USER_ID[[:space:]]*0[[:space:]]*0" /proc/"$fpid"/status && break
	sleep 0.05
done
grep -q "^Uid:[[:space:]]*$USER_ID[[:space:]]*0[[:space:]]*0" /proc/"$fpid"/status
tap_ok $? "setuid: process $fpid runs the set-user-ID program: $(grep '^Uid' /proc/"$fpid"/status | tr '\t' ' ')"
kill -CONT "$DPD_PID"
msg="agent of pid $fpid (uid $USER_ID) refused: process $fpid runs as uids $USER_ID/0/0 (real/effective/saved), not as uid $USER_ID alone: it runs a set-user-ID program, which only root may probe"
logged "$(printf '%s' "$msg" | sed 's/[][().*+?^$|/\\]/\\&/g')"
tap_ok $? "setuid: $msg"
! grep -q "process $fpid: the patch at" "$DP_TMP/dynprobed.log" && kill -0 "$fpid"
tap_ok $? "setuid: nothing of process $fpid was restored, and it runs on"
kill -KILL "$fpid"
wait "$fpid" 2>/dev/null

# A true report accepted, then the process executes a set-user-ID program
# before the daemon restores the patch (the daemon stopped once the HELLO
# is read): the daemon sees, with the process held, that it runs another
# program, and writes nothing.
stop_dynprobed || tap_bail "the daemon does not stop"
start_dynprobed --test-fault hello:stop || tap_bail "no lttng-dynprobed with --test-fault"
forge exec exec "$pub/suid-sleep" 60 || tap_bail "exec: dpforge did not start: $(cat "$DP_TMP/exec.out")"
stopped_at hello
grep -q "process $fpid: recovered 1 patches" "$DP_TMP/dynprobed.log"
tap_ok $? "exec: the true report is taken, the daemon stopped before restoring it"
kill -USR1 "$fpid"
for i in $(seq 600); do
	grep -q "^Uid:[[:space:]]*$USER_ID[[:space:]]*0[[:space:]]*0" /proc/"$fpid"/status && break
	sleep 0.05
done
grep -q "^Uid:[[:space:]]*$USER_ID[[:space:]]*0[[:space:]]*0" /proc/"$fpid"/status
tap_ok $? "exec: process $fpid now runs the set-user-ID program"
# What the new program holds where the report said (maybe nothing).
new_before=$(site_bytes "$fpid" "$site" "$len")
kill -CONT "$DPD_PID"
msg="process $fpid executed another program during the operation: the patches went with the old one, nothing was written"
logged "$msg"
tap_ok $? "exec: $msg"
[ "$(site_bytes "$fpid" "$site" "$len")" = "$new_before" ] &&
	! grep -q "cannot restore" "$DP_TMP/dynprobed.log" && kill -0 "$fpid"
tap_ok $? "exec: nothing was written in it (${new_before:-unmapped} at $site), and it runs on"
kill -KILL "$fpid"
wait "$fpid" 2>/dev/null

dpctl ping && stop_dynprobed
tap_ok $? "the daemon answers and exits on SIGTERM"
DP_TARGETS=
tap_done
