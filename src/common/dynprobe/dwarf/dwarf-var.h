/*
 * Variables, parameters and return values by name at a probe site, from the
 * DWARF of the probed object (libdw), compiled into value recipes
 * (spec/value.h) that the agent runs at each hit without libdw.
 *
 * Names resolve innermost scope first: the variables and parameters of
 * each scope containing the site's PC (lexical blocks, inlined copies,
 * then the function), then the statics and globals of the site's CU, then
 * the globals of every other CU.  A name declared in an inner scope hides
 * an outer one even where it has no location (it is then refused as
 * optimized out, never read from the outer one).
 *
 * Locations (the entry of a location list for the PC): DW_OP_reg*, regx,
 * breg*, bregx, fbreg (with the function's DW_AT_frame_base: a register
 * based expression, or DW_OP_call_frame_cfa evaluated from the CFI of the
 * object at the PC: .eh_frame, else .debug_frame), call_frame_cfa, addr
 * (plus the process's load bias), lit*, const*, plus_uconst, plus, deref,
 * deref_size, stack_value, implicit_value (up to 8 bytes), piece, addrx
 * and constx (DWARF 5's .debug_addr), and (after a constant) mul and an
 * and with a low-bits mask, convert to an integer type,
 * form_tls_address (an executable's thread-local variables: fs_base minus
 * the offset of its TLS block, which the loader puts first; a shared
 * library's block is placed at run time and refused), and
 * DW_AT_const_value.  Anything else (entry_value, implicit_pointer,
 * other arithmetic) is refused naming the operation, and only for what
 * reads it (a piece that does not compile fails the members in it, not
 * the other members); a variable without a
 * location at the PC is refused as optimized out, naming the PC ranges
 * where it has one.
 *
 * Types (through typedefs and qualifiers): integers of 1, 2, 4 and 8 bytes
 * signed or not, bool (0 or 1), enums (their value, as an integer of their
 * size: the agent's event classes have no enumeration fields), pointers
 * (hex), float and double, `char *` and `char[N]` as strings (at most N,
 * else DP_CTX_STRING_DEFAULT bytes), bit-fields (DWARF 5's data bit
 * offset or DWARF 4's bit offset: the bytes holding one read, shifted and
 * extended by the recipe's BITS).  A struct, union or other array asks for
 * a member or an element; values of other sizes are refused.
 *
 * Functions return 0 or -errno with one line for users in err: -ENOENT (no
 * such name: err lists the names in scope; no DWARF for the PC), -ENODATA
 * (optimized out at the PC), -EOPNOTSUPP (a location or type this code does
 * not compile), -EINVAL (a path that does not fit the types: err lists the
 * members of a struct), -E2BIG (a recipe over DP_VALUE_MAX_OPS).
 */
#ifndef DP_DWARF_VAR_H
#define DP_DWARF_VAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "spec/ctx.h"
#include "spec/var.h"

typedef struct Dwarf Dwarf;
typedef struct Elf Elf;

/* A probe site. */
struct dp_dwarf_at {
	Dwarf *dbg;		/* the object's DWARF */
	Elf *elf;		/* the object itself (its .eh_frame), or NULL */
	uint64_t pc;		/* the site, an object address (as nm prints them) */
	uint64_t bias;		/* the process's load bias (DW_OP_addr), 0 to check */
};

/* The most parameters `args` records. */
#define DP_DWARF_ARGS_MAX 16

/* e at the site as a DP_CTX_VALUE context named e->field. */
int dp_dwarf_var_compile(const struct dp_dwarf_at *at, const struct dp_var_expr *e,
			 struct dp_ctx *out, struct dp_err *err);

/*
 * Every parameter of the function (or inlined copy) around the site, in
 * order, each a context named as the parameter: at most max into out, their
 * number in *n.  A parameter without a location at the PC, or of a type
 * that does not compile, fails the whole (err names it).
 */
int dp_dwarf_args_compile(const struct dp_dwarf_at *at, struct dp_ctx *out, size_t max,
			  size_t *n, struct dp_err *err);

/*
 * The return value of the function whose entry (or inlined copy's entry) is
 * the site, typed by its DWARF return type, to record at its return sites:
 * rax for integers, enums, bool and pointers, xmm0 for float and double;
 * the context named "ret".  -ENOENT when there is
 * no typed answer (no DWARF for the PC, a void function, a struct or another
 * type returned otherwise): callers keep the untyped retval.
 */
int dp_dwarf_ret_compile(const struct dp_dwarf_at *at, struct dp_ctx *out, struct dp_err *err);

/* One variable visible at a site, for listings. */
struct dp_dwarf_var_info {
	char name[DP_VAR_NAME_MAX];
	char type[128];		/* as C spells it: "const char *", "struct req *" */
	char scope[128];	/* "parameter", "local", "local (block)", "parameter of
				 * inlined f", "CU static", "global" */
	char where[256];	/* the recipe ("rdi", "[rsp+0x8]"), or why not */
	bool available;		/* has a location at the PC that compiles */
};

/*
 * Every variable and parameter of the scopes around the site, innermost
 * first, then the CU's statics and globals.  *v malloc'd (free() it).
 * -ENOENT when no DWARF describes the PC.
 */
int dp_dwarf_vars_list(const struct dp_dwarf_at *at, struct dp_dwarf_var_info **v, size_t *n,
		       struct dp_err *err);

#endif /* DP_DWARF_VAR_H */
