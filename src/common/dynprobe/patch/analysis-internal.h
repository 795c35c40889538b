/*
 * Function analysis, private part: the object's state and what its pieces
 * hand each other (analysis.c: object, sections, functions, lookups; sweep.c:
 * decoding and the target set; jumptable.c and jtbound.c: indirect jmps;
 * coderefs.c: code addresses held as values; tailcall.c: indirect jmps that
 * are tail calls; lsda.c: landing pads; plt.c: imported and noreturn calls; entry.c:
 * main of a stripped program).  Nothing here is part of the contract;
 * analysis.h is.
 */
#ifndef DP_PATCH_ANALYSIS_INTERNAL_H
#define DP_PATCH_ANALYSIS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array.h"
#include "patch/analysis.h"
#include "x86/insn.h"

/*
 * Branch targets are collected as keys (address << 8 | kind bits), sorted
 * and merged once.  Addresses at or above 2^56 are no user-space code and
 * are dropped, which keeps the packing exact.
 */
#define AN_TGT_SHIFT 8
#define AN_ADDR_LIMIT (UINT64_C(1) << (64 - AN_TGT_SHIFT))

struct an_keys {
	uint64_t *v;
	size_t n, cap;
};

/* A direct jmp, jcc or loop from one function into another. */
struct an_jump {
	uint64_t target, src;
};

/* A GOT slot a dynamic relocation binds to an imported function. */
struct an_slot {
	uint64_t addr;
	const char *name;
	bool noreturn;
};

struct dp_object {
	struct dp_elf *elf;
	int state;			/* 0 not analyzed, 1 ready, -errno failed */

	struct dp_function *fns;	/* ascending by start, then size */
	size_t nfns;
	uint64_t *fn_maxend;		/* max end of fns[0..i], for lookups */
	uint8_t *fn_noreturn;		/* per function: never returns */
	uint64_t main_addr;		/* main, as the entry point names it */
	bool has_main;

	struct an_slot *slots;		/* GOT slots, by address */
	size_t nslots;

	uint32_t *insn_pool;		/* every function's instruction offsets */
	struct dp_ret_site *ret_pool;	/* every function's return sites */

	struct an_keys keys;		/* targets while collecting */
	struct an_keys refs;		/* data addresses instructions name, while
					   resolving: where a table may end */
	struct an_keys code_refs;	/* code addresses held as values (RIP-relative
					   operands, dynamic relocations), until the
					   tail calls are classified */
	bool code_refs_known;		/* every relocation read (and, in a position-
					   dependent executable, every word of its
					   data): code_refs is complete */
	struct an_range *tables;	/* resolved jump tables' entries, until the
					   code addresses are collected */
	size_t ntables, tables_cap;
	struct an_keys entered;		/* addresses other functions' direct branches,
					   calls and tables lead to, once per way in,
					   until the tail calls are classified */
	struct an_jump *jumped;		/* the jmp, jcc and loop among those ways in,
					   with their sources: how a function's
					   .cold parts and it enter each other */
	size_t njumped, jumped_cap;
	uint64_t *tgt_addr;		/* merged targets, ascending */
	uint8_t *tgt_kind;
	size_t ntgt;

	/* Sections with file bytes, for readers that need a section's extent. */
	struct an_scn *scns;
	size_t nscns;

	bool evex_known, evex_free;	/* dp_object_evex_free(), once asked */
};

struct an_scn {
	uint64_t addr, size;
	const uint8_t *data;
	bool exec;
	bool meta;		/* the dynamic linker's tables (symbols, strings,
				   hashes, versions, relocations, notes) and the
				   unwinder's: no word of them is a pointer the
				   program jumps through */
};

/* A resolved jump table's entries in the object's data. */
struct an_range {
	uint64_t lo, hi;
};

/* A direct branch from a function to a place in the same function. */
struct an_edge {
	uint32_t target;		/* offset within the function */
	uint32_t src;			/* index of the branching instruction */
};

struct an_walk;

/* The function whose indirect jmps are being resolved. */
struct an_func_ctx {
	struct dp_object *obj;
	struct an_walk *walk;		/* scratch for the backward walks */
	uint64_t start, size;
	const uint8_t *code;
	const uint32_t *off;		/* instruction starts */
	uint32_t n;
	const struct an_edge *edges;	/* local direct branches, by target */
	size_t nedges;
};

/* analysis.c */
const struct an_scn *an_scn_find(const struct dp_object *obj, uint64_t addr);
long an_insn_index(const uint32_t *off, uint32_t n, uint64_t rel);
const struct dp_function *an_function_at(const struct dp_object *obj, uint64_t vaddr);
const struct dp_function *an_function_starting(const struct dp_object *obj, uint64_t addr,
					       uint64_t size);
unsigned an_target_kind(const struct dp_object *obj, uint64_t vaddr);	/* once built */

/*
 * plt.c: the object's GOT slots (0 or -ENOMEM), the slot at an address,
 * the slot a PLT stub jumps through (0 if it is no stub), the instruction
 * at an address of code, and whether a call never returns.
 */
int an_slots_load(struct dp_object *obj);
const struct an_slot *an_slot_find(const struct dp_object *obj, uint64_t addr);
uint64_t an_plt_slot(const struct dp_object *obj, uint64_t stub);
bool an_code_insn(const struct dp_object *obj, uint64_t vaddr, struct dp_insn *in);
bool an_call_noreturn(const struct dp_object *obj, const struct dp_insn *in, uint64_t addr);

/*
 * sweep.c: records a branch target; decodes every function (instruction
 * starts, return sites, flags, targets, jump tables); merges the targets
 * into obj->tgt_addr/tgt_kind.  0 or -errno.
 */
