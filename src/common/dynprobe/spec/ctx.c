/*
 * Context specs (see ctx.h): the one parser of the context grammar, the
 * canonical spelling, and the checks the CLI runs before any object is
 * open.  Pure string work; symbols are the caller's to look up.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spec/chars.h"
#include "spec/ctx.h"
#include "spec/spec.h"
#include "spec/spec-internal.h"
#include "spec/var.h"

/* The longest NAME of a memory context: "_NAME_error" must fit too. */
#define MEM_NAME_MAX (DP_FIELD_NAME_MAX - 1 - 7)

/* An ADDR longer than this is refused (no real one comes near). */
#define ADDR_MAX 128

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

static bool name_is(const char *s, size_t len, const char *name)
{
	return strlen(name) == len && !memcmp(s, name, len);
}

/* A register name of s[0..len).  any: views and extras too; else only the
 * 64-bit general registers and rip (address bases). */
static bool reg_lookup(const char *s, size_t len, bool any, struct reg_name *out)
{
	for (unsigned i = 0; i < 16; i++) {
		if (name_is(s, len, names64[i])) {
			*out = (struct reg_name){ names64[i], i, 8, 0 };
			return true;
		}
	}
	if (name_is(s, len, "rip")) {
		*out = extra_regs[0];
		return true;
	}
	if (!any)
		return false;
	for (unsigned i = 0; i < sizeof(extra_regs) / sizeof(extra_regs[0]); i++) {
		if (name_is(s, len, extra_regs[i].name)) {
			*out = extra_regs[i];
			return true;
		}
	}
	for (unsigned i = 0; i < 8; i++) {
		const char *const *tabs[3] = { names32, names16, names8 };
		static const uint8_t widths[3] = { 4, 2, 1 };

		for (unsigned t = 0; t < 3; t++) {
			if (name_is(s, len, tabs[t][i])) {
				*out = (struct reg_name){ tabs[t][i], i, widths[t], 0 };
				return true;
			}
		}
		if (i < 4 && name_is(s, len, names8h[i])) {
			*out = (struct reg_name){ names8h[i], i, 1, 8 };
			return true;
		}
	}
	return numbered_view(s, len, out);
}

/* ---- kinds ------------------------------------------------------------ */

struct type_name {
	const char *name;
	uint8_t size;
	bool is_signed, hex;
};

/* The integer types of TYPE:NAME:ADDR; the first twelve are canonical. */
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

/* The kind word: the spec up to its first ':'. */
static size_t kind_len(const char *spec)
{
	return strcspn(spec, ":");
}

static bool kind_is(const char *spec, const char *kind)
{
	return name_is(spec, kind_len(spec), kind);
}

static const struct type_name *int_type(const char *spec)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (kind_is(spec, types[i].name))
			return &types[i];
	return NULL;
}

bool dp_spec_context_is_dynamic(const char *type)
{
	return kind_is(type, "regs") || kind_is(type, "reg") || kind_is(type, "var") ||
	       kind_is(type, "args") || kind_is(type, "backtrace") ||
	       kind_is(type, "retval") || kind_is(type, "string") || int_type(type);
}

/* ---- addresses -------------------------------------------------------- */

/* A number of s[0..len) as dp_spec_number reads it (it does the work). */
static int number_in(const char *s, size_t len, uint64_t *out)
{
	char buf[32];

	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return dp_spec_number(buf, out, NULL);
}

/* "+N" or "-N" as a signed offset; nothing at all is 0.  Advances *p. */
static int parse_offset(const char **p, int64_t *out, struct dp_err *err)
{
	const char *s = *p, *q;
	uint64_t v;
	bool neg;

	*out = 0;
	if (*s != '+' && *s != '-')
		return 0;
	neg = *s++ == '-';
	for (q = s; ident_char(*q); q++)
		;
	if (number_in(s, q - s, &v) || v > (uint64_t)INT64_MAX)
		return dp_err_set(err, -EINVAL, "bad offset in address");
	*out = neg ? -(int64_t)v : (int64_t)v;
	*p = q;
	return 0;
}

/* NUM | REG[+-N] | SYMBOL[+-N], ending at `end`. */
static int parse_base_expr(const char *s, const char *end, dp_ctx_symbol_fn symbol, void *arg,
			   struct dp_ctx_addr *a, struct dp_err *err)
{
	struct reg_name r;
	const char *q = s;
	int64_t off;
	uint64_t v;
	int ret;

