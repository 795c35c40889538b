/*
 * The target of test-led.sh: the engine's corpus functions whose sites
 * only a redirect, a led window or a branch inside the window gives a jump
 * (tests/engine/corpus: redirect-ret.S, led-ret.S, redirect-cold.S,
 * inner-ret.S), called with inputs that take every path, each result
 * checked against a model in C.
 *
 *   led-target count GOFILE N   prints "ready", waits for GOFILE, makes N
 *                               rounds, prints what it counted ("counts
 *                               ..."), then waits for SIGTERM
 *   led-target spin THREADS     prints "ready", calls them in THREADS
 *                               threads until SIGTERM
 * On SIGTERM: "calls=C errors=E" and exit status 1 when a result was wrong.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long dp_c_redirect_ret(long x);
long dp_c_led_ret(long x);
long dp_c_redirect_cold(long x);
long dp_c_redirect_next(long x);
long dp_c_inner_ret(long x);

static atomic_long calls, errors;
static volatile sig_atomic_t stop;

/* What each path counts: the calls of each function, and those that leave
 * by the site a redirect or a led window serves. */
struct counts {
	long rr, rr_neg, lr, lr_odd, lr_sum, rc, rc_neg, ir, ir_even, ir_sum;
};

static void check(long got, long want)
{
	if (got != want)
		atomic_fetch_add(&errors, 1);
}

static void round_of(long i, struct counts *c)
{
	long x = (i % 300) - 100;	/* -100 .. 199 */
	long r;

	r = dp_c_redirect_ret(x);
	check(r, x < 0 ? -1 : x <= 100 ? 2 * x : 2 * x + 1);
	c->rr++;
	c->rr_neg += x < 0;

	r = dp_c_led_ret(x);
	check(r, x == -5 ? x + 1000 : (unsigned long)x >= 100 || !(x & 1) ? 0 : (x >> 2) & 7);
	c->lr++;
	c->lr_sum += r;
	c->lr_odd += x != -5 && !((unsigned long)x >= 100 || !(x & 1));

	r = dp_c_redirect_cold(x);
	check(r, x < 0 ? 0 : x + 24 * 0x1234);
	c->rc++;
	c->rc_neg += x < 0;

	check(dp_c_redirect_next(x), x + 24 * 0x1234);

	/* The je inside the window leads to the first ret: x even, < 100. */
	r = dp_c_inner_ret(x);
	check(r, (unsigned long)x >= 100 ? 180 : x & 1 ? 2 * x + 108 : x + 108);
	c->ir++;
	c->ir_even += (unsigned long)x < 100 && !(x & 1);
	c->ir_sum += r;
	atomic_fetch_add(&calls, 5);
}

static void *spin(void *arg)
{
	struct counts c;
	long i = (long)(intptr_t)arg;

	/* Often in the code, yet not so often that a trace grows huge. */
	while (!stop) {
		round_of(i++, &c);
		if (!(i & 63))
			usleep(200);
	}
	return NULL;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct counts c = { 0 };
	pthread_t th[8];
	int n = 0;

	signal(SIGTERM, on_term);
	if (argc == 4 && !strcmp(argv[1], "count")) {
		long rounds = atol(argv[3]);

		printf("ready\n");
		fflush(stdout);
		while (access(argv[2], F_OK) && !stop)
			usleep(10000);
		for (long i = 0; i < rounds && !stop; i++)
			round_of(i, &c);
		printf("counts rr=%ld rr_neg=%ld lr=%ld lr_odd=%ld lr_sum=%ld rc=%ld rc_neg=%ld "
		       "ir=%ld ir_even=%ld ir_sum=%ld\n", c.rr, c.rr_neg, c.lr, c.lr_odd, c.lr_sum,
		       c.rc, c.rc_neg, c.ir, c.ir_even, c.ir_sum);
		fflush(stdout);
		while (!stop)
			pause();
	} else if (argc == 3 && !strcmp(argv[1], "spin")) {
		n = atoi(argv[2]);
		n = n < 1 ? 1 : n > 8 ? 8 : n;
		for (int t = 0; t < n; t++)
			pthread_create(&th[t], NULL, spin, (void *)(intptr_t)(t * 37));
		printf("ready\n");
		fflush(stdout);
		while (!stop)
			pause();
		for (int t = 0; t < n; t++)
			pthread_join(th[t], NULL);
	} else {
		fprintf(stderr, "usage: led-target count GOFILE N | spin THREADS\n");
		return 2;
	}
	printf("calls=%ld errors=%ld\n", (long)calls, (long)errors);
	return errors ? 1 : 0;
}
