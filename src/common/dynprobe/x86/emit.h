/*
 * x86-64 code emitter: one function per instruction form the relocator and
 * the trampolines write.
 *
 * Code is written into a caller's buffer of fixed capacity whose bytes will
 * run at `pc`.  Errors are sticky: the first one (-ENOSPC past the capacity,
 * -ERANGE for a target out of a rel8/rel32's reach, -EINVAL for a bad
 * operand) is kept in e->err, later calls write nothing, and
 * dp_emit_finish() returns it after resolving the label fix-ups.  Nothing is
 * ever written past the capacity.
 */
#ifndef DP_X86_EMIT_H
#define DP_X86_EMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "x86/insn.h"

#define DP_EMIT_MAX_LABELS 32
#define DP_EMIT_MAX_FIXUPS 64

/* Condition codes, as in the low nibble of jcc. */
enum dp_cc {
	DP_CC_O, DP_CC_NO, DP_CC_B, DP_CC_AE, DP_CC_E, DP_CC_NE, DP_CC_BE, DP_CC_A,
	DP_CC_S, DP_CC_NS, DP_CC_P, DP_CC_NP, DP_CC_L, DP_CC_GE, DP_CC_LE, DP_CC_G,
};

struct dp_emit_fixup {
	uint32_t at;		/* offset of the rel field */
	uint8_t size;		/* 1 or 4 */
	uint8_t label;
};

struct dp_emit {
	uint8_t *code;
	size_t cap, len;
	uint64_t pc;		/* run-time address of code[0] */
	int err;
	unsigned nlabels, nfixups;
	int64_t label_off[DP_EMIT_MAX_LABELS];	/* -1 while unbound */
	struct dp_emit_fixup fixups[DP_EMIT_MAX_FIXUPS];
};

void dp_emit_init(struct dp_emit *e, void *buf, size_t cap, uint64_t pc);
/* Resolves fix-ups; returns 0 or the first error. */
int dp_emit_finish(struct dp_emit *e);
/* Run-time address of the next byte. */
static inline uint64_t dp_emit_pc(const struct dp_emit *e)
{
	return e->pc + e->len;
}
/* Whether a rel32 at `from` (the end of the instruction) reaches `to`. */
bool dp_rel32_reaches(uint64_t from, uint64_t to);

/* Labels: a new unbound label (its number), and binding it here. */
int dp_emit_label(struct dp_emit *e);
void dp_emit_bind(struct dp_emit *e, int label);

void dp_emit_bytes(struct dp_emit *e, const void *bytes, size_t n);

/* Control flow. */
void dp_emit_jmp_rel32(struct dp_emit *e, uint64_t target);
void dp_emit_jmp_rel8(struct dp_emit *e, uint64_t target);	/* -ERANGE beyond -128..127 */
void dp_emit_jmp_abs(struct dp_emit *e, uint64_t target);	/* jmp [rip]; .quad: no register */
void dp_emit_jmp(struct dp_emit *e, uint64_t target);		/* rel32 when in reach, else abs */
void dp_emit_jmp_label(struct dp_emit *e, int label);		/* rel32 */
void dp_emit_jcc_rel32(struct dp_emit *e, enum dp_cc cc, uint64_t target);
void dp_emit_jcc(struct dp_emit *e, enum dp_cc cc, uint64_t target); /* or j!cc over a jmp abs */
void dp_emit_jcc_label(struct dp_emit *e, enum dp_cc cc, int label);	/* rel32 */
void dp_emit_jcc8_label(struct dp_emit *e, enum dp_cc cc, int label);
void dp_emit_jmp8_label(struct dp_emit *e, int label);
/* loop, loope, loopne, jrcxz (opcode e0-e3), ecx-sized with addr32. */
void dp_emit_loop8_label(struct dp_emit *e, uint8_t opcode, bool addr32, int label);
void dp_emit_call_reg(struct dp_emit *e, enum dp_reg reg);
void dp_emit_ret_imm16(struct dp_emit *e, uint16_t pop);
void dp_emit_int3(struct dp_emit *e, size_t n);			/* n int3s */

/* Stack, flags and general registers. */
void dp_emit_push_reg(struct dp_emit *e, enum dp_reg reg);
void dp_emit_pop_reg(struct dp_emit *e, enum dp_reg reg);
void dp_emit_pushfq(struct dp_emit *e);
void dp_emit_popfq(struct dp_emit *e);
void dp_emit_cld(struct dp_emit *e);
/* Pushes a 64-bit value without touching a register or the flags. */
void dp_emit_push_imm64(struct dp_emit *e, uint64_t value);
/* lea rsp, [rsp + off]: moves the stack without touching the flags. */
void dp_emit_lea_rsp(struct dp_emit *e, int32_t off);
/* lea dst, [rsp + off] */
void dp_emit_lea_reg_rsp(struct dp_emit *e, enum dp_reg dst, int32_t off);
void dp_emit_mov_reg_imm64(struct dp_emit *e, enum dp_reg reg, uint64_t value);
void dp_emit_mov_reg_reg(struct dp_emit *e, enum dp_reg dst, enum dp_reg src);
/* mov dst, [base + disp32] and mov [base + disp32], src (64-bit). */
void dp_emit_load(struct dp_emit *e, enum dp_reg dst, enum dp_reg base, int32_t disp);
void dp_emit_store(struct dp_emit *e, enum dp_reg base, int32_t disp, enum dp_reg src);
/* and rsp, -align (align a power of two <= 128): changes the flags. */
void dp_emit_align_rsp(struct dp_emit *e, unsigned align);
void dp_emit_sub_rsp(struct dp_emit *e, uint32_t n);	/* changes the flags */

/* Vector and control state, to or from [rsp + disp32]. */
void dp_emit_movups_store(struct dp_emit *e, int32_t disp, unsigned xmm);
void dp_emit_movups_load(struct dp_emit *e, unsigned xmm, int32_t disp);
void dp_emit_vmovdqu_store(struct dp_emit *e, int32_t disp, unsigned ymm);
void dp_emit_vmovdqu_load(struct dp_emit *e, unsigned ymm, int32_t disp);
void dp_emit_vmovdqu64_store(struct dp_emit *e, int32_t disp, unsigned zmm);
void dp_emit_vmovdqu64_load(struct dp_emit *e, unsigned zmm, int32_t disp);
void dp_emit_kmovq_store(struct dp_emit *e, int32_t disp, unsigned k);
void dp_emit_kmovq_load(struct dp_emit *e, unsigned k, int32_t disp);
void dp_emit_stmxcsr(struct dp_emit *e, int32_t disp);
void dp_emit_ldmxcsr(struct dp_emit *e, int32_t disp);
void dp_emit_fnstcw(struct dp_emit *e, int32_t disp);
void dp_emit_fldcw(struct dp_emit *e, int32_t disp);
void dp_emit_vzeroupper(struct dp_emit *e);

#endif /* DP_X86_EMIT_H */
