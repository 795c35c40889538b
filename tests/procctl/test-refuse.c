/*
 * Every refusal of dp_proc_attach(), each with its errno and a message that
 * names what is wrong: no such process, a thread id, a zombie, another
 * tracer (named), a 32-bit program, a statically linked one, another user's
 * process and a non-dumpable one (attached from a child that drops to an
 * unprivileged uid), a thread with credentials of its own, and yama's rules
 * through dp_ptrace_judge().
 */
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/proc-status.h"
#include "proc/ptrace.h"
#include "procctl-util.h"
#include "tap.h"

#define NOBODY 65534

/* How many threads of pid have a tracer, or -1. */
static int traced_threads(pid_t pid)
{
	struct dp_proc_status st;
	pid_t *tids;
	size_t n;
	int traced = 0;

	if (dp_proc_tasks(pid, &tids, &n)) {
		free(tids);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!dp_proc_status_read(pid, tids[i], &st))
			traced += st.tracer != 0;
	free(tids);
	return traced;
}

/*
 * Attach to pid; the errno and message come back through msg, and in
 * *traced (unless NULL) how many threads of pid have a tracer once the
 * attach returned, before anything else is done.
 */
static int try_attach_counted(pid_t pid, char *msg, size_t len, int *traced)
{
	struct dp_proc *p = dp_proc_open(pid);
	int ret = dp_proc_attach(p, 0);

	if (traced)
		*traced = traced_threads(pid);
	snprintf(msg, len, "%s", dp_proc_errmsg(p));
	dp_proc_close(p);
	return ret;
}

static int try_attach(pid_t pid, char *msg, size_t len)
{
	return try_attach_counted(pid, msg, len, NULL);
}

/*
 * The same from a child running as uid (the would-be tracer: the kernel
 * lets go of what it traced when it exits); its results through a pipe.
 */
