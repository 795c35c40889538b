/*
 * Value recipes: the context kind DP_CTX_VALUE (spec/ctx.h), a value the
 * agent computes at each hit by running a short stack program over the
 * saved registers and fault-safe memory reads.  The daemon compiles into it
 * whatever says where a value lives at a probe site: an SDT argument spec
 * (`-4@-20(%rbp)`, spec/sdt.h) or a DWARF location expression; the agent
 * never sees the source form, never parses, and trusts no recipe before
 * dp_value_check has looked at it (it links value.c, not a parser).
 *
 * The program.  At most DP_VALUE_MAX_OPS ops run in order over a stack of
 * at most DP_VALUE_MAX_DEPTH 64-bit entries, starting empty:
 *
 *   REG  r, imm     push register r plus imm (DW_OP_breg: one op), r in
 *                   the numbering below
 *   CONST imm       push imm (DW_OP_addr with the load bias added by the
 *                   daemon for the process, DW_OP_const*, an SDT `$imm`,
 *                   a `SYM+OFF(%rip)` address, DW_OP_implicit_value up to
 *                   8 bytes in little-endian order)
 *   ADDC imm        top += imm (DW_OP_plus_uconst, a displacement)
 *   ADD             pop b, pop a, push a + b (base + index)
 *   MULC imm        top *= imm (index * scale)
 *   SHR  n          top >>= n bits, logical (a high-byte view: %ah)
 *   DEREF n         top = the n bytes (1, 2, 4 or 8) at address top, zero
 *                   extended (DW_OP_deref, DW_OP_deref_size): a read that
 *                   faults stops the program with an error (below)
 *   PIECE n, imm    pop v and put its low n bytes (1..8) at byte imm of the
 *                   piece value (DW_OP_piece: a value assembled from parts;
 *                   a part in memory is a DEREF before its PIECE)
 *   SEXT n          top = its low n bytes (1, 2, 4), sign-extended to 64 bits
 *   ZEXT n          top = its low n bytes (1, 2, 4), zero-extended (a narrow
 *                   value recorded in a wider field: an SDT argument whose
 *                   sites disagree on its size, DW_OP_convert)
 *   BITS n, imm     top = its low n bits (1..63), sign-extended when imm is 1,
 *                   else zero-extended (a bit-field, after a SHR to its
 *                   first bit)
 *
 * Register numbers (one byte): 0..15 the general registers in struct
 * dp_regs order (enum dp_reg: rax rcx rdx rbx rsp rbp rsi rdi r8..r15),
 * DP_CTX_REG_RIP (the probed instruction's address), DP_CTX_REG_RFLAGS,
 * DP_CTX_REG_FS_BASE, DP_CTX_REG_GS_BASE (TLS), and DP_VALUE_XMM0 + n for
 * the low 64 bits of xmm0..15 (floats and doubles).  The frame base of a
 * DWARF location (the CFA) is not a register here: the daemon turns it into
 * rsp or rbp plus an offset valid at the probe's PC.
 *
 * The result (`loc`):
 *   DP_VALUE_LOC_VALUE   the value is the top of the stack (a register's
 *                        value, DW_OP_stack_value, a constant);
 *   DP_VALUE_LOC_ADDR    the top of the stack is the value's address: the
 *                        type's size in bytes are read there (DW_OP_fbreg
 *                        and every memory operand);
 *   DP_VALUE_LOC_PIECES  the value is the bytes the PIECE ops assembled
 *                        (bytes no piece wrote are 0); the stack ends empty.
 * A string (type DP_FT_STRING) starts at the top of the stack, whatever
 * loc says (VALUE: a `char *` computed; ADDR: a char array in place).
 *
 * The type is the context's `type` (struct dp_field_desc):
 *   DP_FT_INT, size 1/2/4/8, is_signed, hex   the value's low `size` bytes
 *                        (a pointer: size 8, unsigned, hex); with
 *                        DP_VALUE_BOOL in flags, 1 for any non-zero value
 *                        (bool: recorded as an unsigned 8-bit integer);
 *   DP_FT_DOUBLE, size 4 or 8   the value's low 4 bytes as an IEEE float,
 *                        or 8 as a double; recorded as a double field;
 *   DP_FT_STRING         a NUL-terminated string of at most the context's
 *                        maxlen bytes (as `string:` contexts).
 *
 * Fields and errors.  NAME holds the value.  A recipe that reads memory
 * (a DEREF, loc ADDR or a string) or an xmm register also records
 * `_NAME_error` as memory contexts do (spec/ctx.h): 0, or the errno of
 * the read that failed (EFAULT for an unreadable address), NAME then being
 * 0 or "".  A recipe that reads only general registers and constants
 * cannot fail and has no error field.  An xmm register whose state the hit
 * did not save (a trampoline that saves vector registers partially, see
 * patch/tramp.h) reads as an error ENODATA (61): every trampoline today
 * saves xmm0-15 at every hook, and an int3 site has them in the signal's
 * ucontext.
 *
 * Every check is static (dp_value_check): no op pops an empty stack, the
 * stack never exceeds its depth, the program ends with exactly one entry
 * (LOC_VALUE, LOC_ADDR) or none (LOC_PIECES, with at least one PIECE and
 * pieces within 8 bytes); so a hit never meets a malformed program.
 */
