/*
 * Loading a library into a running procctl-target with dp_inject_agent():
 * the constructor runs in the target with the variable of the options set
 * (a 127-byte value: the longest), the variable is gone again afterwards,
 * a variable the target has already is left as it is, a bad one refused, the helper thread and its pages go
 * away, a second load does nothing, dlopen's own error comes back, and
 * nothing deadlocks when the target is held inside malloc (a thread blocked
 * in malloc_stats() with the main arena locked, threads looping on malloc)
 * and inside the loader (a thread looping on dlopen/dlclose).  A process
 * with no thread asleep gets a host caught at its next blocking call.
 * Refused: liblttng-ust.so.0 loaded, a statically linked program, a stopped
 * process.  The real agent is loaded too when it has been built.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/inject.h"
#include "proc/maps.h"
#include "proc/ptrace.h"
#include "procctl-util.h"
#include "tap.h"

static char dir[] = "/tmp/procctl-inject-XXXXXX";
static char out_path[PATH_MAX], env_out[PATH_MAX + 32];
static char probe[PATH_MAX], bad[PATH_MAX], dummy[PATH_MAX];

static int count_threads(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Anonymous read-execute mappings: where injection puts its code. */
static int count_anon_rx(pid_t pid)
{
	struct dp_maps maps;
	int n = 0;

	if (dp_maps_read(pid, &maps))
		return -1;
	for (size_t i = 0; i < maps.n; i++)
		n += !maps.v[i].path && maps.v[i].prot == (PROT_READ | PROT_EXEC);
	dp_maps_free(&maps);
	return n;
}

static bool maps_has(pid_t pid, const char *name)
{
	struct dp_maps maps;
	bool found = false;

	if (dp_maps_read(pid, &maps))
		return false;
	for (size_t i = 0; i < maps.n; i++)
		found |= maps.v[i].path && strstr(maps.v[i].path, name);
	dp_maps_free(&maps);
	return found;
}

/* The constructor's line for pid, if it wrote one. */
static bool loaded_line(pid_t pid, char *line, size_t len)
{
	FILE *f = fopen(out_path, "r");
	char want[64], buf[512];
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), "loaded pid=%d ", (int)pid);
	while (fgets(buf, sizeof(buf), f))
		if (!strncmp(buf, want, strlen(want))) {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(line, len, "%s", buf);
			found = true;
		}
	fclose(f);
	return found;
}

static void diag_result(const struct dp_inject_result *r)
{
	tap_diag("host thread %d, held %.3f ms, load %.3f ms, total %.3f ms", (int)r->host,
		 r->held_ns / 1e6, r->load_ns / 1e6, r->total_ns / 1e6);
}

