/*
 * What process control costs a target (not pass/fail): the time to attach and
 * hold every thread of a process with 1, 8 and 64 busy threads, to detach,
 * to run a remote mmap, and to load the agent (the real one when it has been
 * built, else the process-control tests' library); for each, the longest
 * time the target's threads all stayed held.  Then the time to load it into
 * busy processes, where no thread sleeps in a blocking call (the host is a
 * thread stopped in user code, found by unwinding its stack), against the
 * same load with a thread asleep in read(), measured in the same run.
 *
 *   attach-cost [LIBRARY.so]
 */
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/inject.h"
#include "proc/ptrace.h"
#include "proc/remote.h"

#define ROUNDS 30

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *spin(void *arg)
{
	for (uint64_t i = 0;; i++)
		sink += i * 31;
	return NULL;
}

static void *sleep_in_read(void *arg)
{
	char c;

	while (read(*(int *)arg, &c, 1) > 0)
		;
	return NULL;
}

static int count_threads(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * A child with `busy` spinning threads (the main one among them) and one
 * asleep in read(), or none asleep when keep is NULL.
 */
static pid_t start_target(int busy, int *keep)
{
	int fds[2];
	pid_t child;

	if (pipe(fds))
		return -1;
	child = fork();
	if (child < 0) {
		perror("fork");
		exit(2);
	}
	if (child == 0) {
		static int rd;
		pthread_t t;

		close(fds[1]);
		rd = fds[0];
		if (keep)
			pthread_create(&t, NULL, sleep_in_read, &rd);
		for (int i = 1; i < busy; i++)
			pthread_create(&t, NULL, spin, NULL);
		spin(NULL);
	}
	close(fds[0]);
	if (keep)
		*keep = fds[1];
	else
		close(fds[1]);
	while (count_threads(child) < busy + (keep != NULL))
		usleep(1000);
	return child;
}

static void stop_target(pid_t pid, int keep)
{
	int status;

	if (keep >= 0)
		close(keep);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

struct stat_ns {
	uint64_t sum, max, n;
};

static void add(struct stat_ns *s, uint64_t v)
{
	s->sum += v;
	s->n++;
	if (v > s->max)
		s->max = v;
}

static double avg_us(const struct stat_ns *s)
{
	return s->n ? s->sum / 1e3 / s->n : 0;
}

/* One load into a fresh target; 0 and *r, or -1 (printed). */
static int load_once(const char *lib, int busy, bool sleeper, struct dp_inject_result *r)
{
	struct dp_err err = DP_ERR_INIT;
	int keep = -1, ret;
	pid_t pid = start_target(busy, sleeper ? &keep : NULL);

	usleep(20000);
	ret = dp_inject_agent(pid, lib, NULL, r, &err);
	if (ret)
		fprintf(stderr, "load (%d busy, %s): %s\n", busy, sleeper ? "a sleeper" : "none asleep",
			err.msg);
	if (sleeper)
		stop_target(pid, keep);
	else
		stop_target(pid, -1);
	return ret ? -1 : 0;
}

/* Loading into busy targets vs. targets with a thread asleep, interleaved. */
static void busy_loads(const char *lib)
{
	static const int sizes[] = { 1, 8 };
	const int rounds = 10;

	printf("\nloading into a process, %d fresh processes a case, the cases interleaved "
	       "(ms, avg / max):\n\n| busy threads | host | find a host | all threads held | "
	       "total | stacks walked a load |\n|---|---|---|---|---|---|\n", rounds);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct stat_ns f[2] = { { 0 } }, h[2] = { { 0 } }, t[2] = { { 0 } };
		uint64_t walked = 0;
		int failed[2] = { 0, 0 };

		for (int i = 0; i < rounds; i++)
			for (int c = 0; c < 2; c++) {
				struct dp_inject_result r;

				if (load_once(lib, sizes[k], c == 0, &r)) {
					failed[c]++;
					continue;
				}
				add(&f[c], r.find_ns);
				add(&h[c], r.held_ns);
				add(&t[c], r.total_ns);
				walked += c ? r.stacks_walked : 0;
			}
		for (int c = 0; c < 2; c++)
			printf("| %d | %s%s | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f | %.1f |\n",
			       sizes[k], c ? "none asleep: stopped in user code, stack unwound"
					   : "a thread asleep in read()",
			       failed[c] ? " (some loads failed)" : "", avg_us(&f[c]) / 1e3,
			       f[c].max / 1e6, avg_us(&h[c]) / 1e3, h[c].max / 1e6,
			       avg_us(&t[c]) / 1e3, t[c].max / 1e6,
			       c && t[1].n ? (double)walked / t[1].n : 0.0);
	}
}

int main(int argc, char **argv)
{
	static const int sizes[] = { 1, 8, 64 };
	const char *agent_rel = "../../src/lib/lttng-ust-dynprobe/.libs/liblttng-ust-dynprobe.so";
	const char *test_rel = "../procctl/.libs/libprocctl-probe.so";
	char lib[PATH_MAX];
	uint64_t worst_held = 0;

	if (argc > 1)
		snprintf(lib, sizeof(lib), "%s", argv[1]);
	else if (!realpath(agent_rel, lib) && !realpath(test_rel, lib))
		lib[0] = '\0';
	printf("library loaded: %s\n\n", lib[0] ? lib : "(none found: injection skipped)");
	printf("| busy threads | attach + hold all (us, avg / max) | detach (us) | "
	       "remote mmap (us) | longest held, 30 cycles (us) | load the library: total / "
	       "held (ms) |\n|---|---|---|---|---|---|\n");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct stat_ns att = { 0 }, det = { 0 }, mm = { 0 };
		uint64_t held = 0;
		struct dp_inject_result r = { 0 };
		struct dp_err err = DP_ERR_INIT;
		int keep = -1, ret = -1;
		pid_t pid = start_target(sizes[k], &keep);

		for (int i = 0; i < ROUNDS; i++) {
			struct dp_proc *p = dp_proc_open(pid);
			uint64_t t0 = now_ns(), t1, t2;

			if (dp_proc_attach(p, 0)) {
				fprintf(stderr, "attach: %s\n", dp_proc_errmsg(p));
				return 1;
			}
			t1 = now_ns();
			if (i == 0) {
				for (int j = 0; j < 100; j++) {
					uint64_t a, m0 = now_ns();

					if (dp_remote_mmap(p, 0, 0, 4096, PROT_READ | PROT_WRITE,
							   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &a)) {
						fprintf(stderr, "mmap: %s\n", dp_proc_errmsg(p));
						return 1;
					}
					add(&mm, now_ns() - m0);
					dp_remote_munmap(p, 0, a, 4096);
				}
				t1 = now_ns();
			}
			dp_proc_detach(p);
			t2 = now_ns();
			add(&att, t1 - t0);
			add(&det, t2 - t1);
			if (i > 0 && dp_proc_max_held_ns(p) > held)
				held = dp_proc_max_held_ns(p);
			dp_proc_close(p);
		}
		if (lib[0])
			ret = dp_inject_agent(pid, lib, NULL, &r, &err);
		if (held > worst_held)
			worst_held = held;
		if (r.held_ns > worst_held)
			worst_held = r.held_ns;
		printf("| %d | %.0f / %.0f | %.0f | %.1f | %.0f | ", sizes[k], avg_us(&att),
		       att.max / 1e3, avg_us(&det), avg_us(&mm), held / 1e3);
		if (ret == 0)
			printf("%.2f / %.2f |\n", r.total_ns / 1e6, r.held_ns / 1e6);
		else
			printf("failed: %s |\n", err.msg);
		stop_target(pid, keep);
	}
	printf("\nlongest time all threads stayed held: %.3f ms\n", worst_held / 1e6);
	if (lib[0])
		busy_loads(lib);
	return 0;
}
