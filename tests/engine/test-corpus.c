/*
 * The relocation engine on a corpus of hazards (the .S files of corpus/): one small
 * hand-written function per hazard, probed at its entry, at every return
 * site, and at a marked inner site where it has one, in this very process.
 *
 * For each function: the plan's method and reason where the hazard decides
 * them; results on many inputs identical to the unpatched run; each probe's
 * hit count equal to the number of times its instruction ran, counted
 * independently by single-stepping the unpatched function (trap flag); the
 * handler seeing rip = the probe address; and, once the patches are
 * removed, code bytes identical to the file's.  Where only a hop fits (a
 * jmp rel8 to a jmp rel32 in fill nearby): its plan, its bytes while
 * installed, its refusal of fill changed since the plan, and the fill
 * restored.  Where only a redirect fits (DP_PLAN_REDIRECT: the branches to
 * a block lead to its trampoline, its bytes unwritten): its plan, its
 * branches while installed, and their bytes restored.  The handler clobbers every register the trampoline must
 * preserve (clobber.h).
 */
#include <cpuid.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clobber.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"
#include "tap.h"

#define NINPUTS 64
#define MAX_POINTS 24

/* ---- the corpus -------------------------------------------------------- */

long dp_c_riprel_load(long x);
long dp_c_riprel_store(long x);
long dp_c_riprel_lea(long i);
long dp_c_riprel_cmp_imm(void);
long dp_c_riprel_push(long x);
long dp_c_jcc_in(long x);
long dp_c_jcc_out(long x);
long dp_c_loop(long a, long b, long c, long n);
long dp_c_jrcxz(long a, long b, long c, long n);
long dp_c_call_pop(void);
long dp_c_call_last(long x);
long dp_c_back2(long n);
long dp_c_midlock(long *p, long n);
long dp_c_switch(unsigned long i);
long dp_c_tail(long x);
long dp_c_helper_double(long x);
long dp_c_helper_neg(long x);
long dp_c_short_pad(void);
long dp_c_short_nopad(long x);
long dp_c_short_next(long x);
long dp_c_endbr(long x);
long dp_c_redzone(long x);
long dp_c_flags(long a, long b, long std);
long double dp_c_x87_twice(long double a);
long dp_c_hop_near(long x);
long dp_c_hop_far(long x);
long dp_c_redirect_ret(long x);
long dp_c_redirect_cold(long x);
long dp_c_redirect_next(long x);
long dp_c_led_ret(long x);
long dp_c_inner_ret(long x);
long dp_c_fwd_entry(long x);
long dp_c_sdt_nop(long x);
long dp_c_sdt_nop_tgt(long n);
long dp_c_sdt_nop5(long n);
long dp_c_sdt_nop5_mid(long x);
long dp_c_trace(long (*drive)(long), long x);
extern long dp_c_store_slot;
extern int dp_c_cmp_flag;
extern char dp_c_redzone_site[], dp_c_flags_site[], dp_c_hop_near_site[], dp_c_hop_far_site[];
extern char dp_c_sdt_nop_site[], dp_c_sdt_nop_tgt_site[], dp_c_sdt_nop5_site[],
	dp_c_sdt_nop5_mid_site[];

#pragma GCC push_options
#pragma GCC target("avx512f")
typedef int v8si __attribute__((vector_size(32)));
typedef int v16si __attribute__((vector_size(64)));
v8si dp_c_avx2_riprel(v8si x);
v16si dp_c_avx512_riprel(v16si x);
int dp_c_vec256_sum(v8si x);
int dp_c_vec512_sum(v16si x);
#pragma GCC pop_options

/* Drivers: one call of a corpus function, its result folded into a long. */
#define DRIVER(name) __attribute__((noinline)) static long name(long x)

