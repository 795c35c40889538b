/*
 * Where the app protocol's socket lives (see app.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/app.h"

int dp_app_socket_path(char *buf, size_t size)
{
	const char *env = secure_getenv(DP_APP_ENV_SOCKET);
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path);
	int n;

	if (env && *env) {
		n = snprintf(buf, size, "%s", env);
	} else if (geteuid() == 0) {
		n = snprintf(buf, size, "/var/run/lttng/dynprobe-app.sock");
	} else {
		const char *home = secure_getenv("LTTNG_HOME");

		if (!home || !*home)
			home = secure_getenv("HOME");
		if (!home || !*home)
			return -ENOENT;
		n = snprintf(buf, size, "%s/.lttng/dynprobe-app.sock", home);
	}
	if (n < 0 || (size_t)n >= size || (size_t)n >= max)
		return -ENAMETOOLONG;
	return 0;
}
