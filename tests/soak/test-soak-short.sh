#!/bin/bash
# The soak of make check: soak.sh, short (6 s of churn per server, 2 s
# throughput windows, pgbench's soak run 30 s beyond).  A long soak is run
# by hand: tests/soak/soak.sh 300.
export SOAK_WINDOW=2 SOAK_PG_MARGIN=30 SOAK_PG_CHECKS=20 SOAK_PG_SETUP=12
exec bash "$top_srcdir/tests/soak/soak.sh" 6