DRIVER(drive_riprel_load) { return dp_c_riprel_load(x); }
DRIVER(drive_riprel_store) { long r = dp_c_riprel_store(x); return r * 31 + dp_c_store_slot; }
DRIVER(drive_riprel_lea) { return dp_c_riprel_lea(x); }
DRIVER(drive_riprel_cmp_imm) { dp_c_cmp_flag = (int)(x % 3000); return dp_c_riprel_cmp_imm(); }
DRIVER(drive_riprel_push) { return dp_c_riprel_push(x); }
DRIVER(drive_jcc_in) { return dp_c_jcc_in(x); }
DRIVER(drive_jcc_out) { return dp_c_jcc_out(x); }
DRIVER(drive_loop) { return dp_c_loop(1, 2, 3, x & 7); }
DRIVER(drive_jrcxz) { return dp_c_jrcxz(1, 2, 3, x & 3); }
DRIVER(drive_call_pop) { return dp_c_call_pop() - (long)(uintptr_t)dp_c_call_pop; }
DRIVER(drive_call_last) { return dp_c_call_last(x); }
DRIVER(drive_back2) { return dp_c_back2(1 + (x & 31)); }
DRIVER(drive_midlock)
{
	long v = x;

	return dp_c_midlock(&v, 1 + (x & 15));
}
DRIVER(drive_switch) { return dp_c_switch((unsigned long)x % 8); }
DRIVER(drive_tail) { return dp_c_tail(x); }
DRIVER(drive_short_pad) { return dp_c_short_pad() + x; }
DRIVER(drive_short_nopad) { return dp_c_short_nopad(x) * 7 + dp_c_short_next(x); }
DRIVER(drive_endbr) { return dp_c_endbr(x); }
DRIVER(drive_hop_near) { return dp_c_hop_near(x % 3 == 0 ? 0 : x % 3 == 1 ? 1 : x); }
DRIVER(drive_hop_far) { return dp_c_hop_far(x % 3 == 0 ? 0 : x % 3 == 1 ? 1 : x); }
DRIVER(drive_redzone) { return dp_c_redzone(x); }
DRIVER(drive_redirect_ret) { return dp_c_redirect_ret(x % 4 == 0 ? -x : x % 4 == 1 ? x % 90 : x); }
DRIVER(drive_led_ret)
{
	return dp_c_led_ret(x % 5 == 0 ? -5 : x % 5 == 1 ? x + 100 : x % 5 == 2 ? x & 62 : x | 1);
}
DRIVER(drive_inner_ret) { return dp_c_inner_ret(x % 3 == 0 ? x + 100 : x % 100); }
DRIVER(drive_fwd_entry) { return dp_c_fwd_entry(x % 64); }
DRIVER(drive_redirect_cold)
{
	return dp_c_redirect_cold(x % 3 == 0 ? -x : x) * 3 + dp_c_redirect_next(x);
}
DRIVER(drive_sdt_nop) { return dp_c_sdt_nop(x); }
DRIVER(drive_sdt_nop_tgt) { return dp_c_sdt_nop_tgt(x & 15); }
DRIVER(drive_sdt_nop5) { return dp_c_sdt_nop5(x & 15); }
DRIVER(drive_sdt_nop5_mid) { return dp_c_sdt_nop5_mid(x); }
DRIVER(drive_flags)
{
	long y = x % 5 == 0 ? x : x % 3 == 0 ? x + 1 : x * 7 + 3;

	return dp_c_flags(x, y, x >> 2);
}
DRIVER(drive_x87)
{
	long double r = dp_c_x87_twice((long double)x / 3);
	long h = 0;

	memcpy(&h, &r, sizeof(h));
	return h ^ ((const uint16_t *)&r)[4];
}

#pragma GCC push_options
#pragma GCC target("avx512f")
DRIVER(drive_avx2)
{
	v8si v = { x, x * 3, x ^ 7, -x, x >> 3, 5, x * x, ~x }, r = dp_c_avx2_riprel(v);
	long h = 0;

	for (int i = 0; i < 8; i++)
		h = h * 1000003 + r[i];
	return h;
}
DRIVER(drive_avx512)
{
	v16si v, r;
	long h = 0;

	for (int i = 0; i < 16; i++)
		v[i] = (int)(x * (i + 1) ^ (x >> i));
	r = dp_c_avx512_riprel(v);
	for (int i = 0; i < 16; i++)
		h = h * 1000003 + r[i];
	return h;
}
DRIVER(drive_vec256)
{
	v8si v = { x, x * 3, x ^ 7, -x, x >> 3, 5, x * x, ~x };

	return dp_c_vec256_sum(v);
}
DRIVER(drive_vec512)
{
	v16si v;

	for (int i = 0; i < 16; i++)
		v[i] = (int)(x * (i + 3) ^ (x >> i));
	return dp_c_vec512_sum(v);
}
#pragma GCC pop_options

enum need { NEED_NONE, NEED_AVX2, NEED_AVX512 };
#define ANY -1

/* Which point's patch must reach its trampoline through a hop. */
enum hop_at { HOP_NONE, HOP_ENTRY, HOP_SITE };

struct ccase {
	const char *name;		/* the function's symbol */
	long (*drive)(long x);
	enum need need;
	char *site;			/* an inner site to probe too, or NULL */
	int entry_method, entry_reason;	/* expected, where the hazard decides it */
	int ret_method, ret_reason;
	int site_method, site_reason;
	enum hop_at hop;
	const char *hazard;
	unsigned plan_flags;		/* dp_plan_sites_flags' */
	/* With no site: a return site as the inner site, of this function or
	 * of the one right after it (a .cold part no symbol names), or -1. */
	int site_ret;
	bool site_next;
	bool led;			/* the site's jump has branches led into its window */
};

