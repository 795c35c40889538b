/*
 * Loading the agent into a running process (see inject.h for the protocol
 * and why it holds no lock): choosing the host thread, the new thread's code
 * and data, and the exchange with it once we have detached.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"
#include "proc/dynsym.h"
#include "proc/inject.h"
#include "proc/maps.h"
#include "proc/proc-status.h"
#include "proc/ptrace-internal.h"
#include "proc/remote.h"
#include "proc/stack.h"

#define PAGE 4096

/* The data page, shared with the code below: offsets in bytes. */
enum {
	D_DONE = 0x00,		/* the new thread sets it to 1 when it has reported */
	D_ACK = 0x08,		/* we set it once the report is read: it may unmap */
	D_HANDLE = 0x10,	/* dlopen()'s result */
	D_ENV_SET = 0x18,	/* the new thread set the variable (and unsets it) */
	D_ENV_ON = 0x20,	/* set the variable if absent */
	D_FLAGS = 0x28,		/* dlopen flags */
	D_ALLMASK = 0x30,	/* every signal, for rt_sigprocmask */
	D_TIMEOUT = 0x38,	/* struct timespec of one wait for D_ACK */
	D_CODE = 0x48,		/* the code page, unmapped last */
	F_DLOPEN = 0x50,
	F_DLERROR = 0x58,
	F_GETENV = 0x60,
	F_SETENV = 0x68,
	F_UNSETENV = 0x70,
	F_PT_SELF = 0x78,
	F_PT_DETACH = 0x80,
	F_MUNMAP = 0x88,
	D_WAIT_ROUNDS = 0x90,	/* waits for D_ACK before unmapping anyway */
	D_THREAD = 0x98,	/* pthread_create()'s pthread_t */
	D_TID = 0xa0,		/* the new thread's id, its first deed (32 bits) */
	D_ENV_NAME = 0xc0,
	D_ENV_VALUE = 0x100,
	D_PATH = 0x180,
	D_PATH_MAX = 0xa00 - 0x180,
	D_ERROR = 0xa00,	/* dlerror(), up to 0x5ff bytes and a NUL */
};

#define ACK_WAIT_NS 10000000	/* 10 ms a round, 500 rounds: 5 s */
#define ACK_WAIT_ROUNDS 500

/*
 * The new thread's start routine, void *(void *data), position independent:
 * everything it needs comes from the data page (rbx).  It is kept as bytes
 * (no assembler step in the build); the assembly, Intel syntax:
 *
 *   push rbx; push r12; push r13; mov rbx, rdi      ; 16-byte aligned stack
 *   D_TID = gettid()                                 ; (raw syscall) whose
 *                 ; progress the wait for the report watches
 *   rt_sigprocmask(SIG_BLOCK, &D_ALLMASK, NULL, 8)   ; signals go elsewhere
 *   pthread_detach(pthread_self())                   ; nobody joins it
 *   if (D_ENV_ON && !getenv(NAME) && !setenv(NAME, VALUE, 0)) D_ENV_SET = 1
 *   D_HANDLE = dlopen(D_PATH, D_FLAGS)
 *   if (!D_HANDLE && (e = dlerror())) copy e into D_ERROR (0x5ff bytes at most)
 *   if (D_ENV_SET) unsetenv(NAME)
 *   D_DONE = 1
 *   for (n = D_WAIT_ROUNDS; !D_ACK && n; n--) futex(&D_ACK, FUTEX_WAIT, 0, &D_TIMEOUT)
 *   r10 = F_MUNMAP; r13 = D_CODE; munmap(data, 4096) (raw syscall, which
 *                 ; clobbers rcx and r11 but keeps r10)
 *   pop r13; pop r12; pop rbx; jmp r10 with (code, 4096)
 *                 ; libc's munmap frees the code page and returns for us
 * followed by an int3, where pthread_create() returns in the remote call.
 */
