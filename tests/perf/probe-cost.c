/*
 * probe-cost: what one probe hit costs, in ns, against a static LTTng-UST
 * tracepoint recording one integer, all in one run, into one session
 * (probe-cost.sh sets it up: an overwrite-mode snapshot channel, so no
 * consumer competes and no writer ever waits).
 *
 * Each case calls its own small function in a loop; the cost of a case is
 * the time per call minus that of an unprobed call.  The rows go from the
 * bare trampoline (an empty handler) to the full hit path, so that the
 * differences say where the time goes: trampoline save/restore, the hit
 * path's guard and enabled test, the record path, the contexts.
 *
 * The last line is `probe-cost: entry_ratio=R`: a jump probe at a function
 * entry recording one integer from a register, over the static tracepoint.
 */
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "context.h"
#include "dwarf/dwarf.h"
#include "dwarf/dwarf-var.h"
#include "elf/elf.h"
#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"
#include "probe.h"
#include "probe-cost-tp.h"

#define DEPTH 20		/* frames under the probed function */
/*
 * Rounds: each measures every case once, in turn, and a case keeps its best
 * round.  On a shared machine a burst of load then spoils one round of
 * every case rather than every round of one case.
 */
#define RUNS 15
/* Rounds, RUNS unless given (a second argument): many rounds of fewer
 * iterations keep batches short enough to run between the bursts of a
 * loaded machine. */
static int rounds = RUNS;

typedef uint64_t (*target_fn)(uint64_t);

/*
 * The probed functions: one per case, each a different constant so that the
 * compiler folds none of them into another.  `lea; ret`: 5 bytes or more,
 * room for a jump.
 */
#define TARGET(name, k)                                                        \
	__attribute__((noinline)) uint64_t name(uint64_t v);                   \
	uint64_t name(uint64_t v)                                              \
	{                                                                      \
		__asm__ volatile("");                                          \
		return v * 3 + (k);                                            \
	}

TARGET(t_base, 1)
TARGET(t_empty, 2)
TARGET(t_disabled, 3)
TARGET(t_noctx, 4)
TARGET(t_reg, 5)
TARGET(t_stack, 6)
TARGET(t_heap, 7)
TARGET(t_regs, 8)
TARGET(t_fp8, 9)
TARGET(t_fp16, 10)
TARGET(t_cfi8, 11)
TARGET(t_cfi16, 12)
TARGET(t_unw8, 14)
TARGET(t_unw16, 15)
TARGET(t_vreg, 16)
TARGET(t_vstack, 17)

TARGET(t_var_reg, 18)

/*
 * var: rows, compiled from this program's own DWARF (it is built with -g)
 * as the daemon compiles them: a parameter in a register, one on the stack
 * (the seventh: [CFA], called through a one-parameter pointer, so the slot
 * holds whatever the caller left there: the read is what is measured), and
 * a member through a pointer parameter (the loop passes &cost_req).
 */
struct cost_req {
	uint64_t id;
	uint64_t len;
};

static struct cost_req cost_req = { 1, 4096 };

/* Their calls go through target_fn, as every case's. */
#define VAR_FN(f) ((target_fn)(void (*)(void))(f))

__attribute__((noinline)) uint64_t t_var_stack(uint64_t a, uint64_t b, uint64_t c, uint64_t d,
					       uint64_t e, uint64_t f, uint64_t g);
uint64_t t_var_stack(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f,
		     uint64_t g)
{
	__asm__ volatile("");
	return a * 3 + 19 + (b & c & d & e & f & g & 0);
}

__attribute__((noinline)) uint64_t t_var_ptr(const struct cost_req *req);
uint64_t t_var_ptr(const struct cost_req *req)
{
	__asm__ volatile("");
	return (uint64_t)(uintptr_t)req * 3 + 20;
}

__attribute__((noinline)) uint64_t t_static(uint64_t v);
uint64_t t_static(uint64_t v)
{
	lttng_ust_tracepoint(dpcost, tick, v);
	return v * 3 + 13;
}

/*
 * An entry where only an int3 fits: the first instruction is 1 byte and
 * entry+1 is a branch target, so neither a jump nor a 2-byte hop fits.
 */
