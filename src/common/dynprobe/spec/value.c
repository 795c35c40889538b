/*
 * Value recipes (see value.h): the static checks the agent runs on every
 * recipe it receives, and what the daemon's compilers build them with.
 * Linked by the agent: no parser, no libelf.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "spec/ctx.h"
#include "spec/value.h"

static bool size_ok(unsigned n)
{
	return n == 1 || n == 2 || n == 4 || n == 8;
}

static bool reg_ok(unsigned r)
{
	return r < DP_CTX_REG__COUNT ||
	       (r >= DP_VALUE_XMM0 && r < DP_VALUE_XMM0 + DP_VALUE_XMM_COUNT);
}

/* One op's effect on the depth (pops, pushes) and its operand's check. */
static int op_check(const struct dp_value_op *o, unsigned *depth, uint8_t *pieces,
		    struct dp_err *err)
{
	unsigned pops = 0, pushes = 0;

	switch (o->op) {
	case DP_VOP_REG:
		if (!reg_ok(o->arg))
			return dp_err_set(err, -EINVAL, "value recipe: no register %u", o->arg);
		pushes = 1;
		break;
	case DP_VOP_CONST:
		pushes = 1;
		break;
	case DP_VOP_ADDC:
	case DP_VOP_MULC:
		pops = pushes = 1;
		break;
	case DP_VOP_SHR:
		if (o->arg >= 64)
			return dp_err_set(err, -EINVAL, "value recipe: shift by %u", o->arg);
		pops = pushes = 1;
		break;
	case DP_VOP_ADD:
		pops = 2;
		pushes = 1;
		break;
	case DP_VOP_DEREF:
		if (!size_ok(o->arg))
			return dp_err_set(err, -EINVAL, "value recipe: read of %u bytes", o->arg);
		pops = pushes = 1;
		break;
	case DP_VOP_SEXT:
	case DP_VOP_ZEXT:
		if (o->arg != 1 && o->arg != 2 && o->arg != 4)
			return dp_err_set(err, -EINVAL, "value recipe: an extension from %u bytes",
					  o->arg);
		pops = pushes = 1;
		break;
	case DP_VOP_BITS:
		if (o->arg < 1 || o->arg > 63 || (o->imm != 0 && o->imm != 1))
			return dp_err_set(err, -EINVAL, "value recipe: a bit-field of %u bits",
					  o->arg);
		pops = pushes = 1;
		break;
	case DP_VOP_PIECE:
		if (o->arg < 1 || o->arg > 8 || o->imm < 0 || o->imm + o->arg > 8)
			return dp_err_set(err, -EINVAL, "value recipe: a piece outside 8 bytes");
		for (unsigned b = 0; b < o->arg; b++) {
			if (*pieces & (1u << (o->imm + b)))
				return dp_err_set(err, -EINVAL, "value recipe: pieces overlap");
			*pieces |= (uint8_t)(1u << (o->imm + b));
		}
		pops = 1;
		break;
	default:
		return dp_err_set(err, -EINVAL, "value recipe: unknown op %u", o->op);
	}
	if (*depth < pops)
		return dp_err_set(err, -EINVAL, "value recipe: an op pops an empty stack");
	*depth = *depth - pops + pushes;
	if (*depth > DP_VALUE_MAX_DEPTH)
		return dp_err_set(err, -EINVAL, "value recipe: deeper than %u", DP_VALUE_MAX_DEPTH);
	return 0;
}

static int type_check(const struct dp_value *v, const struct dp_field_desc *t, uint32_t maxlen,
		      struct dp_err *err)
{
	switch (t->type) {
	case DP_FT_INT:
		if (!size_ok(t->size))
			return dp_err_set(err, -EINVAL, "value: an integer of %u bytes", t->size);
		break;
	case DP_FT_DOUBLE:
		if (t->size != 4 && t->size != 8)
			return dp_err_set(err, -EINVAL, "value: a float of %u bytes", t->size);
		break;
	case DP_FT_STRING:
		if (maxlen < 1 || maxlen > DP_CTX_STRING_MAX)
			return dp_err_set(err, -EINVAL, "value: a string of at most %" PRIu32
					  " bytes", maxlen);
		if (v->loc == DP_VALUE_LOC_PIECES)
			return dp_err_set(err, -EINVAL, "value: a string in pieces");
		break;
	default:
		return dp_err_set(err, -EINVAL, "value: type %u", t->type);
	}
	if ((v->flags & DP_VALUE_BOOL) && t->type != DP_FT_INT)
		return dp_err_set(err, -EINVAL, "value: a bool that is not an integer");
	return 0;
}

int dp_value_check(const struct dp_value *v, const struct dp_field_desc *type, uint32_t maxlen,
		   struct dp_err *err)
{
	unsigned depth = 0;
	uint8_t pieces = 0;
	bool piece_ops = false;
	int ret;