static const uint8_t stub[] = {
	0x53, 0x41, 0x54, 0x41, 0x55, 0x48, 0x89, 0xfb,			/* 0x000 */
	0xb8, 0xba, 0x00, 0x00, 0x00, 0x0f, 0x05, 0x89,
	0x83, 0xa0, 0x00, 0x00, 0x00, 0x31, 0xff, 0x48,			/* 0x010 */
	0x8d, 0x73, 0x30, 0x31, 0xd2, 0x41, 0xba, 0x08,
	0x00, 0x00, 0x00, 0xb8, 0x0e, 0x00, 0x00, 0x00,			/* 0x020 */
	0x0f, 0x05, 0xff, 0x53, 0x78, 0x48, 0x89, 0xc7,
	0xff, 0x93, 0x80, 0x00, 0x00, 0x00, 0x48, 0x83,			/* 0x030 */
	0x7b, 0x20, 0x00, 0x74, 0x2e, 0x48, 0x8d, 0xbb,
	0xc0, 0x00, 0x00, 0x00, 0xff, 0x53, 0x60, 0x48,			/* 0x040 */
	0x85, 0xc0, 0x75, 0x1f, 0x48, 0x8d, 0xbb, 0xc0,
	0x00, 0x00, 0x00, 0x48, 0x8d, 0xb3, 0x00, 0x01,			/* 0x050 */
	0x00, 0x00, 0x31, 0xd2, 0xff, 0x53, 0x68, 0x85,
	0xc0, 0x75, 0x08, 0x48, 0xc7, 0x43, 0x18, 0x01,			/* 0x060 */
	0x00, 0x00, 0x00, 0x48, 0x8d, 0xbb, 0x80, 0x01,
	0x00, 0x00, 0x8b, 0x73, 0x28, 0xff, 0x53, 0x50,			/* 0x070 */
	0x48, 0x89, 0x43, 0x10, 0x48, 0x85, 0xc0, 0x75,
	0x29, 0xff, 0x53, 0x58, 0x48, 0x85, 0xc0, 0x74,			/* 0x080 */
	0x21, 0x48, 0x8d, 0xbb, 0x00, 0x0a, 0x00, 0x00,
	0xb9, 0xff, 0x05, 0x00, 0x00, 0x8a, 0x10, 0x84,			/* 0x090 */
	0xd2, 0x74, 0x0c, 0x88, 0x17, 0x48, 0xff, 0xc0,
	0x48, 0xff, 0xc7, 0xff, 0xc9, 0x75, 0xee, 0xc6,			/* 0x0a0 */
	0x07, 0x00, 0x48, 0x83, 0x7b, 0x18, 0x00, 0x74,
	0x0a, 0x48, 0x8d, 0xbb, 0xc0, 0x00, 0x00, 0x00,			/* 0x0b0 */
	0xff, 0x53, 0x70, 0x48, 0xc7, 0x03, 0x01, 0x00,
	0x00, 0x00, 0x44, 0x8b, 0xa3, 0x90, 0x00, 0x00,			/* 0x0c0 */
	0x00, 0x48, 0x83, 0x7b, 0x08, 0x00, 0x75, 0x1e,
	0x48, 0x8d, 0x7b, 0x08, 0x31, 0xf6, 0x31, 0xd2,			/* 0x0d0 */
	0x4c, 0x8d, 0x53, 0x38, 0x45, 0x31, 0xc0, 0x45,
	0x31, 0xc9, 0xb8, 0xca, 0x00, 0x00, 0x00, 0x0f,			/* 0x0e0 */
	0x05, 0x41, 0xff, 0xcc, 0x75, 0xdb, 0x4c, 0x8b,
	0x93, 0x88, 0x00, 0x00, 0x00, 0x4c, 0x8b, 0x6b,			/* 0x0f0 */
	0x48, 0x48, 0x89, 0xdf, 0xbe, 0x00, 0x10, 0x00,
	0x00, 0xb8, 0x0b, 0x00, 0x00, 0x00, 0x0f, 0x05,			/* 0x100 */
	0x4c, 0x89, 0xef, 0xbe, 0x00, 0x10, 0x00, 0x00,
	0x41, 0x5d, 0x41, 0x5c, 0x5b, 0x41, 0xff, 0xe2,			/* 0x110 */
	0xcc,								/* 0x118: trap */
};
#define STUB_TRAP 0x118

_Static_assert(sizeof(stub) == STUB_TRAP + 1, "the trap ends the stub");

_Static_assert(D_ENV_VALUE - D_ENV_NAME == DP_INJECT_ENV_NAME_MAX &&
	       D_PATH - D_ENV_VALUE == DP_INJECT_ENV_VALUE_MAX, "the page holds the variable");

void dp_inject_opts_init(struct dp_inject_opts *o)
{
	o->env_name = NULL;
	o->env_value = NULL;
	o->load_timeout_ms = 10000;
	o->load_cap_ms = 120000;
	o->catch_ms = 1000;
	o->call_timeout_ms = 5000;
}

/*
 * System calls a thread sleeps in without holding a lock of glibc's: glibc
 * never blocks in them with a malloc arena, the thread-stack cache, the TLS
 * or the loader lock held (the loader's own reads are issued from ld.so,
 * which host_ok() excludes).  Not futex (a lock wait), not write (stdio
 * writes under the FILE lock, malloc_stats() under the arena lock), not
 * restart_syscall (which call it resumes is not known).
 */
static bool sleeping_syscall(uint64_t nr)
{
	switch (nr) {
	case SYS_read: case SYS_readv: case SYS_pread64: case SYS_preadv: case SYS_preadv2:
	case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg:
	case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6:
	case SYS_epoll_wait: case SYS_epoll_pwait: case SYS_epoll_pwait2:
	case SYS_nanosleep: case SYS_clock_nanosleep: case SYS_pause:
	case SYS_accept: case SYS_accept4: case SYS_wait4: case SYS_waitid:
	case SYS_rt_sigsuspend: case SYS_rt_sigtimedwait: case SYS_msgrcv:
	case SYS_io_getevents:
		return true;
	default:
		return false;
	}
}

