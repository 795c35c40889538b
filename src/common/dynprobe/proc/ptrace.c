/*
 * Seizing, holding, resuming and releasing every thread of a process; its
 * memory and registers while held; moving thread PCs out of patched bytes.
 *
 * One rule runs through this file: a thread is only ever held in a stop the
 * kernel made for us (interrupt, job control, signal delivery), and it leaves
 * that stop the way the kernel expects it to (a held signal goes back with
 * the resume or the detach, a job-control stop is listened to, not broken).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "deadline.h"
#include "proc/proc-status.h"
#include "proc/ptrace-internal.h"

#define SEIZE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC)

/* Kernel-internal restart codes, as they appear in rax (include/linux/errno.h). */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

struct dp_proc *dp_proc_open(pid_t pid)
{
	struct dp_proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pid = pid;
	p->mem_fd = -1;
	p->timeout_ms = 2000;
	return p;
}

void dp_proc_close(struct dp_proc *p)
{
	if (!p)
		return;
	if (p->attached)
		dp_proc_detach(p);
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	free(p->t);
	free(p);
}

pid_t dp_proc_pid(const struct dp_proc *p)
{
	return p->pid;
}

const char *dp_proc_errmsg(const struct dp_proc *p)
{
	return p->err.msg;
}

const struct dp_err *dp_proc_err(const struct dp_proc *p)
{
	return &p->err;
}

void dp_proc_set_timeout(struct dp_proc *p, int ms)
{
	p->timeout_ms = ms;
}

bool dp_proc_attached(const struct dp_proc *p)
{
	return p->attached;
}

const struct dp_thread *dp_proc_threads(const struct dp_proc *p, size_t *n)
{
	*n = p->n;
	return p->t;
}

struct dp_thread *dp__thread(struct dp_proc *p, pid_t tid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].tid == tid)
			return &p->t[i];
	return NULL;
}

const struct dp_thread *dp_proc_thread(const struct dp_proc *p, pid_t tid)
{
	return dp__thread((struct dp_proc *)p, tid);
}

static struct dp_thread *add_thread(struct dp_proc *p, pid_t tid, unsigned int flags)
{
	struct dp_thread *t = dp__thread(p, tid);

	if (t)
		return t;
	if (DP_ARRAY_RESERVE(p->t, p->cap, p->n, 16))
		return NULL;
	t = &p->t[p->n++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->flags = flags;
	return t;
}

static void remove_thread(struct dp_proc *p, pid_t tid)
{
	struct dp_thread *t = dp__thread(p, tid);

	if (!t)
		return;
	*t = p->t[--p->n];
	if (tid == p->pid)
		p->gone = true;
}

static bool held(const struct dp_thread *t)
{
	return t->stop != DP_STOP_NONE;
}

static void snooze(unsigned int *round)
{
	/* Stops take microseconds: yield first, then back off up to 1 ms. */
	if (*round < 8) {
		sched_yield();
	} else {
		unsigned int us = 20u << (*round - 8 < 6 ? *round - 8 : 6);
		struct timespec ts = { 0, (long)(us > 1000 ? 1000 : us) * 1000 };

		nanosleep(&ts, NULL);
	}
	(*round)++;
}

static enum dp_event classify(int status, int *sig)
{
	int event = (status >> 16) & 0xff;

	*sig = 0;
	if (WIFEXITED(status) || WIFSIGNALED(status))
		return EV_EXIT;
	*sig = WSTOPSIG(status);
	if (*sig == (SIGTRAP | 0x80))
		return EV_SYSCALL;
	switch (event) {
	case 0:
		return EV_SIGNAL;
	case PTRACE_EVENT_STOP:
		if (*sig == SIGSTOP || *sig == SIGTSTP || *sig == SIGTTIN || *sig == SIGTTOU)
			return EV_GROUP;
		return EV_INTERRUPT;
	case PTRACE_EVENT_CLONE:
		return EV_CLONE;
	case PTRACE_EVENT_EXEC:
		return EV_EXEC;
	default:
		return EV_OTHER;
	}
}

/* A clone event: the new thread is ours already; it will report a first stop. */
static void adopt_child(struct dp_proc *p, pid_t parent, bool run)
{
	unsigned long msg = 0;

	if (ptrace(PTRACE_GETEVENTMSG, parent, 0, &msg) == 0 && msg)
		add_thread(p, (pid_t)msg, T_NEW | (run ? T_WANT_RUN : 0));
}

/*
 * Brings a thread that stopped for a reason we do not hold on to (an event,
 * a syscall stop) back to a stop we do: the interrupt is queued before the
 * thread runs again, so it stops before executing a user instruction.
 */
static void rehold(struct dp_thread *t)
{
	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0)
		t->flags |= T_INTERRUPTED;
	ptrace(PTRACE_CONT, t->tid, 0, 0);
}