	if (v->nops < 1 || v->nops > DP_VALUE_MAX_OPS)
		return dp_err_set(err, -EINVAL, "value recipe: %" PRIu32 " ops (1 to %u)",
				  v->nops, DP_VALUE_MAX_OPS);
	if (v->loc > DP_VALUE_LOC_PIECES || (v->flags & ~(unsigned)DP_VALUE_FLAGS_ALL))
		return dp_err_set(err, -EINVAL, "value recipe: bad result kind");
	for (uint32_t i = 0; i < v->nops; i++) {
		ret = op_check(&v->ops[i], &depth, &pieces, err);
		if (ret)
			return ret;
		piece_ops |= v->ops[i].op == DP_VOP_PIECE;
	}
	if (piece_ops != (v->loc == DP_VALUE_LOC_PIECES))
		return dp_err_set(err, -EINVAL, "value recipe: pieces without a piece result, or "
				  "the reverse");
	if (depth != (v->loc == DP_VALUE_LOC_PIECES ? 0u : 1u))
		return dp_err_set(err, -EINVAL, "value recipe: the stack ends with %u entries",
				  depth);
	return type_check(v, type, maxlen, err);
}

bool dp_value_can_fail(const struct dp_value *v, const struct dp_field_desc *type)
{
	if (v->loc == DP_VALUE_LOC_ADDR || type->type == DP_FT_STRING)
		return true;
	for (uint32_t i = 0; i < v->nops && i < DP_VALUE_MAX_OPS; i++)
		if (v->ops[i].op == DP_VOP_DEREF ||
		    (v->ops[i].op == DP_VOP_REG && v->ops[i].arg >= DP_VALUE_XMM0))
			return true;
	return false;
}

bool dp_value_uses_xmm(const struct dp_value *v)
{
	for (uint32_t i = 0; i < v->nops && i < DP_VALUE_MAX_OPS; i++)
		if (v->ops[i].op == DP_VOP_REG && v->ops[i].arg >= DP_VALUE_XMM0)
			return true;
	return false;
}

int dp_value_push(struct dp_value *v, uint8_t op, uint8_t arg, int64_t imm)
{
	if (v->nops >= DP_VALUE_MAX_OPS)
		return -E2BIG;
	v->ops[v->nops++] = (struct dp_value_op){ .op = op, .arg = arg, .imm = imm };
	return 0;
}

/* ---- describing ------------------------------------------------------- */

static const char *const reg_names[DP_CTX_REG__COUNT] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11",
	"r12", "r13", "r14", "r15", "rip", "rflags", "fs_base", "gs_base",
};

struct out {
	char *buf;
	size_t size, len;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->size ? o->buf + o->len : NULL,
		      o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void put_num(struct out *o, int64_t n, bool sign)
{
	if (n < 0)
		put(o, "-0x%" PRIx64, -(uint64_t)n);
	else
		put(o, "%s0x%" PRIx64, sign ? "+" : "", (uint64_t)n);
}

/* Postfix, one token per op: "rbp-0x14 @4", "rax rdx *8 + @8". */
int dp_value_format(const struct dp_value *v, char *buf, size_t size)
{
	struct out o = { buf, size, 0 };

	if (size)
		buf[0] = 0;
	for (uint32_t i = 0; i < v->nops && i < DP_VALUE_MAX_OPS; i++) {
		const struct dp_value_op *op = &v->ops[i];

		if (i)
			put(&o, " ");
		switch (op->op) {
		case DP_VOP_REG:
			if (op->arg >= DP_VALUE_XMM0)
				put(&o, "xmm%u", op->arg - DP_VALUE_XMM0);
			else if (op->arg < DP_CTX_REG__COUNT)
				put(&o, "%s", reg_names[op->arg]);
			if (op->imm)
				put_num(&o, op->imm, true);
			break;
		case DP_VOP_CONST: put_num(&o, op->imm, false); break;
		case DP_VOP_ADDC: put(&o, "+"); put_num(&o, op->imm, false); break;
		case DP_VOP_ADD: put(&o, "+"); break;
		case DP_VOP_MULC: put(&o, "*%" PRId64, op->imm); break;
		case DP_VOP_SHR: put(&o, ">>%u", op->arg); break;
		case DP_VOP_DEREF: put(&o, "@%u", op->arg); break;
		case DP_VOP_PIECE: put(&o, "piece%u:%" PRId64, op->arg, op->imm); break;
		case DP_VOP_SEXT: put(&o, "sext%u", op->arg); break;
		case DP_VOP_ZEXT: put(&o, "zext%u", op->arg); break;
		case DP_VOP_BITS: put(&o, "%sbits%u", op->imm ? "s" : "u", op->arg); break;
		default: put(&o, "?"); break;
		}
	}
	if (v->loc == DP_VALUE_LOC_ADDR)
		put(&o, " addr");
	return (int)o.len;
}
