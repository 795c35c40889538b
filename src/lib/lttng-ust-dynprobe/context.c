/*
 * Contexts (see context.h): the spec parser, the field layout a list of
 * contexts gives an event, and their evaluation at a hit.
 *
 * Evaluation runs inside the hit path, possibly in a SIGTRAP handler: it
 * reads registers from the saved state, memory through memread.c, and never
 * allocates.
 */
#include <asm/prctl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context.h"
#include "hit.h"

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

/* One hit's scratch may not exceed this (a thread keeps it mapped). */
#define SCRATCH_MAX (256 * 1024)

/* ---- registers -------------------------------------------------------- */

struct reg_name {
	const char *name;
	uint8_t reg, width, shift;
};

/* gdb's names; numbers are dp_regs positions (hardware order). */
static const char *const names64[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};
static const char *const names32[8] = { "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi" };
static const char *const names16[8] = { "ax", "cx", "dx", "bx", "sp", "bp", "si", "di" };
static const char *const names8[8] = { "al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil" };
static const char *const names8h[4] = { "ah", "ch", "dh", "bh" };

static const struct reg_name extra_regs[] = {
	{ "rip", DP_CTX_REG_RIP, 8, 0 },
	{ "pc", DP_CTX_REG_RIP, 8, 0 },
	{ "rflags", DP_CTX_REG_RFLAGS, 8, 0 },
	{ "eflags", DP_CTX_REG_RFLAGS, 4, 0 },
	{ "fs_base", DP_CTX_REG_FS_BASE, 8, 0 },
	{ "gs_base", DP_CTX_REG_GS_BASE, 8, 0 },
};

/* The `regs` context, in gdb's `info registers` order. */
static const uint8_t regs_order[18] = { 0, 3, 1, 2, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15,
					DP_CTX_REG_RIP, DP_CTX_REG_RFLAGS };
static const char *const regs_names[18] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
	"r12", "r13", "r14", "r15", "rip", "rflags",
};

/* r8..r15 with a view suffix: "r9d", "r12w", "r15l" (gdb) or "r15b". */
static bool numbered_view(const char *s, size_t len, struct reg_name *out)
{
	unsigned n = 0;
	size_t i = 1;

	if (len < 3 || s[0] != 'r')
		return false;
	while (i < len && s[i] >= '0' && s[i] <= '9' && i < 3)
		n = n * 10 + (s[i++] - '0');
	if (i != len - 1 || n < 8 || n > 15 || (i == 3 && s[1] == '0'))
		return false;
	out->name = NULL;	/* the caller keeps the spelling given */
	out->reg = n;
	out->shift = 0;
	switch (s[i]) {
	case 'd': out->width = 4; return true;
	case 'w': out->width = 2; return true;
	case 'l': case 'b': out->width = 1; return true;
	}
	return false;
}

/* A register name of s[0..len).  any: views and extras too; else only the
 * 64-bit general registers and rip (address bases). */
static bool reg_lookup(const char *s, size_t len, bool any, struct reg_name *out)
{
	for (unsigned i = 0; i < 16; i++) {
		if (strlen(names64[i]) == len && !memcmp(s, names64[i], len)) {
			*out = (struct reg_name){ names64[i], i, 8, 0 };
			return true;
		}
	}
	if (len == 3 && !memcmp(s, "rip", 3)) {
		*out = extra_regs[0];
		return true;
	}
	if (!any)
		return false;
	for (unsigned i = 0; i < sizeof(extra_regs) / sizeof(extra_regs[0]); i++) {
		if (strlen(extra_regs[i].name) == len && !memcmp(s, extra_regs[i].name, len)) {
			*out = extra_regs[i];
			return true;
		}
	}
	for (unsigned i = 0; i < 8; i++) {
		const char *const *tabs[3] = { names32, names16, names8 };
		static const uint8_t widths[3] = { 4, 2, 1 };

		for (unsigned t = 0; t < 3; t++) {
			if (strlen(tabs[t][i]) == len && !memcmp(s, tabs[t][i], len)) {
				*out = (struct reg_name){ tabs[t][i], i, widths[t], 0 };
				return true;
			}
		}
		if (i < 4 && len == 2 && !memcmp(s, names8h[i], 2)) {
			*out = (struct reg_name){ names8h[i], i, 1, 8 };
			return true;
		}
	}
	return numbered_view(s, len, out);
}

