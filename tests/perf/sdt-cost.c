/*
 * sdt-cost: what a statically defined probe costs, disabled and enabled, in
 * ns per call over an unprobed call, against static LTTng-UST tracepoints
 * recording the same three integers, all in one run and one session
 * (sdt-cost.sh sets it up: an overwrite-mode snapshot channel holding
 * dpsdt:on and the dynprobe events; dpsdt:off stays disabled).
 *
 * Disabled: a <sys/sdt.h> site (one nop), a <lttng/dynprobe/sdt.h> site
 * (nop; nop5), both unpatched, and a tracepoint whose event is disabled.
 * Enabled: each SDT site patched by jump (over the instructions after the
 * nop for <sys/sdt.h>, over the nop5 in place for ours), recording the
 * probe's three arguments from the registers its note names (value recipes,
 * as SDT arguments are recorded), and the
 * enabled tracepoint.  And, for the few real sites where no jump fits, a
 * nop site patched with an int3.
 *
 * The last line: `sdt-cost: disabled_ratio=R enabled_ratio=R`: our site
 * disabled over the disabled tracepoint, our site enabled over the enabled
 * tracepoint.
 */
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <time.h>

#include <lttng/dynprobe/sdt.h>

#include "elf/elf.h"
#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"
#include "probe.h"
#include "sdt-cost-tp.h"
#include "spec/ctx.h"
#include "spec/sdt.h"

/*
 * Rounds: each measures every case once, in turn, and a case keeps its best
 * round, so that a burst of load on the shared machine spoils one round of
 * every case rather than every round of one case.
 */
#define RUNS 15
/* Rounds, RUNS unless given (a second argument): many rounds of fewer
 * calls keep batches short enough to run between the bursts of a loaded
 * machine. */
static int rounds = RUNS;

typedef uint64_t (*target_fn)(uint64_t, uint64_t, uint64_t);

/* Each case its own function, each a different constant (none folded into
 * another); the arguments arrive in rdi, rsi, rdx and stay there. */
#define TARGET(fn, k, probe)                                                   \
	__attribute__((noinline)) uint64_t fn(uint64_t a, uint64_t b, uint64_t c); \
	uint64_t fn(uint64_t a, uint64_t b, uint64_t c)                        \
	{                                                                      \
		probe;                                                         \
		__asm__ volatile("");                                          \
		return a * 3 + b + c + (k);                                    \
	}

/*
 * The disabled cases hold SITES sites each, a compiler barrier after each
 * (so that the tracepoint's enabled flag is read at every one, as at sites
 * that code separates), and so does their baseline: a disabled site costs
 * a fraction of a nanosecond, below the noise of one call.
 */
#define SITES 128
#define REPEAT8(x) x; x; x; x; x; x; x; x
#define REPEAT16(x) REPEAT8(x); REPEAT8(x)
#define REPEAT128(x) REPEAT16(REPEAT8(x))
#define BARRIER __asm__ volatile("" : : : "memory")

TARGET(t_base, 1, (void)0)
TARGET(t_base_n, 8, REPEAT128(BARRIER))
TARGET(t_sys_off, 2, REPEAT128(DTRACE_PROBE3(dpsdt, sys_off, a, b, c); BARRIER))
TARGET(t_hdr_off, 3, REPEAT128(LTTNG_DYNPROBE_SDT(dpsdt, hdr_off, a, b, c); BARRIER))
TARGET(t_tp_off, 4, REPEAT128(lttng_ust_tracepoint(dpsdt, off, a, b, c); BARRIER))
TARGET(t_tp_on, 5, lttng_ust_tracepoint(dpsdt, on, a, b, c))
TARGET(t_sys_on, 6, DTRACE_PROBE3(dpsdt, sys_on, a, b, c))
TARGET(t_hdr_on, 7, LTTNG_DYNPROBE_SDT(dpsdt, hdr_on, a, b, c))
TARGET(t_hdr_reg, 9, LTTNG_DYNPROBE_SDT(dpsdt, hdr_reg, a, b, c))

