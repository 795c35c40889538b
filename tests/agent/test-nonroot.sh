#!/bin/bash
# The harness and the runtime classes as an unprivileged user: run as root,
# the script re-runs itself as the system user `dptest` (created if missing),
# whose session daemon and applications meet under a private LTTNG_HOME, no
# namespace needed; run as any other user, it runs as that user.  The build
# tree must be readable and searchable by that user (o+rx on every directory
# from / down); when it is not, a copy of the test and its programs runs
# from a readable temp dir (a diagnostic line says so).

. "${top_srcdir:-../..}/tests/agent/common.sh" || { echo "Bail out! tests/agent/common.sh not found (set top_srcdir)"; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
	dp_test_user || tap_bail "cannot create the test user $DP_TEST_USER"
	# Everything the user will run or read, checked as that user.
	if ! setpriv --reuid="$DP_TEST_USER" --regid="$DP_TEST_USER" --clear-groups \
		sh -c 'for f; do test -r "$f" || exit 1; done; test -x "$1"' sh \
		"$EMIT" "$NOTIFY_WAIT" "$top_srcdir/tests/utils/tap.sh" \
		"$top_srcdir/tests/utils/sessiond.sh" "$top_srcdir/tests/agent/common.sh" "$0"; then
		# A tree under a private directory: run a copy from a readable one.
		stage=$(mktemp -d "${TMPDIR:-/tmp}/dp-nonroot.XXXXXX") || tap_bail "mktemp failed"
		chmod 0755 "$stage"
		mkdir -p "$stage/tests/utils" "$stage/tests/agent"
		cp "$top_srcdir/tests/utils/tap.sh" "$top_srcdir/tests/utils/sessiond.sh" \
			"$stage/tests/utils/" &&
			cp "$top_srcdir/tests/agent/common.sh" "$0" "$EMIT" "$NOTIFY_WAIT" \
				"$stage/tests/agent/" || tap_bail "cannot copy the test to $stage"
		chmod -R a+rX "$stage"
		tap_diag "$DP_TEST_USER cannot read the build tree (every directory from / down" \
			"needs o+rx): running a copy of this test from $stage"
		top_srcdir=$stage top_builddir=$stage setpriv --reuid="$DP_TEST_USER" \
			--regid="$DP_TEST_USER" --clear-groups \
			bash "$stage/tests/agent/$(basename "$0")" "$@"
		status=$?
		rm -rf "$stage"
		exit "$status"
	fi
	dp_run_as_test_user "$0" "$@"
fi

dp_isolate "$0" "$@"
uid=$(id -u)
tap_check "running as an unprivileged user ($(id -un), uid $uid)" [ "$uid" -ne 0 ]
start_sessiond
tap_ok $? "a private session daemon starts for this user"
tap_check "its sockets are under the private LTTNG_HOME" \
	[ -S "$LTTNG_HOME/.lttng/client-lttng-sessiond" ]

dp_lttng create user --output="$DP_TMP/trace" &&
	dp_lttng enable-event -u 'dptest:*' &&
	dp_lttng add-context -u -t vuid -t vpid &&
	dp_lttng start || tap_bail "cannot set up the session"
"$EMIT" types >"$DP_TMP/emit.out" 2>&1
tap_ok $? "events-emit types runs" || tap_diag_file "$DP_TMP/emit.out"
timeout -s KILL 60 "$EMIT" fork >>"$DP_TMP/emit.out" 2>&1
tap_ok $? "events-emit fork runs" || tap_diag_file "$DP_TMP/emit.out"
read -r _ parent _ child < <(grep '^parent ' "$DP_TMP/emit.out")
dp_lttng stop && dp_lttng destroy

bt_text "$DP_TMP/trace" >"$DP_TMP/events"
tap_check "two dptest:types events recorded" \
	[ "$(grep -c '^dptest:types: ' "$DP_TMP/events")" -eq 2 ]
tap_check "every event carries the user's vuid" \
	[ "$(grep -c "{ vuid = $uid, vpid = [0-9]* }" "$DP_TMP/events")" -eq "$(wc -l <"$DP_TMP/events")" ]
tap_check "the forked child records with its own vpid" \
	[ "$(grep -c "vpid = $child }, { pid = $child, who = \"child\" }" "$DP_TMP/events")" -eq 3 ]
tap_check "the parent's events carry the parent's vpid" \
	[ "$(grep -c "vpid = $parent }, { pid = $parent, who = \"parent" "$DP_TMP/events")" -eq 2 ]

tap_done