static bool have_fsgsbase = false;
static bool fsgsbase_checked = false;

static void fsgs_detect(void)
{
	have_fsgsbase = getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE;
	__atomic_store_n(&fsgsbase_checked, true, __ATOMIC_RELEASE);
}

/*
 * fs and gs bases of this thread, which are the probed context's (neither a
 * trampoline nor signal delivery changes them).  rdfsbase when the kernel
 * allows it; otherwise arch_prctl once per thread: a program that moves its
 * bases with arch_prctl later is not followed.
 */
static uint64_t seg_base(unsigned reg)
{
	struct dp_thread *t = &dp_self;
	uint64_t v;

	if (!__atomic_load_n(&fsgsbase_checked, __ATOMIC_ACQUIRE))
		fsgs_detect();
	if (have_fsgsbase) {
		if (reg == DP_CTX_REG_FS_BASE)
			__asm__ volatile("rdfsbase %0" : "=r"(v));
		else
			__asm__ volatile("rdgsbase %0" : "=r"(v));
		return v;
	}
	if (!t->fsgs_cached) {
		unsigned long fs = 0, gs = 0;

		syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
		syscall(SYS_arch_prctl, ARCH_GET_GS, &gs);
		t->fs_base = fs;
		t->gs_base = gs;
		t->fsgs_cached = true;
	}
	return reg == DP_CTX_REG_FS_BASE ? t->fs_base : t->gs_base;
}

static uint64_t reg_value(const struct dp_regs *regs, unsigned reg)
{
	if (reg < 18)
		return ((const uint64_t *)regs)[reg];
	return seg_base(reg);
}

/* ---- parsing ---------------------------------------------------------- */

struct type_name {
	const char *name;
	uint8_t size;
	bool is_signed, hex;
};

static const struct type_name types[] = {
	{ "int8", 1, true, false }, { "int16", 2, true, false },
	{ "int32", 4, true, false }, { "int64", 8, true, false },
	{ "uint8", 1, false, false }, { "uint16", 2, false, false },
	{ "uint32", 4, false, false }, { "uint64", 8, false, false },
	{ "hex8", 1, false, true }, { "hex16", 2, false, true },
	{ "hex32", 4, false, true }, { "hex64", 8, false, true },
	{ "int", 4, true, false }, { "uint", 4, false, false },
	{ "long", 8, true, false }, { "ulong", 8, false, false },
	{ "hex", 8, false, true },
};

/* A number: 0x hex, 0 octal, else decimal; no sign.  Advances *p. */
static bool parse_num(const char **p, uint64_t *out)
{
	const char *s = *p;
	unsigned base = 10;
	uint64_t v = 0;
	bool any = false;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	} else if (s[0] == '0') {
		base = 8;
		any = true;	/* "0" alone */
		s++;
	}
	for (;; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (d >= base)
			return false;
		if (v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
		any = true;
	}
	*p = s;
	*out = v;
	return any;
}

/* "+N" or "-N" as a signed offset; nothing at all is 0. */
static bool parse_offset(const char **p, int64_t *out, const char **err)
{
	const char *s = *p;
	bool neg;
	uint64_t v;

	if (*s != '+' && *s != '-') {
		*out = 0;
		return true;
	}
	neg = *s++ == '-';
	if (!parse_num(&s, &v) || v > (uint64_t)INT64_MAX) {
		*err = "bad offset in address";
		return false;
	}
	*out = neg ? -(int64_t)v : (int64_t)v;
	*p = s;
	return true;
}

