/*
 * x86-64 instruction decoder: the contract.
 *
 * Decodes one 64-bit-mode instruction from a bounded buffer and reports what
 * the relocator, the patch planner and the site lister need: its exact length,
 * where each field sits, how it changes control flow, where it points, and
 * which general registers it touches.  It is not a disassembler: operands are
 * described only as far as relocation needs them.
 *
 * The opcode knowledge lives in opcodes-*.txt beside this file, turned into
 * C tables at build time by gen-opcodes.awk.
 */
#ifndef DP_X86_INSN_H
#define DP_X86_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DP_INSN_MAX_LEN 15

/* How the opcode was encoded. */
enum dp_insn_enc {
	DP_ENC_LEGACY,		/* legacy/REX prefixes, maps 0F, 0F38, 0F3A */
	DP_ENC_3DNOW,		/* 0F 0F modrm ... ib: the opcode is the last byte */
	DP_ENC_VEX,		/* C5 (2-byte) or C4 (3-byte) */
	DP_ENC_EVEX,		/* 62 */
	DP_ENC_XOP,		/* 8F with modrm.reg != 0 */
};

/* Opcode maps, as numbered by the VEX/EVEX/XOP map-select fields. */
enum dp_insn_map {
	DP_MAP_1BYTE = 0,
	DP_MAP_0F = 1,
	DP_MAP_0F38 = 2,
	DP_MAP_0F3A = 3,
	DP_MAP_EVEX5 = 5,	/* AVX512-FP16 */
	DP_MAP_EVEX6 = 6,	/* AVX512-FP16 */
	DP_MAP_XOP8 = 8,
	DP_MAP_XOP9 = 9,
	DP_MAP_XOPA = 10,
};

/* What the instruction does to the flow of control. */
enum dp_insn_flow {
	DP_FLOW_NONE,		/* falls through to the next instruction */
	DP_FLOW_JMP,		/* jmp rel8/rel32 */
	DP_FLOW_JCC,		/* jcc rel8/rel32 */
	DP_FLOW_CALL,		/* call rel32 */
	DP_FLOW_RET,		/* near ret, ret imm16 */
	DP_FLOW_LOOP,		/* loop, loope, loopne, jrcxz/jecxz: rel8 only */
	DP_FLOW_XBEGIN,		/* xbegin rel32: the abort path goes to the target */
	DP_FLOW_JMP_IND,	/* jmp r/m */
	DP_FLOW_CALL_IND,	/* call r/m */
	DP_FLOW_FAR,		/* far jmp/call/ret, iret */
	DP_FLOW_SYSCALL,	/* syscall, sysenter, sysexit, sysret */
	DP_FLOW_INT,		/* int3, int n, int1 */
	DP_FLOW_UD,		/* ud0, ud1, ud2 */
	DP_FLOW_TRAP,		/* other instructions that trap or stop in user mode */
	DP_FLOW__COUNT,
};

/* Legacy prefixes seen (bit set), whatever their order. */
enum dp_insn_prefix {
	DP_PFX_LOCK = 1u << 0,	/* F0 */
	DP_PFX_REPNE = 1u << 1,	/* F2 */
	DP_PFX_REP = 1u << 2,	/* F3 */
	DP_PFX_OPSIZE = 1u << 3,	/* 66 */
	DP_PFX_ADSIZE = 1u << 4,	/* 67 */
	DP_PFX_SEG = 1u << 5,	/* 26 2E 36 3E 64 65: see dp_insn.seg */
};

/* Attributes of the decoded instruction. */
enum dp_insn_attr {
	DP_ATTR_RIPREL = 1u << 0,	/* memory operand is [rip + disp32] ([eip + disp32]
					   with 67): disp_off locates the disp32 */
	DP_ATTR_REL = 1u << 1,		/* has a relative target: see rel */
	DP_ATTR_VENDOR_AMBIGUOUS = 1u << 2, /* Intel and AMD disagree on it: do not move */
	DP_ATTR_VSIB = 1u << 3,		/* SIB index is a vector register */
	DP_ATTR_PRIVILEGED = 1u << 4,	/* faults at CPL 3 */
	DP_ATTR_MEM = 1u << 5,		/* has a modrm memory operand (or moffs) */
	DP_ATTR_MOFFS = 1u << 6,	/* A0-A3: 4- or 8-byte absolute address */
	DP_ATTR_LOCK_OK = 1u << 7,	/* a lock prefix is legal on it */
	DP_ATTR_STACK = 1u << 8,	/* reads or writes the stack implicitly */
};

