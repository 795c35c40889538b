#!/bin/bash
# --mi xml of the extended commands: enable-event, add-context,
# disable-event, list SESSION, list -u, list --sites and trace give one
# well-formed document on stdout (xmllint), with the stock elements where
# they fit and ours (namespace urn:lttng-dynprobe:mi:1) holding the probe's
# spec, contexts and processes; without our elements, every document but
# trace's (no stock command) is valid against the stock schema
# lttng-mi-4.1.xsd of lttng-tools 2.13 when it is installed (Debian does
# not ship it: LTTNG_MI_XSD names it).  Stock MI passes through unchanged.
. "$top_srcdir/tests/utils/tap.sh"
. "$top_srcdir/tests/utils/sessiond.sh"
. "$top_srcdir/tests/cli/cli.sh"
dp_isolate "$0" "$@"
command -v xmllint >/dev/null || tap_bail "xmllint is missing (libxml2-utils, tools/deps.sh)"
command -v xsltproc >/dev/null || tap_bail "xsltproc is missing (tools/deps.sh)"
cli_setup

XSD=${LTTNG_MI_XSD:-}
for f in /usr/share/xml/lttng/lttng-mi-4.1.xsd /usr/local/share/xml/lttng/lttng-mi-4.1.xsd; do
	[ -z "$XSD" ] && [ -f "$f" ] && XSD=$f
done
[ -n "$XSD" ] || tap_diag "no lttng-mi-4.1.xsd here (LTTNG_MI_XSD): documents are checked by XPath only"
NS='urn:lttng-dynprobe:mi:1'

# xpath DOC EXPR: the value of EXPR in DOC (lttng's namespace is l:, ours dp:).
xpath() {
	xmllint --xpath "$2" - <<<"$1" 2>/dev/null
}
XL='//*[local-name()'

# mi_check DESC DOC [nostock]: well-formed, and stock-valid once ours is removed.
# The stock add-context writes <success> in each <context>, which its own
# schema does not allow: that element of the stock document is not held
# against us.
mi_check() {
	local desc=$1 doc=$2 stripped
	xmllint --noout - <<<"$doc" 2>"$DP_TMP/xmlerr"
	tap_ok $? "$desc: well-formed XML" || { tap_diag_file "$DP_TMP/xmlerr"; tap_diag "$doc"; }
	[ "${3:-}" = nostock ] && return
	# The schema check is an extra, run where the schema is at hand: Debian
	# does not ship it, and the XPath checks below hold the stock elements'
	# names, order and values either way.
	[ -n "$XSD" ] || return 0
	stripped=$(xsltproc "$top_srcdir/tests/cli/mi-strip.xsl" - <<<"$doc" |
		sed -E 's#(<symbol>[^<]*</symbol>)<success>[a-z]+</success>#\1#g')
	xmllint --noout --schema "$XSD" - <<<"$stripped" 2>"$DP_TMP/xmlerr"
	tap_ok $? "$desc: valid against $(basename "$XSD") without our elements" ||
		{ tap_diag_file "$DP_TMP/xmlerr"; tap_diag "$stripped"; }
}

"$STOCK" -n create s --output="$DP_TMP/t" >/dev/null || tap_bail "create s"
"$LTTNG" enable-event -u -s s --path "$TARGET" --function foo warmup >/dev/null 2>&1 ||
	tap_bail "the daemon did not start"
LD_PRELOAD=$LTTNG_DYNPROBE_AGENT "$TARGET" --loop &
pid=$!
wait_sites s "$pid" || tap_bail "warmup never installed in $pid"

doc=$("$LTTNG" -n --mi xml enable-event -u -s s --path "$TARGET" --pid "$pid" --probe foo zp \
	--filter 'edi >= 0' 2>"$DP_TMP/err")
