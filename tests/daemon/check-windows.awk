# Reads babeltrace2's text of a cycles run (bt_text) and, with -v
# windows=FILE (lines "WINDOW THREAD FIRST LAST" from `dpctl cycles`),
# checks that every call FIRST..LAST of each thread in each window was
# recorded by each of the three events: the entry and the offset probe
# (rdi = thread, rsi = seq) and the return (its value: seq << 20 |
# thread << 16 | ...).  Prints "expected=N missing=M windows=W"; gawk.
function field(line, name,    re, m) {
	re = name " = ([0-9A-Fa-fx]+)"
	if (match(line, re, m))
		return m[1] ~ /^0x/ ? strtonum(m[1]) : m[1] + 0
	return -1
}
/cyc_fn_entry:/ { seen["entry", field($0, "rdi"), field($0, "rsi")] = 1; next }
/cyc_off:/ { seen["off", field($0, "rdi"), field($0, "rsi")] = 1; next }
/cyc_fn_return:/ {
	r = field($0, "ret")
	seen["ret", int(r / 65536) % 16, int(r / 1048576)] = 1
	next
}
END {
	while ((getline line < windows) > 0) {
		split(line, f, " ")
		nw++
		for (s = f[3]; s <= f[4]; s++) {
			expected += 3
			missing += !(("entry", f[2], s) in seen) + !(("off", f[2], s) in seen) + \
				   !(("ret", f[2], s) in seen)
		}
	}
	printf "expected=%d missing=%d windows=%d\n", expected, missing, nw
}
