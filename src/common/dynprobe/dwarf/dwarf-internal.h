/*
 * What dwarf-open.c, dwarf-lines.c and dwarf-inline.c share: one cached
 * DWARF, and the indexes built on it at the first query.
 */
#ifndef DP_DWARF_INTERNAL_H
#define DP_DWARF_INTERNAL_H

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <libelf.h>

#include "dwarf/dwarf.h"

/* An inlined copy before its details are read: enough to find it by name. */
struct dp_dwarf_icopy {
	const char *name;
	const char *linkage;
	Dwarf_Off die;
	Dwarf_Off caller;		/* the enclosing function's DIE, 0 when none */
	struct dp_dwarf_inline *full;	/* read at the first query naming it */
};

struct dp_dwarf {
	struct dp_dwarf *next;
	char key[160];			/* "b:HEX" (build-id) or "f:DEV:INO:MTIME" */
	char path[4096];		/* the file holding the DWARF */
	enum dp_dwarf_origin origin;
	int fd, alt_fd;
	Elf *elf, *alt_elf;
	Dwarf *dbg, *alt_dbg;

	/* dwarf-lines.c */
	bool lines_done;
	int lines_err;
	struct dp_dwarf_row *rows;	/* by file, line, address */
	size_t nrows;
	const struct dp_dwarf_row **by_addr;
	const char **files;		/* distinct, sorted (strings owned below) */
	size_t nfiles;
	char **strings;			/* file names built here */
	size_t nstrings;

	/* dwarf-inline.c */
	bool inl_done;
	int inl_err;
	struct dp_dwarf_icopy *copies;	/* by name */
	size_t ncopies;

	/* dwarf-index.c: scopes and variables by address and name */
	struct dp_dwarf_index *index;
	int index_err;
};

void dp_dwarf_lines_free(struct dp_dwarf *dw);
void dp_dwarf_inlines_free(struct dp_dwarf *dw);
void dp_dwarf_index_free(struct dp_dwarf *dw);

/* The cache's entry whose handle is dbg, or NULL (a Dwarf opened
 * elsewhere). */
struct dp_dwarf *dp_dwarf_of_handle(Dwarf *dbg);

#endif /* DP_DWARF_INTERNAL_H */