	if (s < end && *s >= '0' && *s <= '9') {
		if (number_in(s, end - s, &v))
			return dp_err_set(err, -EINVAL, "bad address: expected a number, or a "
					  "register and an offset");
		a->base = DP_CTX_ABS;
		a->offset = (int64_t)v;
		return 0;
	}
	if (s < end && (ident_start(*s) || *s == '.'))
		while (q < end && symbol_char(*q))
			q++;
	if (reg_lookup(s, q - s, false, &r)) {
		a->base = r.reg;
	} else if (symbol && q > s) {
		char name[DP_SPEC_SYMBOL_MAX];

		snprintf(name, sizeof(name), "%.*s", (int)(q - s), s);
		ret = symbol(arg, name, &v, err);
		if (ret)
			return ret;
		a->base = DP_CTX_ABS;
		a->offset = (int64_t)v;
	} else {
		return dp_err_set(err, -EINVAL, "bad address: unknown base register (rax..r15 or "
				  "rip)");
	}
	ret = parse_offset(&q, &off, err);
	if (ret)
		return ret;
	a->offset = (int64_t)((uint64_t)a->offset + (uint64_t)off);
	if (q != end)
		return dp_err_set(err, -EINVAL, "bad address: expected REG, REG+N or REG-N");
	return 0;
}

static int parse_addr(const char *s, dp_ctx_symbol_fn symbol, void *arg, struct dp_ctx_addr *a,
		      struct dp_err *err)
{
	const char *end;
	int ret;

	memset(a, 0, sizeof(*a));
	if (*s == '*') {
		a->deref = 1;
		s++;
	}
	if (*s != '[') {
		if (!*s)
			return dp_err_set(err, -EINVAL, "missing address");
		return parse_base_expr(s, s + strlen(s), symbol, arg, a, err);
	}
	end = strchr(s, ']');
	if (!end)
		return dp_err_set(err, -EINVAL, "bad address: no closing ']'");
	ret = parse_base_expr(s + 1, end, symbol, arg, a, err);
	if (ret)
		return ret;
	s = end + 1;
	if (a->deref) {
		ret = parse_offset(&s, &a->offset2, err);
		if (ret)
			return ret;
	}
	if (*s)
		return dp_err_set(err, -EINVAL, a->deref ? "bad address: junk after *[ADDR]+N"
						  : "bad address: junk after ']'");
	return 0;
}

/* ---- the other parts -------------------------------------------------- */

static int check_field(const char *s, size_t len, size_t max, struct dp_err *err)
{
	if (!len)
		return dp_err_set(err, -EINVAL, "the field name is empty");
	if (len > max)
		return dp_err_set(err, -EINVAL, "the field name is longer than %zu bytes", max);
	for (size_t i = 0; i < len; i++)
		if (!ident_char(s[i]) || (!i && !ident_start(s[i])))
			return dp_err_set(err, -EINVAL, "the field name must be a C identifier "
					  "(letters, digits and '_', not starting with a digit)");
	return 0;
}

static const char *const walker_names[] = {
	[DP_BT_FP] = "fp", [DP_BT_CFI] = "cfi", [DP_BT_LIBUNWIND] = "libunwind",
};

/* [:DEPTH][:fp|:cfi|:libunwind], in either order. */
static int parse_backtrace(const char *p, struct dp_ctx *out, struct dp_err *err)
{
	bool depth = false, walker = false;

	out->kind = DP_CTX_BACKTRACE;
	out->depth = DP_CTX_BT_DEFAULT;
	out->walker = DP_BT_WALKER_DEFAULT;
	strcpy(out->name, "backtrace");
	while (*p == ':') {
		const char *part = ++p;
		size_t len = strcspn(part, ":");
		char buf[32];
		uint64_t v;
		struct dp_err nerr;

		p += len;
		unsigned w = 0;

		while (w <= DP_BT_WALKER_LAST && !name_is(part, len, walker_names[w]))
			w++;
		if (w <= DP_BT_WALKER_LAST) {
			if (walker)
				return dp_err_set(err, -EINVAL,
						  "one walker at most (fp, cfi or libunwind)");
			out->walker = (uint8_t)w;
			walker = true;
			continue;
		}
		if (depth || len >= sizeof(buf))
			return dp_err_set(err, -EINVAL,
					  "expected backtrace[:DEPTH][:fp|:cfi|:libunwind]");
		memcpy(buf, part, len);
		buf[len] = '\0';
		if (dp_spec_number(buf, &v, &nerr))
			return dp_err_set(err, -EINVAL, "bad depth: %s", nerr.msg);
		if (v < 1 || v > DP_CTX_BT_MAX)
			return dp_err_set(err, -EINVAL, "the depth must be 1 to %d", DP_CTX_BT_MAX);
		out->depth = (uint16_t)v;
		depth = true;
	}
	if (*p)
		return dp_err_set(err, -EINVAL, "expected backtrace[:DEPTH][:fp|:cfi|:libunwind]");
	return 0;
}

