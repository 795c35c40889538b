/*
 * One line, one write (line.h).  A stack buffer: no allocation, no lock, so
 * that it may be called from any thread of a traced program.
 */
#include <stdio.h>
#include <unistd.h>

#include "line.h"

void dp_line_vwrite(int fd, const char *head, const char *fmt, va_list ap)
{
	char buf[DP_LINE_MAX];
	int n, m;

	n = snprintf(buf, sizeof(buf), "%s", head);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(fd, buf, (size_t)n) < 0)
		return;
}
