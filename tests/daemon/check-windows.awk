# Reads babeltrace2's text of a cycles run with its times (bt_timed) and,
# with -v windows=FILE (lines "WINDOW THREAD FIRST LAST" from `dpctl
# cycles`), checks that every call FIRST..LAST of each thread in each window
# was recorded by each of the three events: the entry and the offset probe
# (rdi = thread, rsi = seq) and the return (its value: seq << 20 |
# thread << 16 | ...).
#
# With -v warnings=FILE (babeltrace2's warnings), a window the tracer may
# have discarded events of is left out: one whose span, from the thread's
# last call recorded before it to its first after it, meets the time range
# of a "Tracer discarded N events" warning (widened by 10 ms each side).
# LTTng discards when its consumer falls behind, as when the machine stops
# the consumer for a minute: that says nothing of the probes, and every
# other window is still checked whole.
#
# Prints "expected=N missing=M windows=W excused=E"; gawk.
function field(line, name,    re, m) {
	re = name " = ([0-9A-Fa-fx]+)"
	if (match(line, re, m))
		return m[1] ~ /^0x/ ? strtonum(m[1]) : m[1] + 0
	return -1
}
function note(kind, thread, seq, line,    m) {
	seen[kind, thread, seq] = 1
	if (!((thread, seq) in at) && match(line, /^\[([0-9.]+)\]/, m))
		at[thread, seq] = m[1] + 0
}
# Whether a discarded range meets the span of the window of calls
# first..last of thread (a call recorded within 10000 of either end bounds
# it; without one, the span is open on that side).
function discarded_in(thread, first, last,    lo, hi, s, i) {
	lo = -1
	hi = 1e30
	for (s = first - 1; s >= 0 && s >= first - 10000; s--)
		if ((thread, s) in at) {
			lo = at[thread, s]
			break
		}
	for (s = last + 1; s <= last + 10000; s++)
		if ((thread, s) in at) {
			hi = at[thread, s]
			break
		}
	for (i = 1; i <= ndisc; i++)
		if (from[i] <= hi && to[i] >= lo)
			return 1
	return 0
}
/cyc_fn_entry:/ { note("entry", field($0, "rdi"), field($0, "rsi"), $0); next }
/cyc_off:/ { note("off", field($0, "rdi"), field($0, "rsi"), $0); next }
/cyc_fn_return:/ {
	r = field($0, "ret")
	note("ret", int(r / 65536) % 16, int(r / 1048576), $0)
	next
}
END {
	# Read last: babeltrace2 writes them as it goes, and has exited now.
	while (warnings != "" && (getline line < warnings) > 0)
		if (match(line, /discarded [0-9]+ events? between \[([0-9.]+)\] and \[([0-9.]+)\]/, m)) {
			ndisc++
			from[ndisc] = m[1] - 0.010
			to[ndisc] = m[2] + 0.010
		}
	while ((getline line < windows) > 0) {
		split(line, f, " ")
		nw++
		if (ndisc && discarded_in(f[2], f[3], f[4])) {
			excused++
			continue
		}
		for (s = f[3]; s <= f[4]; s++) {
			expected += 3
			missing += !(("entry", f[2], s) in seen) + !(("off", f[2], s) in seen) + \
				   !(("ret", f[2], s) in seen)
		}
	}
	printf "expected=%d missing=%d windows=%d excused=%d\n", expected, missing, nw, excused
}
