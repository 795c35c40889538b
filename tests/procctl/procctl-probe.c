/*
 * The library the injection tests load into the target: its constructor
 * records that it ran, in which process and thread, and what it saw of
 * LTTNG_DYNPROBE_APP_SOCKET (the variable the daemon sets for the agent's
 * load, to be found by the agent it injects).  PROCCTL_PROBE_SPIN_MS=N
 * makes it compute N ms of its thread's CPU time first: a load that is
 * slow while it works (a loaded machine, a big library).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((constructor)) static void procctl_probe_loaded(void)
{
	const char *out = getenv("PROCCTL_PROBE_OUT");
	const char *sock = getenv("LTTNG_DYNPROBE_APP_SOCKET");
	const char *spin = getenv("PROCCTL_PROBE_SPIN_MS");
	int fd;

	if (spin) {
		double end = cpu_ms() + atof(spin);
		volatile unsigned long x = 0;

		while (cpu_ms() < end)
			for (int i = 0; i < 100000; i++)
				x += (unsigned long)i * 2654435761u;
	}

	if (!out)
		return;
	fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	dprintf(fd, "loaded pid=%d tid=%ld socket=%s\n", (int)getpid(), (long)syscall(SYS_gettid),
		sock ? sock : "unset");
	close(fd);
}
