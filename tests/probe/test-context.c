/*
 * Context specs (spec/ctx.h): every form dp_ctx_parse reads, what it makes of
 * it (the canonical spec dp_ctx_format writes back, which must parse to the
 * same context), and the specs it must refuse, each with a message.
 */
#include <errno.h>
#include <string.h>

#include "probe.h"
#include <stdio.h>

#include "spec/ctx.h"
#include "x86/insn.h"
#include "tap.h"

static const struct {
	const char *spec, *canonical;
} good[] = {
	{ "regs", "regs" },
	{ "retval", "retval" },
	{ "reg:rax", "reg:rax" },
	{ "reg:r15", "reg:r15" },
	{ "reg:eax", "reg:eax" },
	{ "reg:ah", "reg:ah" },
	{ "reg:sil", "reg:sil" },
	{ "reg:r9d", "reg:r9d" },
	{ "reg:r12w", "reg:r12w" },
	{ "reg:r15l", "reg:r15l" },
	{ "reg:r8b", "reg:r8b" },
	{ "reg:rip", "reg:rip" },
	{ "reg:pc", "reg:pc" },
	{ "reg:rflags", "reg:rflags" },
	{ "reg:eflags", "reg:eflags" },
	{ "reg:fs_base", "reg:fs_base" },
	{ "reg:gs_base", "reg:gs_base" },
	{ "int:hits:0x601040", "int32:hits:[0x601040]" },
	{ "uint:u:4096", "uint32:u:[0x1000]" },
	{ "long:l:010", "int64:l:[0x8]" },
	{ "ulong:l:0", "uint64:l:[0x0]" },
	{ "hex:h:r15-1", "hex64:h:[r15-0x1]" },
	{ "int8:a:rdi", "int8:a:[rdi]" },
	{ "uint16:a:rdi+8", "uint16:a:[rdi+0x8]" },
	{ "hex16:flags:[rbp-0x14]", "hex16:flags:[rbp-0x14]" },
	{ "int32:x:[rsp+16]", "int32:x:[rsp+0x10]" },
	{ "hex32:x:rip+0x20", "hex32:x:[rip+0x20]" },
	{ "int64:p:*rdi+8", "int64:p:*[rdi+0x8]" },
	{ "uint64:p:*[rdi+8]+16", "uint64:p:*[rdi+0x8]+0x10" },
	{ "hex8:p:*[rbx]-2", "hex8:p:*[rbx]-0x2" },
	{ "int16:g:*0x601000", "int16:g:*[0x601000]" },
	{ "string:name:rsi", "string:name:[rsi]" },
	{ "string:name:rsi:64", "string:name:[rsi]:64" },
	{ "string:name:*[rdi+24]:4096", "string:name:*[rdi+0x18]:4096" },
	{ "string:buf_name:0x601060", "string:buf_name:[0x601060]" },
	{ "backtrace", "backtrace:16:cfi" },
	{ "backtrace:cfi", "backtrace:16:cfi" },
	{ "backtrace:32", "backtrace:32:cfi" },
	{ "backtrace:libunwind:8", "backtrace:8:libunwind" },
	{ "backtrace:fp:8", "backtrace:8:fp" },
	{ "backtrace:128:cfi", "backtrace:128:cfi" },
};

static const char *const bad[] = {
	"", "reg", "reg:", "reg:xax", "reg:r16", "reg:r08d", "reg:r9q", "reg:eax:x", "regs:1",
	"int", "int:x", "int:x:", "int:1x:rdi", "int:x-y:rdi", "foo:x:rdi", "int:x:rdi*2",
	"int:x:[rdi+8", "int:x:[rdi+8]+4", "int:x:*[rdi]junk", "int:x:0x1g", "int:x:09",
	"int:x:99999999999999999999999", "int:x:rdi+0x", "int:x:rdi+", "int:x:eax+4",
	"int:x:-8", "int:x:rdi:8", "string:s:rsi:0", "string:s:rsi:4097", "string:s:rsi:x",
	"string:s", "backtrace:0", "backtrace:129", "backtrace:fp:cfi", "backtrace:cfi:libunwind", "backtrace:8:8",
	"backtrace:x", "backtrace:", "backtraces",
	"int:a_name_of_fifty_seven_characters_is_too_long_for_a_fields:rdi",
};

