/*
 * Contexts at a hit (see context.h): registers from the saved state, memory
 * through memread.c, backtraces through unwind.c.
 *
 * Evaluation runs inside the hit path, possibly in a SIGTRAP handler: it
 * never allocates.
 */
#include <asm/prctl.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context.h"
#include "hit.h"

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

/* ---- registers -------------------------------------------------------- */

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
static __attribute__((noinline)) uint64_t seg_base(unsigned reg)
{
	struct dpa_thread *t = &dpa_self;
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

static inline uint64_t reg_value(const struct dp_regs *regs, unsigned reg)
{
	if (__builtin_expect(reg < 18, 1))
		return ((const uint64_t *)regs)[reg];
	return seg_base(reg);
}

/* What the trampolines save (the daemon detects it the same way). */
static enum dp_vec_save vec_save;
static bool vec_save_known;

/* The low 64 bits of xmm n at this hit: 0 or -ENODATA (not saved). */
static int xmm_value(const struct dp_regs *regs, unsigned n, uint64_t *out)
{
	const struct dpa_thread *t = &dpa_self;
	const uint8_t *p;

	if (t->trap_regs == regs)
		p = t->trap_xmm ? (const uint8_t *)t->trap_xmm + 16 * n : NULL;
	else
		p = __atomic_load_n(&vec_save_known, __ATOMIC_ACQUIRE)
			    ? dp_tramp_vec_reg(regs, vec_save, n) : NULL;
	if (!p)
		return -ENODATA;
	memcpy(out, p, sizeof(*out));
	return 0;
}

size_t dpa_ctx_prepare(const struct dp_ctx *ctx, size_t nctx)
{
	size_t total = dp_ctx_list_values_size(ctx, nctx), walker = 0;

	if (!__atomic_load_n(&vec_save_known, __ATOMIC_ACQUIRE)) {
		vec_save = dp_vec_save_detect();
		__atomic_store_n(&vec_save_known, true, __ATOMIC_RELEASE);
	}
	for (size_t i = 0; i < nctx; i++) {
		if (ctx[i].kind == DP_CTX_BACKTRACE) {
			size_t need = dpa_bt_prepare(ctx[i].walker);

			walker = need > walker ? need : walker;
		}
	}
	return total + ((walker + 15) & ~(size_t)15);
}

/* ---- evaluation ------------------------------------------------------- */

/* A recipe that only combines registers (no xmm, no fs/gs base) and
 * constants into an integer. */
static bool value_regs_only(const struct dp_ctx *c)
{
	if (c->type.type != DP_FT_INT || c->value.loc == DP_VALUE_LOC_ADDR ||
	    dp_value_can_fail(&c->value, &c->type))
		return false;
	for (uint32_t i = 0; i < c->value.nops; i++) {
		const struct dp_value_op *o = &c->value.ops[i];

		if (o->op == DP_VOP_DEREF || (o->op == DP_VOP_REG && o->arg >= 18))
			return false;
	}
	return true;
}

bool dpa_ctx_regs_only(const struct dp_ctx *ctx, size_t nctx)
{
	for (size_t i = 0; i < nctx; i++) {
		switch (ctx[i].kind) {
		case DP_CTX_REG:
			if (ctx[i].reg >= 18)
				return false;
			break;
		case DP_CTX_REGS:
		case DP_CTX_RETVAL:
			break;
		case DP_CTX_VALUE:
			if (!value_regs_only(&ctx[i]))
				return false;
			break;
		default:
			return false;
		}
	}
	return true;
}

static int ctx_address(const struct dp_ctx_addr *a, const struct dpa_ctx_env *env, uint64_t *out)
{
	uint64_t addr = a->base == DP_CTX_ABS ? (uint64_t)a->offset
					      : reg_value(env->regs, a->base) + (uint64_t)a->offset;

	if (a->deref) {
		uint64_t p;
		int ret = dpa_mem_read(env->regs, env->own, &p, addr, sizeof(p));

		if (ret)
			return ret;
		addr = p + (uint64_t)a->offset2;
	}
	*out = addr;
	return 0;
}

/* Runs a checked recipe (spec/value.h): its value in *out (a string's
 * address), 0 or the -errno of the read that failed. */
static int value_run(const struct dp_value *v, const struct dp_field_desc *type,
		     const struct dpa_ctx_env *env, uint64_t *out)
{
	uint64_t stack[DP_VALUE_MAX_DEPTH], pieces = 0, x;
	unsigned sp = 0;
	int ret;

	/* The common recipe: one general register (an SDT argument, a
	 * parameter in a register). */
	if (v->nops == 1 && v->loc == DP_VALUE_LOC_VALUE && v->ops[0].op == DP_VOP_REG &&
	    v->ops[0].arg < 18) {
		*out = reg_value(env->regs, v->ops[0].arg) + (uint64_t)v->ops[0].imm;
		return 0;
	}
	for (uint32_t i = 0; i < v->nops; i++) {
		const struct dp_value_op *o = &v->ops[i];

		switch (o->op) {
		case DP_VOP_REG:
			if (o->arg >= DP_VALUE_XMM0) {
				ret = xmm_value(env->regs, o->arg - DP_VALUE_XMM0, &x);
				if (ret)
					return ret;
			} else {
				x = reg_value(env->regs, o->arg);
			}
			stack[sp++] = x + (uint64_t)o->imm;
			break;
		case DP_VOP_CONST:
			stack[sp++] = (uint64_t)o->imm;
			break;
		case DP_VOP_ADDC:
			stack[sp - 1] += (uint64_t)o->imm;
			break;
		case DP_VOP_ADD:
			sp--;
			stack[sp - 1] += stack[sp];
			break;
		case DP_VOP_MULC:
			stack[sp - 1] *= (uint64_t)o->imm;
			break;
		case DP_VOP_SHR:
			stack[sp - 1] >>= o->arg;
			break;
		case DP_VOP_DEREF:
			x = 0;
			ret = dpa_mem_read(env->regs, env->own, &x, stack[sp - 1], o->arg);
			if (ret)
				return ret;
			stack[sp - 1] = x;
			break;
		case DP_VOP_SEXT:
			x = stack[sp - 1] << (64 - o->arg * 8);
			stack[sp - 1] = (uint64_t)((int64_t)x >> (64 - o->arg * 8));
			break;
		case DP_VOP_ZEXT:
			stack[sp - 1] &= (1ull << (o->arg * 8)) - 1;
			break;
		case DP_VOP_BITS:
			x = stack[sp - 1] << (64 - o->arg);
			stack[sp - 1] = o->imm ? (uint64_t)((int64_t)x >> (64 - o->arg))
					       : x >> (64 - o->arg);
			break;
		case DP_VOP_PIECE:
			x = stack[--sp];
			if (o->arg < 8)
				x &= (1ull << (o->arg * 8)) - 1;
			pieces |= x << (o->imm * 8);
			break;
		}
	}
	if (v->loc == DP_VALUE_LOC_PIECES) {
		*out = pieces;
		return 0;
	}
	x = stack[sp - 1];
	if (v->loc == DP_VALUE_LOC_ADDR && type->type != DP_FT_STRING) {
		uint64_t addr = x;

		x = 0;
		ret = dpa_mem_read(env->regs, env->own, &x, addr, type->size);
		if (ret)
			return ret;
	}
	*out = x;
	return 0;
}

static uint8_t error_value(long ret)
{
	return ret < 0 ? (uint8_t)(-ret > 255 ? 255 : -ret) : 0;
}

/*
 * The string at addr (when ret, the address's own result, is 0) into buf:
 * its value and error fields at values[0] and values[1].  Whether the
 * context counts as a memory error: E2BIG keeps the first maxlen bytes and
 * is not one.
 */
static bool put_string(const struct dpa_ctx_env *env, long ret, uint64_t addr, char *buf,
		       uint32_t maxlen, struct dpa_value *values)
{
	if (!ret)
		ret = dpa_mem_read_str(env->regs, env->own, buf, addr, maxlen);
	if (ret < 0 && ret != -E2BIG)
		buf[0] = 0;
	values[0].str.ptr = buf;
	values[0].str.len = ret >= 0 ? (uint32_t)ret : ret == -E2BIG ? maxlen : 0;
	values[1].u = error_value(ret);
	return ret < 0 && ret != -E2BIG;
}

void dpa_ctx_eval_regs(const struct dp_ctx *ctx, size_t nctx, const struct dpa_ctx_env *env,
		       struct dpa_value *values)
{
	const struct dp_regs *regs = env->regs;
	size_t f = 0;

	for (size_t i = 0; i < nctx; i++) {
		const struct dp_ctx *c = &ctx[i];
		uint64_t v;

		switch (c->kind) {
		case DP_CTX_REG:
			v = ((const uint64_t *)regs)[c->reg] >> c->shift;
			if (c->width < 8)
				v &= (1ull << (c->width * 8)) - 1;
			values[f++].u = v;
			break;
		case DP_CTX_RETVAL:
			values[f++].u = regs->rax;
			break;
		case DP_CTX_VALUE:
			/* Cannot fail: dpa_ctx_regs_only() said so. */
			value_run(&c->value, &c->type, env, &v);
			values[f++].u = c->value.flags & DP_VALUE_BOOL ? v != 0 : v;
			break;
		default:	/* DP_CTX_REGS */
			for (unsigned r = 0; r < DP_CTX_REGS_FIELDS; r++)
				values[f++].u = ((const uint64_t *)regs)[dp_ctx_regs_order[r]];
			break;
		}
	}
}

unsigned dpa_ctx_eval(const struct dp_ctx *ctx, size_t nctx, const struct dpa_ctx_env *env,
		      struct dpa_value *values)
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
			for (unsigned r = 0; r < DP_CTX_REGS_FIELDS; r++)
				values[f++].u = reg_value(regs, dp_ctx_regs_order[r]);
			break;
		case DP_CTX_RETVAL:
			values[f++].u = regs->rax;
			break;
		case DP_CTX_MEM:
			v = 0;
			ret = ctx_address(&c->addr, env, &addr);
			if (!ret)
				ret = dpa_mem_read(regs, env->own, &v, addr, c->type.size);
			if (ret)
				v = 0;
			values[f++].u = v;
			values[f++].u = error_value(ret);
			errors += ret != 0;
			break;
		case DP_CTX_STRING: {
			char *buf = (char *)scratch + off;

			off += dp_ctx_values_size(c);
			ret = ctx_address(&c->addr, env, &addr);
			errors += put_string(env, ret, addr, buf, c->maxlen, &values[f]);
			f += 2;
			break;
		}
		case DP_CTX_VALUE:
			ret = value_run(&c->value, &c->type, env, &v);
			if (c->type.type == DP_FT_STRING) {
				char *buf = (char *)scratch + off;

				off += dp_ctx_values_size(c);
				errors += put_string(env, ret, v, buf, c->maxlen, &values[f]);
				f += 2;
				break;
			}
			if (ret)
				v = 0;
			if (c->type.type == DP_FT_DOUBLE) {
				float fl;

				if (c->type.size == 4) {
					uint32_t lo = (uint32_t)v;

					memcpy(&fl, &lo, sizeof(fl));
					values[f].d = fl;
				} else {
					memcpy(&values[f].d, &v, sizeof(v));
				}
			} else {
				values[f].u = c->value.flags & DP_VALUE_BOOL ? v != 0 : v;
			}
			f++;
			if (!(env->flags & DPA_CTX_REGS_ONLY) &&
			    dp_value_can_fail(&c->value, &c->type)) {
				values[f++].u = error_value(ret);
				errors += ret != 0;
			}
			break;
		case DP_CTX_BACKTRACE: {
			uint64_t *bt = (uint64_t *)(scratch + off);
			unsigned n;

			off += dp_ctx_values_size(c);
			n = dpa_bt_walk(c->walker, regs, env->flags & DPA_CTX_AT_ENTRY, bt, c->depth,
					scratch + dp_ctx_list_values_size(ctx, nctx));
			values[f].seq.ptr = bt;
			values[f].seq.len = n;
			f++;
			break;
		}
		}
	}
	return errors;
}