#ifndef DP_SPEC_VALUE_H
#define DP_SPEC_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define DP_VALUE_MAX_OPS 16
#define DP_VALUE_MAX_DEPTH 8

/* Register numbers beyond spec/ctx.h's enum dp_ctx_reg. */
#define DP_VALUE_XMM0 32
#define DP_VALUE_XMM_COUNT 16

enum dp_value_opcode {
	DP_VOP_REG = 1,
	DP_VOP_CONST,
	DP_VOP_ADDC,
	DP_VOP_ADD,
	DP_VOP_MULC,
	DP_VOP_SHR,
	DP_VOP_DEREF,
	DP_VOP_PIECE,
	DP_VOP_SEXT,
	DP_VOP_ZEXT,
	DP_VOP_BITS,
};
#define DP_VOP_LAST DP_VOP_BITS

struct dp_value_op {
	uint8_t op;		/* enum dp_value_opcode */
	uint8_t arg;		/* REG: the register; SHR: bits; DEREF, PIECE, SEXT,
				   ZEXT: bytes */
	int64_t imm;		/* REG, CONST, ADDC, MULC: the number; PIECE: byte offset */
};

enum dp_value_loc {
	DP_VALUE_LOC_VALUE,
	DP_VALUE_LOC_ADDR,
	DP_VALUE_LOC_PIECES,
};

/* dp_value flags. */
enum dp_value_flag {
	DP_VALUE_BOOL = 1u << 0,	/* an integer recorded as 0 or 1 */
};
#define DP_VALUE_FLAGS_ALL DP_VALUE_BOOL

struct dp_value {
	uint8_t loc;		/* enum dp_value_loc */
	uint8_t flags;		/* enum dp_value_flag */
	uint32_t nops;		/* 1 .. DP_VALUE_MAX_OPS */
	struct dp_value_op ops[DP_VALUE_MAX_OPS];
};

struct dp_field_desc;

/*
 * Whether a recipe is well formed for a value of this type (the static
 * checks above).  0, or -EINVAL with the reason in err.
 */
int dp_value_check(const struct dp_value *v, const struct dp_field_desc *type, uint32_t maxlen,
		   struct dp_err *err);

/* Whether a (checked) recipe can fail (it reads memory or an xmm
 * register): then it has an error field. */
bool dp_value_can_fail(const struct dp_value *v, const struct dp_field_desc *type);

/* Whether a recipe reads a vector register. */
bool dp_value_uses_xmm(const struct dp_value *v);

/* ---- building recipes (the daemon's compilers) ------------------------ */

/* Appends an op: 0, or -E2BIG when the program is full. */
int dp_value_push(struct dp_value *v, uint8_t op, uint8_t arg, int64_t imm);

/* A short description of a recipe ("[rbp-0x14]", "rdi", "xmm0"...) for
 * messages and listings; snprintf's return convention. */
int dp_value_format(const struct dp_value *v, char *buf, size_t size);

#endif /* DP_SPEC_VALUE_H */
