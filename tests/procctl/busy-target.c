/*
 * A program that never sleeps in the kernel, for loading the agent into a
 * busy process:
 *
 *   busy-target MODE SECONDS [THREADS]   (lockwait: its lock's SECONDS)
 *
 *   spin     one thread computing (user code only)
 *   threads  THREADS threads computing, the main one among them
 *   malloc   one thread spending nearly all its time in malloc, memset and
 *            free (inside the C library), checking every block it filled
 *   locked   one thread computing inside a callback of dl_iterate_phdr(),
 *            which holds the loader's lock the whole time: never at a point
 *            free of the C library
 *   lockwait the main thread computing (user code only) while another
 *            computes inside a callback of dl_iterate_phdr() for THREADS
 *            seconds (then ends): a load waits for that lock meanwhile
 *
 * It prints "ready pid=P" first (locked, lockwait: once the loader's lock
 * is held), runs SECONDS (timed through the vdso, no system call) or until
 * SIGUSR1 comes, whichever is first, then prints "done errors=0" and exits
 * 0 when every result and every block was right, "done errors=N" and exits
 * 1 otherwise.
 */
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_ulong errors;
static atomic_bool stop;
static volatile sig_atomic_t ended;	/* SIGUSR1 came */
static uint64_t expected[64];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A probe target: called all the time, and its result is known. */
uint64_t busy_work(uint64_t x);
__attribute__((noinline)) uint64_t busy_work(uint64_t x)
{
	uint64_t h = x * 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 64; i++)
		h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull + (uint64_t)i;
	return h;
}

__attribute__((noinline)) static void compute_once(void)
{
	for (uint64_t x = 0; x < 20000; x++)
		if (busy_work(x & 63) != expected[x & 63])
			atomic_fetch_add(&errors, 1);
}

__attribute__((noinline)) static void allocate_once(void)
{
	static unsigned int seed = 1;

	for (int i = 0; i < 2000; i++) {
		size_t len = 2048 + rand_r(&seed) % 8192;
		unsigned char *b = malloc(len), c = (unsigned char)i;

		if (!b) {
			atomic_fetch_add(&errors, 1);
			continue;
		}
		memset(b, c, len);
		if (b[0] != c || b[len / 2] != c || b[len - 1] != c)
			atomic_fetch_add(&errors, 1);
		free(b);
	}
}

static atomic_bool in_lock;	/* a thread computes inside dl_iterate_phdr */
static bool ready_in_lock;	/* "ready" is said from there (locked) */

static void say_ready(void)
{
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
}

static int compute_until(struct dl_phdr_info *info, size_t size, void *end)
{
	if (!atomic_exchange(&in_lock, true) && ready_in_lock)
		say_ready();
	while (now_s() < *(double *)end && !ended)
		compute_once();
	return 1;
}

static void on_usr1(int sig)
{
	ended = 1;
}

static void *locker(void *arg)
{
	dl_iterate_phdr(compute_until, arg);
	return NULL;
}

static void *worker(void *arg)
{
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		compute_once();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "spin";
	double seconds = argc > 2 ? atof(argv[2]) : 2, end;
	int nthreads = argc > 3 ? atoi(argv[3]) : 4;
	bool with_malloc = !strcmp(mode, "malloc"), with_lock = !strcmp(mode, "locked");
	bool lockwait = !strcmp(mode, "lockwait");
	pthread_t t[64];
	double lock_end;

	if (strcmp(mode, "spin") && strcmp(mode, "threads") && !with_malloc && !with_lock &&
	    !lockwait)
		return 2;
	if ((!strcmp(mode, "threads") || lockwait) && (nthreads < 2 || nthreads > 64))
		return 2;
	for (uint64_t i = 0; i < 64; i++)
		expected[i] = busy_work(i);
	signal(SIGUSR1, on_usr1);
	/* Ready once the loader's lock is held, in the modes that hold it: a
	 * load that began before would not meet it. */
	end = now_s() + seconds;
	if (lockwait) {
		lock_end = now_s() + nthreads;
		pthread_create(&t[1], NULL, locker, &lock_end);
		while (!atomic_load(&in_lock))
			compute_once();
	}
	if (with_lock)
		ready_in_lock = true;
	else
		say_ready();
	if (!strcmp(mode, "threads"))
		for (int i = 1; i < nthreads; i++)
			pthread_create(&t[i], NULL, worker, NULL);
	/* The main thread works too, and looks at the clock between batches. */
	while (now_s() < end && !ended) {
		if (with_malloc)
			allocate_once();
		else if (with_lock)
			dl_iterate_phdr(compute_until, &end);
		else
			compute_once();
	}
	atomic_store(&stop, true);
	if (lockwait)
		pthread_join(t[1], NULL);
	if (!strcmp(mode, "threads"))
		for (int i = 1; i < nthreads; i++)
			pthread_join(t[i], NULL);
	printf("done errors=%lu\n", atomic_load(&errors));
	return atomic_load(&errors) ? 1 : 0;
}