/* Restarts a thread that is passed through, honouring job control. */
static void pass(struct dp_thread *t, enum dp_event ev, int sig)
{
	enum __ptrace_request req = t->flags & T_CATCH ? PTRACE_SYSCALL : PTRACE_CONT;

	if (ev == EV_GROUP)
		ptrace(PTRACE_LISTEN, t->tid, 0, 0);
	else
		ptrace(req, t->tid, 0, (void *)(long)(ev == EV_SIGNAL ? sig : 0));
}

static void handle(struct dp_proc *p, struct dp_thread *t, int status)
{
	int sig;
	enum dp_event ev = classify(status, &sig);
	bool run = t->flags & T_WANT_RUN;

	t->flags &= ~T_NEW;
	switch (ev) {
	case EV_EXIT:
		remove_thread(p, t->tid);
		return;
	case EV_CLONE: {
		pid_t tid = t->tid;

		adopt_child(p, tid, run);
		t = dp__thread(p, tid);	/* the array may have moved */
		if (run)
			pass(t, ev, 0);
		else
			rehold(t);
		return;
	}
	case EV_EXEC:
		p->exec_seen = true;
		break;
	default:
		break;
	}
	if (run && ev == EV_SYSCALL && (t->flags & T_CATCH) && p->on_syscall &&
	    p->on_syscall(p, t->tid, p->on_syscall_arg)) {
		t = dp__thread(p, t->tid);
		t->flags = (t->flags & ~(T_WANT_RUN | T_CATCH)) | T_AT_SYSCALL;
		t->stop = DP_STOP_INTERRUPT;
		return;
	}
	if (run) {
		pass(t, ev, sig);
		return;
	}
	switch (ev) {
	case EV_INTERRUPT:
	case EV_EXEC:
		t->stop = DP_STOP_INTERRUPT;
		break;
	case EV_GROUP:
		t->stop = DP_STOP_GROUP;
		break;
	case EV_SIGNAL:
		/* The signal stop consumed any pending interrupt (a trap clears it). */
		t->stop = DP_STOP_SIGNAL;
		t->signal = sig;
		break;
	default:
		rehold(t);
		return;
	}
	t->flags &= ~T_INTERRUPTED;
}

int dp__pump(struct dp_proc *p)
{
	int events = 0;

	for (size_t i = 0; i < p->n;) {
		struct dp_thread *t = &p->t[i];
		pid_t tid = t->tid;
		int status;
		pid_t r;

		if (held(t) || (t->flags & T_OWNED)) {
			i++;
			continue;
		}
		r = waitpid(tid, &status, __WALL | WNOHANG);
		if (r == 0) {
			i++;
			continue;
		}
		events++;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* ECHILD: gone without a word (replaced by an exec). */
			remove_thread(p, tid);
			continue;
		}
		handle(p, t, status);
		/* Stay on i if the thread was removed (another took its slot). */
		if (i < p->n && p->t[i].tid == tid)
			i++;
	}
	return events;
}

static int gone_error(struct dp_proc *p)
{
	if (p->exec_seen)
		return dp_err_set(&p->err, -DP_PROC_EEXEC,
				  "pid %d ran a new program (execve) during the operation",
				(int)p->pid);
	return dp_err_set(&p->err, -DP_PROC_ENOPROC, "pid %d exited during the operation",
			  (int)p->pid);
}

/*
 * Waits until every thread that is not running nor owned is held.  A thread
 * still runnable (state R) at timeout_ms only waits for a CPU, on a machine
 * too busy to give it one, or for a system call to return: it stops as soon
 * as it gets back to user code, so it is given up to five times the
 * process's timeout in all.  One asleep in the kernel (D) is not.
 */
