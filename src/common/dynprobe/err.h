/*
 * The one error carrier: what failed, in words for users, and the -errno.
 *
 * Every layer that can fail for a reason a user should read (spec/, proc/,
 * patch/, proto/, the daemon, the CLI) takes a `struct dp_err *` and fills
 * it on failure; callers add their context in front with dp_err_prefix and
 * pass it up, so that the message a user reads says what was asked and what
 * went wrong, in one line.  Functions still return 0 or -errno: the code in
 * the carrier is the same number, kept with its words.
 *
 * A NULL carrier is allowed everywhere: the words are dropped, the code
 * returned.  Messages are one line, lowercase, without a final period or an
 * "Error: " prefix; longer ones are cut at DP_ERR_MAX - 1 bytes.
 *
 * Typed reasons (enum dp_reason: why a site is a trap or refused) are data a
 * caller acts on, not messages: they stay typed, and dp_reason_str words
 * them when one becomes an error.
 */
#ifndef DP_ERR_H
#define DP_ERR_H

#include <stdarg.h>
#include <stddef.h>

#define DP_ERR_MAX 1024

struct dp_err {
	int code;			/* 0, or the -errno of the failure */
	char msg[DP_ERR_MAX];		/* "" when none was given */
};

#define DP_ERR_INIT { 0, "" }

/* Clears the carrier (before reusing it). */
void dp_err_clear(struct dp_err *err);

/* Sets code and message; returns code (a -errno), so that a failure reads
 * `return dp_err_set(err, -EINVAL, "...")`. */
int dp_err_set(struct dp_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int dp_err_vset(struct dp_err *err, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Puts words in front of the message ("pid 42: " + "..."); returns the
 * carrier's code.  The code is kept. */
int dp_err_prefix(struct dp_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The message, or strerror of the code when no words were given. */
const char *dp_err_str(const struct dp_err *err);

#endif /* DP_ERR_H */
