/*
 * libdp-patchall.so: patches every function entry and every return site of
 * the objects named by DP_PATCH_ALL, counts the hits, and checks at exit that
 * calls and returns balance.  It is the engine's stress test on real
 * programs: it must never change what the program does.
 *
 *   LD_PRELOAD=tests/engine/.libs/libdp-patchall.so \
 *   DP_PATCH_ALL=main,/usr/lib/x86_64-linux-gnu/libz.so.1 \
 *   DP_PATCH_ALL_REPORT=report.txt  program ...
 *
 * DP_PATCH_ALL is a comma-separated list of loaded objects: `main` for the
 * executable, or paths (compared by device and inode, so symlinks work).
 * The constructor patches them before main runs, while the process has one
 * thread; objects loaded later are not patched.  The report goes to the file
 * named by DP_PATCH_ALL_REPORT (appended), or to stderr; never to stdout.
 * Sites are planned with redirects (DP_PLAN_REDIRECT, plan.h: the branches
 * to a block no window fits led to its trampoline), installed before the
 * patches whose trampolines lead to them; DP_PATCH_ALL_NO_REDIRECT=1 plans
 * without, as the daemon does.  The report lists the int3 sites hit most:
 * where a trapping run's time goes.
 *
 * Balance.  Each thread keeps a shadow stack of active functions, each frame
 * keyed by the rsp at its entry (the address of its return address).  A ret
 * at rsp R closes the frame opened at R, whichever function's site it is
 * (cold parts and shared tails return through other functions' sites).  A
 * jump that leaves a function (a tail call) marks the frame "left": the
 * callee's entry at the same rsp, or any later event above it, closes it as
 * a tail return.  A jump out taken below the frame's rsp enters a part of the
 * same frame (a .cold block): that entry opens no frame.  Frames below an
 * event's rsp that nothing closed were abandoned: by longjmp (the wrappers
 * below note it), or else because a hook did not run, which is the failure
 * this harness exists to find, as is a ret that matches no frame.  A
 * function's jump back to its own entry, and a function whose code runs past
 * the end its unwind entry gives, leave frames that count as tail returns.
 * PLT stubs are not probed (the analysis already leaves out signal return
 * trampolines).
 *
 * The handler runs with a per-thread guard (functions it reaches are not
 * counted), uses only atomics and thread-local data, and makes no library
 * calls: raw system calls only, so it is async-signal-safe and re-entrant.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <gelf.h>

#include "elf/elf.h"
#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"
#include "reason.h"

#define NONE UINT32_MAX
#define STACK_FRAMES (1u << 16)
#define MAX_OBJECTS 16
#define REPORT_IMBALANCED 10
#define REPORT_TRAPS 8

/* Roles of one probed address. */
enum pa_role {
	PA_ENTRY = 1u << 0,
	PA_RET = 1u << 1,	/* ret, rep ret, ret imm16 */
	PA_JUMP_OUT = 1u << 2,	/* jmp, jcc or jmp r/m leaving the function */
};

struct pa_fn {
	const struct dp_function *fn;
	uint64_t lo, hi;		/* run-time range */
	_Atomic uint64_t entries, returns, tails, unwound, lost, unmatched, parts, foreign;
	uint64_t active;		/* frames open at exit, counted by the report */
};

struct pa_point {
	uint64_t addr;			/* file address, as planned */
	uint32_t entry_fn, ret_fn;	/* global function indexes, NONE */
	uint8_t role;			/* enum pa_role */
	uint8_t method, reason;		/* the plan's outcome */
	bool hop;			/* a jump through a hop (a jmp rel8 first) */
	bool redirect;			/* served by a redirect's trampoline */
	bool led;			/* in a jump window that branches are led into */
	bool inner;			/* in a jump window holding a branch to its own
					   instructions (tramp.h) */
	bool self_jump;			/* entry: its function jumps to it (tail recursion) */
	bool open_end;			/* entry: its code runs on past its known end */
	const struct dp_insn *jump;	/* jump-out sites: the instruction */
	uint64_t rt;			/* run-time address of the instruction */
	_Atomic uint64_t hits;
	_Atomic uint64_t unmatched;	/* rets here that closed no frame */
};

struct pa_object {
	char name[256];
	struct dp_object *dp;
	uint64_t bias;
	size_t nfns, npoints;
	struct pa_point *points;
	uint32_t fn_base;		/* index of its first function in pa.fns */
	/* Per role (0 entries, 1 return sites): by method, and by reason. */
	unsigned by_method[2][4];
	unsigned by_reason[2][DP_REASON__COUNT];
	unsigned install_failed;
	unsigned hops;			/* jump patches through a hop */
	unsigned redirects;		/* redirect patches */
	unsigned led_windows;		/* jump patches with branches led into their window */
	unsigned inner_windows;		/* jump patches with branches inside to their own insns */
	unsigned redirect_branches;	/* the branches they lead to trampolines */
	unsigned plt_skipped;		/* PLT stubs: not functions */
	int error;			/* -errno when it could not be patched at all */
	struct dp_patch *plan;		/* while installing */
	size_t nplan;
	size_t *slot;			/* int3 patches: their index in pa.traps */
};

struct pa_frame {
	uint64_t rsp;
	uint32_t fn;
	uint32_t left;			/* left by a jump: a tail call, most likely */
};

struct pa_thread {
	struct pa_thread *next;
	uint64_t depth;
	uint64_t nonlocal_rsp;		/* where a longjmp was called: frames abandoned
					   until an event above it are expected */
	uint64_t part_rsp, part_to;	/* a jump out to part_to below the frame's rsp:
					   its entry there opens no frame */
	uint64_t overflow;
	struct pa_frame frames[STACK_FRAMES];
};