static const struct ccase cases[] = {
	{ "dp_c_riprel_load", drive_riprel_load, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "RIP-relative load first", 0, -1, false, false },
	{ "dp_c_riprel_store", drive_riprel_store, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "RIP-relative store first", 0, -1, false, false },
	{ "dp_c_riprel_lea", drive_riprel_lea, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "RIP-relative lea first", 0, -1, false, false },
	{ "dp_c_riprel_cmp_imm", drive_riprel_cmp_imm, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "RIP-relative cmp with imm32 first", 0, -1, false, false },
	{ "dp_c_riprel_push", drive_riprel_push, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "push [rip] first", 0, -1, false, false },
	{ "dp_c_avx2_riprel", drive_avx2, NEED_AVX2, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "vpaddd ymm, [rip] first", 0, -1, false, false },
	{ "dp_c_avx512_riprel", drive_avx512, NEED_AVX512, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "vpaddd zmm, [rip] first", 0, -1, false, false },
	{ "dp_c_jcc_in", drive_jcc_in, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "jcc rel8 in the window", 0, -1, false, false },
	{ "dp_c_jcc_out", drive_jcc_out, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "jcc out of the function in the window", 0, -1, false, false },
	{ "dp_c_loop", drive_loop, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "loop in the window", 0, -1, false, false },
	{ "dp_c_jrcxz", drive_jrcxz, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "jrcxz in the window", 0, -1, false, false },
	{ "dp_c_call_pop", drive_call_pop, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "call next; pop", 0, -1, false, false },
	{ "dp_c_call_last", drive_call_last, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "call as the last displaced instruction", 0, -1, false, false },
	/* Only the 2-byte xor fits before the branch target: a hop. */
	{ "dp_c_back2", drive_back2, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_ENTRY,
	  "backward branch to entry+2: a hop at the entry", 0, -1, false, false },
	{ "dp_c_midlock", drive_midlock, NEED_NONE, NULL,
	  DP_SITE_INT3, DP_REASON_BRANCH_TARGET, ANY, ANY, ANY, ANY, HOP_NONE,
	  "branch into the middle of the first instruction", 0, -1, false, false },
	/* Its `xor eax, eax; ret` case lies between two cases: a hop if fill is near. */
	{ "dp_c_switch", drive_switch, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, ANY, ANY, ANY, ANY, HOP_NONE,
	  "jump table of rel32 offsets", 0, -1, false, false },
	{ "dp_c_tail", drive_tail, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "tail call", 0, -1, false, false },
	{ "dp_c_helper_double", drive_call_last, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "callee of a relocated call", 0, -1, false, false },
	{ "dp_c_helper_neg", drive_jcc_out, NEED_NONE, NULL,
	  ANY, ANY, ANY, ANY, ANY, ANY, HOP_NONE,
	  "target of a conditional tail call", 0, -1, false, false },
	{ "dp_c_short_pad", drive_short_pad, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "3-byte function followed by padding", 0, -1, false, false },
	{ "dp_c_short_nopad", drive_short_nopad, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_ENTRY,
	  "3-byte function followed by another: a hop", 0, -1, false, false },
	{ "dp_c_hop_near", drive_hop_near, NEED_NONE, dp_c_hop_near_site,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_SITE,
	  "2 bytes between branch targets, fill near: a hop", 0, -1, false, false },
	{ "dp_c_hop_far", drive_hop_far, NEED_NONE, dp_c_hop_far_site,
	  DP_SITE_JUMP, ANY, ANY, ANY, DP_SITE_INT3, DP_REASON_BRANCH_TARGET, HOP_NONE,
	  "2 bytes between branch targets, no fill in reach", 0, -1, false, false },
	{ "dp_c_redirect_ret", drive_redirect_ret, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, ANY, ANY, DP_SITE_REDIRECT, ANY, HOP_NONE,
	  "ret boxed by fill and a target, only a jcc rel8 to it: redirected",
	  DP_PLAN_REDIRECT, 1, false, false },
	{ "dp_c_redirect_cold", drive_redirect_cold, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_REDIRECT, ANY, HOP_NONE,
	  "packed .cold part, its jcc rel32 in a window: redirected through the copy",
	  DP_PLAN_REDIRECT, 0, true, false },
	{ "dp_c_led_ret", drive_led_ret, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_NONE,
	  "ret falling through and a jcc target, a target after it: jccs led into the window",
	  DP_PLAN_REDIRECT, 0, false, true },
	{ "dp_c_inner_ret", drive_inner_ret, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_NONE,
	  "ret fallen into and the target of a je rel8 before it, no fill in reach: the je in the window",
	  DP_PLAN_REDIRECT | DP_PLAN_ALONE, 0, false, false },
	{ "dp_c_fwd_entry", drive_fwd_entry, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "entry packed before a loop's head, no fill in reach: the window runs on over the loop's jg",
	  DP_PLAN_REDIRECT | DP_PLAN_ALONE, -1, false, false },
	{ "dp_c_endbr", drive_endbr, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "endbr64 prologue", 0, -1, false, false },
	{ "dp_c_redzone", drive_redzone, NEED_NONE, dp_c_redzone_site,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_NONE,
	  "red zone live across the site", 0, -1, false, false },
	{ "dp_c_flags", drive_flags, NEED_NONE, dp_c_flags_site,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_NONE,
	  "flags and DF live across the site", 0, -1, false, false },
	{ "dp_c_sdt_nop", drive_sdt_nop, NEED_NONE, dp_c_sdt_nop_site,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_NONE,
	  "SDT nop, then a RIP-relative load and a jcc: displaced", 0, -1, false, false },
	{ "dp_c_sdt_nop_tgt", drive_sdt_nop_tgt, NEED_NONE, dp_c_sdt_nop_tgt_site,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_INT3, DP_REASON_BRANCH_TARGET, HOP_NONE,
	  "SDT nop at a loop head, the next instruction a target: int3", 0, -1, false, false },
	{ "dp_c_sdt_nop5", drive_sdt_nop5, NEED_NONE, dp_c_sdt_nop5_site,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_NONE,
	  "SDT nop; nop5, its nop in the entry's window", 0, -1, false, false },
	{ "dp_c_sdt_nop5_mid", drive_sdt_nop5_mid, NEED_NONE, dp_c_sdt_nop5_mid_site,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, HOP_NONE,
	  "SDT nop; nop5 between ordinary instructions", 0, -1, false, false },
	{ "dp_c_vec256_sum", drive_vec256, NEED_AVX2, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "__m256i argument in ymm0", 0, -1, false, false },
	{ "dp_c_vec512_sum", drive_vec512, NEED_AVX512, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "__m512i argument in zmm0", 0, -1, false, false },
	{ "dp_c_x87_twice", drive_x87, NEED_NONE, NULL,
	  DP_SITE_JUMP, ANY, DP_SITE_JUMP, ANY, ANY, ANY, HOP_NONE,
	  "long double returned in st0", 0, -1, false, false },
};


