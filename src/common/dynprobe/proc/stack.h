/*
 * A held thread's call stack, unwound from outside the process, and whether
 * the thread can host a call into the C library: the contract.
 *
 * The walk uses the call frame information (.eh_frame) of every mapped
 * object through elfutils' libdw (its dwfl unwinder): the daemon links libdw
 * already for DWARF, it is maintained with the toolchain's own formats, and
 * it takes the registers and the memory from us (dwfl_attach_state), so the
 * unwinder never touches ptrace itself and reads through /proc/PID/mem.
 * The agent never links this file (no libdw in traced processes).
 *
 * A thread stopped in user code may run pthread_create() for us only if it
 * holds no lock of the C library: then no frame of its stack lies in glibc
 * (libc, the dynamic loader, libpthread/libdl/librt of glibc < 2.34) other
 * than the frames that started the thread, which hold none:
 *   main thread:  _start (the program's entry point, AT_ENTRY) <-
 *                 __libc_start_main [<- __libc_start_call_main or call_init]
 *   other thread: clone3 or clone <- start_thread
 * (glibc's own symbols are not all exported, so the start frames are known by
 * their place: the outermost frames, where the frame information ends the
 * stack, and __libc_start_main by its exported name).  A walk that does not
 * end there (a frame without frame information, code in no mapped file,
 * JIT code) proves nothing and is refused.  libm is not counted as the C
 * library: it takes no lock.
 */
#ifndef DP_PROC_STACK_H
#define DP_PROC_STACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "err.h"
#include "proc/ptrace.h"

#define DP_STACK_MAX 64

enum dp_frame_kind {
	DP_FRAME_OTHER,		/* the program, its libraries, the vdso */
	DP_FRAME_LIBC,		/* glibc: libc, the loader, libpthread, libdl, librt */
	DP_FRAME_ENTRY,		/* the program's entry point (_start) */
	DP_FRAME_NOWHERE,	/* in no mapped object */
};

struct dp_frame {
	uint64_t pc;		/* the return address (the exact pc for frame 0) */
	enum dp_frame_kind kind;
	char where[96];		/* "symbol+0xoff (object)" or "object+0xoff"
				 * (dp_stack_name() names them all) */
};

struct dp_stack {
	pid_t tid;
	size_t n;		/* frames, innermost first */
	struct dp_frame f[DP_STACK_MAX];
	bool complete;		/* the frame information ended the stack */
	char stop[128];		/* !complete: why the walk stopped */
};

struct dp_stack_walker;

/* Reads the mappings and entry point of pid: 0 or -errno with err. */
int dp_stack_walker_new(pid_t pid, struct dp_stack_walker **out, struct dp_err *err);
void dp_stack_walker_free(struct dp_stack_walker *w);

/*
 * Unwinds held thread tid of p (attached, the same pid) from its registers.
 * 0 (s filled, complete or not), or -errno of reading the registers.
 */
int dp_stack_walk(struct dp_stack_walker *w, struct dp_proc *p, pid_t tid,
		  struct dp_stack *s);

/*
 * 0 when s shows no frame of the C library or the loader but the thread's
 * start frames (main: tid is the process's first thread); else -EBUSY with
 * why: the frame that holds it, or why the walk proves nothing.
 */
int dp_stack_lock_free(const struct dp_stack *s, bool main, struct dp_err *why);

/*
 * Names every frame after its symbol (the walk names only the C library's
 * and the entry point's, for speed): for messages.  w must be the walker
 * that filled s, still over the same mappings.
 */
void dp_stack_name(struct dp_stack_walker *w, struct dp_stack *s);

/* The frames in one line, innermost first ("a <- b <- c"), cut to fit len. */
void dp_stack_format(const struct dp_stack *s, char *buf, size_t len);

#endif /* DP_PROC_STACK_H */