/* Adds i to the set v[0..*n) of at most cap entries (the definitions the
 * backward walks collect): true when it is there now, false when full. */
bool an_set_add(uint32_t *v, unsigned *n, unsigned cap, uint32_t i);
int an_keys_push(struct an_keys *k, uint64_t addr, unsigned kind);
int an_u64_sort(uint64_t *v, size_t n);
int an_functions_decode(struct dp_object *obj);
int an_targets_build(struct dp_object *obj);

/* The first address above addr that some instruction names (UINT64_MAX if none). */
uint64_t an_ref_after(const struct dp_object *obj, uint64_t addr);

/*
 * jumptable.c: resolves the indirect jmp at instruction index i of the
 * function.  Pushes every target it finds as a DP_TGT_JUMP_TABLE key and
 * returns 1 when all of them lie in the function, 2 when some leave it (a
 * .cold part, or a table of functions: a tail call), 0 when the jmp is not
 * recognized, -errno on failure.
 */
int an_jump_table_resolve(struct an_func_ctx *ctx, uint32_t i);

/* Records [lo, hi) as a resolved table's entries.  0 or -ENOMEM. */
int an_table_note(struct dp_object *obj, uint64_t lo, uint64_t hi);

/*
 * coderefs.c: a code address an instruction names (the sweep pushes every
 * RIP-relative one; addresses outside code are ignored); then, once, those
 * the dynamic relocations store, every such address inside a function
 * pushed as a DP_TGT_ADDRESS key; whether one lies inside fn past its start
 * (true when the set is not known to be complete); and a sort that drops
 * repeats.  0 or -ENOMEM for those that return an int.
 */
int an_code_ref_push(struct dp_object *obj, uint64_t addr);
int an_code_refs_collect(struct dp_object *obj);
bool an_code_named_inside(const struct dp_object *obj, const struct dp_function *fn);
int an_keys_sort_unique(struct an_keys *k);

/*
 * tailcall.c: a branch, call or table jmp at `src` that leads to `target`
 * (the sweep and the jump-table resolver push each; only those from outside
 * the function holding the target are kept; `jump`: a direct jmp, jcc or
 * loop), 0 or -ENOMEM; and, once every
 * target is known, DP_FN_INDIRECT on each function with an indirect jmp no
 * table explains (a DP_RET_TAIL_INDIRECT site), unless all of them are tail
 * calls through pointers.  0 or -ENOMEM.
 */
int an_entered_push(struct dp_object *obj, uint64_t src, uint64_t target, bool jump);
int an_tail_calls_settle(struct dp_object *obj);

/*
 * Backward walks over the instructions of the function being analyzed
 * (jumptable.c): a fixed budget of steps and a visited set of (instruction,
 * state) pairs, so that loops end and joins are not walked twice.
 */
#define AN_WALK_STEPS 4096
#define AN_WALK_PER_INSN 16	/* the object's budget: steps per instruction... */
#define AN_WALK_SLACK (UINT64_C(1) << 20)	/* ... plus this */
#define AN_WALK_SLOTS 8192	/* a power of two above 2 * AN_WALK_STEPS */
#define AN_WALK_POOL 8192	/* predecessors pending at the joins being walked */

struct an_pred {
	uint32_t idx;
	bool taken;		/* reached through its branch, not by falling through */
};

struct an_walk {
	const struct an_func_ctx *ctx;
	uint64_t budget;		/* steps left for all walks of the object */
	unsigned steps, nused, npool;
	uint16_t used[AN_WALK_STEPS + 1];	/* the slots to clear for the next walk */
	uint64_t seen[AN_WALK_SLOTS];
	struct an_pred pool[AN_WALK_POOL];
};

bool an_insn_at(const struct an_func_ctx *ctx, uint32_t i, struct dp_insn *in);

/*
 * The predecessors of instruction i, written on top of the walk's pool
 * (a join keeps them there by adding their count to npool while it walks
 * them).  Returns how many: 0 at the entry or in a block no direct branch
 * reaches, more than an_preds_fit allows when the pool is full.
 */
unsigned an_preds_of(struct an_walk *w, uint32_t i);
static inline struct an_pred *an_walk_top(struct an_walk *w)
{
	return w->pool + w->npool;
}
static inline bool an_preds_fit(const struct an_walk *w, unsigned np)
{
	return np <= AN_WALK_POOL - w->npool;
}
void an_walk_reset(struct an_walk *w);
bool an_walk_visit(struct an_walk *w, uint32_t i, uint64_t state);
bool an_walk_step(struct an_walk *w);
bool an_writes_reg(const struct dp_insn *in, unsigned reg);

/*
 * jtbound.c: the number of entries the index register idx of the table
 * load at instruction `load` can select, from the bounds checks on the
 * paths to it; 0 when unknown.
 */
#define AN_JT_MAX_ENTRIES 65536
uint64_t an_jt_bound(struct an_walk *w, uint32_t load, unsigned idx);

/*
 * lsda.c: pushes every landing pad of the object's .eh_frame LSDAs as a
 * DP_TGT_LANDING_PAD key and flags the functions holding one.  A malformed
 * entry is skipped.  0 or -ENOMEM.
 */
int an_landing_pads_collect(struct dp_object *obj);

/*
 * entry.c: the address the entry point passes to __libc_start_main as main.
 * 0, or -ENOENT when the entry point does not look like a C runtime start.
 */
int an_entry_main(struct dp_object *obj, uint64_t *main_addr);

#endif /* DP_PATCH_ANALYSIS_INTERNAL_H */
