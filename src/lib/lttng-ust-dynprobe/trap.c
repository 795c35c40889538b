/*
 * int3 sites: the SIGTRAP handler and the table it looks sites up in (see
 * probe.h for the contract).
 *
 * The table is a sorted array, replaced as a whole on every change and
 * published with one atomic pointer store; the handler binary-searches
 * whichever version it loaded, without a lock.  A replaced array is freed
 * once no handler is running (a count of handlers inside), or kept on a list
 * for a later attempt: a handler may not block on the writer.  Removed sites
 * stay in the table without probes: a thread that trapped just before the
 * original bytes came back still resumes in the relocated copy.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "hit.h"
#include "patch/sigregs.h"
#include "sorted.h"
#include "probe.h"

struct trap_site {
	uint64_t site, resume;
	unsigned n;
	struct dpa_probe *probes[DPA_TRAP_MAX_PROBES];
};

struct trap_table {
	size_t n;
	struct trap_table *retired_next;
	struct trap_site v[];
};

static _Atomic(struct trap_table *) table;
static _Atomic long inside;		/* handlers running now */
static struct trap_table *retired;	/* replaced, not freed yet */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The disposition ours replaced: where traps that are not ours go.  Two
 * copies, so that a handler never reads one being rewritten. */
static struct sigaction prevs[2];
static _Atomic int prev_at;
static _Atomic bool installed;
static _Atomic uint64_t n_ours, n_chained, n_reasserted;

/* ---- the handler ------------------------------------------------------ */

static const struct trap_site *lookup(const struct trap_table *t, uint64_t site)
{
	size_t i;

	if (!t)
		return NULL;
	i = DP_BOUND(t->v, t->n, site, site, DP_BOUND_LOWER);
	return i < t->n && t->v[i].site == site ? &t->v[i] : NULL;
}

/*
 * A trap that is not ours: do what the program's disposition says, as if we
 * had not been there.
 */
static void chain(int sig, siginfo_t *si, ucontext_t *uc)
{
	int at = atomic_load(&prev_at);
	struct sigaction p = prevs[at];
	greg_t *g = uc->uc_mcontext.gregs;
	/* Raised by the CPU (int3, single step, debug registers), not sent. */
	bool hw = si->si_code > 0;

	atomic_fetch_add_explicit(&n_chained, 1, memory_order_relaxed);
	if (p.sa_handler == SIG_IGN && !hw)
		return;
	if (p.sa_handler == SIG_DFL || p.sa_handler == SIG_IGN) {
		/* The kernel forces the default action on a CPU trap that is
		 * ignored.  Running the int3 again with the default disposition
		 * kills the process at the real place, core dump included. */
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigset_t set;

		sigaction(SIGTRAP, &dfl, NULL);
		if (si->si_code == SI_KERNEL && *(const uint8_t *)(g[REG_RIP] - 1) == 0xcc) {
			g[REG_RIP] -= 1;
			return;
		}
		if (hw && (g[REG_EFL] & 0x100))
			return;		/* single step: the next instruction traps again */
		sigemptyset(&set);
		sigaddset(&set, SIGTRAP);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		raise(SIGTRAP);
		return;
	}

	/* The program's handler, under the mask it asked for. */
	sigset_t mask = p.sa_mask, old;

	if (!(p.sa_flags & SA_NODEFER))
		sigaddset(&mask, SIGTRAP);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	if (p.sa_flags & SA_RESETHAND) {
		/* One-shot: later traps that are not ours get the default. */
		prevs[at].sa_handler = SIG_DFL;
		prevs[at].sa_flags &= ~SA_SIGINFO;
	}
	if (p.sa_flags & SA_SIGINFO)
		p.sa_sigaction(sig, si, uc);
	else
		p.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_sigtrap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	int saved_errno = errno;

	if (si->si_code == SI_KERNEL) {
		const struct trap_site *s;
		struct dp_regs r;

		atomic_fetch_add(&inside, 1);
		s = lookup(atomic_load_explicit(&table, memory_order_acquire),
			   (uint64_t)g[REG_RIP] - 1);
		if (s) {
			atomic_fetch_add_explicit(&n_ours, 1, memory_order_relaxed);
			dp_regs_from_gregs(g, s->site, &r);
			dpa_self.trap_regs = &r;
			dpa_self.trap_xmm = uc->uc_mcontext.fpregs ? uc->uc_mcontext.fpregs->_xmm
								   : NULL;
			for (unsigned i = 0; i < s->n; i++)
				dp_probe_hit(s->probes[i], &r);
			dpa_self.trap_regs = NULL;
			g[REG_RIP] = (greg_t)s->resume;
			atomic_fetch_sub(&inside, 1);
			errno = saved_errno;
			return;
		}
		atomic_fetch_sub(&inside, 1);
	}
	chain(sig, si, uc);
	errno = saved_errno;
}

/* ---- installing the handler ------------------------------------------- */

static bool is_ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_sigtrap;
}

