/*
 * Remote system calls and function calls in a held thread.
 *
 * How a borrowed thread gets back exactly where it was: it is taken from a
 * stop inside the kernel's return-to-user path (an interrupt stop, possibly
 * on the way out of a system call it was sleeping in, with -ERESTART* in rax
 * and the call's number in orig_rax).  While it runs for us orig_rax is -1,
 * so that the kernel's restart logic leaves our registers alone.  At the exit
 * stop of our last system call its saved registers are put back and a
 * PTRACE_INTERRUPT is queued before it continues: the kernel checks pending
 * ptrace traps before it dequeues signals, so the thread stops again in the
 * same return-to-user path, with its own registers.  When it is finally
 * resumed, the kernel sees the original -ERESTART* and orig_rax and restarts
 * the call (or delivers a pending signal and applies SA_RESTART), as it would
 * have without us.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "deadline.h"
#include "proc/maps.h"
#include "proc/proc-status.h"
#include "proc/ptrace-internal.h"
#include "proc/remote.h"

#define RED_ZONE 128
#define EFLAGS_TF 0x100ull
#define EFLAGS_DF 0x400ull
/* struct rseq: the rseq_cs pointer follows cpu_id_start and cpu_id. */
#define RSEQ_CS_OFFSET 8

static const char *syscall_name(long nr)
{
	switch (nr) {
	case SYS_mmap: return "mmap";
	case SYS_munmap: return "munmap";
	case SYS_mprotect: return "mprotect";
	case SYS_rt_sigprocmask: return "rt_sigprocmask";
	default: return "system call";
	}
}

pid_t dp_remote_pick(struct dp_proc *p)
{
	const struct dp_thread *best = NULL;

	/* An interrupt stop needs no preparation; a held signal must go first. */
	for (size_t i = 0; i < p->n; i++) {
		const struct dp_thread *t = &p->t[i];

		if (t->stop == DP_STOP_NONE || (t->flags & T_OWNED))
			continue;
		if (!best || (best->stop != DP_STOP_INTERRUPT && t->stop == DP_STOP_INTERRUPT))
			best = t;
	}
	return best ? best->tid : 0;
}

static bool scan_map(struct dp_proc *p, const struct dp_map *m, uint64_t *addr)
{
	uint8_t buf[4096 + 1];
	uint64_t a = m->start;

	/* Any 0f 05 pair executes as a syscall, whatever instruction it is part of. */
	while (a < m->end) {
		size_t len = m->end - a < 4096 ? (size_t)(m->end - a) : 4096;

		if (dp_proc_read(p, a, buf, len))
			return false;
		for (size_t i = 0; i + 1 < len; i++)
			if (buf[i] == 0x0f && buf[i + 1] == 0x05) {
				*addr = a + i;
				return true;
			}
		a += len - 1;	/* a pair may straddle two chunks */
		if (len < 2)
			break;
	}
	return false;
}

int dp_remote_syscall_insn(struct dp_proc *p, uint64_t *addr)
{
	struct dp_maps maps;
	int ret;

	if (p->syscall_insn) {
		*addr = p->syscall_insn;
		return 0;
	}
	ret = dp_maps_read(p->pid, &maps);
	if (ret)
		return dp_err_set(&p->err, ret, "cannot read /proc/%d/maps: %s", (int)p->pid,
				  strerror(-ret));
	/* The vdso first (there in every process), then libc, then any code. */
	for (int pass = 0; pass < 3 && !p->syscall_insn; pass++)
		for (size_t i = 0; i < maps.n && !p->syscall_insn; i++) {
			const struct dp_map *m = &maps.v[i];
			const char *b = m->path ? strrchr(m->path, '/') : NULL;
			bool want = pass == 0 ? m->path && !strcmp(m->path, "[vdso]")
				  : pass == 1 ? b && !strncmp(b + 1, "libc.so", 7)
				  : m->path && strcmp(m->path, "[vsyscall]");

			if ((m->prot & PROT_EXEC) && (m->prot & PROT_READ) && want)
				scan_map(p, m, &p->syscall_insn);
		}
	dp_maps_free(&maps);
	if (!p->syscall_insn)
		return dp_err_set(&p->err, -ENOENT, "no syscall instruction found in the code of "
				  "pid %d", (int)p->pid);
	*addr = p->syscall_insn;
	return 0;
}

