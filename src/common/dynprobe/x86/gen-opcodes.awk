# Turns the opcode spec (opcodes-*.txt) into the C tables of opcodes.h.
# Usage: awk -f gen-opcodes.awk opcodes-*.txt > opcodes-gen.c
# The spec format is described at the top of opcodes-legacy.txt.  Any error
# names the spec file and line and makes the build fail.

function fail(msg) {
	printf("%s:%d: %s\n", FILENAME, FNR, msg) > "/dev/stderr"
	failed = 1
	exit 1
}

function hexval(s,    i, c, v) {
	s = tolower(s)
	if (s !~ /^[0-9a-f]+$/)
		fail("not a hex number: '" s "'")
	v = 0
	for (i = 1; i <= length(s); i++) {
		c = index("0123456789abcdef", substr(s, i, 1)) - 1
		v = v * 16 + c
	}
	return v
}

# General registers by any of their names.
function gpr(name,    n) {
	n = tolower(name)
	sub(/^%/, "", n)
	if (n in gprnum)
		return gprnum[n]
	return -1
}

function gprlist(list,    parts, k, m, r) {
	m = 0
	split(list, parts, ",")
	for (k in parts) {
		r = gpr(parts[k])
		if (r < 0)
			fail("not a general register: '" parts[k] "'")
		m = or16(m, 2 ^ r)
	}
	return m
}

# Bitwise or on small integers, for awks without or().
function or16(a, b,    r, bit) {
	r = 0
	for (bit = 1; bit <= 65536 * 2; bit *= 2) {
		if ((int(a / bit) % 2) || (int(b / bit) % 2))
			r += bit
	}
	return r
}

function add_imm(kind) {
	if (nimm >= 2)
		fail("more than two immediates")
	imm[nimm++] = kind
}

function set_mod(want) {
	# mov cr/dr: the mod field is ignored, whatever the operand letters say.
	if (flags["MODREG"])
		return
	if (mod != "DP_MODC_ANY" && mod != want)
		fail("operands need " want " but the conditions say " mod)
	mod = want
}

function add_op(src, gprflag, sz,    v) {
	if (nops >= 4)
		return
	v = srcnum[src]
	if (gprflag)
		v += 8
	if (gprflag && sz == "b")
		v += 16
	ops[nops++] = v
}

