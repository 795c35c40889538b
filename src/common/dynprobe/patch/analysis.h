/*
 * Function analysis of an ELF object: what the patch planner must know
 * before it may displace a single byte.
 *
 * For every function (symbols, or .eh_frame FDEs when stripped): where each
 * instruction starts, which addresses anything may branch to (direct branches
 * from anywhere in the object, jump-table entries, exception landing pads,
 * function starts), whether the function has indirect jumps that could not be
 * resolved, and where it returns (ret, ret imm16, rep ret, and jumps that
 * leave the function: tail calls).  Computed once per object, on first use.
 *
 * Addresses are the object's virtual addresses (as `nm` prints them).
 * Everything returned by pointer is owned by the struct dp_object and stays
 * valid until dp_object_close().  A struct dp_object is not thread-safe.
 *
 * Limits the planner must know:
 *  - A function's instructions are found by decoding it linearly: compilers
 *    put no data inside functions on x86-64, and their padding decodes.  An
 *    instruction that does not decode stops the function's decoding there
 *    (DP_FN_UNDECODED): nothing after it is known to be a boundary.
 *  - A jump table whose size has no bounds check before it is read while its
 *    entries land on instructions and until data another instruction names
 *    begins: its targets are a heuristic superset.  An indirect jmp that is
 *    not understood (DP_FN_INDIRECT) may go anywhere in its function.
 *  - Every unresolved indirect jmp is listed as a DP_RET_TAIL_INDIRECT return
 *    site, whether it is a tail call through a pointer or a computed goto
 *    that stays in the function.  Its function is DP_FN_INDIRECT unless
 *    each such jmp is a tail call through a pointer, and no address inside
 *    the function is held as a value anywhere in the object (tailcall.c has
 *    the argument).  Such values are found in relocations and RIP-relative
 *    operands, and in a position-dependent executable also in immediates,
 *    absolute displacements and the 8-byte words at 4-byte aligned offsets
 *    of its data and of the code no decoded function holds (the unwinder's
 *    tables aside): a code address it stores in 4 bytes, or at another
 *    offset, is not seen (no compiler stores a label so).
 *  - A .cold part (gcc's hot/cold splitting) is a function of its own; jumps
 *    from a function into its .cold part are listed as tail jumps.
 */
#ifndef DP_PATCH_ANALYSIS_H
#define DP_PATCH_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dp_elf;
struct dp_object;

/* Function flags. */
enum dp_fn_flag {
	DP_FN_INDIRECT = 1u << 0,	/* has an indirect jmp that may go anywhere in it:
					   no resolved jump table, no tail call */
	DP_FN_UNDECODED = 1u << 1,	/* some bytes did not decode: data in code or an unknown insn */
	DP_FN_LANDING_PADS = 1u << 2,	/* has exception landing pads */
	DP_FN_JUMP_TABLE = 1u << 3,	/* has at least one resolved jump table */
	DP_FN_NAMED = 1u << 4,		/* name from a symbol (not only an FDE) */
};

/* How a function gives control back. */
enum dp_ret_kind {
	DP_RET_RET,		/* c3 */
	DP_RET_RET_IMM,		/* c2 iw */
	DP_RET_REP_RET,		/* f3 c3 */
	DP_RET_TAIL_JMP,	/* jmp rel to outside the function */
	DP_RET_TAIL_JCC,	/* jcc rel to outside the function */
	DP_RET_TAIL_INDIRECT,	/* jmp r/m that is not a resolved jump table */
	DP_RET_TAIL_TABLE,	/* jmp r/m through a resolved table some of whose
				   destinations lie outside the function: a .cold
				   part, or a table of functions (a tail call) */
};

struct dp_ret_site {
	uint64_t addr;
	uint8_t kind;		/* enum dp_ret_kind */
	uint8_t len;		/* instruction length */
};