/* ---- probes ------------------------------------------------------------ */

struct point {
	uint64_t addr;			/* run time: where the hook runs */
	const char *what;		/* entry, return, site */
	_Atomic uint64_t hits, bad_rip;
	uint64_t expect;		/* runs of addr, from the single-step oracle */
};

static struct dp_object *obj;
static uint64_t bias;
static enum dp_vec_save vec;
static struct dp_inproc_site sites[MAX_POINTS];
static size_t nsites;
static struct point *trace_points;
static size_t trace_npoints;
static volatile sig_atomic_t tracing;

static void on_hit(void *arg, struct dp_regs *regs)
{
	struct point *p = arg;
	uint64_t n = atomic_fetch_add(&p->hits, 1);

	if (regs->rip != p->addr)
		atomic_fetch_add(&p->bad_rip, 1);
	clobber_state((unsigned)n, vec);
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];

	if (tracing) {
		/* After each instruction: rip is the next one to run. */
		for (size_t i = 0; i < trace_npoints; i++)
			if (trace_points[i].addr == rip)
				trace_points[i].expect++;
		return;
	}
	for (size_t i = 0; i < nsites; i++) {
		if (sites[i].tramp.len && sites[i].method == DP_SITE_INT3 &&
		    sites[i].win.addr == rip - 1) {
			dp_inproc_trap(&sites[i], uc);
			return;
		}
	}
	abort();	/* a trap that is not ours */
}

static int main_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uint64_t *)data = info->dlpi_addr;
	return 1;	/* the executable comes first */
}

static bool cpu_has(enum need need)
{
	enum dp_vec_save v = dp_vec_save_detect();
	unsigned a, b, c, d;

	if (need == NEED_AVX512)
		return v == DP_VEC_AVX512;
	if (need == NEED_AVX2)
		return v != DP_VEC_SSE && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
	return true;
}

static const char *method_name(int m)
{
	return m == ANY ? "any" : dp_site_method_str(m);
}

/* The method and reason the hazard decides, for one kind of point. */
static void check_plan(const struct ccase *cc, const struct point *p, const struct dp_patch *patch,
		       int method, int reason)
{
	if (method == ANY) {
		tap_ok(patch->method != DP_SITE_REFUSED, "%s: %s is probed (%s, %s)", cc->name,
		       p->what, dp_site_method_str(patch->method), dp_reason_name(patch->reason));
		return;
	}
	tap_ok(patch->method == (enum dp_site_method)method &&
	       (reason == ANY || patch->reason == (enum dp_reason)reason),
	       "%s: %s planned %s%s%s (got %s, %s)", cc->name, p->what, method_name(method),
	       reason == ANY ? "" : " for ", reason == ANY ? "" : dp_reason_name(reason),
	       dp_site_method_str(patch->method), dp_reason_name(patch->reason));
}

static uint64_t next_input(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Code bytes of [addr, addr + len) in memory against the file's. */
static bool same_as_file(uint64_t addr, size_t len)
{
	const uint8_t *file = dp_elf_code(dp_object_elf(obj), addr - bias, len);

	return file && !memcmp(file, (const void *)(uintptr_t)addr, len);
}

/* The patch serving point `id`. */
static struct dp_patch *patch_of(struct dp_patch *patches, size_t n, size_t id)
{
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < patches[i].npoints; k++)
			if (patches[i].point_ids[k] == id)
				return &patches[i];
	return NULL;
}

/* Whether a byte of [addr, addr + len) is in a function or a branch target. */
static bool in_use(uint64_t addr, size_t len)
{
	for (uint64_t b = addr; b < addr + len; b++)
		if (dp_object_function_at(obj, b) || dp_object_target_kind(obj, b))
			return true;
	return false;
}

