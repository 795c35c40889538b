/*
 * Holding a command we start at its entry point (child.h): a spin loop
 * written over the entry with the tracer's PEEKTEXT/POKETEXT while the
 * child is stopped after its exec, and brief seizes to look at and restore
 * the spinning thread.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/child.h"
#include "proc/proc-status.h"

/* The two bytes of `jmp .` (jmp rel8 -2). */
static const uint8_t spin[DP_CHILD_SPIN_LEN] = { 0xeb, 0xfe };

/* The word at addr of a stopped tracee, its first n bytes replaced by
 * bytes; what they were in old (may be NULL). */
static int poke_bytes(pid_t pid, uint64_t addr, const uint8_t *bytes, uint8_t *old, size_t n)
{
	long word;

	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, pid, (void *)addr, NULL);
	if (errno)
		return -errno;
	if (old)
		memcpy(old, &word, n);
	memcpy(&word, bytes, n);
	if (ptrace(PTRACE_POKETEXT, pid, (void *)addr, (void *)word) < 0)
		return -errno;
	return 0;
}

/* Seizes pid and stops it (PTRACE_INTERRUPT): 0, or -errno (nothing held). */
static int seize_stopped(pid_t pid, int *status)
{
	int err;

	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0)
		return -errno;
	if (ptrace(PTRACE_INTERRUPT, pid, NULL, NULL) < 0 || waitpid(pid, status, __WALL) < 0) {
		err = errno;
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		return -err;
	}
	return 0;
}

int dp_child_traceme(void)
{
	return ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 ? -errno : 0;
}

int dp_child_hold_entry(pid_t pid, struct dp_child_entry *h)
{
	int ret;

	h->pid = pid;
	ret = dp_proc_auxv(pid, AT_ENTRY, &h->entry);
	if (!ret)
		ret = poke_bytes(pid, h->entry, spin, h->orig, sizeof(spin));
	if (!ret)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return ret;
}

int dp_child_catch_entry(pid_t pid, struct dp_child_entry *h)
{
	int status, ret = seize_stopped(pid, &status);

	if (ret)
		return ret;
	h->pid = pid;
	ret = WIFSTOPPED(status) ? dp_proc_auxv(pid, AT_ENTRY, &h->entry) : -ESRCH;
	if (!ret)
		ret = poke_bytes(pid, h->entry, spin, h->orig, sizeof(spin));
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return ret;
}

/* Whether the main thread is at the entry now (a brief seize). */
static bool at_entry(const struct dp_child_entry *h)
{
	struct user_regs_struct regs;
	bool got;
	int status;

	if (seize_stopped(h->pid, &status))
		return false;
	got = WIFSTOPPED(status) && !ptrace(PTRACE_GETREGS, h->pid, NULL, &regs) &&
	      regs.rip == h->entry;
	ptrace(PTRACE_DETACH, h->pid, NULL, NULL);
	return got;
}

int dp_child_wait_entry(const struct dp_child_entry *h, int timeout_ms, int poll_ms,
			int *wstatus)
{
	for (int ms = 0; ms < timeout_ms; ms += poll_ms) {
		if (waitpid(h->pid, wstatus, WNOHANG) == h->pid)
			return 1;
		if (at_entry(h))
			return 0;
		usleep((useconds_t)poll_ms * 1000);
	}
	return -ETIMEDOUT;
}

int dp_child_release_entry(const struct dp_child_entry *h, struct dp_err *err)
{
	int status, ret = seize_stopped(h->pid, &status);

	if (ret)
		return dp_err_set(err, ret, "cannot stop process %d at its entry point: %s",
				  (int)h->pid, strerror(-ret));
	ret = WIFSTOPPED(status) ? poke_bytes(h->pid, h->entry, h->orig, NULL, sizeof(spin))
				 : -ECHILD;
	if (ret)
		dp_err_set(err, ret, "cannot restore the entry point of process %d", (int)h->pid);
	ptrace(PTRACE_DETACH, h->pid, NULL, NULL);
	return ret;
}
