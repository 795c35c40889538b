# Shared by the agent's shell tests (sourced): TAP output, the private
# session daemon harness, and the test programs' paths.
: "${top_srcdir:=../..}"
: "${top_builddir:=../..}"
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"

agent_tests=$(cd "$top_builddir/tests/agent" && pwd)
EMIT=$agent_tests/events-emit
NOTIFY_WAIT=$agent_tests/notify-wait
[ -x "$EMIT" ] && [ -x "$NOTIFY_WAIT" ] || tap_bail "test programs not built in $agent_tests"
