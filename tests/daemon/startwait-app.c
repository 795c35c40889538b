/*
 * The short program of the start-up wait's test and benchmark: it calls
 * sw_work() N times as fast as it can, then exits.
 *
 *   startwait-app N    prints "main_ns T calls N sum S": T the realtime
 *                      clock (ns) when main began, so that the caller
 *                      measures how long the start took; N the calls
 *                      made, each of which a probe on sw_work must record
 *
 * sw_work is written in assembly so that its layout (and so how it is
 * probed: a jump at its entry and at its return) is the same with every
 * compiler:
 *   +0x0 push rbp; +0x1 mov rbp, rsp; +0x4 mov eax, edi; +0x6 add eax, 1;
 *   +0x9 imul eax, eax, 3; +0xc pop rbp; +0xd ret     sw_work(x) = 3(x + 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int sw_work(int x);

__asm__(".text\n"
	".globl sw_work\n"
	".type sw_work, @function\n"
	"sw_work:\n"
	".byte 0x55, 0x48, 0x89, 0xe5, 0x89, 0xf8, 0x83, 0xc0, 0x01\n"
	".byte 0x6b, 0xc0, 0x03, 0x5d, 0xc3\n"
	".size sw_work, . - sw_work\n");

int main(int argc, char **argv)
{
	struct timespec t0;
	long n, i;
	unsigned long sum = 0;

	clock_gettime(CLOCK_REALTIME, &t0);
	if (argc != 2 || (n = strtol(argv[1], NULL, 10)) < 0) {
		fprintf(stderr, "usage: startwait-app N (the number of calls, N >= 0)\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		sum += (unsigned)sw_work((int)i);
	printf("main_ns %lld calls %ld sum %lu\n",
	       (long long)t0.tv_sec * 1000000000LL + t0.tv_nsec, n, sum);
	return 0;
}