static struct {
	struct pa_object objs[MAX_OBJECTS];
	size_t nobjs;
	struct pa_fn *fns;
	size_t nfns;
	struct dp_inproc_site *traps;	/* int3 sites, by address; served once prepared */
	size_t ntraps;
	struct sigaction prev_trap;
	_Atomic(struct pa_thread *) threads;
	_Atomic int active;
	_Atomic uint64_t traps_ours, traps_chained, alloc_failed;
	pid_t pid;
	int report_fd;
	bool reported;
} pa;

static __thread int pa_guard __attribute__((tls_model("initial-exec")));
static __thread struct pa_thread *pa_self __attribute__((tls_model("initial-exec")));

/* ---- the hit path: no library calls ------------------------------------ */

static long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static struct pa_thread *thread_self(void)
{
	struct pa_thread *t = pa_self;
	long p;

	if (t)
		return t;
	p = raw_syscall6(SYS_mmap, 0, sizeof(*t), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p < 0 && p > -4096) {
		atomic_fetch_add(&pa.alloc_failed, 1);
		return NULL;
	}
	t = (struct pa_thread *)p;
	t->next = atomic_load(&pa.threads);
	while (!atomic_compare_exchange_weak(&pa.threads, &t->next, t))
		;
	pa_self = t;
	return t;
}

static bool cc_holds(unsigned cc, uint64_t fl)
{
	bool cf = fl & 1, pf = fl & 4, zf = fl & 0x40, sf = fl & 0x80, of = fl & 0x800;
	bool r;

	switch (cc >> 1) {
	case 0: r = of; break;
	case 1: r = cf; break;
	case 2: r = zf; break;
	case 3: r = cf || zf; break;
	case 4: r = sf; break;
	case 5: r = pf; break;
	case 6: r = sf != of; break;
	default: r = zf || sf != of; break;
	}
	return cc & 1 ? !r : r;
}

/*
 * Where a jmp r/m goes, read the way the instruction will read it.  Returns
 * false when it cannot tell (a segment-relative operand).
 */
static bool indirect_target(const struct pa_point *pt, const struct dp_regs *regs, uint64_t *to)
{
	const struct dp_insn *in = pt->jump;
	const uint64_t *gpr = &regs->rax;	/* hardware order, as enum dp_reg */
	uint64_t ea;

	if (in->mod == 3) {
		*to = gpr[in->rm & 15];
		return true;
	}
	if (in->seg == 0x64 || in->seg == 0x65)
		return false;
	if (in->attr & DP_ATTR_RIPREL)
		ea = pt->rt + in->len + in->disp;
	else {
		ea = in->base != DP_REG_NONE ? gpr[in->base] : 0;
		if (in->index != DP_REG_NONE)
			ea += gpr[in->index] << in->scale;
		ea += in->disp;
	}
	if (in->adsize == 4)
		ea = (uint32_t)ea;
	*to = *(const uint64_t *)(uintptr_t)ea;
	return true;
}

/* Closes the frames below rsp `above` (strictly, or up to it for an entry). */
static void drop_frames(struct pa_thread *t, uint64_t above, bool inclusive)
{
	while (t->depth) {
		struct pa_frame *f = &t->frames[t->depth - 1];
		struct pa_fn *fn = &pa.fns[f->fn];

		if (inclusive ? f->rsp > above : f->rsp >= above)
			break;
		if (f->left)
			atomic_fetch_add_explicit(&fn->tails, 1, memory_order_relaxed);
		else if (t->nonlocal_rsp)
			atomic_fetch_add_explicit(&fn->unwound, 1, memory_order_relaxed);
		else
			atomic_fetch_add_explicit(&fn->lost, 1, memory_order_relaxed);
		t->depth--;
	}
}

static void on_entry(struct pa_thread *t, const struct pa_point *pt, uint64_t rsp)
{
	uint32_t fi = pt->entry_fn;

	/* Its own jump back to the entry: the frame ends in a tail call. */
	if (pt->self_jump && t->depth && t->frames[t->depth - 1].rsp == rsp &&
	    t->frames[t->depth - 1].fn == fi)
		t->frames[t->depth - 1].left = 1;
	/* At the same rsp: the caller's tail call, or a frame left for dead. */
	drop_frames(t, rsp, true);
	if (t->part_rsp == rsp && t->part_to == pa.fns[fi].lo) {
		/* Entered by a jump from inside another frame: its .cold part. */
		t->part_rsp = 0;
		atomic_fetch_add_explicit(&pa.fns[fi].parts, 1, memory_order_relaxed);
		return;
	}
	t->part_rsp = 0;
	if (t->depth == STACK_FRAMES) {
		t->overflow++;
		return;
	}
	/* A function that runs past its known end may leave from there,
	 * where no probe sees it: as if it had jumped out. */
	t->frames[t->depth++] = (struct pa_frame){ .rsp = rsp, .fn = fi, .left = pt->open_end };
	atomic_fetch_add_explicit(&pa.fns[fi].entries, 1, memory_order_relaxed);
}

