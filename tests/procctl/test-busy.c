/*
 * Loading a library into programs that never sleep in a blocking system
 * call (busy-target, python3): the host thread is one stopped in user code
 * whose stack holds no C library frame but its start frames.  A single
 * computing thread, several, a thread that spends nearly all its time
 * inside malloc/free (stops there are refused and the search goes on; the
 * load never runs there), python3 in a loop of json work; each program's
 * output and exit are unchanged.  A program that computes inside a callback
 * of dl_iterate_phdr() (the loader lock held) is refused within the time
 * given, with the frames seen, and is unharmed.
 *
 * The wait for the load is about progress, not time: a load whose thread
 * waits for the loader lock (held by a thread computing inside
 * dl_iterate_phdr) fails after the idle bound, saying it waits on a lock;
 * a load that computes (its constructor spins for CPU time) while starved
 * of CPU (the target pinned to one CPU with hogs there) succeeds although
 * it lasts longer than the idle bound; one that works past the cap fails,
 * saying so.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/inject.h"
#include "procctl-util.h"
#include "tap.h"

static char dir[] = "/tmp/procctl-busy-XXXXXX";
static char out_path[PATH_MAX], env_out[PATH_MAX + 32], probe[PATH_MAX];

struct busy {
	pid_t pid;
	int out;
};

/* Starts argv with PROCCTL_PROBE_OUT set, its stdout in a pipe; waits for "ready". */
static int busy_start(struct busy *b, char *const argv[])
{
	struct target t;
	char line[256];
	int fds[2];

	if (pipe(fds))
		return -1;
	b->pid = tap_fork();
	if (b->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		putenv(env_out);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	b->out = fds[0];
	memset(&t, 0, sizeof(t));
	t.out = b->out;
	return target_line(&t, line, sizeof(line), 10000) || strncmp(line, "ready", 5) ? -1 : 0;
}

/* Its last line and exit status (-1: did not end in time, killed). */
static int busy_end(struct busy *b, char *last, size_t len, int timeout_ms)
{
	struct target t;
	char line[256];
	int status = 0;
	struct dp_deadline d;

	memset(&t, 0, sizeof(t));
	t.out = b->out;
	last[0] = '\0';
	dp_deadline_start(&d, timeout_ms, NULL);
	while (target_line_until(&t, line, sizeof(line), &d) == 0)
		snprintf(last, len, "%s", line);
	close(b->out);
	while (waitpid(b->pid, &status, WNOHANG) == 0) {
		if (dp_deadline_passed(&d)) {
			kill(b->pid, SIGKILL);
			waitpid(b->pid, &status, 0);
			return -1;
		}
		util_sleep_ms(10);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static bool loaded(pid_t pid)
{
	FILE *f = fopen(out_path, "r");
	char want[64], buf[512];
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), "loaded pid=%d ", (int)pid);
	while (fgets(buf, sizeof(buf), f))
		found |= !strncmp(buf, want, strlen(want));
	fclose(f);
	return found;
}

static void diag_result(const struct dp_inject_result *r)
{
	tap_diag("host %d at %s; %u stacks walked, %u refused; host found in %.2f ms, "
		 "held %.2f ms, total %.2f ms", (int)r->host,
		 r->host_frame[0] ? r->host_frame : "(a blocking call)", r->stacks_walked,
		 r->stacks_refused, r->find_ns / 1e6, r->held_ns / 1e6, r->total_ns / 1e6);
}

/* Loads the probe library into argv's process; the program must end as usual. */
static void load_into(const char *what, char *const argv[], const char *done,
		      struct dp_inject_result *r)
{
	struct dp_err err = DP_ERR_INIT;
	struct busy b;
	char last[256];
	int ret, st;

	memset(r, 0, sizeof(*r));
	if (!tap_ok(busy_start(&b, argv) == 0, "%s starts", what))
		return;
	util_sleep_ms(100);
	ret = dp_inject_agent(b.pid, probe, NULL, r, &err);
	tap_ok(ret == 0 && loaded(b.pid), "the library is loaded into %s (%d: %s)", what, ret,
	       err.msg);
	diag_result(r);
	tap_ok(r->host_frame[0] && !strstr(r->host_frame, "libc.so") &&
	       !strstr(r->host_frame, "ld-linux"),
	       "from a thread stopped in user code, outside the C library (%s)", r->host_frame);
	/* Its run (30 s at most) ends now: a run of fixed length could end
	 * before the load did, on a busy machine. */
	kill(b.pid, SIGUSR1);
	st = busy_end(&b, last, sizeof(last), 15000);
	tap_ok(st == 0 && !strcmp(last, done), "%s ends as it would have: exit %d, \"%s\"", what,
	       st, last);
}

static void test_busy_c(void)
{
	char *spin[] = { "./busy-target", "spin", "30", NULL };
	char *threads[] = { "./busy-target", "threads", "30", "4", NULL };
	char *mallocs[] = { "./busy-target", "malloc", "30", NULL };
	struct dp_inject_result r;
	unsigned int refused = 0;

	load_into("a single computing thread", spin, "done errors=0", &r);
	load_into("four computing threads", threads, "done errors=0", &r);
	/* The first stop lands inside malloc nearly always; a few tries make it sure. */
	for (int i = 0; i < 5 && !refused; i++) {
		load_into("a thread inside malloc/free most of its time", mallocs,
			  "done errors=0", &r);
		refused += r.stacks_refused;
	}
	tap_ok(refused > 0, "stops inside malloc/free were refused and the search went on "
	       "(%u refused)", refused);
}

static void test_python(void)
{
	char *py[] = { "python3", "-c",
		"import json, signal, time, sys\n"
		"ended = []\n"
		"signal.signal(signal.SIGUSR1, lambda *a: ended.append(1))\n"
		"print('ready', flush=True)\n"
		"doc = {'a': [1, 2.5, 'x' * 40, None, True], 'b': {'c': list(range(50))}}\n"
		"end = time.monotonic() + 30\n"
		"n = 0\n"
		"while time.monotonic() < end and not ended:\n"
		"    s = json.dumps(doc)\n"
		"    assert json.loads(s) == doc\n"
		"    n += 1\n"
		"print('done', 'ok' if n > 100 else 'slow')\n", NULL };
	struct dp_inject_result r;

	if (system("python3 -c pass 2>/dev/null")) {
		tap_ok(false, "python3 is installed (tools/deps.sh)");
		return;
	}
	load_into("python3 in a loop of json work", py, "done ok", &r);
}

static void test_refused(void)
{
	char *locked[] = { "./busy-target", "locked", "30", NULL };
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct dp_err err = DP_ERR_INIT;
	struct busy b;
	char last[256];
	int64_t t0;
	int ret, st;

	if (!tap_ok(busy_start(&b, locked) == 0,
		    "a program computing inside dl_iterate_phdr (the loader lock held) starts"))
		return;
	dp_inject_opts_init(&o);
	o.catch_ms = 300;
	t0 = util_now_ms();
	ret = dp_inject_agent(b.pid, probe, &o, &r, &err);
	tap_ok(ret == -DP_INJECT_ENOHOST && strstr(err.msg, "inside the C library") &&
	       strstr(err.msg, "libc.so.6") && strstr(err.msg, "LD_PRELOAD") &&
	       util_now_ms() - t0 < 120000,
	       "refused, not hung (%" PRId64 " ms), saying which frames it saw (%d: %s)",
	       util_now_ms() - t0, ret, err.msg);
	tap_ok(!loaded(b.pid), "nothing was loaded");
	kill(b.pid, SIGUSR1);
	st = busy_end(&b, last, sizeof(last), 15000);
	tap_ok(st == 0 && !strcmp(last, "done errors=0"),
	       "the program ends as it would have: exit %d, \"%s\"", st, last);
}

/* Starts argv, loads the probe with o (its constructor spinning `spin`
 * ms of CPU), returns what dp_inject_agent said; the program is ended
 * (SIGUSR1) and must end as it would have once the load is done. */
static int load_with(const char *what, char *const argv[], struct dp_inject_opts *o,
		     const char *spin, struct busy *b, struct dp_inject_result *r,
		     struct dp_err *err, int64_t *ms)
{
	int64_t t0;
	int ret;

	if (!tap_ok(busy_start(b, argv) == 0, "%s starts", what))
		return -ECHILD;
	if (spin) {
		o->env_name = "PROCCTL_PROBE_SPIN_MS";
		o->env_value = spin;
	}
	t0 = util_now_ms();
	ret = dp_inject_agent(b->pid, probe, o, r, err);
	*ms = util_now_ms() - t0;
	return ret;
}

/* The end of a program load_with started: once the load ran (within
 * timeout_ms), SIGUSR1, and its last line. */
static void end_after_load(const char *what, struct busy *b, int timeout_ms)
{
	char last[256];
	struct dp_deadline d;
	int st;

	dp_deadline_start(&d, timeout_ms, NULL);
	while (!loaded(b->pid) && !dp_deadline_passed(&d))
		util_sleep_ms(50);
	tap_ok(loaded(b->pid), "%s: the load went on in its own thread and finished", what);
	kill(b->pid, SIGUSR1);
	st = busy_end(b, last, sizeof(last), 15000);
	tap_ok(st == 0 && !strcmp(last, "done errors=0"),
	       "%s: the program ends as it would have: exit %d, \"%s\"", what, st, last);
}

static void test_lock_waited(void)
{
	/* The lock held 25 s: past the 10 s the load waits without progress. */
	char *argv[] = { "./busy-target", "lockwait", "60", "25", NULL };
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct dp_err err = DP_ERR_INIT;
	struct busy b;
	int64_t ms;
	int ret;

	dp_inject_opts_init(&o);
	ret = load_with("a program with a thread inside dl_iterate_phdr (the loader lock held)",
			argv, &o, NULL, &b, &r, &err, &ms);
	if (ret == -ECHILD)
		return;
	/* No upper bound on ms: a load that waited past the lock's 25 s
	 * would have succeeded, and a machine stopped meanwhile lengthens
	 * it without the load being at fault. */
	tap_ok(ret == -ETIMEDOUT && strstr(err.msg, "no progress for 10000 ms") &&
	       strstr(err.msg, "futex") && ms >= 10000,
	       "a load waiting for the loader lock fails after 10 s without progress, saying "
	       "where it waits (%" PRId64 " ms; %d: %s)", ms, ret, err.msg);
	tap_ok(!loaded(b.pid), "it did not load meanwhile");
	/* The lock let go, the load goes on (and the program ends). */
	end_after_load("the loader lock let go", &b, 40000);
}

/* The CPU to starve on: the first this process may use. */
static int starve_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			return c;
	return 0;
}