/* The syscall instruction ending at `ret_addr` was not issued by the loader. */
static bool outside_loader(const struct dp_maps *maps, uint64_t ret_addr)
{
	const struct dp_map *m = dp_maps_find(maps, ret_addr - 2);

	return m && !dp_map_is_named(m, "ld-");
}

static pid_t find_host(struct dp_proc *p, const struct dp_maps *maps)
{
	for (size_t i = 0; i < p->n; i++) {
		struct user_regs_struct r;

		if (p->t[i].stop != DP_STOP_INTERRUPT ||
		    dp_proc_get_regs(p, p->t[i].tid, &r))
			continue;
		/* Sleeping (our interrupt made the kernel plan a restart) in such a call. */
		if (dp_regs_restarts(&r) && sleeping_syscall(r.orig_rax) &&
		    outside_loader(maps, r.rip))
			return p->t[i].tid;
	}
	return 0;
}

struct catch_ctx {
	const struct dp_maps *maps;
	pid_t host;
};

static bool catch_cb(struct dp_proc *p, pid_t tid, void *arg)
{
	struct catch_ctx *c = arg;
	struct __ptrace_syscall_info info;

	if (c->host)
		return false;
	memset(&info, 0, sizeof(info));
	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(info), &info) <= 0 ||
	    info.op != PTRACE_SYSCALL_INFO_ENTRY || !sleeping_syscall(info.entry.nr) ||
	    !outside_loader(c->maps, info.instruction_pointer))
		return false;
	c->host = tid;
	return true;
}

/*
 * No thread sleeps at a safe point: let them run under PTRACE_SYSCALL for
 * up to ms and take the first that enters a sleeping call, before the call
 * runs.  The call is cancelled (orig_rax -1) and the thread left at the
 * syscall instruction with its number in rax, to issue it again when it
 * resumes.  Every thread is held again after; *host is 0 when none entered.
 */
static int catch_slice(struct dp_proc *p, const struct dp_maps *maps, int ms, pid_t *host)
{
	struct catch_ctx ctx = { maps, 0 };
	uint64_t deadline = dp_now_ns() + (uint64_t)ms * 1000000ull;
	struct dp_deadline back;
	struct user_regs_struct e, r;
	struct dp_thread *t;
	enum dp_event ev;
	int sig, ret = 0;

	p->on_syscall = catch_cb;
	p->on_syscall_arg = &ctx;
	for (size_t i = 0; i < p->n; i++) {
		t = &p->t[i];
		t->flags |= T_CATCH | T_WANT_RUN;
		if (t->stop == DP_STOP_GROUP)
			ptrace(PTRACE_LISTEN, t->tid, 0, 0);
		else if (t->stop != DP_STOP_NONE)
			ptrace(PTRACE_SYSCALL, t->tid, 0,
			       (void *)(long)(t->stop == DP_STOP_SIGNAL ? t->signal : 0));
		t->stop = DP_STOP_NONE;
		t->signal = 0;
	}
	dp__hold_ends(p);
	while (!ctx.host && dp_now_ns() < deadline && !p->gone) {
		if (!dp__pump(p)) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
		}
	}
	p->on_syscall = NULL;
	for (size_t i = 0; i < p->n; i++)
		p->t[i].flags &= ~T_CATCH;
	ret = dp_proc_stop(p);
	if (ret)
		return ret;
	*host = 0;
	if (!ctx.host)
		return 0;
	t = dp__thread(p, ctx.host);
	if (!t)
		return dp_err_set(&p->err, -ESRCH, "thread %d of pid %d exited", (int)ctx.host,
				  (int)p->pid);
	ret = dp_proc_get_regs(p, ctx.host, &e);
	if (ret)
		return ret;
	r = e;
	r.orig_rax = (uint64_t)-1;	/* the kernel skips the call */
	ret = dp_proc_set_regs(p, ctx.host, &r);
	if (ret)
		return ret;
	t->flags |= T_OWNED;
	t->stop = DP_STOP_NONE;
	ptrace(PTRACE_SYSCALL, ctx.host, 0, 0);
	dp_deadline_start(&back, p->timeout_ms, NULL);
	ret = dp__wait_owned(p, ctx.host, &back, &ev, &sig);
	if (ret <= 0 || ev != EV_SYSCALL)
		return dp_err_set(&p->err, ret < 0 ? ret : -EPROTO, "thread %d of pid %d did not "
				  "come back from a skipped system call", (int)ctx.host,
				  (int)p->pid);
	r = e;
	r.rip -= 2;
	r.rax = e.orig_rax;
	r.orig_rax = (uint64_t)-1;
	ptrace(PTRACE_SETREGS, ctx.host, 0, &r);
	ptrace(PTRACE_INTERRUPT, ctx.host, 0, 0);
	ptrace(PTRACE_CONT, ctx.host, 0, 0);
	t = dp__thread(p, ctx.host);
	t->flags = (t->flags & ~(T_OWNED | T_AT_SYSCALL)) | T_INTERRUPTED;
	ret = dp__hold_thread(p, ctx.host);
	if (!ret)
		*host = ctx.host;
	return ret;
}

