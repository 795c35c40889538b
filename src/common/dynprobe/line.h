/*
 * One line of text to a file descriptor, in one write(2): the daemon's log
 * and the agent's debug output both go through it, so that the lines of
 * several threads or processes sharing a file (a log kept across restarts,
 * the stderr of a traced program) never mix.  No stdio stream is used: the
 * agent must never touch the traced program's buffers.
 */
#ifndef DP_LINE_H
#define DP_LINE_H

#include <stdarg.h>

/* Lines longer than this are cut (the newline is kept). */
#define DP_LINE_MAX 2048

/* Writes head, then fmt's text, then a newline; errors are ignored (there
 * is nowhere left to report them). */
void dp_line_vwrite(int fd, const char *head, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#endif /* DP_LINE_H */
