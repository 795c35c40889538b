/*
 * A bounded reader for .eh_frame and .gcc_except_table data: LEB128, fixed
 * little-endian fields, and pointers in their DW_EH_PE encodings.  Every
 * read checks the bound; errors are -EINVAL (truncated) or -ENOTSUP (an
 * encoding that means nothing in a file not yet loaded).
 */
#ifndef DP_ELF_EHREAD_H
#define DP_ELF_EHREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>

struct dp_ehread {
	const uint8_t *p, *end;
	uint64_t vaddr;		/* the address p is loaded at: pc-relative base */
};

/*
 * The .eh_frame section of e: its data (*data) and address (*addr) for the
 * CFI walks (dwarf_next_cfi), or false when e has none with bytes.
 */
bool dp_eh_frame_find(Elf *e, Elf_Data **data, uint64_t *addr);

void dp_ehread_skip(struct dp_ehread *r, size_t n);
int dp_ehread_u8(struct dp_ehread *r, uint8_t *v);
int dp_ehread_leb(struct dp_ehread *r, bool is_signed, uint64_t *v);
int dp_ehread_fixed(struct dp_ehread *r, unsigned size, bool is_signed, uint64_t *v);
/* A value in the format (low nibble) of a DW_EH_PE encoding. */
int dp_ehread_format(struct dp_ehread *r, uint8_t enc, uint64_t *v);
/*
 * A pointer in a DW_EH_PE encoding.  Only absolute and pc-relative values
 * mean something in a file not yet loaded: the other bases (text, data,
 * function) are not defined for .eh_frame on x86-64, an indirect pointer's
 * slot is filled by the dynamic linker, and omit (0xff) has no value.
 */
int dp_ehread_pointer(struct dp_ehread *r, uint8_t enc, uint64_t *v);

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