/* The threads looked at while searching for a host in user code. */
struct quiet {
	struct dp_stack_walker *w;
	bool no_walker;			/* libdw could not be set up: catch only */
	unsigned int looks, in_libc;
	bool found;			/* last is the host's stack */
	struct dp_stack *last;		/* the last stack refused, and why */
	struct dp_err why;
};

/*
 * A thread held in user code whose stack shows no C library frame but its
 * start frames (stack.h): it holds no C library lock, so pthread_create()
 * may run on it.  *host is 0 when no thread is at such a point now.
 */
static int find_quiet(struct dp_proc *p, struct quiet *q, pid_t *host)
{
	*host = 0;
	if (q->no_walker)
		return 0;
	if (!q->w && dp_stack_walker_new(p->pid, &q->w, &q->why)) {
		q->no_walker = true;
		return 0;
	}
	for (size_t i = 0; i < p->n; i++) {
		pid_t tid = p->t[i].tid;

		if (p->t[i].stop != DP_STOP_INTERRUPT || dp_stack_walk(q->w, p, tid, q->last))
			continue;
		q->looks++;
		if (!dp_stack_lock_free(q->last, tid == p->pid, &q->why)) {
			*host = tid;
			q->found = true;
			return 0;
		}
		q->in_libc += strstr(q->why.msg, "inside the C library") != NULL;
	}
	return 0;
}

static int refuse_busy(struct dp_proc *p, const struct quiet *q, int ms, unsigned int rounds)
{
	char frames[400] = "";

	if (q->no_walker)
		return dp_err_set(&p->err, -DP_INJECT_ENOHOST, "no thread of pid %d sleeps in, or "
				  "entered within %d ms, a blocking system call (read, poll, "
				  "epoll_wait, nanosleep...), and its stacks cannot be walked (%s): "
				  "the agent cannot be loaded safely now; start the program with "
				  "LD_PRELOAD of the agent instead", (int)p->pid, ms, q->why.msg);
	if (q->last->n) {
		dp_stack_name(q->w, q->last);
		dp_stack_format(q->last, frames, sizeof(frames));
	}
	return dp_err_set(&p->err, -DP_INJECT_ENOHOST, "no thread of pid %d sleeps in a blocking "
			  "system call (read, poll, nanosleep...) or stopped outside the C library "
			  "within %d ms (%u rounds, %u stacks walked, %u inside the C library); the "
			  "last, thread %d: %s [%s]: the agent cannot be loaded safely now; start "
			  "the program with LD_PRELOAD of the agent instead", (int)p->pid, ms,
			  rounds, q->looks, q->in_libc, (int)q->last->tid, q->why.msg, frames);
}

/*
 * A host thread for pthread_create(), when none sleeps in a blocking call:
 * a thread stopped where it holds no C library lock, else let the threads
 * run a few milliseconds (catching one that enters a blocking call
 * meanwhile) and look again, until ms have passed.  The run lengths vary,
 * so that a program whose loop has a period is not always stopped in the
 * same phase of it.  A round (every thread stopped and looked at, then a
 * run) can take much of ms on a loaded machine, where the threads wait for
 * a CPU: the search goes on past ms until it made WAIT_HOST_ROUNDS rounds,
 * up to WAIT_HOST_CAP times ms in all.
 */
#define WAIT_HOST_ROUNDS 16
#define WAIT_HOST_CAP 10

static int wait_host(struct dp_proc *p, const struct dp_maps *maps, int ms, pid_t *host,
		     struct dp_inject_result *r)
{
	uint64_t start = dp_now_ns();
	struct dp_deadline deadline, cap;
	unsigned int seed = (unsigned int)start ^ (unsigned int)p->pid;
	struct quiet q = { .why = DP_ERR_INIT };
	unsigned int rounds = 0;
	int ret;

	q.last = calloc(1, sizeof(*q.last));
	if (!q.last)
		return dp_err_set(&p->err, -ENOMEM, "out of memory");
	dp_deadline_start(&cap, ms * WAIT_HOST_CAP, NULL);
	dp_deadline_start(&deadline, ms, &cap);
	for (;;) {
		/* A look at every thread's stack is work, however long: only
		 * the slices the threads run (catch_slice) may be a stop,
		 * seen before the look begins. */
		dp_deadline_left(&deadline);
		ret = find_quiet(p, &q, host);
		dp_deadline_charge(&deadline);
		rounds++;
		if (ret || *host)
			break;
		if (dp_deadline_passed(&cap) ||
		    (dp_deadline_passed(&deadline) && rounds >= WAIT_HOST_ROUNDS))
			break;
		{
			int left = 1 + dp_deadline_left(dp_deadline_passed(&deadline) ? &cap : &deadline);
			int slice = 1 + rand_r(&seed) % 8;

			ret = catch_slice(p, maps, slice < left ? slice : left, host);
		}
		if (ret || *host)
			break;
	}
	if (!ret && !*host)
		ret = refuse_busy(p, &q, (int)((dp_now_ns() - start) / 1000000ull), rounds);
	r->stacks_walked = q.looks;
	r->stacks_refused = q.looks - q.found;
	if (q.found && q.last->n)
		snprintf(r->host_frame, sizeof(r->host_frame), "%s", q.last->f[0].where);
	dp_stack_walker_free(q.w);
	free(q.last);
	return ret;
}