/*
 * A hop as planned: a window of 2 to 4 bytes, and 5 bytes between
 * functions (the corpus's int3 fill), no branch target among them, within
 * reach of the window's jmp rel8, their original bytes the file's.
 */
static void check_hop_plan(const struct ccase *cc, const struct dp_function *fn,
			   const struct dp_patch *p)
{
	int64_t rel = p ? (int64_t)(p->hop.addr - (p->win.addr + DP_HOP_SITE_LEN)) : 0;
	const uint8_t *file = p ? dp_elf_code(dp_object_elf(obj), p->hop.addr, DP_HOP_LEN) : NULL;

	if (!tap_ok(p && p->method == DP_SITE_JUMP && p->hop.len == DP_HOP_LEN &&
		    p->win.len >= DP_HOP_SITE_LEN && p->win.len < 5,
		    "%s: planned a hop (window of %u bytes, hop of %u)", cc->name,
		    p ? p->win.len : 0, p ? p->hop.len : 0))
		return;
	tap_ok(rel >= -128 && rel <= 127 &&
	       (p->hop.addr + DP_HOP_LEN <= fn->start || p->hop.addr >= fn->start + fn->size),
	       "%s: the hop is in reach of the rel8 (%+lld), outside the function", cc->name,
	       (long long)rel);
	tap_ok(file && !memcmp(file, p->hop.bytes, DP_HOP_LEN) && !in_use(p->hop.addr, DP_HOP_LEN),
	       "%s: the hop's original bytes are the file's, in fill no function holds", cc->name);
}

/* Fill that changed since the plan is not overwritten, nor is the site. */
static void check_hop_stale(const struct ccase *cc, const struct dp_patch *p,
			    struct dp_code_pool *pool)
{
	void *args[DP_PATCH_MAX_POINTS] = { NULL };
	struct dp_inproc_site site;
	uint8_t other[DP_HOP_LEN];
	enum dp_reason why;
	int ret;

	/* Other bytes, as another patch would leave them: nothing runs them. */
	for (unsigned i = 0; i < DP_HOP_LEN; i++)
		other[i] = (uint8_t)~p->hop.bytes[i];
	if (dp_code_write(pool, p->hop.addr + bias, other, sizeof(other)))
		return;
	ret = dp_inproc_prepare(pool, &site, p, bias, on_hit, args, vec, &why);
	if (!ret)
		ret = dp_inproc_commit(pool, &site);
	tap_ok(ret == -ESTALE && same_as_file(p->win.addr + bias, p->win.len),
	       "%s: fill changed since the plan: -ESTALE, the site untouched (%d)", cc->name, ret);
	if (!ret)
		dp_inproc_remove(pool, &site);
	dp_code_write(pool, p->hop.addr + bias, p->hop.bytes, DP_HOP_LEN);
}

/* While installed: the site's rel8 leads to the hop, the hop to the trampoline. */
static void check_hop_installed(const struct ccase *cc, const struct dp_patch *p)
{
	const uint8_t *site = (const uint8_t *)(uintptr_t)(p->win.addr + bias);
	const uint8_t *hop = (const uint8_t *)(uintptr_t)(p->hop.addr + bias);
	const struct dp_inproc_site *s = NULL;
	int32_t rel;

	for (size_t i = 0; i < nsites && !s; i++)
		if (sites[i].win.addr == p->win.addr + bias)
			s = &sites[i];
	memcpy(&rel, hop + 1, 4);
	tap_ok(s && s->hop.addr == p->hop.addr + bias && site[0] == 0xeb &&
	       site + DP_HOP_SITE_LEN + (int8_t)site[1] == hop && hop[0] == 0xe9 &&
	       p->hop.addr + bias + DP_HOP_LEN + (int64_t)rel == s->tramp.entry,
	       "%s: installed: jmp rel8 to the hop, jmp rel32 from there to the trampoline",
	       cc->name);
}

/*
 * A `nop; nop5` site as planned: a window of the nop5 alone with the nop as
 * its lead, the probe's point the nop itself, and a trampoline that copies
 * nothing (without hooks: the jmp back alone).
 */
static void check_nop5_plan(const struct ccase *cc, const struct dp_patch *p, uint64_t site)
{
	uint8_t code[64];
	struct dp_tramp t = { 0 };
	struct dp_emit e;
	enum dp_reason why;
	int ret;

	if (!tap_ok(p && p->method == DP_SITE_JUMP && p->win.addr == site + 1 &&
		    p->win.len == 5 && p->win.lead == 1 && p->win.ninsns == 1,
		    "%s: the nop5 is the window (at +1, 5 bytes, lead 1)", cc->name))
		return;
	tap_ok(p->points[0] == site, "%s: the probe's point stays the nop", cc->name);
	/* Probed at the nop and at the nop5 itself: one window, both hooks. */
	{
		uint64_t both[2] = { site + 1, site };
		struct dp_patch *pp = NULL;
		size_t np = 0;

		ret = dp_plan_sites(obj, both, 2, &pp, &np);
		tap_ok(!ret && np == 1 && pp[0].method == DP_SITE_JUMP && pp[0].win.addr == site + 1 &&
		       pp[0].win.lead == 1 && pp[0].npoints == 2 && pp[0].points[0] == site &&
		       pp[0].points[1] == site + 1,
		       "%s: the nop and the nop5 probed together: one window, both points (%zu)",
		       cc->name, np);
		free(pp);
	}
	dp_emit_init(&e, code, sizeof(code), site + 4096);	/* object addresses */
	ret = dp_tramp_build(&e, &p->win, NULL, 0, on_hit, vec, &t, &why);
	tap_ok(!ret && t.len == 5 &&
	       code[0] == 0xe9, "%s: its trampoline copies nothing (%zu bytes: the jmp back; %d)",
	       cc->name, t.len, ret);
}