/* NUM | REG | REG+N | REG-N, ending at `end`. */
static bool parse_base_expr(const char *s, const char *end, struct dp_ctx_addr *a,
			    const char **err)
{
	struct reg_name r;
	const char *q = s;
	uint64_t v;

	if (s < end && *s >= '0' && *s <= '9') {
		if (!parse_num(&q, &v) || q != end) {
			*err = "bad address: expected a number, or a register and an offset";
			return false;
		}
		a->base = DP_CTX_ABS;
		a->offset = (int64_t)v;
		return true;
	}
	while (q < end && ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9')))
		q++;
	if (!reg_lookup(s, q - s, false, &r)) {
		*err = "bad address: unknown base register (rax..r15 or rip)";
		return false;
	}
	a->base = r.reg;
	if (!parse_offset(&q, &a->offset, err))
		return false;
	if (q != end) {
		*err = "bad address: expected REG, REG+N or REG-N";
		return false;
	}
	return true;
}

static bool parse_addr(const char *s, struct dp_ctx_addr *a, const char **err)
{
	const char *end;

	memset(a, 0, sizeof(*a));
	if (*s == '*') {
		a->deref = 1;
		s++;
	}
	if (*s == '[') {
		end = strchr(s, ']');
		if (!end) {
			*err = "bad address: no closing ']'";
			return false;
		}
		if (!parse_base_expr(s + 1, end, a, err))
			return false;
		s = end + 1;
		if (a->deref) {
			if (!parse_offset(&s, &a->offset2, err))
				return false;
		}
		if (*s) {
			*err = a->deref ? "bad address: junk after *[ADDR]+N"
					: "bad address: junk after ']'";
			return false;
		}
		return true;
	}
	if (!*s) {
		*err = "missing address";
		return false;
	}
	return parse_base_expr(s, s + strlen(s), a, err);
}

static bool valid_name(const char *s, size_t len, size_t max, const char **err)
{
	if (!len) {
		*err = "empty field name";
		return false;
	}
	if (len > max) {
		*err = "field name too long";
		return false;
	}
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) {
		*err = "a field name starts with a letter or '_'";
		return false;
	}
	for (size_t i = 1; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_')) {
			*err = "a field name has only letters, digits and '_'";
			return false;
		}
	}
	return true;
}

/* The longest NAME of a memory context: "_NAME_error" must fit too. */
#define MEM_NAME_MAX (DP_FIELD_NAME_MAX - 1 - 7)

static int parse_backtrace(const char *s, struct dp_ctx *out, const char **err)
{
	bool have_depth = false, have_walker = false;

	out->kind = DP_CTX_BACKTRACE;
	out->depth = DP_CTX_BT_DEFAULT;
	out->walker = DP_BT_WALKER_DEFAULT;
	strcpy(out->name, "backtrace");
	while (*s == ':') {
		const char *part = ++s;
		size_t len = strcspn(part, ":");
		uint64_t v;

		s += len;
		if ((len == 2 && !memcmp(part, "fp", 2)) || (len == 3 && !memcmp(part, "cfi", 3))) {
			if (have_walker) {
				*err = "backtrace: the walker is given twice";
				return -EINVAL;
			}
			out->walker = len == 2 ? DP_BT_FP : DP_BT_CFI;
			have_walker = true;
			continue;
		}
		if (have_depth || !parse_num(&part, &v) || part != s || !v || v > DP_CTX_BT_MAX) {
			*err = "backtrace: expected backtrace[:DEPTH][:fp|:cfi], DEPTH 1 to 128";
			return -EINVAL;
		}
		out->depth = (uint16_t)v;
		have_depth = true;
	}
	if (*s) {
		*err = "backtrace: expected backtrace[:DEPTH][:fp|:cfi]";
		return -EINVAL;
	}
	return 0;
}