int dp_proc_dynsym(pid_t pid, const char *lib, const char *sym, uint64_t *addr)
{
	struct dp_maps maps;
	int ret = dp_maps_read(pid, &maps);

	if (ret)
		return ret;
	ret = dp_maps_dynsyms(pid, &maps, lib, &sym, 1, addr);
	dp_maps_free(&maps);
	return ret;
}

static void put64(uint8_t *page, unsigned int off, uint64_t v)
{
	memcpy(page + off, &v, sizeof(v));
}

static uint64_t get64(const uint8_t *page, unsigned int off)
{
	uint64_t v;

	memcpy(&v, page + off, sizeof(v));
	return v;
}

struct syms {
	uint64_t dlopen, dlerror, getenv, setenv, unsetenv, self, detach, munmap, create;
	uint64_t errno_loc;
};

static int resolve(pid_t pid, const struct dp_maps *maps, struct syms *s, struct dp_err *err)
{
	static const char *const libc_names[] = {
		"dlopen", "dlerror", "getenv", "setenv", "unsetenv", "pthread_self",
		"pthread_detach", "munmap", "pthread_create", "__errno_location",
	};
	uint64_t a[10];
	int ret;

	if (!dp_maps_find_object(maps, "libc.so.6"))
		return dp_err_set(err, -DP_INJECT_ENOLIBC,
			     "pid %d does not use glibc (no libc.so.6 is mapped): the agent can "
			     "only be loaded into glibc programs", (int)pid);
	ret = dp_maps_dynsyms(pid, maps, "libc.so.6", libc_names, 10, a);
	if (ret && ret != -ENOENT)
		return dp_err_set(err, ret, "cannot read the symbols of libc.so.6 of pid %d: %s",
			     (int)pid, ret == -ESTALE ? "the file on disk is no longer the one "
			     "mapped (upgraded since the program started?)" : strerror(-ret));
	/* glibc < 2.34 keeps these in libdl and libpthread. */
	if (!a[0] || !a[1]) {
		static const char *const dl[] = { "dlopen", "dlerror" };

		dp_maps_dynsyms(pid, maps, "libdl.so.2", dl, 2, a);
	}
	if (!a[5] || !a[6] || !a[8]) {
		static const char *const pt[] = { "pthread_self", "pthread_detach",
						  "pthread_create" };
		uint64_t b[3];

		if (!dp_maps_dynsyms(pid, maps, "libpthread.so.0", pt, 3, b)) {
			a[5] = b[0];
			a[6] = b[1];
			a[8] = b[2];
		}
	}
	for (int i = 0; i < 10; i++)
		if (!a[i])
			return dp_err_set(err, -DP_INJECT_ENOLIBC,
				     "pid %d has no %s: its glibc is older than 2.34 and it does "
				     "not link %s, so the agent cannot be loaded into it",
				     (int)pid, libc_names[i],
				     i < 2 ? "libdl.so.2" : "libpthread.so.0");
	s->dlopen = a[0];
	s->dlerror = a[1];
	s->getenv = a[2];
	s->setenv = a[3];
	s->unsetenv = a[4];
	s->self = a[5];
	s->detach = a[6];
	s->munmap = a[7];
	s->create = a[8];
	s->errno_loc = a[9];
	return 0;
}

/* Checks that need no attach; 1 when the agent is there already. */
static int preflight(pid_t pid, const char *path, const struct stat *agent,
		     const struct dp_maps *maps, struct dp_err *err)
{
	char name[64], root[4200];
	struct stat sb;

	dp_proc_comm(pid, name, sizeof(name));
	for (size_t i = 0; i < maps->n; i++) {
		const struct dp_map *m = &maps->v[i];

		if (m->inode == agent->st_ino && m->dev_major == major(agent->st_dev) &&
		    m->dev_minor == minor(agent->st_dev))
		{
			/* Not a failure: the words say so, the code stays 0. */
			dp_err_set(err, 0, "pid %d (%s) has the agent loaded already", (int)pid,
				   name);
			return DP_INJECT_ALREADY;
		}
	}
	if (dp_maps_find_object(maps, "liblttng-ust.so.0"))
		return dp_err_set(err, -DP_INJECT_EUST0, "pid %d (%s) has liblttng-ust.so.0 "
				  "(lttng-ust 2.12 or older) loaded, and the agent needs "
				  "liblttng-ust.so.1: both cannot live in one process; rebuild or "
				  "restart the program with lttng-ust 2.13", (int)pid, name);
	/* The target opens the path in its own mount namespace and root. */
	snprintf(root, sizeof(root), "/proc/%d/root%s", (int)pid, path);
	if (stat(root, &sb) == 0 ? sb.st_ino != agent->st_ino || sb.st_dev != agent->st_dev
				 : errno == ENOENT || errno == ENOTDIR)
		return dp_err_set(err, -ENOENT,
			     "the agent %s is not the same file inside pid %d (%s), which runs in "
			     "another mount namespace or root: make the agent visible there under "
			     "the same path", path, (int)pid, name);
	return 0;
}

