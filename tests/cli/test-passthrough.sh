#!/bin/bash
# Our lttng hands every command it does not extend to the stock lttng: the
# same command lines, run once through each against a private session
# daemon, give the same stdout, stderr and exit code, step by step.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
start_sessiond || tap_bail "no session daemon"

trace=$DP_TMP/trace-s
steps=(
	"version"
	"list"
	"create s --output=$trace"
	"list"
	"enable-channel -u c0 -s s"
	"enable-event -u -a -s s -c c0"
	"enable-event -u app:* -s s -c c0 --filter x>1"
	"add-context -u -t vpid -t procname -s s -c c0"
	"enable-event -u ev1,ev2 -s s -c c0"
	"disable-event -u ev1 -s s -c c0"
	"list s"
	"list s -u"
	"start s"
	"status"
	"stop s"
	"view s"
	"disable-event -u -a -s s -c c0"
	"destroy s"
	"list"
	"destroy nosuch"
	"list -k"
	"bogus-command"
	"enable-event --bogus-option"
	"add-context -u -t nosuchtype -s nosuch"
	# Commands and options of ours are added (test-list-options.sh), but
	# not here: disable-event and destroy take none of ours.
	"disable-event --list-options"
	"destroy --list-options"
)

# One full pass with the given CLI; each step's output in $1/N.{out,err,rc}.
pass() {
	local cli=$1 dir=$2 i=0 step
	mkdir -p "$dir"
	for step in "${steps[@]}"; do
		# Word splitting is wanted: the steps hold no quoted spaces.
		# shellcheck disable=SC2086
		"$cli" --no-sessiond $step >"$dir/$i.out" 2>"$dir/$i.err"
		echo $? >"$dir/$i.rc"
		# babeltrace2's log lines start with a time and its pid; lttng
		# prints a dot for each wait while a session is destroyed.
		sed -Ei 's/^[0-9-]+ [0-9:.]+ +[0-9]+ +[0-9]+ //' "$dir/$i.err"
		sed -Ei 's/^(Destroying session .*[^.])\.+$/\1.../' "$dir/$i.out"
		i=$((i + 1))
	done
	"$STOCK" --no-sessiond destroy --all >/dev/null 2>&1
	rm -rf "$trace"
}

pass "$LTTNG" "$DP_TMP/ours"
pass "$STOCK" "$DP_TMP/stock"

for i in "${!steps[@]}"; do
	ok=0
	for f in out err rc; do
		cmp -s "$DP_TMP/ours/$i.$f" "$DP_TMP/stock/$i.$f" || ok=1
	done
	tap_ok "$ok" "lttng ${steps[$i]}: same output and exit code ($(cat "$DP_TMP/stock/$i.rc"))"
	if [ "$ok" -ne 0 ]; then
		for f in out err rc; do
			diff "$DP_TMP/stock/$i.$f" "$DP_TMP/ours/$i.$f" | sed 's/^/# /'
		done
	fi
done

# Without any general option and without a command, too.
tap_ok "$([ "$("$LTTNG" 2>&1; echo $?)" = "$("$STOCK" 2>&1; echo $?)" ]; echo $?)" \
	"lttng alone: same usage and exit code"

# The stock lttng is found through the environment first.
out=$(LTTNG_DYNPROBE_STOCK_LTTNG=/nonexistent "$LTTNG" version 2>&1)
grep -q "^Error: cannot run the stock lttng /nonexistent" <<<"$out"
tap_ok $? "LTTNG_DYNPROBE_STOCK_LTTNG names the stock lttng"
out=$(LTTNG_DYNPROBE_STOCK_LTTNG=$LTTNG "$LTTNG" version 2>&1)
grep -q "^Error: the stock lttng .* is this program" <<<"$out"
tap_ok $? "our lttng refuses to run itself as the stock one"
tap_done