/*
 * A site where only an int3 fits, with the note <sys/sdt.h> would write:
 * the nop is a branch target and so is the instruction after it (both
 * branches are never taken), so neither a jump nor a hop has room.
 */
uint64_t t_int3_on(uint64_t a, uint64_t b, uint64_t c);
__asm__(
	"	.text\n"
	"	.globl t_int3_on\n"
	"	.type t_int3_on, @function\n"
	"t_int3_on:\n"
	"	.cfi_startproc\n"
	"	leaq 9(%rdi,%rdi,2), %rax\n"
	"1:	nop\n"
	"2:	addq %rsi, %rax\n"
	"	addq %rdx, %rax\n"
	"	cmpq $-1, %rdi\n"
	"	je 1b\n"
	"	cmpq $-2, %rdi\n"
	"	je 2b\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size t_int3_on, . - t_int3_on\n"
	"	.pushsection .note.stapsdt, \"\", \"note\"\n"
	"	.balign 4\n"
	"	.4byte 4f - 3f, 6f - 5f, 3\n"
	"3:	.asciz \"stapsdt\"\n"
	"4:	.balign 4\n"
	"5:	.8byte 1b\n"
	"	.8byte _.stapsdt.base\n"
	"	.8byte 0\n"
	"	.asciz \"dpsdt\"\n"
	"	.asciz \"int3_on\"\n"
	"	.asciz \"8@%rdi 8@%rsi 8@%rdx\"\n"
	"6:	.balign 4\n"
	"	.popsection\n");

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static target_fn volatile sink;

/* ns per call of one batch. */
static double batch(target_fn fn, uint64_t iters)
{
	uint64_t acc = 0;
	double t0;

	sink = fn;
	fn = sink;
	t0 = now_ns();
	for (uint64_t i = 0; i < iters; i++)
		acc += fn(i, i ^ 5, i + 9);
	t0 = (now_ns() - t0) / iters;
	__asm__ volatile("" : : "r"(acc));
	return t0;
}

/* ---- enabling ------------------------------------------------------------ */

static struct dp_code_pool *pool;
static struct dp_object *self;
static uint64_t bias;
/* What the trampolines save: as the daemon chooses it for a site of this
 * program (dp_vec_save_site). */
static enum dp_vec_save vec;
static struct dp_sdt_probe *notes;
static size_t nnotes;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	bias = info->dlpi_addr;	/* the executable comes first */
	return 1;
}

/* The site of dpsdt:NAME in this program, if it has `want` of them. */
static const struct dp_sdt_probe *note_of(const char *name, size_t want)
{
	const struct dp_sdt_probe *found = NULL;
	size_t n = 0;

	for (size_t i = 0; i < nnotes; i++) {
		if (strcmp(notes[i].provider, "dpsdt") || strcmp(notes[i].name, name))
			continue;
		n++;
		found = &notes[i];
	}
	return n == want ? found : NULL;
}

/*
 * Probes the site of dpsdt:NAME, recording its arguments: each one a 64-bit
 * register as the note says: a value recipe, as the SDT arguments of an
 * event are recorded, or (!recipes) a reg: context, for comparison.  `form` is what the site's
 * bytes must be and `method` how it must be placed (what its row measures).
 */
static int enable(const char *name, const uint8_t *form, size_t formlen,
		  enum dp_site_method method, bool recipes)
{
	const struct dp_sdt_probe *note = note_of(name, 1);
	struct dp_ctx ctx[3];
	struct dp_sdt_args args;
	struct dp_err err = DP_ERR_INIT;
	struct dp_inproc_site *site = calloc(1, sizeof(*site));
	struct dp_patch plan;
	struct dpa_probe *p;
	enum dp_reason why;
	void *arg;
	int ret;

