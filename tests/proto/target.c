/*
 * The traced program of the agent's tests: the agent is preloaded into it.
 * It announces itself and two functions to probe, then obeys one command
 * per line on stdin:
 *
 *   call N    calls target_func(N) and prints the result (3 * N)
 *   call2 N   calls target_func2(N) and prints the result (N + 1)
 *   fork      forks: the child prints its pid and sleeps until killed
 *   exit      exits 0
 *
 * target_func's bytes are fixed (assembly), so that a test patches known
 * instructions whatever the compiler flags.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int target_func(int x);
int target_func2(int x);

/* push rbp; mov rbp, rsp; mov eax, edi; lea eax, [rax + rax*2]; pop rbp; ret */
__asm__(".text\n"
	".globl target_func\n"
	".type target_func, @function\n"
	"target_func:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	mov %edi, %eax\n"
	"	lea (%rax,%rax,2), %eax\n"
	"	pop %rbp\n"
	"	ret\n"
	".size target_func, .-target_func\n"
	".globl target_func2\n"
	".type target_func2, @function\n"
	"target_func2:\n"
	"	lea 1(%rdi), %eax\n"
	"	ret\n"
	".size target_func2, .-target_func2\n");

int main(void)
{
	char line[128];

	/* The fake daemon writes our code through /proc/PID/mem, as the
	 * daemon does; under Yama it is not our ancestor. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d func=%p func2=%p\n", (int)getpid(), (void *)target_func,
	       (void *)target_func2);
	while (fgets(line, sizeof(line), stdin)) {
		int n;

		/* call2 first: "call %d" would read "call2 4" as call 2. */
		if (sscanf(line, "call2 %d", &n) == 1) {
			printf("called ret=%d\n", target_func2(n));
		} else if (sscanf(line, "call %d", &n) == 1) {
			printf("called ret=%d\n", target_func(n));
		} else if (!strncmp(line, "fork", 4)) {
			pid_t pid = fork();

			if (pid == 0) {
				printf("child pid=%d\n", (int)getpid());
				for (int i = 0; i < 60; i++)
					sleep(1);
				_exit(0);
			}
			printf("forked pid=%d\n", (int)pid);
		} else if (!strncmp(line, "exit", 4)) {
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
			return 0;
		}
	}
	return 0;
}
