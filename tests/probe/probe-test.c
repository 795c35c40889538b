/*
 * The agent's probes end to end, in process: probes installed with the patch
 * engine on this program's own functions (and on memcpy and strlen in libc),
 * hit with known arguments, recorded by a real session daemon and read back
 * with babeltrace2 (test-probe.sh drives the session).
 *
 *   probe-test run EXPECT      installs, calls, writes what the trace must
 *                              hold, and the in-process checks, to EXPECT
 *   probe-test check EXPECT TEXT
 *                              TAP: the in-process checks, then each expected
 *                              event against the babeltrace2 text
 *
 * EXPECT lines:
 *   C 0|1 DESCRIPTION          an in-process check and its result
 *   D TEXT                     a comment for the test log
 *   E NAME<TAB>PART<TAB>...    the next event NAME holds each PART verbatim
 *   N NAME COUNT               exactly COUNT events NAME
 *   M NAME COUNT PART          exactly COUNT events NAME holding PART
 */
#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "context.h"
#include "fixture.h"
#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"
#include "probe.h"
#include "tap.h"

static FILE *expect;
static struct dp_code_pool *pool;
static enum dp_vec_save vec;

/* ---- expectations ------------------------------------------------------ */

__attribute__((format(printf, 2, 3)))
static bool check(bool ok, const char *fmt, ...)
{
	va_list ap;

	fprintf(expect, "C %d ", ok);
	va_start(ap, fmt);
	vfprintf(expect, fmt, ap);
	va_end(ap);
	fputc('\n', expect);
	return ok;
}

__attribute__((format(printf, 1, 2)))
static void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("D ", expect);
	va_start(ap, fmt);
	vfprintf(expect, fmt, ap);
	va_end(ap);
	fputc('\n', expect);
}

/* One expected event: NAME then parts, NULL-terminated. */
static void event(const char *name, ...)
{
	va_list ap;
	const char *part;

	fprintf(expect, "E %s", name);
	va_start(ap, name);
	while ((part = va_arg(ap, const char *)))
		fprintf(expect, "\t%s", part);
	va_end(ap);
	fputc('\n', expect);
}

/* The backtraces of the first events a and b are the same, min addresses
 * long at least. */
static void same_stack(const char *a, const char *b, unsigned min)
{
	fprintf(expect, "S %s %s %u\n", a, b, min);
}

static void count(const char *name, unsigned n)
{
	fprintf(expect, "N %s %u\n", name, n);
}

static void count_with(const char *name, unsigned n, const char *part)
{
	fprintf(expect, "M %s %u %s\n", name, n, part);
}

/* A formatted part, from a ring of buffers (several per event() call). */
__attribute__((format(printf, 1, 2)))
static const char *f(const char *fmt, ...)
{
	static char ring[64][512];
	static unsigned at;
	char *buf = ring[at++ % 64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(ring[0]), fmt, ap);
	va_end(ap);
	return buf;
}

/* babeltrace2 prints base-16 integers as 0x and upper-case digits. */
static const char *hex(uint64_t v)
{
	return f("0x%" PRIX64, v);
}

/* ---- installing probes -------------------------------------------------- */

struct object {
	struct dp_object *obj;
	uint64_t bias;
	char path[256];
};

struct find {
	uint64_t addr;
	struct object *out;
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find *fd = data;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && fd->addr >= lo && fd->addr < lo + ph->p_memsz) {
			fd->out->bias = info->dlpi_addr;
			snprintf(fd->out->path, sizeof(fd->out->path), "%s",
				 info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe");
			return 1;
		}
	}
	return 0;
}

/* The loaded object holding addr, opened for planning. */
static bool object_of(uint64_t addr, struct object *o)
{
	struct find fd = { addr, o };

	memset(o, 0, sizeof(*o));
	if (!dl_iterate_phdr(find_cb, &fd))
		return false;
	o->obj = dp_object_open(o->path);
	return o->obj != NULL;
}

struct point {
	uint64_t addr;			/* run time */
	struct dpa_probe *probe;
};

/*
 * Plans and installs probes at points of one object: the points that share
 * a jump window become hooks of one trampoline, int3 sites go to the agent's
 * SIGTRAP table.  Returns how many patches use each method in methods[].
 */
static bool install(const struct object *o, const struct point *pts, size_t n,
		    unsigned methods[3])
{
	uint64_t file[DP_PATCH_MAX_POINTS];
	struct dp_patch *plan;
	size_t nplan;
	bool ok = true;

	for (size_t i = 0; i < n; i++)
		file[i] = pts[i].addr - o->bias;
	if (dp_plan_sites(o->obj, file, n, &plan, &nplan))
		return false;
	for (size_t k = 0; k < nplan; k++) {
		struct dp_inproc_site *site = calloc(1, sizeof(*site));
		void *args[DP_PATCH_MAX_POINTS];
		enum dp_reason why;
		int ret;

		methods[plan[k].method]++;
		if (plan[k].method == DP_SITE_REFUSED) {
			fprintf(stderr, "refused %#" PRIx64 ": %s\n", plan[k].points[0],
				dp_reason_str(plan[k].reason));
			ok = false;
			continue;
		}
		for (unsigned j = 0; j < plan[k].npoints; j++)
			args[j] = pts[plan[k].point_ids[j]].probe;
		ret = dp_inproc_prepare(pool, site, &plan[k], o->bias, dp_probe_hit, args, vec,
					&why);
		/* The int3's resume address is registered before it is written. */
		if (!ret && plan[k].method == DP_SITE_INT3)
			ret = dpa_trap_add(site->win.addr, site->tramp.insn_at[0],
					   (struct dpa_probe *const *)args, plan[k].npoints);
		if (!ret)
			ret = dp_inproc_commit(pool, site);
		if (ret) {
			fprintf(stderr, "install %#" PRIx64 ": %s (%s)\n", plan[k].points[0],
				strerror(-ret), dp_reason_str(why));
			ok = false;
			continue;
		}
	}
	free(plan);
	return ok;
}