static int check_seccomp(struct dp_proc *p)
{
	if (p->seccomp < 0) {
		struct dp_proc_status st;

		p->seccomp = dp_proc_status_read(p->pid, 0, &st) ? 0 : st.seccomp;
	}
	if (p->seccomp == 1)
		return dp_err_set(&p->err, -EPERM,
				  "pid %d runs in seccomp strict mode: any system call other than "
				"read, write, exit and sigreturn would kill it", (int)p->pid);
	return 0;
}

/* The thread's rseq area, to keep its critical-section word intact. */
static uint64_t rseq_area(pid_t tid)
{
	struct __ptrace_rseq_configuration conf;

	memset(&conf, 0, sizeof(conf));
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, (void *)sizeof(conf), &conf) <= 0)
		return 0;
	return conf.rseq_abi_pointer;
}

/*
 * The kernel clears a thread's rseq_cs when it returns to user space outside
 * the critical section it names.  Our detour does exactly that; putting the
 * word back lets the kernel abort the section on the real return, as it must
 * for a thread that was stopped inside one.
 */
struct rseq_save {
	uint64_t area, cs;
};

static void rseq_save(struct dp_proc *p, pid_t tid, struct rseq_save *s)
{
	s->area = rseq_area(tid);
	if (s->area && dp_proc_read(p, s->area + RSEQ_CS_OFFSET, &s->cs, sizeof(s->cs)))
		s->area = 0;
}

static void rseq_restore(struct dp_proc *p, const struct rseq_save *s)
{
	uint64_t now;

	if (s->area && !dp_proc_read(p, s->area + RSEQ_CS_OFFSET, &now, sizeof(now)) &&
	    now != s->cs)
		dp_proc_write(p, s->area + RSEQ_CS_OFFSET, &s->cs, sizeof(s->cs));
}

static int prepare(struct dp_proc *p, pid_t *tid)
{
	struct dp_thread *t;

	if (!p->attached)
		return dp_err_set(&p->err, -EINVAL, "pid %d is not attached", (int)p->pid);
	if (!*tid)
		*tid = dp_remote_pick(p);
	t = *tid ? dp__thread(p, *tid) : NULL;
	if (!t)
		return dp_err_set(&p->err, -ESRCH, "no held thread of pid %d to run a system call",
				  (int)p->pid);
	if (t->stop == DP_STOP_NONE)
		return dp_err_set(&p->err, -EBUSY, "thread %d of pid %d is running", (int)*tid,
				  (int)p->pid);
	return check_seccomp(p);
}

/*
 * Puts `saved` back at a syscall exit stop and holds the thread again in the
 * return-to-user path (see the top of the file).
 */
static int give_back(struct dp_proc *p, pid_t tid, const struct user_regs_struct *saved)
{
	struct dp_thread *t = dp__thread(p, tid);
	int ret = 0;

	if (ptrace(PTRACE_SETREGS, tid, 0, saved))
		ret = dp_err_set(&p->err, -errno, "cannot restore the registers of thread %d: %s",
				       (int)tid, strerror(errno));
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	ptrace(PTRACE_CONT, tid, 0, 0);
	t->flags = (t->flags & ~(T_OWNED | T_WANT_RUN)) | T_INTERRUPTED;
	t->stop = DP_STOP_NONE;
	if (!ret)
		ret = dp__hold_thread(p, tid);
	return ret;
}