static int write_pages(struct dp_proc *p, uint64_t data, uint64_t code, const struct syms *s,
		       const char *path, const struct dp_inject_opts *o)
{
	uint8_t page[PAGE];
	int ret;

	memset(page, 0, sizeof(page));
	put64(page, D_ENV_ON, o->env_name != NULL);
	put64(page, D_FLAGS, RTLD_NOW);
	put64(page, D_ALLMASK, ~0ull);
	put64(page, D_TIMEOUT, 0);
	put64(page, D_TIMEOUT + 8, ACK_WAIT_NS);
	put64(page, D_CODE, code);
	put64(page, F_DLOPEN, s->dlopen);
	put64(page, F_DLERROR, s->dlerror);
	put64(page, F_GETENV, s->getenv);
	put64(page, F_SETENV, s->setenv);
	put64(page, F_UNSETENV, s->unsetenv);
	put64(page, F_PT_SELF, s->self);
	put64(page, F_PT_DETACH, s->detach);
	put64(page, F_MUNMAP, s->munmap);
	put64(page, D_WAIT_ROUNDS, ACK_WAIT_ROUNDS);
	if (o->env_name) {
		memcpy(page + D_ENV_NAME, o->env_name, strlen(o->env_name) + 1);
		memcpy(page + D_ENV_VALUE, o->env_value, strlen(o->env_value) + 1);
	}
	memcpy(page + D_PATH, path, strlen(path) + 1);
	ret = dp_proc_write(p, data, page, sizeof(page));
	if (!ret)
		ret = dp_proc_write(p, code, stub, sizeof(stub));
	return ret;
}

/*
 * The host's errno, read before pthread_create() runs on it and written back
 * after: a host stopped in user code may be about to read it, and nothing
 * promises that a successful pthread_create() leaves it alone.
 */
static int errno_find(struct dp_proc *p, pid_t host, const struct syms *s, uint64_t code,
		      int timeout_ms, uint64_t *at, int32_t *val)
{
	struct dp_remote_call call = {
		.fn = s->errno_loc,
		.trap = code + STUB_TRAP,
		.timeout_ms = timeout_ms,
	};
	int ret = dp_remote_call(p, host, &call, at);

	if (!ret)
		ret = dp_proc_read(p, *at, val, sizeof(*val));
	return ret;
}

int dp_proc_thread_work(pid_t pid, pid_t tid, char *state, uint64_t *work)
{
	char path[64], line[1024], *p;
	unsigned long long v[13];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	line[n] = '\0';
	/* After the name (which may hold anything): state ppid pgrp session
	 * tty tpgid flags minflt cminflt majflt cmajflt utime stime. */
	p = strrchr(line, ')');
	if (!p || sscanf(p + 1, " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			 state, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
			 &v[9], &v[10], &v[11]) != 13)
		return -EIO;
	*work = v[6] + v[8] + v[10] + v[11];
	return 0;
}

/* Where a thread that does no work waits, in words, into buf. */
static void thread_wait_words(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64], line[128];
	ssize_t n = -1;
	long nr;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
	}
	if (n > 0)
		line[n] = '\0';
	if (n <= 0 || sscanf(line, "%ld", &nr) != 1)
		snprintf(buf, len, "waits");
	else if (nr == SYS_futex)
		snprintf(buf, len, "waits on a lock (futex): the loader lock held by another "
			 "thread?");
	else
		snprintf(buf, len, "waits in system call %ld: lttng-ust waiting for the session "
			 "daemon?", nr);
}

/*
 * Polls the data page through our own descriptor until the new thread
 * reports.  The bound is about progress, not time: a load slowed down by a
 * busy machine goes on while the thread works (its CPU time or page faults
 * grow, or it is runnable), and fails once it did nothing for idle_ms (it
 * waits for a lock, or for a peer), or after cap_ms in all.  -ETIMEDOUT
 * with why (which of the two, where it waits).
 */
