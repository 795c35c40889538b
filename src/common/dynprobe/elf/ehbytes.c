/* The bounded byte reader of ehbytes.h. */
#include <dwarf.h>
#include <errno.h>

#include "elf/ehbytes.h"

void dp_ehread_skip(struct dp_ehread *r, size_t n)
{
	r->p += n;
	r->vaddr += n;
}

int dp_ehread_u8(struct dp_ehread *r, uint8_t *v)
{
	if (r->p >= r->end)
		return -EINVAL;
	*v = *r->p;
	dp_ehread_skip(r, 1);
	return 0;
}

int dp_ehread_leb(struct dp_ehread *r, bool is_signed, uint64_t *v)
{
	unsigned shift = 0;
	uint64_t u = 0;

	while (r->p < r->end) {
		uint8_t b = *r->p;

		dp_ehread_skip(r, 1);
		if (shift < 64)
			u |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (is_signed && shift < 64 && (b & 0x40))
				u |= ~UINT64_C(0) << shift;
			*v = u;
			return 0;
		}
	}
	return -EINVAL;
}

int dp_ehread_fixed(struct dp_ehread *r, unsigned size, bool is_signed, uint64_t *v)
{
	uint64_t u = 0;

	if ((size_t)(r->end - r->p) < size)
		return -EINVAL;
	for (unsigned i = 0; i < size; i++)
		u |= (uint64_t)r->p[i] << (8 * i);
	if (is_signed && size < 8 && (u >> (8 * size - 1) & 1))
		u |= ~UINT64_C(0) << (8 * size);
	dp_ehread_skip(r, size);
	*v = u;
	return 0;
}

int dp_ehread_format(struct dp_ehread *r, uint8_t enc, uint64_t *v)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return dp_ehread_fixed(r, 8, false, v);
	case DW_EH_PE_uleb128:
		return dp_ehread_leb(r, false, v);
	case DW_EH_PE_sleb128:
		return dp_ehread_leb(r, true, v);
	case DW_EH_PE_udata2:
		return dp_ehread_fixed(r, 2, false, v);
	case DW_EH_PE_sdata2:
		return dp_ehread_fixed(r, 2, true, v);
	case DW_EH_PE_udata4:
		return dp_ehread_fixed(r, 4, false, v);
	case DW_EH_PE_sdata4:
		return dp_ehread_fixed(r, 4, true, v);
	default:
		return -ENOTSUP;
	}
}

int dp_ehread_pointer(struct dp_ehread *r, uint8_t enc, uint64_t *v)
{
	uint64_t field = r->vaddr;
	int err;

	if (enc & DW_EH_PE_indirect)	/* also DW_EH_PE_omit */
		return -ENOTSUP;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		return dp_ehread_format(r, enc, v);
	case DW_EH_PE_pcrel:
		err = dp_ehread_format(r, enc, v);
		*v += field;
		return err;
	default:
		return -ENOTSUP;
	}
}