/* Every thread of pid on cpu alone.  0 or -1. */
static int pin_threads(pid_t pid, int cpu)
{
	char path[64];
	cpu_set_t set;
	struct dirent *d;
	DIR *td;
	int ret = 0, n = 0;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	td = opendir(path);
	if (!td)
		return -1;
	while ((d = readdir(td)))
		if (d->d_name[0] != '.') {
			ret |= sched_setaffinity(atoi(d->d_name), sizeof(set), &set);
			n++;
		}
	closedir(td);
	return ret || !n ? -1 : 0;
}

static void test_starved(void)
{
	char *argv[] = { "./busy-target", "spin", "60", NULL };
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct dp_err err = DP_ERR_INIT;
	pid_t hogs[4];
	int cpu = starve_cpu(), nhogs = 0;
	struct busy b;
	int64_t ms;
	int ret;

	if (!tap_ok(busy_start(&b, argv) == 0, "a computing program starts"))
		return;
	tap_ok(pin_threads(b.pid, cpu) == 0, "its threads pinned to CPU %d", cpu);
	for (int i = 0; i < 4; i++) {
		pid_t h = tap_fork();

		if (h == 0) {
			cpu_set_t set;
			volatile unsigned long x = 0;

			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
			alarm(120);
			for (;;)
				x++;
		}
		if (h > 0)
			hogs[nhogs++] = h;
	}
	tap_ok(nhogs == 4, "4 CPU hogs on CPU %d beside it", cpu);
	dp_inject_opts_init(&o);
	/* Half a second without progress would fail it: it makes progress,
	 * computing (0.3 s of CPU time, shared with 5 on one CPU). */
	o.load_timeout_ms = 500;
	o.env_name = "PROCCTL_PROBE_SPIN_MS";
	o.env_value = "300";
	ret = dp_inject_agent(b.pid, probe, &o, &r, &err);
	ms = (int64_t)(r.load_ns / 1000000);
	for (int i = 0; i < nhogs; i++) {
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
	tap_ok(ret == 0 && loaded(b.pid) && ms > o.load_timeout_ms,
	       "a load slowed down by CPU starvation succeeds while it works: %" PRId64 " ms, "
	       "past the %d ms bound without progress (%d: %s)", ms, o.load_timeout_ms, ret,
	       err.msg);
	end_after_load("starved", &b, 1000);
}

static void test_capped(void)
{
	char *argv[] = { "./busy-target", "spin", "60", NULL };
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct dp_err err = DP_ERR_INIT;
	struct busy b;
	int64_t ms;
	int ret;

	dp_inject_opts_init(&o);
	o.load_timeout_ms = 500;
	o.load_cap_ms = 1000;
	/* 3 s of CPU time take 3 s at least. */
	ret = load_with("a computing program", argv, &o, "3000", &b, &r, &err, &ms);
	if (ret == -ECHILD)
		return;
	tap_ok(ret == -ETIMEDOUT && strstr(err.msg, "has not finished after 1000 ms") &&
	       strstr(err.msg, "working"),
	       "a load that works past the cap fails, saying so (%" PRId64 " ms; %d: %s)", ms,
	       ret, err.msg);
	end_after_load("past the cap", &b, 30000);
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	alarm(600);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(dir))
		return 1;
	snprintf(out_path, sizeof(out_path), "%s/loaded.txt", dir);
	snprintf(env_out, sizeof(env_out), "PROCCTL_PROBE_OUT=%s", out_path);
	util_abspath(".libs/libprocctl-probe.so", probe);

	test_busy_c();
	test_python();
	test_refused();
	test_lock_waited();
	test_starved();
	test_capped();

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		tap_diag("could not remove %s", dir);
	return tap_done();
}
