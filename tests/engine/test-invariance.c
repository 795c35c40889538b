/*
 * State invariance: around a probed instruction, the probe must change
 * nothing the program can see.  invariance-asm.S loads every general
 * register, rflags (arithmetic flags and DF), the vector and mask registers
 * this CPU has (CPUID/XCR0), MXCSR, the x87 control word, three live x87
 * values and the red zone from a block of random values, runs the probed
 * instruction, and stores it all to a second block.  Each random state runs
 * unpatched and then probed (jump and int3, a nop site and a RIP-relative
 * site, a site only a redirect serves, and one a jump's window holds past
 * its first byte: their jmp is led to the trampoline)
 * with a handler that clobbers everything it can (clobber.h); the
 * blocks must be bit-identical, and the handler must have seen the loaded
 * registers, rsp and rflags as at the site, and rip = the site.
 *
 * Then the same machine in inv-lean.so, an object naming neither zmm16-31
 * nor k0-7, whose sites get trampolines that leave those out
 * (DP_VEC_AVX512_LOW on an AVX-512 CPU): the object scan must tell it from
 * this executable and from libc, its state must come back bit-identical,
 * and, held around a call into it, the upper bits of zmm0-15 must too
 * while zmm16-31 and k1 come back as the handler left them (so the lean
 * trampoline is what ran).
 */
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clobber.h"
#include "invariance.h"
#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"
#include "tap.h"

#define NSTATES 200
/* The flags a program can set with popfq at CPL 3 and a probe could change. */
#define FLAGS_MASK 0xcd5ull	/* CF PF AF ZF SF DF OF */

void dp_inv_run_nop(const void *in, void *out, int kind);
void dp_inv_run_rip(const void *in, void *out, int kind);
void dp_inv_run_redirect(const void *in, void *out, int kind);
void dp_inv_run_led(const void *in, void *out, int kind);
extern char dp_inv_site_nop[], dp_inv_site_rip[], dp_inv_site_redirect_jmp[],
	dp_inv_site_led_jmp[];

struct state {
	uint8_t b[INV_SIZE];
} __attribute__((aligned(64)));

static enum dp_vec_save vec;	/* what the trampolines save */
static enum dp_vec_save cpu_vec;	/* what the CPU has: the handler clobbers it all */
static int kind;
static struct dp_inproc_site site;
static struct dp_regs seen;
static unsigned long hits, clobbers;

static uint64_t gpr(const struct state *s, int i)
{
	uint64_t v;

	memcpy(&v, s->b + INV_GPR + 8 * i, 8);
	return v;
}

static uint64_t rflags(const struct state *s)
{
	uint64_t v;

	memcpy(&v, s->b + INV_RFLAGS, 8);
	return v;
}