/* Puts ours in front, keeping what was there as `prev`.  Under `lock`.
 * 1 if it installed, 0 if ours was there, or -errno. */
static int assert_handler(void)
{
	struct sigaction cur, ours = { .sa_sigaction = on_sigtrap };

	if (sigaction(SIGTRAP, NULL, &cur))
		return -errno;
	if (is_ours(&cur))
		return 0;
	/* SA_NODEFER: an int3 reached from inside the handler (a probe on
	 * memcpy) must trap again, not find SIGTRAP blocked: the kernel kills
	 * a process whose CPU trap signal is blocked.  SA_RESTART and
	 * SA_ONSTACK as the program asked: a SIGTRAP sent to it interrupts
	 * system calls, and runs on the alternate stack, as it would have
	 * (a discarded or fatal one restarts: it never returned EINTR). */
	ours.sa_flags = SA_SIGINFO | SA_NODEFER;
	if (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)
		ours.sa_flags |= SA_RESTART;
	else
		ours.sa_flags |= cur.sa_flags & (SA_RESTART | SA_ONSTACK);
	sigemptyset(&ours.sa_mask);
	prevs[!atomic_load(&prev_at)] = cur;
	atomic_store(&prev_at, !atomic_load(&prev_at));
	if (sigaction(SIGTRAP, &ours, NULL))
		return -errno;
	if (atomic_exchange(&installed, true))
		atomic_fetch_add(&n_reasserted, 1);
	return 1;
}

/* ---- the table -------------------------------------------------------- */

/* Frees replaced tables once no handler runs.  Under `lock`. */
static void reclaim(struct trap_table *old)
{
	if (old) {
		old->retired_next = retired;
		retired = old;
	}
	/* A handler is short: wait a little, then leave it for next time. */
	for (int i = 0; i < 1000 && atomic_load(&inside); i++) {
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
	}
	if (atomic_load(&inside))
		return;
	while (retired) {
		struct trap_table *next = retired->retired_next;

		free(retired);
		retired = next;
	}
}

/* A copy of the current table with room for one more entry. */
static struct trap_table *table_copy(const struct trap_table *cur, size_t extra)
{
	size_t n = cur ? cur->n : 0;
	struct trap_table *t = malloc(sizeof(*t) + (n + extra) * sizeof(t->v[0]));

	if (!t)
		return NULL;
	t->n = n;
	t->retired_next = NULL;
	if (n)
		memcpy(t->v, cur->v, n * sizeof(t->v[0]));
	return t;
}

DPA_EXPORT int dpa_trap_add(uint64_t site, uint64_t resume, struct dpa_probe *const *probes,
			    size_t n)
{
	struct trap_table *cur, *t;
	struct trap_site *s;
	size_t at;
	int ret;

	if (n > DPA_TRAP_MAX_PROBES)
		return -E2BIG;
	if (!site || !resume || (n && !probes))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	cur = atomic_load(&table);
	t = table_copy(cur, 1);
	if (!t) {
		pthread_mutex_unlock(&lock);
		return -ENOMEM;
	}
	for (at = 0; at < t->n && t->v[at].site < site; at++)
		;
	if (at == t->n || t->v[at].site != site) {
		memmove(&t->v[at + 1], &t->v[at], (t->n - at) * sizeof(t->v[0]));
		t->n++;
	}
	s = &t->v[at];
	memset(s, 0, sizeof(*s));
	s->site = site;
	s->resume = resume;
	s->n = (unsigned)n;
	for (size_t i = 0; i < n; i++)
		s->probes[i] = probes[i];
	/* The handler first: a site is live as soon as the table holds it. */
	ret = assert_handler();
	if (ret < 0) {
		free(t);
		pthread_mutex_unlock(&lock);
		return ret;
	}
	atomic_store_explicit(&table, t, memory_order_release);
	reclaim(cur);
	pthread_mutex_unlock(&lock);
	return 0;
}

DPA_EXPORT int dpa_trap_remove(uint64_t site)
{
	struct trap_table *cur, *t;
	struct trap_site *s;

	pthread_mutex_lock(&lock);
	cur = atomic_load(&table);
	if (!lookup(cur, site)) {
		pthread_mutex_unlock(&lock);
		return -ENOENT;
	}
	t = table_copy(cur, 0);
	if (!t) {
		pthread_mutex_unlock(&lock);
		return -ENOMEM;
	}
	/* Kept, without probes: see the top of the file. */
	s = (struct trap_site *)lookup(t, site);
	s->n = 0;
	atomic_store_explicit(&table, t, memory_order_release);
	reclaim(cur);
	pthread_mutex_unlock(&lock);
	return 0;
}

DPA_EXPORT int dpa_trap_check(void)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (atomic_load(&installed))
		ret = assert_handler();
	pthread_mutex_unlock(&lock);
	return ret;
}

DPA_EXPORT void dpa_trap_stats(struct dpa_trap_stats *st)
{
	st->ours = atomic_load(&n_ours);
	st->chained = atomic_load(&n_chained);
	st->reasserted = atomic_load(&n_reasserted);
}