static int parse_reg(const char *spec, struct dp_ctx *out, struct dp_err *err)
{
	const char *name = spec + 4;
	struct reg_name r;

	if (!spec[3] || !*name || strchr(name, ':'))
		return dp_err_set(err, -EINVAL, "expected reg:NAME (a register such as rax, edi, "
				  "r8w or rip)");
	if (!reg_lookup(name, strlen(name), true, &r))
		return dp_err_set(err, -EINVAL, "unknown register");
	out->kind = DP_CTX_REG;
	out->reg = r.reg;
	out->width = r.width;
	out->shift = r.shift;
	/* The field is named as the register was spelled ("pc", "r8b"): a
	 * known name, short. */
	strcpy(out->name, name);
	return 0;
}

/* string's :MAX. */
static int parse_max(const char *addr, const char *max, struct dp_ctx *out, struct dp_err *err)
{
	struct dp_err nerr;
	uint64_t v;

	if (max == addr || strchr(max + 1, ':'))
		return dp_err_set(err, -EINVAL, "expected string:NAME:ADDR[:MAX]");
	if (dp_spec_number(max + 1, &v, &nerr))
		return dp_err_set(err, -EINVAL, "bad maximum length: %s", nerr.msg);
	if (v < 1 || v > DP_CTX_STRING_MAX)
		return dp_err_set(err, -EINVAL, "the maximum length must be 1 to %d",
				  DP_CTX_STRING_MAX);
	out->maxlen = (uint32_t)v;
	return 0;
}

/* TYPE:NAME:ADDR, string:NAME:ADDR[:MAX] */
static int parse_mem(const char *spec, dp_ctx_symbol_fn symbol, void *arg, struct dp_ctx *out,
		     struct dp_err *err)
{
	const struct type_name *t = int_type(spec);
	size_t klen = kind_len(spec);
	const char *name, *addr, *max;
	char abuf[ADDR_MAX];
	size_t alen;
	int ret;

	if (!t && !kind_is(spec, "string"))
		return dp_err_set(err, -EINVAL, "not a dynamic context type");
	if (!spec[klen])
		return dp_err_set(err, -EINVAL, "expected %s:NAME:ADDR", spec);
	name = spec + klen + 1;
	addr = strchr(name, ':');
	if (!addr || !addr[1])
		return dp_err_set(err, -EINVAL, "the address is missing (expected %.*s:NAME:ADDR)",
				  (int)klen, spec);
	ret = check_field(name, addr - name, MEM_NAME_MAX, err);
	if (ret)
		return ret;
	memcpy(out->name, name, addr - name);
	addr++;
	max = strchr(addr, ':');
	if (max && t)
		return dp_err_set(err, -EINVAL, "an integer context is TYPE:NAME:ADDR (only string "
				  "takes a maximum length)");
	if (t) {
		out->kind = DP_CTX_MEM;
		out->type = (struct dp_field_desc){ .type = DP_FT_INT, .size = t->size,
						    .is_signed = t->is_signed, .hex = t->hex };
	} else {
		out->kind = DP_CTX_STRING;
		out->maxlen = DP_CTX_STRING_DEFAULT;
		ret = max ? parse_max(addr, max, out, err) : 0;
		if (ret)
			return ret;
	}
	alen = max ? (size_t)(max - addr) : strlen(addr);
	if (alen >= sizeof(abuf))
		return dp_err_set(err, -EINVAL, "address too long");
	memcpy(abuf, addr, alen);
	abuf[alen] = '\0';
	return parse_addr(abuf, symbol, arg, &out->addr, err);
}

/* var:EXPR[:TYPE]: its syntax and field name here; what it means is the
 * DWARF's, at each probe site (the daemon). */
static int parse_var(const char *spec, struct dp_ctx *out, struct dp_err *err)
{
	struct dp_var_expr e;
	int ret = dp_var_parse(spec, &e, err);

	if (ret)
		return ret;
	out->kind = DP_CTX_VAR;
	snprintf(out->name, sizeof(out->name), "%s", e.field);
	return 0;
}

