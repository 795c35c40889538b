/*
 * The target of install-cost.sh: 2,000 distinct small functions,
 * dp_fn_1000 ... dp_fn_2999, each one its own probe site, called in turn by
 * a few threads that check every result, so that probes installed in bulk
 * land in a process that keeps running code.
 *
 *   many-fns [THREADS]      prints "ready" once every thread runs; runs
 *                           until killed; exits 1 at the first wrong result
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Each function multiplies by its own number: no two bodies are alike, so
 * none is folded into another and every symbol is a site of its own. */
#define DP_FN(n)                                                              \
	__attribute__((noinline, noclone)) int dp_fn_##n(int x);              \
	__attribute__((noinline, noclone)) int dp_fn_##n(int x)               \
	{                                                                     \
		__asm__ volatile("" : "+r"(x));                               \
		return x * n + 1;                                             \
	}
#define DP_ENTRY(n) { dp_fn_##n, n },

/* Decimal digits pasted on: F1000(1) stands for 1000 ... 1999. */
#define DP_X10(m, p) m(p##0) m(p##1) m(p##2) m(p##3) m(p##4) \
	m(p##5) m(p##6) m(p##7) m(p##8) m(p##9)
#define DP_X100(m, p) DP_X10(m, p##0) DP_X10(m, p##1) DP_X10(m, p##2) \
	DP_X10(m, p##3) DP_X10(m, p##4) DP_X10(m, p##5) DP_X10(m, p##6) \
	DP_X10(m, p##7) DP_X10(m, p##8) DP_X10(m, p##9)
#define DP_X1000(m, p) DP_X100(m, p##0) DP_X100(m, p##1) DP_X100(m, p##2) \
	DP_X100(m, p##3) DP_X100(m, p##4) DP_X100(m, p##5) DP_X100(m, p##6) \
	DP_X100(m, p##7) DP_X100(m, p##8) DP_X100(m, p##9)

DP_X1000(DP_FN, 1)
DP_X1000(DP_FN, 2)

static const struct {
	int (*fn)(int);
	int n;
} dp_fns[] = { DP_X1000(DP_ENTRY, 1) DP_X1000(DP_ENTRY, 2) };

#define DP_NFNS (sizeof(dp_fns) / sizeof(dp_fns[0]))

static void *dp_caller(void *arg)
{
	int x = (int)(long)arg;

	for (;;) {
		for (size_t i = 0; i < DP_NFNS; i++) {
			if (dp_fns[i].fn(x) != x * dp_fns[i].n + 1) {
				fprintf(stderr, "dp_fn_%d(%d): wrong result\n", dp_fns[i].n, x);
				exit(1);
			}
			x = (x + 1) & 0xffff;
		}
		/* A pass then a rest: the threads are often inside the
		 * functions, without taking a whole CPU each. */
		nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t;

	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, dp_caller, (void *)(long)i)) {
			perror("pthread_create");
			return 2;
		}
	printf("ready %zu functions, %d threads\n", DP_NFNS, n);
	fflush(stdout);
	for (;;)
		pause();
}