static struct dpa_probe *probe(uint64_t site, const char *name, unsigned flags,
			       const char *const *specs)
{
	struct dp_ctx ctx[32];
	struct dpa_probe *p;
	struct dp_err err = DP_ERR_INIT;
	size_t n = 0;

	for (; specs && specs[n]; n++) {
		if (dp_ctx_parse(specs[n], NULL, NULL, &ctx[n], &err)) {
			fprintf(stderr, "%s: %s: %s\n", name, specs[n], err.msg);
			return NULL;
		}
	}
	p = dpa_probe_new(site, name, flags, ctx, n, &err);
	if (!p)
		fprintf(stderr, "probe %s: %s (%s)\n", name, dp_err_str(&err), strerror(errno));
	return p;
}

#define SPECS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* ---- value recipes (spec/value.h), built as the daemon builds them ------- */

#define OP(o, a, i) ((struct dp_value_op){ DP_VOP_##o, a, i })
#define OPS(...) ((const struct dp_value_op[]){ __VA_ARGS__ }), \
	sizeof((const struct dp_value_op[]){ __VA_ARGS__ }) / sizeof(struct dp_value_op)

static struct dp_ctx vint(const char *name, unsigned size, bool sgn, bool hexa, uint8_t loc,
			  const struct dp_value_op *ops, size_t nops)
{
	struct dp_ctx c = { .kind = DP_CTX_VALUE };

	snprintf(c.name, sizeof(c.name), "%s", name);
	c.type = (struct dp_field_desc){ .type = DP_FT_INT, .size = (uint8_t)size,
					 .is_signed = sgn, .hex = hexa };
	c.value.loc = loc;
	for (size_t i = 0; i < nops; i++)
		dp_value_push(&c.value, ops[i].op, ops[i].arg, ops[i].imm);
	return c;
}

static struct dp_ctx vtyped(const char *name, uint8_t ftype, unsigned size, uint8_t loc,
			    const struct dp_value_op *ops, size_t nops)
{
	struct dp_ctx c = vint(name, size, false, false, loc, ops, nops);

	c.type.type = ftype;
	if (ftype == DP_FT_STRING)
		c.maxlen = 64;
	return c;
}

static struct dpa_probe *probe_ctx(uint64_t site, const char *name, unsigned flags,
				   const struct dp_ctx *ctx, size_t n)
{
	struct dp_err err = DP_ERR_INIT;
	struct dpa_probe *p = dpa_probe_new(site, name, flags, ctx, n, &err);

	if (!p)
		fprintf(stderr, "probe %s: %s (%s)\n", name, dp_err_str(&err), strerror(errno));
	return p;
}

static uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ---- the scenarios ------------------------------------------------------ */

static uint64_t g_value = 0x1122334455667788ull;
static char g_string[] = "global string";

static struct object self;

/* Integers, strings, registers, offsets, pointers and every error value. */
static void scenario_args(void)
{
	static const char *const specs[] = {
		"reg:rdi", "reg:edx", "reg:rcx", "reg:fs_base", "reg:gs_base",
		"int32:t_i:rdi", "uint16:t_u16:rdi+4", "hex64:t_h:[rdi+8]", "int8:t_neg:rdi+16",
		"string:t_name:*[rdi+24]", "string:s:rsi", "long:a7:[rsp+8]",
		"ulong:a8:[rsp+16]", "int64:inner_v:*[rdi+32]+8", NULL /* g */, NULL /* gs */,
		"int:bad:0x10", "string:badstr:*[rdi+40]", "string:cross:*[rdi+48]",
		"string:trunc:*[rdi+56]:8", "int32:heap:*[rdi+64]", "hex8:h8:rdi+72",
		"int16:nullp:*[rdi+80]", NULL,
	};
	const char *s[sizeof(specs) / sizeof(specs[0])];
	struct fx_inner inner = { 1, 123456789 };
	char stack_str[] = "hello, probe";
	unsigned long fs = 0, gs = 0;
	unsigned methods[3] = { 0 };
	struct dpa_probe_stats st;
	struct fx_thing t;
	struct dpa_probe *p;
	int32_t *heap_int;
	char *pages;
	long r1, r2;
	int e;

	memcpy(s, specs, sizeof(specs));
	s[14] = f("uint64:g:0x%" PRIx64, addr_of(&g_value));
	s[15] = f("string:gs:%#" PRIo64, addr_of(g_string));	/* octal, too */
	pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(pages + 4096, 4096, PROT_NONE);
	memset(pages + 4096 - 10, 'x', 10);	/* no NUL before the unreadable page */
	heap_int = malloc(sizeof(*heap_int));
	*heap_int = 4242;
	t = (struct fx_thing){
		.i = -5, .u16 = 65000, .h = 0xdeadbeefcafeull, .neg = -100,
		.name = strdup("thing-name"), .inner = &inner, .unreadable = pages + 4096,
		.runs_out = pages + 4096 - 10, .longstr = "abcdefghijklmnop",
		.heap_int = heap_int, .h8 = 0xab, .null_ptr = NULL,
	};
	syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
	syscall(SYS_arch_prctl, ARCH_GET_GS, &gs);

	p = probe(addr_of(fx_args), "args", DPA_PROBE_AT_ENTRY, s);
	if (!check(p && install(&self, &(struct point){ addr_of(fx_args), p }, 1, methods),
		   "args: probe at fx_args installed"))
		return;
	check(methods[DP_SITE_JUMP] == 1, "args: fx_args takes a jump");

	errno = 4242;
	r1 = fx_args(&t, stack_str, -7, 0xfedcba9876543210ull, 5, 6, -77777777777l, ~0ul);
	e = errno;
	check(e == 4242, "args: errno is preserved across a hit that read bad addresses (%d)", e);
	r2 = fx_args(&t, "second", 0, 1, 2, 3, 4, 5);
	check(r1 == (long)(-5 + 'h' - 7 + (long)0xfedcba9876543210ull + 5 + 6 - 77777777777l - 1) &&
	      r2 == -5 + 's' + 0 + 1 + 2 + 3 + 4 + 5, "args: fx_args returns what it returns unprobed");
	dpa_probe_stats(p, &st);
	check(st.hits == 2 && st.recursions == 0, "args: 2 hits, no recursion (%" PRIu64 ", %"
	      PRIu64 ")", st.hits, st.recursions);

	event("dynprobe:args", f("ip = %" PRIu64 " }", addr_of(fx_args)),
	      f("{ rdi = %s, edx = 0xFFFFFFF9, rcx = 0xFEDCBA9876543210, fs_base = %s, gs_base = %s, ",
		hex(addr_of(&t)), hex(fs), hex(gs)),
	      "t_i = -5, _t_i_error = 0, t_u16 = 65000, _t_u16_error = 0, t_h = 0xDEADBEEFCAFE, "
	      "_t_h_error = 0, t_neg = -100, _t_neg_error = 0, t_name = \"thing-name\", "
	      "_t_name_error = 0, s = \"hello, probe\", _s_error = 0, a7 = -77777777777, "
	      "_a7_error = 0, a8 = 18446744073709551615, _a8_error = 0, inner_v = 123456789, "
	      "_inner_v_error = 0, g = 1234605616436508552, _g_error = 0, "
	      "gs = \"global string\", _gs_error = 0, bad = 0, _bad_error = 14, "
	      "badstr = \"\", _badstr_error = 14, cross = \"\", _cross_error = 14, "
	      "trunc = \"abcdefgh\", _trunc_error = 7, heap = 4242, _heap_error = 0, "
	      "h8 = 0xAB, _h8_error = 0, nullp = 0, _nullp_error = 14 }",
	      NULL);
	event("dynprobe:args", "s = \"second\", _s_error = 0, a7 = 4, _a7_error = 0, a8 = 5,",
	      NULL);
	count("dynprobe:args", 2);
}

