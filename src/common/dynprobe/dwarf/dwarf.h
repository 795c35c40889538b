/*
 * DWARF of an ELF object: the contract (libdw, elfutils).
 *
 * Where the DWARF comes from, tried in this order (the first that has a
 * .debug_info wins):
 *   1. the object's own .debug_info;
 *   2. by build-id: DIR/.build-id/NN/REST.debug for each debug directory DIR;
 *   3. by .gnu_debuglink (its CRC must match): next to the object, in its
 *      .debug/ subfolder, then DIR/OBJECT_DIR/NAME for each DIR;
 *   4. debuginfod, when DEBUGINFOD_URLS is set (elfutils' client library,
 *      libdebuginfod.so.1, loaded when first needed; its cache and
 *      DEBUGINFOD_CACHE_PATH as the client defines them).
 * The debug directories are $LTTNG_DYNPROBE_DEBUG_DIRS (colon separated;
 * ignored in secure-execution mode), else /usr/lib/debug.  A separate file
 * found by build-id must carry the same build-id.
 *
 * libdw reads DWARF 4 and 5, .debug_rnglists/.debug_loclists, and
 * SHF_COMPRESSED (zlib) sections; a .gnu_debugaltlink (dwz) file is looked
 * up by its build-id in the same directories.
 *
 * The DWARF of an object is read once per build-id (objects without one:
 * once per file identity) and kept until dp_dwarf_forget() or
 * dp_dwarf_cache_clear(): the daemon serves every event of an object from
 * one copy.  Every pointer returned is owned by the cache and stays valid
 * until then.
 * Not thread-safe (the daemon and the CLI are single threaded).
 *
 * Functions return 0 or -errno and fill err with one line for users.
 * Linked into the daemon, the CLI and the tests, never into the agent.
 */
#ifndef DP_DWARF_H
#define DP_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct dp_elf;
struct dp_dwarf;
typedef struct Dwarf Dwarf;

#define DP_DWARF_DIRS_ENV "LTTNG_DYNPROBE_DEBUG_DIRS"
#define DP_DWARF_DIR_DEFAULT "/usr/lib/debug"

/* Where an object's DWARF was found. */
enum dp_dwarf_origin {
	DP_DWARF_OWN = 1,	/* the object's own sections */
	DP_DWARF_BUILD_ID,	/* a .build-id tree */
	DP_DWARF_DEBUGLINK,	/* .gnu_debuglink */
	DP_DWARF_DEBUGINFOD,	/* a debuginfod server (or its client's cache) */
};

/* "own sections", "build-id", "debuglink", "debuginfod". */
const char *dp_dwarf_origin_str(enum dp_dwarf_origin origin);

/*
 * The DWARF of the object elf was opened from (cached: found once).
 * -ENOENT when none is found: err names every place looked and what
 * would provide it ("no DWARF for /x/libfoo.so (build-id 93ac...): looked
 * in its own sections, /usr/lib/debug/.build-id/93/ac....debug, ...;
 * install its debug symbols: Debian's -dbgsym (or -dbg) package of the
 * package that ships it (dpkg -S /x/libfoo.so)").  -ELIBBAD for DWARF
 * libdw cannot read, -ENOMEM.  A failed lookup is not cached.
 */
int dp_dwarf_get(struct dp_elf *elf, struct dp_dwarf **dw, struct dp_err *err);

/* libdw's handle, for readers of this DWARF (scopes, variables, types). */
Dwarf *dp_dwarf_handle(struct dp_dwarf *dw);
/* The file the DWARF was read from, and how it was found. */
const char *dp_dwarf_path(const struct dp_dwarf *dw);
enum dp_dwarf_origin dp_dwarf_origin(const struct dp_dwarf *dw);

/* Closes every cached DWARF (tests, leak checkers). */
void dp_dwarf_cache_clear(void);
/* Whether the objects a and b were opened from share one DWARF (one
 * build-id, or one file). */
bool dp_dwarf_same(struct dp_elf *a, struct dp_elf *b);
/* Closes the cached DWARF of elf's object, if any: every pointer into it
 * is invalid after, so only for a caller that knows none is in use (the
 * daemon closing the last object that uses it). */
void dp_dwarf_forget(struct dp_elf *elf);