tap_ok $? "enable-event --mi xml exits 0" || tap_diag_file "$DP_TMP/err"
mi_check "enable-event" "$doc"
[ "$(xpath "$doc" "string($XL='command']/*[local-name()='success'])")" = true ] &&
	[ "$(xpath "$doc" "string($XL='events']/*[local-name()='event']/*[local-name()='name'])")" = dynprobe:zp ] &&
	[ "$(xpath "$doc" "string($XL='event']/*[local-name()='filter_expression'])")" = 'edi >= 0' ]
tap_ok $? "enable-event: a stock <event> dynprobe:zp, its filter, success" || tap_diag "$doc"
[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='location'])")" = foo ] &&
	[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='pids']/*)")" = "$pid" ] &&
	[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='process']/*[local-name()='jump'])")" -ge 1 ]
tap_ok $? "enable-event: dp:location, dp:pids and the process's jump sites" || tap_diag "$doc"
[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='follow_exec'])")" = false ]
tap_ok $? "enable-event: dp:follow_exec false without --follow-exec" || tap_diag "$doc"

doc=$("$LTTNG" -n --mi xml add-context -u -s s -e zp -t reg:edi -t vpid 2>"$DP_TMP/err")
tap_ok $? "add-context --mi xml (dynamic and standard types) exits 0" || tap_diag_file "$DP_TMP/err"
mi_check "add-context" "$doc"
[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='context']/*[local-name()='type'])")" = reg:edi ] &&
	[ "$(xpath "$doc" "string($XL='context' and namespace-uri()!='$NS']/*[local-name()='type'])")" = VPID ]
tap_ok $? "add-context: dp:context reg:edi and the stock <context> VPID" || tap_diag "$doc"

for args in "list s" "list -u"; do
	doc=$("$LTTNG" -n --mi xml $args 2>"$DP_TMP/err")
	tap_ok $? "$args --mi xml exits 0" || tap_diag_file "$DP_TMP/err"
	mi_check "$args" "$doc"
	names=$(xpath "$doc" "//*[namespace-uri()='$NS' and local-name()='event']/*[local-name()='name']/text()" | sort | tr '\n' ' ')
	[ "$names" = "warmup zp " ] &&
		[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='event'][*[local-name()='name']='zp']/*[local-name()='contexts']/*)")" = reg:edi ]
	tap_ok $? "$args: the dynamic events warmup and zp, zp's context reg:edi" || tap_diag "$doc"
done
# The stock part of list s is the stock document's.
ours=$(xsltproc "$top_srcdir/tests/cli/mi-strip.xsl" - <<<"$("$LTTNG" -n --mi xml list s 2>/dev/null)" |
	xmllint --c14n - 2>/dev/null)
stock=$("$STOCK" -n --mi xml list s 2>/dev/null | xmllint --c14n - 2>/dev/null)
[ -n "$stock" ] && [ "$ours" = "$stock" ]
tap_ok $? "list s: without our elements, the stock document"
doc=$("$LTTNG" -n --mi xml enable-event -u -s s --path "$TARGET" --pid "$pid" --probe foo zf \
	--follow-exec 2>"$DP_TMP/err")
tap_ok $? "enable-event --follow-exec --mi xml exits 0" || tap_diag_file "$DP_TMP/err"
mi_check "enable-event --follow-exec" "$doc"
[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='follow_exec'])")" = true ]
tap_ok $? "enable-event: dp:follow_exec true with --follow-exec" || tap_diag "$doc"
doc=$("$LTTNG" -n --mi xml list s 2>/dev/null)
[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='event'][*[local-name()='name']='zf']/*[local-name()='follow_exec'])")" = true ] &&
	[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='event'][*[local-name()='name']='zp']/*[local-name()='follow_exec'])")" = false ]
tap_ok $? "list s: dp:follow_exec true for zf, false for zp" || tap_diag "$doc"

doc=$("$LTTNG" --mi xml list -u --path "$TARGET" --sites foo 2>"$DP_TMP/err")
tap_ok $? "list --sites --mi xml exits 0" || tap_diag_file "$DP_TMP/err"
mi_check "list --sites" "$doc"
n=$(xpath "$doc" "count(//*[namespace-uri()='$NS' and local-name()='site'])")
text=$("$LTTNG" list -u --path "$TARGET" --sites foo 2>/dev/null | grep -c '^  +0x')
[ "$n" -ge 1 ] && [ "$n" = "$text" ] &&
	[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='site'][1]/*[local-name()='method'])")" != "" ]
tap_ok $? "list --sites: one dp:site per instruction ($n, the text has $text), with its method"

doc=$("$LTTNG" -n --mi xml disable-event -u -s s zp,nosuch 2>"$DP_TMP/err")
mi_check "disable-event of a dynamic and a stock name" "$doc"
[ "$(xpath "$doc" "string($XL='event'][*[local-name()='name']='dynprobe:zp']/*[local-name()='enabled'])")" = false ] &&
	[ "$(xpath "$doc" "count($XL='event'][*[local-name()='name']='nosuch'])")" = 1 ]
tap_ok $? "disable-event: dynprobe:zp disabled, the stock answer for nosuch in the same <events>" ||
	tap_diag "$doc"
doc=$("$LTTNG" -n --mi xml disable-event -u -s s -a 2>"$DP_TMP/err")
tap_ok $? "disable-event -a --mi xml exits 0" || tap_diag_file "$DP_TMP/err"
mi_check "disable-event -a" "$doc"
"$LTTNG" -n list s 2>&1 | grep -q "process $pid: [1-9][0-9]* site"
tap_ok $((!$?)) "disable-event -a --mi xml took the probes out"
kill "$pid"
wait "$pid" 2>/dev/null

doc=$(printf '1\n2\n' | "$LTTNG" --mi xml trace -s tr -o "$DP_TMP/tr" --path "$TARGET" --function foo -- "$TARGET" 3 \
	2>"$DP_TMP/err")
status=$?
[ "$status" -eq 3 ]
tap_ok $? "trace --mi xml exits with the command's code (3, got $status)" || tap_diag_file "$DP_TMP/err"
mi_check "trace" "$doc" nostock
[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='exit_code'])")" = 3 ] &&
	[ "$(xpath "$doc" "string(//*[namespace-uri()='$NS' and local-name()='trace_directory'])")" = "$DP_TMP/tr" ] &&
	[ -n "$(bt_text "$DP_TMP/tr" 2>/dev/null | grep 'foo_entry')" ]
tap_ok $? "trace: dp:exit_code, dp:trace_directory, and the trace holds foo_entry" || tap_diag "$doc"

# Other MI than xml is refused, as the stock lttng does.
run_cli --mi json enable-event -u -s s --path "$TARGET" --probe foo j
[ "$status" -eq 1 ] && grep -q "only one is --mi xml" <<<"$err"
tap_ok $? "--mi json refused: $err"
DP_DAEMON_RUNS=1
tap_done