/*
 * A probe of one reg: context alone (the hit path computes its value in
 * line): the register's value as loaded, or its view (ah: shifted and
 * masked), and every register intact after the hit.
 */
static void scenario_one_reg(const char *name, uint64_t site, void (*fn)(void), const char *spec,
			     const char *want)
{
	const char *specs[] = { spec, NULL };
	unsigned methods[3] = { 0 };
	struct dpa_probe_stats st;
	struct dpa_probe *p;
	bool intact = true;

	p = probe(site, name, 0, specs);
	if (!check(p && install(&self, &(struct point){ site, p }, 1, methods),
		   "%s: probe installed", name))
		return;
	check(methods[DP_SITE_JUMP] == 1, "%s: the site takes a jump", name);
	fn();
	for (unsigned r = 0; r < 16; r++)
		intact &= fx_regs_after[r] == (r == 4 ? fx_regs_rsp : fx_regs_value[r]);
	check(intact, "%s: every register is intact after the hit", name);
	dpa_probe_stats(p, &st);
	check(st.hits == 1 && st.recorded == 1, "%s: one hit, recorded (%" PRIu64 ", %" PRIu64 ")",
	      name, st.hits, st.recorded);
	event(f("dynprobe:%s", name), want, NULL);
	count(f("dynprobe:%s", name), 1);
}

/*
 * A probe whose fields each come from one register (reg: contexts of every
 * width, recipes of one register with an offset, a shift, a sign or zero
 * extension: SDT arguments): the hit path computes them in line, and they
 * must read as the general evaluation reads them (scenario_regs).
 */
static void scenario_fast(void)
{
	static const char *const specs[] = { "reg:eax", "reg:ah", "reg:r9w", "reg:eflags" };
	const size_t nspecs = sizeof(specs) / sizeof(specs[0]);
	struct dp_ctx ctx[sizeof(specs) / sizeof(specs[0]) + 4];
	uint64_t site = fx_regs_fast_site;
	unsigned methods[3] = { 0 };
	struct dpa_probe_stats st;
	struct dpa_probe *p;

	for (size_t i = 0; i < nspecs; i++)
		dp_ctx_parse(specs[i], NULL, NULL, &ctx[i], NULL);
	ctx[nspecs] = vint("v_ah", 1, false, true, DP_VALUE_LOC_VALUE,
			   OPS(OP(REG, DP_REG_RAX, 0), OP(SHR, 8, 0)));
	/* al (0x80) sign-extended into a signed 64-bit field: -128 */
	ctx[nspecs + 1] = vint("v_sal", 8, true, false, DP_VALUE_LOC_VALUE,
			       OPS(OP(REG, DP_REG_RAX, 0), OP(SEXT, 1, 0)));
	ctx[nspecs + 2] = vint("v_zax", 8, false, true, DP_VALUE_LOC_VALUE,
			       OPS(OP(REG, DP_REG_RAX, 0), OP(ZEXT, 2, 0)));
	ctx[nspecs + 3] = vint("v_off", 8, false, true, DP_VALUE_LOC_VALUE,
			       OPS(OP(REG, DP_REG_RDI, -16)));
	p = probe_ctx(site, "fast", 0, ctx, nspecs + 4);
	if (!check(p && install(&self, &(struct point){ site, p }, 1, methods),
		   "fast: probe installed"))
		return;
	check(methods[DP_SITE_JUMP] == 1, "fast: the site takes a jump");
	fx_regs_fast();
	dpa_probe_stats(p, &st);
	check(st.hits == 1 && st.recorded == 1, "fast: one hit, recorded (%" PRIu64 ", %" PRIu64 ")",
	      st.hits, st.recorded);
	event("dynprobe:fast",
	      f("{ eax = 0x11111180, ah = 0x11, r9w = 0x9999, eflags = 0x246, v_ah = 0x11, "
		"v_sal = -128, v_zax = 0x1180, v_off = %s }",
		hex(fx_regs_value[DP_REG_RDI] - 16)),
	      NULL);
	count("dynprobe:fast", 1);
}

