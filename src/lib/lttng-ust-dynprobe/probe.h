/*
 * Probes: a site, an event class and the contexts that fill its fields; the
 * hit path the trampolines call; int3 sites for the SIGTRAP handler.
 *
 * A probe is never freed while the process lives: a trampoline or a
 * pending trap may still name it.  Removing a probe unpatches its site.
 *
 * The hit path (dp_probe_hit) keeps a per-thread guard: a probe reached while
 * the same thread is already inside it (a probe on memcpy or strlen, which
 * lttng-ust itself calls; a signal handler interrupting a hit) is skipped and
 * counted, never run.  It computes nothing when no session enables the event,
 * records with the probe site as the event's ip, and leaves errno, the
 * registers and the flags as they were.
 */
#ifndef DPA_PROBE_H
#define DPA_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "events.h"
#include "patch/tramp.h"

struct dpa_probe;

/* dpa_probe_new flags. */
enum dpa_probe_flag {
	/* The site is a function's first instruction (after an endbr64): the
	 * frame is not set up yet, the return address is at [rsp].  The
	 * frame-pointer backtrace needs to know. */
	DPA_PROBE_AT_ENTRY = 1u << 0,
};

/*
 * A probe at run-time address `site` recording event `name` with the fields
 * of its contexts, in order.  A name without ':' is "dynprobe:NAME".  The
 * contexts are copied.  NULL and errno (with a message in err):
 * EINVAL (a bad name, a context, a field given twice), E2BIG, ENOMEM, or what
 * dpa_class_get said.
 */
struct dpa_probe *dpa_probe_new(uint64_t site, const char *name, unsigned flags,
				const struct dp_ctx *ctx, size_t nctx, struct dp_err *err);

/* The handler trampolines call: (probe, saved registers).  Registers are
 * only read. */
void dp_probe_hit(void *probe, struct dp_regs *regs);

/* hits and recorded are counted without locked instructions: exact for one
 * thread, possibly short by a few when threads hit a probe at the same
 * instant. */
struct dpa_probe_stats {
	uint64_t hits;		/* times the site was reached */
	uint64_t recursions;	/* hits skipped: the thread was inside a hit already */
	/* events the sessions' traces account for: written, or counted there as
	 * discarded (a hit recorded in two sessions counts 2; not: hits while
	 * an event, its channel or session is off, filtered out, or refused
	 * by a buffer that counts nothing, as one being torn down) */
	uint64_t recorded;
	uint64_t mem_errors;	/* memory contexts that recorded an error value */
};

void dpa_probe_stats(const struct dpa_probe *probe, struct dpa_probe_stats *st);

/*
 * int3 sites: when the int3 at `site` traps, the SIGTRAP handler runs the
 * probes' hit path with the registers of the signal context and resumes at
 * `resume` (the relocated instruction).  At most DPA_TRAP_MAX_PROBES probes; a
 * second dpa_trap_add on a site replaces its probes.  0 or -errno (-E2BIG,
 * -ENOMEM, -EINVAL, or sigaction's).
 *
 * Order: dpa_trap_add before the int3 can run; remove by first putting the
 * original bytes back, then dpa_trap_remove.  A thread that trapped just before
 * the bytes came back still finds the site (removed sites keep their resume
 * address, trampolines are never freed) and goes on in the relocated copy.
 *
 * The SIGTRAP handler is installed when the first site is added, with
 * SA_NODEFER so that an int3 reached from inside the handler (a probe on
 * memcpy) traps again instead of killing the process.  Traps that are not at
 * one of our sites go to the disposition that was there before: its handler
 * (with its mask and flags), or the default action done exactly as the kernel
 * would (the int3 runs again with SIG_DFL, so the core dump shows the real
 * place).  A program that installs its own SIGTRAP handler afterwards takes
 * SIGTRAP over: each dpa_trap_add, and dpa_trap_check, puts ours back in front
 * and keeps the program's as the one traps that are not ours go to.  Between
 * the program's sigaction and that check, an int3 site would reach the
 * program's handler: the daemon plans jumps wherever it can.
 */
#define DPA_TRAP_MAX_PROBES 16

int dpa_trap_add(uint64_t site, uint64_t resume, struct dpa_probe *const *probes, size_t n);
int dpa_trap_remove(uint64_t site);

/* Puts our SIGTRAP handler back in front if the program replaced it (while
 * int3 sites exist).  1 if it had to, 0 if not, or -errno. */
int dpa_trap_check(void);

struct dpa_trap_stats {
	uint64_t ours;		/* traps at our sites */
	uint64_t chained;	/* traps passed on to the program's disposition */
	uint64_t reasserted;	/* times our handler had to be put back */
};

void dpa_trap_stats(struct dpa_trap_stats *st);

#endif /* DPA_PROBE_H */