static int wait_held(struct dp_proc *p, int timeout_ms)
{
	uint64_t start = dp_now_ns();
	int most = timeout_ms > 5 * p->timeout_ms ? timeout_ms : 5 * p->timeout_ms;
	/* Both deadlines leave out the time this process could not run. */
	struct dp_deadline last, deadline;
	unsigned int round = 0;

	dp_deadline_start(&last, most, NULL);
	dp_deadline_start(&deadline, timeout_ms, timeout_ms >= 0 ? &last : NULL);
	for (;;) {
		size_t pending = 0;
		pid_t late = 0;

		if (p->gone)
			return gone_error(p);
		for (size_t i = 0; i < p->n; i++) {
			const struct dp_thread *t = &p->t[i];

			if (!held(t) && !(t->flags & (T_WANT_RUN | T_OWNED))) {
				pending++;
				late = t->tid;
			}
		}
		if (!pending)
			return 0;
		if (dp__pump(p)) {
			round = 0;
			continue;
		}
		if (dp_deadline_passed(&deadline)) {
			struct dp_proc_status st;

			dp_proc_status_read(p->pid, late, &st);
			if (st.state == 'R' && !dp_deadline_passed(&last)) {
				/* look again in 10 ms */
				dp_deadline_start(&deadline, 10, &last);
				continue;
			}
			return dp_err_set(&p->err, -ETIMEDOUT, "thread %d of pid %d did not stop "
					  "within %d ms (state %c%s)", (int)late, (int)p->pid,
					  (int)((dp_now_ns() - start) / 1000000ull),
					  st.state ? st.state : '?',
					  st.state == 'D' ? ": uninterruptible sleep" : "");
		}
		snooze(&round);
	}
}

static int interrupt_all(struct dp_proc *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct dp_thread *t = &p->t[i];

		if (held(t) || (t->flags & T_OWNED))
			continue;
		t->flags &= ~(T_WANT_RUN | T_CATCH);
		/* A new thread stops by itself; others are asked to. */
		if (!(t->flags & (T_INTERRUPTED | T_NEW)) &&
		    ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0)
			t->flags |= T_INTERRUPTED;
	}
	return 0;
}

/*
 * While every thread of the target is held, the thread holding them runs at
 * this nice value when it may (root, or an RLIMIT_NICE that allows it): on
 * a machine so busy that it waits for a CPU, that wait would stretch the
 * target's stop.  The value it had comes back when the hold ends.
 */
#define HOLD_NICE (-10)

static void hold_begins(struct dp_proc *p)
{
	int saved = errno;

	if (p->hold_start)
		return;
	p->hold_start = dp_now_ns();
	p->hold_tid = (pid_t)syscall(SYS_gettid);
	errno = 0;
	p->hold_nice = getpriority(PRIO_PROCESS, (id_t)p->hold_tid);
	p->hold_reniced = !errno && p->hold_nice > HOLD_NICE &&
			  !setpriority(PRIO_PROCESS, (id_t)p->hold_tid, HOLD_NICE);
	errno = saved;
}

void dp__hold_ends(struct dp_proc *p)
{
	if (p->hold_reniced) {
		int saved = errno;

		setpriority(PRIO_PROCESS, (id_t)p->hold_tid, p->hold_nice);
		p->hold_reniced = false;
		errno = saved;
	}
	if (p->hold_start) {
		uint64_t d = dp_now_ns() - p->hold_start;

		if (d > p->max_held_ns)
			p->max_held_ns = d;
		p->total_held_ns += d;
		p->nholds++;
		p->hold_start = 0;
	}
}

uint64_t dp_proc_max_held_ns(const struct dp_proc *p)
{
	return p->max_held_ns;
}

uint64_t dp_proc_total_held_ns(const struct dp_proc *p, uint32_t *nholds)
{
	if (nholds)
		*nholds = p->nholds;
	return p->total_held_ns;
}

/*
 * Delivers every signal held in its delivery stop, each thread stopping
 * again before it runs a user instruction (dp__settle): at the first one of
 * its handler, or in a job-control stop.  A tracer that dies (SIGKILL) while
 * a thread sits in a delivery stop takes the signal with it: the kernel lets
 * the thread go without it, and a thread whose int3 trap is lost runs on one
 * byte into the instruction the int3 stands for.  Once settled, nothing is
 * held that a dead tracer could lose.
 */
static int settle_signals(struct dp_proc *p)
{
	for (int round = 0; round < 256; round++) {
		pid_t tid = 0;
		int ret;

		for (size_t i = 0; i < p->n && !tid; i++)
			if (p->t[i].stop == DP_STOP_SIGNAL && !(p->t[i].flags & T_OWNED))
				tid = p->t[i].tid;
		if (!tid)
			return 0;
		ret = dp__settle(p, tid);
		if (ret)
			return ret;
	}
	return dp_err_set(&p->err, -EAGAIN, "threads of pid %d keep receiving signals",
			  (int)p->pid);
}

static int all_held(struct dp_proc *p);
static int seize_all(struct dp_proc *p);

