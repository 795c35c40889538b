# Sourced by the --attach-exec tests after tap.sh and sessiond.sh: root
# only, re-run in a private mount namespace (the connector speaks of the
# initial pid and network namespaces only), with private tmpfs over
# /var/run/lttng and /dev/shm, its own LTTNG_HOME, common.sh, and the CLI's
# environment.
[ "$(id -u)" -eq 0 ] || tap_bail "--attach-exec is root's: run this test as root"
if [ -z "${DP_ATTACH_ISOLATED:-}" ]; then
	DP_ATTACH_ISOLATED=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
mkdir -p /var/run/lttng &&
	mount -t tmpfs -o mode=0755 dp-lttng-run /var/run/lttng &&
	mount -t tmpfs -o mode=1777 dp-shm /dev/shm ||
	tap_bail "cannot mount private tmpfs on /var/run/lttng and /dev/shm"
DP_TMP=$(mktemp -d "${TMPDIR:-/tmp}/dp-test.XXXXXX") || tap_bail "mktemp failed"
chmod 0755 "$DP_TMP"
export LTTNG_HOME=$DP_TMP/home
mkdir -p "$LTTNG_HOME"
export HOME=$LTTNG_HOME
export LTTNG_UST_REGISTER_TIMEOUT=${LTTNG_UST_REGISTER_TIMEOUT:-5000}
. "$top_srcdir/tests/daemon/common.sh"

LTTNG=$abs_top_builddir/src/bin/lttng/lttng
export LTTNG_DYNPROBE_STOCK_LTTNG=${STOCK:-/usr/bin/lttng}
export LTTNG_DYNPROBE_AGENT=$AGENT
export LTTNG_DYNPROBE_DAEMON=$DPD