	if (!note || !site) {
		fprintf(stderr, "sdt-cost: dpsdt:%s: not one site\n", name);
		return -ENOENT;
	}
	if (memcmp((const void *)(uintptr_t)(note->pc + bias), form, formlen)) {
		fprintf(stderr, "sdt-cost: dpsdt:%s: the site is not the form its row measures\n",
			name);
		return -EINVAL;
	}
	if (dp_spec_sdt_args_parse(note->args, &args, &err) || args.n != 3) {
		fprintf(stderr, "sdt-cost: dpsdt:%s: arguments '%s'\n", name, note->args);
		return -EINVAL;
	}
	/* Each argument as the agent records an SDT argument: a value recipe
	 * reading the register the note names, a typed field argN. */
	memset(ctx, 0, sizeof(ctx));
	for (unsigned i = 0; i < 3; i++) {
		if (args.v[i].kind != DP_SDT_ARG_REG || args.v[i].size != 8 ||
		    args.v[i].reg >= 16) {
			fprintf(stderr, "sdt-cost: dpsdt:%s: argument %u is not a 64-bit "
				"register (%s)\n", name, i, note->args);
			return -EINVAL;
		}
		if (!recipes) {
			char spec[32];

			snprintf(spec, sizeof(spec), "reg:%s", dp_reg_str(args.v[i].reg));
			if (dp_ctx_parse(spec, NULL, NULL, &ctx[i], &err)) {
				fprintf(stderr, "sdt-cost: %s: %s\n", spec, err.msg);
				return -EINVAL;
			}
			continue;
		}
		ctx[i].kind = DP_CTX_VALUE;
		snprintf(ctx[i].name, sizeof(ctx[i].name), "arg%u", i);
		ctx[i].type.type = DP_FT_INT;
		ctx[i].type.size = 8;
		ctx[i].type.is_signed = args.v[i].is_signed;
		ctx[i].value.loc = DP_VALUE_LOC_VALUE;
		if (dp_value_push(&ctx[i].value, DP_VOP_REG, args.v[i].reg, 0) ||
		    dp_value_check(&ctx[i].value, &ctx[i].type, 0, &err)) {
			fprintf(stderr, "sdt-cost: dpsdt:%s: argument %u: %s\n", name, i, err.msg);
			return -EINVAL;
		}
	}
	p = dpa_probe_new(note->pc + bias, name, 0, ctx, 3, &err);
	if (!p) {
		fprintf(stderr, "sdt-cost: %s: %s\n", name, err.msg[0] ? err.msg : strerror(errno));
		return -errno;
	}
	ret = dp_plan_site(self, note->pc, &plan);
	if (ret)
		return ret;
	if (plan.method != method) {
		fprintf(stderr, "sdt-cost: dpsdt:%s: planned %s (%s), not %s\n", name,
			dp_site_method_str(plan.method), dp_reason_str(plan.reason),
			dp_site_method_str(method));
		return -EINVAL;
	}
	arg = p;
	ret = dp_inproc_prepare(pool, site, &plan, bias, dp_probe_hit, &arg, vec,
				&why);
	if (!ret && method == DP_SITE_INT3)
		ret = dpa_trap_add(site->win.addr, site->tramp.insn_at[0],
				   (struct dpa_probe *const *)&arg, 1);
	return ret ? ret : dp_inproc_commit(pool, site);
}

/* ---- the cases ------------------------------------------------------------ */

struct row {
	const char *what;
	target_fn fn;
	unsigned sites;		/* per call */
	unsigned slow;		/* calls per batch divided by this */
	double ns;		/* per site */
};

