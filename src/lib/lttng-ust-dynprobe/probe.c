/*
 * Probes and the hit path (see probe.h), with the per-thread state it uses.
 *
 * The hit path must be safe wherever the probed code runs: inside malloc,
 * inside a signal handler, in a thread lttng-ust has never seen, in code the
 * handler itself calls.  So the per-thread guard is set before anything else
 * is done (even reading errno calls into libc, which may be probed), the
 * scratch memory for strings and backtraces is mapped with mmap (never
 * malloc'd) once per thread and reused.
 *
 * Counters: a locked add costs 6-8 ns here (a tenth of a static
 * tracepoint), so the two every hit bumps (hits, recorded) are plain
 * increments: exact for one thread, short by a few when threads hit the same
 * probe at the same instant.  The rare ones (recursions, memory errors) are
 * atomic.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hit.h"
#include "probe.h"

__thread struct dpa_thread dpa_self __attribute__((tls_model("initial-exec")));

/*
 * A field that one saved general register gives, computed in the hit path
 * itself with no call and no branch on its kind: a reg: context, the
 * return value, a recipe of one register with an offset, a shift and an
 * extension (most SDT arguments, parameters in registers).  Its value is
 * v = (regs[reg] + add) >> shr, then v's low 64 - shl bits, sign-extended
 * when sext.
 */
#define FAST_MAX_FIELDS 8

struct fast_field {
	int64_t add;
	uint8_t reg, shr, shl;
	bool sext;
};

struct dpa_probe {
	uint64_t site;
	struct dpa_class *cls;
	const int *enabled;		/* the class's: dpa_class_state() */
	unsigned flags;			/* enum dpa_probe_flag */
	bool regs_only;			/* dpa_ctx_regs_only(), and few fields */
	/* Every field a fast one (the most common probes: none, reg:
	 * contexts, SDT arguments in registers). */
	bool fast;
	uint8_t nfast;
	struct fast_field fastv[FAST_MAX_FIELDS];
	size_t nctx, nfields;
	size_t values_size;		/* the dpa_value array at the head of the scratch */
	struct dp_ctx *ctx;
	struct dpa_mem_ranges own;	/* the probed object's segments */
	_Atomic uint64_t hits, recorded;	/* bumped without a lock (see above) */
	_Atomic uint64_t recursions, mem_errors;
};

/* Adds n without a locked instruction, and only when n is not 0: a hit
 * that records nothing (filtered out, its session stopped) must not store
 * the old count over another thread's. */
static inline void bump(_Atomic uint64_t *c, unsigned n)
{
	if (n)
		atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
				      memory_order_relaxed);
}

/* ---- per-thread scratch ------------------------------------------------ */

/*
 * Each thread maps its scratch on its first recorded hit and keeps it; at
 * thread exit it goes to a small pool that new threads take from, so that a
 * program creating many short threads does not map and unmap each time.
 * The mapping starts with a header: its size, then the CFI walk's cache
 * (unwind.c), which goes with the mapping from thread to thread (its rows
 * are the process's).
 */
#define SCRATCH_HDR (64 + DPA_CFI_CACHE_BYTES)
#define SCRATCH_MIN (16 * 1024)
#define POOL_SLOTS 32

static _Atomic size_t scratch_need;
static _Atomic(uint8_t *) pool[POOL_SLOTS];
static pthread_key_t scratch_key;
static bool scratch_key_ok;

static size_t area_size(const uint8_t *base)
{
	return *(const size_t *)base;
}

static void area_free(uint8_t *base)
{
	munmap(base, area_size(base));
}

static void area_release(void *basev)
{
	uint8_t *base = basev;

	dpa_self.scratch = NULL;
	dpa_self.scratch_size = 0;
	for (unsigned i = 0; i < POOL_SLOTS; i++) {
		uint8_t *expected = NULL;

		if (atomic_compare_exchange_strong(&pool[i], &expected, base))
			return;
	}
	area_free(base);
}

static uint8_t *area_get(size_t need)
{
	size_t size = (need + SCRATCH_HDR + 4095) & ~(size_t)4095;
	uint8_t *base;

	for (unsigned i = 0; i < POOL_SLOTS; i++) {
		base = atomic_exchange(&pool[i], NULL);
		if (!base)
			continue;
		if (area_size(base) - SCRATCH_HDR >= need)
			return base;
		area_free(base);
	}
	if (size < SCRATCH_MIN)
		size = SCRATCH_MIN;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return NULL;
	*(size_t *)base = size;
	return base;
}