static int try_attach_as(uid_t uid, pid_t pid, char *msg, size_t len, int *traced)
{
	int fds[2], ret = -1, status, n = -1;
	pid_t child;

	if (pipe(fds))
		return -1;
	child = tap_fork();
	if (child == 0) {
		char m[512];
		int r;

		close(fds[0]);
		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(1);
		r = try_attach_counted(pid, m, sizeof(m), &n);
		if (write(fds[1], &r, sizeof(r)) != sizeof(r) ||
		    write(fds[1], &n, sizeof(n)) != sizeof(n) ||
		    write(fds[1], m, strlen(m) + 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	memset(msg, 0, len);
	if (read(fds[0], &ret, sizeof(ret)) != sizeof(ret) ||
	    read(fds[0], &n, sizeof(n)) != sizeof(n) || read(fds[0], msg, len - 1) < 0)
		ret = -1;
	if (traced)
		*traced = n;
	close(fds[0]);
	waitpid(child, &status, 0);
	return ret;
}

/* A child that pauses, as uid (0: stays root), dumpable or not. */
static pid_t start_sleeper(uid_t uid, int dumpable)
{
	pid_t child = tap_fork();

	if (child == 0) {
		if (uid && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid)))
			_exit(1);
		prctl(PR_SET_DUMPABLE, dumpable);
		for (;;)
			pause();
	}
	util_sleep_ms(100);
	return child;
}

/* Drops this thread alone to uid/gid: the raw calls, not glibc's. */
static int drop_thread(uid_t uid)
{
	return syscall(SYS_setresgid, uid, uid, uid) || syscall(SYS_setresuid, uid, uid, uid);
}

static void *other_creds(void *arg)
{
	int *fd = arg;

	if (drop_thread(NOBODY - 1) || write(*fd, "t", 1) != 1)
		_exit(1);
	for (;;)
		pause();
	return NULL;
}

/*
 * A child of root whose main thread runs as NOBODY, and dumpable, while its
 * other thread runs as NOBODY - 1: a thread with credentials of its own.
 */
static pid_t start_split_creds(void)
{
	int fds[2];
	pid_t child;
	char c;

	if (pipe(fds))
		return -1;
	child = tap_fork();
	if (child == 0) {
		int own[2];	/* the thread tells the main thread */
		pthread_t t;

		close(fds[0]);
		if (pipe(own) || pthread_create(&t, NULL, other_creds, &own[1]) ||
		    read(own[0], &c, 1) != 1 || drop_thread(NOBODY))
			_exit(1);
		/* Changed credentials made it non-dumpable; the test wants it not to be. */
		prctl(PR_SET_DUMPABLE, 1);
		if (write(fds[1], "m", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) != 1) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = -1;
	}
	close(fds[0]);
	return child;
}

static void stop_child(pid_t pid)
{
	int status;

	if (pid <= 0)
		return;	/* it did not start: kill(-1) would mean every process */
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* A minimal i386 program: a loop around pause() through int 0x80. */
static int write_i386(const char *path)
{
	static const unsigned char code[] = {
		0xb8, 29, 0, 0, 0,	/* mov eax, 29 (pause) */
		0xcd, 0x80,		/* int 0x80 */
		0xeb, 0xf7,		/* jmp back to the mov */
	};
	struct {
		Elf32_Ehdr eh;
		Elf32_Phdr ph;
		unsigned char code[sizeof(code)];
	} __attribute__((packed)) img;
	const uint32_t base = 0x08048000;
	FILE *f;

	memset(&img, 0, sizeof(img));
	memcpy(img.eh.e_ident, ELFMAG, SELFMAG);
	img.eh.e_ident[EI_CLASS] = ELFCLASS32;
	img.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	img.eh.e_ident[EI_VERSION] = EV_CURRENT;
	img.eh.e_type = ET_EXEC;
	img.eh.e_machine = EM_386;
	img.eh.e_version = EV_CURRENT;
	img.eh.e_entry = base + offsetof(__typeof__(img), code);
	img.eh.e_phoff = offsetof(__typeof__(img), ph);
	img.eh.e_ehsize = sizeof(Elf32_Ehdr);
	img.eh.e_phentsize = sizeof(Elf32_Phdr);
	img.eh.e_phnum = 1;
	img.ph.p_type = PT_LOAD;
	img.ph.p_vaddr = img.ph.p_paddr = base;
	img.ph.p_filesz = img.ph.p_memsz = sizeof(img);
	img.ph.p_flags = PF_R | PF_X;
	img.ph.p_align = 0x1000;
	memcpy(img.code, code, sizeof(code));
	f = fopen(path, "wb");
	if (!f || fwrite(&img, sizeof(img), 1, f) != 1)
		return -1;
	fclose(f);
	return chmod(path, 0755);
}

static void test_judge(void)
{
	struct dp_ptrace_facts f = {
		.tracer_uid = 1000, .tracer_gid = 1000,
		.target_uid = { 1000, 1000, 1000 }, .target_gid = { 1000, 1000, 1000 },
		.target_dumpable = true, .yama_scope = -1,
	};
	struct dp_err err = DP_ERR_INIT;
	int ret;

	tap_ok(dp_ptrace_judge(42, &f, &err) == 0, "same user, no yama: allowed");
	f.yama_scope = 1;
	ret = dp_ptrace_judge(42, &f, &err);
	tap_ok(ret == -DP_PROC_EYAMA && strstr(err.msg, "ptrace_scope is 1") &&
	       strstr(err.msg, "descendant") && strstr(err.msg, "PR_SET_PTRACER"),
	       "yama 1 and not a descendant: refused (%s)", err.msg);
	f.target_is_descendant = true;
	tap_ok(dp_ptrace_judge(42, &f, &err) == 0, "yama 1, a descendant: allowed");
	f.yama_scope = 2;
	ret = dp_ptrace_judge(42, &f, &err);
	tap_ok(ret == -DP_PROC_EYAMA && strstr(err.msg, "ptrace_scope is 2") &&
	       strstr(err.msg, "CAP_SYS_PTRACE"), "yama 2 without the capability: refused (%s)", err.msg);
	f.tracer_cap = true;
	tap_ok(dp_ptrace_judge(42, &f, &err) == 0, "yama 2 with CAP_SYS_PTRACE: allowed");
	f.yama_scope = 3;
	ret = dp_ptrace_judge(42, &f, &err);
	tap_ok(ret == -DP_PROC_EYAMA && strstr(err.msg, "ptrace_scope is 3") && strstr(err.msg, "root"),
	       "yama 3 refuses even with the capability (%s)", err.msg);
	f.yama_scope = -1;
	f.tracer_cap = false;
	f.target_caps = 1u << 13;
	ret = dp_ptrace_judge(42, &f, &err);
	tap_ok(ret == -DP_PROC_EPRIV && strstr(err.msg, "capabilities"),
	       "a target with capabilities the tracer lacks: refused (%s)", err.msg);
}

int main(void)
{
	char msg[512], line[512], i386[] = "/tmp/procctl-i386-XXXXXX";
	char *argv[] = { "./procctl-target", "-t", "2", NULL };
	struct target tg;
	pid_t child, tracer;
	int ret, status, fd, traced = -1;

	alarm(300);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* A pid just reaped is free (the kernel does not reuse it at once). */
	child = tap_fork();
	if (child == 0)
		_exit(0);
	waitpid(child, &status, 0);
	ret = try_attach(child, msg, sizeof(msg));
	tap_ok(ret == -DP_PROC_ENOPROC && strstr(msg, "no process"), "no such pid (%d: %s)", ret,
	       msg);

	if (tap_ok(target_spawn(&tg, "./procctl-target", argv, NULL, false) == 0,
		   "a target starts")) {
		char path[64];
		pid_t tid = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)tg.pid);
		snprintf(line, sizeof(line), "ls %s | sort -n | tail -1", path);
		f = popen(line, "r");
		if (f && fscanf(f, "%d", &tid) != 1)
			tid = 0;
		if (f)
			pclose(f);
		ret = try_attach(tid, msg, sizeof(msg));
		tap_ok(ret == -DP_PROC_ETHREAD && strstr(msg, "thread of process"),
		       "a thread id (%d: %s)", ret, msg);

		/* Another tracer first: it must be named. */
		tracer = tap_fork();
		if (tracer == 0) {
			prctl(PR_SET_NAME, "dp-other-tracer");
			if (ptrace(PTRACE_SEIZE, tg.pid, 0, 0))
				_exit(1);
			for (;;)
				pause();
		}
		util_sleep_ms(200);
		ret = try_attach(tg.pid, msg, sizeof(msg));
		snprintf(line, sizeof(line), "traced by pid %d (dp-other-tracer)", (int)tracer);
		tap_ok(ret == -DP_PROC_ETRACED && strstr(msg, line),
		       "another tracer is named (%d: %s)", ret, msg);
		stop_child(tracer);
		util_sleep_ms(50);
		ret = try_attach(tg.pid, msg, sizeof(msg));
		tap_ok(ret == 0, "once it is gone, attaching works (%d: %s)", ret, msg);
		tap_ok(target_quit(&tg, 5000) == 0, "the target exits cleanly");
	}

	child = tap_fork();
	if (child == 0)
		_exit(0);
	{
		siginfo_t si;

		waitid(P_PID, child, &si, WEXITED | WNOWAIT);
	}
	ret = try_attach(child, msg, sizeof(msg));
	tap_ok(ret == -DP_PROC_EZOMBIE && strstr(msg, "zombie"), "a zombie (%d: %s)", ret, msg);
	waitpid(child, &status, 0);

	fd = mkstemp(i386);
	if (fd >= 0)
		close(fd);
	child = -1;
	if (fd >= 0 && write_i386(i386) == 0) {
		child = tap_fork();
		if (child == 0) {
			execl(i386, i386, NULL);
			_exit(127);
		}
		util_sleep_ms(200);
	}
	if (child > 0 && waitpid(child, &status, WNOHANG) == 0) {
		ret = try_attach(child, msg, sizeof(msg));
		tap_ok(ret == -DP_PROC_E32BIT && strstr(msg, "32-bit"), "a 32-bit program (%d: %s)",
		       ret, msg);
		stop_child(child);
	} else {
		tap_ok(true, "# SKIP this kernel runs no 32-bit program");
	}
	unlink(i386);

	child = tap_fork();
	if (child == 0) {
		execl("./static-target", "static-target", NULL);
		_exit(127);
	}
	util_sleep_ms(200);
	ret = try_attach(child, msg, sizeof(msg));
	tap_ok(ret == -DP_PROC_ESTATIC && strstr(msg, "statically linked"),
	       "a statically linked program (%d: %s)", ret, msg);
	stop_child(child);

	if (geteuid() == 0) {
		child = start_sleeper(0, 1);
		ret = try_attach_as(NOBODY, child, msg, sizeof(msg), NULL);
		tap_ok(ret == -DP_PROC_EPRIV && strstr(msg, "uid 0") && strstr(msg, "uid 65534") &&
		       strstr(msg, "CAP_SYS_PTRACE"),
		       "another user's process, from an unprivileged uid (%d: %s)", ret, msg);
		stop_child(child);

		child = start_sleeper(NOBODY, 0);
		ret = try_attach_as(NOBODY, child, msg, sizeof(msg), NULL);
		tap_ok(ret == -DP_PROC_ENODUMP && strstr(msg, "not dumpable"),
		       "a non-dumpable process of the same user (%d: %s)", ret, msg);
		stop_child(child);

		child = start_sleeper(NOBODY, 1);
		ret = try_attach_as(NOBODY, child, msg, sizeof(msg), NULL);
		tap_ok(ret == 0, "the same user's dumpable process can be attached (%d: %s)", ret,
		       msg);
		stop_child(child);

		child = start_split_creds();
		ret = child > 0 ? try_attach_as(NOBODY, child, msg, sizeof(msg), &traced) : -1;
		tap_ok(ret == -DP_PROC_EPRIV && strstr(msg, "thread") &&
		       strstr(msg, "credentials of its own") && strstr(msg, "uid 65533"),
		       "a thread with credentials of its own is named, with its uid (%d: %s)", ret,
		       msg);
		tap_ok(child > 0 && traced == 0,
		       "and the refused attach left no thread traced (%d traced)", traced);
		stop_child(child);
	} else {
		/* Unprivileged already: init is another user's process. */
		ret = try_attach(1, msg, sizeof(msg));
		tap_ok(ret == -DP_PROC_EPRIV && strstr(msg, "CAP_SYS_PTRACE"),
		       "another user's process (%d: %s)", ret, msg);
	}
	test_judge();
	return tap_done();
}