int dp_proc_stop(struct dp_proc *p)
{
	int ret;

	if (!p->attached)
		return dp_err_set(&p->err, -EINVAL, "pid %d is not attached", (int)p->pid);
	hold_begins(p);
	interrupt_all(p);
	ret = wait_held(p, p->timeout_ms);
	/* A thread created with CLONE_UNTRACED while they ran is not ours yet. */
	if (!ret && !all_held(p))
		ret = seize_all(p);
	return ret ? ret : settle_signals(p);
}

int dp__hold_thread(struct dp_proc *p, pid_t tid)
{
	struct dp_thread *t = dp__thread(p, tid);

	if (!t)
		return dp_err_set(&p->err, -ESRCH, "thread %d of pid %d exited", (int)tid,
				  (int)p->pid);
	if (held(t))
		return 0;
	t->flags &= ~(T_WANT_RUN | T_CATCH);
	if (!(t->flags & (T_INTERRUPTED | T_NEW)) && ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0)
		t->flags |= T_INTERRUPTED;
	return wait_held(p, p->timeout_ms);
}

/* Restarts one held thread; its held signal goes with it. */
static void release(struct dp_thread *t)
{
	if (t->stop == DP_STOP_GROUP)
		ptrace(PTRACE_LISTEN, t->tid, 0, 0);
	else
		ptrace(PTRACE_CONT, t->tid, 0,
		       (void *)(long)(t->stop == DP_STOP_SIGNAL ? t->signal : 0));
	t->stop = DP_STOP_NONE;
	t->signal = 0;
	t->flags |= T_WANT_RUN;
}

int dp_proc_resume(struct dp_proc *p)
{
	if (!p->attached)
		return dp_err_set(&p->err, -EINVAL, "pid %d is not attached", (int)p->pid);
	for (size_t i = 0; i < p->n; i++) {
		struct dp_thread *t = &p->t[i];

		if (t->flags & T_OWNED)
			continue;
		if (held(t))
			release(t);
		else
			t->flags |= T_WANT_RUN;
	}
	dp__hold_ends(p);
	return 0;
}

/* One pass of the pump over the other threads, a nap when nothing came:
 * 0, or -errno when the process is gone. */
static int pump_or_nap(struct dp_proc *p, unsigned int *round)
{
	if (dp__pump(p))
		*round = 0;
	else
		snooze(round);
	return p->gone ? gone_error(p) : 0;
}

int dp_proc_service(struct dp_proc *p, int timeout_ms)
{
	uint64_t deadline = dp_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	unsigned int round = 0;

	do {
		int ret = pump_or_nap(p, &round);

		if (ret)
			return ret;
	} while (dp_now_ns() < deadline);
	return 0;
}

int dp__settle(struct dp_proc *p, pid_t tid)
{
	for (int round = 0; round < 64; round++) {
		struct dp_thread *t = dp__thread(p, tid);
		int ret;

		if (!t)
			return dp_err_set(&p->err, -ESRCH, "thread %d of pid %d exited", (int)tid,
					  (int)p->pid);
		if (t->stop != DP_STOP_SIGNAL)
			return 0;
		/*
		 * Queue the interrupt first: the kernel then delivers the
		 * signal (builds the handler frame, or acts by default) and
		 * stops before the thread runs a user instruction.
		 */
		ptrace(PTRACE_INTERRUPT, tid, 0, 0);
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)t->signal);
		t->stop = DP_STOP_NONE;
		t->signal = 0;
		t->flags = (t->flags & ~T_WANT_RUN) | T_INTERRUPTED;
		ret = wait_held(p, p->timeout_ms);
		if (ret)
			return ret;
	}
	return dp_err_set(&p->err, -EAGAIN, "thread %d of pid %d keeps receiving signals", (int)tid,
			  (int)p->pid);
}

int dp__wait_owned(struct dp_proc *p, pid_t owned, struct dp_deadline *d, enum dp_event *ev,
		   int *sig)
{
	bool limited = dp_deadline_left(d) >= 0;
	unsigned int round = 0;

	bool others_run = false;

	for (size_t i = 0; i < p->n; i++)
		others_run |= p->t[i].tid != owned && (p->t[i].flags & T_WANT_RUN);
	for (;;) {
		int status, ret;
		/* Nobody else runs, so nobody else needs service: just block. */
		pid_t r = waitpid(owned, &status,
				  __WALL | (others_run || limited ? WNOHANG : 0));

		if (r == owned) {
			*ev = classify(status, sig);
			if (*ev == EV_EXIT)
				remove_thread(p, owned);
			else if (*ev == EV_CLONE) {
				bool run = false;

				for (size_t i = 0; i < p->n; i++)
					run |= (p->t[i].flags & T_WANT_RUN) != 0;
				adopt_child(p, owned, run);
			} else if (*ev == EV_EXEC)
				p->exec_seen = true;
			return 1;
		}
		if (r < 0 && errno != EINTR) {
			remove_thread(p, owned);
			*ev = EV_EXIT;
			*sig = 0;
			return 1;
		}
		ret = pump_or_nap(p, &round);
		if (ret)
			return ret;
		if (limited && dp_deadline_passed(d))
			return 0;
	}
}