function parse_operand(o,    a, rest, r) {
	if (o == "1")
		return
	if (substr(o, 1, 1) == "%") {
		r = gpr(o)
		if (r >= 0) {
			if ((opindex == 0 && access != "ro") || (opindex == 1 && write2))
				impwr = or16(impwr, 2 ^ r)
			if (opindex == 0 && access == "wo")
				return
			imprd = or16(imprd, 2 ^ r)
		}
		return
	}
	a = substr(o, 1, 1)
	rest = substr(o, 2)
	if (a == "K") {
		a = substr(o, 2, 1)
		if (a != "H") flags["MODRM"] = 1
		# Only k0-k7 exist: the extension bits must be clear.
		if (a == "G") { flags["EVEX_REGK"] = 1; add_op("DP_OPS_REG", 0, "") }
		else if (a == "E") add_op("DP_OPS_RM", 0, "")
		else if (a == "R") { set_mod("DP_MODC_REG"); add_op("DP_OPS_RM", 0, "") }
		else if (a == "M") { set_mod("DP_MODC_MEM"); add_op("DP_OPS_RM", 1, "") }
		else if (a == "H") { flags["VVVV"] = 1; flags["KVVVV"] = 1; add_op("DP_OPS_VVVV", 0, "") }
		else fail("unknown mask operand '" o "'")
		return
	}
	if (a == "E") { flags["MODRM"] = 1; add_op("DP_OPS_RM", 1, rest) }
	else if (a == "M") { flags["MODRM"] = 1; set_mod("DP_MODC_MEM"); add_op("DP_OPS_RM", 1, rest) }
	else if (a == "R") { flags["MODRM"] = 1; set_mod("DP_MODC_REG"); add_op("DP_OPS_RM", 1, rest) }
	else if (a == "G") { flags["MODRM"] = 1; add_op("DP_OPS_REG", 1, rest) }
	else if (a == "V" || a == "P" || a == "T") { flags["MODRM"] = 1; add_op("DP_OPS_REG", 0, rest) }
	else if (a == "S") {
		flags["MODRM"] = 1; flags["SREG"] = 1
		if (opindex == 0) flags["SREG_DST"] = 1
		add_op("DP_OPS_REG", 0, rest)
	}
	else if (a == "C") { flags["MODRM"] = 1; flags["CREG"] = 1; add_op("DP_OPS_REG", 0, rest) }
	else if (a == "D") { flags["MODRM"] = 1; flags["DREG"] = 1; add_op("DP_OPS_REG", 0, rest) }
	else if (a == "W" || a == "Q") { flags["MODRM"] = 1; add_op("DP_OPS_RM", 0, "x") }
	else if (a == "U" || a == "N") { flags["MODRM"] = 1; set_mod("DP_MODC_REG"); add_op("DP_OPS_RM", 0, rest) }
	else if (a == "H") { flags["VVVV"] = 1; add_op("DP_OPS_VVVV", 0, rest) }
	else if (a == "B") { flags["VVVV"] = 1; add_op("DP_OPS_VVVV", 1, rest) }
	else if (a == "Z") { add_op("DP_OPS_OPC", 1, rest) }
	else if (a == "L") { add_imm("DP_IMM_B") }
	else if (a == "I") {
		if (rest == "b") add_imm("DP_IMM_B")
		else if (rest == "w") add_imm("DP_IMM_W")
		else if (rest == "d") add_imm("DP_IMM_D")
		else if (rest == "z") add_imm("DP_IMM_Z")
		else if (rest == "v") add_imm("DP_IMM_V")
		else fail("unknown immediate '" o "'")
	}
	else if (a == "J") {
		if (rest == "b") add_imm("DP_IMM_JB")
		else if (rest == "z") add_imm("DP_IMM_JZ")
		else fail("unknown relative operand '" o "'")
	}
	else if (a == "O") { add_imm("DP_IMM_MOFFS") }
	else if (a == "X") { imprd = or16(imprd, 2 ^ 6); impwr = or16(impwr, 2 ^ 6) }
	else if (a == "Y") { imprd = or16(imprd, 2 ^ 7); impwr = or16(impwr, 2 ^ 7) }
	else fail("unknown operand '" o "'")
	if (rest == "b" && (a == "E" || a == "G" || a == "Z" || a == "R"))
		flags["BYTEREG"] = 1
}

function parse_cond(c,    v) {
	if (c ~ /^\/[0-7]$/) { flags["MODRM"] = 1; reg = substr(c, 2) + 0 }
	else if (c == "/r") flags["MODRM"] = 1
	else if (c == "mem") { flags["MODRM"] = 1; set_mod("DP_MODC_MEM") }
	else if (c == "reg") { flags["MODRM"] = 1; set_mod("DP_MODC_REG") }
	else if (c ~ /^rm=[0-7]$/) { flags["MODRM"] = 1; rm = substr(c, 4) + 0 }
	else if (c ~ /^modrm=[0-9a-fA-F][0-9a-fA-F]$/) {
		v = hexval(substr(c, 7))
		if (v < 192)
			fail("modrm= takes a register form (c0-ff)")
		flags["MODRM"] = 1
		set_mod("DP_MODC_REG")
		reg = int(v / 8) % 8
		rm = v % 8
	}
	else if (c == "np") pfx = "DP_PFXC_NONE"
	else if (c == "66") pfx = "DP_PFXC_66"
	else if (c == "f3") pfx = "DP_PFXC_F3"
	else if (c == "f2") pfx = "DP_PFXC_F2"
	else if (c == "w0") w = 0
	else if (c == "w1") w = 1
	else if (c ~ /^l[012]+$/) {
		lmask = 0
		for (v = 2; v <= length(c); v++)
			lmask = or16(lmask, 2 ^ substr(c, v, 1))
	}
	else if (c == "lig") lmask = 0
	else fail("unknown condition '" c "'")
}