/* General registers, in hardware numbering; bit i of a mask is register i. */
enum dp_reg {
	DP_REG_RAX, DP_REG_RCX, DP_REG_RDX, DP_REG_RBX,
	DP_REG_RSP, DP_REG_RBP, DP_REG_RSI, DP_REG_RDI,
	DP_REG_R8, DP_REG_R9, DP_REG_R10, DP_REG_R11,
	DP_REG_R12, DP_REG_R13, DP_REG_R14, DP_REG_R15,
	DP_REG_NONE = 0xff,
};

struct dp_insn {
	uint8_t len;		/* total length, 1..15 */
	uint8_t enc;		/* enum dp_insn_enc */
	uint8_t map;		/* enum dp_insn_map */
	uint8_t opcode;		/* the opcode byte within its map */
	uint8_t opcode_off;	/* offset of the opcode byte, after any escape bytes
				   (3DNow: of its 0F 0F escape) */

	uint8_t nprefixes;	/* legacy prefix bytes, REX excluded */
	uint8_t prefixes;	/* enum dp_insn_prefix */
	uint8_t seg;		/* last segment prefix byte, 0 if none (in 64-bit
				   mode only fs and gs change the address) */
	uint8_t rex;		/* effective REX byte (right before opcode), 0 if none */
	uint8_t mandatory;	/* 0x66, 0xF3 or 0xF2 when it selected the opcode form
				   (SSE forms, VEX/EVEX/XOP pp); 0 when the prefix
				   was only an operand size or rep prefix */

	/* VEX/EVEX/XOP payload, zero for legacy encodings. */
	uint8_t vex_size;	/* 2, 3 (VEX/XOP) or 4 (EVEX) bytes including C4/C5/62/8F */
	uint8_t w;		/* REX.W or VEX/EVEX/XOP .W */
	uint8_t l;		/* vector length: 0 = 128, 1 = 256, 2 = 512 */
	uint8_t vvvv;		/* extra register, 0..31 (EVEX adds V'), not inverted */
	uint8_t aaa;		/* EVEX opmask register */
	uint8_t evex_z;		/* EVEX zeroing */
	uint8_t evex_b;		/* EVEX broadcast / rounding / SAE */

	/* ModRM and SIB, fields already extended by REX/VEX (0..15) and EVEX (0..31). */
	bool has_modrm;
	bool has_sib;
	uint8_t modrm_off;
	uint8_t mod, reg, rm;	/* reg and rm include REX.R / REX.B */
	uint8_t scale;		/* SIB scale field, raw: the factor is 1 << scale */
	uint8_t index, base;	/* index includes REX.X (and EVEX.V' for VSIB);
				   DP_REG_NONE if absent; without SIB, base is
				   the r/m register, none for [rip+disp32] */

	uint8_t disp_off, disp_size;	/* 0, 1, 2?, 4 or 8 (moffs64) bytes */
	uint8_t imm_off, imm_size;	/* first immediate (or rel) */
	uint8_t imm2_off, imm2_size;	/* second immediate (enter, extrq, insertq) */
	int64_t disp;		/* sign-extended displacement or moffs, as
				   encoded: EVEX disp8 is not scaled by N */
	int64_t imm;		/* first immediate, sign-extended (3DNow: the
				   trailing opcode byte; is4: the register byte) */

	uint8_t opsize;		/* effective operand size in bytes: 2, 4 or 8 (byte
				   operations say 4; vector ones follow W) */
	uint8_t adsize;		/* effective address size in bytes: 4 or 8 */
	uint8_t flow;		/* enum dp_insn_flow */
	uint16_t attr;		/* enum dp_insn_attr */
	int32_t rel;		/* relative target displacement, when DP_ATTR_REL */

	uint16_t regs_read;	/* general registers read (a safe superset) */
	uint16_t regs_written;	/* general registers written (a safe superset) */

	const char *mnemonic;	/* from the opcode spec, lower case */
};

/*
 * Decodes the instruction at the start of bytes[0..len).
 * Returns 0 and fills *insn; -ENODATA when the len bytes end before the
 * instruction could be decided (every proper prefix of a valid instruction
 * gives -ENODATA); or -EINVAL when the bytes are not a valid 64-bit-mode
 * instruction, including one that would pass the 15-byte limit (with 15 or
 * more bytes given, the answer is never -ENODATA).  Never reads bytes[len] or
 * beyond.
 */
int dp_insn_decode(const uint8_t *bytes, size_t len, struct dp_insn *insn);

/* The absolute target of a relative branch at address `addr`. */
static inline uint64_t dp_insn_target(const struct dp_insn *insn, uint64_t addr)
{
	return addr + insn->len + (int64_t)insn->rel;
}

/* Registers the instruction touches in any way. */
static inline uint16_t dp_insn_regs_used(const struct dp_insn *insn)
{
	return insn->regs_read | insn->regs_written;
}

const char *dp_insn_flow_str(enum dp_insn_flow flow);
const char *dp_reg_str(enum dp_reg reg);

#endif /* DP_X86_INSN_H */
