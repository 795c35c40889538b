/*
 * Source-level locations from DWARF (spec-dwarf.c): the addresses of a
 * source line, and the inlined copies of a function with their entry and
 * return sites.  Part of spec/'s contract beside spec.h (which includes
 * it): the CLI's early checks and lttng-dynprobed resolve through these
 * same functions, so both refuse the same input with the same words.
 * DWARF comes from dwarf/dwarf.h (its lookup order and cache).
 */
#ifndef DP_SPEC_DWARF_H
#define DP_SPEC_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct dp_object;
struct dp_location;
struct dp_dwarf_inline;

#define DP_SPEC_NOTE_MAX 512

/*
 * The probe sites of a source line (loc->kind DP_LOC_LINE): the first
 * address of each address block of that line (dwarf.h: statement rows
 * only; every inlined copy of the line's code has its own blocks),
 * ascending, each an instruction boundary of a function of the object.
 * *addrs malloc'd (free() it), *n >= 1.  note (may be NULL) receives, on
 * success, what is worth saying ("0x1139 is also line 12 of x.c"), or "".
 * Errors, each one line: no DWARF (-ENOENT, every place looked); no such
 * file (-ENOENT, with file names); a file name matching several files
 * (-EINVAL, with the list); a line with no code (-ENOENT, with the nearest
 * lines that have code).
 */
int dp_spec_line_resolve(struct dp_object *obj, const char *path, const struct dp_location *loc,
			 uint64_t **addrs, size_t *n, char *note, size_t note_size,
			 struct dp_err *err);

/*
 * The one source file a name means in path's DWARF (as dp_spec_line_resolve
 * refuses: no DWARF, none, several).  The string is the DWARF cache's.
 */
int dp_spec_source_file(struct dp_object *obj, const char *path, const char *name,
			const char **file, struct dp_err *err);

/* Where a copy's return site is, relative to the exit it serves. */
enum dp_spec_ret_how {
	DP_SPEC_RET_AFTER = 1,	/* the caller's first instruction after the copy: a
				   fall-through off a range, a taken branch's target */
	DP_SPEC_RET_INSN,	/* the instruction that leaves: a ret, or a jmp */
	DP_SPEC_RET_STEPPED,	/* a range's last instruction: its end is not the
				   same function's, or (without a walk) kinst's rules */
};

/* "first instruction after the copy", "the instruction that leaves", ... */
const char *dp_spec_ret_how_str(uint8_t how);

/* How a copy's sites are placed, before the planner looks at their bytes. */
struct dp_spec_copy {
	const struct dp_dwarf_inline *inl;	/* the DWARF facts (dwarf.h) */
	uint64_t entry;				/* 0: the copy cannot be probed */
	uint32_t nrets, cap;
	uint64_t *rets;				/* its return sites */
	uint8_t *how;				/* enum dp_spec_ret_how, per site */
	bool walked;				/* exits found by the walk (else kinst's
						   rules on the ranges) */
	char why[256];				/* entry 0: why ("no address: optimized
						 * away", "in no known function") */
};

struct dp_spec_copies {
	size_t n;
	struct dp_spec_copy *v;
};

/*
 * The inlined copies of the function `name` in path (a C name; a C++ or
 * Rust linkage name; or a C++ or Rust name as written, spec.h, which means
 * every function whose demangled name is it, with or without its parameter
 * list: "shop::Cart::add", "shop::Cart::add(long)"), each with its entry
 * and return sites.
 *
 * Entry: DW_AT_entry_pc, else the first byte of the first range.  Returns:
 * where control leaves the copy, found by a walk of its instructions from
 * the entry (fall-through and direct branches, within its ranges): a ret
 * (the copy ends its caller), a jmp that leaves (the jmp), a taken branch
 * that leaves (its target), a fall-through off a range (the caller's next
 * instruction; the range's last instruction when that is past the end of
 * its function).  Control that leaves only to come back into the copy
 * without a new entry (a partially inlined function setting up the call
 * of its .part) does not exit there; code of the copy placed before its
 * entry in the same function (moved ahead of it) does not count as coming
 * back.  When the code cannot be walked
 * (undecodable, too long), FreeBSD kinst's rules on the ranges: each
 * range's end, stepped back to its last instruction when the end is not
 * an instruction of the same function, for the last range of a
 * DW_AT_ranges list, and for low/high pc bounds; none for a range whose end
 * is in another range of the copy.
 *
 * 0 (out->n may be 0), or -errno: no DWARF (-ENOENT, the lookup's
 * message), -ENOMEM.  Release with dp_spec_copies_release.
 */
int dp_spec_inline_copies(struct dp_object *obj, const char *path, const char *name,
			  struct dp_spec_copies *out, struct dp_err *err);
void dp_spec_copies_release(struct dp_spec_copies *c);

/* Which copies of a function --function probes. */
enum dp_spec_copies_sel {
	DP_SPEC_COPIES_ALL,		/* the out-of-line body and every inlined copy */
	DP_SPEC_COPIES_OUTLINE,		/* the out-of-line body only (as without DWARF) */
	DP_SPEC_COPIES_INLINED,		/* the inlined copies only */
};

/* What a --function location probes. */
struct dp_spec_fn_sites {
	const struct dp_function **fns;	/* out-of-line bodies (dp_spec_functions_match) */
	size_t nfns;
	struct dp_spec_copies copies;	/* inlined copies, those without a site too */
	size_t nplaced;			/* copies with an entry */
	char note[DP_SPEC_NOTE_MAX];	/* worth saying on success, or "" */
};

/*
 * The functions and copies a --function location names.  The out-of-line
 * bodies are dp_spec_functions_match's.  Inlined copies are looked for
 * when the location is a name (C, a linkage name, or C++/Rust as written:
 * no pattern, offset or address; dp_spec_inline_copies) and sel allows them;
 * with DP_SPEC_COPIES_ALL, an object without DWARF (or whose DWARF cannot
 * be read) gives its out-of-line body alone, and the note says the copies
 * were not looked for, and why.  Copies
 * that cannot be probed are named in the note with their reason.
 * Errors: those of dp_spec_functions_match when there is no body and no
 * copy; DP_SPEC_COPIES_INLINED without DWARF (the lookup's message) or
 * without a copy (-ENOENT); every copy without a site and no body
 * (-ENOTSUP, with the reasons).  Release with dp_spec_fn_sites_release.
 */
int dp_spec_function_sites(struct dp_object *obj, const char *path, const struct dp_location *loc,
			   enum dp_spec_copies_sel sel, struct dp_spec_fn_sites *out,
			   struct dp_err *err);
void dp_spec_fn_sites_release(struct dp_spec_fn_sites *s);

/* "inlined into CALLER at FILE:LINE" (FILE's basename), or "out of line". */
int dp_spec_copy_format(const struct dp_dwarf_inline *inl, char *buf, size_t size);

#endif /* DP_SPEC_DWARF_H */