/* Value recipes (spec/value.h): malformed ones refused with their reason,
 * and the fields good ones lay out. */
#define V_OP(o, a, i) { DP_VOP_##o, a, i }
static const struct {
	const char *what, *word;
	uint8_t loc, ftype, size;
	uint32_t nops;
	struct dp_value_op ops[4];
} bad_values[] = {
	{ "no ops", "ops", 0, DP_FT_INT, 4, 0, { V_OP(REG, 0, 0) } },
	{ "an empty stack popped", "empty", 0, DP_FT_INT, 4, 1, { V_OP(ADDC, 0, 1) } },
	{ "two entries left", "ends", 0, DP_FT_INT, 4, 2, { V_OP(REG, 0, 0), V_OP(REG, 1, 0) } },
	{ "register 20", "register", 0, DP_FT_INT, 4, 1, { V_OP(REG, 20, 0) } },
	{ "xmm16", "register", 0, DP_FT_INT, 4, 1, { V_OP(REG, DP_VALUE_XMM0 + 16, 0) } },
	{ "a read of 3 bytes", "read", 0, DP_FT_INT, 4, 2, { V_OP(REG, 0, 0), V_OP(DEREF, 3, 0) } },
	{ "a shift by 64", "shift", 0, DP_FT_INT, 4, 2, { V_OP(REG, 0, 0), V_OP(SHR, 64, 0) } },
	{ "op 0", "op", 0, DP_FT_INT, 4, 1, { { 0, 0, 0 } } },
	{ "an extension from 8 bytes", "extension", 0, DP_FT_INT, 8, 2,
	  { V_OP(REG, 0, 0), V_OP(SEXT, 8, 0) } },
	{ "a bit-field of 0 bits", "bit-field", 0, DP_FT_INT, 8, 2,
	  { V_OP(REG, 0, 0), V_OP(BITS, 0, 0) } },
	{ "a bit-field of 64 bits", "bit-field", 0, DP_FT_INT, 8, 2,
	  { V_OP(REG, 0, 0), V_OP(BITS, 64, 1) } },
	{ "a bit-field extension of kind 2", "bit-field", 0, DP_FT_INT, 8, 2,
	  { V_OP(REG, 0, 0), V_OP(BITS, 4, 2) } },
	{ "pieces that overlap", "overlap", DP_VALUE_LOC_PIECES, DP_FT_INT, 8, 4,
	  { V_OP(REG, 0, 0), V_OP(PIECE, 4, 0), V_OP(REG, 1, 0), V_OP(PIECE, 2, 2) } },
	{ "a piece past 8 bytes", "piece", DP_VALUE_LOC_PIECES, DP_FT_INT, 8, 2,
	  { V_OP(REG, 0, 0), V_OP(PIECE, 4, 6) } },
	{ "a piece result without pieces", "pieces", DP_VALUE_LOC_PIECES, DP_FT_INT, 8, 1,
	  { V_OP(REG, 0, 0) } },
	{ "a piece without a piece result", "pieces", DP_VALUE_LOC_VALUE, DP_FT_INT, 8, 2,
	  { V_OP(REG, 0, 0), V_OP(PIECE, 4, 0) } },
	{ "a result kind 3", "result", 3, DP_FT_INT, 4, 1, { V_OP(REG, 0, 0) } },
	{ "an integer of 3 bytes", "integer", 0, DP_FT_INT, 3, 1, { V_OP(REG, 0, 0) } },
	{ "a float of 2 bytes", "float", 0, DP_FT_DOUBLE, 2, 1, { V_OP(REG, 0, 0) } },
	{ "a sequence", "type", 0, DP_FT_SEQ_U64, 8, 1, { V_OP(REG, 0, 0) } },
};

static struct dp_ctx value_ctx(const char *name, uint8_t loc, uint8_t ftype, uint8_t size,
			       const struct dp_value_op *ops, uint32_t nops)
{
	struct dp_ctx c = { .kind = DP_CTX_VALUE, .maxlen = ftype == DP_FT_STRING ? 32 : 0 };

	snprintf(c.name, sizeof(c.name), "%s", name);
	c.type = (struct dp_field_desc){ .type = ftype, .size = size };
	c.value.loc = loc;
	c.value.nops = nops;
	memcpy(c.value.ops, ops, nops * sizeof(*ops));
	return c;
}

