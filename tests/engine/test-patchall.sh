#!/bin/bash
# Patch everything: real programs run with every function entry and every
# return site of their executable and libraries probed (libdp-patchall.so,
# preloaded), and must behave exactly as without probes: same output bytes,
# same exit status (gzip, python3.11, zlib, sqlite3, openssl, and a stress
# program of our own).  Each run's report must say that calls and returns
# balance, that probes were hit, and, where the program counts its own
# calls, that the probes counted the same number; in libsqlite3 and libc,
# jumps through hops (a jmp rel8 to a jmp rel32 in fill) must be hit too,
# and in libsqlite3 redirects (the branches to a block led to its
# trampoline) and windows holding targets whose branches are led in (also
# in python).
#
# Run by `make check` from tests/engine of the build tree.  TAP; the plan is
# printed at the end, counted.  Set DP_PATCHALL_KEEP=DIR to keep the reports.
set -u

lib=$PWD/.libs/libdp-patchall.so
libdir=/usr/lib/x86_64-linux-gnu
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dp-patchall.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

count=0
failed=0
ok() {
	count=$((count + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $count - $2"
	else
		echo "not ok $count - $2"
		failed=$((failed + 1))
	fi
}
diag() {
	sed 's/^/# /' "$@"
}
finish() {
	echo "1..$count"
	[ "$failed" -eq 0 ]
	exit $?
}

if [ ! -f "$lib" ]; then
	ok 1 "libdp-patchall.so is built ($lib)"
	finish
fi

# Runs a command with the objects $1 patched, the report going to $2.
patched() {
	local objs=$1 report=$2
	shift 2
	LD_PRELOAD=$lib DP_PATCH_ALL=$objs DP_PATCH_ALL_REPORT=$report "$@"
}

# The report's checks: every object analyzed and patched, nothing refused,
# probes hit, calls and returns balanced, main called once.
check_report() {
	local report=$1 what=$2 objs=$3 n

	[ -n "${DP_PATCHALL_KEEP:-}" ] && cp "$report" "$DP_PATCHALL_KEEP/${what// /-}.report"
	n=$(grep -c '^object ' "$report" 2>/dev/null)
	ok $([ "$n" = "$objs" ] && ! grep -q '^  error:' "$report"; echo $?) \
		"$what: report covers the $objs patched objects"
	ok $(grep -q '^verdict: balanced$' "$report"; echo $?) \
		"$what: calls and returns balance in every function"
	ok $(awk '/^  hits / && $2 == 0 { bad = 1 } /^  hits / { seen++ }
		END { exit !(seen && !bad) }' "$report"; echo $?) \
		"$what: every patched object's probes were hit"
	ok $(awk '/^  function main: / { n++; if ($4 != 1) bad = 1 }
		END { exit !(n && !bad) }' "$report"; echo $?) \
		"$what: main was entered exactly once"
	ok $(! grep -q 'install failures' "$report"; echo $?) \
		"$what: every planned patch was installed"
	ok $(! grep -Eq '^  (entries|returns) [0-9]+: .* refused [1-9]' "$report"; echo $?) \
		"$what: no entry or return site refused"
	if grep -q -e FAILED -e 'install failures' -e error: "$report"; then
		diag "$report"
	fi
	grep -e '^object' -e '^  entries [0-9]' -e '^  returns [0-9]' -e '^  hops' -e '^  redirects' -e '^  led' -e '^  int3 hit' \
		-e '^  hits' \
		"$report" | sed 's/^/# /'
}

# Deterministic input: a few MB of text from a seeded generator, words and
# numbers with the repetitiveness of real text.
awk -v seed=20240607 'BEGIN {
	srand(seed)
	split("the of and to in is was for on are with as by at this from or an " \
	      "probe trampoline relocate window jump return site function entry " \
	      "register stack frame branch target offset sqlite gzip deflate", w, " ")
	nw = length(w)
	for (line = 0; line < 60000; line++) {
		s = ""
		n = 5 + int(rand() * 10)
		for (i = 0; i < n; i++) {
			r = rand()
			if (r < 0.1)
				s = s sprintf("%d ", int(rand() * 100000))
			else
				s = s w[1 + int(rand() * rand() * nw)] " "
		}
		print line ": " s
	}
}' > "$tmp/input"
size=$(stat -c %s "$tmp/input")
ok $([ "$size" -gt 2000000 ]; echo $?) "the generated input is a few MB ($size bytes)"

# gzip: the executable patched, compressing and decompressing.
gzip -c -6 < "$tmp/input" > "$tmp/ref.gz"
patched main "$tmp/gzip-c.report" gzip -c -6 < "$tmp/input" > "$tmp/out.gz"
ok $? "gzip: compresses with every function of gzip probed"
ok $(cmp -s "$tmp/ref.gz" "$tmp/out.gz"; echo $?) "gzip: compressed bytes identical to the unpatched run"
check_report "$tmp/gzip-c.report" "gzip -c" 1
patched main "$tmp/gzip-d.report" gzip -d -c < "$tmp/ref.gz" > "$tmp/out"
ok $? "gzip: decompresses with every function of gzip probed"
ok $(cmp -s "$tmp/input" "$tmp/out"; echo $?) "gzip: decompressed bytes identical to the input"
check_report "$tmp/gzip-d.report" "gzip -d" 1

# python3.11: a position-dependent executable (the code addresses it holds
# are plain words, its eval loop dispatches through tables of labels), the
# interpreter patched, running json, hashlib, re and collections code.
py=$(readlink -f /usr/bin/python3)
cat > "$tmp/work.py" <<'EOF'
import collections, hashlib, json, re
d = {str(i): [i, i * i, "x" * (i % 17)] for i in range(20000)}
s = json.dumps(d, sort_keys=True)
c = collections.Counter(re.findall(r"[a-z]+|\d", s[:200000]))
print(hashlib.sha256(s.encode()).hexdigest(), len(s), sorted(c.items())[:5],
      sum(v[1] for v in json.loads(s).values()))
EOF
"$py" "$tmp/work.py" > "$tmp/ref.py" 2>&1
patched main "$tmp/python.report" "$py" "$tmp/work.py" > "$tmp/out.py" 2>&1
ok $? "python: runs with every function of $py probed"
ok $([ -s "$tmp/ref.py" ] && cmp -s "$tmp/ref.py" "$tmp/out.py"; echo $?) \
	"python: output identical to the unpatched run"
check_report "$tmp/python.report" "python" 1
ok $(awk '/^  led windows / && $3 > 0 && $NF > 0 { found = 1 } END { exit !found }' \
	"$tmp/python.report"; echo $?) \
	"python: jumps whose window holds targets, their branches led in, installed and hit"
ok $(awk '/^  inner windows / && $3 > 0 && $NF > 0 { found = 1 } END { exit !found }' \
	"$tmp/python.report"; echo $?) \
	"python: jumps whose window holds a branch to its own instructions, installed and hit"

# The harness's own hard cases: threads, tail calls, longjmp out of deep
# recursion, callbacks from qsort, exit() from three functions deep.
./patchall-stress > "$tmp/ref.stress" 2> "$tmp/ref.stress.err"
patched "main,$libdir/libc.so.6" "$tmp/stress.report" env DP_PATCH_ALL_FUNCS=leaf,dive \
	./patchall-stress > "$tmp/out.stress" 2> "$tmp/out.stress.err"
ok $? "stress: runs with every function of it and of libc probed"
ok $([ -s "$tmp/ref.stress" ] && cmp -s "$tmp/ref.stress" "$tmp/out.stress" &&
     cmp -s "$tmp/ref.stress.err" "$tmp/out.stress.err"; echo $?) \
	"stress: output identical to the unpatched run"
check_report "$tmp/stress.report" "stress" 2
want=$(awk '$1 == "calls" && $2 == "leaf" { print $3 }' "$tmp/out.stress.err")
got=$(awk '$1 == "function" && $2 == "leaf:" { print $4 }' "$tmp/stress.report")
ok $([ -n "$want" ] && [ "$want" = "$got" ]; echo $?) \
	"stress: probes counted leaf called ${got:-?} times from 4 threads, the program says ${want:-?}"
ok $(awk '/^  function dive: / && $4 > 0 && $6 < $4 { found = 1 } END { exit !found }' \
	"$tmp/stress.report"; echo $?) \
	"stress: frames of dive left by longjmp are not counted as returns"
ok $(awk '/^  calls / { for (i = 1; i < NF; i++) { if ($i == "unwound") u = $(i + 1)
	if ($i == "active") a = $(i + 3) } } END { exit !(u > 0 && a >= 3) }' "$tmp/stress.report"; echo $?) \
	"stress: longjmp-unwound frames and frames active at exit() accounted"

# zlib: our small program and libz, both patched; the probes' call counts
# must equal the program's own.
zr=$PWD/zlib-roundtrip
for mode in c d; do
	if [ $mode = c ]; then
		in=$tmp/input args="c 6" fn=deflate
	else
		in=$tmp/ref.z args=d fn=inflate
	fi
	"$zr" $args < "$in" > "$tmp/ref.$mode" 2> "$tmp/ref.$mode.err"
	[ $mode = c ] && cp "$tmp/ref.c" "$tmp/ref.z"
	patched "main,$libdir/libz.so.1" "$tmp/zlib-$mode.report" \
		env DP_PATCH_ALL_FUNCS=$fn,crc32 "$zr" $args < "$in" > "$tmp/out.$mode" 2> "$tmp/out.$mode.err"
	ok $? "zlib $mode: runs with zlib-roundtrip and libz probed"
	ok $(cmp -s "$tmp/ref.$mode" "$tmp/out.$mode" && cmp -s "$tmp/ref.$mode.err" "$tmp/out.$mode.err"
	     echo $?) "zlib $mode: output and checksums identical to the unpatched run"
	check_report "$tmp/zlib-$mode.report" "zlib $mode" 2
	for f in $fn crc32; do
		want=$(awk -v f=$f '$1 == "calls" { for (i = 2; i < NF; i += 2) if ($i == f) print $(i + 1) }' \
			"$tmp/out.$mode.err")
		got=$(awk -v f="$f:" '$1 == "function" && $2 == f { print $4 }' "$tmp/zlib-$mode.report")
		ok $([ -n "$want" ] && [ "$want" = "$got" ]; echo $?) \
			"zlib $mode: probes counted $f called ${got:-?} times, the program says ${want:-?}"
	done
done
[ $mode = d ] && ok $(cmp -s "$tmp/input" "$tmp/out.d"; echo $?) "zlib: the round trip gives the input back"

# sqlite3, libsqlite3 and the C library: tables, indexes, joins, aggregates,
# a few thousand rows made by a recursive CTE.
cat > "$tmp/script.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)
INSERT INTO t SELECT x, x % 37, printf('name-%05d-%s', x, hex(x * 7919)), (x * 13 % 1000) / 7.0 FROM c;
CREATE INDEX t_grp ON t(grp, val);
CREATE TABLE g(grp INTEGER PRIMARY KEY, label TEXT);
WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < 36)
INSERT INTO g SELECT x, 'group ' || x FROM c;
SELECT g.label, count(*), round(sum(t.val), 3), min(t.name), max(t.val)
  FROM t JOIN g ON t.grp = g.grp GROUP BY g.grp ORDER BY 3 DESC;
SELECT a.id, b.id, a.val + b.val FROM t a JOIN t b ON a.grp = b.grp AND b.id = a.id + 37
  WHERE a.id % 250 = 0 ORDER BY a.id;
UPDATE t SET val = val * 2 WHERE grp IN (SELECT grp FROM g WHERE label LIKE '%3%');
DELETE FROM t WHERE id % 11 = 0;
SELECT grp, count(*), avg(val), group_concat(id % 10, '') FROM t GROUP BY grp HAVING count(*) > 100;
SELECT count(*), sum(length(name)), total(val) FROM t WHERE name GLOB '*A*' OR val > 200;
EOF
sqlite3 :memory: < "$tmp/script.sql" > "$tmp/ref.sql" 2>&1
patched "main,$libdir/libsqlite3.so.0,$libdir/libc.so.6" "$tmp/sqlite.report" \
	sqlite3 :memory: < "$tmp/script.sql" > "$tmp/out.sql" 2>&1
ok $? "sqlite3: runs the script with sqlite3, libsqlite3 and libc probed"
ok $([ -s "$tmp/ref.sql" ] && cmp -s "$tmp/ref.sql" "$tmp/out.sql"; echo $?) \
	"sqlite3: query results identical to the unpatched run ($(wc -l < "$tmp/ref.sql") lines)"
check_report "$tmp/sqlite.report" "sqlite3" 3
ok $(awk '/^object / { o = $2 }
	/^  hops / && o ~ /libsqlite3|libc\.so/ && $2 > 0 && $NF > 0 && !(o in seen) { seen[o]; n++ }
	END { exit !(n == 2) }' "$tmp/sqlite.report"; echo $?) \
	"sqlite3: jumps through hops installed in libsqlite3 and libc, and hit"
ok $(awk '/^object / { o = $2 }
	/^  redirects / && o ~ /libsqlite3/ && $2 > 0 && $NF > 0 { found = 1 }
	END { exit !found }' "$tmp/sqlite.report"; echo $?) \
	"sqlite3: redirects (branches led to a trampoline, the site unwritten) installed in libsqlite3, and hit"
ok $(awk '/^object / { o = $2 }
	/^  led windows / && o ~ /libsqlite3/ && $3 > 0 && $NF > 0 { found = 1 }
	END { exit !found }' "$tmp/sqlite.report"; echo $?) \
	"sqlite3: jumps whose window holds targets, their branches led in, installed in libsqlite3, and hit"

# openssl, libcrypto, libssl and the C library: SHA-256, SHA-512 and
# AES-256-CBC over the input.  libcrypto's hand-written AVX2/AVX-512
# assembly is probed too.
key=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f
iv=0f0e0d0c0b0a09080706050403020100
ossl_objs=main,$libdir/libcrypto.so.3,$libdir/libssl.so.3,$libdir/libc.so.6
openssl dgst -sha256 -sha512 -r "$tmp/input" > "$tmp/ref.ossl"
openssl enc -aes-256-cbc -K $key -iv $iv -in "$tmp/input" -out "$tmp/ref.aes"
patched "$ossl_objs" "$tmp/ossl-dgst.report" \
	openssl dgst -sha256 -sha512 -r "$tmp/input" > "$tmp/out.ossl"
ok $? "openssl dgst: runs with openssl, libcrypto, libssl and libc probed"
ok $([ -s "$tmp/ref.ossl" ] && cmp -s "$tmp/ref.ossl" "$tmp/out.ossl"; echo $?) \
	"openssl dgst: SHA-256 and SHA-512 digests identical to the unpatched run"
check_report "$tmp/ossl-dgst.report" "openssl dgst" 4
patched "$ossl_objs" "$tmp/ossl-enc.report" \
	openssl enc -aes-256-cbc -K $key -iv $iv -in "$tmp/input" -out "$tmp/out.aes"
ok $? "openssl enc: runs with openssl, libcrypto, libssl and libc probed"
ok $(cmp -s "$tmp/ref.aes" "$tmp/out.aes"; echo $?) \
	"openssl enc: AES-256-CBC ciphertext identical to the unpatched run"
check_report "$tmp/ossl-enc.report" "openssl enc" 4

finish