static void on_ret(struct pa_thread *t, struct pa_point *pt, uint64_t rsp)
{
	uint32_t fi = pt->ret_fn;
	struct pa_frame *f;

	t->part_rsp = 0;
	drop_frames(t, rsp, false);
	if (!t->depth || t->frames[t->depth - 1].rsp != rsp) {
		if (t->overflow)
			t->overflow--;
		else {
			atomic_fetch_add_explicit(&pa.fns[fi].unmatched, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&pt->unmatched, 1, memory_order_relaxed);
		}
		return;
	}
	f = &t->frames[--t->depth];
	atomic_fetch_add_explicit(&pa.fns[f->fn].returns, 1, memory_order_relaxed);
	if (f->fn != fi)
		atomic_fetch_add_explicit(&pa.fns[fi].foreign, 1, memory_order_relaxed);
}

static void on_jump_out(struct pa_thread *t, const struct pa_point *pt,
			const struct dp_regs *regs)
{
	const struct dp_insn *in = pt->jump;
	const struct pa_fn *fn = &pa.fns[pt->ret_fn];
	uint64_t rsp = regs->rsp, to = 0;

	if (in && in->flow == DP_FLOW_JCC && !cc_holds(in->opcode & 15, regs->rflags))
		return;
	if (in && in->flow == DP_FLOW_JMP_IND) {
		if (!indirect_target(pt, regs, &to))
			to = 0;
		else if (to >= fn->lo && to < fn->hi)
			return;	/* within the function: a switch, not a tail call */
	} else if (in && (in->attr & DP_ATTR_REL)) {
		to = dp_insn_target(in, pt->rt);
	}
	t->part_rsp = 0;
	drop_frames(t, rsp, false);
	if (t->depth && t->frames[t->depth - 1].rsp == rsp) {
		t->frames[t->depth - 1].left = 1;
	} else {
		t->part_rsp = rsp;
		t->part_to = to;
	}
}

static void pa_hit(void *arg, struct dp_regs *regs)
{
	struct pa_point *pt = arg;
	struct pa_thread *t;

	if (pa_guard || !atomic_load_explicit(&pa.active, memory_order_relaxed))
		return;
	pa_guard = 1;
	atomic_fetch_add_explicit(&pt->hits, 1, memory_order_relaxed);
	t = thread_self();
	if (t) {
		/* An entry that is also a return site (a function that is one
		 * tail jump): entered first, then left by that instruction. */
		if (pt->role & PA_ENTRY)
			on_entry(t, pt, regs->rsp);
		if (pt->role & PA_RET)
			on_ret(t, pt, regs->rsp);
		else if (pt->role & PA_JUMP_OUT)
			on_jump_out(t, pt, regs);
		/* Above the longjmp's caller: the jump has landed, and the
		 * frames it abandoned were dropped by now. */
		if (t->nonlocal_rsp && regs->rsp > t->nonlocal_rsp)
			t->nonlocal_rsp = 0;
	}
	pa_guard = 0;
}

static void pa_sigtrap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t at = (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
	size_t lo = 0, hi = pa.ntraps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pa.traps[mid].win.addr < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < pa.ntraps && pa.traps[lo].win.addr == at && pa.traps[lo].tramp.len) {
		atomic_fetch_add_explicit(&pa.traps_ours, 1, memory_order_relaxed);
		dp_inproc_trap(&pa.traps[lo], uc);
		return;
	}
	/* Not ours: what the program (or the default) would have done. */
	atomic_fetch_add_explicit(&pa.traps_chained, 1, memory_order_relaxed);
	if (pa.prev_trap.sa_flags & SA_SIGINFO) {
		pa.prev_trap.sa_sigaction(sig, si, ucv);
	} else if (pa.prev_trap.sa_handler != SIG_DFL && pa.prev_trap.sa_handler != SIG_IGN) {
		pa.prev_trap.sa_handler(sig);
	} else {
		static const char msg[] = "patchall: a SIGTRAP that is not ours at 0x";
		char hex[17];

		for (int i = 0; i < 16; i++)
			hex[i] = "0123456789abcdef"[(at + 1) >> (60 - 4 * i) & 15];
		hex[16] = '\n';
		raw_syscall6(SYS_write, 2, (long)msg, sizeof(msg) - 1, 0, 0, 0);
		raw_syscall6(SYS_write, 2, (long)hex, sizeof(hex), 0, 0, 0);
		signal(SIGTRAP, SIG_DFL);
		raise(SIGTRAP);
	}
}

/* ---- nonlocal exits ---------------------------------------------------- */

/*
 * longjmp abandons frames without running their returns: say so to the
 * shadow stack, then jump.  These interpose the C library's (this library
 * is preloaded); the real ones are looked up once, before main.
 */
typedef void (*longjmp_fn)(struct __jmp_buf_tag *, int);
static longjmp_fn real_longjmp, real__longjmp, real_siglongjmp, real_longjmp_chk;

static void nonlocal_note(void)
{
	struct pa_thread *t = pa_self;
	char here;

	if (t)
		t->nonlocal_rsp = (uint64_t)(uintptr_t)&here;
}

#define WRAP_LONGJMP(name, real)                                               \
	__attribute__((noreturn, visibility("default"))) void name(jmp_buf env, int val); \
	void name(jmp_buf env, int val)                                          \
	{                                                                        \
		nonlocal_note();                                                 \
		if (!real)                                                       \
			real = (longjmp_fn)dlsym(RTLD_NEXT, #name);              \
		real(env, val);                                                  \
		__builtin_unreachable();                                         \
	}

WRAP_LONGJMP(longjmp, real_longjmp)
WRAP_LONGJMP(_longjmp, real__longjmp)
WRAP_LONGJMP(siglongjmp, real_siglongjmp)
WRAP_LONGJMP(__longjmp_chk, real_longjmp_chk)

/* ---- patching, before main --------------------------------------------- */

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void report(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (n > 0 && write(pa.report_fd, buf, n) < 0)
		return;
}

struct find_bias {
	bool main;
	dev_t dev;
	ino_t ino;
	bool found;
	uint64_t bias;
};

static int find_bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_bias *fb = data;
	struct stat st;

	if (fb->main) {
		/* The executable comes first, under an empty name. */
		fb->found = true;
		fb->bias = info->dlpi_addr;
		return 1;
	}
	if (!info->dlpi_name[0] || stat(info->dlpi_name, &st) ||
	    st.st_dev != fb->dev || st.st_ino != fb->ino)
		return 0;
	fb->found = true;
	fb->bias = info->dlpi_addr;
	return 1;
}

