/*
 * The CFI tables of the loaded objects (cfi-tables.c), read by the `cfi`
 * stack walk (unwind.c) without locks.
 */
#ifndef DPA_CFI_TABLES_H
#define DPA_CFI_TABLES_H

#include <stdint.h>

#include "elf/cfi-table.h"

/* One object: the addresses its rows cover, [lo, hi). */
struct dpa_cfi_obj {
	uint64_t lo, hi;
	uint64_t hdr;			/* its .eh_frame_hdr: what names it */
	struct dp_cfi_table t;		/* a copy: one pointer less to chase per frame */
};

/* Objects sorted by lo.  Never freed once published. */
struct dpa_cfi_set {
	size_t n;
	struct dpa_cfi_obj v[];
};

/* The current set, or NULL before the first refresh.  Any thread, any time. */
const struct dpa_cfi_set *dpa_cfi_current(void);

/*
 * Compiles the tables of objects loaded since the last call and publishes a
 * new set (nothing when the loader's list did not change).  Off the hit path:
 * it takes the loader's lock and allocates.  0 or -ENOMEM.
 */
int dpa_cfi_refresh(void);

/*
 * The same after the program's dlopen returned, once a walk by CFI was
 * prepared (nothing before): objects it loaded get their tables.  Skipped
 * when another refresh runs.  Off the hit path.
 */
void dpa_cfi_after_dlopen(void);

#endif /* DPA_CFI_TABLES_H */