/* Every register, at a jump site and at an int3 site. */
static void scenario_regs(const char *name, uint64_t site, void (*fn)(void), unsigned want)
{
	unsigned methods[3] = { 0 };
	struct dpa_probe *p;
	char parts[1024];
	size_t at = 0;
	bool intact = true;
	static const char *const names[18] = {
		"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10",
		"r11", "r12", "r13", "r14", "r15", "rip", "rflags",
	};
	static const unsigned order[16] = { 0, 3, 1, 2, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15 };

	static const char *const specs[] = { "regs", "reg:eax", "reg:ah", "reg:al", "reg:r9w",
					     "reg:sil", "reg:r10d", "reg:r11l", "reg:eflags",
					     "reg:pc" };
	const size_t nspecs = sizeof(specs) / sizeof(specs[0]);
	struct dp_ctx ctx[sizeof(specs) / sizeof(specs[0]) + 4];

	/* Value recipes next to them: xmm registers from the trampoline's save
	 * area (jump) or the signal's ucontext (int3). */
	for (size_t i = 0; i < nspecs; i++)
		dp_ctx_parse(specs[i], NULL, NULL, &ctx[i], NULL);
	ctx[nspecs] = vint("x0", 8, false, true, DP_VALUE_LOC_VALUE,
			   OPS(OP(REG, DP_VALUE_XMM0, 0)));
	ctx[nspecs + 1] = vint("x15", 8, false, true, DP_VALUE_LOC_VALUE,
			       OPS(OP(REG, DP_VALUE_XMM0 + 15, 0)));
	ctx[nspecs + 2] = vint("v_ah", 1, false, true, DP_VALUE_LOC_VALUE,
			       OPS(OP(REG, DP_REG_RAX, 0), OP(SHR, 8, 0)));
	ctx[nspecs + 3] = vint("v_pc", 8, false, true, DP_VALUE_LOC_VALUE,
			       OPS(OP(REG, DP_CTX_REG_RIP, 0)));
	p = probe_ctx(site, name, 0, ctx, nspecs + 4);
	if (!check(p && install(&self, &(struct point){ site, p }, 1, methods),
		   "%s: probe installed", name))
		return;
	check(methods[want] == 1, "%s: the site takes %s", name,
	      want == DP_SITE_JUMP ? "a jump" : "an int3");
	fn();
	for (unsigned r = 0; r < 16; r++) {
		uint64_t v = r == 4 ? fx_regs_rsp : fx_regs_value[r];

		intact &= fx_regs_after[r] == v;
	}
	intact &= (fx_regs_after[17] & 0xfd5) == (FX_REGS_FLAGS & 0xfd5);
	check(intact, "%s: every register and flag is intact after the hit", name);

	for (unsigned i = 0; i < 18; i++) {
		uint64_t v = i < 16 ? (order[i] == 4 ? fx_regs_rsp : fx_regs_value[order[i]])
			     : i == 16 ? site : FX_REGS_FLAGS;

		at += snprintf(parts + at, sizeof(parts) - at, "%s%s = %s", i ? ", " : "{ ",
			       names[i], hex(v));
	}
	event(f("dynprobe:%s", name), f("ip = %" PRIu64 " }", site), parts,
	      f("eax = 0x11111180, ah = 0x11, al = 0x80, r9w = 0x9999, sil = 0x66, "
		"r10d = 0xAAAAAAAA, r11l = 0xBB, eflags = 0x246, pc = %s, x0 = %s, _x0_error = 0, "
		"x15 = %s, _x15_error = 0, v_ah = 0x11, v_pc = %s }", hex(site),
		hex(fx_regs_value[DP_REG_R8]), hex(fx_regs_value[DP_REG_R15]), hex(site)),
	      NULL);
	count(f("dynprobe:%s", name), 1);
}

/*
 * Value recipes at a function's entry: every op, every result kind and
 * type, a failed read, and xmm registers saved by the trampoline.
 */
static void scenario_values(void)
{
	enum { RDI = DP_REG_RDI, X0 = DP_VALUE_XMM0, X1 = DP_VALUE_XMM0 + 1 };
	const uint8_t A = DP_VALUE_LOC_ADDR, V = DP_VALUE_LOC_VALUE, P = DP_VALUE_LOC_PIECES;
	struct fx_inner inner = { 1, -987654321 };
	unsigned methods[3] = { 0 };
	struct fx_thing t = {
		.i = -5, .u16 = 65000, .h = 0xdeadbeefcafeull, .neg = -100, .name = "value-name",
		.inner = &inner, .h8 = 0xab,
	};
	struct dp_ctx ctx[] = {
		vint("p", 8, false, true, V, OPS(OP(REG, RDI, 0))),
		vint("i", 4, true, false, A, OPS(OP(REG, RDI, 0))),
		vint("u16", 2, false, false, A, OPS(OP(REG, RDI, 0), OP(ADDC, 0, 4))),
		vint("h", 8, false, true, A, OPS(OP(REG, RDI, 0), OP(CONST, 0, 1), OP(MULC, 0, 8),
						  OP(ADD, 0, 0))),
		vint("hi", 4, false, true, V, OPS(OP(REG, RDI, 8), OP(DEREF, 8, 0), OP(SHR, 32, 0))),
		vint("neg", 1, true, false, A, OPS(OP(REG, RDI, 16))),
		vint("inner_v", 8, true, false, A, OPS(OP(REG, RDI, 32), OP(DEREF, 8, 0),
						      OP(ADDC, 0, 8))),
		vint("b", 1, false, false, V, OPS(OP(REG, RDI, 72), OP(DEREF, 1, 0))),
		vint("pc", 4, false, true, P, OPS(OP(REG, RDI, 4), OP(DEREF, 2, 0),
						   OP(PIECE, 2, 0), OP(CONST, 0, 0x7),
						   OP(PIECE, 1, 2))),
		vint("k", 2, true, false, V, OPS(OP(CONST, 0, -2))),
		vint("neg64", 8, true, false, V, OPS(OP(REG, RDI, 16), OP(DEREF, 1, 0),
						     OP(SEXT, 1, 0))),
		vint("u16z", 8, false, false, V, OPS(OP(CONST, 0, -1), OP(ZEXT, 2, 0))),
		/* bits 4..8 of 0xabcd: 0x1c; bits 4..7 of 0xf0, signed: -1 */
		vint("ubf", 4, false, false, V, OPS(OP(CONST, 0, 0xabcd), OP(SHR, 4, 0),
						     OP(BITS, 5, 0))),
		vint("sbf", 4, true, false, V, OPS(OP(CONST, 0, 0xf0), OP(SHR, 4, 0),
						    OP(BITS, 4, 1))),
		vint("bad", 4, false, false, A, OPS(OP(CONST, 0, 0x10))),
		vtyped("name", DP_FT_STRING, 0, V, OPS(OP(REG, RDI, 24), OP(DEREF, 8, 0))),
		vtyped("d", DP_FT_DOUBLE, 8, V, OPS(OP(REG, X0, 0))),
		vtyped("f", DP_FT_DOUBLE, 4, V, OPS(OP(REG, X1, 0))),
	};
	const double d_in = 2.5;
	const float f_in = -1.25f;
	struct dpa_probe *p;
	double r;

	ctx[7].value.flags = DP_VALUE_BOOL;
	p = probe_ctx(addr_of(fx_values), "values", DPA_PROBE_AT_ENTRY, ctx,
		      sizeof(ctx) / sizeof(ctx[0]));
	if (!check(p && install(&self, &(struct point){ addr_of(fx_values), p }, 1, methods),
		   "values: probe at fx_values installed"))
		return;
	r = fx_values(&t, d_in, f_in);
	check(r == t.i + d_in + f_in, "values: fx_values returns what it returns unprobed");
	event("dynprobe:values",
	      f("{ p = %s, i = %d, _i_error = 0, u16 = %u, _u16_error = 0, h = %s, _h_error = 0, "
		"hi = %s, _hi_error = 0, neg = %d, _neg_error = 0, inner_v = %ld, "
		"_inner_v_error = 0, b = 1, _b_error = 0, pc = %s, _pc_error = 0, k = -2, "
		"neg64 = %d, _neg64_error = 0, u16z = 65535, ubf = 28, sbf = -1, bad = 0, _bad_error = 14, name = \"%s\", _name_error = 0, ",
		hex(addr_of(&t)), t.i, t.u16, hex(t.h), hex(t.h >> 32), t.neg, inner.v,
		hex(t.u16 | 7u << 16), t.neg, t.name),
	      /* babeltrace2 prints doubles as %g does */
	      f("d = %g, _d_error = 0, f = %g, _f_error = 0 }", d_in, (double)f_in), NULL);
	count("dynprobe:values", 1);
}

