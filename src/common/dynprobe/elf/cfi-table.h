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
#include "sorted.h"

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

/* Rows sorted by pc, the last one a STOP row past the last FDE. */
struct dp_cfi_table {
	struct dp_cfi_row *rows;
	size_t n;
	uint64_t base;		/* what row pcs are relative to */
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

/* The row covering pc (absolute), or NULL outside the table.  No locks, no
 * allocation: the stack walk's lookup. */
static inline const struct dp_cfi_row *dp_cfi_lookup(const struct dp_cfi_table *t, uint64_t pc)
{
	size_t i;

	if (!t->n || pc < t->base + t->rows[0].pc || pc - t->base >= t->rows[t->n - 1].pc)
		return NULL;
	i = DP_BOUND(t->rows, t->n, pc, (uint32_t)(pc - t->base), DP_BOUND_UPPER);
	return &t->rows[i - 1];
}

#endif /* DP_ELF_CFI_TABLE_H */