DP_EXPORT int dp_ctx_parse(const char *spec, struct dp_ctx *out, const char **err)
{
	const char *err_dummy, *colon, *name, *addr, *maxp;
	char addrbuf[128];
	struct reg_name r;
	size_t tlen, nlen;

	if (!err)
		err = &err_dummy;
	memset(out, 0, sizeof(*out));
	if (!spec) {
		*err = "no context";
		return -EINVAL;
	}
	if (!strcmp(spec, "regs")) {
		out->kind = DP_CTX_REGS;
		strcpy(out->name, "regs");
		return 0;
	}
	if (!strcmp(spec, "retval")) {
		out->kind = DP_CTX_RETVAL;
		strcpy(out->name, "ret");
		return 0;
	}
	if (!strncmp(spec, "backtrace", 9) && (spec[9] == 0 || spec[9] == ':'))
		return parse_backtrace(spec + 9, out, err);
	if (!strncmp(spec, "reg:", 4)) {
		const char *n = spec + 4;

		if (!reg_lookup(n, strlen(n), true, &r)) {
			*err = "unknown register";
			return -EINVAL;
		}
		out->kind = DP_CTX_REG;
		out->reg = r.reg;
		out->width = r.width;
		out->shift = r.shift;
		/* The field is named as the register was spelled ("pc", "r8b"):
		 * a known name, short. */
		strcpy(out->name, n);
		return 0;
	}

	/* TYPE:NAME:ADDR, string:NAME:ADDR[:MAX] */
	colon = strchr(spec, ':');
	if (!colon) {
		*err = "unknown context (regs, reg:NAME, TYPE:NAME:ADDR, string:NAME:ADDR, "
		       "backtrace)";
		return -EINVAL;
	}
	tlen = colon - spec;
	name = colon + 1;
	colon = strchr(name, ':');
	if (!colon) {
		*err = "expected TYPE:NAME:ADDR";
		return -EINVAL;
	}
	nlen = colon - name;
	addr = colon + 1;
	if (!valid_name(name, nlen, MEM_NAME_MAX, err))
		return -EINVAL;
	memcpy(out->name, name, nlen);
	out->name[nlen] = 0;
	maxp = strchr(addr, ':');
	if (maxp && (size_t)(maxp - addr) >= sizeof(addrbuf)) {
		*err = "address too long";
		return -EINVAL;
	}
	if (maxp) {
		memcpy(addrbuf, addr, maxp - addr);
		addrbuf[maxp - addr] = 0;
		addr = addrbuf;
	}

	if (tlen == 6 && !memcmp(spec, "string", 6)) {
		out->kind = DP_CTX_STRING;
		out->maxlen = DP_CTX_STRING_DEFAULT;
		if (maxp) {
			const char *m = maxp + 1;
			uint64_t v;

			if (!parse_num(&m, &v) || *m || !v || v > DP_CTX_STRING_MAX) {
				*err = "string: MAX is 1 to 4096 bytes";
				return -EINVAL;
			}
			out->maxlen = (uint32_t)v;
		}
		return parse_addr(addr, &out->addr, err) ? 0 : -EINVAL;
	}
	for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strlen(types[i].name) != tlen || memcmp(spec, types[i].name, tlen))
			continue;
		if (maxp) {
			*err = "only strings take a length";
			return -EINVAL;
		}
		out->kind = DP_CTX_MEM;
		out->type.type = DP_FT_INT;
		out->type.size = types[i].size;
		out->type.is_signed = types[i].is_signed;
		out->type.hex = types[i].hex;
		return parse_addr(addr, &out->addr, err) ? 0 : -EINVAL;
	}
	*err = "unknown type (int8..int64, uint8..uint64, hex8..hex64, int, uint, long, "
	       "ulong, hex, string)";
	return -EINVAL;
}

/* ---- formatting ------------------------------------------------------- */