/* Locals at [rbp-N], a return site, and frame-pointer backtraces. */
static void scenario_frames(void)
{
	unsigned methods[3] = { 0 }, m2[3] = { 0 }, m3[3] = { 0 };
	struct dpa_probe *locals, *cfi, *ret, *entry_fp, *entry_cfi, *nofp_cfi, *nofp_fp;
	struct point pts[3];
	bool ok;
	long r;

	locals = probe(fx_locals_site, "locals", 0,
		       SPECS("int32:a:[rbp-0x14]", "int64:b:[rbp-0x10]", "backtrace:5:fp"));
	cfi = probe(fx_locals_site2, "locals_cfi", 0, SPECS("backtrace:cfi:8"));
	ret = probe(fx_locals_ret, "locals_ret", 0, SPECS("retval"));
	pts[0] = (struct point){ fx_locals_site, locals };
	pts[1] = (struct point){ fx_locals_site2, cfi };
	pts[2] = (struct point){ fx_locals_ret, ret };
	ok = locals && cfi && ret && install(&self, pts, 3, methods);
	check(ok, "frames: probes in fx_locals installed (%u jump, %u int3)", methods[DP_SITE_JUMP],
	      methods[DP_SITE_INT3]);

	entry_fp = probe(addr_of(fp_level3), "entry_fp", DPA_PROBE_AT_ENTRY,
			 SPECS("backtrace:fp:4"));
	entry_cfi = probe(addr_of(fp_level3), "entry_cfi", DPA_PROBE_AT_ENTRY,
			  SPECS("backtrace:cfi:6"));
	pts[0] = (struct point){ addr_of(fp_level3), entry_fp };
	pts[1] = (struct point){ addr_of(fp_level3), entry_cfi };
	check(entry_fp && entry_cfi && install(&self, pts, 2, m2),
	      "frames: two probes at the entry of fp_level3 installed");

	nofp_cfi = probe(addr_of(nf_level3), "nofp_cfi", DPA_PROBE_AT_ENTRY,
			 SPECS("backtrace:cfi:4"));
	nofp_fp = probe(addr_of(nf_level3), "nofp_fp", DPA_PROBE_AT_ENTRY, SPECS("backtrace:fp"));
	pts[0] = (struct point){ addr_of(nf_level3), nofp_cfi };
	pts[1] = (struct point){ addr_of(nf_level3), nofp_fp };
	check(nofp_cfi && nofp_fp && install(&self, pts, 2, m3),
	      "frames: two probes at the entry of nf_level3 (no frame pointers) installed");

	r = fp_level1(40);
	check(r == 42 + 100 + 3, "frames: fp_level1 returns what it returns unprobed (%ld)", r);
	r = nf_level1(1);
	check(r == 3 * 3 + 1 + 2, "frames: nf_level1 returns what it returns unprobed (%ld)", r);

	/* fx_locals <- fp_level3 <- fp_level2 <- fp_level1 <- here. */
	event("dynprobe:locals", f("ip = %" PRIu64 " }", fx_locals_site),
	      f("{ a = 42, _a_error = 0, b = 100, _b_error = 0, _backtrace_length = 5, "
		"backtrace = [ [0] = %s, [1] = %s, [2] = %s, [3] = %s, [4] = %s ] }",
		hex(fx_locals_site), hex(fx_locals_ra), hex(addr_of(fp_ra[3])),
		hex(addr_of(fp_ra[2])), hex(addr_of(fp_ra[1]))),
	      NULL);
	/* The CFI walker goes on past here, as far as unwind tables go. */
	event("dynprobe:locals_cfi",
	      f("backtrace = [ [0] = %s, [1] = %s, [2] = %s, [3] = %s, [4] = %s, ",
		hex(fx_locals_site2), hex(fx_locals_ra), hex(addr_of(fp_ra[3])),
		hex(addr_of(fp_ra[2])), hex(addr_of(fp_ra[1]))),
	      NULL);
	event("dynprobe:locals_ret", "{ ret = 142 }", NULL);
	event("dynprobe:entry_fp",
	      f("_backtrace_length = 4, backtrace = [ [0] = %s, [1] = %s, [2] = %s, [3] = %s ] }",
		hex(addr_of(fp_level3)), hex(addr_of(fp_ra[3])), hex(addr_of(fp_ra[2])),
		hex(addr_of(fp_ra[1]))),
	      NULL);
	event("dynprobe:entry_cfi",
	      f("_backtrace_length = 6, backtrace = [ [0] = %s, [1] = %s, [2] = %s, [3] = %s, ",
		hex(addr_of(fp_level3)), hex(addr_of(fp_ra[3])), hex(addr_of(fp_ra[2])),
		hex(addr_of(fp_ra[1]))),
	      NULL);
	event("dynprobe:nofp_cfi",
	      f("_backtrace_length = 4, backtrace = [ [0] = %s, [1] = %s, [2] = %s, [3] = %s ] }",
		hex(addr_of(nf_level3)), hex(addr_of(nf_ra[3])), hex(addr_of(nf_ra[2])),
		hex(addr_of(nf_ra[1]))),
	      NULL);
	/* Without frame pointers the rbp chain is garbage: only the return
	 * address at [rsp] is sure, and the walk must stop, not crash. */
	event("dynprobe:nofp_fp",
	      f("backtrace = [ [0] = %s, [1] = %s", hex(addr_of(nf_level3)),
		hex(addr_of(nf_ra[3]))),
	      NULL);
	for (const char *const *n = (const char *const[]){ "locals", "locals_cfi", "locals_ret",
			"entry_fp", "entry_cfi", "nofp_cfi", "nofp_fp", NULL }; *n; n++)
		count(f("dynprobe:%s", *n), 1);
}

