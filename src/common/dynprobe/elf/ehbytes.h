/*
 * A bounded reader over .eh_frame-style bytes: LEB128, fixed little-endian
 * fields, and pointers in their DW_EH_PE encodings.  Every read checks the
 * bound; errors are -EINVAL (truncated) or -ENOTSUP (an encoding whose value
 * cannot be known from the bytes alone).  Pure C over bytes, no libelf or
 * libdw: the agent's CFI tables (cfi-table.c) read with it too.
 */
#ifndef DP_ELF_EHBYTES_H
#define DP_ELF_EHBYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dp_ehread {
	const uint8_t *p, *end;
	uint64_t vaddr;		/* the address p is loaded at: pc-relative base */
};

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

#endif /* DP_ELF_EHBYTES_H */