/* One attempt; 1: a signal came first (delivered, try again). */
static int syscall_once(struct dp_proc *p, pid_t tid, uint64_t insn, long nr,
			const uint64_t a[6], int64_t *out)
{
	struct user_regs_struct saved, regs;
	struct dp_deadline none;
	struct dp_thread *t;
	struct rseq_save rs;
	bool entered = false;
	int ret;

	ret = dp__settle(p, tid);
	if (ret)
		return ret;
	ret = dp_proc_get_regs(p, tid, &saved);
	if (ret)
		return ret;
	rseq_save(p, tid, &rs);
	regs = saved;
	regs.rip = insn;
	regs.rax = (uint64_t)nr;
	regs.orig_rax = (uint64_t)-1;
	regs.rdi = a[0];
	regs.rsi = a[1];
	regs.rdx = a[2];
	regs.r10 = a[3];
	regs.r8 = a[4];
	regs.r9 = a[5];
	regs.eflags &= ~EFLAGS_TF;
	ret = dp_proc_set_regs(p, tid, &regs);
	if (ret)
		return ret;
	t = dp__thread(p, tid);
	t->flags |= T_OWNED;
	t->stop = DP_STOP_NONE;
	if (ptrace(PTRACE_SYSCALL, tid, 0, 0))
		return dp_err_set(&p->err, -errno, "cannot run thread %d: %s", (int)tid,
				  strerror(errno));
	dp_deadline_start(&none, -1, NULL);
	for (;;) {
		enum dp_event ev;
		int sig;

		ret = dp__wait_owned(p, tid, &none, &ev, &sig);
		if (ret < 0)
			return ret;
		switch (ev) {
		case EV_EXIT:
			return dp_err_set(&p->err, -ESRCH, "thread %d of pid %d exited during a %s",
					  (int)tid, (int)p->pid, syscall_name(nr));
		case EV_EXEC:
			return dp_err_set(&p->err, -DP_PROC_EEXEC, "pid %d ran execve() meanwhile",
					  (int)p->pid);
		case EV_SYSCALL:
			if (!entered) {
				entered = true;
				ptrace(PTRACE_SYSCALL, tid, 0, 0);
				continue;
			}
			if (ptrace(PTRACE_GETREGS, tid, 0, &regs))
				return dp_err_set(&p->err, -errno, "cannot read the result of a "
						  "%s: %s", syscall_name(nr), strerror(errno));
			*out = (int64_t)regs.rax;
			rseq_restore(p, &rs);
			return give_back(p, tid, &saved);
		case EV_SIGNAL:
			if (!entered) {
				/*
				 * The signal was pending before our call: put the
				 * thread's own registers under it and hold it there;
				 * dp__settle() delivers it on the next attempt.
				 */
				t = dp__thread(p, tid);
				ptrace(PTRACE_SETREGS, tid, 0, &saved);
				rseq_restore(p, &rs);
				t->flags &= ~T_OWNED;
				t->stop = DP_STOP_SIGNAL;
				t->signal = sig;
				return 1;
			}
			/* Cannot happen between entry and exit; keep it for later. */
			ptrace(PTRACE_SYSCALL, tid, 0, 0);
			continue;
		default:
			/* A job-control stop or a stray event: go on with our call. */
			ptrace(PTRACE_SYSCALL, tid, 0, 0);
			continue;
		}
	}
}

int dp_remote_syscall(struct dp_proc *p, pid_t tid, long nr, const uint64_t args[6],
		      int64_t *ret)
{
	static const uint64_t none[6];
	uint64_t insn;
	int r = prepare(p, &tid);

	if (r)
		return r;
	r = dp_remote_syscall_insn(p, &insn);
	if (r)
		return r;
	for (int attempt = 0; attempt < 64; attempt++) {
		r = syscall_once(p, tid, insn, nr, args ? args : none, ret);
		if (r <= 0)
			return r;
	}
	return dp_err_set(&p->err, -EAGAIN, "thread %d of pid %d keeps receiving signals", (int)tid,
			  (int)p->pid);
}

static int checked(struct dp_proc *p, pid_t tid, long nr, const uint64_t a[6], int64_t *res)
{
	int ret = dp_remote_syscall(p, tid, nr, a, res);

	if (ret)
		return ret;
	if (*res < 0 && *res > -4096)
		return dp_err_set(&p->err, (int)*res, "%s in pid %d failed: %s", syscall_name(nr),
				  (int)p->pid, strerror((int)-*res));
	return 0;
}

int dp_remote_mmap(struct dp_proc *p, pid_t tid, uint64_t addr, uint64_t len, int prot,
		   int flags, int fd, uint64_t offset, uint64_t *out)
{
	const uint64_t a[6] = { addr, len, (uint64_t)prot, (uint64_t)flags,
				(uint64_t)(int64_t)fd, offset };
	int64_t res;
	int ret = checked(p, tid, SYS_mmap, a, &res);

	if (!ret)
		*out = (uint64_t)res;
	return ret;
}

