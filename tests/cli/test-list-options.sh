#!/bin/bash
# --list-options of every extended command, and --list-commands, for shell
# completion: the stock lttng's lines first, unchanged, then ours in the
# same format (`--long`, then `-s` for a short name), none twice, and no
# option of another command's (add-context takes no --python).
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/cli/cli.sh"

# check CMD EXPECTED...: ours starts with the stock list and adds EXPECTED.
check() {
	local cmd=$1 ours stock added ok=0
	shift
	ours=$("$LTTNG" $cmd 2>&1)
	tap_ok $? "lttng $cmd exits 0"
	stock=$("$STOCK" $cmd 2>/dev/null) || stock=
	[ "${ours:0:${#stock}}" = "$stock" ]
	tap_ok $? "lttng $cmd: the stock lines first, unchanged" || tap_diag "$ours"
	added=$(tail -n +$(($(grep -c . <<<"$stock") + 1)) <<<"$ours" | tr '\n' ' ')
	[ -z "$stock" ] && added=$(tr '\n' ' ' <<<"$ours")
	[ "$added" = "$* " ] || [ "$added$*" = "" ]
	tap_ok $? "lttng $cmd adds: $*" || tap_diag "added: $added"
	! grep -qvE '^(--[a-z][a-z0-9-]*|-[a-zA-Z]|[a-z][a-z-]*)$' <<<"$ours" &&
		[ -z "$(sort <<<"$ours" | uniq -d)" ]
	tap_ok $? "lttng $cmd: one option or command a line, none twice"
}

check "enable-event --list-options" --copies --sdt --path --pid --follow-exec
check "disable-event --list-options"
check "add-context --list-options" --event -e
check "list --list-options" --path --sites --functions --sdt --lines --inlines --vars
check "trace --list-options" --command -c --session -s --output -o --path --probe --function --copies \
	--sdt --type -t --no-view --follow-exec --help -h --list-options
check "save --list-options"
check "load --list-options"
check "--list-commands" trace
"$LTTNG" add-context --list-options | grep -qx -- --python
tap_ok $((!$?)) "add-context lists no --python (the stock one takes none)"
tap_done