uint64_t t_int3(uint64_t v);
__asm__(
	"	.text\n"
	"	.globl t_int3\n"
	"	.type t_int3, @function\n"
	"t_int3:\n"
	"	.cfi_startproc\n"
	"	pushq %rbx\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"1:	leaq 14(%rdi,%rdi,2), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 1b\n"
	"	popq %rbx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size t_int3, . - t_int3\n");

static target_fn volatile sink;
/* The argument of every call, when not 0 (a pointer a case reads through);
 * else the loop's counter. */
static uint64_t volatile loop_arg;

static uint64_t call_loop(target_fn fn, uint64_t n)
{
	uint64_t acc = 0, arg = loop_arg;

	for (uint64_t i = 0; i < n; i++)
		acc += fn(arg ? arg : i);
	return acc;
}

/* The loop, DEPTH frames down (frame pointers kept: see Makefile.am). */
__attribute__((noinline)) static uint64_t deep(int n, target_fn fn, uint64_t iters)
{
	volatile int pad = n;

	if (n > 0)
		return deep(n - 1, fn, iters) + pad;
	return call_loop(fn, iters);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ns per call of one batch. */
static double batch(target_fn fn, uint64_t iters)
{
	double t0;

	sink = fn;
	loop_arg = fn == VAR_FN(t_var_ptr) ? (uint64_t)(uintptr_t)&cost_req : 0;
	t0 = now_ns();
	deep(DEPTH, sink, iters);
	return (now_ns() - t0) / iters;
}

/* ns per call, the best of `rounds` batches (for a profiler: one case alone). */
static double per_call(target_fn fn, uint64_t iters)
{
	double best = 1e30;

	batch(fn, iters / 10);	/* warm up: caches, first-hit setup */
	for (int r = 0; r < rounds; r++) {
		double t = batch(fn, iters);

		if (t < best)
			best = t;
	}
	return best;
}

/* ---- installing --------------------------------------------------------- */

static struct dp_code_pool *pool;
static struct dp_object *self;
static uint64_t bias;
/* What the trampolines save: as the daemon chooses it for a site of this
 * program (dp_vec_save_site). */
static enum dp_vec_save vec;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	bias = info->dlpi_addr;	/* the executable comes first */
	return 1;
}

static void nop_handler(void *arg, struct dp_regs *regs)
{
}

static int install(target_fn fn, dp_handler_fn handler, void *arg)
{
	uint64_t at = (uint64_t)(uintptr_t)fn;
	struct dp_inproc_site *site = calloc(1, sizeof(*site));
	struct dp_patch plan;
	enum dp_reason why;
	int ret;

	ret = dp_plan_site(self, at - bias, &plan);
	if (ret)
		return ret;
	/* The int3 row must measure an int3, not whatever the planner found. */
	if ((fn == t_int3) != (plan.method == DP_SITE_INT3)) {
		fprintf(stderr, "probe-cost: %s got a %s site, not what its row measures\n",
			fn == t_int3 ? "t_int3" : "a jump target", dp_site_method_str(plan.method));
		return -EINVAL;
	}
	ret = dp_inproc_prepare(pool, site, &plan, bias, handler, &arg, vec, &why);
	if (ret)
		return ret;
	if (plan.method == DP_SITE_INT3)
		ret = dpa_trap_add(site->win.addr, site->tramp.insn_at[0],
				   (struct dpa_probe *const *)&arg, 1);
	return ret ? ret : dp_inproc_commit(pool, site);
}

static int probe_on(target_fn fn, const char *name, const char *spec)
{
	struct dp_ctx ctx;
	struct dp_err err = DP_ERR_INIT;
	struct dpa_probe *p;

	if (spec && dp_ctx_parse(spec, NULL, NULL, &ctx, &err)) {
		fprintf(stderr, "probe-cost: %s: %s\n", spec, err.msg);
		return -EINVAL;
	}
	p = dpa_probe_new((uint64_t)(uintptr_t)fn, name, DPA_PROBE_AT_ENTRY, &ctx, spec ? 1 : 0,
			  &err);
	if (!p) {
		fprintf(stderr, "probe-cost: %s: %s\n", name, err.msg[0] ? err.msg : strerror(errno));
		return -errno;
	}
	return install(fn, dp_probe_hit, p);
}

/* A probe whose one context is a value recipe (spec/value.h), as the daemon
 * compiles an SDT argument or a DWARF location: one register, or 8 bytes
 * at [rsp]. */
