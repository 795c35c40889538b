/*
 * Unwinding a held thread with libdw's dwfl unwinder, fed by us (registers
 * from ptrace, memory from /proc/PID/mem), and judging its frames (see
 * stack.h for the rule and why it holds).
 */
#include <elf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/proc-status.h"
#include "proc/ptrace-internal.h"
#include "proc/stack.h"

/* _start is a few dozen bytes; its call of __libc_start_main returns inside. */
#define ENTRY_SPAN 64

struct dp_stack_walker {
	pid_t pid;
	uint64_t entry;			/* AT_ENTRY */
	Dwfl *dwfl;
	/* The walk under way, for the callbacks. */
	struct dp_proc *p;
	pid_t tid;
	struct user_regs_struct regs;
	struct dp_stack *s;
};

/* Only .eh_frame and .dynsym are wanted: no separate debug files, no network. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = no_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct dp_stack_walker *w = arg;

	if (*thread_argp)
		return 0;
	*thread_argp = w;
	return w->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct dp_stack_walker *w = arg;

	*thread_argp = w;
	return tid == w->tid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct dp_stack_walker *w = arg;

	return pread(w->p->mem_fd, result, sizeof(*result), (off_t)addr) == sizeof(*result);
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct user_regs_struct *r = &((struct dp_stack_walker *)arg)->regs;
	/* The DWARF numbering of x86-64; 16 is the return address column. */
	const Dwarf_Word d[17] = {
		r->rax, r->rdx, r->rcx, r->rbx, r->rsi, r->rdi, r->rbp, r->rsp,
		r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15, r->rip,
	};

	return dwfl_thread_state_registers(thread, 0, 17, d);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static uint64_t read_entry(pid_t pid)
{
	uint64_t entry;

	return dp_proc_auxv(pid, AT_ENTRY, &entry) ? 0 : entry;
}

/* The modules as mapped now, and our thread callbacks. */
static int load(struct dp_stack_walker *w, struct dp_err *err)
{
	int ret;

	if (w->dwfl)
		dwfl_end(w->dwfl);
	w->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!w->dwfl)
		return dp_err_set(err, -ENOMEM, "cannot start unwinding: %s", dwfl_errmsg(-1));
	dwfl_report_begin(w->dwfl);
	ret = dwfl_linux_proc_report(w->dwfl, w->pid);
	dwfl_report_end(w->dwfl, NULL, NULL);
	if (ret)
		return dp_err_set(err, ret > 0 ? -ret : -EIO, "cannot read the objects mapped by "
				  "pid %d: %s", (int)w->pid,
				  ret > 0 ? strerror(ret) : dwfl_errmsg(-1));
	if (!dwfl_attach_state(w->dwfl, NULL, w->pid, &thread_callbacks, w))
		return dp_err_set(err, -EIO, "cannot unwind the threads of pid %d: %s",
				  (int)w->pid, dwfl_errmsg(-1));
	return 0;
}

int dp_stack_walker_new(pid_t pid, struct dp_stack_walker **out, struct dp_err *err)
{
	struct dp_stack_walker *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return dp_err_set(err, -ENOMEM, "out of memory");
	w->pid = pid;
	w->entry = read_entry(pid);
	ret = load(w, err);
	if (ret) {
		dp_stack_walker_free(w);
		return ret;
	}
	*out = w;
	return 0;
}

void dp_stack_walker_free(struct dp_stack_walker *w)
{
	if (!w)
		return;
	if (w->dwfl)
		dwfl_end(w->dwfl);
	free(w);
}

static bool is_glibc(const char *base)
{
	static const char *const parts[] = {
		"libc.so", "ld-linux", "ld-2.", "libpthread.so", "libdl.so", "librt.so",
	};

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (!strncmp(base, parts[i], strlen(parts[i])))
			return true;
	return false;
}

/*
 * Frame f at pc (lookup: where its call is): its kind, and where it is.
 * Symbol names are looked up only when `name` is set and for the C library
 * and the entry point (small tables): the first lookup in a big program's
 * table (libpython: tens of thousands of symbols) costs ~100 ms.
 */
static void describe(struct dp_stack_walker *w, uint64_t pc, uint64_t lookup, bool name,
		     struct dp_frame *f)
{
	Dwfl_Module *mod = dwfl_addrmodule(w->dwfl, lookup);
	const char *path, *base, *sym;
	Dwarf_Addr start = 0;
	GElf_Off off = 0;
	GElf_Sym es;

