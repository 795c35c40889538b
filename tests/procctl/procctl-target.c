/*
 * The process the process-control tests attach to.  It checks itself and
 * answers on stdout to commands read from stdin, one a line:
 *
 *   ping N          -> "pong N usr2=U marker=M"
 *   report          -> "report calls=C errors=E rt=R usr2=U sleeps=S short=H
 *                       eintr=I futex_spurious=F mallocs=A loads=L"
 *   wake            -> the futex waiter is woken: "woken spurious=F"
 *   getenv NAME     -> "env NAME=VALUE" or "env NAME unset"
 *   dlopen PATH     -> "dlopen ok" or "dlopen failed: ..."
 *   quit            -> exits, 0 when no check failed
 *
 * Options: -t N  worker threads calling compute_a/compute_b (default 8)
 *          -m    two threads looping on malloc/free
 *          -s    a thread looping on malloc_stats() (it holds the main arena
 *                lock while it writes to stderr: a slow reader of stderr
 *                keeps it there)
 *          -l LIB  a thread looping on dlopen(LIB)/dlclose (the loader lock)
 *          -n    no thread sleeps in a blocking call: the commands are polled
 *                with a zero timeout from the main thread
 *          -S MS the sleeper's nanosleep() (default 200 ms)
 *
 * Threads that sleep (the command reader in read(), the sleeper in
 * nanosleep(), the futex waiter) block the test signals, so that any early
 * return of their calls is a fault of the tracer, counted and reported.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "procctl-compute.h"

static int64_t sleep_ns = 200000000ll;

volatile uint64_t marker = 0x1122334455667788ull;
static uint32_t futex_word;
static atomic_ulong calls, errors, rt_count, usr2_count, sleeps, short_sleeps, eintrs;
static atomic_ulong futex_spurious, mallocs, loads;
static uint64_t expected[256];
static const char *loader_lib;

/* Two copies of one function, byte for byte (built with -fno-ipa-icf): the
 * tests move threads between them mid-flight. */
DEFINE_COMPUTE(compute_a)
DEFINE_COMPUTE(compute_b)
DEFINE_COMPUTE(compute_ref)

