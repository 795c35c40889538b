/*
 * Trampolines: the code a patched site jumps to.
 *
 *   for each displaced instruction:
 *       for each hook placed at it: save everything, handler(arg, regs), restore
 *       the relocated instruction
 *   jmp back to the end of the patch
 *
 * Saving skips the 128-byte red zone, saves rflags (then clears DF, as the
 * ABI wants for C code) and every general register into a struct dp_regs,
 * aligns the stack to 64, and saves the vector state the handler could
 * clobber with explicit moves chosen from CPUID/XCR0 (zmm0-31 and k0-7, or
 * ymm0-15, or xmm0-15; MXCSR and the x87 control word in every case).
 * Restoring is exact: the interrupted code sees no difference.  The flags
 * come back from the saved rflags by std/sahf and an overflowing add rather
 * than popfq (~3 ns cheaper): the arithmetic flags and DF, the only ones a
 * handler following the C ABI can change; a handler that writes
 * regs->rflags changes those and no other (without sahf, on the first
 * x86-64 CPUs, popfq restores them all).
 *
 * Where the handler finds the vector registers (the contract value
 * recipes read xmm operands by, spec/value.h): the save area begins
 * dp_vec_layout(vec).size bytes below the regs pointer rounded down to 64,
 * register n at n * regsize (its low 16 bytes are xmm n), for the vec the
 * daemon chose, dp_vec_save_detect() on the same machine.  Every hook saves
 * every vector register the probed code can read: DP_VEC_AVX512_LOW leaves
 * out only zmm16-31 and k0-7, in objects that never name them (so no probe
 * of theirs can have a value there to read), and keeps the layout.  Saving
 * less at function entries and returns because the ABI keeps only some
 * registers live there would not be safe: gcc's -fipa-ra lets a caller in
 * the same object keep values in caller-saved registers across a call to a
 * function it knows leaves them alone.
 */
#ifndef DP_PATCH_TRAMP_H
#define DP_PATCH_TRAMP_H

#include <stddef.h>
#include <stdint.h>

#include "reason.h"
#include "x86/emit.h"
#include "x86/insn.h"

/* The state at a probe point, as the handler sees it (and may change it). */
struct dp_regs {
	uint64_t rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rip, rflags;
};

typedef void (*dp_handler_fn)(void *arg, struct dp_regs *regs);

/* Which vector registers a trampoline saves. */
enum dp_vec_save {
	DP_VEC_SSE,		/* xmm0-15 */
	DP_VEC_AVX,		/* ymm0-15 */
	DP_VEC_AVX512,		/* zmm0-31, k0-7 */
	DP_VEC_AVX512_LOW,	/* zmm0-15: where nothing can read zmm16-31 or
				   k0-7 (see dp_vec_save_site), which the
				   handler may then change; the area is laid
				   out as DP_VEC_AVX512's, slots 16-31 and the
				   mask slots left unwritten */
};

/*
 * The save for a site, from what the CPU has (dp_vec_save_detect) and
 * whether the site's object is free of code that names zmm16-31 or k0-7
 * (patch/analysis.h, dp_object_evex_free: 1 free, else not).  Those
 * registers are caller-saved, so a live value in them is seen only by code
 * naming them in the object that holds it (or by a caller of the same
 * object that gcc's -fipa-ra let keep it across a call); in a free object
 * none is live at any site.  Saving them is two thirds of an AVX-512
 * trampoline's cost (~8 of 12 ns here).
 */
static inline enum dp_vec_save dp_vec_save_site(enum dp_vec_save vec, int evex_free)
{
	return vec == DP_VEC_AVX512 && evex_free == 1 ? DP_VEC_AVX512_LOW : vec;
}

/* What this CPU and kernel enable (CPUID and XCR0).  (vec.c, with the
 * layout: the agent links it.) */
enum dp_vec_save dp_vec_save_detect(void);
const char *dp_vec_save_str(enum dp_vec_save vec);

/* The vector save area: registers, then the mask registers, MXCSR and the
 * x87 control word; offsets from its start. */
struct dp_vec_layout {
	unsigned nregs, regsize;	/* vector registers and their size */
	unsigned nmask;			/* k registers */
	int32_t mask_off, mxcsr_off, fcw_off;
	uint32_t size;			/* a multiple of 64 */
};
struct dp_vec_layout dp_vec_layout(enum dp_vec_save vec);

/* Where a hook's trampoline saved vector register n (its low bytes are
 * xmm n), from the regs pointer its handler got; NULL for no such register. */
const uint8_t *dp_tramp_vec_reg(const struct dp_regs *regs, enum dp_vec_save vec, unsigned n);

#define DP_WINDOW_MAX_INSNS 8
#define DP_WINDOW_MAX_LEN 32

/* The bytes a patch overwrites and the instructions among them. */
struct dp_window {
	uint64_t addr;			/* run-time address of the first byte */
	uint8_t len;			/* bytes overwritten (padding after a ret included) */
	uint8_t ninsns;			/* instructions that run, from addr on */
	uint8_t lead;			/* nop bytes right before addr that run in
					   place, their hooks served first (the nop
					   of a `nop; nop5` site: plan.h) */
	uint8_t bytes[DP_WINDOW_MAX_LEN];	/* the original bytes */
	struct dp_insn insns[DP_WINDOW_MAX_INSNS];
	uint8_t off[DP_WINDOW_MAX_INSNS];	/* offset of each instruction */
};

/* A handler call placed before the instruction at `addr`. */
struct dp_tramp_hook {
	uint64_t addr;
	void *arg;
};

struct dp_tramp {
	uint64_t entry;				/* where the patch jumps to */
	uint64_t insn_at[DP_WINDOW_MAX_INSNS];	/* where a thread stopped at each displaced
						   instruction resumes: its hooks, then
						   its relocated copy */
	size_t len;				/* bytes of code */
};

/* How many of w's jmps and jccs go to one of its own instructions past the
 * first (dp_tramp_build leads their copies to that instruction's copy). */
unsigned dp_window_inner_branches(const struct dp_window *w);

/* Bytes a trampoline can take at most, for sizing buffers. */
size_t dp_tramp_max_len(size_t nhooks, enum dp_vec_save vec);

/*
 * Emits the trampoline of window w at the emitter's address.  Hooks must lie
 * on instruction starts of the window, or in its lead (they run first, at
 * the entry, and see rip = their own address: a nop changes nothing else).
 * Nops among the window's instructions are not copied.  A jmp or jcc to
 * one of the window's own instructions past the first goes to that
 * instruction's copy, its hooks included (the original is overwritten).
 * Returns 0, -ENOTSUP with *why when an instruction cannot move, -EINVAL
 * for a hook off the instructions, or the emitter's error.  Calls
 * dp_emit_finish().
 */
int dp_tramp_build(struct dp_emit *e, const struct dp_window *w,
		   const struct dp_tramp_hook *hooks, size_t nhooks, dp_handler_fn handler,
		   enum dp_vec_save vec, struct dp_tramp *out, enum dp_reason *why);

#endif /* DP_PATCH_TRAMP_H */
