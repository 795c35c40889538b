/*
 * The opcode tables, as generated from opcodes-*.txt by gen-opcodes.awk.
 * Internal to the decoder: the spec format is described in opcodes-legacy.txt.
 *
 * Each (table, opcode byte) names a run of forms; the decoder takes the first
 * form whose conditions (mandatory prefix, W, L, modrm mod/reg/rm) hold.
 */
#ifndef DP_X86_OPCODES_H
#define DP_X86_OPCODES_H

#include <stdint.h>

/* Opcode tables: encoding and map together. */
enum dp_optable {
	DP_TAB_1BYTE, DP_TAB_0F, DP_TAB_0F38, DP_TAB_0F3A, DP_TAB_3DNOW,
	DP_TAB_V0F, DP_TAB_V0F38, DP_TAB_V0F3A,
	DP_TAB_E0F, DP_TAB_E0F38, DP_TAB_E0F3A, DP_TAB_EMAP5, DP_TAB_EMAP6,
	DP_TAB_X8, DP_TAB_X9, DP_TAB_XA,
	DP_TAB__COUNT,
};

/* Mandatory prefix condition. */
enum { DP_PFXC_ANY, DP_PFXC_NONE, DP_PFXC_66, DP_PFXC_F3, DP_PFXC_F2 };
/* ModRM.mod condition. */
enum { DP_MODC_ANY, DP_MODC_MEM, DP_MODC_REG };
#define DP_ANY 0xff

/* Immediate kinds. */
enum dp_imm {
	DP_IMM_NONE,
	DP_IMM_B,	/* 1 byte */
	DP_IMM_W,	/* 2 bytes */
	DP_IMM_D,	/* 4 bytes */
	DP_IMM_Z,	/* 2 with operand size 16, else 4 */
	DP_IMM_V,	/* 2, 4 or 8 by operand size (mov r, imm) */
	DP_IMM_JB,	/* rel8 */
	DP_IMM_JZ,	/* rel32; rel16 with 66 unless the form is f64 */
	DP_IMM_MOFFS,	/* 8 bytes, 4 with 67 */
};

/* Form flags. */
enum dp_opflag {
	DP_OF_MODRM = 1u << 0,	/* has a ModRM byte */
	DP_OF_LOCK = 1u << 1,	/* lock prefix legal with a memory operand */
	DP_OF_D64 = 1u << 2,	/* operand size defaults to 64 bits */
	DP_OF_F64 = 1u << 3,	/* operand size is 64 bits; 66 is ignored (Intel) */
	DP_OF_VVVV = 1u << 4,	/* VEX/EVEX/XOP vvvv names an operand */
	DP_OF_VSIB = 1u << 5,	/* memory operand with a vector index */
	DP_OF_PRIV = 1u << 6,	/* faults at CPL 3 */
	DP_OF_STACK = 1u << 7,	/* implicit stack access */
	DP_OF_BYTEREG = 1u << 8, /* 8-bit register operands: ah..bh without REX */
	DP_OF_EVEX_K = 1u << 9,	/* EVEX: merge-masking allowed */
	DP_OF_EVEX_Z = 1u << 10, /* EVEX: zeroing allowed */
	DP_OF_EVEX_B = 1u << 11, /* EVEX: broadcast (memory) allowed */
	DP_OF_EVEX_ER = 1u << 12, /* EVEX: rounding control / SAE (register) allowed */
	DP_OF_EVEX_KREQ = 1u << 13, /* EVEX: a mask other than k0 is required */
	DP_OF_AMBIG = 1u << 14,	/* Intel and AMD decode it differently */
	DP_OF_REP = 1u << 15,	/* F3/F2 act as rep prefixes (string ops) */
	DP_OF_SREG = 1u << 16,	/* ModRM.reg names a segment register */
	DP_OF_SREG_DST = 1u << 17, /* ... which is written (cs is not allowed) */
	DP_OF_CREG = 1u << 18,	/* ModRM.reg names a control register */
	DP_OF_DREG = 1u << 19,	/* ModRM.reg names a debug register */
	DP_OF_MODREG = 1u << 20, /* ModRM.mod is ignored: always a register form */
	DP_OF_BND = 1u << 21,	/* ModRM.reg names a bound register (0-3) */
	DP_OF_BNDRM = 1u << 22,	/* ... and so does a register ModRM.rm */
	DP_OF_NORIP = 1u << 23,	/* no RIP-relative memory operand */
	DP_OF_EVEX_REGK = 1u << 24, /* EVEX: ModRM.reg names a mask register */
	DP_OF_EVEX_SAE512 = 1u << 25, /* EVEX: 512 bits only, L'L ignored with {sae} */
	DP_OF_EVEX_DISTINCT = 1u << 26, /* EVEX: ModRM.reg differs from the other vector operands */
	DP_OF_KVVVV = 1u << 27,	/* vvvv names a mask register: k0-k7 only */
	DP_OF_TMM = 1u << 28,	/* register operands are tile registers: tmm0-tmm7 only */
	DP_OF_ALLDISTINCT = 1u << 29, /* reg, vvvv and rm (or VSIB index) pairwise distinct */
};

/*
 * An explicit operand: where it comes from and what it is.
 * Only general registers matter to the register masks.
 */
enum { DP_OPS_NONE, DP_OPS_REG, DP_OPS_RM, DP_OPS_VVVV, DP_OPS_OPC };
#define DP_OP_SRC(op) ((op) & 7)
#define DP_OP_GPR 0x08		/* a general register (or memory, for RM) */
#define DP_OP_BYTE 0x10		/* 8-bit register */
#define DP_OP_R 0x20		/* read */
#define DP_OP_W 0x40		/* written */

struct dp_opform {
	const char *mnemonic;
	uint32_t flags;		/* enum dp_opflag */
	uint16_t rd, wr;	/* implicit general registers read / written */
	uint8_t pfx;		/* DP_PFXC_* */
	uint8_t mod;		/* DP_MODC_* */
	uint8_t reg, rm;	/* raw 3-bit fields, DP_ANY if free */
	uint8_t w;		/* 0, 1 or DP_ANY */
	uint8_t lmask;		/* bit L set if vector length L is allowed; 0: any */
	uint8_t imm[2];		/* enum dp_imm */
	uint8_t flow;		/* enum dp_insn_flow */
	uint8_t ops[4];
};

struct dp_opindex {
	uint16_t first;
	uint16_t count;
};

extern const struct dp_opform dp_opforms[];
extern const struct dp_opindex dp_opindex[DP_TAB__COUNT][256];

struct dp_insn;
/* EVEX payload rules for a chosen form: 0 or -EINVAL (decode-evex.c). */
int dp_evex_check(const struct dp_insn *insn, const struct dp_opform *f);

#endif /* DP_X86_OPCODES_H */
