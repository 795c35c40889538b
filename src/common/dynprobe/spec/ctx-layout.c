/*
 * Context layout (see ctx.h): the fields a list of contexts gives an event,
 * and the bytes their values take.  The agent links this file (and not the
 * parser): it registers the fields with lttng-ust, and trusts nothing a
 * socket gave it before dp_ctx_layout has looked at it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "spec/ctx.h"

/* The longest NAME of a memory context: "_NAME_error" must fit too. */
#define MEM_NAME_MAX (DP_FIELD_NAME_MAX - 1 - 7)

/* The `regs` context, in gdb's `info registers` order. */
const uint8_t dp_ctx_regs_order[DP_CTX_REGS_FIELDS] = {
	0, 3, 1, 2, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15, DP_CTX_REG_RIP, DP_CTX_REG_RFLAGS,
};
static const char *const regs_names[DP_CTX_REGS_FIELDS] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
	"r12", "r13", "r14", "r15", "rip", "rflags",
};

size_t dp_ctx_nfields(const struct dp_ctx *ctx)
{
	switch (ctx->kind) {
	case DP_CTX_REGS: return DP_CTX_REGS_FIELDS;
	case DP_CTX_MEM: case DP_CTX_STRING: return 2;
	case DP_CTX_VALUE: return dp_value_can_fail(&ctx->value, &ctx->type) ? 2 : 1;
	default: return 1;
	}
}

static size_t align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

size_t dp_ctx_values_size(const struct dp_ctx *c)
{
	if (c->kind == DP_CTX_STRING ||
	    (c->kind == DP_CTX_VALUE && c->type.type == DP_FT_STRING))
		return align16(c->maxlen + 1);
	if (c->kind == DP_CTX_BACKTRACE)
		return align16(c->depth * sizeof(uint64_t));
	return 0;
}

size_t dp_ctx_list_values_size(const struct dp_ctx *ctx, size_t nctx)
{
	size_t total = 0;

	for (size_t i = 0; i < nctx; i++)
		total += dp_ctx_values_size(&ctx[i]);
	return total;
}

static struct dp_field_desc int_field(const char *name, unsigned size, bool is_signed, bool hex)
{
	struct dp_field_desc f = { .type = DP_FT_INT, .size = size, .is_signed = is_signed,
				   .hex = hex };

	snprintf(f.name, sizeof(f.name), "%s", name);
	return f;
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
		       c->walker <= DP_BT_WALKER_LAST;
	case DP_CTX_VALUE:
		return true;	/* the recipe: dp_value_check, with its reason */
	}
	return false;
}

/* A value's field (bool: an unsigned byte; float: a double), and its error
 * field when the recipe reads memory. */
static int value_fields(const struct dp_ctx *c, struct dp_field_desc *fields, size_t *n,
			struct dp_err *err)
{
	bool mem = dp_value_can_fail(&c->value, &c->type);
	char ename[DP_FIELD_NAME_MAX];

	if (mem && strlen(c->name) > MEM_NAME_MAX)
		return dp_err_set(err, -EINVAL, "field name too long");
	if (c->type.type == DP_FT_INT && (c->value.flags & DP_VALUE_BOOL))
		fields[*n] = int_field(c->name, 1, false, false);
	else if (c->type.type == DP_FT_INT)
		fields[*n] = int_field(c->name, c->type.size, c->type.is_signed, c->type.hex);
	else
		fields[*n] = (struct dp_field_desc){ .type = c->type.type };
	snprintf(fields[*n].name, sizeof(fields[*n].name), "%s", c->name);
	(*n)++;
	if (mem) {
		snprintf(ename, sizeof(ename), "_%s_error", c->name);
		fields[(*n)++] = int_field(ename, 1, false, false);
	}
	return 0;
}

/* The fields of one valid context at fields[*n], or -EINVAL. */
static int ctx_fields(const struct dp_ctx *c, struct dp_field_desc *fields, size_t *n,
		      struct dp_err *err)
{
	char ename[DP_FIELD_NAME_MAX];

	switch (c->kind) {
	case DP_CTX_REGS:
		for (unsigned r = 0; r < DP_CTX_REGS_FIELDS; r++)
			fields[(*n)++] = int_field(regs_names[r], 8, false, true);
		break;
	case DP_CTX_REG:
		fields[(*n)++] = int_field(c->name, c->width, false, true);
		break;
	case DP_CTX_RETVAL:
		fields[(*n)++] = int_field("ret", 8, true, false);
		break;
	case DP_CTX_MEM:
	case DP_CTX_STRING:
		if (strlen(c->name) > MEM_NAME_MAX)
			return dp_err_set(err, -EINVAL, "field name too long");
		if (c->kind == DP_CTX_MEM) {
			fields[(*n)++] = int_field(c->name, c->type.size, c->type.is_signed,
						   c->type.hex);
		} else {
			fields[*n] = (struct dp_field_desc){ .type = DP_FT_STRING };
			snprintf(fields[*n].name, sizeof(fields[*n].name), "%s", c->name);
			(*n)++;
		}
		snprintf(ename, sizeof(ename), "_%s_error", c->name);
		fields[(*n)++] = int_field(ename, 1, false, false);
		break;
	case DP_CTX_VALUE:
		return value_fields(c, fields, n, err);
	case DP_CTX_BACKTRACE:
		fields[*n] = (struct dp_field_desc){ .type = DP_FT_SEQ_U64, .hex = true };
		snprintf(fields[*n].name, sizeof(fields[*n].name), "%s", c->name);
		(*n)++;
		break;
	}
	return 0;
}

int dp_ctx_layout(const struct dp_ctx *ctx, size_t nctx, struct dp_field_desc *fields,
		  size_t max, size_t *nfields, struct dp_err *err)
{
	size_t n = 0;
	int ret;

	for (size_t i = 0; i < nctx; i++) {
		if (!ctx_valid(&ctx[i]))
			return dp_err_set(err, -EINVAL, "bad context");
		if (ctx[i].kind == DP_CTX_VALUE) {
			ret = dp_value_check(&ctx[i].value, &ctx[i].type, ctx[i].maxlen, err);
			if (ret)
				return ret;
		}
		if (n + dp_ctx_nfields(&ctx[i]) > max)
			return dp_err_set(err, -E2BIG, "too many fields for one event");
		ret = ctx_fields(&ctx[i], fields, &n, err);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(fields[i].name, fields[j].name))
				return dp_err_set(err, -EINVAL, "a field name is given twice (regs "
						  "already has every register)");
	if (dp_ctx_list_values_size(ctx, nctx) > DP_CTX_VALUES_MAX)
		return dp_err_set(err, -E2BIG, "the strings and backtraces of one event exceed "
				  "256 KiB");
	*nfields = n;
	return 0;
}