/* Stacks through code without frame pointers, a signal frame and a PLT
 * entry: the CFI tables' walk against libunwind's, on the same stacks. */
static void scenario_stacks(void)
{
	static const struct {
		const char *name;
		const void *site;
		unsigned min;	/* addresses at least: down to main and libc's start */
	} sites[] = {
		{ "nofp", (const void *)nf_leaf, 13 },
		{ "signal", (const void *)nf_on_signal, 8 },
		{ "plt", (const void *)nf_plt_like, 5 },
		{ "plt_pushed", (const void *)nf_plt_like_pushed, 5 },
	};
	long r;

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		unsigned methods[3] = { 0 };
		uint64_t site = addr_of(sites[i].site);
		const char *cfi = f("stack_%s_cfi", sites[i].name);
		const char *unw = f("stack_%s_libunwind", sites[i].name);
		struct dpa_probe *a = probe(site, cfi, 0, SPECS("backtrace:cfi:32"));
		struct dpa_probe *b = probe(site, unw, 0, SPECS("backtrace:libunwind:32"));
		struct point pts[2] = { { site, a }, { site, b } };

		check(a && b && install(&self, pts, 2, methods),
		      "stacks: two probes at %s installed (%u jump, %u int3)", sites[i].name,
		      methods[DP_SITE_JUMP], methods[DP_SITE_INT3]);
		same_stack(f("dynprobe:%s", cfi), f("dynprobe:%s", unw), sites[i].min);
		count(f("dynprobe:%s", cfi), 2);
	}
	/* Twice: the second walks go through the thread's cache of rows. */
	for (int round = 0; round < 2; round++) {
		r = nf_deep(8, 1);
		check(r == 1 + 1 + 8, "stacks: nf_deep returns what it returns unprobed (%ld)", r);
		r = nf_signal_main(2);
		check(r == 2 + (round + 1) * SIGUSR2, "stacks: the signal handler ran, once a "
		      "round (%ld)", r);
		nf_plt_like();
	}
}

/* An int3 site: the entry of fx_int3, whose entry+2 is a branch target. */
static void scenario_int3(void)
{
	unsigned methods[3] = { 0 };
	struct dpa_probe_stats st;
	struct dpa_trap_stats ts0, ts1;
	struct dpa_probe *p;
	int r;

	p = probe(addr_of(fx_int3), "int3", DPA_PROBE_AT_ENTRY, SPECS("reg:edi", "backtrace:fp:2"));
	if (!check(p && install(&self, &(struct point){ addr_of(fx_int3), p }, 1, methods),
		   "int3: probe at fx_int3 installed"))
		return;
	check(methods[DP_SITE_INT3] == 1, "int3: fx_int3's entry takes an int3");
	dpa_trap_stats(&ts0);
	r = fx_int3(10);
	r += fx_int3(3);
	dpa_trap_stats(&ts1);
	dpa_probe_stats(p, &st);
	check(r == 55 + 6, "int3: fx_int3 computes what it computes unprobed (%d)", r);
	check(st.hits == 2 && ts1.ours - ts0.ours == 2, "int3: 2 traps handled as ours");
	event("dynprobe:int3", f("ip = %" PRIu64 " }", addr_of(fx_int3)),
	      f("{ edi = 0xA, _backtrace_length = 2, backtrace = [ [0] = %s, [1] = ",
		hex(addr_of(fx_int3))),
	      NULL);
	event("dynprobe:int3", "{ edi = 0x3, ", NULL);
	count("dynprobe:int3", 2);
}

/* No payload; and an event no session enabled. */
static void scenario_plain(void)
{
	unsigned methods[3] = { 0 };
	struct dpa_probe *none, *off;
	struct dpa_probe_stats st;
	long r = 0;

	none = probe(addr_of(fx_noctx), "noctx", 0, NULL);
	off = probe(addr_of(fx_disabled), "disabled", 0,
		    SPECS("int:bad:0x10", "string:s:*[rdi]", "backtrace:cfi"));
	check(none && install(&self, &(struct point){ addr_of(fx_noctx), none }, 1, methods) &&
	      off && install(&self, &(struct point){ addr_of(fx_disabled), off }, 1, methods),
	      "plain: probes installed");
	for (int i = 0; i < 3; i++)
		r += fx_noctx(i) + fx_disabled(i);
	check(r == (0 + 7 + 14 + 9) + (0 + 11 + 22 + 15), "plain: functions unchanged");
	dpa_probe_stats(off, &st);
	check(st.hits == 3 && st.recorded == 0 && st.mem_errors == 0,
	      "plain: a disabled event is counted and nothing is computed (%" PRIu64 " hits, %"
	      PRIu64 " recorded, %" PRIu64 " errors)", st.hits, st.recorded, st.mem_errors);
	event("dynprobe:noctx", f("ip = %" PRIu64 " }", addr_of(fx_noctx)), NULL);
	count("dynprobe:noctx", 3);
	count("dynprobe:disabled", 0);
}

/*
 * The first point of fn, from its entry on, that takes a jump.  An int3 in
 * code lttng-ust's own threads run would kill the process: they block every
 * signal, and the kernel ends a process whose thread traps with SIGTRAP
 * blocked.  glibc's memcpy needs this: memmove branches to memcpy+3.
 */