static int probe_value(target_fn fn, const char *name, uint8_t loc, uint8_t reg)
{
	struct dp_ctx ctx = { .kind = DP_CTX_VALUE, .name = "v",
			      .type = { .type = DP_FT_INT, .size = 8 } };
	struct dp_err err = DP_ERR_INIT;
	struct dpa_probe *p;

	ctx.value.loc = loc;
	dp_value_push(&ctx.value, DP_VOP_REG, reg, 0);
	p = dpa_probe_new((uint64_t)(uintptr_t)fn, name, DPA_PROBE_AT_ENTRY, &ctx, 1, &err);
	if (!p) {
		fprintf(stderr, "probe-cost: %s: %s\n", name, err.msg[0] ? err.msg : strerror(errno));
		return -errno;
	}
	return install(fn, dp_probe_hit, p);
}

/* A probe whose one context is var:EXPR at fn's entry, compiled from this
 * program's DWARF by dwarf/ (what the daemon does for a var: context). */
static int probe_var(target_fn fn, const char *name, const char *spec)
{
	struct dp_dwarf_at at = { .pc = (uint64_t)(uintptr_t)fn - bias, .bias = bias };
	struct dp_err err = DP_ERR_INIT;
	struct dp_var_expr e;
	struct dp_dwarf *dw;
	struct dpa_probe *p;
	struct dp_ctx ctx;

	at.elf = dp_elf_handle(dp_object_elf(self));
	if (dp_dwarf_get(dp_object_elf(self), &dw, &err) || dp_var_parse(spec, &e, &err)) {
		fprintf(stderr, "probe-cost: %s: %s\n", spec, err.msg);
		return -EINVAL;
	}
	at.dbg = dp_dwarf_handle(dw);
	if (dp_dwarf_var_compile(&at, &e, &ctx, &err)) {
		fprintf(stderr, "probe-cost: %s: %s\n", spec, err.msg);
		return -EINVAL;
	}
	p = dpa_probe_new((uint64_t)(uintptr_t)fn, name, DPA_PROBE_AT_ENTRY, &ctx, 1, &err);
	if (!p) {
		fprintf(stderr, "probe-cost: %s: %s\n", name, err.msg[0] ? err.msg : strerror(errno));
		return -errno;
	}
	return install(fn, dp_probe_hit, p);
}

/* ---- the cases ---------------------------------------------------------- */

struct row {
	const char *what;
	target_fn fn;
	uint64_t iters;
	double ns;
};

static uint64_t *heap_value;