static void test_basic(void)
{
	char *argv[] = { "./procctl-target", "-t", "8", NULL };
	char *env[] = { env_out, NULL };
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct target tg;
	char line[512], value[DP_INJECT_ENV_VALUE_MAX], want[DP_INJECT_ENV_VALUE_MAX + 8];
	struct dp_err err = DP_ERR_INIT;
	int threads, rx, ret;

	if (!tap_ok(target_spawn(&tg, "./procctl-target", argv, env, false) == 0,
		    "the target starts"))
		return;
	threads = count_threads(tg.pid);
	rx = count_anon_rx(tg.pid);
	memset(value, 'v', sizeof(value) - 1);
	value[0] = '/';
	value[sizeof(value) - 1] = '\0';
	snprintf(want, sizeof(want), "socket=%s", value);
	dp_inject_opts_init(&o);
	o.env_name = "LTTNG_DYNPROBE_APP_SOCKET";
	o.env_value = value;
	value[sizeof(value) - 1] = 'x';
	ret = dp_inject_agent(tg.pid, probe, &o, &r, &err);
	tap_ok(ret == -EINVAL && strstr(err.msg, "at most 127 bytes"),
	       "a value of 128 bytes is refused, nothing done (%d: %s)", ret, err.msg);
	value[sizeof(value) - 1] = '\0';
	o.env_name = "A=B";
	ret = dp_inject_agent(tg.pid, probe, &o, &r, &err);
	tap_ok(ret == -EINVAL && !maps_has(tg.pid, "libprocctl-probe.so"),
	       "so is a name with '=' (%d: %s)", ret, err.msg);
	o.env_name = "LTTNG_DYNPROBE_APP_SOCKET";
	ret = dp_inject_agent(tg.pid, probe, &o, &r, &err);
	tap_ok(ret == 0, "the library is loaded (%d: %s)", ret, err.msg);
	diag_result(&r);
	tap_ok(loaded_line(tg.pid, line, sizeof(line)) && strstr(line, "socket=") &&
	       !strcmp(strstr(line, "socket="), want) &&
	       kv(line, "tid") != (uint64_t)tg.pid,
	       "its constructor ran in the target, in a thread of its own, and saw "
	       "LTTNG_DYNPROBE_APP_SOCKET, 127 bytes (%.60s...)", line);
	tap_ok(maps_has(tg.pid, "libprocctl-probe.so"), "the target maps it");
	tap_ok(target_ask(&tg, "getenv LTTNG_DYNPROBE_APP_SOCKET", "env", line, sizeof(line),
			  TARGET_ANSWER_MS) == 0 && strstr(line, "unset"),
	       "the variable is gone from the target's environment again (%s)", line);
	tap_ok(target_ask(&tg, "getenv LTTNG_UST_REGISTER_TIMEOUT", "env", line, sizeof(line),
			  TARGET_ANSWER_MS) == 0 && strstr(line, "unset"),
	       "LTTNG_UST_REGISTER_TIMEOUT was never set (%s)", line);
	{
		struct dp_deadline d;

		dp_deadline_start(&d, TARGET_ANSWER_MS, NULL);
		while (!dp_deadline_passed(&d) &&
		       (count_threads(tg.pid) != threads || count_anon_rx(tg.pid) != rx))
			util_sleep_ms(10);
	}
	tap_ok(count_threads(tg.pid) == threads && count_anon_rx(tg.pid) == rx,
	       "the helper thread exited and unmapped its code (%d threads, %d code pages; "
	       "before %d and %d)", count_threads(tg.pid), count_anon_rx(tg.pid), threads, rx);

	ret = dp_inject_agent(tg.pid, probe, &o, &r, &err);
	tap_ok(ret == DP_INJECT_ALREADY, "a second load does nothing (%d: %s)", ret, err.msg);

	ret = dp_inject_agent(tg.pid, bad, &o, &r, &err);
	tap_ok(ret == -DP_INJECT_EDLOPEN && strstr(err.msg, "undefined symbol") &&
	       strstr(err.msg, "procctl_function_nobody_defines"),
	       "dlopen's own error comes back (%d: %s)", ret, err.msg);

	tap_ok(target_ask(&tg, "report", "report", line, sizeof(line), TARGET_ANSWER_MS) == 0 &&
	       kv(line, "errors") == 0 && kv(line, "short") == 0 && kv(line, "eintr") == 0,
	       "the target kept computing right and sleeping in full (%s)", line);
	tap_ok(target_quit(&tg, 5000) == 0, "the target exits cleanly");
}

/* Reads the target's stderr slowly, so that malloc_stats() blocks in write(). */
static pid_t start_drainer(int fd)
{
	pid_t child = tap_fork();

	if (child == 0) {
		char buf[256];

		for (;;) {
			if (read(fd, buf, sizeof(buf)) <= 0)
				_exit(0);
			util_sleep_ms(2);
		}
	}
	return child;
}

