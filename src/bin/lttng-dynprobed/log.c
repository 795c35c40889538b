/*
 * The daemon's messages: one line each, with a time and a level, on stderr
 * or in a log file (-v: what it does, -vv: every request and reply).
 * Errors are always written.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "line.h"

int dpd_verbosity = DPD_ERR;
static int log_fd = STDERR_FILENO;

int dpd_log_open(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	log_fd = fd;
	return 0;
}

void dpd_log(enum dpd_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "info", "debug" };
	char head[96];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	if ((int)level > dpd_verbosity)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	snprintf(head, sizeof(head), "lttng-dynprobed[%d] %02d:%02d:%02d.%03ld %s: ", (int)getpid(),
		 tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, names[level]);
	va_start(ap, fmt);
	dp_line_vwrite(log_fd, head, fmt, ap);
	va_end(ap);
}

static char fault_step[16];
static long fault_left;
static enum { FAULT_KILL, FAULT_STOP, FAULT_SLEEP } fault_how;

int dpd_fault_set(const char *spec)
{
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *how = NULL;
	long count = 1;

	if (colon && (!strcmp(colon + 1, "stop") || !strcmp(colon + 1, "sleep"))) {
		how = colon + 1;
	} else if (colon) {
		char *end;

		errno = 0;
		count = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || errno || count < 1 ||
		    (*end && strcmp(end, ":stop") && strcmp(end, ":sleep")))
			return -EINVAL;
		how = *end ? end + 1 : NULL;
	}
	if (!n || n >= sizeof(fault_step))
		return -EINVAL;
	memcpy(fault_step, spec, n);
	fault_step[n] = '\0';
	fault_left = count;
	fault_how = !how ? FAULT_KILL : !strcmp(how, "stop") ? FAULT_STOP : FAULT_SLEEP;
	return 0;
}

void dpd_fault(const char *step)
{
	struct timespec nap = { 3, 0 };

	if (!fault_left || strcmp(step, fault_step) || --fault_left)
		return;
	if (fault_how == FAULT_SLEEP) {
		dpd_info("test fault: sleeping 3 s at step %s", step);
		while (nanosleep(&nap, &nap) && errno == EINTR)
			;
		return;
	}
	dpd_info("test fault: %s at step %s", fault_how == FAULT_STOP ? "SIGSTOP" : "SIGKILL",
		 step);
	raise(fault_how == FAULT_STOP ? SIGSTOP : SIGKILL);
}