int dp_remote_mprotect(struct dp_proc *p, pid_t tid, uint64_t addr, uint64_t len, int prot)
{
	const uint64_t a[6] = { addr, len, (uint64_t)prot };
	int64_t res;

	return checked(p, tid, SYS_mprotect, a, &res);
}

int dp_remote_munmap(struct dp_proc *p, pid_t tid, uint64_t addr, uint64_t len)
{
	const uint64_t a[6] = { addr, len };
	int64_t res;

	return checked(p, tid, SYS_munmap, a, &res);
}

/* The thread's signal mask, set to `mask` (at `at` in its memory); old one in *old. */
static int swap_sigmask(struct dp_proc *p, pid_t tid, uint64_t at, uint64_t mask, uint64_t *old)
{
	const uint64_t a[6] = { SIG_SETMASK, at, at + 8, 8 };
	int64_t res;
	int ret = dp_proc_write(p, at, &mask, sizeof(mask));

	if (!ret)
		ret = checked(p, tid, SYS_rt_sigprocmask, a, &res);
	if (!ret)
		ret = dp_proc_read(p, at + 8, old, sizeof(*old));
	return ret;
}

struct xstate {
	struct iovec iov;
	uint8_t buf[16384];
};

/* Runs the call; *trapped tells whether it returned to the trap. */
static int run_call(struct dp_proc *p, pid_t tid, const struct dp_remote_call *c,
		    uint64_t *result)
{
	struct dp_deadline deadline;
	struct user_regs_struct regs;
	struct dp_thread *t = dp__thread(p, tid);
	int deferred_stop = 0, ret;

	t->flags |= T_OWNED;
	t->stop = DP_STOP_NONE;
	dp_deadline_start(&deadline, c->timeout_ms, NULL);
	ptrace(PTRACE_CONT, tid, 0, 0);
	for (;;) {
		enum dp_event ev;
		int sig;

		ret = dp__wait_owned(p, tid, &deadline, &ev, &sig);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			/* Abandon: stop it where it waits. */
			ptrace(PTRACE_INTERRUPT, tid, 0, 0);
			dp_deadline_start(&deadline, p->timeout_ms, NULL);
			ret = dp__wait_owned(p, tid, &deadline, &ev, &sig);
			if (ret <= 0)
				return dp_err_set(&p->err, -ETIMEDOUT, "a call in thread %d of "
						  "pid %d neither returned nor stopped", (int)tid,
						  (int)p->pid);
			if (ev == EV_EXIT)
				return dp_err_set(&p->err, -ESRCH, "thread %d exited", (int)tid);
			dp_err_set(&p->err, -ETIMEDOUT, "a call in thread %d of pid %d did not "
				   "return within %d ms (waiting for a lock another thread "
				   "holds?): abandoned", (int)tid, (int)p->pid, c->timeout_ms);
			ret = -ETIMEDOUT;
			break;
		}
		if (ev == EV_EXIT)
			return dp_err_set(&p->err, -ESRCH, "thread %d of pid %d exited during a "
					  "call", (int)tid, (int)p->pid);
		if (ev == EV_EXEC)
			return dp_err_set(&p->err, -DP_PROC_EEXEC, "pid %d ran execve() meanwhile",
					  (int)p->pid);
		if (ev == EV_SIGNAL && sig == SIGTRAP && !ptrace(PTRACE_GETREGS, tid, 0, &regs) &&
		    regs.rip == c->trap + 1) {
			*result = regs.rax;
			ret = 0;
			break;
		}
		if (ev == EV_SIGNAL && (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
					sig == SIGTTOU)) {
			/* Cannot be blocked: raised again once the thread is back. */
			deferred_stop = sig;
			ptrace(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		if (ev == EV_SIGNAL) {
			/* Every other signal is blocked: this one is a fault of the call. */
			ptrace(PTRACE_GETREGS, tid, 0, &regs);
			ret = dp_err_set(&p->err, -EFAULT, "a call in thread %d of pid %d faulted "
					 "(signal %d at %#llx): put back as it was", (int)tid,
					 (int)p->pid, sig, (unsigned long long)regs.rip);
			break;
		}
		ptrace(PTRACE_CONT, tid, 0, 0);
	}
	/* Held where it stopped (the trap, the fault or the interrupt): suppressed. */
	t = dp__thread(p, tid);
	t->flags &= ~T_OWNED;
	t->stop = DP_STOP_INTERRUPT;
	if (deferred_stop)
		syscall(SYS_tgkill, p->pid, tid, deferred_stop);
	return ret;
}

int dp_remote_call(struct dp_proc *p, pid_t tid, const struct dp_remote_call *c,
		   uint64_t *result)
{
	struct user_regs_struct saved, regs, back;
	struct xstate *xs = NULL;
	struct rseq_save rs;
	uint64_t scratch, frame, old_mask = 0, unused;
	int ret, ret2;

	ret = prepare(p, &tid);
	if (!ret)
		ret = dp__settle(p, tid);
	if (!ret)
		ret = dp_proc_get_regs(p, tid, &saved);
	if (ret)
		return ret;
	xs = malloc(sizeof(*xs));
	if (!xs)
		return dp_err_set(&p->err, -ENOMEM, "out of memory");
	xs->iov.iov_base = xs->buf;
	xs->iov.iov_len = sizeof(xs->buf);
	if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &xs->iov)) {
		ret = dp_err_set(&p->err, -errno, "cannot read the vector state of thread %d: %s",
				       (int)tid, strerror(errno));
		goto out;
	}
	rseq_save(p, tid, &rs);

	/* Below the red zone: 16 bytes for the signal masks, then the call's frame. */
	scratch = ((saved.rsp - RED_ZONE) & ~15ull) - 16;
	ret = swap_sigmask(p, tid, scratch, ~0ull, &old_mask);
	if (ret)
		goto out;
	frame = (scratch - 64) & ~15ull;
	ret = dp_proc_write(p, frame - 8, &c->trap, sizeof(c->trap));
	if (ret)
		goto unmask;
	regs = saved;
	regs.rsp = frame - 8;	/* as after a call: rsp + 8 is 16-byte aligned */
	regs.rip = c->fn;
	regs.rdi = c->args[0];
	regs.rsi = c->args[1];
	regs.rdx = c->args[2];
	regs.rcx = c->args[3];
	regs.r8 = c->args[4];
	regs.r9 = c->args[5];
	regs.rax = 0;		/* no vector arguments, for variadic callees */
	regs.orig_rax = (uint64_t)-1;
	regs.eflags &= ~(EFLAGS_DF | EFLAGS_TF);	/* the ABI's state at a call */
	ret = dp_proc_set_regs(p, tid, &regs);
	if (ret)
		goto unmask;
	/* Ours before the others run: dp_proc_resume() must not restart it. */
	dp__thread(p, tid)->flags |= T_OWNED;
	if (c->run_others)
		dp_proc_resume(p);
	ret = run_call(p, tid, c, result);
	if (c->run_others && ret != -ESRCH && ret != -DP_PROC_EEXEC) {
		ret2 = dp_proc_stop(p);
		ret = ret ? ret : ret2;
	}
	if (ret == -ESRCH || ret == -DP_PROC_EEXEC)
		goto out;
	/*
	 * Back to the thread's registers at the stop we hold (a signal stop
	 * for our trap), then through the interrupt path so that it is held as
	 * before: the kernel's restart logic runs on these registers later.
	 */
	ptrace(PTRACE_SETREGS, tid, 0, &saved);
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	ptrace(PTRACE_CONT, tid, 0, 0);
	{
		struct dp_thread *t = dp__thread(p, tid);

		t->stop = DP_STOP_NONE;
		t->flags |= T_INTERRUPTED;
	}
	ret2 = dp__hold_thread(p, tid);
	if (ret2) {
		ret = ret2;
		goto out;
	}
unmask:
	ret2 = swap_sigmask(p, tid, scratch, old_mask, &unused);
	if (!ret)
		ret = ret2;
	if (ptrace(PTRACE_GETREGS, tid, 0, &back) == 0 && back.rip != saved.rip)
		ptrace(PTRACE_SETREGS, tid, 0, &saved);
	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &xs->iov) && !ret)
		ret = dp_err_set(&p->err, -errno, "cannot restore the vector state of thread %d: "
				 "%s", (int)tid, strerror(errno));
	rseq_restore(p, &rs);
out:
	free(xs);
	return ret;
}