static int open_mem(struct dp_proc *p)
{
	char path[64];
	int ret;

	/* Through a live thread: a leader that exited has no memory to name. */
	for (size_t i = 0; i < p->n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/mem", (int)p->pid, (int)p->t[i].tid);
		p->mem_fd = open(path, O_RDWR | O_CLOEXEC);
		if (p->mem_fd >= 0)
			return 0;
	}
	ret = -errno;
	/* A process killed meanwhile loses its memory before it becomes a
	 * zombie: the open fails with EPERM while it is still being torn
	 * down.  Say that it exited, as every other step does. */
	for (int ms = 0; ms < 200; ms += 10) {
		if (!dp_proc_alive(p->pid))
			return dp_err_set(&p->err, -DP_PROC_ENOPROC,
					  "process %d exited during the operation", (int)p->pid);
		usleep(10000);
	}
	return dp_err_set(&p->err, ret, "cannot open /proc/%d/mem: %s", (int)p->pid,
			  strerror(-ret));
}

/*
 * How many times a thread that is alive and untraced, yet refused, is tried
 * again before the refusal stands (seize_denied).
 */
#define SEIZE_TRIES 5

/*
 * PTRACE_SEIZE said EPERM for tid: 1 it is ours already, 0 skip it (it
 * exited), -EAGAIN try it again, or the error that says why.  The kernel
 * refuses a thread that has exited or that has a tracer, which a look at
 * it tells; a thread that is alive and has none was either refused by a
 * policy, or ended between the refusal and the look and its id went to a
 * new thread of the process (ids are reused as soon as the kernel's
 * counter wraps, which a process starting threads by the thousand while
 * the tracer's CPU stood still makes it do in seconds).  A policy refuses
 * again, so only a refusal that stands after SEIZE_TRIES tries is one.
 */
static int seize_denied(struct dp_proc *p, pid_t tid, unsigned int tries)
{
	struct dp_proc_status st;

	if (dp_proc_status_read(p->pid, tid, &st))
		return 0;	/* it exited meanwhile */
	if (st.state == 'Z' || st.state == 'X')
		return 0;	/* a thread that exited (a leader that called pthread_exit) */
	if (st.tracer == (pid_t)syscall(SYS_gettid)) {
		/* Auto-attached by a clone we have not reaped yet: ours already. */
		return add_thread(p, tid, T_NEW)
			? 1 : dp_err_set(&p->err, -ENOMEM, "out of memory");
	}
	if (st.tracer)
		return dp_proc_check_tracer(p->pid, tid, st.tracer, &p->err);
	if (tries < SEIZE_TRIES)
		return -EAGAIN;
	return dp_proc_explain_eperm(p->pid, tid, &p->err);
}

/* Seizes one thread of a listing: 1 seized (or ours already), 0 skipped. */
static int seize_one(struct dp_proc *p, pid_t tid)
{
	unsigned int round = 0;

	for (unsigned int tries = 1;; tries++) {
		int ret;

		if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)SEIZE_OPTIONS) == 0)
			return add_thread(p, tid, 0)
				? 1 : dp_err_set(&p->err, -ENOMEM, "out of memory");
		if (errno == ESRCH)
			return 0;
		if (errno != EPERM)
			return dp_err_set(&p->err, -errno, "cannot seize thread %d of pid %d: %s",
					  (int)tid, (int)p->pid, strerror(errno));
		ret = seize_denied(p, tid, tries);
		if (ret != -EAGAIN)
			return ret;
		snooze(&round);
	}
}

