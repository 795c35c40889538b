/*
 * The error carrier (err.h).  Kept free of allocation and locks: the agent
 * fills carriers too.
 */
#include <stdio.h>
#include <string.h>

#include "err.h"

/* Messages are one line: the CLI prints them after "Error: ". */
static void one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n')
			*s = ' ';
}

void dp_err_clear(struct dp_err *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

int dp_err_vset(struct dp_err *err, int code, const char *fmt, va_list ap)
{
	if (err) {
		err->code = code;
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		one_line(err->msg);
	}
	return code;
}

int dp_err_set(struct dp_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	dp_err_vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int dp_err_prefix(struct dp_err *err, const char *fmt, ...)
{
	char head[DP_ERR_MAX];
	size_t n, len;
	va_list ap;
	int ret;

	if (!err)
		return 0;
	va_start(ap, fmt);
	ret = vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	n = ret < 0 ? 0 : (size_t)ret < sizeof(head) ? (size_t)ret : sizeof(head) - 1;
	len = strlen(err->msg);
	if (len > sizeof(err->msg) - 1 - n)
		len = sizeof(err->msg) - 1 - n;
	memmove(err->msg + n, err->msg, len);
	memcpy(err->msg, head, n);
	err->msg[n + len] = '\0';
	one_line(err->msg);
	return err->code;
}

const char *dp_err_str(const struct dp_err *err)
{
	if (!err)
		return "";
	if (err->msg[0] || !err->code)
		return err->msg;
	return strerror(-err->code);
}
