/*
 * The probes of test-sdthdr.sh, written once for <lttng/dynprobe/sdt.h> and
 * once (-DSDTHDR_SYS) for <sys/sdt.h>: the two builds must carry the same
 * notes (but for the sites' addresses) and print the same output.  Zero to
 * six arguments, integers of each size signed and unsigned, negative
 * constants, a pointer, a global read through %rip, an enum, a probe in an
 * inline function of two callers.  Built as C and as C++.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef SDTHDR_SYS
#include <sys/sdt.h>
#define P0(p, n) DTRACE_PROBE(p, n)
#define P1(p, n, a) DTRACE_PROBE1(p, n, a)
#define P2(p, n, a, b) DTRACE_PROBE2(p, n, a, b)
#define P3(p, n, a, b, c) DTRACE_PROBE3(p, n, a, b, c)
#define P4(p, n, a, b, c, d) DTRACE_PROBE4(p, n, a, b, c, d)
#define P5(p, n, a, b, c, d, e) DTRACE_PROBE5(p, n, a, b, c, d, e)
#define P6(p, n, a, b, c, d, e, f) DTRACE_PROBE6(p, n, a, b, c, d, e, f)
#else
#include <lttng/dynprobe/sdt.h>
#define P0(p, n) LTTNG_DYNPROBE_SDT(p, n)
#define P1 LTTNG_DYNPROBE_SDT
#define P2 LTTNG_DYNPROBE_SDT
#define P3 LTTNG_DYNPROBE_SDT
#define P4 LTTNG_DYNPROBE_SDT
#define P5 LTTNG_DYNPROBE_SDT
#define P6 LTTNG_DYNPROBE_SDT
#endif

enum colour { RED = 1, GREEN = 2 };

long hdr_counter = 42;
/* With a second argument: what each probe is passed, one line per hit, as
 * `PROVIDER:NAME { arg0 = V, ... }` (the oracle of test-sdthdr.sh). */
static int verbose;

static inline __attribute__((always_inline)) long step(long i)
{
	P1(hdr, step, i);
	return i * 3;
}

__attribute__((noinline)) static long caller_a(long i)
{
	if (verbose)
		printf("hdr:step { arg0 = %ld }\n", i);
	return step(i) + 1;
}

__attribute__((noinline)) static long caller_b(long i)
{
	if (verbose)
		printf("hdr:step { arg0 = %ld }\n", -i);
	return step(-i) - 1;
}

__attribute__((noinline)) static long work(int n, const char *name)
{
	volatile int8_t c = -5;
	volatile int16_t h = -300;
	volatile int32_t w = -70000;
	volatile int64_t q = -5000000000LL;
	volatile uint8_t uc = 200;
	volatile uint16_t uh = 60000;
	volatile uint32_t uw = 4000000000u;
	volatile uint64_t uq = 18000000000000000000ULL;
	enum colour col = n & 1 ? RED : GREEN;
	long acc = 0;

	for (int i = 0; i < n; i++) {
		P0(hdr, loop);
		P2(hdr, ints, c, h);
		P3(hdr, more, w, q, uc);
		P4(hdr, unsigned, uc, uh, uw, uq);
		P5(hdr, five, 1, -2, 3, -4, 5);
		P6(hdr, six, c, h, w, q, i, name);
		P2(hdr, global, hdr_counter, &hdr_counter);
		P1(hdr, colour, col);
		if (verbose) {
			printf("hdr:loop\n");
			printf("hdr:ints { arg0 = %d, arg1 = %d }\n", c, h);
			printf("hdr:more { arg0 = %d, arg1 = %lld, arg2 = %u }\n", w, (long long)q, uc);
			printf("hdr:unsigned { arg0 = %u, arg1 = %u, arg2 = %u, arg3 = %llu }\n", uc,
			       uh, uw, (unsigned long long)uq);
			printf("hdr:five { arg0 = 1, arg1 = -2, arg2 = 3, arg3 = -4, arg4 = 5 }\n");
			printf("hdr:six { arg0 = %d, arg1 = %d, arg2 = %d, arg3 = %lld, arg4 = %d, "
			       "arg5 = %llu }\n", c, h, w, (long long)q, i,
			       (unsigned long long)(uintptr_t)name);
			printf("hdr:global { arg0 = %ld, arg1 = %llu }\n", hdr_counter,
			       (unsigned long long)(uintptr_t)&hdr_counter);
			printf("hdr:colour { arg0 = %d }\n", (int)col);
		}
		acc += caller_a(i) + caller_b(i) + c + h + w + (long)(q % 1000) + uc + uh;
		hdr_counter++;
	}
	return acc;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	long r;

	verbose = argc > 2;
	r = work(n, argv[0]);
	P0(hdr, start);
	if (verbose)
		printf("hdr:start\n");
	printf("sdthdr-target: %d rounds, result %ld, counter %ld\n", n, r, hdr_counter);
	return 0;
}
