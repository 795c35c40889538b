/*
 * SDT argument specs ("-4@%edi 8@-8(%rbp) 8f@%xmm0") parsed into typed
 * descriptors, described back for listings, and PROVIDER:NAME patterns
 * matched against an object's probes.  The grammar is sdt.h's.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/chars.h"
#include "spec/ctx.h"
#include "spec/sdt.h"
#include "spec/spec-internal.h"

_Static_assert(DP_SDT_REG_XMM0 == DP_VALUE_XMM0, "SDT and recipes number xmm alike");

#define REG_EXPECTED "a register as %rax, %eax, %ax, %al, %r8d, %sil or %xmm0"

/* A cursor over one argument, with its error carrier. */
struct cur {
	const char *s;
	struct dp_err *err;
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* An integer (decimal, 0x hex, with an optional sign) at *p; false when
 * none starts there or it overflows. */
static bool number(const char **p, int64_t *v)
{
	const char *s = *p;
	bool neg = *s == '-';
	uint64_t u = 0;
	unsigned base = 10;

	if (*s == '-' || *s == '+')
		s++;
	if (!is_digit(*s))
		return false;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	for (const char *d = s;; s++) {
		unsigned dig;

		if (is_digit(*s))
			dig = *s - '0';
		else if (base == 16 && ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f'))
			dig = (*s | 0x20) - 'a' + 10;
		else if (s == d)
			return false;
		else
			break;
		if (u > (UINT64_MAX - dig) / base)
			return false;
		u = u * base + dig;
	}
	if (u > (uint64_t)INT64_MAX + neg && !(base == 16 && !neg))
		return false;
	*v = neg ? (int64_t)(0 - u) : (int64_t)u;
	*p = s;
	return true;
}

/* %REG at c->s: a general register (views included) or xmm0..15. */
static int reg(struct cur *c, bool address, uint8_t *num, uint8_t *width, uint8_t *shift)
{
	const char *s = c->s, *e;

	if (*s != '%')
		return dp_err_set(c->err, -EINVAL, "expected %s at '%s'", REG_EXPECTED, s);
	e = ++s;
	while (ident_char(*e))
		e++;
	if (!strncmp(s, "xmm", 3) && e - s > 3 && e - s <= 5 && !address) {
		int64_t n;
		const char *d = s + 3;

		if (number(&d, &n) && d == e && n < 16 && (e - s == 4 || s[3] != '0')) {
			*num = DP_SDT_REG_XMM0 + n;
			*width = 16;
			*shift = 0;
			c->s = e;
			return 0;
		}
	}
	if (!spec_reg_lookup(s, e - s, num, width, shift) ||
	    (*num >= 16 && !(address && *num == DP_CTX_REG_RIP)) ||
	    (address && *width != 8))
		return dp_err_set(c->err, -EINVAL, "unknown %sregister '%.*s' (expected %s)",
				  address ? "address " : "", (int)(e - s), s,
				  address ? "a 64-bit register as %rbp, %r12 or %rip" : REG_EXPECTED);
	c->s = e;
	return 0;
}

/* "(%base,%index,scale)" at c->s, into a. */
static int mem_regs(struct cur *c, struct dp_sdt_arg *a)
{
	uint8_t w, sh;
	int64_t scale;
	int r;

	c->s++;		/* '(' */
	if (*c->s != '%' && *c->s != ',')
		return dp_err_set(c->err, -EINVAL, "expected a base register after '(' at '%s'",
				  c->s);
	if (*c->s != ',' && (r = reg(c, true, &a->base, &w, &sh)))
		return r;
	if (*c->s == ',') {
		c->s++;
		if ((r = reg(c, true, &a->index, &w, &sh)))
			return r;
		if (a->index == DP_CTX_REG_RIP || a->index == 4 /* rsp */)
			return dp_err_set(c->err, -EINVAL, "%%%s cannot be an index register",
					  spec_reg_name(a->index));
		a->scale = 1;
		if (*c->s == ',') {
			c->s++;
			if (!number(&c->s, &scale) || (scale != 1 && scale != 2 && scale != 4 &&
						       scale != 8))
				return dp_err_set(c->err, -EINVAL, "expected a scale of 1, 2, 4 "
						  "or 8 at '%s'", c->s);
			a->scale = scale;
		}
	}
	if (a->base == DP_CTX_REG_RIP && a->index != DP_SDT_REG_NONE)
		return dp_err_set(c->err, -EINVAL, "%%rip takes no index register");
	if (a->base == DP_SDT_REG_NONE && a->index == DP_SDT_REG_NONE)
		return dp_err_set(c->err, -EINVAL, "expected a base register after '('");
	if (*c->s != ')')
		return dp_err_set(c->err, -EINVAL, "expected ',' or ')' at '%s'", c->s);
	c->s++;
	return 0;
}

/* A symbol at c->s (with an optional offset after it) into a. */
static int mem_symbol(struct cur *c, struct dp_sdt_arg *a)
{
	const char *e = c->s;
	int64_t off;

	while (symbol_char(*e))
		e++;
	if (e - c->s >= DP_SDT_SYMBOL_MAX)
		return dp_err_set(c->err, -EINVAL, "symbol '%.*s' longer than %d characters",
				  (int)(e - c->s), c->s, DP_SDT_SYMBOL_MAX - 1);
	memcpy(a->symbol, c->s, e - c->s);
	a->symbol[e - c->s] = '\0';
	c->s = e;
	if (*c->s == '+' || *c->s == '-') {
		if (!number(&c->s, &off))
			return dp_err_set(c->err, -EINVAL, "expected an offset after '%s' at '%s'",
					  a->symbol, c->s);
		if (__builtin_add_overflow(a->disp, off, &a->disp))
			return dp_err_set(c->err, -EINVAL, "offset out of range");
	}
	return 0;
}

/* [DISP][SYM[+-OFF]](...) at c->s. */
static int mem(struct cur *c, struct dp_sdt_arg *a)
{
	a->kind = DP_SDT_ARG_MEM;
	a->base = a->index = DP_SDT_REG_NONE;
	a->scale = 0;
	if (*c->s != '(' && (*c->s == '-' || is_digit(*c->s))) {
		if (!number(&c->s, &a->disp))
			return dp_err_set(c->err, -EINVAL, "bad displacement at '%s'", c->s);
		if (*c->s == '+' && ident_start(c->s[1]))
			c->s++;
	}
	if (ident_start(*c->s) || *c->s == '.') {
		int r = mem_symbol(c, a);

		if (r)
			return r;
	}
	if (*c->s != '(')
		return dp_err_set(c->err, -EINVAL, "expected '$INT', '%%REG' or "
				  "'DISP(%%BASE,%%INDEX,SCALE)' at '%s'", c->s);
	return mem_regs(c, a);
}

/* The operand at c->s, into a (its size not yet checked). */
static int operand(struct cur *c, struct dp_sdt_arg *a)
{
	if (*c->s == '$') {
		c->s++;
		a->kind = DP_SDT_ARG_IMM;
		if (!number(&c->s, &a->imm))
			return dp_err_set(c->err, -EINVAL, "expected an integer after '$' at '%s'",
					  c->s);
		return 0;
	}
	if (*c->s == '%') {
		a->kind = DP_SDT_ARG_REG;
		return reg(c, false, &a->reg, &a->reg_width, &a->reg_shift);
	}
	return mem(c, a);
}

/* "[-]SIZE[f]@" at c->s, when written. */
static int size_prefix(struct cur *c, struct dp_sdt_arg *a)
{
	const char *s = c->s;
	bool neg = *s == '-';
	unsigned size = 0;

	if (neg)
		s++;
	while (is_digit(*s) && size < 100)
		size = size * 10 + (*s++ - '0');
	if (s == c->s + neg)
		return 0;
	a->is_float = *s == 'f';
	if (a->is_float)
		s++;
	if (*s != '@') {
		a->is_float = false;
		return 0;	/* a displacement: "-8(%rbp)" */
	}
	if (size != 1 && size != 2 && size != 4 && size != 8)
		return dp_err_set(c->err, -EINVAL, "size %.*s is not 1, 2, 4 or 8 bytes",
				  (int)(s - c->s), c->s);
	if (a->is_float && size < 4)
		return dp_err_set(c->err, -EINVAL, "a float of %u bytes (expected 4f@ or 8f@)",
				  size);
	a->sized = true;
	a->size = size;
	a->is_signed = neg || a->is_float;
	c->s = s + 1;
	return 0;
}

/* Size, sign and float: as written, else from the operand. */
static int arg_settle(struct cur *c, struct dp_sdt_arg *a)
{
	bool xmm = a->kind == DP_SDT_ARG_REG && a->reg >= DP_SDT_REG_XMM0;

	if (!a->sized) {
		a->size = a->kind == DP_SDT_ARG_REG && !xmm ? a->reg_width : 8;
		a->is_float = xmm;
		a->is_signed = xmm;
		return 0;
	}
	if (xmm) {
		a->is_float = a->is_signed = true;
		if (a->size < 4)
			return dp_err_set(c->err, -EINVAL, "an %%xmm register holds a float of 4 "
					  "or 8 bytes, not %u", a->size);
	} else if (a->kind == DP_SDT_ARG_REG && a->size > a->reg_width) {
		return dp_err_set(c->err, -EINVAL, "%u bytes from a %u-byte register view",
				  a->size, a->reg_width);
	}
	if (a->is_float && a->kind == DP_SDT_ARG_REG && !xmm && a->size != a->reg_width)
		return dp_err_set(c->err, -EINVAL, "a float takes its whole register");
	return 0;
}

/* One argument, s[0..len). */
static int arg_parse(const char *s, size_t len, struct dp_sdt_arg *a, struct dp_err *err)
{
	char buf[256];
	struct cur c = { buf, err };
	int r;

	if (len >= sizeof(buf))
		return dp_err_set(err, -EINVAL, "longer than %zu characters", sizeof(buf) - 1);
	memcpy(buf, s, len);
	buf[len] = '\0';
	memset(a, 0, sizeof(*a));
	a->base = a->index = DP_SDT_REG_NONE;
	r = size_prefix(&c, a);
	if (!r)
		r = operand(&c, a);
	if (!r && *c.s)
		r = dp_err_set(err, -EINVAL, "unexpected '%s' after the operand", c.s);
	if (!r)
		r = arg_settle(&c, a);
	return r;
}

int dp_spec_sdt_args_parse(const char *spec, struct dp_sdt_args *out, struct dp_err *err)
{
	const char *s = spec;

	out->n = 0;
	for (;;) {
		size_t len;
		int r;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return 0;
		len = strcspn(s, " \t");
		if (out->n == DP_SDT_ARGS_MAX)
			return dp_err_set(err, -EINVAL, "argument spec '%s': more than %d arguments",
					  spec, DP_SDT_ARGS_MAX);
		r = arg_parse(s, len, &out->v[out->n], err);
		if (r)
			return dp_err_prefix(err, "argument spec '%s': argument %u '%.*s': ", spec,
					     out->n + 1, (int)len, s);
		out->n++;
		s += len;
	}
}

/* "int32", "uint8", "double". */
static const char *type_name(const struct dp_sdt_arg *a)
{
	static const char *const ints[2][4] = {
		{ "uint8", "uint16", "uint32", "uint64" },
		{ "int8", "int16", "int32", "int64" },
	};
	unsigned i = a->size == 1 ? 0 : a->size == 2 ? 1 : a->size == 4 ? 2 : 3;

	if (a->is_float)
		return a->size == 4 ? "float" : "double";
	return ints[a->is_signed][i];
}

static int format_reg(const struct dp_sdt_arg *a, char *buf, size_t size)
{
	if (a->reg >= DP_SDT_REG_XMM0)
		return snprintf(buf, size, "xmm%u", a->reg - DP_SDT_REG_XMM0);
	if (a->reg_shift)
		return snprintf(buf, size, "%s bits 8-15", spec_reg_name(a->reg));
	if (a->reg_width == 8)
		return snprintf(buf, size, "%s", spec_reg_name(a->reg));
	return snprintf(buf, size, "%s (low %u bytes)", spec_reg_name(a->reg), a->reg_width);
}

static int format_mem(const struct dp_sdt_arg *a, char *buf, size_t size)
{
	char base[16] = "", index[24] = "", off[48] = "";
	bool rip = a->base == DP_CTX_REG_RIP;

	if (a->base != DP_SDT_REG_NONE && !rip)
		snprintf(base, sizeof(base), "%s", spec_reg_name(a->base));
	if (a->index != DP_SDT_REG_NONE)
		snprintf(index, sizeof(index), "%s%s*%u", base[0] ? "+" : "",
			 spec_reg_name(a->index), a->scale);
	if (a->disp)
		snprintf(off, sizeof(off), "%s0x%" PRIx64,
			 a->disp < 0 ? "-" : base[0] || index[0] || a->symbol[0] ? "+" : "",
			 a->disp < 0 ? -(uint64_t)a->disp : (uint64_t)a->disp);
	if (rip)
		return snprintf(buf, size, "[rip: %s%s]", a->symbol[0] ? a->symbol : "",
				a->symbol[0] || a->disp ? off : "+0");
	return snprintf(buf, size, "[%s%s%s%s%s]", base, index,
			a->symbol[0] && (base[0] || index[0]) ? "+" : "", a->symbol, off);
}

int dp_spec_sdt_arg_format(const struct dp_sdt_arg *a, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s ", type_name(a));

	if (n < 0 || (size_t)n >= size)
		return n;
	switch (a->kind) {
	case DP_SDT_ARG_REG:
		return n + format_reg(a, buf + n, size - n);
	case DP_SDT_ARG_IMM:
		return n + snprintf(buf + n, size - n, "$%" PRId64, a->imm);
	case DP_SDT_ARG_MEM:
		break;
	}
	return n + format_mem(a, buf + n, size - n);
}

/* ---- PROVIDER:NAME patterns ------------------------------------------- */

struct sdt_names {
	const struct dp_sdt_probe *probes;
	size_t n;
	char (*full)[2 * DP_SDT_SYMBOL_MAX];
};

static void sdt_names_each(spec_name_visit visit, void *visit_arg, void *arg)
{
	struct sdt_names *s = arg;

	for (size_t i = 0; i < s->n; i++) {
		visit(visit_arg, s->full[i], s->full[i]);
		visit(visit_arg, s->probes[i].provider, s->probes[i].provider);
	}
}

/* Why nothing matched, with the close provider:name pairs. */
static int sdt_none(const struct dp_sdt_probe *probes, size_t n, const char *pattern,
		    struct dp_err *err)
{
	struct sdt_names s = { probes, n, calloc(n ? n : 1, sizeof(*s.full)) };
	char hint[512];

	if (!s.full)
		return dp_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		snprintf(s.full[i], sizeof(s.full[i]), "%s:%s", probes[i].provider,
			 probes[i].name);
	spec_suggest(pattern, sdt_names_each, &s, hint, sizeof(hint));
	free(s.full);
	return dp_err_set(err, -ENOENT, "no SDT probe matches '%s'%s", pattern,
			  hint[0] ? hint : " (none has a close name: list them all with --sdt "
			  "alone)");
}

int dp_spec_sdt_match(const struct dp_sdt_probe *probes, size_t n, const char *pattern,
		      const struct dp_sdt_probe ***match, size_t *nmatch, struct dp_err *err)
{
	const char *colon = strchr(pattern, ':');
	char prov[DP_SDT_SYMBOL_MAX];
	const char *name = colon ? colon + 1 : pattern;

	*match = NULL;
	*nmatch = 0;
	if (colon && (size_t)(colon - pattern) >= sizeof(prov))
		return dp_err_set(err, -EINVAL, "'%s': provider longer than %zu characters",
				  pattern, sizeof(prov) - 1);
	snprintf(prov, sizeof(prov), "%.*s", colon ? (int)(colon - pattern) : 1,
		 colon ? pattern : "*");
	if (!prov[0] || !name[0] || strchr(name, ':'))
		return dp_err_set(err, -EINVAL, "'%s': expected PROVIDER:NAME or NAME "
				  "(wildcards allowed: 'libc:memory_*')", pattern);
	*match = malloc((n ? n : 1) * sizeof(**match));
	if (!*match)
		return dp_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (!fnmatch(prov, probes[i].provider, 0) && !fnmatch(name, probes[i].name, 0))
			(*match)[(*nmatch)++] = &probes[i];
	if (*nmatch)
		return 0;
	free(*match);
	*match = NULL;
	return sdt_none(probes, n, pattern, err);
}

/* ---- arguments as value recipes ----------------------------------------- */

int dp_spec_sdt_arg_type(const struct dp_sdt_arg *const *args, size_t n,
			 struct dp_field_desc *type, struct dp_err *err)
{
	unsigned floats = 0;

	memset(type, 0, sizeof(*type));
	type->type = DP_FT_INT;
	for (size_t i = 0; i < n; i++) {
		floats += args[i]->is_float;
		if (args[i]->size > type->size)
			type->size = args[i]->size;
		type->is_signed |= args[i]->is_signed;
	}
	if (floats && floats != n)
		return dp_err_set(err, -EINVAL, "a float at %u site%s and an integer at %zu: one "
				  "field cannot record both", floats, floats == 1 ? "" : "s",
				  n - floats);
	if (floats) {
		type->type = DP_FT_DOUBLE;
		type->is_signed = false;
	}
	return 0;
}

/* The address of a memory operand, pushed. */
static int sdt_address(const struct dp_sdt_arg *a, dp_ctx_symbol_fn symbol, void *arg,
		       struct dp_value *v, struct dp_err *err)
{
	uint64_t addr;
	int ret;

	if (a->base == DP_CTX_REG_RIP) {
		if (!a->symbol[0])
			return dp_err_set(err, -EINVAL, "a %%rip operand without a symbol: the site "
					  "is a nop, with no instruction to be relative to");
		if (!symbol)
			return dp_err_set(err, -EINVAL, "symbol '%s': no object to look it up in",
					  a->symbol);
		ret = symbol(arg, a->symbol, &addr, err);
		if (ret)
			return ret;
		return dp_value_push(v, DP_VOP_CONST, 0, (int64_t)(addr + (uint64_t)a->disp));
	}
	if (a->symbol[0])
		return dp_err_set(err, -EINVAL, "a symbol ('%s') on a register other than %%rip",
				  a->symbol);
	if (a->base == DP_SDT_REG_NONE)
		ret = dp_value_push(v, DP_VOP_CONST, 0, a->disp);
	else
		ret = dp_value_push(v, DP_VOP_REG, a->base, a->disp);
	if (!ret && a->index != DP_SDT_REG_NONE) {
		ret = dp_value_push(v, DP_VOP_REG, a->index, 0);
		if (!ret && a->scale > 1)
			ret = dp_value_push(v, DP_VOP_MULC, 0, a->scale);
		if (!ret)
			ret = dp_value_push(v, DP_VOP_ADD, 0, 0);
	}
	return ret;
}

int dp_spec_sdt_arg_ctx(const struct dp_sdt_arg *a, const struct dp_field_desc *type,
			const char *name, dp_ctx_symbol_fn symbol, void *arg, struct dp_ctx *out,
			struct dp_err *err)
{
	struct dp_value *v = &out->value;
	/* An integer narrower than its field is extended as its own spec says. */
	bool widen = !a->is_float && a->size < type->size;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->kind = DP_CTX_VALUE;
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->type = *type;
	if (a->is_float)
		out->type.size = a->size;	/* how to read the bits; the field is a double */
	v->loc = DP_VALUE_LOC_VALUE;
	switch (a->kind) {
	case DP_SDT_ARG_IMM:
		ret = dp_value_push(v, DP_VOP_CONST, 0, a->imm);
		break;
	case DP_SDT_ARG_REG:
		ret = dp_value_push(v, DP_VOP_REG, a->reg, 0);
		if (!ret && a->reg_shift)
			ret = dp_value_push(v, DP_VOP_SHR, a->reg_shift, 0);
		break;
	case DP_SDT_ARG_MEM:
		ret = sdt_address(a, symbol, arg, v, err);
		if (ret)
			break;
		if (widen)
			ret = dp_value_push(v, DP_VOP_DEREF, a->size, 0);
		else
			v->loc = DP_VALUE_LOC_ADDR;
		break;
	}
	if (!ret && widen && a->size < 8)
		ret = dp_value_push(v, a->is_signed ? DP_VOP_SEXT : DP_VOP_ZEXT, a->size, 0);
	if (ret == -E2BIG)
		ret = dp_err_set(err, -E2BIG, "the operand takes more than %u steps",
				 DP_VALUE_MAX_OPS);
	if (!ret)
		ret = dp_value_check(v, &out->type, 0, err);
	return ret;
}

/* ---- one probe's sites, as an event records them ------------------------- */

void dp_spec_sdt_event_release(struct dp_sdt_event *ev)
{
	free(ev->sites);
	free(ev->args);
	memset(ev, 0, sizeof(*ev));
}

/* The sites of the one probe m[0..nm) names, copied; -EINVAL when they are
 * several probes. */
static int sdt_one(const char *pattern, const struct dp_sdt_probe **m, size_t nm,
		   struct dp_sdt_event *out, struct dp_err *err)
{
	char others[256] = "";
	size_t len = 0, nother = 0;

	for (size_t i = 0; i < nm; i++) {
		if (!strcmp(m[i]->provider, m[0]->provider) && !strcmp(m[i]->name, m[0]->name))
			continue;
		nother++;
		if (len < sizeof(others))
			len += (size_t)snprintf(others + len, sizeof(others) - len, ", %s:%s",
						m[i]->provider, m[i]->name);
	}
	if (nother)
		return dp_err_set(err, -EINVAL, "'%s' names more than one SDT probe (%s:%s%s): "
				  "one event records one probe", pattern, m[0]->provider,
				  m[0]->name, others);
	out->sites = calloc(nm, sizeof(*out->sites));
	out->args = calloc(nm, sizeof(*out->args));
	if (!out->sites || !out->args)
		return dp_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < nm; i++)
		out->sites[i] = *m[i];
	out->nsites = nm;
	out->provider = m[0]->provider;
	out->name = m[0]->name;
	return 0;
}

/* Every site's arguments parsed, and their types across sites. */
static int sdt_types(struct dp_sdt_event *ev, struct dp_err *err)
{
	const struct dp_sdt_arg **col = calloc(ev->nsites, sizeof(*col));
	int ret = col ? 0 : dp_err_set(err, -ENOMEM, "out of memory");

	for (size_t i = 0; !ret && i < ev->nsites; i++) {
		ret = dp_spec_sdt_args_parse(ev->sites[i].args, &ev->args[i], err);
		if (ret)
			dp_err_prefix(err, "%s:%s at 0x%" PRIx64 ": ", ev->provider, ev->name,
				      ev->sites[i].pc);
		else if (ev->args[i].n != ev->args[0].n)
			ret = dp_err_set(err, -EINVAL, "the sites of %s:%s disagree on the number "
					 "of arguments (%u at 0x%" PRIx64 ", %u at 0x%" PRIx64 ")",
					 ev->provider, ev->name, ev->args[0].n, ev->sites[0].pc,
					 ev->args[i].n, ev->sites[i].pc);
	}
	ev->nargs = ret ? 0 : ev->args[0].n;
	for (unsigned k = 0; !ret && k < ev->nargs; k++) {
		for (size_t i = 0; i < ev->nsites; i++)
			col[i] = &ev->args[i].v[k];
		ret = dp_spec_sdt_arg_type(col, ev->nsites, &ev->types[k], err);
		if (ret)
			dp_err_prefix(err, "argument %u of %s:%s: ", k, ev->provider, ev->name);
		snprintf(ev->types[k].name, sizeof(ev->types[k].name), "arg%u", k);
	}
	free(col);
	return ret;
}

int dp_spec_sdt_event(struct dp_elf *elf, const char *probe, struct dp_sdt_event *out,
		      struct dp_err *err)
{
	struct dp_sdt_probe *all = NULL;
	const struct dp_sdt_probe **m = NULL;
	size_t n = 0, nm = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = dp_elf_sdt_probes(elf, &all, &n, err);
	if (!ret)
		ret = dp_spec_sdt_match(all, n, probe, &m, &nm, err);
	if (!ret)
		ret = sdt_one(probe, m, nm, out, err);
	if (!ret)
		ret = sdt_types(out, err);
	free(m);
	free(all);
	if (ret)
		dp_spec_sdt_event_release(out);
	return ret;
}

void dp_spec_sdt_names_free(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

int dp_spec_sdt_names(struct dp_elf *elf, const char *pattern, char ***names, size_t *n,
		      struct dp_err *err)
{
	struct dp_sdt_probe *all = NULL;
	const struct dp_sdt_probe **m = NULL;
	size_t nall = 0, nm = 0;
	int ret;

	*names = NULL;
	*n = 0;
	ret = dp_elf_sdt_probes(elf, &all, &nall, err);
	if (!ret)
		ret = dp_spec_sdt_match(all, nall, pattern, &m, &nm, err);
	if (!ret && !(*names = calloc(nm, sizeof(**names))))
		ret = dp_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; !ret && i < nm; i++) {
		char full[2 * DP_SDT_SYMBOL_MAX + 2];
		bool seen = false;

		snprintf(full, sizeof(full), "%s:%s", m[i]->provider, m[i]->name);
		for (size_t k = 0; k < *n && !seen; k++)
			seen = !strcmp((*names)[k], full);
		if (seen)
			continue;
		(*names)[*n] = strdup(full);
		if (!(*names)[(*n)++])
			ret = dp_err_set(err, -ENOMEM, "out of memory");
	}
	free(m);
	free(all);
	if (ret) {
		dp_spec_sdt_names_free(*names, *n);
		*names = NULL;
		*n = 0;
	}
	return ret;
}
