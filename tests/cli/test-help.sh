#!/bin/bash
# --help of each extended command, and `lttng help COMMAND`, show our man
# page; other commands' help is the stock one's.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/cli/cli.sh"
export MANWIDTH=80 MANPAGER=cat PAGER=cat

for pair in enable-event:LTTNG-DYNPROBE-ENABLE-EVENT add-context:LTTNG-DYNPROBE-ADD-CONTEXT \
	list:LTTNG-DYNPROBE-LIST trace:LTTNG-TRACE; do
	cmd=${pair%%:*} title=${pair#*:}
	"$LTTNG" "$cmd" --help 2>&1 | grep -q "^$title(1)"
	tap_ok $? "lttng $cmd --help shows $title(1)"
	"$LTTNG" help "$cmd" 2>&1 | grep -q "^$title(1)"
	tap_ok $? "lttng help $cmd shows $title(1)"
done
"$LTTNG" enable-event -u --path /usr/bin/ls --probe main -h 2>&1 | grep -q "^LTTNG-DYNPROBE-ENABLE-EVENT(1)"
tap_ok $? "-h among other options shows the page too"
[ "$("$LTTNG" help start 2>&1)" = "$("$STOCK" help start 2>&1)" ]
tap_ok $? "lttng help start is the stock page"
man -l "$top_srcdir/doc/man/lttng-dynprobe.7" 2>&1 | grep -q "_NAME_error"
tap_ok $? "lttng-dynprobe(7) documents the error fields"
tap_done