static const char *base_name(unsigned base)
{
	return base == DP_CTX_REG_RIP ? "rip" : names64[base & 15];
}

static int format_offset(char *buf, size_t size, int64_t off)
{
	if (!off)
		return snprintf(buf, size, "%s", "");
	if (off < 0)
		return snprintf(buf, size, "-0x%" PRIx64, -(uint64_t)off);
	return snprintf(buf, size, "+0x%" PRIx64, (uint64_t)off);
}

static int format_addr(const struct dp_ctx_addr *a, char *buf, size_t size)
{
	char off[24], off2[24];

	format_offset(off2, sizeof(off2), a->offset2);
	if (a->base == DP_CTX_ABS)
		return snprintf(buf, size, "%s[0x%" PRIx64 "]%s", a->deref ? "*" : "",
				(uint64_t)a->offset, a->deref ? off2 : "");
	format_offset(off, sizeof(off), a->offset);
	return snprintf(buf, size, "%s[%s%s]%s", a->deref ? "*" : "", base_name(a->base), off,
			a->deref ? off2 : "");
}

static const char *type_spelling(const struct dp_field_desc *t)
{
	for (unsigned i = 0; i < 12; i++)
		if (types[i].size == t->size && types[i].is_signed == t->is_signed &&
		    types[i].hex == t->hex)
			return types[i].name;
	return "?";
}

DP_EXPORT int dp_ctx_format(const struct dp_ctx *ctx, char *buf, size_t size)
{
	char addr[96];

	switch (ctx->kind) {
	case DP_CTX_REGS:
		return snprintf(buf, size, "regs");
	case DP_CTX_RETVAL:
		return snprintf(buf, size, "retval");
	case DP_CTX_REG:
		return snprintf(buf, size, "reg:%s", ctx->name);
	case DP_CTX_BACKTRACE:
		return snprintf(buf, size, "backtrace:%u:%s", ctx->depth,
				ctx->walker == DP_BT_CFI ? "cfi" : "fp");
	case DP_CTX_MEM:
		format_addr(&ctx->addr, addr, sizeof(addr));
		return snprintf(buf, size, "%s:%s:%s", type_spelling(&ctx->type), ctx->name, addr);
	case DP_CTX_STRING:
		format_addr(&ctx->addr, addr, sizeof(addr));
		if (ctx->maxlen != DP_CTX_STRING_DEFAULT)
			return snprintf(buf, size, "string:%s:%s:%u", ctx->name, addr, ctx->maxlen);
		return snprintf(buf, size, "string:%s:%s", ctx->name, addr);
	}
	return snprintf(buf, size, "?");
}

/* ---- layout ----------------------------------------------------------- */

size_t dp_ctx_nfields(const struct dp_ctx *ctx)
{
	switch (ctx->kind) {
	case DP_CTX_REGS: return 18;
	case DP_CTX_MEM: case DP_CTX_STRING: return 2;
	default: return 1;
	}
}

static struct dp_field_desc int_field(const char *name, unsigned size, bool is_signed, bool hex)
{
	struct dp_field_desc f = { .type = DP_FT_INT, .size = size, .is_signed = is_signed,
				   .hex = hex };

	snprintf(f.name, sizeof(f.name), "%s", name);
	return f;
}

static size_t align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* Scratch bytes of one context's own values (strings, backtraces). */
static size_t ctx_area(const struct dp_ctx *c)
{
	if (c->kind == DP_CTX_STRING)
		return align16(c->maxlen + 1);
	if (c->kind == DP_CTX_BACKTRACE)
		return align16(c->depth * sizeof(uint64_t));
	return 0;
}

static size_t ctx_areas(const struct dp_ctx *ctx, size_t nctx)
{
	size_t total = 0;

	for (size_t i = 0; i < nctx; i++)
		total += ctx_area(&ctx[i]);
	return total;
}

