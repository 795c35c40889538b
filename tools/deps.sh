#!/usr/bin/env bash
# Installs every build and test dependency of lttng-dynprobe with apt-get.
# Idempotent: prints nothing and touches nothing when all are present.
set -euo pipefail

packages=(
	# build
	build-essential autoconf automake libtool pkg-config
	liblttng-ctl-dev liblttng-ust-dev liburcu-dev libelf-dev libdw-dev libpopt-dev
	libunwind-dev libiberty-dev
	# run-time companions
	lttng-tools
	# tests
	libzydis-dev babeltrace2 systemtap-sdt-dev valgrind libssl3 libstdc++6 gawk
	# the patch-everything test runs these (tests/engine)
	gzip sqlite3 libsqlite3-0 openssl zlib1g-dev
	# a Rust program probed by its names (tests/cli/test-rust.sh)
	rustc
	# DWARF: libc's from its debug package, and elfutils' debuginfod client
	# (tests/cli/test-dwarf-*.sh, test-vars.sh)
	libc6-dbg libdebuginfod1
	# a busy interpreter attached by pid (tests/daemon/test-busy.sh); the
	# SDT probes of real programs (tests/cli/test-sdt-real.sh): CPython's
	# (python3.11, and libpython3.11 for a program linked to it),
	# libstdc++'s and PostgreSQL's (postgresql-15, below)
	python3 python3.11 libpython3.11
	# --mi xml and saved sessions checked with an XML parser (tests/cli)
	libxml2-utils xsltproc
	# the soak (tests/soak): real servers under their load generators
	# (pgbench, initdb and postgres come with postgresql-15 on Debian 12)
	nginx-light wrk postgresql-15
	# the private session daemon harness (tests/utils/sessiond.sh): unshare
	# and setpriv, useradd for the unprivileged test user, ip for loopback
	util-linux passwd iproute2
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]}" >&2
	echo "deps.sh: run as root, or: sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
