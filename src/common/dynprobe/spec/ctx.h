/*
 * Context specs: the payload fields a user adds to a dynamic event
 * (`lttng add-context -t`), what each means, its one parser, its canonical
 * spelling and the fields it lays out.  The CLI checks what users type with
 * it, the daemon parses with it (turning symbols into addresses), the
 * protocol carries struct dp_ctx as is, and the agent evaluates it at each
 * hit (src/lib/lttng-ust-dynprobe/context.h).
 *
 *   regs                  every general register, rip and rflags: 18 hex64
 *                         fields rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rip
 *                         rflags (gdb's order)
 *   reg:NAME              one register, gdb names: rax..r15, the 32-, 16- and
 *                         8-bit views (eax, r8d, ax, r8w, al, ah, r8l, sil),
 *                         rip (pc), rflags, eflags, fs_base, gs_base; one hex
 *                         field named NAME, as wide as the view
 *   TYPE:NAME:ADDR        an integer in memory: int8 int16 int32 int64, uint8
 *                         ... uint64, int (int32), uint, long (int64), ulong,
 *                         hex8 ... hex64, hex (hex64)
 *   string:NAME:ADDR[:MAX]  a NUL-terminated string in memory, at most MAX
 *                         bytes (default 256, at most 4096)
 *   backtrace[:DEPTH][:fp|:cfi|:libunwind]  the probed instruction's address, then the
 *                         return addresses of its callers (default depth 16,
 *                         at most 128; walker: see DP_BT_WALKER_DEFAULT)
 *   retval                rax as the signed 64-bit field "ret" (return sites)
 *   var:EXPR[:TYPE]       a variable by name at the probe site, typed from
 *                         the DWARF (spec/var.h: the grammar, the field name)
 *   args                  every parameter of the function around the site,
 *                         each a field named as the parameter
 *   (value)               a typed value computed by a recipe (spec/value.h):
 *                         made by the daemon (SDT arguments, DWARF
 *                         variables), never typed by users; NAME, and
 *                         `_NAME_error` when the recipe reads memory
 *
 * ADDR is where the value lies:
 *   NUMBER                an absolute address (octal 0NNN, decimal, 0xNNN)
 *   SYMBOL, SYMBOL+N      a symbol of the probed object (its run-time
 *                         address, found by the parser's caller) plus N
 *   REG, REG+N, REG-N     a 64-bit register (rax..r15, rip) plus an offset;
 *   [REG+N] ...           the same, bracketed as in assembly
 *   *ADDR                 through one pointer: the pointer stored at ADDR
 *   *[ADDR]+N             ... plus N (an offset after the pointer needs the
 *                         brackets: *rdi+8 reads the pointer at rdi+8)
 *
 * Memory errors.  A memory context (TYPE:NAME:ADDR, string) records two
 * fields: NAME, then `_NAME_error`, an unsigned 8-bit errno value:
 *   0        the read succeeded
 *   EFAULT   (14) the address is not readable (for *ADDR: the pointer, or the
 *            address it holds): NAME is 0, or "" for a string; never the
 *            bytes of a partial read
 *   E2BIG    (7) a string has no NUL within MAX bytes: NAME holds its first
 *            MAX bytes
 *   other    the errno of a read the kernel refused (EPERM or ENOSYS when a
 *            seccomp filter forbids process_vm_readv): NAME is 0 or ""
 * A separate field and not a sentinel value because every integer (and
 * every string) is a value a program may really hold; one byte per context
 * keeps the two apart, and a filter can test it (`_hits_error == 0`).
 *
 * The parser and the checks live in ctx.c (with the CLI and the daemon);
 * the layout in ctx-layout.c and the recipes' checks in value.c, the parts
 * the agent links.
 */
#ifndef DP_SPEC_CTX_H
#define DP_SPEC_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "spec/field.h"
#include "spec/value.h"

enum dp_ctx_kind {
	DP_CTX_REG,
	DP_CTX_REGS,
	DP_CTX_MEM,		/* integer in memory */
	DP_CTX_STRING,		/* string in memory */
	DP_CTX_BACKTRACE,
	DP_CTX_RETVAL,		/* rax at a return site, as the signed field "ret" */
	DP_CTX_VALUE,		/* a recipe's value (spec/value.h); travels only in
				   DEFINE_PROBE_EXT (proto/app.h) */
	DP_CTX_VAR,		/* var:EXPR (spec/var.h): the daemon's, compiled into
				   a DP_CTX_VALUE per probe site; never travels */
	DP_CTX_ARGS,		/* args: likewise, one DP_CTX_VALUE per parameter */
};
#define DP_CTX_KIND_LAST DP_CTX_VALUE

/* Registers by number: 0..15 in dp_regs order (enum dp_reg), then these. */
enum dp_ctx_reg {
	DP_CTX_REG_RIP = 16, DP_CTX_REG_RFLAGS = 17,
	DP_CTX_REG_FS_BASE = 18, DP_CTX_REG_GS_BASE = 19,
	DP_CTX_REG__COUNT,
};

#define DP_CTX_ABS 0xff			/* dp_ctx_addr.base of an absolute address */