/* Caller-saved general registers, scrambled. */
static void clobber_gprs(void)
{
	__asm__ volatile("mov $-1, %%rax\n\tmov %%rax, %%rcx\n\tmov %%rax, %%rdx\n\t"
			 "mov %%rax, %%rsi\n\tmov %%rax, %%rdi\n\tmov %%rax, %%r8\n\t"
			 "mov %%rax, %%r9\n\tmov %%rax, %%r10\n\tmov %%rax, %%r11\n\t"
			 "std\n\tcld\n\tadd %%rax, %%rax"
			 ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc");
}

static void on_hit(void *arg, struct dp_regs *regs)
{
	volatile char stack[4096];

	seen = *regs;
	hits++;
	/* Dirty the stack below the handler's frame too. */
	memset((char *)stack, 0xa5, sizeof(stack));
	clobber_state((unsigned)++clobbers, cpu_vec);
	clobber_gprs();
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	if (site.tramp.len && site.method == DP_SITE_INT3 &&
	    site.win.addr == (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1) {
		dp_inproc_trap(&site, uc);
		return;
	}
	abort();
}

static int main_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uint64_t *)data = info->dlpi_addr;
	return 1;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void random_state(struct state *s, uint64_t *seed)
{
	uint64_t fl;
	uint32_t mxcsr;
	uint16_t fcw;

	for (size_t i = 0; i < sizeof(s->b); i += 8) {
		uint64_t v = rnd(seed);

		memcpy(s->b + i, &v, 8);
	}
	/* Only what user code may set; the current flags for the rest. */
	__asm__ volatile("pushfq\n\tpop %0" : "=r"(fl));
	fl = (fl & ~FLAGS_MASK) | (rnd(seed) & FLAGS_MASK);
	memcpy(s->b + INV_RFLAGS, &fl, 8);
	/* Exceptions masked (a handler's arithmetic must not trap), the
	 * rest random: rounding, flush-to-zero, denormals-are-zero, flags. */
	mxcsr = 0x1f80 | (rnd(seed) & 0xe07f);
	memcpy(s->b + INV_MXCSR, &mxcsr, 4);
	fcw = 0x037f | (rnd(seed) & 0x0f00);
	fcw &= 0x0f7f;
	memcpy(s->b + INV_FCW, &fcw, 2);
	memset(s->b + INV_FSW, 0, 2);
	for (int i = 0; i < 3; i++) {
		long double v = (long double)(int64_t)rnd(seed) / (i + 3);

		memset(s->b + INV_X87 + 16 * i, 0, 16);
		memcpy(s->b + INV_X87 + 16 * i, &v, 10);
	}
}

struct variant {
	const char *name;
	void (*run)(const void *in, void *out, int kind);
	char *site;
	bool int3;
	bool redirect;		/* planned with DP_PLAN_REDIRECT: a redirect expected,
				   or with skip > 7 a jump the jmp is led into */
	unsigned skip;		/* the site is this many bytes past `site` */
};

/* The parts of the block, compared one by one for clear failures. */
struct part {
	const char *name;
	size_t off, len;
};

static void run_variant(struct dp_object *obj, uint64_t bias, struct dp_code_pool *pool,
			const struct variant *v)
{
	static struct state in, out;
	size_t vec_len = kind == INV_KIND_AVX512 ? 32 * 64 : 16 * 64;
	const struct part parts[] = {
		{ "general registers", INV_GPR, 128 },
		{ "rflags", INV_RFLAGS, 8 },
		{ "MXCSR", INV_MXCSR, 4 },
		{ "x87 control word", INV_FCW, 2 },
		{ "x87 registers st0-st2", INV_X87, 48 },
		{ "red zone", INV_RZ, 128 },
		{ kind == INV_KIND_AVX512 ? "zmm0-31" : kind == INV_KIND_AVX ? "ymm0-15" : "xmm0-15",
		  INV_VEC, vec_len },
		{ "k0-k7", INV_K, 64 },		/* last: only where the machine loads them */
	};
	size_t nparts = sizeof(parts) / sizeof(parts[0]) - (kind != INV_KIND_AVX512);
	unsigned long differ[sizeof(parts) / sizeof(parts[0])] = { 0 };
	unsigned long bad_gpr = 0, bad_rsp = 0, bad_rip = 0, bad_flags = 0, fsw_changed = 0;
	/* Added at run time: an address the compiler folded would be a value
	 * the program holds, and that makes the site a target of its own. */
	const char *at = v->site + *(const volatile unsigned *)&v->skip;
	uint64_t seed = 0x2545f4914f6cdd1dull ^ (uint64_t)(uintptr_t)at, point;
	struct dp_patch plan = { 0 };
	void *args[1] = { NULL };
	enum dp_reason why;

	static struct state refs[NSTATES];
	uint64_t seed0 = seed;

	point = (uint64_t)(uintptr_t)at - bias;
	if (v->redirect) {
		struct dp_patch *plans = NULL;
		size_t n = 0;
		int err = dp_plan_sites_flags(obj, &point, 1, DP_PLAN_REDIRECT, &plans, &n);

		if (!err && n == 1)
			plan = plans[0];
		free(plans);
		if (!tap_ok(plan.method == (v->skip > 7 ? DP_SITE_JUMP : DP_SITE_REDIRECT) &&
				    plan.nredirects == 1,
			    "%s: the site gets a %s, its jmp led in (%s, %s)", v->name,
			    v->skip > 7 ? "jump" : "redirect",
			    dp_site_method_str(plan.method), dp_reason_name(plan.reason)))
			return;
	} else if (!tap_ok(!dp_plan_site(obj, point, &plan) && plan.method == DP_SITE_JUMP,
			   "%s: the site gets a jump (%s)", v->name, dp_reason_name(plan.reason))) {
		return;
	}
	if (v->int3) {
		/* The int3 fallback on the same instruction. */
		plan.method = DP_SITE_INT3;
		plan.win.len = plan.win.insns[0].len;
		plan.win.ninsns = 1;
	}
	/* Unpatched references first. */
	for (int n = 0; n < NSTATES; n++) {
		random_state(&in, &seed);
		memset(&refs[n], 0, sizeof(refs[n]));
		v->run(&in, &refs[n], kind);
	}
	hits = 0;
	memset(&site, 0, sizeof(site));
	/* on_trap serves `site` once prepared: commit may write an int3. */
	if (!tap_ok(!dp_inproc_prepare(pool, &site, &plan, bias, on_hit, args, vec, &why) &&
		    !dp_inproc_commit(pool, &site),
		    "%s: installed", v->name))
		return;
	seed = seed0;
	for (int n = 0; n < NSTATES; n++) {
		const struct state *ref = &refs[n];
		uint64_t before = hits;

		random_state(&in, &seed);
		memset(&out, 0, sizeof(out));
		v->run(&in, &out, kind);
		if (hits != before + 1)
			continue;
		for (size_t p = 0; p < nparts; p++)
			differ[p] += memcmp(ref->b + parts[p].off, out.b + parts[p].off,
					    parts[p].len) != 0;
		fsw_changed += memcmp(ref->b + INV_FSW, out.b + INV_FSW, 2) != 0;
		/* What the handler saw: the loaded registers, as at the site. */
		for (int r = 0; r < 16; r++)
			if (r != 4 && ((const uint64_t *)&seen)[r] != gpr(&in, r))
				bad_gpr++;
		bad_rsp += seen.rsp != gpr(ref, 4);
		bad_rip += seen.rip != (uint64_t)(uintptr_t)at;
		bad_flags += (seen.rflags & FLAGS_MASK) != (rflags(&in) & FLAGS_MASK);
	}
	tap_ok(hits == NSTATES, "%s: the probe ran once per state (%lu of %d)", v->name, hits,
	       NSTATES);
	for (size_t p = 0; p < nparts; p++)
		tap_ok(!differ[p], "%s: %s bit-identical with and without the probe (%lu of %d differ)",
		       v->name, parts[p].name, differ[p], NSTATES);
	if (fsw_changed)
		tap_diag("%s: the x87 status word differed in %lu of %d states (not preserved: the "
			 "handler's x87 arithmetic sets its flags)", v->name, fsw_changed, NSTATES);
	tap_ok(!bad_gpr, "%s: the handler saw every general register as loaded", v->name);
	tap_ok(!bad_rsp, "%s: the handler saw rsp as at the site", v->name);
	tap_ok(!bad_rip, "%s: the handler saw rip = the site", v->name);
	tap_ok(!bad_flags, "%s: the handler saw the arithmetic flags and DF as loaded", v->name);
	dp_inproc_remove(pool, &site);
}

void dp_inv_lean_wrap(void (*run)(const void *, void *, int), const void *in, void *out,
		      const void *zin, void *zout);

/* The zmm0-31 and k1 block of dp_inv_lean_wrap. */
struct zblock {
	uint8_t z[32][64];
	uint64_t k1;
} __attribute__((aligned(64)));

/*
 * zmm0-31 and k1 held around calls into inv-lean.so's nop site, probed with
 * the lean trampoline: bits 128-511 of zmm0-15 must come back (the run
 * loads only their low 128 bits, with legacy moves), zmm16-31 and k1 as
 * the handler's clobbering left them.
 */
static void lean_wrap_check(struct dp_object *obj, uint64_t bias, struct dp_code_pool *pool,
			    void (*run)(const void *, void *, int), const char *at)
{
	static struct state in, out;
	static struct zblock zin, zout;
	struct dp_patch plan = { 0 };
	void *args[1] = { NULL };
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned long runs = 0, upper_bad = 0, low_bad = 0, high_kept = 0, k1_kept = 0;
	enum dp_reason why;

	if (!tap_ok(!dp_plan_site(obj, (uint64_t)(uintptr_t)at - bias, &plan) &&
		    plan.method == DP_SITE_JUMP, "inv-lean.so, zmm held around: the site gets a jump"))
		return;
	hits = 0;
	memset(&site, 0, sizeof(site));
	if (!tap_ok(!dp_inproc_prepare(pool, &site, &plan, bias, on_hit, args, vec, &why) &&
		    !dp_inproc_commit(pool, &site), "inv-lean.so, zmm held around: installed"))
		return;
	for (int n = 0; n < NSTATES; n++) {
		uint64_t before = hits;

		random_state(&in, &seed);
		for (size_t i = 0; i < sizeof(zin.z); i += 8) {
			uint64_t v = rnd(&seed);

			memcpy((uint8_t *)zin.z + i, &v, 8);
		}
		zin.k1 = rnd(&seed);
		memset(&out, 0, sizeof(out));
		memset(&zout, 0, sizeof(zout));
		dp_inv_lean_wrap(run, &in, &out, &zin, &zout);
		if (hits != before + 1)
			continue;
		runs++;
		for (int r = 0; r < 16; r++) {
			upper_bad += memcmp(zout.z[r] + 16, zin.z[r] + 16, 48) != 0;
			low_bad += memcmp(zout.z[r], in.b + INV_VEC + 64 * r, 16) != 0;
		}
		for (int r = 16; r < 32; r++)
			high_kept += !memcmp(zout.z[r], zin.z[r], 64);
		k1_kept += zout.k1 == zin.k1;
	}
	tap_ok(runs == NSTATES, "inv-lean.so, zmm held around: the probe ran once per call "
	       "(%lu of %d)", runs, NSTATES);
	tap_ok(!upper_bad, "inv-lean.so, zmm held around: bits 128-511 of zmm0-15 came back "
	       "(%lu of %lu registers differ)", upper_bad, runs * 16);
	tap_ok(!low_bad, "inv-lean.so, zmm held around: xmm0-15 as the object loaded them "
	       "(%lu of %lu differ)", low_bad, runs * 16);
	tap_ok(!high_kept && !k1_kept, "inv-lean.so, zmm held around: zmm16-31 and k1 as the "
	       "handler left them, the trampoline saved neither (%lu of %lu registers, %lu of %lu "
	       "k1 kept)", high_kept, runs * 16, k1_kept, runs);
	dp_inproc_remove(pool, &site);
}

/* The lean object: the scan's answers, then its machine probed. */
static void lean_part(struct dp_object *self, struct dp_code_pool *pool)
{
	const char *dir = getenv("top_builddir");
	char path[4096];
	struct link_map *lm = NULL;
	struct dp_object *lib, *libc;
	Dl_info info;
	void *h;

	snprintf(path, sizeof(path), "%s/tests/engine/inv-lean.so", dir ? dir : "../..");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!tap_ok(h && !dlinfo(h, RTLD_DI_LINKMAP, &lm), "%s loaded", path))
		return;
	lib = dp_object_open(path);
	tap_ok(dp_object_evex_free(self) == 0, "this executable names zmm16-31 and k0-7: "
	       "not free (%d)", dp_object_evex_free(self));
	tap_ok(lib && dp_object_evex_free(lib) == 1, "inv-lean.so names neither: free (%d)",
	       lib ? dp_object_evex_free(lib) : -1);
	libc = dladdr((void *)(uintptr_t)printf, &info) ? dp_object_open(info.dli_fname) : NULL;
	tap_ok(libc && dp_object_evex_free(libc) == 0, "%s (AVX-512 string functions, xsave in "
	       "the loader's helpers): not free (%d)", libc ? info.dli_fname : "libc",
	       libc ? dp_object_evex_free(libc) : -1);
	if (libc)
		dp_object_close(libc);
	if (!lib)
		return;

	vec = dp_vec_save_site(cpu_vec, dp_object_evex_free(lib));
	tap_ok(vec == (cpu_vec == DP_VEC_AVX512 ? DP_VEC_AVX512_LOW : cpu_vec),
	       "inv-lean.so's sites save %s", dp_vec_save_str(vec));
	/* The lean machine has no AVX-512 path: it runs as AVX. */
	kind = cpu_vec == DP_VEC_SSE ? INV_KIND_SSE : INV_KIND_AVX;
	{
		const struct variant lean[] = {
			{ "inv-lean.so, nop site, jump", dlsym(h, "dp_inv_run_nop"),
			  dlsym(h, "dp_inv_site_nop"), false, false, 0 },
			{ "inv-lean.so, RIP-relative site, jump", dlsym(h, "dp_inv_run_rip"),
			  dlsym(h, "dp_inv_site_rip"), false, false, 0 },
		};

		for (size_t i = 0; i < sizeof(lean) / sizeof(lean[0]); i++)
			if (tap_ok(lean[i].run && lean[i].site, "%s: found", lean[i].name))
				run_variant(lib, lm->l_addr, pool, &lean[i]);
		if (cpu_vec == DP_VEC_AVX512)
			lean_wrap_check(lib, lm->l_addr, pool, lean[0].run, lean[0].site);
		else
			tap_diag("no AVX-512 here: the zmm checks of inv-lean.so do not apply");
	}
	dp_object_close(lib);
}

