/*
 * The program the CLI tests probe and run under `lttng trace`.
 *
 *   cli-target [STATUS [ARGS...]]   prints its arguments, then foo(n) for each
 *                                   number n read on stdin (counted in `hits`
 *                                   first), a line on stderr, and exits with
 *                                   STATUS (default 0)
 *   cli-target --loop               calls foo() and bar() forever, ten times a
 *                                   second (a running process for --pid)
 *
 * foo and bar are written in assembly so that the tests know every byte:
 *
 *   foo:  +0x0  55            push rbp
 *         +0x1  48 89 e5      mov rbp, rsp
 *         +0x4  89 f8         mov eax, edi
 *         +0x6  83 c0 01      add eax, 1         (foo+0x6: the RFC's example)
 *         +0x9  6b c0 03      imul eax, eax, 3
 *         +0xc  5d            pop rbp
 *         +0xd  c3            ret                foo(x) = 3 * (x + 1)
 *
 *   bar:  +0x0  31 c0         xor eax, eax
 *         +0x2  85 ff         test edi, edi
 *         +0x4  74 02         je +0x8
 *         +0x6  ff c0         inc eax
 *         +0x8  c3            ret                (a branch target: a jump
 *                                                 over +0x4 holds the je)
 *
 *   baz:  +0x0  e8 ...        call bar
 *         +0x5  c3            ret                (a call returns there and
 *                                                 foo follows: no jump fits)
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int foo(int x);
int bar(int x);
int baz(int x);

/* Data for memory contexts: how many numbers were read, and a label. */
volatile int hits;
char label[16] = "cli-target";

__asm__(".text\n"
	".globl baz\n"
	".type baz, @function\n"
	"baz:\n"
	"call bar\n"
	".byte 0xc3\n"
	".size baz, . - baz\n"
	".globl foo\n"
	".type foo, @function\n"
	"foo:\n"
	".byte 0x55\n"
	".byte 0x48, 0x89, 0xe5\n"
	".byte 0x89, 0xf8\n"
	".byte 0x83, 0xc0, 0x01\n"
	".byte 0x6b, 0xc0, 0x03\n"
	".byte 0x5d\n"
	".byte 0xc3\n"
	".size foo, . - foo\n"
	".globl bar\n"
	".type bar, @function\n"
	"bar:\n"
	".byte 0x31, 0xc0\n"
	".byte 0x85, 0xff\n"
	".byte 0x74, 0x02\n"
	".byte 0xff, 0xc0\n"
	".byte 0xc3\n"
	".size bar, . - bar\n");

int main(int argc, char **argv)
{
	char line[64];
	int status = argc > 1 ? atoi(argv[1]) : 0;

	if (argc > 1 && !__builtin_strcmp(argv[1], "--loop")) {
		for (int i = 0;; i++) {
			if (foo(i) != 3 * (i + 1) || bar(i) != !!i)
				return 2;
			usleep(100000);
		}
	}
	printf("args:");
	for (int i = 2; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	while (fgets(line, sizeof(line), stdin) && ++hits)
		printf("foo(%d) = %d, bar = %d\n", atoi(line), foo(atoi(line)), bar(atoi(line)));
	fprintf(stderr, "cli-target: exiting with %d\n", status);
	return status;
}
