/*
 * Trampoline cost per hit: a small function called in a tight loop,
 * unpatched, then with its entry probed by a jump to a trampoline calling an
 * empty handler, once per vector-save kind this CPU allows, then by int3.
 * Prints ns per call and the probe's own cost (the difference), all measured
 * in the same run.  Not a pass/fail test.
 *
 *   tramp-bench [calls]
 */
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"

/* The probed function: two instructions of 4 bytes each make the window. */
__asm__(".text\n"
	".p2align 4\n"
	".globl dp_bench_fn\n"
	".type dp_bench_fn, @function\n"
	"dp_bench_fn:\n"
	"	lea 1(%rdi), %rax\n"
	"	imul $3, %rax, %rax\n"
	"	ret\n"
	".size dp_bench_fn, . - dp_bench_fn\n");
long dp_bench_fn(long x);

static struct dp_inproc_site site;

static void empty_handler(void *arg, struct dp_regs *regs)
{
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	if (site.installed && site.win.addr == (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1) {
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

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Best of 5 runs of `calls` calls: ns per call. */
static double measure(long calls)
{
	long (*volatile fn)(long) = dp_bench_fn;	/* a real call every time */
	double best = 1e30;
	long sink = 0;

	for (int run = 0; run < 5; run++) {
		double t0 = now_ns(), t;

		for (long i = 0; i < calls; i++)
			sink += fn(i);
		t = (now_ns() - t0) / calls;
		if (t < best)
			best = t;
	}
	if (sink == 42)
		puts("");
	return best;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 20000000;
	static const enum dp_vec_save kinds[] = { DP_VEC_SSE, DP_VEC_AVX, DP_VEC_AVX512,
						  DP_VEC_AVX512_LOW };
	enum dp_vec_save best = dp_vec_save_detect();
	struct dp_code_pool *pool = dp_code_pool_new();
	struct dp_object *obj = dp_object_open("/proc/self/exe");
	struct dp_patch plan;
	struct sigaction sa;
	void *args[1] = { NULL };
	enum dp_reason why;
	uint64_t bias = 0;
	double base, t;

	dl_iterate_phdr(main_bias, &bias);
	if (!pool || !obj ||
	    dp_plan_site(obj, (uint64_t)(uintptr_t)dp_bench_fn - bias, &plan) ||
	    plan.method != DP_SITE_JUMP) {
		fprintf(stderr, "tramp-bench: cannot plan a jump at dp_bench_fn\n");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGTRAP, &sa, NULL);

	base = measure(calls);
	printf("%-34s %8.2f ns/call\n", "unpatched call", base);
	/* zmm0-15 alone only where the daemon would choose it: AVX-512 here and
	 * nothing in this program naming zmm16-31 or k0-7. */
	if (best == DP_VEC_AVX512)
		best = dp_vec_save_site(best, dp_object_evex_free(obj));
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && kinds[k] <= best; k++) {
		if (dp_inproc_prepare(pool, &site, &plan, bias, empty_handler, args, kinds[k], &why) ||
		    dp_inproc_commit(pool, &site)) {
			fprintf(stderr, "tramp-bench: install failed\n");
			return 1;
		}
		t = measure(calls);
		printf("jump, saves %-22s %8.2f ns/call  probe %6.2f ns/hit  (%.1fx the call)\n",
		       dp_vec_save_str(kinds[k]), t, t - base, t / base);
		dp_inproc_remove(pool, &site);
	}
	plan.method = DP_SITE_INT3;
	plan.win.len = plan.win.insns[0].len;
	plan.win.ninsns = 1;
	/* on_trap serves `site` once prepared: commit may write the int3. */
	if (dp_inproc_prepare(pool, &site, &plan, bias, empty_handler, args, dp_vec_save_detect(),
			      &why) ||
	    dp_inproc_commit(pool, &site)) {
		fprintf(stderr, "tramp-bench: int3 install failed\n");
		return 1;
	}
	t = measure(calls / 100 > 1000 ? calls / 100 : 1000);
	printf("%-34s %8.2f ns/call  probe %6.2f ns/hit  (%.1fx the call)\n", "int3 (SIGTRAP)", t,
	       t - base, t / base);
	dp_inproc_remove(pool, &site);
	dp_object_close(obj);
	return 0;
}
