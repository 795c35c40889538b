#!/bin/bash
# The table of README.md (issue 13's items and the tests that prove them)
# holds: items 1 to 9 each have a test, every test listed exists, and its
# folder's Makefile.am lists it in TESTS, so that `make check` runs it.
. "$top_srcdir/tests/utils/tap.sh"

readme=$top_srcdir/tests/regression/README.md
[ -f "$readme" ] || tap_bail "no $readme"

# The table's rows: "ITEM FILE".
rows=$(sed -nE 's/^\| *([0-9]+|all) *\| *(tests\/[^ |]+) *\|.*/\1 \2/p' "$readme")
[ -n "$rows" ]
tap_ok $? "README.md has a table of items and tests ($(wc -l <<<"$rows") rows)"

for item in 1 2 3 4 5 6 7 8 9; do
	n=$(awk -v i="$item" '$1 == i' <<<"$rows" | wc -l)
	[ "$n" -gt 0 ]
	tap_ok $? "item $item has a test ($n)"
done

# tests_of DIR: the words of DIR/Makefile.am's TESTS (continued lines too).
tests_of() {
	awk '/^TESTS[ \t]*[+]?=/ { on = 1; sub(/^TESTS[ \t]*[+]?=/, "") }
	     on { cont = sub(/\\$/, ""); print; if (!cont) on = 0 }' "$top_srcdir/$1/Makefile.am" |
		tr -s ' \t' '\n\n' | sed '/^$/d'
}

while read -r item file; do
	dir=${file%/*}
	name=${file##*/}
	[ -f "$top_srcdir/$file" ]
	tap_ok $? "item $item: $file exists"
	tests_of "$dir" | grep -qxF "$name"
	tap_ok $? "item $item: $dir/Makefile.am runs $name (TESTS)"
done <<<"$(sort -u <<<"$rows")"
tap_done