/* ---- source lines (dwarf-lines.c) ---------------------------------------
 *
 * Rows of the line tables that begin a statement (is_stmt), without the
 * end-of-sequence rows.  An address block is a run of such rows, in
 * address order within one sequence, of one file and line: its first row
 * is the block's (block = true).  The same line inlined in three places
 * has (at least) three blocks.
 */
struct dp_dwarf_row {
	const char *file;	/* the source file as DWARF names it, made absolute
				 * with the CU's directory when relative */
	uint32_t line;
	uint64_t addr;		/* object address (as nm prints them) */
	bool block;		/* the first row of an address block */
};

/*
 * The source files a name means: an absolute path means that file; any
 * other name matches a file whose path ends with it at a '/' ("sched.c",
 * "kernel/sched.c").  *files (malloc'd, free() it; the strings are the
 * cache's) in name order.  -ENOENT when none matches (err names close
 * basenames), -EINVAL for an empty name, -ENOMEM.  Several matches are not
 * an error here: callers refuse them with the list.
 */
int dp_dwarf_files(struct dp_dwarf *dw, const char *name, const char ***files, size_t *n,
		   struct dp_err *err);

/*
 * The rows of one file (as dp_dwarf_files returns it) with from <= line <=
 * to, sorted by line then address: a slice of the cache's table.  0 (n may
 * be 0), -ENOMEM.
 */
int dp_dwarf_file_rows(struct dp_dwarf *dw, const char *file, uint32_t from, uint32_t to,
		       const struct dp_dwarf_row **rows, size_t *n, struct dp_err *err);

/*
 * Every row at addr, whatever its file and line (several lines may share an
 * address).  *rows malloc'd (pointers into the cache's table); 0 or -ENOMEM.
 */
int dp_dwarf_rows_at(struct dp_dwarf *dw, uint64_t addr, const struct dp_dwarf_row ***rows,
		     size_t *n);

/* ---- inlined copies (dwarf-inline.c) ------------------------------------
 *
 * Every DW_TAG_inlined_subroutine of every CU, by the name its abstract
 * origin chain leads to (DW_AT_abstract_origin and DW_AT_specification
 * followed across CUs).  The index is built on the first query.
 */
struct dp_dwarf_range {
	uint64_t lo, hi;	/* [lo, hi) */
};

struct dp_dwarf_inline {
	const char *name;	/* the function inlined: DW_AT_name */
	const char *linkage;	/* its DW_AT_linkage_name, or NULL */
	const char *caller;	/* the function (or inlined copy) it was inlined
				 * into, innermost; NULL when unnamed */
	const char *caller_linkage;	/* the caller's linkage name, or NULL */
	const char *call_file;	/* where the call was: DW_AT_call_file, or NULL */
	uint32_t call_line;	/* DW_AT_call_line, 0 when unknown */
	uint64_t entry;		/* DW_AT_entry_pc, else the lowest address of the
				 * first range; 0 when neither is known */
	bool entry_pc;		/* entry is DW_AT_entry_pc */
	bool listed;		/* ranges come from DW_AT_ranges (else low/high pc) */
	uint32_t nranges;	/* 0: no address (the copy was optimized away) */
	const struct dp_dwarf_range *ranges;	/* in the order DWARF lists them */
	uint64_t die;		/* the DIE's offset in .debug_info */
};

/*
 * The inlined copies of the function named name: its DW_AT_linkage_name,
 * or its DW_AT_name unless its linkage name is a C++ or Rust mangled one
 * (their DW_AT_name is unqualified: "add" names no C++ member; a C
 * function's asm label, "__GI_memcpy", is no mangling), in DIE order.  *v (malloc'd array of pointers into
 * the cache, free() it) may be empty: 0 with *n == 0.  -ENOMEM, -ELIBBAD
 * for DWARF that cannot be walked.
 */
int dp_dwarf_inlines(struct dp_dwarf *dw, const char *name,
		     const struct dp_dwarf_inline ***v, size_t *n, struct dp_err *err);

/*
 * The distinct linkage names of the functions that have inlined copies
 * (C++, Rust), for matching names as their authors wrote them.  *names
 * malloc'd (free() it; the strings are the cache's).  0 or -errno.
 */
int dp_dwarf_inline_linkage_names(struct dp_dwarf *dw, const char ***names, size_t *n,
				  struct dp_err *err);

#endif /* DP_DWARF_H */