/* One pass over pid's threads (dp_proc_tasks); returns how many were added. */
static int seize_pass(struct dp_proc *p)
{
	pid_t *tids;
	size_t n;
	int added = 0, ret = dp_proc_tasks(p->pid, &tids, &n);

	if (ret) {
		free(tids);
		if (ret == -ENOMEM)
			return dp_err_set(&p->err, -ENOMEM, "out of memory");
		return dp_err_set(&p->err, -DP_PROC_ENOPROC, "pid %d exited", (int)p->pid);
	}
	for (size_t i = 0; i < n && ret >= 0; i++) {
		if (dp__thread(p, tids[i]))
			continue;
		ret = seize_one(p, tids[i]);
		if (ret > 0)
			added += ret;
	}
	free(tids);
	return ret < 0 ? ret : added;
}

/*
 * Collects the exits of threads killed while we held them (SIGKILL is all
 * that takes a thread out of a ptrace stop without us): until its tracer
 * reaps it, a dead thread stays attached to us, and a dead process stays a
 * zombie its parent cannot collect.  A leader is reported after its other
 * threads, hence the rounds.
 */
static void reap_killed(const pid_t *tids, size_t n)
{
	struct dp_deadline deadline;
	unsigned int round = 0;
	size_t left = n;
	bool *done = calloc(n ? n : 1, sizeof(*done));

	dp_deadline_start(&deadline, 2000, NULL);
	while (done && left && !dp_deadline_passed(&deadline)) {
		bool any = false;

		for (size_t i = 0; i < n; i++) {
			int status;
			pid_t r;

			if (done[i])
				continue;
			r = waitpid(tids[i], &status, __WALL | WNOHANG);
			if (r == 0 || (r < 0 && errno == EINTR))
				continue;
			if (r == tids[i] && !WIFEXITED(status) && !WIFSIGNALED(status))
				continue;	/* a last stop on its way out */
			done[i] = any = true;
			left--;
		}
		if (any)
			round = 0;
		else
			snooze(&round);
	}
	free(done);
}

/* Lets go of every held thread (and forgets those that cannot be held). */
static int detach_held(struct dp_proc *p)
{
	pid_t *killed = calloc(p->n ? p->n : 1, sizeof(*killed));
	size_t nkilled = 0;
	int ret = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct dp_thread *t = &p->t[i];
		int sig = t->stop == DP_STOP_SIGNAL ? t->signal : 0;

		if (!held(t)) {
			ret = -EBUSY;
			continue;
		}
		/* From a job-control stop the kernel puts it back into that stop. */
		if (!ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)sig))
			continue;
		if (errno != ESRCH)
			ret = -errno;
		else if (killed)
			killed[nkilled++] = t->tid;
	}
	reap_killed(killed, nkilled);
	free(killed);
	p->n = 0;
	return ret;
}

int dp_proc_detach(struct dp_proc *p)
{
	int ret;

	if (!p->attached)
		return 0;
	for (size_t i = 0; i < p->n; i++)
		p->t[i].flags &= ~T_OWNED;
	interrupt_all(p);
	/* Detaching needs a stopped thread: wait long for stragglers. */
	ret = wait_held(p, p->timeout_ms * 5);
	if (ret == -ESRCH || ret == -DP_PROC_EEXEC)
		ret = 0;
	dp__hold_ends(p);
	if (detach_held(p) && !ret)
		ret = dp_err_set(&p->err, -EBUSY, "some threads of pid %d could not be detached",
				       (int)p->pid);
	p->attached = false;
	if (p->mem_fd >= 0) {
		close(p->mem_fd);
		p->mem_fd = -1;
	}
	p->syscall_insn = 0;
	return ret;
}

/*
 * Whether every thread of the process is one we hold: 1 yes, 0 not yet.
 * A listing of /proc/PID/task proves nothing: the kernel walks the thread
 * list by position, a thread that ends while the walk stands on it ends the
 * walk, and the next read resumes at a position that has moved past threads
 * never shown.  Nor does PTRACE_O_TRACECLONE catch every new thread: one
 * created with CLONE_UNTRACED goes to no tracer.  Only to be asked while
 * every thread we know is held: none of them can then start a thread or
 * end, so the count the kernel keeps (Threads: in /proc/PID/status) equals
 * ours, plus a leader that exited before the others and cannot be seized,
 * exactly when no other thread is left.  Fewer than ours: some were
 * killed, and with them every thread.
 */
static int all_held(struct dp_proc *p)
{
	struct dp_proc_status st;
	size_t expected = p->n;

	if (dp_proc_status_read(p->pid, 0, &st))
		return 1;	/* gone: what comes next says so */
	if (!dp__thread(p, p->pid)) {
		if (st.state != 'Z' && st.state != 'X')
			return 0;	/* a live leader we have not seized */
		expected++;
	}
	return st.threads <= 0 || (size_t)st.threads <= expected;
}