/* The installed patch whose window starts at addr (file address), if any. */
static const struct dp_inproc_site *site_at(uint64_t addr)
{
	for (size_t i = 0; i < nsites; i++)
		if (sites[i].method != DP_SITE_INT3 && sites[i].win.addr == addr + bias &&
		    sites[i].tramp.len)
			return &sites[i];
	return NULL;
}

/* Where an installed patch that leads branches serves the instruction at addr, or 0. */
static uint64_t led_dest(uint64_t addr)
{
	for (size_t i = 0; i < nsites; i++) {
		const struct dp_inproc_site *s = &sites[i];

		if (!s->tramp.len || s->method == DP_SITE_INT3)
			continue;
		for (unsigned m = 0; m < s->win.ninsns; m++)
			if (s->win.addr + s->win.off[m] == addr + bias)
				return m ? s->tramp.insn_at[m] : s->tramp.entry;
	}
	return 0;
}

/* The run-time places the relocated branches of p lead to (plan.h): false
 * when one is not served. */
static bool via_entries(const struct dp_patch *p, uint64_t via[DP_WINDOW_MAX_INSNS])
{
	bool all = true;

	for (unsigned i = 0; i < DP_WINDOW_MAX_INSNS; i++) {
		via[i] = p->redirect_to[i] ? led_dest(p->redirect_to[i]) : 0;
		all &= !p->redirect_to[i] || via[i];
	}
	return all;
}

/*
 * A redirect, or a jump with branches led into its window, as planned and
 * installed: a redirect's window bytes as the file has them, a jump's a
 * jmp rel32; each branch written to reach the trampoline where it serves
 * the instruction the branch led to (a rel32) or the hop (a rel8), the hop
 * a jmp rel32 there; or, for a branch in another window, that window's
 * relocated copy leading there.
 */
static void check_redirect_installed(const struct ccase *cc, const struct dp_patch *p)
{
	const struct dp_inproc_site *s = p ? site_at(p->win.addr) : NULL;
	bool led = s != NULL, via = false;

	if (!tap_ok(s != NULL && (s->method == DP_SITE_REDIRECT || s->nredirects),
		    "%s: the site's patch is installed, branches led into its window", cc->name))
		return;
	if (s->method == DP_SITE_REDIRECT)
		tap_ok(same_as_file(s->win.addr, s->win.len),
		       "%s: installed: the redirected window's %u bytes are the file's", cc->name,
		       s->win.len);
	else
		tap_ok(*(const uint8_t *)(uintptr_t)s->win.addr == 0xe9,
		       "%s: installed: the window starts with a jmp rel32", cc->name);
	for (unsigned k = 0; k < s->nredirects; k++) {
		const struct dp_redirect *r = &s->redirects[k];
		const uint8_t *d = (const uint8_t *)(uintptr_t)(r->addr + r->disp_off);
		int64_t rel = r->disp_len == 1 ? (int8_t)d[0] : (int32_t)(d[0] | d[1] << 8 | d[2] << 16 | (uint32_t)d[3] << 24);
		uint64_t to = r->addr + r->len + (uint64_t)rel;
		uint64_t dest = r->to ? s->tramp.insn_at[r->to] : s->tramp.entry;

		if (r->disp_len == 1) {
			const uint8_t *h = (const uint8_t *)(uintptr_t)s->hop.addr;
			int32_t hr;

			memcpy(&hr, h + 1, 4);
			led &= s->hop.len && to == s->hop.addr && h[0] == 0xe9 &&
			       s->hop.addr + DP_HOP_LEN + (int64_t)hr == dest;
		} else {
			led &= to == dest;
		}
	}
	for (size_t i = 0; i < nsites; i++)
		for (unsigned k = 0; k < sites[i].win.ninsns; k++)
			for (unsigned m = 0; m < s->win.ninsns; m++)
				via |= &sites[i] != s && sites[i].method != DP_SITE_REDIRECT &&
				       (sites[i].win.insns[k].attr & DP_ATTR_REL) &&
				       dp_insn_target(&sites[i].win.insns[k],
						      sites[i].win.addr + sites[i].win.off[k]) ==
					       (m ? s->tramp.insn_at[m] : s->tramp.entry);
	tap_ok(led && (s->nredirects || via),
	       "%s: installed: %u branches written to reach the trampoline%s%s", cc->name,
	       s->nredirects, s->hop.len ? " (rel8s through the hop)" : "",
	       via ? ", and a relocated copy in another window leads there" : "");
}