static uint64_t jump_point(const struct object *o, uint64_t fn)
{
	const struct dp_function *f = dp_object_function_at(o->obj, fn - o->bias);

	for (uint32_t i = 0; f && i < f->ninsns && i < 8; i++) {
		uint64_t at = f->start + f->insn_off[i];
		struct dp_patch plan;

		if (at < fn - o->bias)
			continue;
		if (!dp_plan_site(o->obj, at, &plan) && plan.method == DP_SITE_JUMP)
			return at + o->bias;
	}
	return 0;
}

/*
 * memcpy and strlen in libc: the hit path itself (lttng-ust, our string
 * reads) calls them.  A probe there must neither recurse nor deadlock.
 */
static void *(*volatile memcpy_fn)(void *, const void *, size_t) = memcpy;
static size_t (*volatile strlen_fn)(const char *) = strlen;

static void scenario_libc(void)
{
	static char src[8192] = "memcpy-probe-source";
	static char dst[8192];
	unsigned mm[3] = { 0 }, ms[3] = { 0 };
	struct dpa_probe_stats st;
	struct object libc, libc2;
	struct dpa_probe *pm, *ps;
	uint64_t m = addr_of(memcpy_fn), s = addr_of(strlen_fn);
	size_t total = 0;
	bool ok;

	if (!check(object_of(m, &libc) && object_of(s, &libc2), "libc: memcpy and strlen found"))
		return;
	m = jump_point(&libc, m);
	s = jump_point(&libc2, s);
	diag("memcpy probed at +%#" PRIx64 ", strlen at +%#" PRIx64,
		 m - addr_of(memcpy_fn), s - addr_of(strlen_fn));
	/* rdi, rsi and rdx are still the arguments at memcpy+3 (mov rax, rdi). */
	pm = probe(m, "memcpy", 0, SPECS("reg:rdx", "string:src:rsi:24"));
	ps = probe(s, "strlen", 0, SPECS("string:s:rdi:64"));
	ok = m && s && pm && ps && install(&libc, &(struct point){ m, pm }, 1, mm) &&
	     install(&libc2, &(struct point){ s, ps }, 1, ms);
	if (!check(ok && mm[DP_SITE_JUMP] && ms[DP_SITE_JUMP],
		   "libc: probes on memcpy and strlen installed, both jumps"))
		return;
	for (int i = 0; i < 3; i++) {
		memcpy_fn(dst, src, 4660);
		total += strlen_fn("strlen-probe-marker");
	}
	dpa_probe_stats(pm, &st);
	check(!memcmp(dst, src, 4660) && total == 3 * 19, "libc: memcpy and strlen still work");
	check(st.hits >= 3 && st.recursions > 0,
	      "libc: memcpy reached from inside the hit path is skipped (%" PRIu64 " hits, %"
	      PRIu64 " skipped)", st.hits, st.recursions);
	/* The session's filters pass the test's own calls only: the others
	 * (lttng-ust's threads) are hits, not recorded events. */
	check(st.recorded == 3, "libc: memcpy's recorded count is the 3 events its filter "
	      "passed (%" PRIu64 ")", st.recorded);
	dpa_probe_stats(ps, &st);
	check(st.hits >= 3 && st.recorded == 3, "libc: strlen's recorded count is the 3 events its "
	      "filter passed (%" PRIu64 " hits, %" PRIu64 " recorded)", st.hits, st.recorded);
	event("dynprobe:memcpy", "{ rdx = 0x1234, src = \"memcpy-probe-source\", _src_error = 0 }",
	      NULL);
	count("dynprobe:memcpy", 3);
	event("dynprobe:strlen", "{ s = \"strlen-probe-marker\", _s_error = 0 }", NULL);
	count("dynprobe:strlen", 3);
}

/*
 * Threads lttng-ust and the agent never saw: each sets itself up on its
 * first hit (lttng-ust's per-thread state, the scratch mapping); the second
 * wave reuses the scratch areas the first one left at exit.
 */
#define THREADS 4
#define THREAD_CALLS 500

static long (*volatile thread_fn)(long, const char *) = fx_thread;

static void *thread_main(void *arg)
{
	char s[32];
	long id = (long)(intptr_t)arg;

	snprintf(s, sizeof(s), "thread-%ld", id);
	for (int i = 0; i < THREAD_CALLS; i++)
		thread_fn(id, s);
	return NULL;
}

static void scenario_threads(void)
{
	unsigned methods[3] = { 0 };
	struct dpa_probe *p;
	pthread_t th[THREADS];
	bool ok;

	p = probe(addr_of(fx_thread), "thread", DPA_PROBE_AT_ENTRY,
		  SPECS("reg:rdi", "string:s:rsi", "backtrace:2:fp"));
	ok = p && install(&self, &(struct point){ addr_of(fx_thread), p }, 1, methods);
	if (!check(ok, "threads: probe installed"))
		return;
	for (int wave = 0; wave < 2; wave++) {
		for (long i = 0; i < THREADS; i++)
			pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)(wave * THREADS + i));
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
	}
	count("dynprobe:thread", 2 * THREADS * THREAD_CALLS);
	for (int i = 0; i < 2 * THREADS; i++)
		count_with("dynprobe:thread", THREAD_CALLS,
			   f("{ rdi = 0x%X, s = \"thread-%d\", _s_error = 0, _backtrace_length = 2, ",
			     i, i));
}

/*
 * A forked child records its own events, and its memory: the heap value
 * differs from the parent's, and heap memory is read through the kernel by
 * pid (a stale pid would read the parent's).
 */
static int32_t *forked_heap;