int main(void)
{
	const struct variant variants[] = {
		{ "nop site, jump", dp_inv_run_nop, dp_inv_site_nop, false, false, 0 },
		{ "nop site, int3", dp_inv_run_nop, dp_inv_site_nop, true, false, 0 },
		{ "RIP-relative site, jump", dp_inv_run_rip, dp_inv_site_rip, false, false, 0 },
		{ "RIP-relative site, int3", dp_inv_run_rip, dp_inv_site_rip, true, false, 0 },
		{ "2-byte site a jmp reaches, redirect", dp_inv_run_redirect,
		  dp_inv_site_redirect_jmp, false, true, 7 },
		{ "2-byte site a jmp reaches inside a window, jump", dp_inv_run_led,
		  dp_inv_site_led_jmp, false, true, 11 },
	};
	struct dp_code_pool *pool;
	struct dp_object *obj;
	struct sigaction sa;
	uint64_t bias = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	dl_iterate_phdr(main_bias, &bias);
	obj = dp_object_open("/proc/self/exe");
	pool = dp_code_pool_new();
	if (!tap_ok(obj && pool, "this executable opened and a code pool made"))
		return tap_done();
	cpu_vec = vec = dp_vec_save_detect();
	kind = vec == DP_VEC_AVX512 ? INV_KIND_AVX512 : vec == DP_VEC_AVX ? INV_KIND_AVX : INV_KIND_SSE;
	tap_diag("vector state on this CPU: %s", dp_vec_save_str(vec));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGTRAP, &sa, NULL);
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
		run_variant(obj, bias, pool, &variants[i]);
	lean_part(obj, pool);
	dp_object_close(obj);
	return tap_done();
}