struct dp_ctx_addr {
	uint8_t base;		/* a register (0..15, or DP_CTX_REG_RIP), DP_CTX_ABS */
	uint8_t deref;		/* 1: read a pointer there, add offset2, use that */
	int64_t offset;		/* the absolute address, or the offset from base */
	int64_t offset2;	/* deref: added to the pointer read */
};

enum dp_bt_walker {
	DP_BT_FP,		/* the rbp chain: cheap, needs frame pointers */
	DP_BT_CFI,		/* .eh_frame compiled into the agent's own tables */
	DP_BT_LIBUNWIND,	/* .eh_frame through libunwind: the reference */
};
#define DP_BT_WALKER_LAST DP_BT_LIBUNWIND

/* The walker of a `backtrace` that names none: the CFI tables, right on code
 * built without frame pointers, and measured within 2x of the frame-pointer
 * walk (the agent's unwind.c has the figures). */
#define DP_BT_WALKER_DEFAULT DP_BT_CFI

#define DP_CTX_STRING_DEFAULT 256
#define DP_CTX_STRING_MAX 4096
#define DP_CTX_BT_DEFAULT 16
#define DP_CTX_BT_MAX 128

/* The values of one hit's strings and backtraces may not exceed this (each
 * thread keeps them mapped). */
#define DP_CTX_VALUES_MAX (256 * 1024)

struct dp_ctx {
	uint8_t kind;			/* enum dp_ctx_kind */
	char name[DP_FIELD_NAME_MAX];	/* the field name */
	uint8_t reg;			/* DP_CTX_REG: register number */
	uint8_t width;			/* DP_CTX_REG: bytes of the view: 8, 4, 2 or 1 */
	uint8_t shift;			/* DP_CTX_REG: bit offset of the view (8: ah) */
	struct dp_field_desc type;	/* DP_CTX_MEM: size, signedness, hex; DP_CTX_VALUE:
					   the value's type (spec/value.h) */
	struct dp_ctx_addr addr;	/* DP_CTX_MEM, DP_CTX_STRING */
	uint32_t maxlen;		/* DP_CTX_STRING, a DP_CTX_VALUE string: bytes read
					   at most */
	uint16_t depth;			/* DP_CTX_BACKTRACE: addresses at most */
	uint8_t walker;			/* DP_CTX_BACKTRACE: enum dp_bt_walker */
	struct dp_value value;		/* DP_CTX_VALUE: the recipe */
};

/* ---- the grammar (ctx.c) ---------------------------------------------- */

/*
 * The run-time address of a symbol an ADDR names, for dp_ctx_parse: 0, or a
 * -errno with the words in err ("symbol 'x' not found in ...").
 */
typedef int (*dp_ctx_symbol_fn)(void *arg, const char *name, uint64_t *value,
				struct dp_err *err);

/*
 * Parses one context spec ("reg:rax", "hex32:flags:[rbp-0x14]", ...).  A
 * symbol in ADDR is looked up through `symbol` (with `arg`); without one,
 * ADDR is a number or register based.  0, or -EINVAL (or the lookup's
 * -errno) with a message in err, which does not repeat the spec.
 */
int dp_ctx_parse(const char *spec, dp_ctx_symbol_fn symbol, void *arg, struct dp_ctx *out,
		 struct dp_err *err);

/* The canonical spec of a context (what dp_ctx_parse reads back to the same
 * context); snprintf's return convention. */
int dp_ctx_format(const struct dp_ctx *ctx, char *buf, size_t size);

/* Whether a context type string (what follows `-t`) names a dynamic context;
 * anything else is a standard LTTng context type. */
bool dp_spec_context_is_dynamic(const char *type);

/*
 * Checks a dynamic context as users type it, before any object is open:
 * dp_ctx_parse with every symbol taken for a valid one.  -EINVAL with the
 * reason, after the spec in quotes ("'reg': expected reg:NAME ...").
 */
int dp_spec_context_check(const char *type, struct dp_err *err);

/* ---- the layout (ctx-layout.c) ---------------------------------------- */

/* The `regs` context's fields: their number, and the register (enum
 * dp_ctx_reg numbering) of each, in field order. */
#define DP_CTX_REGS_FIELDS 18
extern const uint8_t dp_ctx_regs_order[DP_CTX_REGS_FIELDS];

/* How many fields the context adds to its event. */
size_t dp_ctx_nfields(const struct dp_ctx *ctx);

/* Bytes one context's values take outside the field array (a string's
 * bytes, a backtrace's addresses), a multiple of 16; and a list's total. */
size_t dp_ctx_values_size(const struct dp_ctx *ctx);
size_t dp_ctx_list_values_size(const struct dp_ctx *ctx, size_t nctx);

/*
 * The fields of an event whose payload is these contexts, in order: at most
 * `max` into fields, their number in *nfields.  0, or -EINVAL (a name given
 * twice, a context dp_ctx_parse could not have made) or -E2BIG (more than
 * `max` fields, or values over DP_CTX_VALUES_MAX) with a message in err.
 */
int dp_ctx_layout(const struct dp_ctx *ctx, size_t nctx, struct dp_field_desc *fields,
		  size_t max, size_t *nfields, struct dp_err *err);

#endif /* DP_SPEC_CTX_H */