int main(int argc, char **argv)
{
	uint64_t iters = argc > 1 ? strtoull(argv[1], NULL, 0) : 200000;
	char heap_spec[64];
	struct row rows[] = {
		{ "static tracepoint, 1 integer", t_static, iters, 0 },
		{ "jump, empty handler (trampoline only)", t_empty, iters, 0 },
		{ "jump, event disabled", t_disabled, iters, 0 },
		{ "jump, no payload", t_noctx, iters, 0 },
		{ "jump, reg:rdi", t_reg, iters, 0 },
		{ "jump, value recipe: rdi", t_vreg, iters, 0 },
		{ "jump, uint64 on the stack ([rsp])", t_stack, iters, 0 },
		{ "jump, value recipe: 8 bytes at rsp", t_vstack, iters, 0 },
		{ "jump, var:v (a parameter in rdi)", t_var_reg, iters, 0 },
		{ "jump, var:g (a parameter on the stack)", VAR_FN(t_var_stack), iters, 0 },
		{ "jump, var:req->len (through a pointer)", VAR_FN(t_var_ptr), iters, 0 },
		{ "jump, uint64 on the heap (*ADDR)", t_heap, iters / 10, 0 },
		{ "jump, regs (18 fields)", t_regs, iters, 0 },
		{ "jump, backtrace:8:fp", t_fp8, iters, 0 },
		{ "jump, backtrace:16:fp", t_fp16, iters, 0 },
		{ "jump, backtrace:8:cfi", t_cfi8, iters, 0 },
		{ "jump, backtrace:16:cfi", t_cfi16, iters, 0 },
		{ "jump, backtrace:8:libunwind", t_unw8, iters / 4, 0 },
		{ "jump, backtrace:16:libunwind", t_unw16, iters / 4, 0 },
		{ "int3, reg:rdi", t_int3, iters / 100, 0 },
	};
	size_t nrows = sizeof(rows) / sizeof(rows[0]);
	double base;
	int ret = 0;

	if (argc > 2 && atoi(argv[2]) > 0)
		rounds = atoi(argv[2]);
	pool = dp_code_pool_new();
	self = dp_object_open("/proc/self/exe");
	dl_iterate_phdr(find_self, NULL);
	if (!pool || !self) {
		fprintf(stderr, "probe-cost: cannot open this program for planning\n");
		return 1;
	}
	vec = dp_vec_save_site(dp_vec_save_detect(), dp_object_evex_free(self));
	heap_value = malloc(sizeof(*heap_value));
	*heap_value = 42;
	snprintf(heap_spec, sizeof(heap_spec), "uint64:h:*0x%" PRIx64,
		 (uint64_t)(uintptr_t)&heap_value);

	ret |= install(t_empty, nop_handler, NULL);
	ret |= probe_on(t_disabled, "cost_disabled", "reg:rdi");
	ret |= probe_on(t_noctx, "cost_noctx", NULL);
	ret |= probe_on(t_reg, "cost_reg", "reg:rdi");
	ret |= probe_on(t_stack, "cost_stack", "uint64:s:[rsp]");
	ret |= probe_value(t_vreg, "cost_vreg", DP_VALUE_LOC_VALUE, DP_REG_RDI);
	ret |= probe_value(t_vstack, "cost_vstack", DP_VALUE_LOC_ADDR, DP_REG_RSP);
	ret |= probe_on(t_heap, "cost_heap", heap_spec);
	ret |= probe_var(t_var_reg, "cost_var_reg", "var:v");
	ret |= probe_var(VAR_FN(t_var_stack), "cost_var_stack", "var:g");
	ret |= probe_var(VAR_FN(t_var_ptr), "cost_var_ptr", "var:req->len");
	ret |= probe_on(t_regs, "cost_regs", "regs");
	ret |= probe_on(t_fp8, "cost_fp8", "backtrace:8:fp");
	ret |= probe_on(t_fp16, "cost_fp16", "backtrace:16:fp");
	ret |= probe_on(t_cfi8, "cost_cfi8", "backtrace:8:cfi");
	ret |= probe_on(t_cfi16, "cost_cfi16", "backtrace:16:cfi");
	ret |= probe_on(t_unw8, "cost_unw8", "backtrace:8:libunwind");
	ret |= probe_on(t_unw16, "cost_unw16", "backtrace:16:libunwind");
	ret |= probe_on(t_int3, "cost_int3", "reg:rdi");
	if (ret) {
		fprintf(stderr, "probe-cost: installing the probes failed\n");
		return 1;
	}

	/* PROBE_COST_ONLY=SUBSTRING: that case alone, for a profiler. */
	if (getenv("PROBE_COST_ONLY")) {
		for (size_t i = 0; i < nrows; i++) {
			if (strstr(rows[i].what, getenv("PROBE_COST_ONLY"))) {
				printf("%s: %.1f ns per call\n", rows[i].what,
				       per_call(rows[i].fn, rows[i].iters));
				return 0;
			}
		}
		return 1;
	}
	base = 1e30;
	for (size_t i = 0; i < nrows; i++) {
		batch(rows[i].fn, rows[i].iters / 10);	/* warm up */
		rows[i].ns = 1e30;
	}
	for (int r = 0; r < rounds; r++) {
		double t = batch(t_base, iters);

		if (t < base)
			base = t;
		for (size_t i = 0; i < nrows; i++) {
			t = batch(rows[i].fn, rows[i].iters);
			if (t < rows[i].ns)
				rows[i].ns = t;
		}
	}
	for (size_t i = 0; i < nrows; i++)
		rows[i].ns -= base;

	printf("probe-cost: ns per hit over an unprobed call (%.1f ns), best of %d rounds, "
	       "%d frames deep, vector save: %s\n", base, rounds, DEPTH, dp_vec_save_str(vec));
	printf("%-42s %10s %8s\n", "case", "ns/hit", "ratio");
	for (size_t i = 0; i < nrows; i++)
		printf("%-42s %10.1f %8.2f\n", rows[i].what, rows[i].ns, rows[i].ns / rows[0].ns);
	printf("probe-cost: entry_ratio=%.2f\n", rows[4].ns / rows[0].ns);
	return 0;
}
