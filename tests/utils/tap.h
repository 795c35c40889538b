/*
 * Minimal TAP producer for C tests run by automake's tap-driver.sh.
 * The plan is printed at the end ("1..N" after the results), so it is always
 * the number of checks actually made, never a number typed in.
 */
#ifndef DP_TESTS_TAP_H
#define DP_TESTS_TAP_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned tap_count, tap_failed;

__attribute__((format(printf, 2, 3)))
static inline bool tap_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %u - ", cond ? "ok" : "not ok", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		tap_failed++;
	return cond;
}

__attribute__((format(printf, 1, 2)))
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/*
 * fork() for a test: stdout is flushed first (a child must not print the
 * parent's pending results again), and a failure ends the test (a pid of
 * -1 handed on to kill() would mean every process the test may signal).
 */
static inline pid_t tap_fork(void)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		printf("Bail out! fork: %s\n", strerror(errno));
		exit(2);
	}
	return pid;
}

/* Prints the trailing plan; returns the process exit code. */
static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif /* DP_TESTS_TAP_H */
