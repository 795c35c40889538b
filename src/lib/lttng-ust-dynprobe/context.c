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
static uint64_t seg_base(unsigned reg)
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

static uint64_t reg_value(const struct dp_regs *regs, unsigned reg)
{
	if (reg < 18)
		return ((const uint64_t *)regs)[reg];
	return seg_base(reg);
}

size_t dpa_ctx_prepare(const struct dp_ctx *ctx, size_t nctx)
{
	size_t total = dp_ctx_list_values_size(ctx, nctx), walker = 0;

	for (size_t i = 0; i < nctx; i++) {
		if (ctx[i].kind == DP_CTX_BACKTRACE) {
			size_t need = dpa_bt_prepare(ctx[i].walker);

			walker = need > walker ? need : walker;
		}
	}
	return total + ((walker + 15) & ~(size_t)15);
}

/* ---- evaluation ------------------------------------------------------- */

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

static uint8_t error_value(long ret)
{
	return ret < 0 ? (uint8_t)(-ret > 255 ? 255 : -ret) : 0;
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
			if (!ret)
				ret = dpa_mem_read_str(regs, env->own, buf, addr, c->maxlen);
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