void *dpa_thread_scratch(struct dpa_thread *t)
{
	size_t need = atomic_load_explicit(&scratch_need, memory_order_relaxed);
	uint8_t *base;

	if (t->scratch && t->scratch_size >= need)
		return t->scratch;
	/* Not in use: the guard keeps this thread out of any other hit. */
	if (t->scratch)
		area_release(t->scratch - SCRATCH_HDR);
	base = area_get(need);
	if (!base)
		return NULL;
	t->scratch = base + SCRATCH_HDR;
	t->scratch_size = area_size(base) - SCRATCH_HDR;
	if (scratch_key_ok)
		pthread_setspecific(scratch_key, base);
	return t->scratch;
}

void *dpa_thread_cfi_cache(struct dpa_thread *t)
{
	return t->scratch ? t->scratch - SCRATCH_HDR + 64 : NULL;
}

void dpa_scratch_need_raise(size_t size)
{
	size_t cur = atomic_load(&scratch_need);

	while (cur < size && !atomic_compare_exchange_weak(&scratch_need, &cur, size))
		;
}

int dpa_thread_setup(void)
{
	int ret = pthread_key_create(&scratch_key, area_release);

	scratch_key_ok = !ret;
	return -ret;
}

/* ---- probes ----------------------------------------------------------- */

/* Fields a regs-only probe evaluates on the stack, at most. */
#define REGS_ONLY_MAX_FIELDS 32

/* Whether c is one fast field (f): what dpa_ctx_eval_regs computes for
 * it, the same bits. */
static bool fast_of(const struct dp_ctx *c, struct fast_field *f)
{
	const struct dp_value *v = &c->value;
	uint32_t i = 1;

	memset(f, 0, sizeof(*f));
	switch (c->kind) {
	case DP_CTX_REG:
		if (c->reg >= sizeof(struct dp_regs) / 8 || c->width < 1 || c->width > 8)
			return false;
		f->reg = c->reg;
		f->shr = c->shift;
		f->shl = (uint8_t)(64 - c->width * 8);
		return true;
	case DP_CTX_RETVAL:
		f->reg = 0;	/* rax */
		return true;
	case DP_CTX_VALUE:
		if (c->type.type != DP_FT_INT || v->loc != DP_VALUE_LOC_VALUE ||
		    (v->flags & DP_VALUE_BOOL) || !v->nops || v->ops[0].op != DP_VOP_REG ||
		    v->ops[0].arg >= sizeof(struct dp_regs) / 8)
			return false;
		f->reg = v->ops[0].arg;
		f->add = v->ops[0].imm;
		if (i < v->nops && v->ops[i].op == DP_VOP_SHR && v->ops[i].arg < 64)
			f->shr = v->ops[i++].arg;
		if (i < v->nops && (v->ops[i].op == DP_VOP_SEXT || v->ops[i].op == DP_VOP_ZEXT) &&
		    v->ops[i].arg >= 1 && v->ops[i].arg <= 4) {
			f->sext = v->ops[i].op == DP_VOP_SEXT;
			f->shl = (uint8_t)(64 - v->ops[i++].arg * 8);
		}
		return i == v->nops;
	default:
		return false;
	}
}

static size_t align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

DPA_EXPORT struct dpa_probe *dpa_probe_new(uint64_t site, const char *name, unsigned flags,
					   const struct dp_ctx *ctx, size_t nctx, struct dp_err *err)
{
	struct dp_field_desc fields[DPA_CLASS_MAX_FIELDS];
	char full[DP_NAME_MAX];
	struct dpa_probe *p;
	size_t nfields;
	int ret, len;

	if (!name || !*name || (nctx && !ctx) || (flags & ~(unsigned)DPA_PROBE_AT_ENTRY)) {
		errno = -dp_err_set(err, -EINVAL, "bad arguments");
		return NULL;
	}
	len = snprintf(full, sizeof(full), "%s%s", strchr(name, ':') ? "" : "dynprobe:", name);
	if (len < 0 || (size_t)len >= sizeof(full)) {
		errno = -dp_err_set(err, -EINVAL, "event name too long");
		return NULL;
	}
	ret = dp_ctx_layout(ctx, nctx, fields, DPA_CLASS_MAX_FIELDS, &nfields, err);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !(p->ctx = calloc(nctx ? nctx : 1, sizeof(*ctx)))) {
		free(p);
		errno = -dp_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	p->cls = dpa_class_get(full, fields, nfields, err);
	if (!p->cls) {
		int e = errno;

		free(p->ctx);
		free(p);
		errno = e;
		return NULL;
	}
	if (nctx)
		memcpy(p->ctx, ctx, nctx * sizeof(*ctx));
	p->site = site;
	p->enabled = dpa_class_state(p->cls);
	p->regs_only = nfields <= REGS_ONLY_MAX_FIELDS && dpa_ctx_regs_only(ctx, nctx);
	/* Each fast context is one field. */
	p->fast = p->regs_only && nctx <= FAST_MAX_FIELDS && nfields == nctx;
	for (size_t i = 0; i < nctx && p->fast; i++)
		p->fast = fast_of(&ctx[i], &p->fastv[i]);
	p->nfast = p->fast ? (uint8_t)nctx : 0;
	p->flags = flags;
	p->nctx = nctx;
	p->nfields = nfields;
	p->values_size = align16((nfields ? nfields : 1) * sizeof(struct dpa_value));
	/* A site outside any object (generated code) just reads through the
	 * kernel more often. */
	dpa_mem_object_ranges(site, &p->own);
	dpa_scratch_need_raise(p->values_size + dpa_ctx_prepare(ctx, nctx));
	return p;
}

