/*
 * The programs of test-follow.sh: images executed after the environment
 * was cleared, children forked and executed, a library dlopen'ed and called
 * at once.  Every count printed comes from the program's own counters.
 *
 *   follow-app work N           calls fw_work N times; prints
 *                               "pid P work N sum S", then "agent P yes"
 *                               or "agent P no": whether the agent is
 *                               loaded (/proc/self/maps)
 *   follow-app exec-clear N     clears its environment (clearenv), then
 *                               execve's "follow-app work N" with an
 *                               environment of its own ("FOLLOW_APP=1")
 *   follow-app spawn K N        starts K children running "follow-app work
 *                               N", each with an environment of its own:
 *                               by fork + execve, fork + execle, fork +
 *                               execvpe and posix_spawn in turn; waits for
 *                               them; prints "child P" for each
 *   follow-app dlopen LIB N     dlopen(LIB), then calls its fl_work N
 *                               times right away; prints "pid P dlopen N
 *                               sum S"
 *   follow-app dlcall LIB N     dlopen(LIB), then calls its fl_call N times,
 *                               a millisecond apart, which calls back
 *                               fw_back here (a stack that runs through the
 *                               library); prints "pid P dlcall N sum S"
 *   follow-app serve K N        a running process: prints "ready pid P",
 *                               then for each line on stdin starts K
 *                               children as spawn does, and one more by
 *                               posix_spawn running "follow-app
 *                               exec-clear N"; waits for them; prints
 *                               "round R children C failed F"; exits at
 *                               the end of stdin
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int fw_work(int x);

/* fw_work(x) = 3(x + 1), the same bytes with every compiler (a jump at its
 * entry and at its return). */
__asm__(".text\n"
	".globl fw_work\n"
	".type fw_work, @function\n"
	"fw_work:\n"
	".byte 0x55, 0x48, 0x89, 0xe5, 0x89, 0xf8, 0x83, 0xc0, 0x01\n"
	".byte 0x6b, 0xc0, 0x03, 0x5d, 0xc3\n"
	".size fw_work, . - fw_work\n");

static char self[4096];

static long number(const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);

	if (*s == '\0' || *end || n < 0) {
		fprintf(stderr, "follow-app: %s is not a count\n", s);
		exit(2);
	}
	return n;
}

/* Whether the agent is mapped in this process. */
static int agent_loaded(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, "liblttng-ust-dynprobe") != NULL;
	if (f)
		fclose(f);
	return found;
}

static int work(long n)
{
	unsigned long sum = 0;

	for (long i = 0; i < n; i++)
		sum += (unsigned)fw_work((int)i);
	printf("pid %d work %ld sum %lu\n", (int)getpid(), n, sum);
	printf("agent %d %s\n", (int)getpid(), agent_loaded() ? "yes" : "no");
	return 0;
}

static int exec_clear(const char *n)
{
	char *argv[] = { "follow-app", "work", (char *)n, NULL };
	char *envp[] = { "FOLLOW_APP=1", NULL };

	clearenv();
	execve(self, argv, envp);
	perror("follow-app: execve");
	return 1;
}

static int spawn(long k, const char *n, int with_clear)
{
	char *argv[] = { "follow-app", "work", (char *)n, NULL };
	char *envp[] = { "FOLLOW_APP=1", "PATH=/usr/bin:/bin", NULL };
	int failed = 0;

	for (long i = 0; i < k; i++) {
		pid_t pid;

		if (i % 4 == 3) {
			if (posix_spawn(&pid, self, NULL, NULL, argv, envp)) {
				perror("follow-app: posix_spawn");
				return 1;
			}
		} else {
			pid = fork();
			if (pid < 0) {
				perror("follow-app: fork");
				return 1;
			}
			if (pid == 0) {
				if (i % 4 == 0)
					execve(self, argv, envp);
				else if (i % 4 == 1)
					execle(self, "follow-app", "work", n, (char *)NULL, envp);
				else
					execvpe(self, argv, envp);
				perror("follow-app: exec");
				_exit(127);
			}
		}
		printf("child %d\n", (int)pid);
	}
	if (with_clear) {
		char *cargv[] = { "follow-app", "exec-clear", (char *)n, NULL };
		pid_t pid;

		if (posix_spawn(&pid, self, NULL, NULL, cargv, envp)) {
			perror("follow-app: posix_spawn");
			return 1;
		}
		printf("child %d\n", (int)pid);
		k++;
	}
	fflush(stdout);
	for (long i = 0; i < k; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	return failed;
}

static int serve(long k, const char *n)
{
	char line[64];
	int round = 0;

	printf("ready pid %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		int failed = spawn(k, n, 1);

		printf("round %d children %ld failed %d\n", ++round, k + 1, failed);
	}
	return 0;
}

static int with_dlopen(const char *lib, long n)
{
	int (*fl_work)(int);
	unsigned long sum = 0;
	void *h = dlopen(lib, RTLD_NOW);

	if (!h) {
		fprintf(stderr, "follow-app: %s\n", dlerror());
		return 1;
	}
	fl_work = (int (*)(int))dlsym(h, "fl_work");
	if (!fl_work) {
		fprintf(stderr, "follow-app: %s\n", dlerror());
		return 1;
	}
	for (long i = 0; i < n; i++)
		sum += (unsigned)fl_work((int)i);
	printf("pid %d dlopen %ld sum %lu\n", (int)getpid(), n, sum);
	return 0;
}

/* What the library's fl_call calls back: x + 2. */
__attribute__((noinline)) int fw_back(int x);
__attribute__((noinline)) int fw_back(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

static int with_dlcall(const char *lib, long n)
{
	int (*fl_call)(int (*)(int), int);
	unsigned long sum = 0;
	void *h = dlopen(lib, RTLD_NOW);

	if (!h || !(fl_call = (int (*)(int (*)(int), int))dlsym(h, "fl_call"))) {
		fprintf(stderr, "follow-app: %s\n", dlerror());
		return 1;
	}
	for (long i = 0; i < n; i++) {
		sum += (unsigned)fl_call(fw_back, (int)i);
		usleep(1000);
	}
	printf("pid %d dlcall %ld sum %lu\n", (int)getpid(), n, sum);
	return 0;
}

int main(int argc, char **argv)
{
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		return 1;
	self[len] = '\0';
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "work"))
		return work(number(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "exec-clear"))
		return exec_clear(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "spawn"))
		return spawn(number(argv[2]), argv[3], 0);
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(number(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "dlopen"))
		return with_dlopen(argv[2], number(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "dlcall"))
		return with_dlcall(argv[2], number(argv[3]));
	fprintf(stderr, "usage: follow-app work N | exec-clear N | spawn K N | serve K N | "
		"dlopen LIB N | dlcall LIB N\n");
	return 2;
}
