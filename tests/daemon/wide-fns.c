/*
 * A program at the scale of a whole one: 10,000 distinct functions,
 * dp_w_10000 ... dp_w_19999, each with six return sites (seven probe sites
 * a function), for installs of a --function pattern over all of them in one
 * request (test-scale.sh, tests/perf/install-cost.sh).
 *
 *   wide-fns spin [THREADS]   threads call every function in turn, checking
 *                             each result, until killed; prints "ready"
 *   wide-fns rounds N         prints "ready"; each SIGUSR2 calls dp_w_10000
 *                             once (a test sees when its events record)
 *                             and prints "pinged P" (P calls so far); the
 *                             first SIGUSR1 calls every function N times
 *                             over (each branch of each function taken),
 *                             checking each result, prints "done calls=C
 *                             pings=P" (counted here, one per call made)
 *                             and waits to be killed
 *
 * Exits 1 at the first wrong result.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Six returns: each branch ends in its own ret (no frame to tear down),
 * and each function computes with its own number, so that none is folded
 * into another. */
#define DP_W(n)                                                                \
	__attribute__((noinline, noclone)) long dp_w_##n(long x);              \
	__attribute__((noinline, noclone)) long dp_w_##n(long x)               \
	{                                                                      \
		__asm__ volatile("" : "+r"(x));                                \
		if (x & 1)                                                     \
			return x * n + 1;                                      \
		if (x & 2)                                                     \
			return x ^ n;                                          \
		if (x & 4)                                                     \
			return x - n;                                          \
		if (x & 8)                                                     \
			return (x << 3) + n;                                   \
		if (x & 16)                                                    \
			return x / 3 + n;                                      \
		return x + n * 7L;                                             \
	}
#define DP_ENTRY(n) { dp_w_##n, n },

static long expect(long x, long n)
{
	if (x & 1)
		return x * n + 1;
	if (x & 2)
		return x ^ n;
	if (x & 4)
		return x - n;
	if (x & 8)
		return (x << 3) + n;
	if (x & 16)
		return x / 3 + n;
	return x + n * 7L;
}

/* Decimal digits pasted on: DP_X1000(m, 10) stands for 10000 ... 10999. */
#define DP_X10(m, p) m(p##0) m(p##1) m(p##2) m(p##3) m(p##4) \
	m(p##5) m(p##6) m(p##7) m(p##8) m(p##9)
#define DP_X100(m, p) DP_X10(m, p##0) DP_X10(m, p##1) DP_X10(m, p##2) \
	DP_X10(m, p##3) DP_X10(m, p##4) DP_X10(m, p##5) DP_X10(m, p##6) \
	DP_X10(m, p##7) DP_X10(m, p##8) DP_X10(m, p##9)
#define DP_X1000(m, p) DP_X100(m, p##0) DP_X100(m, p##1) DP_X100(m, p##2) \
	DP_X100(m, p##3) DP_X100(m, p##4) DP_X100(m, p##5) DP_X100(m, p##6) \
	DP_X100(m, p##7) DP_X100(m, p##8) DP_X100(m, p##9)
#define DP_X10000(m) DP_X1000(m, 10) DP_X1000(m, 11) DP_X1000(m, 12) DP_X1000(m, 13) \
	DP_X1000(m, 14) DP_X1000(m, 15) DP_X1000(m, 16) DP_X1000(m, 17) \
	DP_X1000(m, 18) DP_X1000(m, 19)

DP_X10000(DP_W)

static const struct {
	long (*fn)(long);
	long n;
} dp_fns[] = { DP_X10000(DP_ENTRY) };

#define DP_NFNS (sizeof(dp_fns) / sizeof(dp_fns[0]))

/* One call of function i with x, checked. */
static void call(size_t i, long x)
{
	if (dp_fns[i].fn(x) != expect(x, dp_fns[i].n)) {
		fprintf(stderr, "dp_w_%ld(%ld): wrong result\n", dp_fns[i].n, x);
		exit(1);
	}
}

static void *spin(void *arg)
{
	long x = (long)arg;

	for (;;) {
		for (size_t i = 0; i < DP_NFNS; i++) {
			call(i, x);
			x = (x + 1) & 0xffff;
		}
		/* A pass then a rest: the threads are often inside the
		 * functions, without taking a whole CPU each. */
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	return NULL;
}

static int rounds(long n)
{
	unsigned long calls = 0, pings = 0;
	sigset_t set;
	int sig = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %zu functions\n", DP_NFNS);
	fflush(stdout);
	while (sig != SIGUSR1) {
		if (sigwait(&set, &sig))
			return 2;
		if (sig == SIGUSR2) {
			call(0, 1);
			printf("pinged %lu\n", ++pings);
			fflush(stdout);
		}
	}
	/* x runs over 0..63 with each function: every branch is taken. */
	for (long r = 0; r < n; r++)
		for (size_t i = 0; i < DP_NFNS; i++) {
			call(i, (long)(i + r) & 63);
			calls++;
		}
	printf("done calls=%lu pings=%lu\n", calls, pings);
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "rounds"))
		return rounds(atol(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "spin")) {
		int n = argc > 2 ? atoi(argv[2]) : 2;
		pthread_t t;

		for (int i = 0; i < n; i++)
			if (pthread_create(&t, NULL, spin, (void *)(long)i)) {
				perror("pthread_create");
				return 2;
			}
		printf("ready %zu functions, %d threads\n", DP_NFNS, n);
		fflush(stdout);
		for (;;)
			pause();
	}
	fprintf(stderr, "usage: wide-fns spin [THREADS] | rounds N\n");
	return 2;
}