function parse_attr(a,    kv) {
	if (a in attrflag) { flags[attrflag[a]] = 1; return }
	if (a == "ro" || a == "wo") { access = a; return }
	if (a == "w2") { write2 = 1; return }
	if (a ~ /^flow=/) {
		kv = substr(a, 6)
		if (!(kv in flownames))
			fail("unknown flow '" kv "'")
		flow = flownames[kv]
		return
	}
	if (a ~ /^rd=/) { imprd = or16(imprd, gprlist(substr(a, 4))); return }
	if (a ~ /^wr=/) { impwr = or16(impwr, gprlist(substr(a, 4))); return }
	if (a ~ /^rw=/) {
		kv = gprlist(substr(a, 4))
		imprd = or16(imprd, kv)
		impwr = or16(impwr, kv)
		return
	}
	fail("unknown attribute '" a "'")
}

BEGIN {
	split("rax rcx rdx rbx rsp rbp rsi rdi r8 r9 r10 r11 r12 r13 r14 r15", q, " ")
	for (i = 1; i <= 16; i++) gprnum[q[i]] = i - 1
	split("eax ecx edx ebx esp ebp esi edi", q, " ")
	for (i = 1; i <= 8; i++) gprnum[q[i]] = i - 1
	split("ax cx dx bx sp bp si di", q, " ")
	for (i = 1; i <= 8; i++) gprnum[q[i]] = i - 1
	split("al cl dl bl", q, " ")
	for (i = 1; i <= 4; i++) gprnum[q[i]] = i - 1
	gprnum["ah"] = 0; gprnum["ch"] = 1; gprnum["dh"] = 2; gprnum["bh"] = 3

	split("1 0f 0f38 0f3a 3dnow v0f v0f38 v0f3a e0f e0f38 e0f3a emap5 emap6 x8 x9 xa", q, " ")
	split("1BYTE 0F 0F38 0F3A 3DNOW V0F V0F38 V0F3A E0F E0F38 E0F3A EMAP5 EMAP6 X8 X9 XA", qq, " ")
	for (i = 1; i <= 16; i++) tabname[q[i]] = "DP_TAB_" qq[i]

	split("jmp jcc call ret loop xbegin jmpi calli far sys int ud trap", q, " ")
	split("JMP JCC CALL RET LOOP XBEGIN JMP_IND CALL_IND FAR SYSCALL INT UD TRAP", qq, " ")
	for (i = 1; i <= 13; i++) flownames[q[i]] = "DP_FLOW_" qq[i]

	split("lock d64 f64 priv stack vsib rep ambig k kz bcst er kreq modreg bnd bndrm norip regk sae512 distinct tmm alldistinct", q, " ")
	split("LOCK D64 F64 PRIV STACK VSIB REP AMBIG EVEX_K EVEX_Z EVEX_B EVEX_ER EVEX_KREQ MODREG BND BNDRM NORIP EVEX_REGK EVEX_SAE512 EVEX_DISTINCT TMM ALLDISTINCT", qq, " ")
	for (i = 1; i in q; i++) attrflag[q[i]] = qq[i]
	srcnum["DP_OPS_NONE"] = 0; srcnum["DP_OPS_REG"] = 1; srcnum["DP_OPS_RM"] = 2
	srcnum["DP_OPS_VVVV"] = 3; srcnum["DP_OPS_OPC"] = 4
	nforms = 0
}