static int wait_report(int fd, pid_t pid, uint64_t data, int idle_ms, int cap_ms,
		       uint8_t *page, char *why, size_t whylen)
{
	uint64_t start = dp_now_ns(), now, seen = 0, next_look = 0;
	/* Neither counts the time this process could not run (deadline.h). */
	struct dp_deadline cap, idle;
	bool known = false;
	pid_t tid = 0;

	dp_deadline_start(&cap, cap_ms, NULL);
	dp_deadline_start(&idle, idle_ms, NULL);
	for (;;) {
		if (pread(fd, page, PAGE, (off_t)data) != PAGE)
			return -ESRCH;
		if (get64(page, D_DONE))
			return 0;
		now = dp_now_ns();
		/* Ten looks a second at the thread: its counts move by ticks. */
		if (now >= next_look) {
			uint64_t work;
			char st;

			next_look = now + 100000000ull;
			if (!tid)
				memcpy(&tid, page + D_TID, sizeof(tid));
			if (tid > 0 && !dp_proc_thread_work(pid, tid, &st, &work)) {
				if (!known || work != seen || st == 'R' || st == 'D')
					dp_deadline_start(&idle, idle_ms, NULL);
				known = true;
				seen = work;
			}
		}
		if (dp_deadline_passed(&cap)) {
			snprintf(why, whylen, "has not finished after %d ms, its thread working "
				 "all along", cap_ms);
			return -ETIMEDOUT;
		}
		if (dp_deadline_passed(&idle)) {
			char where[128];

			if (tid > 0)
				thread_wait_words(pid, tid, where, sizeof(where));
			else
				snprintf(where, sizeof(where), "never started");
			snprintf(why, whylen, "has made no progress for %d ms (after %.0f ms): its "
				 "thread %d %s", idle_ms, (double)(now - start) / 1e6, (int)tid,
				 where);
			return -ETIMEDOUT;
		}
		struct timespec ts = { 0, 500000 };

		nanosleep(&ts, NULL);
	}
}

/*
 * The new thread, found by what it waits on: once it has reported it sleeps
 * in futex(D_ACK) (a round at a time, between them it runs), and
 * /proc/PID/task/TID/syscall names that call and its first argument.  0
 * when no thread is seen there within ms.
 */
static pid_t find_waiter(pid_t pid, uint64_t data, int ms)
{
	struct dp_deadline deadline;
	char want[48];
	size_t wlen;

	wlen = (size_t)snprintf(want, sizeof(want), "%d 0x%" PRIx64 " ", SYS_futex,
				data + D_ACK);
	dp_deadline_start(&deadline, ms, NULL);
	for (;;) {
		pid_t *tids, found = 0;
		size_t n = 0;

		if (dp_proc_tasks(pid, &tids, &n))
			return 0;
		for (size_t i = 0; i < n && !found; i++) {
			char path[64], line[256];
			ssize_t len;
			int fd;

			snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid,
				 (int)tids[i]);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			len = read(fd, line, sizeof(line) - 1);
			close(fd);
			if (len > 0 && (size_t)len > wlen && !memcmp(line, want, wlen))
				found = tids[i];
		}
		free(tids);
		if (found || !n || dp_deadline_passed(&deadline))
			return found;
		struct timespec ts = { 0, 500000 };

		nanosleep(&ts, NULL);
	}
}

/* Waits (ms at most) until thread tid of pid has ended: whoever looks at
 * the threads next (an install checking signal masks) never sees it, with
 * every signal blocked, on its way out. */
static void wait_gone(pid_t pid, pid_t tid, int ms)
{
	struct dp_deadline deadline;

	dp_deadline_start(&deadline, ms, NULL);
	for (;;) {
		if ((syscall(SYS_tgkill, pid, tid, 0) && errno == ESRCH) ||
		    dp_deadline_passed(&deadline))
			return;
		struct timespec ts = { 0, 500000 };

		nanosleep(&ts, NULL);
	}
}

int dp_inject_agent(pid_t pid, const char *path, const struct dp_inject_opts *opts,
		    struct dp_inject_result *res, struct dp_err *err)
{
	uint64_t t0 = dp_now_ns(), data = 0, code = 0, ret_val = 0, t_detach;
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct dp_maps maps = { 0 };
	struct dp_proc_status st;
	struct dp_proc *p = NULL;
	struct stat agent;
	struct syms s = { 0 };
	uint8_t page[PAGE];
	bool created = false;
	pid_t host = 0;
	uint64_t errno_at = 0;
	int32_t errno_val = 0;
	int ret, fd = -1;

	memset(&r, 0, sizeof(r));
	if (opts)
		o = *opts;
	else
		dp_inject_opts_init(&o);
	if (!path || path[0] != '/')
		return dp_err_set(err, -EINVAL, "the agent path must be absolute, not \"%s\"",
			     path ? path : "");
	if (strlen(path) >= D_PATH_MAX)
		return dp_err_set(err, -ENAMETOOLONG, "the agent path is too long");
	if (o.env_name && (!*o.env_name || strchr(o.env_name, '=') || !o.env_value ||
			   strlen(o.env_name) >= DP_INJECT_ENV_NAME_MAX ||
			   strlen(o.env_value) >= DP_INJECT_ENV_VALUE_MAX))
		return dp_err_set(err, -EINVAL, "the variable to set for the load must be a name "
			     "of 1 to %d bytes without '=' and a value of at most %d bytes",
			     DP_INJECT_ENV_NAME_MAX - 1, DP_INJECT_ENV_VALUE_MAX - 1);
	if (stat(path, &agent))
		return dp_err_set(err, -errno, "cannot use the agent %s: %s", path,
				  strerror(errno));
	ret = dp_proc_check(pid, 0, err);
	if (ret)
		return ret;
	if (!dp_proc_status_read(pid, 0, &st) && st.state == 'T')
		return dp_err_set(err, -DP_INJECT_ESTOPPED,
			     "pid %d (%s) is stopped (job control): continue it (SIGCONT) before "
			     "loading the agent", (int)pid, st.name);
	ret = dp_maps_read(pid, &maps);
	if (ret) {
		ret = ret == -EACCES || ret == -EPERM ? dp_proc_explain_eperm(pid, 0, err)
						      : dp_err_set(err, ret, "cannot read the "
							      "mappings of pid %d: %s", (int)pid,
							      strerror(-ret));
		goto out;
	}
	ret = preflight(pid, path, &agent, &maps, err);
	if (!ret)
		ret = resolve(pid, &maps, &s, err);
	if (ret)
		goto out;