static void test_values(void)
{
	static const struct dp_value_op reg[] = { V_OP(REG, DP_REG_RDI, 0) };
	static const struct dp_value_op mem[] = { V_OP(REG, DP_REG_RBP, -0x14) };
	static const struct dp_value_op xmm[] = { V_OP(REG, DP_VALUE_XMM0, 0) };
	struct dp_field_desc fields[8];
	struct dp_err err = DP_ERR_INIT;
	struct dp_ctx c[4];
	size_t n = 0;
	char text[128];
	int ret;

	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		c[0] = value_ctx("v", bad_values[i].loc, bad_values[i].ftype, bad_values[i].size,
				 bad_values[i].ops, bad_values[i].nops);
		dp_err_clear(&err);
		ret = dp_ctx_layout(c, 1, fields, 8, &n, &err);
		tap_ok(ret == -EINVAL && strstr(err.msg, bad_values[i].word),
		       "a recipe with %s is refused (%s)", bad_values[i].what, err.msg);
	}
	c[0] = value_ctx("r", DP_VALUE_LOC_VALUE, DP_FT_INT, 4, reg, 1);
	c[1] = value_ctx("m", DP_VALUE_LOC_ADDR, DP_FT_INT, 2, mem, 1);
	c[2] = value_ctx("d", DP_VALUE_LOC_VALUE, DP_FT_DOUBLE, 4, xmm, 1);
	c[3] = value_ctx("s", DP_VALUE_LOC_VALUE, DP_FT_STRING, 0, reg, 1);
	c[0].type.is_signed = true;
	dp_err_clear(&err);
	ret = dp_ctx_layout(c, 4, fields, 8, &n, &err);
	tap_ok(!ret && n == 7 && !strcmp(fields[0].name, "r") && fields[0].size == 4 &&
	       fields[0].is_signed && !strcmp(fields[1].name, "m") &&
	       !strcmp(fields[2].name, "_m_error") && fields[3].type == DP_FT_DOUBLE &&
	       !strcmp(fields[4].name, "_d_error") && fields[5].type == DP_FT_STRING &&
	       !strcmp(fields[6].name, "_s_error"),
	       "a register value has no error field; memory, xmm and strings have one (%s)",
	       ret ? err.msg : "ok");
	tap_ok(dp_ctx_values_size(&c[3]) == 48 && dp_ctx_values_size(&c[0]) == 0,
	       "a string value takes its bytes in the scratch, an integer none");
	dp_ctx_format(&c[1], text, sizeof(text));
	tap_ok(!strcmp(text, "value:m:uint16:rbp-0x14 addr"), "a value formats as %s", text);
}

