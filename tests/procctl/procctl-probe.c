/*
 * The library the injection tests load into the target: its constructor
 * records that it ran, in which process and thread, and what it saw of
 * LTTNG_DYNPROBE_APP_SOCKET (the variable the daemon sets for the agent's
 * load, to be found by the agent it injects).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((constructor)) static void procctl_probe_loaded(void)
{
	const char *out = getenv("PROCCTL_PROBE_OUT");
	const char *sock = getenv("LTTNG_DYNPROBE_APP_SOCKET");
	int fd;

	if (!out)
		return;
	fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	dprintf(fd, "loaded pid=%d tid=%ld socket=%s\n", (int)getpid(), (long)syscall(SYS_gettid),
		sock ? sock : "unset");
	close(fd);
}