/^[ \t]*(#|$)/ { next }

{
	line = $0
	sub(/#.*/, "", line)
	bar = index(line, "|")
	if (bar == 0)
		fail("missing '|' between opcode and mnemonic")
	nl = split(substr(line, 1, bar - 1), left, " ")
	nr = split(substr(line, bar + 1), right, " ")
	if (nl < 2)
		fail("expected: TABLE OPCODE [CONDITIONS] | MNEMONIC [OPERANDS] [ATTRIBUTES]")
	if (nr < 1)
		fail("missing mnemonic")
	if (!(left[1] in tabname))
		fail("unknown table '" left[1] "'")
	tab = tabname[left[1]]
	if (left[2] ~ /-/) {
		split(left[2], rng, "-")
		lo = hexval(rng[1]); hi = hexval(rng[2])
	} else {
		lo = hi = hexval(left[2])
	}
	if (lo > 255 || hi > 255 || lo > hi)
		fail("bad opcode or range '" left[2] "'")

	delete flags
	pfx = "DP_PFXC_ANY"; mod = "DP_MODC_ANY"; reg = rm = w = 255; lmask = 0
	nimm = 0; imm[0] = imm[1] = "DP_IMM_NONE"
	nops = 0; ops[0] = ops[1] = ops[2] = ops[3] = 0
	imprd = impwr = 0; flow = "DP_FLOW_NONE"; access = ""; write2 = 0
	mnem = right[1]

	for (i = 3; i <= nl; i++)
		parse_cond(left[i])
	# Attributes first: they decide how operands are accessed.
	opstr = ""
	for (i = 2; i <= nr; i++) {
		if (right[i] ~ /^[A-Z%1]/) {
			if (opstr != "")
				fail("two operand lists")
			opstr = right[i]
		} else {
			parse_attr(right[i])
		}
	}
	if (opstr != "") {
		nop = split(opstr, oplist, ",")
		for (opindex = 0; opindex < nop; opindex++)
			parse_operand(oplist[opindex + 1])
	}
	# Access: first operand read-write unless said otherwise; others read.
	for (i = 0; i < nops; i++) {
		acc = 32
		if (i == 0 && access != "ro")
			acc = (access == "wo") ? 64 : 96
		if (i == 1 && write2)
			acc = 96
		ops[i] += acc
	}
	if (flags["STACK"]) { imprd = or16(imprd, 16); impwr = or16(impwr, 16) }
	if (mnem == "invalid" && nops + nimm > 0)
		fail("an invalid form takes no operands")
	if (reg != 255 || rm != 255 || mod != "DP_MODC_ANY")
		flags["MODRM"] = 1

	fl = ""
	for (f in flags)
		if (flags[f])
			fl = fl (fl == "" ? "" : " | ") "DP_OF_" f
	if (fl == "")
		fl = "0"
	form[nforms] = sprintf("{ %s, %s, 0x%x, 0x%x, %s, %s, %d, %d, %d, 0x%x, { %s, %s }, %s, { %d, %d, %d, %d } }, /* %s:%d */",
		mnem == "invalid" ? "0" : "\"" mnem "\"", fl, imprd, impwr, pfx, mod, reg, rm, w, lmask,
		imm[0], imm[1], flow, ops[0], ops[1], ops[2], ops[3], FILENAME, FNR)
	for (o = lo; o <= hi; o++) {
		key = tab SUBSEP o
		bytab[key] = bytab[key] " " nforms
	}
	nforms++
}

END {
	if (failed)
		exit 1
	print "/* Generated by gen-opcodes.awk from opcodes-*.txt: do not edit. */"
	print "#include <stddef.h>"
	print "#include \"x86/insn.h\""
	print "#include \"x86/opcodes.h\""
	print ""
	print "const struct dp_opform dp_opforms[] = {"
	n = 0
	split("1 0f 0f38 0f3a 3dnow v0f v0f38 v0f3a e0f e0f38 e0f3a emap5 emap6 x8 x9 xa", order, " ")
	for (t = 1; t <= 16; t++) {
		tn = tabname[order[t]]
		for (o = 0; o < 256; o++) {
			key = tn SUBSEP o
			if (!(key in bytab))
				continue
			cnt = split(bytab[key], ids, " ")
			idx[key] = n " " cnt
			for (k = 1; k <= cnt; k++) {
				printf("\t%s\n", form[ids[k]])
				n++
			}
		}
	}
	print "};"
	print ""
	print "const struct dp_opindex dp_opindex[DP_TAB__COUNT][256] = {"
	for (t = 1; t <= 16; t++) {
		tn = tabname[order[t]]
		for (o = 0; o < 256; o++) {
			key = tn SUBSEP o
			if (key in idx) {
				split(idx[key], fc, " ")
				printf("\t[%s][0x%02x] = { %d, %d },\n", tn, o, fc[1], fc[2])
			}
		}
	}
	print "};"
}