static int cmp_point(const void *a, const void *b)
{
	const struct pa_point *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_trap(const void *a, const void *b)
{
	const struct dp_inproc_site *x = a, *y = b;

	return x->win.addr < y->win.addr ? -1 : x->win.addr > y->win.addr;
}

/*
 * Whether vaddr lies in a PLT section: lazy-binding and import stubs, which
 * unwind information describes like functions but which are entered by
 * jumps and leave through the dynamic linker.  Not functions: not probed.
 */
static bool in_plt(struct pa_object *o, uint64_t vaddr)
{
	Elf *e = dp_elf_handle(dp_object_elf(o->dp));
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || vaddr < sh.sh_addr || vaddr - sh.sh_addr >= sh.sh_size)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		return name && (!strcmp(name, ".plt") || !strncmp(name, ".plt.", 5));
	}
	return false;
}

/* One point per address: an address may be an entry and a return site. */
static int points_collect(struct pa_object *o, const struct dp_function *fns)
{
	size_t n = 0, cap = 0, w;
	struct pa_point *v = NULL;

	for (size_t i = 0; i < o->nfns; i++) {
		const struct dp_function *fn = &fns[i];

		if (in_plt(o, fn->start)) {
			o->plt_skipped++;
			continue;
		}

		if (n + 1 + fn->nrets > cap) {
			struct pa_point *nv;

			cap = (n + 1 + fn->nrets) * 2;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = (struct pa_point){ .addr = fn->start, .entry_fn = o->fn_base + i,
					    .ret_fn = NONE, .role = PA_ENTRY };
		for (uint32_t r = 0; r < fn->nrets; r++) {
			const struct dp_ret_site *rs = &fn->rets[r];
			/* Anything but a ret leaves by a jump (tail calls, tables
			 * reaching .cold parts or other functions). */
			bool jump = rs->kind != DP_RET_RET && rs->kind != DP_RET_RET_IMM &&
				    rs->kind != DP_RET_REP_RET;

			v[n++] = (struct pa_point){ .addr = rs->addr, .entry_fn = NONE,
						    .ret_fn = o->fn_base + i,
						    .role = jump ? PA_JUMP_OUT : PA_RET };
		}
	}
	qsort(v, n, sizeof(*v), cmp_point);
	/* Merge: the first entry and the first return site win (nested ranges). */
	for (size_t i = w = 0; i < n; i++) {
		if (w && v[w - 1].addr == v[i].addr) {
			struct pa_point *p = &v[w - 1];

			if (v[i].entry_fn != NONE && p->entry_fn == NONE) {
				p->entry_fn = v[i].entry_fn;
				p->role |= PA_ENTRY;
			}
			if (v[i].ret_fn != NONE && p->ret_fn == NONE) {
				p->ret_fn = v[i].ret_fn;
				p->role |= v[i].role & (PA_RET | PA_JUMP_OUT);
			}
			continue;
		}
		v[w++] = v[i];
	}
	o->points = v;
	o->npoints = w;
	return 0;
}

/* Whether a direct jmp or jcc of the function goes to its own start. */
static bool jumps_to_self(const struct pa_object *o, const struct dp_function *fn)
{
	for (uint32_t i = 0; i < fn->ninsns; i++) {
		uint64_t at = fn->start + fn->insn_off[i];
		struct dp_insn in;

		if (!dp_insn_decode((const uint8_t *)(uintptr_t)(at + o->bias),
				    fn->start + fn->size - at, &in) &&
		    (in.flow == DP_FLOW_JMP || in.flow == DP_FLOW_JCC) &&
		    dp_insn_target(&in, at) == fn->start)
			return true;
	}
	return false;
}

/*
 * Whether execution can run past the function's end: its last instruction
 * falls through.  Unwind entries of hand-written code may stop early (glibc's
 * clone3: the parent's ret lies past the FDE's end).
 */
static bool runs_past_end(const struct pa_object *o, const struct dp_function *fn)
{
	uint64_t at;
	struct dp_insn in;

	if (!fn->ninsns || (fn->flags & DP_FN_UNDECODED))
		return true;
	at = fn->start + fn->insn_off[fn->ninsns - 1];
	if (dp_insn_decode((const uint8_t *)(uintptr_t)(at + o->bias), fn->start + fn->size - at, &in))
		return true;
	if (at + in.len < fn->start + fn->size)
		return false;	/* padding after it: the last real instruction decoded as such */
	/* A call last is a call to a function that does not return. */
	return in.flow == DP_FLOW_NONE || in.flow == DP_FLOW_JCC || in.flow == DP_FLOW_LOOP ||
	       in.flow == DP_FLOW_SYSCALL;
}

/* What a hook needs from its instruction. */
static int point_decode(struct pa_object *o, struct pa_point *pt)
{
	const uint8_t *code = (const uint8_t *)(uintptr_t)(pt->addr + o->bias);
	struct dp_insn *in;

	pt->rt = pt->addr + o->bias;
	if (pt->role & PA_ENTRY) {
		pt->self_jump = jumps_to_self(o, pa.fns[pt->entry_fn].fn);
		pt->open_end = runs_past_end(o, pa.fns[pt->entry_fn].fn);
	}
	if (!(pt->role & PA_JUMP_OUT))
		return 0;
	in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	if (dp_insn_decode(code, DP_INSN_MAX_LEN, in)) {
		/* Unknown: treated as leaving for an unknown place. */
		free(in);
		return 0;
	}
	pt->jump = in;
	return 0;
}

static void tally(struct pa_object *o, const struct pa_point *pt)
{
	/* An address both an entry and a return site counts once, as an entry. */
	int role = pt->role & PA_ENTRY ? 0 : 1;

	o->by_method[role][pt->method]++;
	if (pt->method != DP_SITE_JUMP && pt->method != DP_SITE_REDIRECT)
		o->by_reason[role][pt->reason]++;
}

/* Analyzes and plans one object: nothing is written yet. */
static int object_plan(struct pa_object *o)
{
	const struct dp_function *fns;
	uint64_t *addrs = NULL;
	int ret;

	ret = dp_object_functions(o->dp, &fns, &o->nfns);
	if (ret)
		return ret;
	{
		struct pa_fn *nf = realloc(pa.fns, (pa.nfns + o->nfns) * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		pa.fns = nf;
		memset(nf + pa.nfns, 0, o->nfns * sizeof(*nf));
		o->fn_base = pa.nfns;
		for (size_t i = 0; i < o->nfns; i++) {
			nf[pa.nfns + i].fn = &fns[i];
			nf[pa.nfns + i].lo = fns[i].start + o->bias;
			nf[pa.nfns + i].hi = fns[i].start + fns[i].size + o->bias;
		}
		pa.nfns += o->nfns;
	}
	ret = points_collect(o, fns);
	if (ret)
		return ret;
	addrs = malloc((o->npoints ? o->npoints : 1) * sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	for (size_t i = 0; i < o->npoints; i++) {
		addrs[i] = o->points[i].addr;
		ret = point_decode(o, &o->points[i]);
		if (ret)
			goto out;
	}
	ret = dp_plan_sites_flags(o->dp, addrs, o->npoints,
				  getenv("DP_PATCH_ALL_NO_REDIRECT") ? 0 : DP_PLAN_REDIRECT, &o->plan,
				  &o->nplan);
	if (ret)
		goto out;
	o->slot = calloc(o->nplan ? o->nplan : 1, sizeof(*o->slot));
	if (!o->slot) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < o->nplan; i++) {
		const struct dp_patch *p = &o->plan[i];
		bool inner = p->method == DP_SITE_JUMP && dp_window_inner_branches(&p->win);

		for (unsigned k = 0; k < p->npoints; k++) {
			struct pa_point *pt = &o->points[p->point_ids[k]];

			pt->method = p->method;
			pt->hop = p->method == DP_SITE_JUMP && p->hop.len;
			pt->redirect = p->method == DP_SITE_REDIRECT;
			pt->led = p->method == DP_SITE_JUMP && p->led;
			pt->inner = inner;
			pt->reason = p->reason;
		}
		if (p->method == DP_SITE_INT3)
			pa.ntraps++;
	}
out:
	free(addrs);
	return ret;
}

/*
 * The int3 sites' table, made before the first int3 is written and never
 * moved: a trap may come from any probed function the installer itself
 * calls, and the handler must find its site then.
 */
static int traps_prepare(void)
{
	size_t n = 0;

	pa.traps = calloc(pa.ntraps ? pa.ntraps : 1, sizeof(*pa.traps));
	if (!pa.traps)
		return -ENOMEM;
	for (size_t i = 0; i < pa.nobjs; i++) {
		struct pa_object *o = &pa.objs[i];

		for (size_t k = 0; !o->error && k < o->nplan; k++)
			if (o->plan[k].method == DP_SITE_INT3)
				pa.traps[n++].win.addr = o->plan[k].win.addr + o->bias;
	}
	qsort(pa.traps, n, sizeof(*pa.traps), cmp_trap);
	for (size_t i = 0; i < pa.nobjs; i++) {
		struct pa_object *o = &pa.objs[i];

		for (size_t k = 0; !o->error && k < o->nplan; k++) {
			uint64_t at = o->plan[k].win.addr + o->bias;
			size_t lo = 0, hi = n;

			if (o->plan[k].method != DP_SITE_INT3)
				continue;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (pa.traps[mid].win.addr < at)
					lo = mid + 1;
				else
					hi = mid;
			}
			o->slot[k] = lo;
		}
	}
	return 0;
}

/*
 * Where a trampoline serves an instruction of a window that branches are
 * led into (a redirect's, a jump's with redirects), by its file address.
 */
struct pa_entry {
	uint64_t win;
	uint64_t entry;
};

/* Whether branches are led into a patch's window: installed first. */
static bool leads_branches(const struct dp_patch *p)
{
	return p->led;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct pa_entry *x = a, *y = b;

	return x->win < y->win ? -1 : x->win > y->win;
}

/*
 * The run-time places the relocated branches of p lead to (plan.h).  False
 * when one is not served (its patch failed): p must not be installed.
 */
static bool via_entries(const struct dp_patch *p, const struct pa_entry *e, size_t n,
			uint64_t via[DP_WINDOW_MAX_INSNS])
{
	bool all = true;

	for (unsigned i = 0; i < DP_WINDOW_MAX_INSNS; i++) {
		struct pa_entry key = { .win = p->redirect_to[i] };
		const struct pa_entry *f = key.win ? bsearch(&key, e, n, sizeof(*e), cmp_entry) : NULL;

		via[i] = f ? f->entry : 0;
		all &= !key.win || f;
	}
	return all;
}

/*
 * Installs plan[i] of o.  Redirects go first (pass 0), recording their
 * entries, which the others' trampolines may need (pass 1).
 */
static void patch_install(struct pa_object *o, size_t i, struct dp_code_pool *pool,
			  enum dp_vec_save vec, struct pa_entry *entries, size_t *nentries)
{
	struct dp_patch *p = &o->plan[i];
	void *args[DP_PATCH_MAX_POINTS];
	uint64_t via[DP_WINDOW_MAX_INSNS];
	struct dp_inproc_site site;
	enum dp_reason why = DP_REASON_NONE;
	int ret;

	for (unsigned k = 0; k < p->npoints; k++)
		args[k] = &o->points[p->point_ids[k]];
	ret = via_entries(p, entries, *nentries, via) ? 0 : -ENOENT;
	/*
	 * Prepared aside (the slot keeps its address while the table is
	 * searched), then put in its slot, where the handler finds it,
	 * before the int3 is written: the installer itself may run into
	 * it.
	 */
	if (!ret)
		ret = dp_inproc_prepare_via(pool, &site, p, o->bias, pa_hit, args, vec, via, &why);
	if (!ret && site.method == DP_SITE_INT3) {
		pa.traps[o->slot[i]] = site;
		ret = dp_inproc_commit(pool, &pa.traps[o->slot[i]]);
	} else if (!ret) {
		ret = dp_inproc_commit(pool, &site);
	}
	if (!ret && site.method == DP_SITE_JUMP && site.hop.len)
		o->hops++;
	if (!ret && site.method == DP_SITE_JUMP && dp_window_inner_branches(&site.win))
		o->inner_windows++;
	if (!ret && leads_branches(p)) {
		o->redirects += site.method == DP_SITE_REDIRECT;
		o->led_windows += site.method == DP_SITE_JUMP;
		o->redirect_branches += site.nredirects;
		for (unsigned m = 0; m < p->win.ninsns; m++)
			entries[(*nentries)++] = (struct pa_entry){
				p->win.addr + p->win.off[m], m ? site.tramp.insn_at[m] : site.tramp.entry
			};
	}
	if (ret) {
		o->install_failed++;
		for (unsigned k = 0; k < p->npoints; k++) {
			struct pa_point *pt = &o->points[p->point_ids[k]];

			pt->method = DP_SITE_REFUSED;
			pt->reason = why;
		}
	}
}

static void object_install(struct pa_object *o, struct dp_code_pool *pool, enum dp_vec_save vec)
{
	struct pa_entry *entries = malloc((o->nplan ? o->nplan : 1) * DP_WINDOW_MAX_INSNS *
					  sizeof(*entries));
	size_t nentries = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < o->nplan; i++) {
			enum dp_site_method m = o->plan[i].method;

			if (m == DP_SITE_REFUSED || leads_branches(&o->plan[i]) != !pass)
				continue;
			/* Without room to note entries, nothing leads branches. */
			if (!pass && !entries) {
				o->install_failed++;
				continue;
			}
			patch_install(o, i, pool, vec, entries, &nentries);
		}
		if (!pass && nentries > 1)
			qsort(entries, nentries, sizeof(*entries), cmp_entry);
	}
	free(entries);
	for (size_t i = 0; i < o->npoints; i++)
		tally(o, &o->points[i]);
	free(o->plan);
	free(o->slot);
	o->plan = NULL;
	o->slot = NULL;
}