static void block_test_signals(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	sigaddset(&s, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}

static void on_usr2(int sig)
{
	atomic_fetch_add(&usr2_count, 1);
}

static void on_rt(int sig)
{
	atomic_fetch_add(&rt_count, 1);
}

static void *worker(void *arg)
{
	uint64_t x = (uintptr_t)arg;

	for (;;) {
		uint64_t v = x & 255;
		uint64_t r = (x & 1) ? compute_a(v) : compute_b(v);

		if (r != expected[v])
			atomic_fetch_add(&errors, 1);
		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
		x += 7;
	}
	return NULL;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void *sleeper(void *arg)
{
	block_test_signals();
	for (;;) {
		struct timespec ts = { sleep_ns / 1000000000, sleep_ns % 1000000000 };
		int64_t t0 = now_ns();

		if (nanosleep(&ts, NULL))
			atomic_fetch_add(&eintrs, 1);
		if (now_ns() - t0 < sleep_ns)
			atomic_fetch_add(&short_sleeps, 1);
		atomic_fetch_add(&sleeps, 1);
	}
	return NULL;
}

static void *futex_waiter(void *arg)
{
	block_test_signals();
	while (!__atomic_load_n(&futex_word, __ATOMIC_ACQUIRE)) {
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		if (!__atomic_load_n(&futex_word, __ATOMIC_ACQUIRE))
			atomic_fetch_add(&futex_spurious, 1);
	}
	dprintf(1, "woken spurious=%lu\n", atomic_load(&futex_spurious));
	return NULL;
}

static void *mallocer(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;

	for (;;) {
		void *v[16];

		for (int i = 0; i < 16; i++)
			v[i] = malloc(16 + rand_r(&seed) % 4000);
		for (int i = 0; i < 16; i++)
			free(v[i]);
		atomic_fetch_add_explicit(&mallocs, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *stats_holder(void *arg)
{
	block_test_signals();
	for (;;)
		malloc_stats();
	return NULL;
}

static void *loader(void *arg)
{
	for (;;) {
		void *h = dlopen(loader_lib, RTLD_NOW);

		if (h)
			dlclose(h);
		atomic_fetch_add_explicit(&loads, 1, memory_order_relaxed);
	}
	return NULL;
}

static void command(char *line)
{
	char arg[4096];
	unsigned long n;

	if (sscanf(line, "ping %lu", &n) == 1) {
		dprintf(1, "pong %lu usr2=%lu marker=%" PRIu64 "\n", n, atomic_load(&usr2_count),
			marker);
	} else if (!strcmp(line, "report")) {
		dprintf(1, "report calls=%lu errors=%lu rt=%lu usr2=%lu sleeps=%lu short=%lu "
			"eintr=%lu futex_spurious=%lu mallocs=%lu loads=%lu\n",
			atomic_load(&calls), atomic_load(&errors), atomic_load(&rt_count),
			atomic_load(&usr2_count), atomic_load(&sleeps),
			atomic_load(&short_sleeps), atomic_load(&eintrs),
			atomic_load(&futex_spurious), atomic_load(&mallocs), atomic_load(&loads));
	} else if (!strcmp(line, "wake")) {
		__atomic_store_n(&futex_word, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	} else if (sscanf(line, "getenv %4095s", arg) == 1) {
		const char *v = getenv(arg);

		if (v)
			dprintf(1, "env %s=%s\n", arg, v);
		else
			dprintf(1, "env %s unset\n", arg);
	} else if (sscanf(line, "dlopen %4095s", arg) == 1) {
		if (dlopen(arg, RTLD_NOW))
			dprintf(1, "dlopen ok\n");
		else
			dprintf(1, "dlopen failed: %s\n", dlerror());
	} else if (!strcmp(line, "quit")) {
		_exit(atomic_load(&errors) || atomic_load(&short_sleeps) ||
		      atomic_load(&eintrs) || atomic_load(&futex_spurious) ? 1 : 0);
	}
}

/* Splits what read() returned into lines; 0 at end of input. */
static int feed(char *buf, size_t *have, size_t cap)
{
	ssize_t n = read(0, buf + *have, cap - *have - 1);
	char *nl;

	if (n <= 0)
		return n < 0 && errno == EINTR ? 1 : 0;
	*have += (size_t)n;
	buf[*have] = '\0';
	while ((nl = strchr(buf, '\n'))) {
		*nl = '\0';
		command(buf);
		*have -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, *have + 1);
	}
	return 1;
}

static void *reader(void *arg)
{
	char buf[8192];
	size_t have = 0;

	block_test_signals();
	while (feed(buf, &have, sizeof(buf)))
		;
	_exit(0);
	return NULL;
}

static void start(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, arg)) {
		perror("pthread_create");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	int workers = 8, opt;
	bool with_malloc = false, with_stats = false, no_sleepers = false;
	struct sigaction sa;

	while ((opt = getopt(argc, argv, "t:msl:nS:")) != -1) {
		switch (opt) {
		case 't': workers = atoi(optarg); break;
		case 'm': with_malloc = true; break;
		case 's': with_stats = true; break;
		case 'l': loader_lib = optarg; break;
		case 'n': no_sleepers = true; break;
		case 'S': sleep_ns = atoll(optarg) * 1000000; break;
		default: return 2;
		}
	}
	for (int i = 0; i < 256; i++)
		expected[i] = compute_ref((uint64_t)i);
	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = on_rt;
	sigaction(SIGRTMIN + 1, &sa, NULL);

	for (int i = 0; i < workers; i++)
		start(worker, (void *)(uintptr_t)(i * 1000 + 1));
	if (!no_sleepers) {
		start(sleeper, NULL);
		start(futex_waiter, NULL);
	}
	if (with_malloc) {
		start(mallocer, (void *)1);
		start(mallocer, (void *)2);
	}
	if (with_stats)
		start(stats_holder, NULL);
	if (loader_lib)
		start(loader, NULL);
	/* Every thread exists before "ready": a test that attaches as soon as
	 * it reads the line must find them all. */
	if (!no_sleepers)
		start(reader, NULL);
	dprintf(1, "ready pid=%d compute_a=%p compute_b=%p marker=%p\n", (int)getpid(),
		(void *)compute_a, (void *)compute_b, (void *)&marker);
	if (!no_sleepers) {
		for (;;)
			pause();
	}
	/* -n: commands polled with a zero timeout; never asleep in the kernel. */
	{
		char buf[8192];
		size_t have = 0;
		uint64_t x = 3;

		for (;;) {
			struct pollfd pfd = { 0, POLLIN, 0 };

			for (int i = 0; i < 200; i++, x += 5)
				if (compute_a(x & 255) != expected[x & 255])
					atomic_fetch_add(&errors, 1);
			if (poll(&pfd, 1, 0) == 1 && !feed(buf, &have, sizeof(buf)))
				return 0;
		}
	}
}
