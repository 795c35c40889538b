/*
 * The patch-everything harness's own hard cases, in one program: threads
 * calling the same probed functions at once, tail calls (to another function
 * and to itself), longjmp out of deep recursion, callbacks from the C
 * library (qsort), and exit() called from three functions deep, so that
 * frames are still active when the report is written.
 *
 * It counts its own calls of leaf() and prints them to stderr; the test
 * compares them with what the probes counted.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

/* Not static, never inlined: each is a function of its own in the symbol
 * table, as the harness needs. */
#define FN __attribute__((noinline))

FN long leaf(long x);
FN long sum_to(long n, long acc);
FN long twice_then_leaf(long x);
FN long dive(long n, jmp_buf *env);
FN long catcher(long n);
FN int cmp_long(const void *a, const void *b);
FN long sorter(long seed);
FN void *worker(void *arg);
FN void finish(long total);
FN void finish_deeper(long total);

static atomic_long leaf_calls;
static volatile long sink;

long leaf(long x)
{
	atomic_fetch_add(&leaf_calls, 1);
	sink = x;
	return x * 3 + 1;
}

/* Tail-recursive: compiled into a jump back to its own entry. */
long sum_to(long n, long acc)
{
	if (n == 0)
		return acc + leaf(acc & 7);
	return sum_to(n - 1, acc + n);
}

/* Ends in a tail call to leaf. */
long twice_then_leaf(long x)
{
	sink = x;
	return leaf(x * 2);
}

/* Returns normally without env, leaves by longjmp with one. */
long dive(long n, jmp_buf *env)
{
	if (n == 0) {
		if (env)
			longjmp(*env, 1);
		return 0;
	}
	return dive(n - 1, env) + leaf(n);
}

long catcher(long n)
{
	jmp_buf env;

	if (setjmp(env))
		return leaf(n);
	return dive(n, &env);
}

int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

long sorter(long seed)
{
	long v[64], s = 0;

	for (int i = 0; i < 64; i++) {
		seed = seed * 6364136223846793005L + 1442695040888963407L;
		v[i] = seed >> 33;
	}
	qsort(v, 64, sizeof(v[0]), cmp_long);
	for (int i = 1; i < 64; i++)
		s += v[i] >= v[i - 1];
	return s;
}

void *worker(void *arg)
{
	long id = (long)arg, total = 0;

	for (long i = 0; i < 300; i++) {
		total += sum_to(i % 50, 0);
		total += twice_then_leaf(i + id);
		total += catcher(i % 20);
		total += dive(i % 7, NULL);
		total += sorter(i * 31 + id);
	}
	return (void *)total;
}

void finish_deeper(long total)
{
	fprintf(stderr, "calls leaf %ld\n", atomic_load(&leaf_calls));
	printf("total %ld\n", total);
	fflush(stdout);
	exit(0);
}

void finish(long total)
{
	finish_deeper(total);
	sink = total;
}

int main(void)
{
	pthread_t t[NTHREADS];
	long total = 0;

	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			return 1;
	for (long i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (long)r;
	}
	finish(total);
	return 1;
}