static bool single_threaded(void)
{
	struct stat st;

	/* A directory's link count is 2 + its subdirectories: one per thread. */
	return !stat("/proc/self/task", &st) && st.st_nlink == 3;
}

static void object_add(const char *spec)
{
	struct pa_object *o;
	struct find_bias fb = { 0 };
	const char *path = spec;
	struct stat st;

	if (pa.nobjs == MAX_OBJECTS)
		return;
	o = &pa.objs[pa.nobjs++];
	if (!strcmp(spec, "main")) {
		fb.main = true;
		path = "/proc/self/exe";
		ssize_t n = readlink(path, o->name, sizeof(o->name) - 1);

		if (n < 0)
			snprintf(o->name, sizeof(o->name), "main");
	} else {
		snprintf(o->name, sizeof(o->name), "%s", spec);
		if (stat(spec, &st)) {
			o->error = -errno;
			return;
		}
		fb.dev = st.st_dev;
		fb.ino = st.st_ino;
	}
	dl_iterate_phdr(find_bias_cb, &fb);
	if (!fb.found) {
		o->error = -ENOENT;	/* not loaded */
		return;
	}
	o->bias = fb.bias;
	o->dp = dp_object_open(path);
	if (!o->dp)
		o->error = -errno;
}

__attribute__((constructor)) static void pa_init(void)
{
	const char *spec = getenv("DP_PATCH_ALL"), *rep = getenv("DP_PATCH_ALL_REPORT");
	struct dp_code_pool *pool;
	enum dp_vec_save vec;
	struct sigaction sa;
	char *list, *tok, *save;

	pa.report_fd = 2;
	if (rep && *rep) {
		int fd = open(rep, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0)
			pa.report_fd = fd;
	}
	pa.pid = getpid();
	if (!spec || !*spec)
		return;
	if (!single_threaded()) {
		report("patchall: the process already has threads: nothing patched\n");
		return;
	}
	real_longjmp = (longjmp_fn)dlsym(RTLD_NEXT, "longjmp");
	real__longjmp = (longjmp_fn)dlsym(RTLD_NEXT, "_longjmp");
	real_siglongjmp = (longjmp_fn)dlsym(RTLD_NEXT, "siglongjmp");
	real_longjmp_chk = (longjmp_fn)dlsym(RTLD_NEXT, "__longjmp_chk");
	/* Nothing that runs while patching is counted. */
	pa_guard = 1;
	list = strdup(spec);
	for (tok = list ? strtok_r(list, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save))
		object_add(tok);
	free(list);
	for (size_t i = 0; i < pa.nobjs; i++) {
		struct pa_object *o = &pa.objs[i];

		if (!o->error)
			o->error = object_plan(o);
	}
	pool = dp_code_pool_new();
	if (!pool || traps_prepare()) {
		report("patchall: cannot prepare: %s\n", strerror(errno));
		pa_guard = 0;
		return;
	}
	/* Before the first int3 is written: the installer may run into one. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = pa_sigtrap;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, &pa.prev_trap);
	vec = dp_vec_save_detect();
	for (size_t i = 0; i < pa.nobjs; i++) {
		struct pa_object *o = &pa.objs[i];

		if (!o->error)
			object_install(o, pool, vec);
	}
	atomic_store(&pa.active, 1);
	pa_guard = 0;
}

/* ---- the report -------------------------------------------------------- */

static double pct(unsigned a, unsigned total)
{
	return total ? 100.0 * a / total : 0.0;
}

static void fn_label(const struct pa_fn *f, char *buf, size_t size)
{
	if (f->fn->name)
		snprintf(buf, size, "%s", f->fn->name);
	else
		snprintf(buf, size, "fn@%#lx", (unsigned long)f->fn->start);
}

static void report_reasons(const struct pa_object *o, int role)
{
	bool any = false;

	/* By count, largest first; few reasons exist, so a plain selection. */
	bool done[DP_REASON__COUNT] = { false };

	for (;;) {
		int best = -1;

		for (int r = 0; r < DP_REASON__COUNT; r++)
			if (!done[r] && o->by_reason[role][r] &&
			    (best < 0 || o->by_reason[role][r] > o->by_reason[role][best]))
				best = r;
		if (best < 0)
			break;
		done[best] = true;
		report("%s %s %u", any ? "," : "", dp_reason_name(best), o->by_reason[role][best]);
		any = true;
	}
	if (!any)
		report(" none");
	report("\n");
}

/* The int3 sites hit most, where the time of a trapping run goes. */
static void report_traps(const struct pa_object *o)
{
	size_t top[REPORT_TRAPS];
	unsigned n = 0;

	for (size_t i = 0; i < o->npoints; i++) {
		const struct pa_point *pt = &o->points[i];
		uint64_t h = atomic_load(&pt->hits);
		unsigned k;

		if (pt->method != DP_SITE_INT3 || !h)
			continue;
		for (k = n; k > 0 && atomic_load(&o->points[top[k - 1]].hits) < h; k--)
			if (k < REPORT_TRAPS)
				top[k] = top[k - 1];
		if (k < REPORT_TRAPS) {
			top[k] = i;
			if (n < REPORT_TRAPS)
				n++;
		}
	}
	for (unsigned k = 0; k < n; k++) {
		const struct pa_point *pt = &o->points[top[k]];

		report("  int3 hit %lu times at %#lx (%s, %s)\n",
		       (unsigned long)atomic_load(&pt->hits), (unsigned long)pt->addr,
		       pt->role & PA_ENTRY ? "entry" : "return", dp_reason_name(pt->reason));
	}
}

/* main, and the functions DP_PATCH_ALL_FUNCS names, one line each. */
static void report_named(const struct pa_object *o)
{
	const char *names = getenv("DP_PATCH_ALL_FUNCS");

	for (size_t i = 0; i < o->nfns; i++) {
		const struct pa_fn *f = &pa.fns[o->fn_base + i];
		const char *name = f->fn->name;
		size_t len;
		bool want;

		if (!name)
			continue;
		len = strlen(name);
		want = !strcmp(name, "main");
		for (const char *p = names; p && *p && !want; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
			want = !strncmp(p, name, len) && (p[len] == ',' || !p[len]);
		if (want)
			report("  function %s: calls %lu returns %lu tail %lu active %lu\n", name,
			       (unsigned long)f->entries, (unsigned long)f->returns,
			       (unsigned long)f->tails, (unsigned long)f->active);
	}
}

static void report_object(const struct pa_object *o, uint64_t *total_hits, unsigned *bad_fns)
{
	static const char *role_name[2] = { "entries", "returns" };
	uint64_t hits = 0, int3_hits = 0, hop_hits = 0, redirect_hits = 0, led_hits = 0,
		 inner_hits = 0;
	uint64_t entries = 0, returns = 0, tails = 0;
	uint64_t unwound = 0;
	uint64_t lost = 0, unmatched = 0, parts = 0, active = 0, foreign = 0;
	size_t hit_sites = 0, shown = 0;

	report("object %s\n", o->name);
	if (o->error) {
		report("  error: %s\n", strerror(-o->error));
		(*bad_fns)++;
		return;
	}
	report("  bias %#lx functions %zu (not probed: PLT stubs %u) points %zu\n",
	       (unsigned long)o->bias, o->nfns, o->plt_skipped, o->npoints);
	for (int role = 0; role < 2; role++) {
		unsigned *m = (unsigned *)o->by_method[role];
		unsigned total = m[0] + m[1] + m[2] + m[3];
		unsigned jumps = m[DP_SITE_JUMP] + m[DP_SITE_REDIRECT];

		/* A redirect is reached by jumps too: its branches'. */
		report("  %s %u: jump %u (%.2f%%) int3 %u (%.2f%%) refused %u (%.2f%%)\n",
		       role_name[role], total, jumps, pct(jumps, total),
		       m[DP_SITE_INT3], pct(m[DP_SITE_INT3], total), m[DP_SITE_REFUSED],
		       pct(m[DP_SITE_REFUSED], total));
		report("  %s reasons:", role_name[role]);
		report_reasons(o, role);
	}
	if (o->install_failed)
		report("  install failures %u\n", o->install_failed);
	for (size_t i = 0; i < o->npoints; i++) {
		uint64_t h = atomic_load(&o->points[i].hits);

		hits += h;
		hit_sites += h != 0;
		if (o->points[i].method == DP_SITE_INT3)
			int3_hits += h;
		if (o->points[i].hop)
			hop_hits += h;
		if (o->points[i].redirect)
			redirect_hits += h;
		if (o->points[i].led)
			led_hits += h;
		if (o->points[i].inner)
			inner_hits += h;
	}
	*total_hits += hits;
	for (size_t i = 0; i < o->nfns; i++) {
		const struct pa_fn *f = &pa.fns[o->fn_base + i];

		entries += f->entries;
		returns += f->returns;
		tails += f->tails;
		unwound += f->unwound;
		lost += f->lost;
		unmatched += f->unmatched;
		parts += f->parts;
		active += f->active;
		foreign += f->foreign;
	}
	report("  hops %u (a jmp rel8 to a jmp rel32 in fill), hits %lu\n", o->hops,
	       (unsigned long)hop_hits);
	report("  redirects %u (%u branches led to a trampoline, the site unwritten), hits %lu\n",
	       o->redirects, o->redirect_branches, (unsigned long)redirect_hits);
	report("  led windows %u (jumps whose window holds targets, their branches led to the"
	       " trampoline), hits %lu\n", o->led_windows, (unsigned long)led_hits);
	report("  inner windows %u (jumps whose window holds a branch to its own instructions,"
	       " led to their copies), hits %lu\n", o->inner_windows, (unsigned long)inner_hits);
	report("  hits %lu (int3 %lu), sites hit %zu of %zu\n", (unsigned long)hits,
	       (unsigned long)int3_hits, hit_sites, o->npoints);
	report("  calls %lu = returns %lu + tail returns %lu + unwound %lu + active at exit %lu"
	       " + lost %lu; unmatched returns %lu; entries into parts %lu; returns through"
	       " another function's site %lu\n",
	       (unsigned long)entries, (unsigned long)returns, (unsigned long)tails,
	       (unsigned long)unwound, (unsigned long)active, (unsigned long)lost,
	       (unsigned long)unmatched, (unsigned long)parts, (unsigned long)foreign);
	for (size_t i = 0; i < o->nfns; i++) {
		const struct pa_fn *f = &pa.fns[o->fn_base + i];
		char name[128];

		if (!f->lost && !f->unmatched)
			continue;
		(*bad_fns)++;
		if (shown++ == REPORT_IMBALANCED)
			continue;
		fn_label(f, name, sizeof(name));
		report("  imbalanced %s: calls %lu returns %lu tail %lu lost %lu unmatched %lu\n",
		       name, (unsigned long)f->entries, (unsigned long)f->returns,
		       (unsigned long)f->tails, (unsigned long)f->lost,
		       (unsigned long)f->unmatched);
	}
	shown = 0;
	for (size_t i = 0; i < o->npoints && shown < REPORT_IMBALANCED; i++) {
		const struct pa_point *pt = &o->points[i];

		if (!pt->unmatched)
			continue;
		shown++;
		report("  unmatched returns at %#lx (%s, %s): %lu of %lu hits\n",
		       (unsigned long)pt->addr, dp_site_method_str(pt->method),
		       dp_reason_name(pt->reason), (unsigned long)pt->unmatched,
		       (unsigned long)pt->hits);
	}
	report_traps(o);
	report_named(o);
	report("  balance: %s\n", lost || unmatched ? "FAILED" : "ok");
}

__attribute__((destructor)) static void pa_fini(void)
{
	uint64_t total = 0, overflow = 0;
	unsigned bad = 0;

	if (!atomic_load(&pa.active) || pa.reported || getpid() != pa.pid)
		return;
	atomic_store(&pa.active, 0);
	pa.reported = true;
	/* Frames still open (exit() from inside main, other threads). */
	for (struct pa_thread *t = atomic_load(&pa.threads); t; t = t->next) {
		for (uint32_t i = 0; i < t->depth; i++)
			pa.fns[t->frames[i].fn].active++;
		overflow += t->overflow;
	}
	report("patchall report, pid %d\n", (int)pa.pid);
	for (size_t i = 0; i < pa.nobjs; i++)
		report_object(&pa.objs[i], &total, &bad);
	report("total hits %lu; traps %lu ours, %lu chained; shadow stack overflow %lu;"
	       " allocation failures %lu\n",
	       (unsigned long)total, (unsigned long)atomic_load(&pa.traps_ours),
	       (unsigned long)atomic_load(&pa.traps_chained), (unsigned long)overflow,
	       (unsigned long)atomic_load(&pa.alloc_failed));
	report("verdict: %s\n", bad ? "FAILED" : "balanced");
}