size_t dp_ctx_scratch_size(const struct dp_ctx *ctx, size_t nctx)
{
	size_t total = ctx_areas(ctx, nctx);

	for (size_t i = 0; i < nctx; i++) {
		if (ctx[i].kind == DP_CTX_BACKTRACE && ctx[i].walker == DP_BT_CFI) {
			total += align16(dp_bt_cfi_scratch());
			break;
		}
	}
	return total;
}

/*
 * Whether a context could have come from dp_ctx_parse: contexts also arrive
 * built by hand (from the daemon, over a socket) and are then trusted by
 * the hit path.
 */
static bool ctx_valid(const struct dp_ctx *c)
{
	const struct dp_ctx_addr *a = &c->addr;

	if (!memchr(c->name, 0, sizeof(c->name)) || !c->name[0])
		return false;
	switch (c->kind) {
	case DP_CTX_REGS:
	case DP_CTX_RETVAL:
		return true;
	case DP_CTX_REG:
		return c->reg < DP_CTX_REG__COUNT && (c->width == 1 || c->width == 2 ||
		       c->width == 4 || c->width == 8) && (c->shift == 0 ||
		       (c->shift == 8 && c->width == 1 && c->reg < 4));
	case DP_CTX_MEM:
	case DP_CTX_STRING:
		if (a->base != DP_CTX_ABS && a->base > DP_CTX_REG_RIP)
			return false;
		if (a->deref > 1 || (!a->deref && a->offset2))
			return false;
		if (c->kind == DP_CTX_STRING)
			return c->maxlen >= 1 && c->maxlen <= DP_CTX_STRING_MAX;
		return c->type.type == DP_FT_INT && (c->type.size == 1 || c->type.size == 2 ||
		       c->type.size == 4 || c->type.size == 8);
	case DP_CTX_BACKTRACE:
		return c->depth >= 1 && c->depth <= DP_CTX_BT_MAX &&
		       (c->walker == DP_BT_FP || c->walker == DP_BT_CFI);
	}
	return false;
}

int dp_ctx_layout(const struct dp_ctx *ctx, size_t nctx, struct dp_field_desc *fields,
		  size_t max, size_t *nfields, const char **err)
{
	const char *err_dummy;
	size_t n = 0;

	if (!err)
		err = &err_dummy;
	for (size_t i = 0; i < nctx; i++) {
		const struct dp_ctx *c = &ctx[i];
		char ename[DP_FIELD_NAME_MAX];

		if (!ctx_valid(c)) {
			*err = "bad context";
			return -EINVAL;
		}
		if (n + dp_ctx_nfields(c) > max) {
			*err = "too many fields for one event";
			return -E2BIG;
		}
		switch (c->kind) {
		case DP_CTX_REGS:
			for (unsigned r = 0; r < 18; r++)
				fields[n++] = int_field(regs_names[r], 8, false, true);
			break;
		case DP_CTX_REG:
			fields[n++] = int_field(c->name, c->width, false, true);
			break;
		case DP_CTX_RETVAL:
			fields[n++] = int_field("ret", 8, true, false);
			break;
		case DP_CTX_MEM:
		case DP_CTX_STRING:
			if (strlen(c->name) > MEM_NAME_MAX) {
				*err = "field name too long";
				return -EINVAL;
			}
			if (c->kind == DP_CTX_MEM) {
				fields[n++] = int_field(c->name, c->type.size, c->type.is_signed,
							c->type.hex);
			} else {
				fields[n] = (struct dp_field_desc){ .type = DP_FT_STRING };
				snprintf(fields[n].name, sizeof(fields[n].name), "%s", c->name);
				n++;
			}
			snprintf(ename, sizeof(ename), "_%s_error", c->name);
			fields[n++] = int_field(ename, 1, false, false);
			break;
		case DP_CTX_BACKTRACE:
			fields[n] = (struct dp_field_desc){ .type = DP_FT_SEQ_U64, .hex = true };
			snprintf(fields[n].name, sizeof(fields[n].name), "%s", c->name);
			n++;
			break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(fields[i].name, fields[j].name)) {
				*err = "a field name is given twice (regs already has every register)";
				return -EINVAL;
			}
		}
	}
	if (dp_ctx_scratch_size(ctx, nctx) > SCRATCH_MAX) {
		*err = "the strings and backtraces of one event exceed 256 KiB";
		return -E2BIG;
	}
	*nfields = n;
	return 0;
}