	p = dp_proc_open(pid);
	if (!p) {
		ret = dp_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	ret = dp_proc_attach(p, 0);
	if (ret)
		goto fail;
	host = find_host(p, &maps);
	if (!host)
		ret = wait_host(p, &maps, o.catch_ms, &host, &r);
	r.find_ns = dp_now_ns() - t0;
	if (!ret)
		ret = dp_remote_mmap(p, host, 0, PAGE, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &data);
	/* Code: mapped read-execute and filled by the kernel's forced write. */
	if (!ret)
		ret = dp_remote_mmap(p, host, 0, PAGE, PROT_READ | PROT_EXEC,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &code);
	if (!ret)
		ret = write_pages(p, data, code, &s, path, &o);
	if (!ret) {
		char mem[64];

		snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
		fd = open(mem, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			ret = dp_err_set(&p->err, -errno, "cannot open %s: %s", mem,
					 strerror(errno));
	}
	if (!ret)
		ret = errno_find(p, host, &s, code, o.call_timeout_ms, &errno_at, &errno_val);
	if (!ret) {
		struct dp_remote_call call = {
			.fn = s.create,
			.args = { data + D_THREAD, 0, code, data },
			.trap = code + STUB_TRAP,
			.timeout_ms = o.call_timeout_ms,
			.run_others = true,
		};

		ret = dp_remote_call(p, host, &call, &ret_val);
		if (ret == -ETIMEDOUT) {
			/* It may have created the thread: the pages must stay. */
			data = code = 0;
		} else if (!ret && ret_val) {
			ret = dp_err_set(&p->err, -(int)ret_val, "pthread_create() in pid %d "
					 "failed: %s", (int)pid, strerror((int)ret_val));
		} else if (!ret) {
			created = true;
		}
		if (ret != -ETIMEDOUT && ret != -ESRCH && ret != -DP_PROC_EEXEC)
			dp_proc_write(p, errno_at, &errno_val, sizeof(errno_val));
	}
	if (ret && !created && p->attached) {
		if (code)
			dp_remote_munmap(p, host, code, PAGE);
		if (data)
			dp_remote_munmap(p, host, data, PAGE);
	}
	if (ret)
		goto fail;
	ret = dp_proc_detach(p);
	r.held_ns = dp_proc_max_held_ns(p);
	r.held_total_ns = dp_proc_total_held_ns(p, &r.nholds);
	if (ret)
		goto fail;
	t_detach = dp_now_ns();

	{
		char why[256];

		ret = wait_report(fd, pid, data, o.load_timeout_ms, o.load_cap_ms, page, why,
				  sizeof(why));
		if (ret == -ETIMEDOUT) {
			ret = dp_err_set(err, -ETIMEDOUT, "dlopen(\"%s\") in pid %d %s; it goes "
					 "on in its own thread, which cleans up after itself",
					 path, (int)pid, why);
			goto out;
		}
	}
	if (ret) {
		ret = dp_err_set(err, -ESRCH, "pid %d exited while loading the agent", (int)pid);
		goto out;
	}
	r.load_ns = dp_now_ns() - t_detach;
	{
		const uint64_t one = 1;
		/* Found before the ACK: it waits for nothing else. */
		pid_t waiter = find_waiter(pid, data, o.call_timeout_ms);

		/* Tell the thread it may unmap the pages now. */
		if (pwrite(fd, &one, sizeof(one), (off_t)(data + D_ACK)) != sizeof(one))
			ret = -ESRCH;
		/* It sees the ACK at the end of its round (ACK_WAIT_NS). */
		else if (waiter)
			wait_gone(pid, waiter, o.call_timeout_ms);
	}
	r.handle = get64(page, D_HANDLE);
	r.host = host;
	r.total_ns = dp_now_ns() - t0;
	if (!r.handle) {
		page[PAGE - 1] = '\0';
		ret = dp_err_set(err, -DP_INJECT_EDLOPEN, "dlopen(\"%s\") in pid %d failed: %s",
				 path, (int)pid,
				 page[D_ERROR] ? (char *)page + D_ERROR : "no reason given");
		goto out;
	}
	ret = dp_err_set(err, 0, "loaded %s into pid %d", path, (int)pid);
	goto out;
fail:
	if (p && err)
		*err = *dp_proc_err(p);
out:
	if (res)
		*res = r;
	if (fd >= 0)
		close(fd);
	dp_proc_close(p);
	dp_maps_free(&maps);
	return ret;
}
