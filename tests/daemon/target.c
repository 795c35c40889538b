/*
 * The daemon tests' target: THREADS threads (default 8) call dp_work(tid,
 * seq) (work.S) in bursts of tight calls, check every result against the
 * same computation in C, and publish the last completed seq of each thread
 * in a shared file (target-shm.h).  Built as a PIE and as a non-PIE
 * executable.
 *
 *   target SHMFILE [THREADS [BURST [PAUSE_US]]]
 *
 * With DP_TARGET_BLOCK_SIGTRAP set, the threads block SIGTRAP (as programs
 * whose workers block every signal do); with DP_TARGET_NODUMP set, the
 * process makes itself not dumpable (prctl(PR_SET_DUMPABLE, 0)).
 *
 * Prints "ready PID entry-byte XX" (dp_work's first byte as main found it)
 * once every thread runs; on SIGTERM prints
 * "calls=N errors=E" and exits 0, or 1 when some result was wrong.
 *
 * SIGUSR1: forks a child that calls dp_work in one thread, counting in
 * SHMFILE.child (prints "child PID"; on SIGTERM "child calls=N errors=E",
 * exit status as above).  SIGUSR2: executes itself again (the same
 * arguments: a new image in the same process, which prints "ready" again).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "target-shm.h"

static struct dp_target_shm *shm;
static volatile int stop;
static unsigned burst = 20, pause_us = 200;
static int block_sigtrap;

/* The probed function (work.S). */
long dp_work(long tid, long seq);

static long expected(long tid, long seq)
{
	unsigned long mix = (unsigned long)seq;

	for (int i = 0; i < 4; i++)
		mix = mix * 31 + (unsigned long)tid;
	return (long)((unsigned long)seq << 20 | (unsigned long)tid << 16 | (mix & 0xffff));
}

static void *worker(void *arg)
{
	long tid = (long)(intptr_t)arg;
	uint64_t seq = 0;

	if (block_sigtrap) {
		sigset_t trap;

		sigemptyset(&trap);
		sigaddset(&trap, SIGTRAP);
		pthread_sigmask(SIG_BLOCK, &trap, NULL);
	}

	while (!stop) {
		for (unsigned i = 0; i < burst; i++) {
			seq++;
			if (dp_work(tid, (long)seq) != expected(tid, (long)seq))
				__atomic_add_fetch(&shm->errors, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&shm->done[tid], seq, __ATOMIC_RELEASE);
		}
		if (pause_us) {
			struct timespec ts = { 0, (long)pause_us * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

/* The child of SIGUSR1: one thread calling dp_work until SIGTERM. */
static void child_run(const char *shmfile)
{
	char path[4096];
	struct dp_target_shm *cs;
	sigset_t pending;
	uint64_t seq = 0;
	int fd;

	snprintf(path, sizeof(path), "%s.child", shmfile);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(*cs)) < 0)
		_exit(2);
	cs = mmap(NULL, sizeof(*cs), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (cs == MAP_FAILED)
		_exit(2);
	cs->nthreads = 1;
	printf("child %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		for (unsigned i = 0; i < burst; i++) {
			seq++;
			if (dp_work(0, (long)seq) != expected(0, (long)seq))
				cs->errors++;
			__atomic_store_n(&cs->done[0], seq, __ATOMIC_RELEASE);
		}
		sigpending(&pending);
		if (sigismember(&pending, SIGTERM))
			break;
		if (pause_us) {
			struct timespec ts = { 0, (long)pause_us * 1000 };

			nanosleep(&ts, NULL);
		}
	}
	printf("child calls=%llu errors=%llu\n", (unsigned long long)seq,
	       (unsigned long long)cs->errors);
	fflush(stdout);
	_exit(cs->errors ? 1 : 0);
}

int main(int argc, char **argv)
{
	unsigned n = argc > 2 ? (unsigned)atoi(argv[2]) : 8;
	pthread_t th[DP_TARGET_MAX_THREADS];
	sigset_t set;
	uint64_t calls = 0;
	int fd, sig;

	if (argc < 2 || n < 1 || n > DP_TARGET_MAX_THREADS) {
		fprintf(stderr, "usage: target SHMFILE [THREADS [BURST [PAUSE_US]]]\n");
		return 2;
	}
	if (argc > 3)
		burst = (unsigned)atoi(argv[3]);
	if (argc > 4)
		pause_us = (unsigned)atoi(argv[4]);
	fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(*shm)) < 0)
		return 2;
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED)
		return 2;
	shm->nthreads = n;
	block_sigtrap = getenv("DP_TARGET_BLOCK_SIGTRAP") != NULL;
	if (getenv("DP_TARGET_NODUMP"))
		prctl(PR_SET_DUMPABLE, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (unsigned i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	/* Whether dp_work was patched before main ran (lttng trace's promise):
	 * its first instruction is `push rbx` (0x53) in the file. */
	printf("ready %d entry-byte %02x\n", (int)getpid(), *(volatile unsigned char *)dp_work);
	fflush(stdout);
	for (;;) {
		sigwait(&set, &sig);
		if (sig == SIGUSR1 && fork() == 0)
			child_run(argv[1]);
		else if (sig == SIGUSR2)
			execv("/proc/self/exe", argv);
		else if (sig == SIGTERM || sig == SIGINT)
			break;
	}
	stop = 1;
	for (unsigned i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		calls += shm->done[i];
	}
	printf("calls=%llu errors=%llu\n", (unsigned long long)calls,
	       (unsigned long long)shm->errors);
	return shm->errors ? 1 : 0;
}