/*
 * Seizes every thread and holds them all.  Seize passes over the thread
 * list until one finds nothing new: from then on every thread we know was
 * seized with PTRACE_O_TRACECLONE, so a thread any of them creates is
 * attached by the kernel as it is born.  Then the known threads are held,
 * and the count tells whether a listing missed one (all_held): if so, list
 * again and hold what is found, until none is left.
 */
static int seize_all(struct dp_proc *p)
{
	uint64_t short_since = 0;
	unsigned int nap = 0;
	int ret;

	for (int round = 0; round < 1000; round++) {
		ret = seize_pass(p);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			short_since = 0;
			continue;
		}
		if (!p->n)
			return dp_err_set(&p->err, -DP_PROC_EZOMBIE, "pid %d has no live thread",
					  (int)p->pid);
		hold_begins(p);
		interrupt_all(p);
		ret = wait_held(p, p->timeout_ms);
		if (ret)
			return ret;
		if (all_held(p))
			return 0;
		/* A thread ending unheld still counts for a moment: wait for it. */
		if (!short_since)
			short_since = dp_now_ns();
		else if (dp_now_ns() - short_since > 2000000000ull)
			return dp_err_set(&p->err, -EAGAIN, "pid %d counts more threads than "
					  "/proc/%d/task shows (%zu found and held)", (int)p->pid,
					  (int)p->pid, p->n);
		snooze(&nap);
	}
	return dp_err_set(&p->err, -EAGAIN, "threads of pid %d appear faster than they can be "
			  "attached", (int)p->pid);
}

int dp_proc_attach(struct dp_proc *p, unsigned int flags)
{
	int ret;

	if (p->attached)
		return dp_err_set(&p->err, -EALREADY, "pid %d is already attached", (int)p->pid);
	dp_err_clear(&p->err);
	p->gone = p->exec_seen = false;
	p->n = 0;
	p->attach_flags = flags;
	p->seccomp = -1;
	ret = dp_proc_check(p->pid, flags, &p->err);
	if (ret)
		return ret;
	p->attached = true;
	ret = seize_all(p);
	if (!ret)
		ret = settle_signals(p);
	if (!ret)
		ret = open_mem(p);
	if (ret) {
		struct dp_err saved = p->err;

		dp_proc_detach(p);
		p->err = saved;
		return ret;
	}
	return 0;
}

static int check_held(struct dp_proc *p, pid_t tid, struct dp_thread **out)
{
	struct dp_thread *t = dp__thread(p, tid);

	if (!p->attached)
		return dp_err_set(&p->err, -EINVAL, "pid %d is not attached", (int)p->pid);
	if (!t)
		return dp_err_set(&p->err, -ESRCH, "thread %d of pid %d is not known (exited?)",
				  (int)tid, (int)p->pid);
	if (!held(t) && !(t->flags & T_OWNED))
		return dp_err_set(&p->err, -EBUSY, "thread %d of pid %d is running", (int)tid,
				  (int)p->pid);
	if (out)
		*out = t;
	return 0;
}

/* PTRACE_GETREGS or PTRACE_SETREGS (`verb` says which) on a held thread. */
static int regs_io(struct dp_proc *p, pid_t tid, enum __ptrace_request req,
		   struct user_regs_struct *regs, const char *verb)
{
	int ret = check_held(p, tid, NULL);

	if (ret)
		return ret;
	if (ptrace(req, tid, 0, regs))
		return dp_err_set(&p->err, -errno, "cannot %s the registers of thread %d: %s", verb,
				  (int)tid, strerror(errno));
	return 0;
}

int dp_proc_get_regs(struct dp_proc *p, pid_t tid, struct user_regs_struct *regs)
{
	return regs_io(p, tid, PTRACE_GETREGS, regs, "read");
}

int dp_proc_set_regs(struct dp_proc *p, pid_t tid, const struct user_regs_struct *regs)
{
	struct user_regs_struct copy = *regs;	/* ptrace takes no const */

	return regs_io(p, tid, PTRACE_SETREGS, &copy, "set");
}

bool dp_regs_in_syscall(const struct user_regs_struct *regs)
{
	return (int64_t)regs->orig_rax >= 0;
}

bool dp_regs_restarts(const struct user_regs_struct *regs)
{
	int64_t rax = (int64_t)regs->rax;

	return dp_regs_in_syscall(regs) &&
	       (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR || rax == -ERESTARTNOHAND ||
		rax == -ERESTART_RESTARTBLOCK);
}