int dp_ctx_parse(const char *spec, dp_ctx_symbol_fn symbol, void *arg, struct dp_ctx *out,
		 struct dp_err *err)
{
	memset(out, 0, sizeof(*out));
	if (!spec)
		return dp_err_set(err, -EINVAL, "no context");
	if (kind_is(spec, "regs") || kind_is(spec, "retval")) {
		if (spec[kind_len(spec)])
			return dp_err_set(err, -EINVAL, "%.*s takes no argument",
					  (int)kind_len(spec), spec);
		out->kind = kind_is(spec, "regs") ? DP_CTX_REGS : DP_CTX_RETVAL;
		strcpy(out->name, kind_is(spec, "regs") ? "regs" : "ret");
		return 0;
	}
	if (kind_is(spec, "var"))
		return parse_var(spec, out, err);
	if (kind_is(spec, "args")) {
		if (spec[4])
			return dp_err_set(err, -EINVAL, "args takes no argument");
		out->kind = DP_CTX_ARGS;
		strcpy(out->name, "args");
		return 0;
	}
	if (kind_is(spec, "backtrace"))
		return parse_backtrace(spec + kind_len(spec), out, err);
	if (kind_is(spec, "reg"))
		return parse_reg(spec, out, err);
	return parse_mem(spec, symbol, arg, out, err);
}

/* Before any object is open, every symbol could be one. */
static int any_symbol(void *arg, const char *name, uint64_t *value, struct dp_err *err)
{
	(void)arg;
	(void)name;
	(void)err;
	*value = 0;
	return 0;
}

int dp_spec_context_check(const char *type, struct dp_err *err)
{
	struct dp_ctx ctx;
	int ret = dp_ctx_parse(type, any_symbol, NULL, &ctx, err);

	if (ret)
		dp_err_prefix(err, "'%s': ", type);
	return ret;
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

/* Not a spec users type: "value:NAME:TYPE:RECIPE", which tells recipes
 * apart (the daemon's probe signatures) and reads well in logs. */
static int format_value(const struct dp_ctx *ctx, char *buf, size_t size)
{
	char recipe[512], type[24];

	dp_value_format(&ctx->value, recipe, sizeof(recipe));
	switch (ctx->type.type) {
	case DP_FT_DOUBLE:
		snprintf(type, sizeof(type), "%s", ctx->type.size == 4 ? "float" : "double");
		break;
	case DP_FT_STRING:
		snprintf(type, sizeof(type), "string%u", ctx->maxlen);
		break;
	default:
		snprintf(type, sizeof(type), "%s", ctx->value.flags & DP_VALUE_BOOL
			 ? "bool" : type_spelling(&ctx->type));
		break;
	}
	return snprintf(buf, size, "value:%s:%s:%s", ctx->name, type, recipe);
}

int dp_ctx_format(const struct dp_ctx *ctx, char *buf, size_t size)
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
				walker_names[ctx->walker <= DP_BT_WALKER_LAST ? ctx->walker : 0]);
	case DP_CTX_MEM:
		format_addr(&ctx->addr, addr, sizeof(addr));
		return snprintf(buf, size, "%s:%s:%s", type_spelling(&ctx->type), ctx->name, addr);
	case DP_CTX_STRING:
		format_addr(&ctx->addr, addr, sizeof(addr));
		if (ctx->maxlen != DP_CTX_STRING_DEFAULT)
			return snprintf(buf, size, "string:%s:%s:%u", ctx->name, addr, ctx->maxlen);
		return snprintf(buf, size, "string:%s:%s", ctx->name, addr);
	case DP_CTX_VALUE:
		return format_value(ctx, buf, size);
	case DP_CTX_VAR:
		return snprintf(buf, size, "var:%s", ctx->name);
	case DP_CTX_ARGS:
		return snprintf(buf, size, "args");
	}
	return snprintf(buf, size, "?");
}

/* ---- for SDT argument specs (sdt.c): the same register names ---------- */

bool spec_reg_lookup(const char *s, size_t len, uint8_t *reg, uint8_t *width, uint8_t *shift)
{
	struct reg_name r;

	if (!reg_lookup(s, len, true, &r))
		return false;
	*reg = r.reg;
	*width = r.width;
	*shift = r.shift;
	return true;
}

const char *spec_reg_name(unsigned reg)
{
	return base_name(reg);
}