/* A jump whose window holds one branch to its own instructions, and
 * nothing led into it from outside (no redirect, no hop). */
static bool inner_only(const struct dp_patch *q)
{
	return q && q->method == DP_SITE_JUMP && !q->led && !q->nredirects && !q->hop.len &&
	       dp_window_inner_branches(&q->win) == 1;
}

static void run_case(const struct ccase *cc, struct dp_code_pool *pool)
{
	const struct dp_function *fn = dp_object_function_by_name(obj, cc->name);
	struct point points[MAX_POINTS];
	uint64_t addrs[MAX_POINTS], seed = 0x9e3779b97f4a7c15ull;
	long inputs[NINPUTS], ref[NINPUTS], got[NINPUTS];
	struct dp_patch *patches = NULL, *hop = NULL;
	size_t npoints = 0, npatches = 0, bad_results = 0;
	bool installed = true, same = true, nop5;

	if (!tap_ok(fn != NULL, "%s: found by name (%s)", cc->name, cc->hazard))
		return;
	memset(points, 0, sizeof(points));
	addrs[npoints] = fn->start;
	points[npoints++].what = "entry";
	for (uint32_t i = 0; i < fn->nrets && npoints < MAX_POINTS - 1; i++) {
		addrs[npoints] = fn->rets[i].addr;
		points[npoints++].what = "return site";
	}
	if (cc->site) {
		addrs[npoints] = (uint64_t)(uintptr_t)cc->site - bias;
		points[npoints++].what = "inner site";
	} else if (cc->site_ret >= 0) {
		const struct dp_function *sf =
			cc->site_next ? dp_object_function_at(obj, fn->start + fn->size) : fn;

		if (!tap_ok(sf && sf->nrets > (uint32_t)cc->site_ret, "%s: return site %d of %s found",
			    cc->name, cc->site_ret, cc->site_next ? "the next function" : "it"))
			return;
		addrs[npoints] = sf->rets[cc->site_ret].addr;
		points[npoints++].what = "inner site";
	}
	tap_ok(fn->nrets > 0, "%s: has %u return sites", cc->name, fn->nrets);

	if (!tap_ok(!dp_plan_sites_flags(obj, addrs, npoints, cc->plan_flags, &patches, &npatches),
		    "%s: planned", cc->name))
		return;
	for (size_t i = 0; i < npatches; i++) {
		for (unsigned k = 0; k < patches[i].npoints; k++) {
			size_t id = patches[i].point_ids[k];
			struct point *p = &points[id];
			bool entry = id == 0, site = (cc->site || cc->site_ret >= 0) && id == npoints - 1;

			p->addr = patches[i].points[k] + bias;
			if (entry)
				check_plan(cc, p, &patches[i], cc->entry_method, cc->entry_reason);
			else if (site)
				check_plan(cc, p, &patches[i], cc->site_method, cc->site_reason);
			else
				check_plan(cc, p, &patches[i], cc->ret_method, cc->ret_reason);
		}
	}
	if (!strcmp(cc->name, "dp_c_endbr"))
		tap_ok(points[0].addr == fn->start + bias + 4,
		       "%s: the entry probe is placed after endbr64", cc->name);
	nop5 = cc->site && !memcmp(cc->site, "\x90\x0f\x1f\x44\x00\x00", 6);
	if (nop5)
		check_nop5_plan(cc, patch_of(patches, npatches, npoints - 1),
				(uint64_t)(uintptr_t)cc->site - bias);
	if (!strcmp(cc->name, "dp_c_inner_ret")) {
		const struct dp_patch *q = patch_of(patches, npatches, npoints - 1);
		char how[160];

		tap_ok(inner_only(q),
		       "%s: the site's window holds the branch to it, nothing else led: %s", cc->name,
		       q ? dp_plan_led_str(q, how, sizeof(how)) : "no patch");
	}
	if (!strcmp(cc->name, "dp_c_fwd_entry")) {
		const struct dp_patch *q = patch_of(patches, npatches, 0);
		char how[160];

		tap_ok(inner_only(q) && q->win.addr == fn->start && q->win.ninsns == 4,
		       "%s: the entry's window runs on over the loop, its jg inside, nothing led: %s",
		       cc->name, q ? dp_plan_led_str(q, how, sizeof(how)) : "no patch");
	}
	if (cc->hop != HOP_NONE) {
		hop = patch_of(patches, npatches, cc->hop == HOP_ENTRY ? 0 : npoints - 1);
		check_hop_plan(cc, fn, hop);
	}

	/* Unpatched: the reference results, and the oracle's run counts. */
	for (int i = 0; i < NINPUTS; i++) {
		inputs[i] = i < 8 ? (long)i - 3 : (long)(next_input(&seed) >> (i % 40));
		ref[i] = cc->drive(inputs[i]);
	}
	trace_points = points;
	trace_npoints = npoints;
	for (int i = 0; i < NINPUTS; i++) {
		long r;

		tracing = 1;
		r = dp_c_trace(cc->drive, inputs[i]);
		tracing = 0;
		if (r != ref[i])
			bad_results++;
	}
	trace_points = NULL;
	tap_ok(!bad_results, "%s: single-stepped run gives the same results", cc->name);

	/* Patched. */
	nsites = 0;
	memset(sites, 0, sizeof(sites));
	if (hop && hop->hop.len)
		check_hop_stale(cc, hop, pool);
	/* Redirects first: the relocated branches of others may lead to them. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < npatches; i++) {
			void *args[DP_PATCH_MAX_POINTS];
			uint64_t via[DP_WINDOW_MAX_INSNS];
			enum dp_reason why;

			bool leads = patches[i].led;

			if (patches[i].method == DP_SITE_REFUSED || leads != !pass)
				continue;
			for (unsigned k = 0; k < patches[i].npoints; k++)
				args[k] = &points[patches[i].point_ids[k]];
			/* Counted in sites[] (on_trap serves it) before its bytes are written. */
			if (!via_entries(&patches[i], via) ||
			    dp_inproc_prepare_via(pool, &sites[nsites], &patches[i], bias, on_hit, args,
						  vec, via, &why) ||
			    dp_inproc_commit(pool, &sites[nsites++]))
				installed = false;
		}
	}
	if (!tap_ok(installed, "%s: every patch installed (%zu)", cc->name, nsites))
		goto remove;
	if (!strcmp(cc->name, "dp_c_endbr"))
		tap_ok(!memcmp((const void *)(uintptr_t)(fn->start + bias), "\xf3\x0f\x1e\xfa", 4),
		       "%s: endbr64 still in place while probed", cc->name);
	if (hop && hop->hop.len)
		check_hop_installed(cc, hop);
	if (cc->site_method == DP_SITE_REDIRECT || cc->led)
		check_redirect_installed(cc, patch_of(patches, npatches, npoints - 1));
	if (nop5)
		tap_ok((uint8_t)cc->site[0] == 0x90 && (uint8_t)cc->site[1] == 0xe9,
		       "%s: installed: the nop in place, a jmp over the nop5", cc->name);
	bad_results = 0;
	for (int i = 0; i < NINPUTS; i++) {
		got[i] = cc->drive(inputs[i]);
		bad_results += got[i] != ref[i];
	}
	tap_ok(!bad_results, "%s: %d results identical to the unpatched run (%zu differ)", cc->name,
	       NINPUTS, bad_results);
	if (!strcmp(cc->name, "dp_c_call_pop"))
		tap_ok(got[0] == 5, "%s: call next; pop still yields the original address", cc->name);
	for (size_t i = 0; i < npoints; i++) {
		struct point *p = &points[i];
		uint64_t hits = atomic_load(&p->hits);

		tap_ok(hits == p->expect && p->expect > 0,
		       "%s: %s at +%#lx hit %lu times, ran %lu times", cc->name, p->what,
		       (unsigned long)(p->addr - bias - fn->start), (unsigned long)hits,
		       (unsigned long)p->expect);
		tap_ok(!p->bad_rip, "%s: %s handler saw rip = the probe address", cc->name, p->what);
	}