	f->pc = pc;
	if (!mod) {
		f->kind = DP_FRAME_NOWHERE;
		snprintf(f->where, sizeof(f->where), "%#" PRIx64 " (no object)", pc);
		return;
	}
	path = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	base = path && strrchr(path, '/') ? strrchr(path, '/') + 1 : path ? path : "?";
	f->kind = is_glibc(base) ? DP_FRAME_LIBC
		: w->entry && lookup >= w->entry && lookup < w->entry + ENTRY_SPAN
		? DP_FRAME_ENTRY : DP_FRAME_OTHER;
	sym = name || f->kind != DP_FRAME_OTHER
	    ? dwfl_module_addrinfo(mod, lookup, &off, &es, NULL, NULL, NULL) : NULL;
	if (sym)
		snprintf(f->where, sizeof(f->where), "%s+%#" PRIx64 " (%s)", sym,
			 (uint64_t)off + (pc - lookup), base);
	else
		snprintf(f->where, sizeof(f->where), "%s+%#" PRIx64, base, pc - start);
}

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct dp_stack_walker *w = arg;
	struct dp_stack *s = w->s;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation)) {
		snprintf(s->stop, sizeof(s->stop), "%s", dwfl_errmsg(-1));
		return DWARF_CB_ABORT;
	}
	if (s->n == DP_STACK_MAX) {
		snprintf(s->stop, sizeof(s->stop), "deeper than %d frames", DP_STACK_MAX);
		return DWARF_CB_ABORT;
	}
	/* A return address may be the first byte after its function. */
	describe(w, pc, activation ? pc : pc - 1, false, &s->f[s->n++]);
	return DWARF_CB_OK;
}

static void walk_once(struct dp_stack_walker *w, struct dp_stack *s)
{
	int ret;

	s->n = 0;
	s->stop[0] = '\0';
	w->s = s;
	ret = dwfl_getthread_frames(w->dwfl, w->tid, on_frame, w);
	s->complete = ret == 0;
	if (ret == -1 && !s->stop[0])
		snprintf(s->stop, sizeof(s->stop), "%s", dwfl_errmsg(-1));
}

static bool has_nowhere(const struct dp_stack *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->f[i].kind == DP_FRAME_NOWHERE)
			return true;
	return false;
}

int dp_stack_walk(struct dp_stack_walker *w, struct dp_proc *p, pid_t tid, struct dp_stack *s)
{
	int ret = dp_proc_get_regs(p, tid, &w->regs);

	if (ret)
		return ret;
	w->p = p;
	w->tid = tid;
	s->tid = tid;
	walk_once(w, s);
	/* Code in no object we know: something was mapped since (dlopen). */
	if (has_nowhere(s) && !load(w, NULL))
		walk_once(w, s);
	return 0;
}

/* How many outermost frames start the thread (0: not a start we know). */
static size_t start_frames(const struct dp_stack *s, bool main)
{
	const struct dp_frame *f = s->f;
	size_t n = s->n;

	/* The main thread in the program's entry code itself, before it
	 * called the C library: the loader has run and let go of its locks
	 * (a process held at its entry point, proc/child.h). */
	if (main && n == 1 && f[0].kind == DP_FRAME_ENTRY)
		return 1;
	if (n < 2 || f[n - 2].kind != DP_FRAME_LIBC)
		return 0;
	if (main) {
		if (f[n - 1].kind != DP_FRAME_ENTRY ||
		    strncmp(f[n - 2].where, "__libc_start_main", 17))
			return 0;
		/* glibc >= 2.34 calls main (and constructors) one frame further. */
		return n >= 3 && f[n - 3].kind == DP_FRAME_LIBC ? 3 : 2;
	}
	return f[n - 1].kind == DP_FRAME_LIBC ? 2 : 0;
}

int dp_stack_lock_free(const struct dp_stack *s, bool main, struct dp_err *why)
{
	size_t start;

	if (!s->complete)
		return dp_err_set(why, -EBUSY, "its stack cannot be walked past %s (%s)",
				  s->n ? s->f[s->n - 1].where : "its first frame",
				  s->stop[0] ? s->stop : "no frame information");
	for (size_t i = 0; i < s->n; i++)
		if (s->f[i].kind == DP_FRAME_NOWHERE)
			return dp_err_set(why, -EBUSY, "frame %zu runs code in no mapped file "
					  "(%s)", i, s->f[i].where);
	start = start_frames(s, main);
	if (!start)
		return dp_err_set(why, -EBUSY, "its outermost frame %s is not where a %s starts",
				  s->n ? s->f[s->n - 1].where : "?",
				  main ? "program (_start, __libc_start_main)"
				       : "thread (clone, start_thread)");
	for (size_t i = 0; i + start < s->n; i++)
		if (s->f[i].kind == DP_FRAME_LIBC)
			return dp_err_set(why, -EBUSY, "it is inside the C library (frame %zu, "
					  "%s)", i, s->f[i].where);
	return 0;
}

void dp_stack_format(const struct dp_stack *s, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < s->n && used + 1 < len; i++) {
		int k = snprintf(buf + used, len - used, "%s%s", i ? " <- " : "", s->f[i].where);

		if (k < 0)
			break;
		used += (size_t)k;
	}
	if (used >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

void dp_stack_name(struct dp_stack_walker *w, struct dp_stack *s)
{
	for (size_t i = 0; i < s->n; i++)
		describe(w, s->f[i].pc, i ? s->f[i].pc - 1 : s->f[i].pc, true, &s->f[i]);
}