/* The per-thread setup of a thread's first recorded hit: lttng-ust's state
 * (a thread the agent was never told about: no hook runs at thread
 * creation) and where its errno lives. */
static __attribute__((noinline)) void thread_first_record(struct dpa_thread *t)
{
	if (!t->events_ready) {
		dpa_events_thread_init();
		t->events_ready = true;
	}
	t->errnop = &errno;
}

/* The enabled part of a hit for probes with memory, strings or
 * backtraces: evaluate into the thread's scratch, and record. */
static __attribute__((noinline)) void record(struct dpa_probe *p, struct dpa_thread *t,
					     const struct dp_regs *regs)
{
	struct dpa_ctx_env env = {
		.regs = regs,
		.flags = p->flags & DPA_PROBE_AT_ENTRY ? DPA_CTX_AT_ENTRY : 0,
		.own = &p->own,
	};
	struct dpa_value *values;
	uint8_t *scratch;
	unsigned errors;

	scratch = dpa_thread_scratch(t);
	if (!scratch)
		return;
	values = (struct dpa_value *)scratch;
	env.scratch = scratch + p->values_size;
	errors = dpa_ctx_eval(p->ctx, p->nctx, &env, values);
	if (errors)
		atomic_fetch_add_explicit(&p->mem_errors, errors, memory_order_relaxed);
	bump(&p->recorded, dpa_class_record(p->cls, p->site, values));
}

/* The same for probes whose fields all come from the saved registers: on
 * the stack, no scratch, nothing that can fail. */
static __attribute__((noinline)) void record_regs(struct dpa_probe *p, const struct dp_regs *regs)
{
	struct dpa_ctx_env env = { .regs = regs, .flags = DPA_CTX_REGS_ONLY };
	struct dpa_value values[REGS_ONLY_MAX_FIELDS];

	dpa_ctx_eval_regs(p->ctx, p->nctx, &env, values);
	bump(&p->recorded, dpa_class_record(p->cls, p->site, values));
}

/* The same for fast fields, in line. */
static inline __attribute__((always_inline)) void record_fast(struct dpa_probe *p,
							     const struct dp_regs *regs)
{
	const uint64_t *r = (const uint64_t *)regs;
	struct dpa_value v[FAST_MAX_FIELDS];

	for (unsigned i = 0; i < p->nfast; i++) {
		const struct fast_field *f = &p->fastv[i];
		uint64_t x = ((r[f->reg] + (uint64_t)f->add) >> f->shr) << f->shl;

		v[i].u = f->sext ? (uint64_t)((int64_t)x >> f->shl) : x >> f->shl;
	}
	bump(&p->recorded, dpa_class_record(p->cls, p->site, v));
}

/*
 * The disabled path reads the class's state and nothing else: no guard, no
 * errno (it calls nothing).  The enabled one sets the guard before anything
 * else, and keeps errno through the pointer cached at the thread's first
 * record (reading it through libc is a call, and libc may be probed).
 */
DPA_EXPORT void dp_probe_hit(void *probe, struct dp_regs *regs)
{
	struct dpa_probe *p = probe;
	struct dpa_thread *t = &dpa_self;
	int saved_errno;

	bump(&p->hits, 1);
	if (t->guard) {
		atomic_fetch_add_explicit(&p->recursions, 1, memory_order_relaxed);
		return;
	}
	if (!__atomic_load_n(p->enabled, __ATOMIC_RELAXED))
		return;
	t->guard = 1;
	if (__builtin_expect(!t->errnop, 0))
		thread_first_record(t);
	saved_errno = *t->errnop;
	if (p->fast)
		record_fast(p, regs);
	else if (p->regs_only)
		record_regs(p, regs);
	else
		record(p, t, regs);
	*t->errnop = saved_errno;
	t->guard = 0;
}

DPA_EXPORT void dpa_probe_stats(const struct dpa_probe *probe, struct dpa_probe_stats *st)
{
	struct dpa_probe *p = (struct dpa_probe *)probe;

	st->hits = atomic_load_explicit(&p->hits, memory_order_relaxed);
	st->recursions = atomic_load_explicit(&p->recursions, memory_order_relaxed);
	st->recorded = atomic_load_explicit(&p->recorded, memory_order_relaxed);
	st->mem_errors = atomic_load_explicit(&p->mem_errors, memory_order_relaxed);
}
