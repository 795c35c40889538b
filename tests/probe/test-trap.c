/*
 * int3 sites and the agent's SIGTRAP handler, without a session (events
 * stay disabled; the probes' counters tell what ran): a site traps and
 * resumes in the relocated copy with errno intact; traps that are not ours
 * reach the program's handler with its flags and mask, or the default action
 * (the process dies of SIGTRAP, as it would have); a program that installs
 * its own handler later is put behind ours again by dpa_trap_check; a removed
 * site keeps working until its bytes are back.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "fixture.h"
#include "patch/analysis.h"
#include "patch/inproc.h"
#include "patch/plan.h"
#include "probe.h"
#include "tap.h"

static volatile sig_atomic_t got_info, got_plain, got_code;
static volatile sig_atomic_t mask_had_usr1;

static void info_handler(int sig, siginfo_t *si, void *ucv)
{
	sigset_t cur;

	got_info++;
	got_code = si->si_code;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	mask_had_usr1 = sigismember(&cur, SIGUSR1);
	(void)ucv;
}

static void plain_handler(int sig)
{
	got_plain++;
}

static int set_handler(int flags, bool info)
{
	struct sigaction sa = { 0 };

	if (info)
		sa.sa_sigaction = info_handler;
	else
		sa.sa_handler = plain_handler;
	sa.sa_flags = flags | (info ? SA_SIGINFO : 0);
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	return sigaction(SIGTRAP, &sa, NULL);
}

static void int3_not_ours(void)
{
	__asm__ volatile("int3");
}

/* Runs fn in a child; its wait status. */
static int in_child(void (*fn)(void))
{
	pid_t pid = tap_fork();
	int status = 0;

	if (pid == 0) {
		fn();
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return status;
}

static bool died_of_sigtrap(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGTRAP;
}

static void child_dfl_int3(void)
{
	signal(SIGTRAP, SIG_DFL);
	dpa_trap_check();	/* ours in front again, SIG_DFL behind it */
	int3_not_ours();
}

static void child_dfl_raise(void)
{
	signal(SIGTRAP, SIG_DFL);
	dpa_trap_check();
	raise(SIGTRAP);
}

static void child_ign(void)
{
	signal(SIGTRAP, SIG_IGN);
	dpa_trap_check();
	raise(SIGTRAP);		/* ignored, as without us */
	int3_not_ours();	/* a CPU trap is never ignored: dies */
}

static void child_resethand(void)
{
	got_info = 0;
	set_handler(SA_RESETHAND, true);
	dpa_trap_check();
	int3_not_ours();	/* the program's handler, once */
	if (got_info != 1)
		_exit(3);
	int3_not_ours();	/* then the default: dies */
}

int main(void)
{
	struct dp_code_pool *pool = dp_code_pool_new();
	struct dp_object *obj = dp_object_open("/proc/self/exe");
	struct dp_inproc_site site;
	struct dpa_trap_stats ts0, ts1;
	struct dpa_probe_stats st;
	struct dpa_probe *p;
	struct dp_patch plan;
	struct dp_ctx ctx;
	enum dp_reason why;
	uint64_t bias, at = (uint64_t)(uintptr_t)fx_int3;
	const struct dp_function *fn;
	int ret, r, e;
	void *arg;

	/* The program's handler comes first: ours must keep it. */
	tap_ok(set_handler(0, true) == 0, "the program's SIGTRAP handler installed");

	fn = obj ? dp_object_function_by_name(obj, "fx_int3") : NULL;
	if (!tap_ok(pool && fn, "fx_int3 found in this program"))
		return tap_done();
	bias = at - fn->start;
	dp_ctx_parse("reg:edi", NULL, NULL, &ctx, NULL);
	p = dpa_probe_new(at, "trap_test", DPA_PROBE_AT_ENTRY, &ctx, 1, NULL);
	ret = dp_plan_site(obj, fn->start, &plan);
	tap_ok(p && !ret && plan.method == DP_SITE_INT3, "fx_int3's entry is planned as an int3 (%s)",
	       dp_reason_name(plan.reason));
	arg = p;
	ret = dp_inproc_prepare(pool, &site, &plan, bias, dp_probe_hit, &arg, dp_vec_save_detect(),
				&why);
	tap_ok(ret == 0, "int3 prepared");
	ret = dpa_trap_add(site.win.addr, site.tramp.insn_at[0], &p, 1);
	tap_ok(ret == 0, "site added");
	tap_ok(dp_inproc_commit(pool, &site) == 0, "int3 written");

	dpa_trap_stats(&ts0);
	errno = 77;
	r = fx_int3(10);
	e = errno;
	dpa_trap_stats(&ts1);
	dpa_probe_stats(p, &st);
	tap_ok(r == 55, "the probed function computes what it did (%d)", r);
	tap_ok(e == 77, "errno is kept across the trap (%d)", e);
	tap_ok(st.hits == 1 && ts1.ours == ts0.ours + 1 && got_info == 0,
	       "one trap, ours, the program's handler not called");
	/* Entering past the int3 byte runs the original code, untrapped. */
	r = fx_int3_alt(4);
	dpa_probe_stats(p, &st);
	tap_ok(r == 10 && st.hits == 1, "entry+1 of the int3 site still runs unprobed (%d)", r);

	/* Traps that are not ours go to the program's handler, with its mask. */
	raise(SIGTRAP);
	tap_ok(got_info == 1 && got_code == SI_TKILL, "a sent SIGTRAP reaches the program's handler");
	tap_ok(mask_had_usr1, "... under the mask the program asked for");
	int3_not_ours();
	tap_ok(got_info == 2 && got_code == SI_KERNEL,
	       "an int3 that is not ours reaches the program's handler, which returns past it");
	dpa_trap_stats(&ts1);
	tap_ok(ts1.chained == ts0.chained + 2, "both counted as chained");

	/* The program replaces SIGTRAP's handler: ours goes back in front. */
	set_handler(0, false);
	tap_ok(dpa_trap_check() == 1, "dpa_trap_check puts ours back in front of a new handler");
	tap_ok(dpa_trap_check() == 0, "... once");
	r = fx_int3(4);
	int3_not_ours();
	dpa_probe_stats(p, &st);
	tap_ok(r == 10 && st.hits == 2, "our site traps to us again");
	tap_ok(got_plain == 1 && got_info == 2, "the program's new handler gets the traps not ours");

	/* Dispositions without a handler: as the kernel would do them. */
	tap_ok(died_of_sigtrap(in_child(child_dfl_int3)),
	       "default disposition: an int3 not ours kills the process with SIGTRAP");
	tap_ok(died_of_sigtrap(in_child(child_dfl_raise)),
	       "default disposition: a sent SIGTRAP kills the process");
	tap_ok(died_of_sigtrap(in_child(child_ign)),
	       "ignored: a sent SIGTRAP is ignored, a CPU trap still kills");
	tap_ok(died_of_sigtrap(in_child(child_resethand)),
	       "SA_RESETHAND: the program's handler once, then the default");

	/* Removal: bytes first, then the site; a late trap still resumes. */
	tap_ok(dp_inproc_remove(pool, &site) == 0 && dpa_trap_remove(site.win.addr) == 0,
	       "site removed");
	r = fx_int3(5);
	dpa_probe_stats(p, &st);
	tap_ok(r == 15 && st.hits == 2, "the function runs its own bytes again, no hit");
	tap_ok(dpa_trap_remove(site.win.addr) == 0, "removing twice is harmless");
	tap_ok(dpa_trap_remove(12345) == -ENOENT, "removing an unknown site: -ENOENT");
	tap_ok(dpa_trap_add(0, 1, NULL, 0) == -EINVAL, "site 0 refused");
	return tap_done();
}
