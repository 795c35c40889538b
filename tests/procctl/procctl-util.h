/*
 * What the process-control tests share: starting procctl-target with pipes
 * on its stdin/stdout (and stderr), talking to it a line at a time with
 * timeouts, and reading its "key=value" answers.  No wait here is unbounded:
 * a broken tracer must fail a test, never hang it.
 */
#ifndef PROCCTL_UTIL_H
#define PROCCTL_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deadline.h"

struct target {
	pid_t pid;
	int in, out, err;	/* its stdin (we write), stdout and stderr (we read) */
	char buf[16384];
	size_t have;
	uint64_t compute_a, compute_b, marker;
};

static inline int64_t util_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ll + ts.tv_nsec / 1000000;
}

static inline void util_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* The next line of the target's stdout (without '\n') before the deadline
 * d, which leaves out the time this process could not run (deadline.h): 0,
 * or -1 on timeout/EOF. */
static inline int target_line_until(struct target *t, char *line, size_t len,
				    struct dp_deadline *d)
{
	for (;;) {
		char *nl = memchr(t->buf, '\n', t->have);
		struct pollfd pfd = { t->out, POLLIN, 0 };
		ssize_t n;

		if (nl) {
			size_t l = (size_t)(nl - t->buf);

			snprintf(line, len, "%.*s", (int)l, t->buf);
			t->have -= l + 1;
			memmove(t->buf, nl + 1, t->have);
			return 0;
		}
		if (dp_deadline_poll(&pfd, 1, d) <= 0)
			return -1;
		n = read(t->out, t->buf + t->have, sizeof(t->buf) - t->have);
		if (n <= 0)
			return -1;
		t->have += (size_t)n;
	}
}

static inline int target_line(struct target *t, char *line, size_t len, int timeout_ms)
{
	struct dp_deadline d;

	dp_deadline_start(&d, timeout_ms, NULL);
	return target_line_until(t, line, len, &d);
}

/* Sends cmd and waits for a line starting with prefix (others are skipped). */
static inline int target_ask(struct target *t, const char *cmd, const char *prefix, char *line,
			     size_t len, int timeout_ms)
{
	struct dp_deadline d;
	size_t l = strlen(cmd);

	if (cmd[0] && (write(t->in, cmd, l) != (ssize_t)l || write(t->in, "\n", 1) != 1))
		return -1;
	dp_deadline_start(&d, timeout_ms, NULL);
	while (target_line_until(t, line, len, &d) == 0)
		if (!strncmp(line, prefix, strlen(prefix)))
			return 0;
	return -1;
}

/* The number after "key=" in line, where key starts a word (0 when absent). */
static inline uint64_t kv(const char *line, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = line; (p = strstr(p, key)); p++)
		if ((p == line || p[-1] == ' ') && p[kl] == '=')
			return strtoull(p + kl + 1, NULL, 0);
	return 0;
}

/* How long the tests wait for a target's start or answer: only a bound for
 * one that never answers (a loaded machine took more than 3 s once, and
 * this one has frozen for 30 s and more), no speed goal. */
#define TARGET_ANSWER_MS 60000

/*
 * Starts prog with argv; extra environment "NAME=VALUE" strings; its stderr
 * into a pipe (t->err) when err_pipe, else to /dev/null.  Waits for "ready".
 */
static inline int target_spawn(struct target *t, const char *prog, char *const *argv,
			       char *const *env_extra, bool err_pipe)
{
	int in[2], out[2], err[2] = { -1, -1 };
	char line[512];

	memset(t, 0, sizeof(*t));
	t->err = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || (err_pipe && pipe2(err, O_CLOEXEC)))
		return -1;
	t->pid = fork();
	if (t->pid < 0)
		return -1;
	if (t->pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err_pipe ? err[1] : null, 2);
		for (int i = 0; env_extra && env_extra[i]; i++)
			putenv(env_extra[i]);
		execv(prog, argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (err_pipe)
		close(err[1]);
	t->in = in[1];
	t->out = out[0];
	t->err = err[0];
	if (target_line(t, line, sizeof(line), TARGET_ANSWER_MS) || strncmp(line, "ready", 5))
		return -1;
	sscanf(strstr(line, "compute_a="), "compute_a=%" SCNx64, &t->compute_a);
	sscanf(strstr(line, "compute_b="), "compute_b=%" SCNx64, &t->compute_b);
	sscanf(strstr(line, "marker="), "marker=%" SCNx64, &t->marker);
	return 0;
}

/* Asks it to quit; its exit status (killed after timeout_ms: -1). */
static inline int target_quit(struct target *t, int timeout_ms)
{
	int64_t deadline = util_now_ms() + timeout_ms;
	int status;

	if (write(t->in, "quit\n", 5) != 5)
		kill(t->pid, SIGKILL);
	while (util_now_ms() < deadline) {
		if (waitpid(t->pid, &status, WNOHANG) == t->pid) {
			close(t->in);
			close(t->out);
			if (t->err >= 0)
				close(t->err);
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		util_sleep_ms(10);
	}
	kill(t->pid, SIGKILL);
	waitpid(t->pid, &status, 0);
	return -1;
}

/* An absolute path for a file next to the test (libtool puts .so in .libs/). */
static inline const char *util_abspath(const char *rel, char *buf)
{
	if (!realpath(rel, buf))
		snprintf(buf, PATH_MAX, "%s", rel);
	return buf;
}

#endif /* PROCCTL_UTIL_H */