static void test_malloc_and_loader(void)
{
	char *argv[] = { "./procctl-target", "-t", "4", "-m", "-s", "-l", dummy, NULL };
	char *env[] = { env_out, NULL };
	unsigned int in_write = 0, in_libc = 0;
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct target tg;
	char line[512], line2[512];
	struct dp_err err = DP_ERR_INIT;
	int64_t t0;
	pid_t drainer;
	int ret, status;

	if (!tap_ok(target_spawn(&tg, "./procctl-target", argv, env, true) == 0,
		    "the malloc and loader target starts"))
		return;
	drainer = start_drainer(tg.err);
	util_sleep_ms(200);
	/* Look at where its threads get stopped. */
	for (int round = 0; round < 50 && (!in_write || !in_libc); round++) {
		struct dp_proc *p = dp_proc_open(tg.pid);
		struct dp_maps maps;

		if (!dp_proc_attach(p, 0) && !dp_maps_read(tg.pid, &maps)) {
			size_t n;
			const struct dp_thread *t = dp_proc_threads(p, &n);

			for (size_t i = 0; i < n; i++) {
				struct user_regs_struct rg;
				const struct dp_map *m;

				if (dp_proc_get_regs(p, t[i].tid, &rg))
					continue;
				if (rg.orig_rax == SYS_write && dp_regs_restarts(&rg))
					in_write++;
				m = dp_maps_find(&maps, rg.rip);
				if (!dp_regs_in_syscall(&rg) && m && m->path &&
				    strstr(m->path, "libc.so.6"))
					in_libc++;
			}
			dp_maps_free(&maps);
		}
		dp_proc_close(p);
		util_sleep_ms(5);
	}
	tap_ok(in_write > 0, "stopped with the malloc_stats() thread blocked in write(), the "
	       "main arena locked (%u times)", in_write);
	tap_ok(in_libc > 0, "stopped with threads inside libc code, out of any system call "
	       "(the malloc loops: %u threads)", in_libc);

	dp_inject_opts_init(&o);
	t0 = util_now_ms();
	ret = dp_inject_agent(tg.pid, probe, &o, &r, &err);
	tap_ok(ret == 0 && util_now_ms() - t0 < 120000,
	       "the library loads without deadlock in %" PRId64 " ms (%d: %s)",
	       util_now_ms() - t0, ret, err.msg);
	diag_result(&r);
	tap_ok(loaded_line(tg.pid, line, sizeof(line)), "its constructor ran (%s)", line);
	ret = target_ask(&tg, "report", "report", line, sizeof(line), TARGET_ANSWER_MS);
	util_sleep_ms(300);
	ret |= target_ask(&tg, "report", "report", line2, sizeof(line2), TARGET_ANSWER_MS);
	tap_ok(!ret && kv(line2, "mallocs") > kv(line, "mallocs") &&
	       kv(line2, "loads") > kv(line, "loads") && kv(line2, "errors") == 0,
	       "malloc and loader loops still progress (%" PRIu64 " -> %" PRIu64 " mallocs, %"
	       PRIu64 " -> %" PRIu64 " loads)", kv(line, "mallocs"), kv(line2, "mallocs"),
	       kv(line, "loads"), kv(line2, "loads"));
	tap_ok(target_quit(&tg, 5000) == 0, "the target exits cleanly");
	kill(drainer, SIGKILL);
	waitpid(drainer, &status, 0);
}

static void test_no_sleeper(void)
{
	char *argv[] = { "./procctl-target", "-t", "4", "-n", NULL };
	char *env[] = { env_out, "LTTNG_DYNPROBE_APP_SOCKET=/its/own.sock", NULL };
	struct dp_inject_opts o;
	struct dp_inject_result r;
	struct target tg;
	char line[512];
	struct dp_err err = DP_ERR_INIT;
	int ret;

	if (!tap_ok(target_spawn(&tg, "./procctl-target", argv, env, false) == 0,
		    "a target with no thread asleep starts"))
		return;
	dp_inject_opts_init(&o);
	o.env_name = "LTTNG_DYNPROBE_APP_SOCKET";
	o.env_value = "/ours.sock";
	ret = dp_inject_agent(tg.pid, probe, &o, &r, &err);
	tap_ok(ret == 0 && loaded_line(tg.pid, line, sizeof(line)),
	       "loaded through a thread caught entering poll() (%d: %s)", ret, err.msg);
	diag_result(&r);
	tap_ok(strstr(line, "socket=") && !strcmp(strstr(line, "socket="), "socket=/its/own.sock"),
	       "a variable the target has is left as it is (%s)", line);
	tap_ok(target_ask(&tg, "getenv LTTNG_DYNPROBE_APP_SOCKET", "env", line, sizeof(line),
			  TARGET_ANSWER_MS) == 0 && strstr(line, "=/its/own.sock"),
	       "and stays set after the load (%s)", line);
	tap_ok(target_ask(&tg, "report", "report", line, sizeof(line), TARGET_ANSWER_MS) == 0 &&
	       kv(line, "errors") == 0, "the target computes right (%s)", line);
	tap_ok(target_quit(&tg, 5000) == 0, "the target exits cleanly");
}