static void scenario_fork(void)
{
	unsigned methods[3] = { 0 };
	struct dpa_probe *p;
	int status = -1;
	pid_t pid;

	forked_heap = malloc(sizeof(*forked_heap));
	*forked_heap = 1;
	p = probe(addr_of(fx_forked), "forked", DPA_PROBE_AT_ENTRY,
		  SPECS("reg:rdi", f("int32:h:*%#" PRIx64, addr_of(&forked_heap))));
	if (!check(p && install(&self, &(struct point){ addr_of(fx_forked), p }, 1, methods),
		   "fork: probe installed"))
		return;
	fflush(expect);
	pid = tap_fork();
	if (pid == 0) {
		*forked_heap = 999;
		_exit(fx_forked(7) == 92 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "fork: the child ran the probed function");
	event("dynprobe:forked", "{ rdi = 0x7, h = 999, _h_error = 0 }", NULL);
	count("dynprobe:forked", 1);
}

static int run(const char *path)
{
	expect = fopen(path, "w");
	if (!expect)
		return 2;
	setvbuf(expect, NULL, _IOLBF, 0);
	pool = dp_code_pool_new();
	vec = dp_vec_save_detect();
	if (!check(object_of(addr_of(fx_args), &self) && pool, "this program opened for planning"))
		return 1;
	scenario_args();
	scenario_regs("regs_jump", fx_regs_jump_site, fx_regs_jump, DP_SITE_JUMP);
	scenario_regs("regs_int3", fx_regs_int3_site, fx_regs_int3, DP_SITE_INT3);
	scenario_one_reg("one_ah", fx_regs_one_ah_site, fx_regs_one_ah, "reg:ah", "{ ah = 0x11 }");
	scenario_one_reg("one_rdi", fx_regs_one_rdi_site, fx_regs_one_rdi, "reg:rdi",
			 f("{ rdi = %s }", hex(fx_regs_value[DP_REG_RDI])));
	scenario_fast();
	scenario_values();
	scenario_frames();
	scenario_stacks();
	scenario_int3();
	scenario_plain();
	scenario_threads();
	scenario_fork();
	scenario_libc();
	fclose(expect);
	/* Exits with every probe still installed (memcpy's included), as a
	 * traced program does. */
	return 0;
}

/* ---- checking ----------------------------------------------------------- */

struct line {
	char *name, *text;
	bool used;
};

static int check_trace(const char *expect_path, const char *text_path)
{
	FILE *ef = fopen(expect_path, "r"), *tf = fopen(text_path, "r");
	struct line *lines = NULL;
	size_t nlines = 0, cap = 0;
	char *buf = NULL;
	size_t bufcap = 0;
	ssize_t len;

	if (!tap_ok(ef && tf, "expectations and trace text readable"))
		return tap_done();
	while ((len = getline(&buf, &bufcap, tf)) > 0) {
		char *sep = strstr(buf, ": {");

		if (buf[len - 1] == '\n')
			buf[len - 1] = 0;
		if (!sep)
			continue;
		if (nlines == cap) {
			cap = cap ? 2 * cap : 256;
			lines = realloc(lines, cap * sizeof(*lines));
		}
		lines[nlines].text = strdup(buf);
		lines[nlines].name = strndup(buf, sep - buf);
		lines[nlines].used = false;
		nlines++;
	}
	while ((len = getline(&buf, &bufcap, ef)) > 0) {
		if (buf[len - 1] == '\n')
			buf[len - 1] = 0;
		if (buf[0] == 'C') {
			tap_ok(buf[2] == '1', "%s", buf + 4);
		} else if (buf[0] == 'D') {
			tap_diag("%s", buf + 2);
		} else if (buf[0] == 'N') {
			char name[256];
			unsigned want, got = 0;

			if (sscanf(buf + 2, "%255s %u", name, &want) != 2)
				continue;
			for (size_t i = 0; i < nlines; i++)
				got += !strcmp(lines[i].name, name);
			tap_ok(got == want, "%u events %s (%u)", want, name, got);
		} else if (buf[0] == 'M') {
			char name[256];
			unsigned want, got = 0;
			int at = 0;

			if (sscanf(buf + 2, "%255s %u %n", name, &want, &at) != 2 || !at)
				continue;
			for (size_t i = 0; i < nlines; i++)
				got += !strcmp(lines[i].name, name) && strstr(lines[i].text, buf + 2 + at);
			tap_ok(got == want, "%u events %s with %s (%u)", want, name, buf + 2 + at, got);
		} else if (buf[0] == 'S') {
			/* Each event of a against the event of b of the same
			 * rank: the same hits, walked by two walkers. */
			char a[256], b[256];
			unsigned min, pairs = 0, bad = 0;
			size_t ia = 0, ib = 0;

			if (sscanf(buf + 2, "%255s %255s %u", a, b, &min) != 3)
				continue;
			for (;;) {
				const char *sa = NULL, *sb = NULL;
				unsigned la = 0;

				for (; ia < nlines && !sa; ia++)
					if (!strcmp(lines[ia].name, a))
						sa = strstr(lines[ia].text, "_backtrace_length = ");
				for (; ib < nlines && !sb; ib++)
					if (!strcmp(lines[ib].name, b))
						sb = strstr(lines[ib].text, "_backtrace_length = ");
				if (!sa && !sb)
					break;
				if (sa)
					sscanf(sa, "_backtrace_length = %u", &la);
				pairs++;
				if (sa && sb && la >= min && !strcmp(sa, sb))
					continue;
				if (bad++ < 2) {
					tap_diag("%s: %s", a, sa ? sa : "(no event)");
					tap_diag("%s: %s", b, sb ? sb : "(no event)");
				}
			}
			tap_ok(pairs && !bad, "%s and %s: the same stack in each of %u hits (%u differ)",
			       a, b, pairs, bad);
		} else if (buf[0] == 'E') {
			char *name = buf + 2, *parts = strchr(name, '\t'), *part, *save;
			struct line *l = NULL;
			bool ok = true;

			if (parts)
				*parts++ = 0;
			for (size_t i = 0; i < nlines && !l; i++)
				if (!lines[i].used && !strcmp(lines[i].name, name))
					l = &lines[i];
			if (!tap_ok(l != NULL, "an event %s to check", name))
				continue;
			l->used = true;
			for (part = strtok_r(parts, "\t", &save); part; part = strtok_r(NULL, "\t", &save)) {
				if (!strstr(l->text, part)) {
					tap_diag("missing: %s", part);
					ok = false;
				}
			}
			if (!tap_ok(ok, "%s holds the expected fields", name))
				tap_diag("event: %s", l->text);
		}
	}
	return tap_done();
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "run"))
		return run(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "check"))
		return check_trace(argv[2], argv[3]);
	fprintf(stderr, "usage: probe-test run EXPECT | check EXPECT TEXT\n");
	return 2;
}
