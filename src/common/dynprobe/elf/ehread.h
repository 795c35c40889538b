/*
 * .eh_frame and .gcc_except_table of an ELF file through libelf/libdw: the
 * section, and its CIEs parsed once each.  The byte reader itself (LEB128,
 * DW_EH_PE pointers) is ehbytes.h, free of libelf and libdw.
 */
#ifndef DP_ELF_EHREAD_H
#define DP_ELF_EHREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>

#include "elf/ehbytes.h"

/*
 * The .eh_frame section of e: its data (*data) and address (*addr) for the
 * CFI walks (dwarf_next_cfi), or false when e has none with bytes.
 */
bool dp_eh_frame_find(Elf *e, Elf_Data **data, uint64_t *addr);

/* What an FDE needs from its CIE (the data of a 'z' augmentation). */
struct dp_eh_cie {
	Dwarf_Off off;
	int err;		/* non-zero: the CIE's FDEs are skipped */
	bool zaug;		/* FDEs carry a sized augmentation block */
	bool signal_frame;	/* 'S': FDEs of signal-return trampolines */
	uint8_t fde_enc;	/* 'R', DW_EH_PE_absptr when absent */
	uint8_t lsda_enc;	/* 'L', DW_EH_PE_omit when absent */
};

/*
 * CIEs by offset, each parsed once.  Past a bound, a CIE is parsed each time
 * it is named: a hostile file must not make the sorted inserts quadratic.
 */
struct dp_eh_cie_cache {
	struct dp_eh_cie *v;
	size_t n, cap;
	struct dp_eh_cie uncached;
};

/* The CIE at off in .eh_frame data (ident: the ELF's e_ident); NULL: ENOMEM. */
const struct dp_eh_cie *dp_eh_cie_get(struct dp_eh_cie_cache *cc, const unsigned char *ident,
				      Elf_Data *data, Dwarf_Off off);
void dp_eh_cie_cache_release(struct dp_eh_cie_cache *cc);

#endif /* DP_ELF_EHREAD_H */
