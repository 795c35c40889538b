# TAP output for shell tests run by automake's tap-driver.sh (sourced, bash).
# The plan is printed at the end by tap_done, so it is always the number of
# checks actually made.
#
#   tap_ok STATUS DESCRIPTION    STATUS 0 passes (pass $? or a test's result)
#   tap_check DESCRIPTION CMD... runs CMD; passes if it exits 0
#   tap_diag LINE...             comment lines; tap_diag_file FILE: a file's
#   tap_bail REASON              "Bail out!" and exit
#   tap_done                     prints the plan; exits 1 if anything failed
#                                (first, if sessiond.sh is sourced: a check
#                                of every trace's last read, bt_reads_check)

tap_count=0
tap_failed=0

tap_ok() {
	local status=$1
	shift
	tap_count=$((tap_count + 1))
	if [ "$status" -eq 0 ]; then
		echo "ok $tap_count - $*"
	else
		echo "not ok $tap_count - $*"
		tap_failed=$((tap_failed + 1))
	fi
	return "$status"
}

tap_check() {
	local desc=$1
	shift
	"$@"
	tap_ok $? "$desc"
}

tap_diag() {
	printf '%s\n' "$@" | sed 's/^/# /'
}

tap_diag_file() {
	[ -f "$1" ] && sed 's/^/# /' "$1"
	return 0
}

tap_bail() {
	echo "Bail out! $*"
	exit 1
}

tap_done() {
	# Checks the test's helpers make at its end (sessiond.sh: trace reads).
	declare -F bt_reads_check >/dev/null && bt_reads_check
	echo "1..$tap_count"
	[ "$tap_failed" -eq 0 ]
	exit $?
}
