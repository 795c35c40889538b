/*
 * CFI tables: an object's .eh_frame compiled into one array of rows sorted
 * by address, each saying how to find the caller's frame from any address of
 * its range (the idea of the kernel's ORC tables).  A stack walk then needs
 * one binary search and two or three memory reads per frame, and nothing of
 * the DWARF interpreter.
 *
 * A row holds what x86-64 code built by a compiler uses: the CFA as rsp or
 * rbp plus an offset, the return address and rbp saved at CFA-relative
 * offsets (or rbp unchanged), and two expressions recognised as the special
 * cases they are: a PLT entry's CFA (rsp-based, changes after its push) and
 * a signal-return trampoline (FDEs of an 'S' CIE: the interrupted registers
 * are in the ucontext at rsp).  Anything else is a STOP row: the walk ends
 * there rather than guess.  Addresses no FDE covers are STOP rows too.
 *
 * Pure C over bytes (ehbytes.h reads them, every length bounded): the agent
 * compiles the .eh_frame of the objects loaded in its own process with it,
 * without libelf or libdw.
 */
#ifndef DP_ELF_CFI_TABLE_H
#define DP_ELF_CFI_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum dp_cfi_kind {
	DP_CFI_STOP,		/* no rule known here: the walk ends */
	DP_CFI_RSP,		/* CFA = rsp + cfa_off */
	DP_CFI_RBP,		/* CFA = rbp + cfa_off */
	DP_CFI_PLT,		/* CFA = rsp + cfa_off, + 8 when (pc & 15) >= arg */
	DP_CFI_SIGNAL,		/* rsp points at the ucontext of the interrupted code */
	DP_CFI_END,		/* return address undefined: the outermost frame */
};

/* rbp_off when rbp's value in the caller cannot be known (register rules,
 * expressions): a walk that needs it later stops. */
#define DP_CFI_RBP_LOST INT16_MIN

struct dp_cfi_row {
	uint32_t pc;		/* first address covered, minus the table's base */
	int32_t cfa_off;
	int16_t ra_off;		/* return address at CFA + ra_off */
	int16_t rbp_off;	/* caller's rbp at CFA + rbp_off; 0: unchanged */
	uint8_t kind;		/* enum dp_cfi_kind */
	uint8_t arg;		/* DP_CFI_PLT: the threshold */
};

/*
 * Rows sorted by pc, the last one a STOP row past the last FDE, then
 * DP_CFI_SCAN - 1 padding rows (pc UINT32_MAX, outside n) so that a lookup
 * may read the DP_CFI_SCAN rows from any row on; and an index by blocks of 64
 * bytes from the first row's pc (as ORC's lookup table, finer: about one row
 * per block, 4 bytes of index per 64 bytes of code): blocks[i] is the row
 * covering the block's first byte, so that a lookup reads only the few rows
 * of one block, not all of them: a binary search over a whole libc table
 * missed the cache at each step.
 */
#define DP_CFI_BLOCK_SHIFT 6
#define DP_CFI_SCAN 8
struct dp_cfi_table {
	struct dp_cfi_row *rows;
	size_t n;
	uint32_t *blocks;	/* nblocks + 1 entries */
	size_t nblocks;
	uint64_t base;		/* what row pcs are relative to */
	uint32_t first_pc;	/* rows[0].pc */
	size_t fdes, fdes_failed;	/* FDEs compiled, and those left STOP */
};

/*
 * Compiles the .eh_frame bytes [data, data + len), loaded at vaddr, into *t
 * with pcs relative to base (the object's load bias: they must fit 32 bits).
 * Stops at a zero terminator or at len.  An FDE whose program is malformed
 * or uses what a row cannot say becomes STOP rows; the table is still built.
 * 0, -ENOMEM, or -EINVAL (a CIE or FDE header beyond len, a pc outside 32
 * bits of base), with the words in err.
 */
int dp_cfi_compile(const void *data, size_t len, uint64_t vaddr, uint64_t base,
		   struct dp_cfi_table *t, struct dp_err *err);
void dp_cfi_table_release(struct dp_cfi_table *t);

/*
 * Among n >= 1 rows whose first one starts at or below pc, the last one that
 * does.  Without branches on the data (the compiler makes the step a
 * conditional move): sorted.h's loop mispredicted about every other step,
 * and that, not the memory, was most of a stack walk's time.
 */
static inline const struct dp_cfi_row *dp_cfi_last_at_or_below(const struct dp_cfi_row *r,
								size_t n, uint32_t pc)
{
	while (n > 1) {
		size_t half = n / 2;

		r = r[half].pc <= pc ? r + half : r;
		n -= half;
	}
	return r;
}

/*
 * The row covering pc (absolute), which the caller knows lies in the table:
 * [base + rows[0].pc, base + rows[n - 1].pc).  No locks, no allocation: the
 * stack walk's lookup.  A block of at most DP_CFI_SCAN rows (nearly all: a
 * function's body is one row, its prologue and epilogue a few) is not
 * searched but counted: the loads of the rows' pcs do not depend on each
 * other's comparisons, where each step of the search waited for the one
 * before (2-3 steps in a block holding a prologue, most of a frame's walk).
 * Rows past the block start after rel, the padding rows too: they add 0.
 */
static inline const struct dp_cfi_row *dp_cfi_lookup_in(const struct dp_cfi_table *t,
							 uint64_t pc)
{
	uint32_t rel = (uint32_t)(pc - t->base);
	size_t b = (rel - t->first_pc) >> DP_CFI_BLOCK_SHIFT;
	uint32_t first = t->blocks[b];
	/* blocks[nblocks] is a sentinel: the last row. */
	size_t n = t->blocks[b + 1] + 1 - first, k = 0;
	const struct dp_cfi_row *r = t->rows + first;

	if (n > DP_CFI_SCAN)
		return dp_cfi_last_at_or_below(r, n, rel);
#pragma GCC unroll 8
	for (unsigned i = 1; i < DP_CFI_SCAN; i++)
		k += r[i].pc <= rel;
	return r + k;
}

/* The row covering pc (absolute), or NULL outside the table. */
static inline const struct dp_cfi_row *dp_cfi_lookup(const struct dp_cfi_table *t, uint64_t pc)
{
	if (!t->n || pc < t->base + t->rows[0].pc || pc - t->base >= t->rows[t->n - 1].pc)
		return NULL;
	return dp_cfi_lookup_in(t, pc);
}

#endif /* DP_ELF_CFI_TABLE_H */
