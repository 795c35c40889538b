/*
 * Inlined copies and source lines for test-dwarf.sh, built with -O2 -g
 * (DWARF 5, and DWARF 4): helper() is inlined into caller_a, caller_b and
 * caller_c, and also called out of line through a pointer; its unlikely
 * branch goes to the callers' .cold parts, so copies have DW_AT_ranges.
 * check() is partially inlined into user1 and user2 (its slow part becomes
 * check.part.N).  strcasestr() runs libc's inlined two_way_short_needle.
 *
 *   dwarf-target N FILE   runs the calls, then writes the counters to FILE:
 *                         "helper TOTAL a A b B c C ptr P check K strcasestr S"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile long sink;
static long calls_a, calls_b, calls_c, calls_ptr, calls_check, calls_strcasestr;

__attribute__((noinline)) void mark(long x)
{
	sink += x;
}

__attribute__((noinline, cold)) void rare(long x)
{
	sink -= x;
	fprintf(stderr, "rare %ld\n", x);
}

static inline __attribute__((always_inline)) long helper(long x)
{
	if (__builtin_expect(x == -12345, 0))
		rare(x);
	mark(x * 3); /* helper's line */
	return x + 1;
}

__attribute__((noinline)) long caller_a(long x)
{
	calls_a++;
	return helper(x) * 2;
}

__attribute__((noinline)) long caller_b(long x)
{
	calls_b++;
	return helper(x + 7) - 1;
}

__attribute__((noinline)) long caller_c(long x)
{
	calls_c++;
	return helper(x ^ 5) + 3;
}

long (*volatile helper_ptr)(long) = helper;

/* Partially inlined: the callers get the fast path, the rest becomes
 * check.part.N. */
static int check(int x)
{
	calls_check++;
	if (__builtin_expect(x >= 0, 1))
		return x;
	long s = 0;
	for (int i = 0; i < -x % 7 + 3; i++) {
		s += i * x;
		mark(s);
		sink ^= s;
	}
	fprintf(stderr, "slow %ld\n", s);
	for (int i = 0; i < -x % 5 + 3; i++) {
		s += i * x;
		mark(s);
		sink ^= s;
	}
	return (int)s;
}

__attribute__((noinline)) int user1(int x)
{
	return check(x) + 1;
}

__attribute__((noinline)) int user2(int x)
{
	return check(x * 2) + 2;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1;
	char hay[] = "a haystack with a needle in it";
	FILE *f;

	for (long i = 0; i < n; i++) {
		caller_a(i);
		caller_b(i);
		caller_b(i);
		caller_c(i);
		caller_c(i);
		caller_c(i);
		calls_ptr++;
		helper_ptr(i);
		sink += user1(i % 10 == 9 ? (int)-i : (int)i);
		sink += user2((int)i);
		/* two_way_short_needle, inlined in libc's strcasestr only */
		calls_strcasestr++;
		sink += strcasestr(hay, "NEEDLE") != NULL;
	}
	if (argc < 3)
		return 0;
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "helper %ld a %ld b %ld c %ld ptr %ld check %ld strcasestr %ld\n",
		calls_a + calls_b + calls_c + calls_ptr, calls_a, calls_b, calls_c, calls_ptr,
		calls_check, calls_strcasestr);
	return fclose(f) ? 1 : 0;
}