/* ---- evaluation ------------------------------------------------------- */

static int ctx_address(const struct dp_ctx_addr *a, const struct dp_ctx_env *env, uint64_t *out)
{
	uint64_t addr = a->base == DP_CTX_ABS ? (uint64_t)a->offset
					      : reg_value(env->regs, a->base) + (uint64_t)a->offset;

	if (a->deref) {
		uint64_t p;
		int ret = dp_mem_read(env->regs, env->own, &p, addr, sizeof(p));

		if (ret)
			return ret;
		addr = p + (uint64_t)a->offset2;
	}
	*out = addr;
	return 0;
}

static uint8_t error_value(long ret)
{
	return ret < 0 ? (uint8_t)(-ret > 255 ? 255 : -ret) : 0;
}

unsigned dp_ctx_eval(const struct dp_ctx *ctx, size_t nctx, const struct dp_ctx_env *env,
		     struct dp_value *values)
{
	const struct dp_regs *regs = env->regs;
	uint8_t *scratch = env->scratch;
	unsigned errors = 0;
	size_t f = 0, off = 0;

	for (size_t i = 0; i < nctx; i++) {
		const struct dp_ctx *c = &ctx[i];
		uint64_t addr, v;
		long ret;

		switch (c->kind) {
		case DP_CTX_REG:
			v = reg_value(regs, c->reg) >> c->shift;
			if (c->width < 8)
				v &= (1ull << (c->width * 8)) - 1;
			values[f++].u = v;
			break;
		case DP_CTX_REGS:
			for (unsigned r = 0; r < 18; r++)
				values[f++].u = reg_value(regs, regs_order[r]);
			break;
		case DP_CTX_RETVAL:
			values[f++].u = regs->rax;
			break;
		case DP_CTX_MEM:
			v = 0;
			ret = ctx_address(&c->addr, env, &addr);
			if (!ret)
				ret = dp_mem_read(regs, env->own, &v, addr, c->type.size);
			if (ret)
				v = 0;
			values[f++].u = v;
			values[f++].u = error_value(ret);
			errors += ret != 0;
			break;
		case DP_CTX_STRING: {
			char *buf = (char *)scratch + off;

			off += ctx_area(c);
			ret = ctx_address(&c->addr, env, &addr);
			if (!ret)
				ret = dp_mem_read_str(regs, env->own, buf, addr, c->maxlen);
			if (ret < 0 && ret != -E2BIG)
				buf[0] = 0;
			values[f].str.ptr = buf;
			values[f].str.len = ret >= 0 ? (uint32_t)ret
					    : ret == -E2BIG ? c->maxlen : 0;
			f++;
			values[f++].u = error_value(ret);
			errors += ret < 0 && ret != -E2BIG;
			break;
		}
		case DP_CTX_BACKTRACE: {
			uint64_t *bt = (uint64_t *)(scratch + off);
			unsigned n;

			off += ctx_area(c);
			if (c->walker == DP_BT_CFI)
				n = dp_bt_cfi(regs, bt, c->depth, scratch + ctx_areas(ctx, nctx));
			else
				n = dp_bt_fp(regs, env->flags & DP_CTX_AT_ENTRY, bt, c->depth);
			values[f].seq.ptr = bt;
			values[f].seq.len = n;
			f++;
			break;
		}
		}
	}
	return errors;
}