remove:
	for (size_t i = 0; i < nsites; i++) {
		if (dp_inproc_remove(pool, &sites[i]))
			same = false;
		else if (!same_as_file(sites[i].win.addr, sites[i].win.len) ||
			 (sites[i].hop.len && !same_as_file(sites[i].hop.addr, sites[i].hop.len)))
			same = false;
		for (unsigned k = 0; k < sites[i].nredirects; k++)
			same &= same_as_file(sites[i].redirects[k].addr, sites[i].redirects[k].len);
	}
	tap_ok(same && same_as_file(fn->start + bias, fn->size),
	       "%s: code bytes identical to the file's once unpatched", cc->name);
	if (hop && hop->hop.len)
		tap_ok(same_as_file(hop->hop.addr + bias, hop->hop.len),
		       "%s: the hop's fill is back as the file has it", cc->name);
	bad_results = 0;
	for (int i = 0; i < NINPUTS; i++)
		bad_results += cc->drive(inputs[i]) != ref[i];
	tap_ok(!bad_results, "%s: unpatched again, same results", cc->name);
	nsites = 0;
	free(patches);
}

int main(void)
{
	struct dp_code_pool *pool;
	struct sigaction sa;

	setvbuf(stdout, NULL, _IOLBF, 0);
	dl_iterate_phdr(main_bias, &bias);
	obj = dp_object_open("/proc/self/exe");
	vec = dp_vec_save_detect();
	pool = dp_code_pool_new();
	if (!tap_ok(obj && pool, "this executable opened and a code pool made"))
		return tap_done();
	tap_diag("vector state saved: %s", dp_vec_save_str(vec));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGTRAP, &sa, NULL);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!cpu_has(cases[i].need)) {
			tap_diag("%s: this CPU lacks %s", cases[i].name,
				 cases[i].need == NEED_AVX512 ? "AVX-512" : "AVX2");
			continue;
		}
		run_case(&cases[i], pool);
	}
	dp_object_close(obj);
	return tap_done();
}
