/*
 * SDT probes for test-sdt.sh, as <sys/sdt.h> users write them: zero to six
 * arguments, integers of each size, negative values, a pointer, a double,
 * a global (read through %rip), and one probe inlined into two callers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

long sdt_counter = 42;
int sdt_sem_run(int n);

static inline __attribute__((always_inline)) void step(int i)
{
	DTRACE_PROBE1(sdt_target, step, i);
}

__attribute__((noinline)) static void caller_a(int i)
{
	step(i);
}

__attribute__((noinline)) static void caller_b(int i)
{
	step(-i);
}

int main(int argc, char **argv)
{
	volatile int8_t c = -5;
	volatile int16_t h = -300;
	volatile int32_t w = -70000;
	volatile int64_t q = -5000000000LL;
	volatile uint8_t uc = 200;
	volatile uint64_t uq = 18000000000000000000ULL;
	volatile double d = 2.5;
	const char *name = argc > 1 ? argv[1] : "sdt";

	DTRACE_PROBE(sdt_target, start);
	DTRACE_PROBE1(sdt_target, one, argc);
	DTRACE_PROBE2(sdt_target, ints, c, h);
	DTRACE_PROBE3(sdt_target, more, w, q, uc);
	DTRACE_PROBE4(sdt_target, four, uq, name, d, sdt_counter);
	DTRACE_PROBE5(sdt_target, five, 1, -2, 3, -4, 5);
	DTRACE_PROBE6(sdt_target, six, c, h, w, q, uc, name);
	STAP_PROBE2(sdt_other, global, sdt_counter, &sdt_counter);
	caller_a(argc);
	caller_b(argc);
	sdt_sem_run(argc);
	printf("%s done\n", name);
	return 0;
}