static void test_refusals(void)
{
	char *argv[] = { "./procctl-target", "-t", "2", NULL };
	char old_ust[PATH_MAX + 64], cmd[2 * PATH_MAX + 80], line[512];
	struct dp_err err = DP_ERR_INIT;
	struct target tg;
	struct dp_proc *p;
	pid_t child;
	int ret, status;

	snprintf(old_ust, sizeof(old_ust), "%s/liblttng-ust.so.0", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", dummy, old_ust);
	if (tap_ok(system(cmd) == 0 &&
		   target_spawn(&tg, "./procctl-target", argv, NULL, false) == 0,
		   "a target for refusals starts")) {
		snprintf(cmd, sizeof(cmd), "dlopen %s", old_ust);
		tap_ok(target_ask(&tg, cmd, "dlopen", line, sizeof(line), TARGET_ANSWER_MS) == 0 &&
		       !strcmp(line, "dlopen ok"), "it loads a liblttng-ust.so.0 (%s)", line);
		ret = dp_inject_agent(tg.pid, probe, NULL, NULL, &err);
		tap_ok(ret == -DP_INJECT_EUST0 && strstr(err.msg, "liblttng-ust.so.0") &&
		       strstr(err.msg, "liblttng-ust.so.1"),
		       "refused with liblttng-ust.so.0 loaded (%d: %s)", ret, err.msg);

		kill(tg.pid, SIGSTOP);
		util_sleep_ms(100);
		ret = dp_inject_agent(tg.pid, probe, NULL, NULL, &err);
		tap_ok(ret == -DP_INJECT_ESTOPPED && strstr(err.msg, "SIGCONT"),
		       "refused while stopped by job control (%d: %s)", ret, err.msg);
		kill(tg.pid, SIGCONT);
		tap_ok(target_quit(&tg, 5000) == 0, "that target exits cleanly");
	}

	child = tap_fork();
	if (child == 0) {
		execl("./static-target", "static-target", NULL);
		_exit(127);
	}
	util_sleep_ms(200);
	ret = dp_inject_agent(child, probe, NULL, NULL, &err);
	tap_ok(ret == -DP_PROC_ESTATIC && strstr(err.msg, "statically linked") &&
	       strstr(err.msg, "agent cannot be loaded"),
	       "a statically linked program is refused (%d: %s)", ret, err.msg);
	p = dp_proc_open(child);
	ret = dp_proc_attach(p, 0);
	tap_ok(ret == -DP_PROC_ESTATIC, "attaching to load the agent is refused too (%d: %s)",
	       ret, dp_proc_errmsg(p));
	ret = dp_proc_attach(p, DP_ATTACH_NO_AGENT);
	tap_ok(ret == 0 && dp_proc_detach(p) == 0,
	       "attaching for work that needs no agent is allowed (%d: %s)", ret,
	       dp_proc_errmsg(p));
	dp_proc_close(p);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);

	ret = dp_inject_agent(getpid(), "relative/agent.so", NULL, NULL, &err);
	tap_ok(ret == -EINVAL && strstr(err.msg, "absolute"), "a relative path is refused (%s)", err.msg);
}

static void test_real_agent(void)
{
	const char *rel = "../../src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so";
	char *argv[] = { "./procctl-target", "-t", "2", NULL };
	char agent[PATH_MAX], home[PATH_MAX + 16], line[512];
	struct dp_err err = DP_ERR_INIT;
	char *env[] = { home, NULL };
	struct dp_inject_result r;
	struct target tg;
	int ret;

	if (access(rel, R_OK)) {
		tap_ok(true, "# SKIP the agent is not built (%s)", rel);
		return;
	}
	util_abspath(rel, agent);
	snprintf(home, sizeof(home), "LTTNG_HOME=%s", dir);
	if (!tap_ok(target_spawn(&tg, "./procctl-target", argv, env, false) == 0,
		    "a target for the agent starts"))
		return;
	ret = dp_inject_agent(tg.pid, agent, NULL, &r, &err);
	tap_ok(ret == 0 && maps_has(tg.pid, "liblttng-ust-dynprobe.so") &&
	       maps_has(tg.pid, "liblttng-ust.so.1"),
	       "the agent and lttng-ust load into a running process (%d: %s)", ret, err.msg);
	diag_result(&r);
	tap_ok(target_ask(&tg, "report", "report", line, sizeof(line), TARGET_ANSWER_MS) == 0 &&
	       kv(line, "errors") == 0, "the target computes right with the agent (%s)", line);
	tap_ok(target_quit(&tg, 5000) == 0, "the target exits cleanly");
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
	util_abspath(".libs/libprocctl-bad.so", bad);
	util_abspath(".libs/libprocctl-dummy.so", dummy);

	test_basic();
	test_malloc_and_loader();
	test_no_sleeper();
	test_refusals();
	test_real_agent();

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		tap_diag("could not remove %s", dir);
	return tap_done();
}
