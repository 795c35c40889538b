/*
 * The hit path's internals, shared by the agent's own files: per-thread
 * state, fault-safe memory reads (memread.c) and stack walkers (unwind.c).
 * Nothing here is exported from the library.
 *
 * Everything reached from a hit is async-signal-safe (int3 sites run it from
 * a SIGTRAP handler) and never calls malloc: the thread may have been
 * stopped inside it.
 */
#ifndef DPA_HIT_H
#define DPA_HIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "patch/tramp.h"

/* Functions the version script exports (everything else stays hidden). */
#define DPA_EXPORT __attribute__((visibility("default")))

/* One thread's state, in initial-exec TLS: reaching it never allocates. */
struct dpa_thread {
	int guard;			/* inside the hit path */
	bool events_ready;		/* lttng-ust's per-thread state is set up */
	int *errnop;			/* this thread's errno, once it recorded */
	bool fsgs_cached;		/* fs_base, gs_base read (no FSGSBASE) */
	uint8_t stack_refreshes;	/* /proc/self/maps reads left for the stack */
	uint8_t *scratch;		/* mmap'd, scratch_size bytes */
	size_t scratch_size;
	uint64_t stack_lo, stack_hi;	/* the mapping holding this thread's stack */
	uint64_t fs_base, gs_base;
	/* While the SIGTRAP handler runs probes: the regs it built and the
	 * xmm registers of its ucontext (NULL if the kernel gave none), for
	 * value recipes that read xmm (a trampoline's are next to its regs). */
	const struct dp_regs *trap_regs;
	const void *trap_xmm;
};

extern __thread struct dpa_thread dpa_self __attribute__((tls_model("initial-exec")));

/* Scratch of at least dpa_scratch_need bytes for this thread (mapped on
 * first use, raw syscalls only), or NULL. */
void *dpa_thread_scratch(struct dpa_thread *t);
/* The thread's cache of CFI rows by address (unwind.c): DPA_CFI_CACHE_BYTES
 * in the header of its scratch mapping, kept as long as the mapping (which
 * goes to the next thread when this one ends); NULL before the thread's
 * scratch is mapped. */
#define DPA_CFI_CACHE_BYTES 4160
void *dpa_thread_cfi_cache(struct dpa_thread *t);
/* Raises the scratch every thread needs (a new probe's contexts). */
void dpa_scratch_need_raise(size_t size);
/* From the library constructor: what releases a thread's scratch at its
 * exit.  0 or -errno. */
int dpa_thread_setup(void);

/* ---- memread.c ------------------------------------------------------- */

/* Address ranges that stay readable while a hit runs. */
#define DPA_MEM_RANGES_MAX 8
struct dpa_mem_ranges {
	unsigned n;
	struct { uint64_t lo, hi; } r[DPA_MEM_RANGES_MAX];
};

/*
 * The readable segments of the loaded ELF object holding addr.  From probe
 * creation (it walks the loader's list), never from a hit.  0, or -ENOENT.
 * The object of a probe's site is loaded whenever the probe runs, so its
 * segments can be read directly during a hit; the main executable's always
 * can (never unloaded).  Other objects may be dlclose'd at any moment: they
 * are read through the kernel.  Nothing is kept loaded that the program would
 * unload: that would change what dlclose does.
 */
int dpa_mem_object_ranges(uint64_t addr, struct dpa_mem_ranges *out);

/* Records the main executable's segments (library constructor). */
void dpa_mem_setup(void);

/*
 * Reads len bytes at addr without ever faulting.  Cheap when the bytes lie
 * in the probed thread's stack above its rsp (minus the red zone), in the
 * main executable or in `own` (may be NULL); otherwise one process_vm_readv
 * on ourselves.  0 or -errno (-EFAULT).
 */
int dpa_mem_read(const struct dp_regs *regs, const struct dpa_mem_ranges *own, void *dst,
		 uint64_t addr, size_t len);

/*
 * Reads the NUL-terminated string at addr, at most max bytes (dst holds
 * max + 1): its length, -E2BIG (dst holds the first max bytes, terminated),
 * or -errno (dst is "").  Never the bytes of a partial read.
 */
long dpa_mem_read_str(const struct dp_regs *regs, const struct dpa_mem_ranges *own, char *dst,
		      uint64_t addr, size_t max);

/* Looks up the mapping that holds the probed rsp into dpa_self's stack
 * bounds (first use, the stack grew, another stack: a few times per thread
 * at most).  false when it cannot. */
bool dpa_mem_stack_refresh(const struct dp_regs *regs);

/* Whether [addr, addr+len) lies in this thread's stack, above rsp minus the
 * red zone: such bytes stay mapped for as long as the hit runs.  In line:
 * the hit path's reads of stack slots cost a few compares. */
#define DPA_RED_ZONE 128

static inline bool dpa_mem_on_stack(const struct dp_regs *regs, uint64_t addr, size_t len)
{
	struct dpa_thread *t = &dpa_self;
	uint64_t from = regs->rsp - DPA_RED_ZONE;

	if (__builtin_expect(regs->rsp < t->stack_lo || regs->rsp >= t->stack_hi, 0) &&
	    !dpa_mem_stack_refresh(regs))
		return false;
	if (from < t->stack_lo)
		from = t->stack_lo;
	return addr >= from && addr < t->stack_hi && len <= t->stack_hi - addr;
}

/* After fork, in the child: the pid process_vm_readv names. */
void dpa_mem_after_fork(void);

/* ---- unwind.c -------------------------------------------------------- */

/*
 * At a probe's definition, for a backtrace by walker (enum dp_bt_walker):
 * what the walker needs set up (the CFI tables of the objects loaded by now)
 * and the bytes of scratch its walks need.  Never from a hit.
 */
size_t dpa_bt_prepare(unsigned walker);

/*
 * A stack walk from the probed context: out[0] is regs->rip, then return
 * addresses, depth at most.  Returns how many were stored.  at_entry: rip is
 * a function's first instruction (the frame-pointer walk needs to know).
 */
unsigned dpa_bt_walk(unsigned walker, const struct dp_regs *regs, bool at_entry, uint64_t *out,
		     unsigned depth, void *scratch);

/* libunwind's setup, from the library constructor. */
void dpa_bt_setup(void);

#endif /* DPA_HIT_H */