int main(int argc, char **argv)
{
	static const uint8_t nop[] = { 0x90 };
	static const uint8_t nop_nop5[] = { 0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	uint64_t iters = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000000;
	struct dp_err err = DP_ERR_INIT;
	struct row rows[] = {
		{ "disabled: LTTng-UST tracepoint, 3 integers", t_tp_off, SITES, 1, 0 },
		{ "disabled: <sys/sdt.h> site (nop)", t_sys_off, SITES, 1, 0 },
		{ "disabled: <lttng/dynprobe/sdt.h> site (nop; nop5)", t_hdr_off, SITES, 1, 0 },
		{ "enabled: LTTng-UST tracepoint, 3 integers", t_tp_on, 1, 1, 0 },
		{ "enabled: <sys/sdt.h> site, jump, 3 arguments", t_sys_on, 1, 1, 0 },
		{ "enabled: <lttng/dynprobe/sdt.h> site, jump, 3 arguments", t_hdr_on, 1, 1, 0 },
		{ "enabled: <lttng/dynprobe/sdt.h> site, jump, 3 reg: contexts", t_hdr_reg, 1, 1, 0 },
		{ "enabled: nop site, int3 (no room for a jump), 3 arguments", t_int3_on, 1, 100, 0 },
	};
	size_t nrows = sizeof(rows) / sizeof(rows[0]);
	double base = 1e30, base_n = 1e30;

	if (argc > 2 && atoi(argv[2]) > 0)
		rounds = atoi(argv[2]);
	pool = dp_code_pool_new();
	self = dp_object_open("/proc/self/exe");
	dl_iterate_phdr(find_self, NULL);
	if (!pool || !self || dp_elf_sdt_probes(dp_object_elf(self), &notes, &nnotes, &err)) {
		fprintf(stderr, "sdt-cost: cannot read this program's notes: %s\n", err.msg);
		return 1;
	}
	vec = dp_vec_save_site(dp_vec_save_detect(), dp_object_evex_free(self));
	if (!note_of("sys_off", SITES) || !note_of("hdr_off", SITES) ||
	    enable("sys_on", nop, sizeof(nop), DP_SITE_JUMP, true) ||
	    enable("hdr_on", nop_nop5, sizeof(nop_nop5), DP_SITE_JUMP, true) ||
	    enable("hdr_reg", nop_nop5, sizeof(nop_nop5), DP_SITE_JUMP, false) ||
	    enable("int3_on", nop, sizeof(nop), DP_SITE_INT3, true)) {
		fprintf(stderr, "sdt-cost: the probes could not be set up\n");
		return 1;
	}

	for (size_t i = 0; i < nrows; i++) {
		batch(rows[i].fn, iters / 10 / rows[i].slow);	/* warm up */
		rows[i].ns = 1e30;
	}
	for (int r = 0; r < rounds; r++) {
		double t = batch(t_base, iters);

		if (t < base)
			base = t;
		t = batch(t_base_n, iters);
		if (t < base_n)
			base_n = t;
		for (size_t i = 0; i < nrows; i++) {
			t = batch(rows[i].fn, iters / rows[i].slow);
			if (t < rows[i].ns)
				rows[i].ns = t;
		}
	}
	for (size_t i = 0; i < nrows; i++)
		rows[i].ns = (rows[i].ns - (rows[i].sites > 1 ? base_n : base)) / rows[i].sites;

	printf("sdt-cost: ns per site over an unprobed call (%.2f ns; %.2f ns with %d barriers), "
	       "disabled cases %d sites per call, best of %d rounds of %" PRIu64 " calls, "
	       "vector save: %s\n", base, base_n, SITES, SITES, rounds, iters, dp_vec_save_str(vec));
	printf("%-60s %8s %8s\n", "case", "ns/site", "ratio");
	for (size_t i = 0; i < nrows; i++) {
		const struct row *yard = &rows[i < 3 ? 0 : 3];

		printf("%-60s %8.2f %8.2f\n", rows[i].what, rows[i].ns,
		       yard->ns > 0 ? rows[i].ns / yard->ns : 0.0);
	}
	printf("sdt-cost: disabled_ratio=%.2f enabled_ratio=%.2f\n",
	       rows[0].ns > 0 ? rows[2].ns / rows[0].ns : 0.0, rows[5].ns / rows[3].ns);
	return 0;
}