int main(void)
{
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct dp_ctx c, again;
		struct dp_err err = DP_ERR_INIT;
		char buf[128];
		int ret = dp_ctx_parse(good[i].spec, NULL, NULL, &c, &err);

		if (!tap_ok(ret == 0, "parses '%s'", good[i].spec)) {
			tap_diag("%s", err.msg);
			continue;
		}
		dp_ctx_format(&c, buf, sizeof(buf));
		tap_ok(!strcmp(buf, good[i].canonical), "'%s' is '%s' (%s)", good[i].spec,
		       good[i].canonical, buf);
		ret = dp_ctx_parse(buf, NULL, NULL, &again, &err);
		/* reg:pc keeps its spelling, so the whole context compares. */
		tap_ok(ret == 0 && !memcmp(&c, &again, sizeof(c)), "'%s' reads back the same", buf);
	}

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dp_ctx c;
		struct dp_err err = DP_ERR_INIT;
		int ret = dp_ctx_parse(bad[i], NULL, NULL, &c, &err);

		tap_ok(ret == -EINVAL && err.msg[0], "refuses '%s' (%s)", bad[i], err.msg);
	}

	/* What the parser makes of a few, field by field. */
	{
		struct dp_ctx c;

		dp_ctx_parse("reg:ah", NULL, NULL, &c, NULL);
		tap_ok(c.kind == DP_CTX_REG && c.reg == 0 && c.width == 1 && c.shift == 8 &&
		       !strcmp(c.name, "ah"), "reg:ah is bits 8-15 of rax");
		dp_ctx_parse("reg:r10d", NULL, NULL, &c, NULL);
		tap_ok(c.reg == 10 && c.width == 4 && c.shift == 0, "reg:r10d is the low half of r10");
		dp_ctx_parse("reg:eflags", NULL, NULL, &c, NULL);
		tap_ok(c.reg == DP_CTX_REG_RFLAGS && c.width == 4, "reg:eflags is rflags' low half");
		dp_ctx_parse("int8:x:[rbp-0x14]", NULL, NULL, &c, NULL);
		tap_ok(c.kind == DP_CTX_MEM && c.type.size == 1 && c.type.is_signed && !c.type.hex &&
		       c.addr.base == 5 && c.addr.offset == -0x14 && !c.addr.deref,
		       "int8:x:[rbp-0x14]: signed byte at rbp - 20");
		dp_ctx_parse("hex32:x:*[rsi+8]-4", NULL, NULL, &c, NULL);
		tap_ok(c.type.size == 4 && c.type.hex && !c.type.is_signed && c.addr.base == 6 &&
		       c.addr.deref && c.addr.offset == 8 && c.addr.offset2 == -4,
		       "hex32:x:*[rsi+8]-4: pointer at rsi + 8, minus 4");
		dp_ctx_parse("string:s:rdi", NULL, NULL, &c, NULL);
		tap_ok(c.kind == DP_CTX_STRING && c.maxlen == DP_CTX_STRING_DEFAULT,
		       "strings default to %d bytes", DP_CTX_STRING_DEFAULT);
		dp_ctx_parse("backtrace", NULL, NULL, &c, NULL);
		tap_ok(c.kind == DP_CTX_BACKTRACE && c.depth == DP_CTX_BT_DEFAULT &&
		       c.walker == DP_BT_WALKER_DEFAULT && !strcmp(c.name, "backtrace"),
		       "backtrace: default depth and walker");
	}
	/* Contexts built by hand (as the daemon sends them) are checked too. */
	{
		static const char *const clash[][2] = {
			{ "regs", "reg:rax" },
			{ "int:_x_error:rdi", "int:x:rsi" },
			{ "backtrace", "backtrace:cfi" },
			{ "retval", "long:ret:rdi" },
		};
		struct dp_ctx c[2];
		struct dp_err err = DP_ERR_INIT;
		struct dpa_probe *p;

		for (unsigned i = 0; i < 7; i++) {
			dp_ctx_parse(i < 3 ? "reg:rax" : i < 5 ? "string:s:rdi" : "backtrace", NULL,
				     NULL, &c[0], NULL);
			switch (i) {
			case 0: c[0].reg = DP_CTX_REG__COUNT; break;
			case 1: c[0].width = 3; break;
			case 2: c[0].shift = 8; break;		/* only ah..bh */
			case 3: c[0].maxlen = 0; break;
			case 4: c[0].addr.base = DP_CTX_REG_RFLAGS; break;
			case 5: c[0].depth = DP_CTX_BT_MAX + 1; break;
			case 6: c[0].walker = 7; break;
			}
			dp_err_clear(&err);
			p = dpa_probe_new(0x1000, "bad_ctx", 0, c, 1, &err);
			tap_ok(!p && errno == EINVAL && err.msg[0], "a hand-built bad context (%u) is "
			       "refused (%s)", i, err.msg);
		}
		for (unsigned i = 0; i < sizeof(clash) / sizeof(clash[0]); i++) {
			dp_ctx_parse(clash[i][0], NULL, NULL, &c[0], NULL);
			dp_ctx_parse(clash[i][1], NULL, NULL, &c[1], NULL);
			dp_err_clear(&err);
			p = dpa_probe_new(0x1000, "clash", 0, c, 2, &err);
			tap_ok(!p && errno == EINVAL && err.msg[0], "'%s' with '%s': a field twice, "
			       "refused (%s)", clash[i][0], clash[i][1], err.msg);
		}
		dp_ctx_parse("regs", NULL, NULL, &c[0], NULL);
		dp_ctx_parse("string:name:*[rdi+8]", NULL, NULL, &c[1], NULL);
		p = dpa_probe_new(0x1000, "fine", 0, c, 2, &err);
		tap_ok(p != NULL, "regs and a string make an event (%s)", p ? "ok" : err.msg);
	}
	test_values();
	return tap_done();
}
