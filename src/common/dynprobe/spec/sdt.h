/*
 * Statically defined probes (SDT): the argument specs their notes carry, and
 * PROVIDER:NAME patterns against an object's probes.  Part of spec/'s
 * contract beside spec.h and ctx.h.
 *
 * An argument spec is what <sys/sdt.h> lets the assembler write for each
 * argument of a site, space separated (x86-64, AT&T syntax):
 *
 *   arg     := [ ["-"] SIZE ["f"] "@" ] operand     SIZE: 1, 2, 4, 8 bytes
 *   operand := "$" INT                              -4@$5  8@$-1  8@$0x10
 *            | "%" REG                              -4@%edi  1@%sil  8f@%xmm0
 *            | [DISP] [["+"] SYM [("+"|"-") OFF]] "(" [%BASE] ["," %INDEX ["," SCALE]] ")"
 *                                                   8@-8(%rbp)  8@(%rax,%rdx,8)
 *                                                   -4@counter+40(%rip)  8@24+mp_(%rip)
 *
 * "-" makes the value signed, "f" a float (4: float, 8: double); an %xmm
 * operand is a float too.  REG is any general register by any of its width
 * views (rax, eax, ax, al, ah, r8, r8d, r8w, r8b, sil...): SIZE says how
 * many bytes the value has, not the name.  Old notes omit SIZE@: the size
 * is then the register's width (8 for memory and constants), unsigned.
 */
#ifndef DP_SPEC_SDT_H
#define DP_SPEC_SDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "elf/elf.h"
#include "spec/ctx.h"

#define DP_SDT_ARGS_MAX 12	/* <sys/sdt.h> goes up to STAP_PROBE12 */
#define DP_SDT_SYMBOL_MAX 128
#define DP_SDT_REG_NONE 0xff	/* no base or index register */
#define DP_SDT_REG_XMM0 32	/* xmm0..xmm15: DP_SDT_REG_XMM0 + n */

enum dp_sdt_arg_kind {
	DP_SDT_ARG_REG,		/* the value is (part of) a register */
	DP_SDT_ARG_IMM,		/* a constant */
	DP_SDT_ARG_MEM,		/* at base + index * scale + disp (+ symbol) */
};

struct dp_sdt_arg {
	enum dp_sdt_arg_kind kind;
	uint8_t size;		/* bytes: 1, 2, 4 or 8 */
	bool is_signed;
	bool is_float;
	bool sized;		/* SIZE@ was written (else inferred) */
	/* DP_SDT_ARG_REG: the register (0..15 in dp_regs order, or
	 * DP_SDT_REG_XMM0 + n), and the view its name reads: width bytes from
	 * bit shift (8 for ah, ch, dh, bh). */
	uint8_t reg, reg_width, reg_shift;
	int64_t imm;		/* DP_SDT_ARG_IMM */
	/* DP_SDT_ARG_MEM: base and index are 0..15, DP_CTX_REG_RIP (base
	 * only: the address is the next instruction's plus disp, symbol's
	 * address included) or DP_SDT_REG_NONE. */
	uint8_t base, index, scale;
	int64_t disp;		/* with a symbol: the offset from it */
	char symbol[DP_SDT_SYMBOL_MAX];	/* "" when none */
};

struct dp_sdt_args {
	struct dp_sdt_arg v[DP_SDT_ARGS_MAX];
	unsigned n;
};

/*
 * Parses a note's argument string ("" has no argument).  0, or -EINVAL with
 * the spec, the argument and what was expected in err ("argument spec
 * '-4@%edj': argument 1 '-4@%edj': unknown register 'edj' ...").
 */
int dp_spec_sdt_args_parse(const char *spec, struct dp_sdt_args *out, struct dp_err *err);

/*
 * One argument as users read it: its type and where it lives ("int32 edi",
 * "uint64 [rbp-0x8]", "uint64 [rax+rdx*8]", "int32 [rip: counter+0x28]",
 * "uint64 $5", "double xmm0").  Returns snprintf's count.
 */
int dp_spec_sdt_arg_format(const struct dp_sdt_arg *arg, char *buf, size_t size);

/*
 * The probes of probes[0..n) a pattern names: "PROVIDER:NAME" with
 * fnmatch(3) wildcards on either side, or "NAME" alone for any provider.
 * *match (malloc'd, free() it) receives pointers into probes, in their
 * order.  0; -ENOENT when none matches (err names the close
 * provider:name pairs); -EINVAL for an empty side; -ENOMEM.
 */
int dp_spec_sdt_match(const struct dp_sdt_probe *probes, size_t n, const char *pattern,
		      const struct dp_sdt_probe ***match, size_t *nmatch, struct dp_err *err);

#endif /* DP_SPEC_SDT_H */