static int mem_io(struct dp_proc *p, uint64_t addr, void *buf, size_t len, bool write)
{
	uint8_t *b = buf;

	if (!p->attached || p->mem_fd < 0)
		return dp_err_set(&p->err, -EINVAL, "pid %d is not attached", (int)p->pid);
	if (addr >= (1ull << 63) || addr + len < addr)
		return dp_err_set(&p->err, -EFAULT, "address %#" PRIx64 " is outside user space",
				  addr);
	while (len) {
		ssize_t n = write ? pwrite(p->mem_fd, b, len, (off_t)addr)
				  : pread(p->mem_fd, b, len, (off_t)addr);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 && errno != EIO ? errno : EFAULT;

			return dp_err_set(&p->err, -err, "cannot %s %zu bytes at %#" PRIx64
					  " in pid %d: %s", write ? "write" : "read", len, addr,
					  (int)p->pid, strerror(err));
		}
		/* Short: the next page may be unmapped; the next call says so. */
		b += n;
		addr += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int dp_proc_read(struct dp_proc *p, uint64_t addr, void *buf, size_t len)
{
	return mem_io(p, addr, buf, len, false);
}

int dp_proc_write(struct dp_proc *p, uint64_t addr, const void *buf, size_t len)
{
	return mem_io(p, addr, (void *)buf, len, true);
}

static const struct dp_pc_move *find_move(const struct dp_pc_move *map, size_t n, uint64_t from)
{
	for (size_t i = 0; i < n; i++)
		if (map[i].from == from)
			return &map[i];
	return NULL;
}

int dp_proc_move_pcs(struct dp_proc *p, uint64_t start, uint64_t end,
		     const struct dp_pc_move *map, size_t n, unsigned int *moved)
{
	struct user_regs_struct *regs;
	unsigned int count = 0;
	int ret = 0;

	if (moved)
		*moved = 0;
	if (!p->attached)
		return dp_err_set(&p->err, -EINVAL, "pid %d is not attached", (int)p->pid);
	regs = calloc(p->n ? p->n : 1, sizeof(*regs));
	if (!regs)
		return dp_err_set(&p->err, -ENOMEM, "out of memory");
	/* Check every thread before moving any: all or nothing. */
	for (size_t i = 0; i < p->n && !ret; i++) {
		const struct dp_thread *t = &p->t[i];
		const struct dp_pc_move *m, *sys;
		uint64_t rip;

		if (!held(t)) {
			ret = dp_err_set(&p->err, -EBUSY, "thread %d of pid %d is not stopped",
					 (int)t->tid, (int)p->pid);
			break;
		}
		ret = dp_proc_get_regs(p, t->tid, &regs[i]);
		if (ret)
			break;
		rip = regs[i].rip;
		if (rip < start || rip >= end)
			continue;
		m = find_move(map, n, rip);
		if (!m) {
			ret = dp_err_set(&p->err, -EINVAL, "thread %d of pid %d is at %#" PRIx64
					 ", inside the bytes [%#" PRIx64 ", %#" PRIx64
					 ") but not at an instruction the patch can move it from",
					 (int)t->tid, (int)p->pid, rip, start, end);
			break;
		}
		if (m->to == rip || !dp_regs_restarts(&regs[i]))
			continue;
		/* The kernel will step back over the syscall: it must move too. */
		sys = find_move(map, n, rip - 2);
		if (rip - 2 >= start && (!sys || sys->to != m->to - 2))
			ret = dp_err_set(&p->err, -EINVAL, "thread %d of pid %d sleeps in a system "
					 "call whose restart re-executes the syscall at %#" PRIx64
					 ", and the patch does not move that instruction along "
					 "with %#" PRIx64, (int)t->tid, (int)p->pid, rip - 2, rip);
		else if (rip - 2 < start)
			ret = dp_err_set(&p->err, -EINVAL, "thread %d of pid %d sleeps in a system "
					 "call at %#" PRIx64 " just before the patched bytes: it "
					 "cannot be moved", (int)t->tid, (int)p->pid, rip - 2);
	}
	for (size_t i = 0; i < p->n && !ret; i++) {
		const struct dp_pc_move *m;
		uint64_t rip = regs[i].rip;

		if (rip < start || rip >= end)
			continue;
		m = find_move(map, n, rip);
		if (m->to == rip)
			continue;
		regs[i].rip = m->to;
		ret = dp_proc_set_regs(p, p->t[i].tid, &regs[i]);
		if (!ret)
			count++;
	}
	free(regs);
	if (moved)
		*moved = count;
	return ret;
}
