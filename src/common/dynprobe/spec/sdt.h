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
 * The field an argument records in an event whose sites may disagree on
 * its type (one event, one layout): an integer as wide as the widest site's
 * operand, signed when any site's is; a double when every site's is a float
 * (float or double).  -EINVAL with the reason (a float at one site and an
 * integer at another) in err.  args[i] is site i's argument.
 */
int dp_spec_sdt_arg_type(const struct dp_sdt_arg *const *args, size_t n,
			 struct dp_field_desc *type, struct dp_err *err);

/*
 * One site's argument as a value recipe (spec/value.h), the DP_CTX_VALUE
 * context `name` that records it as `type` (dp_spec_sdt_arg_type's): a
 * narrower operand is sign- or zero-extended as its own spec says, a
 * SYM+OFF(%rip) operand's address is the symbol's run-time address (found
 * through `symbol`, which adds the load bias) plus OFF.  0, or -EINVAL /
 * the lookup's -errno with the reason in err (a %rip operand without a
 * symbol: the site is a nop, no instruction it is relative to).
 */
int dp_spec_sdt_arg_ctx(const struct dp_sdt_arg *a, const struct dp_field_desc *type,
			const char *name, dp_ctx_symbol_fn symbol, void *arg, struct dp_ctx *out,
			struct dp_err *err);

/*
 * The probes of probes[0..n) a pattern names: "PROVIDER:NAME" with
 * fnmatch(3) wildcards on either side, or "NAME" alone for any provider.
 * *match (malloc'd, free() it) receives pointers into probes, in their
 * order.  0; -ENOENT when none matches (err names the close
 * provider:name pairs); -EINVAL for an empty side; -ENOMEM.
 */
int dp_spec_sdt_match(const struct dp_sdt_probe *probes, size_t n, const char *pattern,
		      const struct dp_sdt_probe ***match, size_t *nmatch, struct dp_err *err);

/*
 * What an event enabling one SDT probe records: every site of PROVIDER:NAME
 * in the object, each site's arguments parsed, and the field type of each
 * argument across sites (dp_spec_sdt_arg_type).  `probe` is PROVIDER:NAME,
 * or a pattern naming exactly one provider:name.  The same check for the
 * CLI (before enabling) and the daemon.  0, or -errno with one line in err:
 * the object has no notes (-ENOENT), no probe matches (close names), the
 * pattern names several (listed), a site's spec does not parse (the spec
 * shown), the sites disagree on the arguments' number or kind.
 */
struct dp_sdt_event {
	const char *provider, *name;	/* into the object's notes */
	size_t nsites;
	struct dp_sdt_probe *sites;	/* each site's note */
	struct dp_sdt_args *args;	/* each site's arguments */
	unsigned nargs;
	struct dp_field_desc types[DP_SDT_ARGS_MAX];
};
int dp_spec_sdt_event(struct dp_elf *elf, const char *probe, struct dp_sdt_event *out,
		      struct dp_err *err);
void dp_spec_sdt_event_release(struct dp_sdt_event *ev);

/* The names of the probes a pattern matches, distinct, as PROVIDER:NAME,
 * in note order (malloc'd array of *n strings, each malloc'd; free them
 * with dp_spec_sdt_names_free).  As dp_spec_sdt_match otherwise. */
int dp_spec_sdt_names(struct dp_elf *elf, const char *pattern, char ***names, size_t *n,
		      struct dp_err *err);
void dp_spec_sdt_names_free(char **names, size_t n);

#endif /* DP_SPEC_SDT_H */
