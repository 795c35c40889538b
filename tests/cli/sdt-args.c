/*
 * The program test-sdt-enable.sh enables SDT probes in.  Each command read
 * on stdin runs once; what a round passes to its probes is printed first,
 * as babeltrace2 prints the fields (the test's oracle), then "ok", flushed:
 *
 *   r     a round: every probe below fires once, `sdt_prov:work` and
 *         `sdt_prov:done` only when their *_ENABLED() guards let them
 *   s     "sem WORK DONE GUARDED": the two semaphores as the program sees
 *         them, and how many guarded runs happened so far
 *   q     exits
 *
 * Probes: <sys/sdt.h> DTRACE_PROBE0..6 and STAP_PROBE with integers of each
 * size, negative values, a pointer, a double, a global read through %rip,
 * one probe inlined into three callers, a probe of a shared library
 * (sdt-lib.c), and a `dtrace -h`/`dtrace -G` provider with semaphores
 * (sdt-prov.d, used in sdt-prov-use.c: with its header, every probe of a
 * file names a semaphore).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/sdt.h>
#include <unistd.h>

int sdt_lib_call(int x);
void sdt_prov_round(int n);
void sdt_prov_show(void);

long sdt_global = -123456789;
static int round_no;

static inline __attribute__((always_inline)) void step(int i)
{
	DTRACE_PROBE1(sdt_args, step, i);
}

__attribute__((noinline)) static void caller_a(int i) { step(i); }
__attribute__((noinline)) static void caller_b(int i) { step(i * 10); }
__attribute__((noinline)) static void caller_c(int i) { step(-i); }

static void one_round(void)
{
	volatile int8_t c = (int8_t)(-5 - round_no);
	volatile int16_t h = -300;
	volatile int32_t w = -70000;
	volatile int64_t q = -5000000000LL;
	volatile uint8_t uc = 200;
	volatile uint16_t us = 65000;
	volatile uint64_t uq = 18000000000000000000ULL;
	volatile double d = 2.5 + round_no;
	const char *name = "sdt-args";
	int n = ++round_no;

#define P(fmt, ...) printf("%d " fmt, (int)getpid(), ##__VA_ARGS__)
	P("sdt_args:zero\n");
	P("sdt_args:ints { arg0 = %d, arg1 = %d }\n", c, h);
	P("sdt_args:more { arg0 = %d, arg1 = %" PRId64 ", arg2 = %u, arg3 = %u }\n", w, q,
	       uc, us);
	P("sdt_args:mixed { arg0 = %" PRIu64 ", arg1 = %" PRIu64 ", arg2 = %g, arg3 = %ld }\n",
	       uq, (uint64_t)(uintptr_t)name, d, sdt_global);
	P("sdt_args:consts { arg0 = 1, arg1 = -2, arg2 = 3, arg3 = -4, arg4 = %d }\n", n);
	P("sdt_args:six { arg0 = %d, arg1 = %d, arg2 = %d, arg3 = %" PRId64 ", arg4 = %u, "
	       "arg5 = %" PRIu64 " }\n", c, h, w, q, uc, (uint64_t)(uintptr_t)name);
	P("sdt_args:global { arg0 = %ld, arg1 = %" PRIu64 " }\n", sdt_global,
	       (uint64_t)(uintptr_t)&sdt_global);
	P("sdt_args:step { arg0 = %d }\n", n);
	P("sdt_args:step { arg0 = %d }\n", n * 10);
	P("sdt_args:step { arg0 = %d }\n", -n);
	P("sdt_lib:call { arg0 = %d, arg1 = %d }\n", n, -n);
	fflush(stdout);

	DTRACE_PROBE(sdt_args, zero);
	DTRACE_PROBE2(sdt_args, ints, c, h);
	DTRACE_PROBE4(sdt_args, more, w, q, uc, us);
	DTRACE_PROBE4(sdt_args, mixed, uq, name, d, sdt_global);
	DTRACE_PROBE5(sdt_args, consts, 1, -2, 3, -4, n);
	DTRACE_PROBE6(sdt_args, six, c, h, w, q, uc, name);
	STAP_PROBE2(sdt_args, global, sdt_global, &sdt_global);
	caller_a(n);
	caller_b(n);
	caller_c(n);
	sdt_lib_call(n);
	sdt_prov_round(n);
}

static volatile sig_atomic_t child_sig;

static void on_sig(int sig)
{
	child_sig = sig;
}

/* The forked child: its semaphores on demand (what it inherited, then what
 * the daemon left), until SIGUSR2. */
static void child(void)
{
	sigset_t none;

	printf("child %d\n", (int)getpid());
	fflush(stdout);
	sigemptyset(&none);
	for (;;) {
		sigsuspend(&none);
		if (child_sig)
			sdt_prov_show();
		fflush(stdout);
		if (child_sig == SIGUSR2)
			_exit(0);
		child_sig = 0;
	}
}

static void fork_child(void)
{
	struct sigaction sa = { .sa_handler = on_sig };
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	fflush(stdout);
	if (fork() == 0)
		child();
	sigprocmask(SIG_UNBLOCK, &block, NULL);
}

int main(void)
{
	char line[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		if (line[0] == 'r')
			one_round();
		else if (line[0] == 's')
			sdt_prov_show();
		else if (line[0] == 'f')
			fork_child();
		else if (line[0] == 'q')
			break;
		printf("ok\n");
		fflush(stdout);
	}
	return 0;
}