/* Why an address is a branch target (bits: an address can be several). */
enum dp_target_kind {
	DP_TGT_DIRECT = 1u << 0,	/* jmp/jcc/call/loop/xbegin rel from the object */
	DP_TGT_JUMP_TABLE = 1u << 1,	/* an entry of a resolved jump table, or a
					   constant an indirect jmp may take */
	DP_TGT_LANDING_PAD = 1u << 2,	/* exception landing pad (LSDA) */
	DP_TGT_FUNCTION = 1u << 3,	/* a function start (symbol or FDE) */
	DP_TGT_RETURN = 1u << 4,	/* the instruction after a call: a return lands there */
	DP_TGT_ADDRESS = 1u << 5,	/* inside a function, an address the object holds
					   as a value (a RIP-relative operand or a dynamic
					   relocation names it): a label whose address is
					   taken, as gcc's &&label does */
	DP_TGT_VALUE = 1u << 6,		/* a function start or an address inside one
					   that the object holds as a value (the
					   sources of DP_TGT_ADDRESS); every function
					   start when those are not all known */
};

struct dp_function {
	const char *name;		/* NULL for an unnamed FDE range */
	uint64_t start, size;
	unsigned flags;			/* enum dp_fn_flag */
	uint32_t ninsns;
	const uint32_t *insn_off;	/* instruction starts, offsets from start, ascending */
	uint32_t nrets;
	const struct dp_ret_site *rets;	/* ascending */
};

/*
 * Opens path; the analysis runs on the first query.  NULL and errno on
 * failure: those of dp_elf_open, and DP_ELF_ECORRUPT when the file is cut
 * short of its header tables or loaded segments.
 */
struct dp_object *dp_object_open(const char *path);
void dp_object_close(struct dp_object *obj);
struct dp_elf *dp_object_elf(struct dp_object *obj);

/*
 * All functions, ascending by start (then size).  0 or -errno: -ENOMEM, or
 * dp_elf_funcs' errors.
 */
int dp_object_functions(struct dp_object *obj, const struct dp_function **fns, size_t *n);

/*
 * Whether no code of the object can read or write zmm16-31 or the mask
 * registers k0-7: no EVEX instruction, no VEX mask instruction, no xsave or
 * xrstor of any kind, in any executable byte (functions as analyzed, the
 * bytes between them decoded linearly; anything that does not decode
 * counts against).  1 if free, 0 if not, or -errno (the analysis failed).
 * Computed once per object (evex.c).
 *
 * Why it matters: these registers are caller-saved in the x86-64 ABI, so
 * a value in them is live only within code that names them, or across a
 * call the compiler could see into (gcc's -fipa-ra), which only a caller in
 * the same object can.  At a site in a free object nothing the program will
 * run can read them before some code of another object writes them, and a
 * probe's trampoline may leave them to the handler (tramp.h).
 */
int dp_object_evex_free(struct dp_object *obj);

/* The function containing vaddr (the innermost when ranges nest), or NULL
 * (errno ENOENT, or the analysis' error). */
const struct dp_function *dp_object_function_at(struct dp_object *obj, uint64_t vaddr);

/*
 * A function by symbol name (.symtab, then .dynsym; of several versions,
 * the default one), or NULL (errno ENOENT, or the analysis' error).  "main"
 * also works in a stripped executable: it is found from the entry point's
 * call to __libc_start_main, and that function carries the name "main"
 * without DP_FN_NAMED.
 */
const struct dp_function *dp_object_function_by_name(struct dp_object *obj, const char *name);

/*
 * dp_target_kind bits of vaddr: 0 when nothing in the object branches there.
 * Also 0, with errno set, when the analysis failed: no function can be had
 * from such an object either.
 */
unsigned dp_object_target_kind(struct dp_object *obj, uint64_t vaddr);

/* Index of the instruction starting at vaddr in fn, or -1 if vaddr is not an
 * instruction boundary of fn. */
long dp_function_insn_index(const struct dp_function *fn, uint64_t vaddr);

#endif /* DP_PATCH_ANALYSIS_H */
